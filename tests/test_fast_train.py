"""lib.models.gpt_fast and lib.train.fast_train: float32 equals the reference forward and trainer to rounding,
bfloat16 stays within its rounding and is deterministic, bad inputs are refused."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from lib.models import GPTConfig, causal_bias, gpt_forward, init_gpt_params
from lib.models.gpt_fast import train_logits
from lib.tasks import LinearMapTask
from lib.train import GPTRunConfig, Member, run_members
from lib.train.fast_train import FastRunConfig, run_fast

CFG = GPTConfig(vocab=3, n_ctx=10, n_heads=2, d_head=4, n_layers=2, d_mlp=24, init_std=0.3)


def inputs(E=3, B=4, L=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    params = {k: v.requires_grad_(True) for k, v in init_gpt_params(CFG, list(range(E))).items()}
    tokens = torch.randint(0, CFG.vocab, (E, B, L), generator=g)
    bias = causal_bias(L, torch.rand(E, L, L, generator=g))  # a prebuilt additive term, one per member
    return params, tokens, bias


def grads(logits, params):
    logits.square().sum().backward()
    out = {k: v.grad.clone() for k, v in params.items()}
    for v in params.values():
        v.grad = None
    return out


def test_fp32_logits_and_gradients_equal_the_reference_to_float32_rounding():
    params, tokens, bias = inputs()
    ref = gpt_forward(params, tokens, CFG, bias=bias)
    fast = train_logits(params, tokens, CFG, bias=bias, precision="fp32")
    torch.testing.assert_close(fast, ref, rtol=1e-6, atol=1e-6)  # the same maths; matmul kernels may round apart
    g_ref, g_fast = grads(ref, params), grads(train_logits(params, tokens, CFG, bias=bias), params)
    for k in g_ref:
        torch.testing.assert_close(g_fast[k], g_ref[k], rtol=1e-4, atol=1e-5)


def test_shorter_input_and_plain_bias():
    params, tokens, _ = inputs(L=7)
    bias = torch.rand(7, 7)  # c M without the causal term: built inside, as gpt_forward does
    torch.testing.assert_close(
        train_logits(params, tokens, CFG, bias=bias), gpt_forward(params, tokens, CFG, bias=bias), rtol=1e-6, atol=1e-6
    )


def test_bf16_logits_and_gradients_stay_within_bfloat16_rounding():
    params, tokens, bias = inputs()
    ref = gpt_forward(params, tokens, CFG, bias=bias)
    low = train_logits(params, tokens, CFG, bias=bias, precision="bf16")
    assert low.dtype == torch.float32 and low.shape == ref.shape
    err = float((low - ref).detach().abs().max() / ref.detach().abs().max())
    assert 0 < err < 3e-2  # rounded (not float32 in disguise), but only by bfloat16's 2^-8 per product
    g_ref, g_low = grads(ref, params), grads(train_logits(params, tokens, CFG, bias=bias, precision="bf16"), params)
    for k in g_ref:
        cos = torch.nn.functional.cosine_similarity(g_ref[k].flatten(), g_low[k].flatten(), dim=0)
        assert cos > 0.99, k


def small_run(**kw):
    task = LinearMapTask(4, 1, seed=0, distinct=True)
    members = (Member(task, seed=0), Member(task, seed=1, bias=4.0))  # the biased member learns within the budget
    base = dict(
        members=members,
        n_heads=2,
        d_head=4,
        tokens_per_step=256,
        steps=120,
        lr=1e-2,
        eval_every=20,
        eval_tokens=256,
        stop_below=0.05,
    )
    base.update(kw)
    return GPTRunConfig(**base)


def arrays(run):
    out = {
        f.name: getattr(run, f.name) for f in dataclasses.fields(run) if isinstance(getattr(run, f.name), np.ndarray)
    }
    out.update({f"params.{k}": v for k, v in run.params.items()})
    return out


def test_fp32_run_follows_the_reference_trainer():
    cfg = small_run()
    ref, fast = arrays(run_members(cfg)), arrays(run_fast(FastRunConfig(cfg, "fp32")))
    assert ref.keys() == fast.keys()
    for k in ref:
        np.testing.assert_allclose(fast[k], ref[k], rtol=1e-3, atol=1e-4, err_msg=k)  # 120 steps of float32 rounding
    frozen = ref["pred_loss"][:, 1]
    assert frozen[-1] < cfg.stop_below and frozen[-1] == frozen[-2]  # the early stop froze the biased member


def test_bf16_run_is_deterministic_and_follows_the_float32_run():
    cfg = small_run(stop_below=None, steps=60)
    a, b = run_fast(FastRunConfig(cfg, "bf16")), run_fast(FastRunConfig(cfg, "bf16"))
    assert all(np.array_equal(x, y, equal_nan=True) for x, y in zip(arrays(a).values(), arrays(b).values()))
    ref = run_members(cfg)
    assert not np.array_equal(ref.train_loss, a.train_loss)
    assert np.abs(ref.train_loss[0] - a.train_loss[0]).max() < 1e-3  # one forward apart: bfloat16 rounding only
    assert np.abs(ref.train_loss - a.train_loss).max() < 0.1  # the trajectories separate slowly, as any two do
    assert ref.pred_loss[-1, 1] < 0.05 and a.pred_loss[-1, 1] < 0.05  # and both learn the biased member's map


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: FastRunConfig(small_run(), "fp16"), "precision"),
        (lambda: FastRunConfig(small_run(mixer="mamba", members=(Member(LinearMapTask(4, 1)),))), "attention"),
        (lambda: FastRunConfig(small_run(members=(Member(LinearMapTask(4, 1), lr=1e-3),))), "train_gpt"),
        (lambda: FastRunConfig("run"), "GPTRunConfig"),
        (lambda: run_fast(small_run()), "FastRunConfig"),
        (lambda: train_logits(*inputs()[:2], CFG, precision="int8"), "precision"),
        (lambda: train_logits(inputs()[0], inputs()[1][0], CFG), "tokens"),
        (lambda: train_logits(inputs(L=10)[0], torch.zeros(3, 1, 11, dtype=torch.long), CFG), "n_ctx"),
        (lambda: train_logits(inputs()[0], inputs()[1], dataclasses.replace(CFG, mixer="mamba")), "attention"),
    ],
)
def test_bad_inputs(make, match):
    with pytest.raises(ValueError, match=match):
        make()
