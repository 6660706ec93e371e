"""The golden-numerics cases, their summaries, the committed reference files and the comparison helper.

A *case* is one tiny configuration of one trainer or sampler, run for a handful of steps at fixed seeds. Its
*summary* is a small set of named *quantities*, each a 1-D float64 vector with a *scale*: loss histories, held-out
losses, attention statistics, and per parameter tensor its sum, sum of squares and a few fixed entries. The
reference summary of every case is committed as ``tests/golden/data/<case>.json`` (written by
``python -m tests.golden.regen``, never by the tests) together with the torch version and CPU capability it was
written on. :func:`compare` checks a fresh summary against it, elementwise::

    |actual - golden| <= rtol * max(|golden|, scale)

``scale`` is 0 for quantities that are never near zero (losses, sums of squares), the tensor's Euclidean norm for a
sum of its entries (a sum can cancel to near zero; its rounding error is set by the norm) and the tensor's RMS for
single entries. ``rtol`` is the case's (:attr:`Case.rtol`), measured across CPU kernels (the test module's
docstring lists the measurements).

Only the package faces are imported (``lib.train``, ``lib.models``, ``lib.tasks``, ``lib.lm``), since module files
move; the cases run through the uncached entry points (``cache=False`` or the ``run_*`` functions).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import platform
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

DATA = Path(__file__).resolve().parent / "data"

#: Relative size of the learning-rate change of the perturbation checks (:func:`perturb_lr`).
LR_PERTURBATION = 1e-3


# ------------------------------------------------------------------------------------------------ quantities
@dataclass(frozen=True)
class Quantity:
    """One summary quantity: ``values`` (1-D float64) and the ``scale`` below which its tolerance stops shrinking."""

    values: np.ndarray
    scale: float = 0.0


def series(x) -> Quantity:
    """A quantity compared relative to each value (losses, probabilities, entropies): scale 0."""
    return Quantity(np.asarray(x, dtype=np.float64).ravel())


def tensor_stats(prefix: str, x, n_entries: int = 4) -> dict[str, Quantity]:
    """``{prefix}.sum``, ``{prefix}.sumsq`` and ``{prefix}.entries`` (``n_entries`` evenly spaced flat entries) of an
    array, computed in float64; the sum's scale is the Euclidean norm, the entries' the RMS."""
    v = np.asarray(x, dtype=np.float64).ravel()
    sumsq = float(np.dot(v, v))
    idx = np.unique(np.linspace(0, v.size - 1, n_entries).round().astype(int))
    return {
        f"{prefix}.sum": Quantity(np.array([v.sum()]), math.sqrt(sumsq)),
        f"{prefix}.sumsq": Quantity(np.array([sumsq])),
        f"{prefix}.entries": Quantity(v[idx], math.sqrt(sumsq / v.size)),
    }


#: Parameters left out of the summaries: the MLP-Mixer's output bias ``tm_b2`` (:mod:`lib.models.mixers`) adds one
#: number per position to every channel of the residual stream, which every reader of that stream (a LayerNorm)
#: subtracts again, so the loss does not depend on it: its gradient is rounding noise, which Adam normalises into
#: steps of size ``lr`` with kernel-dependent signs (measured: the entries move by 100 % to 400 % of their scale
#: between CPU kernels, while every other quantity of those cases moves by < 1e-5).
NOISE_PARAMETERS = ("tm_b2",)


def params_stats(params: Mapping[str, Any], prefix: str = "params") -> dict[str, Quantity]:
    """:func:`tensor_stats` of every parameter tensor (sorted by name) but those of :data:`NOISE_PARAMETERS`."""
    out: dict[str, Quantity] = {}
    for name in sorted(params):
        if name.split("_", 1)[-1] in NOISE_PARAMETERS:  # stacked names are "b<layer>_<short name>"
            continue
        value = params[name]
        if isinstance(value, torch.Tensor):
            value = value.detach().double().cpu().numpy()
        out.update(tensor_stats(f"{prefix}.{name}", value))
    return out


def gpt_run_summary(run) -> dict[str, Quantity]:
    """Summary of a :class:`lib.train.GPTRun`: training-loss history, held-out loss (all positions and predicting
    queries), the attention's mean mass on the true support and mean entropy (attention models), final parameters.

    The top-s IoU is left out on purpose: it is a step function of the attention ranking, so a float tie broken the
    other way by another CPU kernel would flip it."""
    out = {"train_loss": series(run.train_loss), "heldout_loss": series(run.loss), "pred_loss": series(run.pred_loss)}
    if not np.isnan(run.mass).all():
        out["mass"] = series(np.mean(run.mass, axis=(-2, -1)))  # (K, E): mean over heads and queries
        out["entropy"] = series(np.mean(run.entropy, axis=(-2, -1)))
    out["steps_run"] = series([run.steps_run])
    out.update(params_stats(run.params))
    return out


# ------------------------------------------------------------------------------------------------ cases
@dataclass(frozen=True)
class Case:
    """One golden case.

    Attributes
    ----------
    name : str
        File stem of its reference (``data/<name>.json``).
    make : callable
        ``make() -> config``: the tiny configuration.
    run : callable
        ``run(config) -> {quantity: Quantity}``: train or sample it and summarise.
    rtol : float
        Relative tolerance of its quantities (see the module docstring for its meaning).
    doc : str
        What the case pins down.
    rtol_for : tuple of (prefix, rtol)
        Other tolerances for the quantities whose names start with ``prefix`` (the first match counts).
    """

    name: str
    make: Callable[[], Any]
    run: Callable[[Any], dict[str, Quantity]]
    rtol: float
    doc: str
    rtol_for: tuple[tuple[str, float], ...] = ()

    def tolerance(self, quantity: str) -> float:
        """The relative tolerance of ``quantity``."""
        return next((r for prefix, r in self.rtol_for if quantity.startswith(prefix)), self.rtol)

    def compute(self, config: Any = None) -> dict[str, Quantity]:
        """The case's summary at ``config`` (default: :attr:`make`'s), on one torch thread, with torch's global RNG
        state restored afterwards (a case that seeds it does not leak into the tests that run after it)."""
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # the thread count changes float summation order: fixed, as in tests/conftest.py
        try:
            with torch.random.fork_rng(devices=[]):
                return self.run(self.make() if config is None else config)
        finally:
            torch.set_num_threads(threads)


def _linear_map_task():
    from lib.tasks import LinearMapTask

    return LinearMapTask(4, 1, seed=0, distinct=True)  # 8-token sequences, binary vocabulary


def gpt_config(members: int = 3, **kw):
    """The tiny stacked GPT run of the GPT cases: a 4-bit linear map, ``members`` members (member 1 with an
    attention bias ``c = 2``), 2 heads of width 4, 8 sequences of 8 tokens per step, held-out loss every 2 steps."""
    from lib.train import GPTRunConfig, Member

    task = _linear_map_task()
    base = dict(
        members=tuple(Member(task, seed=e, bias=2.0 if e == 1 else 0.0) for e in range(members)),
        n_heads=2,
        d_head=4,
        n_layers=2,
        d_mlp=16,
        init_std=0.2,
        tokens_per_step=64,
        steps=16,
        lr=1e-2,
        eval_every=2,
        eval_tokens=64,
    )
    base.update(kw)
    return GPTRunConfig(**base)


def _run_gpt_reference(cfg):
    from lib.train import train_gpt

    return gpt_run_summary(train_gpt(cfg, cache=False))


def _fast_config(precision: str, **kw):
    from lib.train import FastRunConfig

    return FastRunConfig(gpt_config(**kw), precision)


def _run_fast(cfg):
    from lib.train import run_fast

    return gpt_run_summary(run_fast(cfg))


def _mixer_member_config(mixer: str):
    """The tiny run of a token-mixer case: 2 unbiased one-layer members (a bias is for attention only), 10 steps."""
    from lib.train import GPTRunConfig, Member

    task = _linear_map_task()
    return GPTRunConfig(
        members=(Member(task, seed=0), Member(task, seed=1)),
        n_heads=2,
        d_head=4,
        n_layers=1,
        d_mlp=16,
        init_std=0.2,
        tokens_per_step=64,
        steps=10,
        lr=1e-2,
        eval_every=2,
        eval_tokens=64,
        mixer=mixer,
        d_state=4,
    )


def _copy_map_config(kind: str, **adam):
    from lib.train import AdamConfig, CopyMapConfig

    return CopyMapConfig(
        kind,
        V=4,
        L=6,
        P_grid=(10, 200),
        init_seeds=(0, 1),
        adam=AdamConfig(**{"lr": 0.05, "steps": 40, "check_every": 10, **adam}),
    )


def _run_copy_map(cfg):
    from lib.train import fit_copy_map

    res = fit_copy_map(cfg, cache=False)
    out = {name: series(getattr(res, name)) for name in ("U", "train_loss", "test_loss", "target", "grad_norm")}
    if cfg.kind == "linear":
        out["beta"] = Quantity(np.asarray(res.beta, dtype=np.float64).ravel(), float(np.abs(res.beta).max()))
    out.update(tensor_stats("A", res.A))
    out.update(tensor_stats("W", res.W))
    out["steps_run"] = series([res.steps_run])
    return out


def _copy_sgld_config(kind: str, **sgld):
    from lib.train import CopySGLDConfig, SGLDConfig

    return CopySGLDConfig(
        kind,
        V=4,
        L=6,
        P_grid=(10, 200),
        random_chains=2,
        copy_chains=1,
        sgld=SGLDConfig(**{"step_size": 2e-3, "steps": 80, "burn_in": 0.5, "thin": 10, "seed": 3, **sgld}),
    )


def _run_copy_sgld(cfg):
    from lib.train import sample_copy_posterior

    res = sample_copy_posterior(cfg, cache=False)
    out = {"target": series(res.target), "test_loss": series(res.test_loss)}
    out.update(tensor_stats("A", res.A, n_entries=8))
    return out


def lm_config():
    """The smallest mini-suite: one 1-layer GPT-NeoX of width 16 (2 heads of 8), one seed, the word-level vocabulary
    and synthetic corpus at 16 tokens a row, 32 AdamW steps of 4 rows (2 of warm-up), checkpoints at 0 and 32."""
    from lib.lm import CorpusConfig, MiniSuiteConfig, ModelSize, TrainConfig

    return MiniSuiteConfig(
        prefix="golden",
        sizes=(ModelSize("g", 1, 16, 2),),
        seeds=(0,),
        train=TrainConfig(steps=32, batch_size=4, warmup=2),
        corpus=CorpusConfig(seq_len=16),
        checkpoints=(0, 32),
    )


def _run_lm(cfg):
    from safetensors.numpy import load_file

    from lib.lm.minisuite import train_run

    with tempfile.TemporaryDirectory(prefix="golden-lm-") as root:
        summary = train_run(cfg, cfg.sizes[0].name, cfg.seeds[0], root)
        final = next(Path(root).glob(f"*/step{cfg.train.steps}/model.safetensors"))
        weights = load_file(str(final))  # the final checkpoint, as the suite stores it (float16)
    out = {"train_loss": series(summary["losses"]), "n_params": series([summary["n_params"]])}
    for name in sorted(weights):
        v = weights[name].astype(np.float64).ravel()
        out[f"checkpoint.{name}.sumsq"] = Quantity(np.array([np.dot(v, v)]))
        out[f"checkpoint.{name}.abssum"] = Quantity(np.array([np.abs(v).sum()]))
    return out


def _cases() -> dict[str, Case]:
    from lib.models import MIXERS

    cases = [
        Case(
            "gpt_reference",
            gpt_config,
            _run_gpt_reference,
            1e-4,
            "lib.train.train_gpt (cache=False), the reference GPT trainer: 3 stacked 2-layer attention GPTs (one "
            "with an attention bias) on a 4-bit linear map, 16 Adam steps; training and held-out losses, attention "
            "mass and entropy, final parameters.",
        ),
        Case(
            "fast_fp32",
            lambda: _fast_config("fp32"),
            _run_fast,
            1e-4,
            "lib.train.run_fast at precision fp32 (lib.models.train_logits): the gpt_reference run through the fast "
            "forward.",
        ),
        Case(
            "fast_bf16",
            lambda: _fast_config("bf16", members=2, n_layers=1, steps=10),
            _run_fast,
            1e-3,
            "lib.train.run_fast at precision bf16 (bfloat16 matrix products): 2 one-layer members, 10 steps (kept "
            "tiny: bfloat16 products are slow on CPUs without native bfloat16).",
        ),
    ]
    for mixer in MIXERS:
        cases.append(
            Case(
                f"mixer_{mixer}",
                lambda m=mixer: _mixer_member_config(m),
                _run_gpt_reference,
                1e-4,
                f"lib.train.train_gpt with mixer={mixer!r}: 2 one-layer GPTs with this token mixer, 10 Adam "
                "steps; losses and final parameters (its init, its forward in the training form, its "
                "gradients).",
            )
        )
    for kind in ("softmax", "linear"):
        cases.append(
            Case(
                f"copy_map_{kind}",
                lambda k=kind: _copy_map_config(k),
                _run_copy_map,
                1e-9,
                f"lib.train.fit_copy_map (cache=False), copy-head Adam ({kind} attention, float64): 2 data "
                "sizes x 3 initialisations, 40 steps; U, losses, target attention, gradient norm, A, W.",
            )
        )
    for kind in ("softmax", "linear"):
        cases.append(
            Case(
                f"copy_sgld_{kind}",
                lambda k=kind: _copy_sgld_config(k),
                _run_copy_sgld,
                1e-9,
                f"lib.train.sample_copy_posterior (cache=False), SGLD through lib.train.langevin ({kind} "
                "attention, float64): 2 data sizes x 3 chains, 80 steps, 4 recorded samples each.",
            )
        )
    cases.append(
        Case(
            "lm_minisuite",
            lm_config,
            _run_lm,
            5e-6,
            "lib.lm.minisuite.train_run: the mini-suite's GPT-NeoX training step (AdamW, warm-up, cosine, "
            "gradient clipping) on its synthetic corpus, 32 steps; the loss of every step and the final "
            "float16 checkpoint (at rtol 1e-3: one float16 rounding flipped by a last-bit difference of "
            "float32 moves a tensor's sum of |x| by up to 2^-10 of one entry).",
            rtol_for=(("checkpoint.", 1e-3),),
        )
    )
    return {c.name: c for c in cases}


CASES: dict[str, Case] = _cases()


# ------------------------------------------------------------------------------------------------ perturbations
def perturb_lr(config, factor: float = 1 + LR_PERTURBATION):
    """``config`` with its learning rate (an SGLD config: its step size) multiplied by ``factor``: the smallest real
    change the goldens must catch. Takes the config of every case (GPTRunConfig, FastRunConfig, CopyMapConfig,
    CopySGLDConfig, MiniSuiteConfig)."""
    from lib.lm import MiniSuiteConfig
    from lib.train import CopyMapConfig, CopySGLDConfig, FastRunConfig, GPTRunConfig

    replace = dataclasses.replace
    if isinstance(config, GPTRunConfig):
        return replace(config, lr=config.lr * factor)
    if isinstance(config, FastRunConfig):
        return replace(config, run=perturb_lr(config.run, factor))
    if isinstance(config, CopyMapConfig):
        return replace(config, adam=replace(config.adam, lr=config.adam.lr * factor))
    if isinstance(config, CopySGLDConfig):
        return replace(config, sgld=replace(config.sgld, step_size=config.sgld.step_size * factor))
    if isinstance(config, MiniSuiteConfig):
        return replace(config, train=replace(config.train, lr=config.train.lr * factor))
    raise TypeError(f"no learning rate to perturb in a {type(config).__name__}")


# ------------------------------------------------------------------------------------------------ reference files
def environment() -> dict[str, str]:
    """What a reference was written on: torch, numpy, Python, machine, the CPU capability torch dispatches to."""
    env = {
        "torch": torch.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "ATEN_CPU_CAPABILITY": os.environ.get("ATEN_CPU_CAPABILITY", ""),
        "threads": str(torch.get_num_threads()),
    }
    if "transformers" in sys.modules:
        env["transformers"] = sys.modules["transformers"].__version__
    return env


def path(name: str) -> Path:
    return DATA / f"{name}.json"


def to_json(name: str, summary: Mapping[str, Quantity]) -> str:
    """The reference file's text: header lines, then one line per quantity (floats written to round-trip)."""
    head = {"case": name, "doc": CASES[name].doc, "written_on": environment()}
    lines = ["{"] + [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()] + [' "quantities": {']
    items = [
        f'  {json.dumps(q)}: {{"scale": {json.dumps(float(v.scale))}, "values": '
        f"{json.dumps([float(x) for x in v.values])}}}"
        for q, v in summary.items()
    ]
    return "\n".join(lines + [",\n".join(items), " }", "}"]) + "\n"


