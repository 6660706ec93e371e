"""Golden numerics: every trainer and sampler, run on a tiny configuration at fixed seeds, reproduces committed numbers.

Any numerical change to a trainer or sampler (its initialisation, data stream, forward, loss, gradients, optimiser or
noise) fails one of these tests, so that the results cache need not detect code changes. One case per trainer or
sampler (:data:`golden_cases.CASES`; each case's ``doc`` says what it pins down):

- ``gpt_reference``: :func:`lib.train.train_gpt` (``cache=False``), the reference GPT trainer;
- ``fast_fp32``, ``fast_bf16``: :func:`lib.train.run_fast` (the forward :func:`lib.models.train_logits`) at both
  :data:`lib.models.PRECISIONS`;
- ``mixer_<name>``: a GPT with each token mixer of :data:`lib.models.MIXERS`, trained by :func:`lib.train.train_gpt`;
- ``copy_map_softmax``, ``copy_map_linear``: copy-head Adam, :func:`lib.train.fit_copy_map` (``cache=False``);
- ``copy_sgld_softmax``, ``copy_sgld_linear``: SGLD, :func:`lib.train.sample_copy_posterior` (``cache=False``) and
  through it :func:`lib.train.langevin`;
- ``lm_minisuite``: the language-model mini-suite's training step, :func:`lib.lm.minisuite.train_run`.

The references are ``tests/golden/data/<case>.json``: the case's summary quantities (loss histories, held-out
losses, attention statistics, per parameter tensor its sum, sum of squares and a few fixed entries) and the torch
version and CPU capability they were written on. After an *intended* numerical change, rewrite them and commit them
with the change (from the repository root; never run by the tests)::

    .venv/bin/python -m tests.golden.regen [CASE ...]            # rewrite (each case run twice: must agree to the bit)
    .venv/bin/python -m tests.golden.regen --check [CASE ...]    # compare only
    .venv/bin/python -m tests.golden.regen --measure [CASE ...]  # the deviations below, across CPU kernels

A value passes when ``|actual - golden| <= rtol * max(|golden|, scale)``, ``scale`` being 0 for losses and sums of
squares, the tensor's norm for a sum and its RMS for single entries (:func:`golden_cases.compare`).

Tolerances, from the deviations measured with ``--measure`` (torch 2.13.0+cpu on an x86-64 CPU with AVX-512 and
AVX512-BF16, one thread; each column the largest ``|actual - golden| / max(|golden|, scale)`` over a case's
quantities, the goldens written on the native kernels). Kernel settings, set before torch is imported:
``default`` and ``avx2``: ``ATEN_CPU_CAPABILITY``; ``nobf16``: ``ONEDNN_MAX_CPU_ISA=AVX512_CORE`` (oneDNN's
bfloat16 products without AVX512-BF16); ``avx2-a`` and ``deflt-a``: torch's, MKL's and oneDNN's kernels all capped,
to AVX2 (``ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2``) or to the portable ones
(``default``, ``SSE4_2``, ``SSE41``), as on machines without AVX-512 (bfloat16 products then run ~80x slower).
``lr 1e-3``: the deviation caused by multiplying the learning rate (SGLD: the step size) by 1.001
(:func:`golden_cases.perturb_lr`), native kernels. ``kern/tol``: the worst kernel setting in units of each
quantity's tolerance (must stay below 1); ``lr/tol``: the perturbation in those units (must exceed 1).

========================  =======  =======  =======  =======  =======  =======  =======  =======  =======  ========
case                       native  default     avx2   nobf16   avx2-a  deflt-a     rtol  lr 1e-3  kern/tol    lr/tol
========================  =======  =======  =======  =======  =======  =======  =======  =======  =======  ========
gpt_reference                   0  1.3e-06        0        0    1e-06  1.1e-06    1e-04   0.0028    0.013      27.8
fast_fp32                       0  1.3e-06        0        0    1e-06  1.1e-06    1e-04   0.0028    0.013      27.8
fast_bf16                       0  2.4e-06        0        0    4e-08  3.4e-05    1e-03    0.012    0.034      11.5
mixer_attention                 0  7.2e-07        0        0  8.1e-07  1.1e-06    1e-04   0.0021    0.011      20.9
mixer_mlp_mixer                 0  1.1e-06        0        0  8.3e-07  2.1e-06    1e-04    0.002    0.021      20.2
mixer_mamba                     0  6.1e-07  3.6e-07        0  5.8e-07    9e-07    1e-04   0.0018    0.009      18.1
mixer_deltanet                  0  4.9e-06        0        0  2.8e-06  4.3e-06    1e-04   0.0069    0.049      69.2
mixer_rwkv                      0  1.5e-06        0        0        0  1.5e-06    1e-04   0.0092    0.015      92.1
mixer_mlstm                     0  4.3e-06        0        0  4.3e-06  4.9e-06    1e-04    0.053    0.049       531
mixer_linear_rnn                0  7.6e-07        0        0  1.5e-06  1.8e-06    1e-04    0.002    0.018        20
mixer_mlp_mixer_unmasked        0  9.4e-07        0        0  1.3e-06  1.8e-06    1e-04   0.0021    0.018        21
copy_map_softmax                0  3.6e-15  2.8e-14        0  2.8e-14  3.6e-15    1e-09   0.0057  2.8e-05     6e+06
copy_map_linear                 0  8.1e-14        0        0        0  8.1e-14    1e-09   0.0072  8.1e-05     7e+06
copy_sgld_softmax               0  8.4e-15  8.4e-15        0  8.4e-15  8.4e-15    1e-09  0.00069  8.4e-06     7e+05
copy_sgld_linear                0        0        0        0        0        0    1e-09   0.0051        0     5e+06
lm_minisuite: losses            0  1.7e-07  8.5e-08        0  8.5e-08  8.5e-08    5e-06    9e-05    0.034        18
lm_minisuite: checkpoint        0    2e-05  3.4e-05        0  2.5e-05  1.3e-05    1e-03   0.0018    0.034       1.8
========================  =======  =======  =======  =======  =======  =======  =======  =======  =======  ========

So: float32 training (the GPT trainers and every mixer) moves by at most ~5e-6 between CPU kernels over 10-16 steps,
and ``rtol = 1e-4`` leaves a margin of 20x or more, while a 1e-3 change of the learning rate moves them by 2e-3 to
5e-2 (18x to 500x the tolerance). bfloat16 (``fast_bf16``) needs a looser tolerance, ``1e-3``, 10x the float32 one:
a last-bit difference of a float32 input flips a bfloat16 rounding (2^-8), and the bfloat16 products take another
path without AVX512-BF16 (measured up to 3.4e-5, 30x below; the perturbation is 11x above). The float64 copy-head
cases (Adam and SGLD) agree to ~1e-13 everywhere and use ``1e-9`` (10^4 above; a 1e-3 change moves them by 7e-4 or
more). ``lm_minisuite`` (32 steps): its losses agree to 2e-7 (``rtol 5e-6``, 29x above; the perturbation moves them
by 9e-5, 18x the tolerance); its final checkpoint is float16 on disk, where a float32 difference in the last bit can
flip a float16 rounding, so the checkpoint's sums are held at ``1e-3`` (measured 3.4e-5; they catch only coarser
changes, the losses the fine ones).

Runtime (one thread, this machine; each case runs twice in its test, for determinism): 0.02-0.1 s per run for the
GPT, mixer and copy-head cases and 0.1 s for ``lm_minisuite``, after one-off costs in the first case of a process
(~1 s of torch's first calls, ~3 s to import transformers); the module takes 9-12 s in one process.

That the tests can fail is tested too: a learning rate (SGLD: step size) 1e-3 off fails every case
(``test_a_learning_rate_one_per_mille_off_fails``), the MLP's GELU scaled by 1.001 fails both GPT trainers and the
attention mixer (by 1.01 in bfloat16, whose rounding absorbs 1e-3: ``test_a_scaled_gelu_fails``), and one changed
initialisation or noise seed fails the reference GPT, copy-head Adam and SGLD (``test_another_seed_fails``); the
failure message names the case, the quantity and index, both values and the tolerance
(``test_comparison_names_case_quantity_values_and_tolerance``).

Left out of the summaries, on purpose: the MLP-Mixer's output bias ``tm_b2`` (the loss does not depend on it, so Adam
turns its rounding-noise gradient into full-size steps: :data:`golden_cases.NOISE_PARAMETERS`), the top-s IoU of
attention (a step function of the attention ranking) and the float16 checkpoint files' hashes.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

import golden_cases as g  # tests/golden is on sys.path (pytest's default "prepend" import mode)

CASES = list(g.CASES)


@pytest.mark.parametrize("name", CASES)
def test_case_matches_its_golden(name):
    """The case is deterministic (two runs agree to the bit) and its summary matches the committed reference."""
    case = g.CASES[name]
    first = case.compute()
    assert g.same_bits(first, case.compute()), f"{name}: two runs at the same seeds differ"
    g.check(name, first)


def test_every_case_has_a_golden_file_and_every_file_a_case():
    assert sorted(p.stem for p in g.DATA.glob("*.json")) == sorted(CASES)
    for name in CASES:
        written = g.load(name)["written_on"]
        assert {"torch", "cpu_capability"} <= set(written), name


# ------------------------------------------------------------------------------------------------ the tests can fail
@pytest.mark.parametrize("name", CASES)
def test_a_learning_rate_one_per_mille_off_fails(name):
    """Multiplying the learning rate (SGLD: the step size) by 1.001 is reported, naming the case and the quantity."""
    case = g.CASES[name]
    perturbed = case.compute(g.perturb_lr(case.make()))
    mismatches = g.compare(name, g.load(name)["quantities"], perturbed)
    assert mismatches, f"{name}: a learning rate 1e-3 off passed the golden comparison"
    first = mismatches[0]
    assert first.case == name and math.isfinite(first.actual) and abs(first.actual - first.expected) > first.tolerance
    assert f"{name}: {first.quantity}[{first.index}]" in str(first) and "tolerance" in str(first)
    with pytest.raises(AssertionError, match=f"{name}: {len(mismatches)} value"):
        g.check(name, perturbed)


@pytest.mark.parametrize(
    "name, factor", [("gpt_reference", 1.001), ("fast_fp32", 1.001), ("mixer_attention", 1.001), ("fast_bf16", 1.01)]
)
def test_a_scaled_gelu_fails(name, factor, monkeypatch):
    """Scaling the MLP's GELU output by ``factor`` (an arithmetic change inside the forward) is caught. In bfloat16 the
    GELU output is rounded to 8 bits before its product, which absorbs a factor 1.001 (below half a bfloat16 step,
    2^-9) in most entries: there the factor is 1.01."""
    gelu = torch.nn.functional.gelu
    monkeypatch.setattr(torch.nn.functional, "gelu", lambda x, *a, **k: gelu(x, *a, **k) * factor)
    mismatches = g.compare(name, g.load(name)["quantities"], g.CASES[name].compute())
    assert mismatches, f"{name}: a GELU scaled by {factor} passed the golden comparison"


def _reseeded_member(cfg):
    """The GPT run with member 2's seed (its initialisation and data stream) 2 -> 7."""
    return dataclasses.replace(cfg, members=(*cfg.members[:2], dataclasses.replace(cfg.members[2], seed=7)))


