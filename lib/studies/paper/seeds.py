r"""``bf16-calibration`` and ``b-random``: the bfloat16 trainer's calibration, and the exit steps' spread over seeds.

``bf16-calibration``: whether the bfloat16 trainer may stand in for the float32 one at paper scale (it is 1.6-1.9x
faster per step on CPUs with bfloat16 dot products, ``benchmarks/trainer_paper_scale.py``). It trains paper B's linear
map (S = 16, s = 3) from 16 fresh seeds (30 to 45) in both precisions, each pair from the same initial weights and
batches, each run until it leaves the plateau, and compares the steps to leave it (first held-out output-bit loss
below :data:`lib.LINEAR_MAP_EXIT`). The rule, fixed before any unit ran: bfloat16 stands in for float32 when the 90 %
bootstrap interval (over seeds) of the median paired ratio of exit steps, bfloat16 over float32, lies wholly within
[2/3, 3/2]; an interval reaching outside says "not shown", never "biased", unless it lies wholly outside. A run that
never leaves within 10,000 steps counts at the budget.

``b-random``: chapter 6's B-random at the paper's settings: the exit step of the same linear map from the 16
calibration seeds, float32, each run until it leaves (at most 10,000 steps), and the control, the same seeds with the
attention bias c = 3 toward the true pattern. Its unbiased units are ``bf16-calibration``'s float32 units (the same
configs, so the same keys: computed once). The measure is chapter 6's: the latest over the earliest exit among the
seeds that leave.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...core.stats import bootstrap_interval
from ...measures.comparisons import LINEAR_MAP_EXIT
from ...train.fast_train import FastRunConfig
from ...train.gpt_train import Member
from .._paper_scale import PaperStudy
from .._study import unit
from .heads import _exit_or_never
from ..sparsity_study import SparsityStudyConfig


#: Fresh seeds of ``bf16-calibration`` and ``b-random`` (used by no other study).
CALIBRATION_SEEDS = tuple(range(30, 46))
#: Its rule: the interval of the median paired exit ratio (bfloat16 / float32) must lie within these bounds.
CALIBRATION_BOUNDS = (2 / 3, 3 / 2)
_PRECISIONS = ("fp32", "bf16")


def _linear_map_unit(seed: int, precision: str, bias: float = 0.0, eval_every: int | None = None):
    """One run of paper B's linear map at S = 16, s = 3 (:meth:`lib.SparsityStudyConfig.paper`) from ``seed`` until
    it leaves the plateau, with the attention bias ``bias`` toward the true pattern, evaluated every ``eval_every``
    steps (default: the study's) (``bf16-calibration`` and ``b-random`` share these units: the same config is the
    same unit)."""
    stack = SparsityStudyConfig.paper().run(16)
    task = next(m.task for m in stack.members if m.task.s == 3)
    member = Member(task, seed=seed, bias=bias) if bias else Member(task, seed=seed)
    stack = replace(stack, members=(member,), stop_below=LINEAR_MAP_EXIT)
    if eval_every is not None:
        stack = replace(stack, eval_every=eval_every)
    return unit("lib.studies._units:fast_curves", FastRunConfig(stack, precision))


def _calibration_units():
    return tuple(_linear_map_unit(k, precision) for k in CALIBRATION_SEEDS for precision in _PRECISIONS)


def calibration_summary(values) -> dict:
    """Per unit (seed-major, float32 then bfloat16; ``None``: not done) -> the published summary of
    ``bf16-calibration``: exit steps per precision (``null`` where not done; the budget where never left), the
    paired ratios of the seeds done in both, the 90 % bootstrap interval of their median and the verdict of the rule
    (module docstring): ``"stands in"``, ``"biased"`` (wholly outside the bounds) or ``"not shown"``."""
    if len(values) != 2 * len(CALIBRATION_SEEDS):
        raise ValueError(f"need {2 * len(CALIBRATION_SEEDS)} unit values, got {len(values)}")

    def exit_step(v):  # a run that never leaves counts at its budget
        e = _exit_or_never(v)
        return None if e is None else float(v["steps"][-1]) if e == "never" else float(e)

    exits = {
        p: [exit_step(values[2 * i + j]) for i in range(len(CALIBRATION_SEEDS))] for j, p in enumerate(_PRECISIONS)
    }
    ratios = [b / a for a, b in zip(exits["fp32"], exits["bf16"]) if a is not None and b is not None]
    out = {
        "seeds": list(CALIBRATION_SEEDS),
        "exits": exits,
        "ratios": ratios,
        "bounds": list(CALIBRATION_BOUNDS),
        "interval": None,
        "verdict": "not shown",
    }
    if len(ratios) >= 2:
        iv = bootstrap_interval(ratios)
        lo, hi = CALIBRATION_BOUNDS
        out["interval"] = [iv.value, iv.lo, iv.hi]
        out["verdict"] = (
            "stands in" if lo <= iv.lo and iv.hi <= hi else "biased" if iv.hi < lo or iv.lo > hi else "not shown"
        )
    return out


def bf16_calibration() -> PaperStudy:
    """bfloat16 against float32 at paper B's linear map (module docstring): 32 units, no claim."""
    return PaperStudy(
        "bf16-calibration",
        (),
        "paper B's linear map (S = 16, s = 3, d_model 128, 8 heads, MLP 512, "
        "8,192 tokens per step, lr 1e-3), 16 fresh seeds in float32 and bfloat16, each until it leaves the plateau",
        _calibration_units(),
        "lib.studies.paper.seeds:calibration_summary",
    )


