"""Pre-pretraining and the harness extensions of chapter 7: transfers between stages, per-member learning rates,
token mixers in the stacked trainer."""

from __future__ import annotations

import numpy as np
import pytest

from lib.models import GPTConfig, init_gpt_params
from lib.tasks import AutomatonTask, LinearMapTask
from lib.tasks.dyck import DyckTask
from lib.train.gpt_train import GPTRunConfig, Member, run_members
from lib.train.prepretrain import Transfer, apply_transfers, transferred_names


def tiny(members, **kw):
    base = {
        "n_heads": 2,
        "d_head": 4,
        "tokens_per_step": 64,
        "steps": 30,
        "eval_every": 10,
        "eval_tokens": 128,
        "lr": 3e-3,
    }
    base.update(kw)
    return GPTRunConfig(members=tuple(members), **base)


STAGE1 = tiny([Member(DyckTask(k=2, length=16), seed=4)], steps=20)  # n_ctx 15


def test_transferred_names():
    cfg = GPTConfig(vocab=2, n_ctx=7, n_heads=2, d_head=4, n_layers=2)
    full = transferred_names(cfg, "full")
    assert set(full) == set(cfg.shapes()) - {"tok", "w_u", "b_u"} and "pos" in full
    assert transferred_names(cfg, "mixer") == tuple(
        f"b{l}_{k}" for l in (0, 1) for k in ("ln1_g", "ln1_b", "w_qkv", "w_o")
    )
    mamba = GPTConfig(vocab=2, n_ctx=7, n_heads=2, d_head=4, mixer="mamba")
    assert "b0_mb_A_log" in transferred_names(mamba, "mixer") and "b0_w_in" not in transferred_names(mamba, "mixer")


@pytest.mark.parametrize("what", ["full", "mixer"])
def test_a_stage2_member_starts_from_the_stage1_weights(what):
    source = run_members(STAGE1).params
    task = LinearMapTask(4, 2, seed=0)
    members = [Member(task, seed=1, init=Transfer(STAGE1, 0, what)), Member(task, seed=1)]
    run = run_members(tiny(members, lr=1e-9, steps=2))  # (almost) no training: the final weights are the initial ones
    fresh = init_gpt_params(run.config.model(), (1,))
    moved = set(transferred_names(run.config.model(), what))
    for name, value in run.params.items():
        src = source[name][0][: value.shape[1]] if name == "pos" else source[name][0]
        if name in moved:
            assert np.allclose(value[0], src, atol=1e-6), name  # from stage 1 (the first 7 of 15 positions)
        else:
            assert np.allclose(value[0], fresh[name][0].numpy(), atol=1e-6), name  # fresh, as without a transfer
        assert np.allclose(value[1], fresh[name][0].numpy(), atol=1e-6), name  # the scratch member
    assert ("b0_w_in" in moved) == (what == "full") and "tok" not in moved


def test_transfer_needs_the_same_architecture_and_enough_context():
    short = tiny([Member(DyckTask(k=2, length=6), seed=0)], steps=2)  # n_ctx 5 < 7
    stage2 = GPTConfig(vocab=2, n_ctx=7, n_heads=2, d_head=4)
    params = init_gpt_params(stage2, (0,))
    with pytest.raises(ValueError, match="pos"):
        apply_transfers(params, stage2, {0: Transfer(short, 0, "full")}, {short: run_members(short).params})
    apply_transfers(params, stage2, {0: Transfer(short, 0, "mixer")}, {short: run_members(short).params})  # fine
    other = GPTConfig(vocab=2, n_ctx=7, n_heads=2, d_head=4, mixer="mlstm")
    with pytest.raises(ValueError, match="mixer"):
        apply_transfers(
            init_gpt_params(other, (0,)), other, {0: Transfer(short, 0, "mixer")}, {short: run_members(short).params}
        )


def test_member_learning_rate_is_adam_at_that_rate():
    # Adam at lr r*lr with eps/r: with gradients far above eps (init_std 0.3) the same trajectory as a plain run
    task = LinearMapTask(4, 2, seed=0)
    mixed = run_members(tiny([Member(task, seed=0, lr=1e-2), Member(task, seed=1)], lr=3e-3, init_std=0.3))
    alone_fast = run_members(tiny([Member(task, seed=0)], lr=1e-2, init_std=0.3))
    alone_slow = run_members(tiny([Member(task, seed=1)], lr=3e-3, init_std=0.3))
    assert np.allclose(mixed.loss[:, 0], alone_fast.loss[:, 0], atol=1e-6)
    assert np.allclose(mixed.loss[:, 1], alone_slow.loss[:, 0], atol=1e-6)
    for name in mixed.params:
        assert np.allclose(mixed.params[name][0], alone_fast.params[name][0], atol=2e-4), name
        assert np.allclose(mixed.params[name][1], alone_slow.params[name][0], atol=1e-5), name
    same_rate = run_members(tiny([Member(task, seed=0)], lr=3e-3, init_std=0.3))
    assert not np.allclose(mixed.loss[:, 0], same_rate.loss[:, 0], atol=1e-3)


@pytest.mark.parametrize("mixer", ["mlp_mixer", "deltanet"])
def test_token_mixers_train_in_the_harness(mixer):
    task = AutomatonTask(C=2, S=4, T=3, N=1, seed=0)
    run = run_members(tiny([Member(task, seed=0), Member(task, seed=1)], mixer=mixer, d_state=4, steps=20))
    assert run.loss.shape == (3, 2) and np.isfinite(run.loss).all() and np.isnan(run.mass).all()
    assert run.entropy.shape == (3, 2, 2, 8)
    assert "b0_w_qkv" not in run.params and run.config.model().mixer == mixer


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: Transfer("config"), "source"),
        (lambda: Transfer(STAGE1, member=1), "member"),
        (lambda: Transfer(STAGE1, what="attention"), "what"),
        (lambda: transferred_names(GPTConfig(vocab=2, n_ctx=3), "all"), "what"),
        (lambda: Member(LinearMapTask(4, 2), lr=0.0), "lr"),
        (lambda: Member(LinearMapTask(4, 2), init="stage1"), "init"),
        (lambda: tiny([Member(LinearMapTask(4, 2), bias=1.0)], mixer="mamba"), "bias"),
        (lambda: tiny([Member(LinearMapTask(4, 2))], mixer="lstm"), "mixer"),
    ],
)
def test_bad_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()