def load(name: str) -> dict:
    """The committed reference of case ``name``: ``{"case", "doc", "written_on", "quantities"}``."""
    p = path(name)
    if not p.is_file():
        raise FileNotFoundError(f"no golden file {p}; write it with `python -m tests.golden.regen {name}`")
    data = json.loads(p.read_text(encoding="utf-8"))
    data["quantities"] = {
        q: Quantity(np.array(v["values"], dtype=np.float64), float(v["scale"])) for q, v in data["quantities"].items()
    }
    return data


# ------------------------------------------------------------------------------------------------ comparison
@dataclass(frozen=True)
class Mismatch:
    """One value of one quantity outside its tolerance (or a quantity missing, extra or of another length)."""

    case: str
    quantity: str
    index: int | None
    expected: float
    actual: float
    tolerance: float
    rtol: float
    scale: float
    note: str = ""

    def __str__(self) -> str:
        where = f"{self.case}: {self.quantity}" + ("" if self.index is None else f"[{self.index}]")
        if self.note:
            return f"{where}: {self.note}"
        return (
            f"{where} = {self.actual!r}, golden {self.expected!r}: |diff| = {abs(self.actual - self.expected):.3g}"
            f" > tolerance {self.tolerance:.3g} (rtol {self.rtol:g} x max(|golden|, scale {self.scale:.3g}))"
        )