#: The attention bias of ``b-random``'s control (chapter 6's: c = 3 toward the true pattern).
RANDOM_BIAS = 3.0
#: How often the control's biased runs are evaluated: they leave the plateau within about 100 steps, so at the
#: study's 100 every one of them sat on the first evaluation and their spread measured the grid (claims-review-2 §4).
RANDOM_BIASED_EVAL = 10


def random_summary(values, seed_offset: int = 0) -> dict:
    """Per unit (the unbiased runs of every seed, then the biased ones; ``None``: not done) -> the published summary
    of ``b-random``: per seed the exit step (``"never"``: not within 10,000 steps) without and with the bias, and
    the evaluation interval (an exit is known to within it)."""
    n = len(CALIBRATION_SEEDS)
    if len(values) != 2 * n:
        raise ValueError(f"need {2 * n} unit values, got {len(values)}")
    every = SparsityStudyConfig.paper().run(16).eval_every
    return {
        "seeds": [k + seed_offset for k in CALIBRATION_SEEDS],
        "bias": RANDOM_BIAS,
        "eval_every": every,
        "biased_eval_every": RANDOM_BIASED_EVAL,
        "exits": [_exit_or_never(v) for v in values[:n]],
        "biased_exits": [_exit_or_never(v) for v in values[n:]],
    }


def random_measures(summary: dict) -> dict:
    """What ``b-random`` measures of B-random, as chapter 6's check does: the latest over the earliest exit among the
    seeds that leave (:func:`lib.spread`; never-leaving seeds left out, a lower bound), with the bootstrap over seeds
    (a resample with fewer than two exits counts as 1), and the same spread with the bias as the control. ``{}``
    while fewer than two unbiased runs are done."""
    from ...core.stats import group_bootstrap_interval
    from ...measures.curves import spread

    def times(exits):
        return np.array([np.inf if e == "never" else float(e) for e in exits if e is not None])

    t, tb = times(summary["exits"]), times(summary["biased_exits"])
    if t.size < 2:
        return {}
    n = len(summary["seeds"])
    missing = [f"{n - t.size} of {n} unbiased runs not done yet"] if t.size < n else []
    missing += [f"{n - tb.size} of {n} biased runs (the control) not done yet"] if tb.size < n else []
    interval = group_bootstrap_interval(lambda i: float(np.nan_to_num(spread(t[i]), nan=1.0)), t.size)
    left = int(np.isfinite(t).sum())
    return {
        "B-random": {
            "chapter": "06_sparse_patterns",
            "value": float(spread(t)),
            "interval": interval,
            "control": float(spread(tb)) if np.isfinite(tb).sum() >= 2 else None,
            "text": (
                f"with the bias c = {summary['bias']:g} (the control): "
                + (f"{spread(tb):.1f}" if np.isfinite(tb).sum() >= 2 else "not measured")
                + f"; without it, {left} of {t.size} seeds left the plateau within 10,000 steps (exits "
                f"{int(np.min(t))}-{int(np.max(t[np.isfinite(t)]))}): latest / earliest exit = {spread(t):.1f}"
            ),
            "incomplete": missing,
        }
    }


def b_random(seed_offset: int = 0) -> PaperStudy:
    """Seed-to-seed spread of the exit on paper B's linear map, and its control with the bias (module docstring):
    32 units, the unbiased ones those of ``bf16-calibration`` in float32 (at ``seed_offset`` 0; other offsets move
    every seed)."""
    seeds = [k + seed_offset for k in CALIBRATION_SEEDS]
    units = tuple(_linear_map_unit(k, "fp32") for k in seeds)
    control = tuple(_linear_map_unit(k, "fp32", RANDOM_BIAS, RANDOM_BIASED_EVAL) for k in seeds)
    return PaperStudy(
        f"b-random@{seed_offset}" if seed_offset else "b-random",
        ("B-random",),
        "paper B's linear map (S = 16, s = 3, d_model 128, 8 heads, MLP 512, 8,192 tokens per step, lr "
        "1e-3), 16 seeds until each leaves the plateau (at most 10,000 steps), without and (control) "
        f"with the attention bias c = 3 toward the true pattern (evaluated every {RANDOM_BIASED_EVAL} "
        "steps), float32",
        units + control,
        "lib.studies.paper.seeds:random_summary",
        "lib.studies.paper.seeds:random_measures",
        seed_offset,
    )
