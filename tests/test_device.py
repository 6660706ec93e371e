"""One paper-scale training step of every model on CUDA against the same step on the CPU (skipped without CUDA).

The CPU is the reference (every committed study was trained there). For each token mixer of
:data:`lib.models.ARCHITECTURES`, at chapter 7's paper scale (:meth:`lib.studies.mixer_tuning.MixerTuningConfig.paper`:
d_model 128 = 8 heads of 16, MLP 512, d_state 16, one layer; the linear map with S = 16, 8,192 tokens per step), a
stack of two members (sparsities 3 and 5, seeds 0 and 1; the transformer's second member with a bias ``c M``) starts
from the same parameters (same seeds) on both devices and sees the same batches. In float32 (TF32 off for these
tests, the flags restored after), the GPU must give

- the same losses and gradients at the initial parameters (:func:`lib.models.gpt_forward` and autograd);
- after one step of the project's trainer (:func:`lib.train.run_members`: forward, loss, backward, one Adam step,
  the held-out evaluations before and after), the same training and held-out losses, attention entropy and mass,
  and the same parameters;

and the paper-scale trainer (:func:`lib.train.fast_train.run_fast`) the same two steps in ``"fp32"``, and the same
losses within bfloat16's rounding in ``"bf16"``.

Tolerances. What float32 rounding does at this scale, measured on the CPU (float32 against float64, and float32
against float32 with the batch in another order, i.e. other summation orders, as on other hardware): losses move by
at most 1.2e-7, gradients by 1e-3 of themselves plus 1.5e-7 of their tensor's largest entry, the first Adam step by
1.6e-5 (it is ``lr * g / (|g| + eps)``, about ``lr`` whatever ``|g|``, so it moves only where a gradient is near
``eps``). The tests allow losses ``rtol`` 1e-4 (bfloat16: 1e-2), gradients ``rtol`` 1e-3 plus 1e-4 of the tensor's
largest entry, parameters a tenth of the learning rate (6 times the largest measured; a step of the wrong sign is
off by ``2 lr``). Top-s IoU is not compared: it ranks near-equal attention weights.

One parameter is left out of the step: the MLP-Mixer's output bias ``tm_b2`` adds one constant to every channel of a
position, which the next LayerNorms remove, so its gradient is zero in exact arithmetic and rounding noise in
floats; Adam's first step on it (up to ``lr``, of that noise's sign) is device-dependent by construction. The
gradient test checks instead that it is at rounding level on both devices.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from lib.models import ARCHITECTURES, gpt_forward, init_gpt_params
from lib.studies.mixer_tuning import MixerTuningConfig
from lib.train import GPTRunConfig, Member, run_members, task_parts
from lib.train.fast_train import FastRunConfig, run_fast

pytestmark = [
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
    pytest.mark.usefixtures("strict_float32"),
]

DEVICE = "cuda"
LR = 1e-3
LOSS = {"rtol": 1e-4, "atol": 1e-6}
#: Parameters (name suffixes) whose gradient is zero in exact arithmetic, per architecture (module docstring).
ZERO_GRADIENT = {"mlp_mixer": ("tm_b2",)}


@pytest.fixture
def strict_float32():
    """Float32 matrix products in float32 on the GPU (no TF32) for one test; the previous flags restored after."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def paper_run(arch: str, steps: int = 1) -> GPTRunConfig:
    """A two-member stack of ``arch`` on chapter 7's paper-scale linear map and model: ``steps`` steps at ``LR``."""
    t = MixerTuningConfig.paper()
    c = 2.0 if arch == "attention" else 0.0  # c M is defined for attention only
    members = (Member(t.lm_task(3), seed=0), Member(t.lm_task(5), seed=1, bias=c))
    model = {**t.model("linear map"), "eval_every": 1, "eval_tokens": 2048}
    return GPTRunConfig(members=members, mixer=arch, steps=steps, lr=LR, **model)


def zero_gradient(arch: str, name: str) -> bool:
    return name.endswith(ZERO_GRADIENT.get(arch, ()))