def deviations(golden: Mapping[str, Quantity], actual: Mapping[str, Quantity]) -> dict[str, float]:
    """Per quantity, the largest ``|actual - golden| / max(|golden|, scale)`` (0 where both are equal, NaN where
    equal; inf where a quantity is missing or its length differs): the smallest ``rtol`` it would pass at."""
    out = {}
    for q in sorted(set(golden) | set(actual)):
        if q not in golden or q not in actual or golden[q].values.shape != actual[q].values.shape:
            out[q] = math.inf
            continue
        e, a = golden[q].values, actual[q].values
        same = (e == a) | (np.isnan(e) & np.isnan(a))
        denom = np.maximum(np.abs(e), golden[q].scale)
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(same, 0.0, np.abs(a - e) / denom)
        rel = np.where(np.isnan(rel), math.inf, rel)  # one NaN and one number
        out[q] = float(rel.max()) if rel.size else 0.0
    return out


def compare(
    name: str, golden: Mapping[str, Quantity], actual: Mapping[str, Quantity], rtol: float | None = None
) -> list[Mismatch]:
    """Every value of ``actual`` outside its tolerance (``rtol``; default: the case's, :meth:`Case.tolerance`) of
    ``golden``, as :class:`Mismatch` es; an empty list means the summary matches."""
    out: list[Mismatch] = []
    for q in sorted(set(golden) | set(actual)):
        rtol_q = CASES[name].tolerance(q) if rtol is None else rtol
        if q not in actual or q not in golden:
            out.append(
                Mismatch(
                    name,
                    q,
                    None,
                    math.nan,
                    math.nan,
                    0.0,
                    rtol_q,
                    0.0,
                    "missing from the run" if q not in actual else "not in the golden file",
                )
            )
            continue
        e, a, scale = golden[q].values, actual[q].values, golden[q].scale
        if e.shape != a.shape:
            out.append(
                Mismatch(name, q, None, math.nan, math.nan, 0.0, rtol_q, scale, f"{a.size} values, golden {e.size}")
            )
            continue
        tol = rtol_q * np.maximum(np.abs(e), scale)
        bad = ~((np.abs(a - e) <= tol) | (np.isnan(e) & np.isnan(a)))
        for i in np.flatnonzero(bad):
            out.append(Mismatch(name, q, int(i), float(e[i]), float(a[i]), float(tol[i]), rtol_q, scale))
    return out