@pytest.mark.parametrize(
    "name, change",
    [
        ("gpt_reference", _reseeded_member),
        ("copy_map_softmax", lambda c: dataclasses.replace(c, init_seeds=(0, 2))),
        ("copy_sgld_softmax", lambda c: dataclasses.replace(c, sgld=dataclasses.replace(c.sgld, seed=4))),
    ],
)
def test_another_seed_fails(name, change):
    """One initialisation (or noise) seed changed is caught."""
    case = g.CASES[name]
    assert g.compare(name, g.load(name)["quantities"], case.compute(change(case.make())))


# ------------------------------------------------------------------------------------------------ the comparison
def test_comparison_names_case_quantity_values_and_tolerance():
    Q = g.Quantity
    golden = {
        "loss": Q(np.array([1.0, 2.0])),
        "w.sum": Q(np.array([0.0]), 1.0),
        "gone": Q(np.array([1.0])),
        "nan": Q(np.array([np.nan])),
        "short": Q(np.array([1.0, 2.0])),
    }
    actual = {
        "loss": Q(np.array([1.0, 2.001])),
        "w.sum": Q(np.array([5e-5])),
        "new": Q(np.array([1.0])),
        "nan": Q(np.array([np.nan])),
        "short": Q(np.array([1.0])),
    }
    found = {(m.quantity, m.index): m for m in g.compare("gpt_reference", golden, actual, rtol=1e-4)}
    assert set(found) == {("loss", 1), ("gone", None), ("new", None), ("short", None)}  # w.sum: within 1e-4 x scale 1
    loss = found[("loss", 1)]
    assert (loss.case, loss.expected, loss.actual, loss.rtol) == ("gpt_reference", 2.0, 2.001, 1e-4)
    assert math.isclose(loss.tolerance, 2e-4)
    text = str(loss)
    assert text.startswith("gpt_reference: loss[1] = 2.001, golden 2.0") and "tolerance 0.0002" in text
    assert "missing from the run" in str(found[("gone", None)]) and "not in the golden" in str(found[("new", None)])
    dev = g.deviations(golden, actual)
    assert math.isclose(dev["loss"], 5e-4) and math.isclose(dev["w.sum"], 5e-5) and dev["nan"] == 0
    assert dev["short"] == dev["gone"] == math.inf