def losses_and_gradients(cfg: GPTRunConfig, device) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Per-member losses ``(E,)`` and gradients at the initial parameters on one batch, computed on ``device``,
    returned on the CPU."""
    model, E = cfg.model(), len(cfg.members)
    tokens = torch.stack(
        [task_parts(m.task).sample(cfg.batch, torch.Generator().manual_seed(m.seed)) for m in cfg.members]
    ).to(device)  # (E, B, L), drawn on the CPU
    params = init_gpt_params(model, [m.seed for m in cfg.members], device=device)
    params = {k: v.requires_grad_(True) for k, v in params.items()}
    logits = gpt_forward(params, tokens[..., :-1], model)  # c M is left out here (run_members applies it)
    ce = F.cross_entropy(logits.reshape(-1, model.vocab), tokens[..., 1:].reshape(-1), reduction="none")
    loss = ce.view(E, -1).mean(1)
    grads = torch.autograd.grad(loss.sum(), list(params.values()))
    return loss.detach().cpu(), {k: g.cpu() for k, g in zip(params, grads)}


def check_gradients(arch: str, device) -> None:
    """The losses and gradients of ``arch`` on ``device`` are the CPU's to float32 rounding."""
    cfg = paper_run(arch)
    loss, grads = losses_and_gradients(cfg, "cpu")
    loss_dev, grads_dev = losses_and_gradients(cfg, device)
    torch.testing.assert_close(loss_dev, loss, **LOSS)
    top = max(float(g.abs().max()) for g in grads.values())
    for name, g in grads.items():
        if zero_gradient(arch, name):  # rounding noise on both devices, nothing to compare
            assert max(float(g.abs().max()), float(grads_dev[name].abs().max())) < 1e-5 * top, name
        else:
            torch.testing.assert_close(grads_dev[name], g, rtol=1e-3, atol=1e-4 * float(g.abs().max()), msg=name)


def check_step(arch: str, device) -> None:
    """One step of :func:`lib.train.run_members` on ``device`` matches the CPU's: losses, attention readouts, params."""
    cfg = paper_run(arch)
    ref, run = run_members(cfg), run_members(cfg, device=device)
    assert ref.steps_run == run.steps_run == 1
    for key in ("train_loss", "loss", "pred_loss", "token_loss"):  # the first batch; held out before and after
        np.testing.assert_allclose(getattr(run, key), getattr(ref, key), err_msg=key, **LOSS)
    for key in ("entropy", "mass"):  # nan for the other mixers, on both devices
        np.testing.assert_allclose(getattr(run, key), getattr(ref, key), rtol=1e-4, atol=1e-5, err_msg=key)
    start = init_gpt_params(cfg.model(), [m.seed for m in cfg.members])
    moved = max(float(np.abs(p - start[name].numpy()).max()) for name, p in ref.params.items())
    assert LR / 2 < moved <= 1.01 * LR  # Adam's first step, at most lr: the comparison below is not vacuous
    for name, p in ref.params.items():
        if not zero_gradient(arch, name):
            np.testing.assert_allclose(run.params[name], p, rtol=0, atol=LR / 10, err_msg=name)


def check_fast(precision: str, device) -> None:
    """Two steps of :func:`lib.train.fast_train.run_fast` on ``device`` match the CPU's at ``precision``."""
    cfg = FastRunConfig(paper_run("attention", steps=2), precision)
    ref, run = run_fast(cfg), run_fast(cfg, device=device)
    assert ref.steps_run == run.steps_run == 2
    loss = LOSS if precision == "fp32" else {"rtol": 1e-2, "atol": 0}  # bfloat16 keeps 8 significant bits
    for key in ("train_loss", "loss", "pred_loss"):
        np.testing.assert_allclose(getattr(run, key), getattr(ref, key), err_msg=key, **loss)
    if precision == "fp32":
        for name, p in ref.params.items():
            np.testing.assert_allclose(run.params[name], p, rtol=0, atol=LR / 10, err_msg=name)


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_gradients_on_cuda_match_cpu(arch):
    check_gradients(arch, DEVICE)


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_one_training_step_on_cuda_matches_cpu(arch):
    check_step(arch, DEVICE)


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_fast_trainer_on_cuda_matches_cpu(precision):
    check_fast(precision, DEVICE)