def report(name: str, mismatches: list[Mismatch], limit: int = 12) -> str:
    """A failure message: the first ``limit`` mismatches, how many there are, and where the golden was written."""
    try:
        written = load(name)["written_on"]
    except FileNotFoundError:
        written = {}
    lines = [str(m) for m in mismatches[:limit]]
    if len(mismatches) > limit:
        lines.append(f"... and {len(mismatches) - limit} more")
    lines.append(f"golden written on {written}; this run on {environment()}")
    lines.append("after an intended numerical change: rewrite (`python -m tests.golden.regen`) and commit the goldens")
    return f"{name}: {len(mismatches)} value(s) outside tolerance\n" + "\n".join(lines)


def check(name: str, actual: Mapping[str, Quantity]) -> None:
    """Raise ``AssertionError`` (with :func:`report`'s message) unless ``actual`` matches case ``name``'s golden."""
    mismatches = compare(name, load(name)["quantities"], actual)
    if mismatches:
        raise AssertionError(report(name, mismatches))


def same_bits(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> bool:
    """Whether two summaries are identical to the bit (NaNs equal): the determinism check of a case."""
    return a.keys() == b.keys() and all(
        a[q].values.shape == b[q].values.shape
        and np.array_equal(a[q].values, b[q].values, equal_nan=True)
        and a[q].scale == b[q].scale
        for q in a
    )
