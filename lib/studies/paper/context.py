r"""``b-context``: paper B's context claim on its sparse linear map, at its settings: the plateau against the state size.

Paper B finds that the loss plateau grows with the context length (B-context). Chapter 6 checks it at FAST scale on the
cellular automaton; this study measures it on paper B's linear map at paper B's width and budget: state sizes :math:`S =
8, 16, 32, 64` at :math:`s = 3` (the sequence is :math:`2S` tokens), one layer, ``d_model`` 128 (8 heads of 16), MLP
512, 8,192 tokens per step, lr :math:`10^{-3}`, PyTorch's initialisation (:meth:`lib.SparsityStudyConfig.paper`),
float32, three fresh seeds (:data:`CONTEXT_SEEDS`), each run until it leaves the plateau (its held-out output-bit loss
first below :data:`lib.LINEAR_MAP_EXIT`) or for at most 10,000 steps. The control repeats every run with the attention
bias :math:`c = 3` toward the true pattern, which removes the search (paper B: about 160-200 steps at every :math:`S`).
Every run is evaluated every 10 steps (on 16,384 held-out tokens), so that short plateaus (about 100 steps at :math:`S =
8` in a reproduction of paper B) are measured, not set by the grid.

The measure is chapter 6's: the growth of the median plateau per doubling of :math:`S`,
:math:`(m_\text{last} / m_\text{first})^{1/\log_2(S_\text{last}/S_\text{first})}`, 0 unless the median rises at every
doubling (:func:`lib.growth_per_doubling`), with the bootstrap over seeds. A run that never leaves counts at the budget,
a lower bound on its plateau; the sizes taken run from the smallest to the first whose median run never leaves (beyond
it every median is the budget too, and equal medians would read as "not monotone", a property of the budget, not of
the runs), so a censored size can only make the growth smaller. These choices were fixed before any unit ran.
One unit per :math:`(S, \text{seed})` without the bias, then the same with it; the cheapest sizes first.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...core.intervals import group_bootstrap_interval
from ...measures.comparisons import LINEAR_MAP_EXIT
from ...train.fast_train import FastRunConfig
from ...train.gpt_train import Member
from .._paper_scale import PaperStudy
from .._study import unit
from ..context_study import growth_per_doubling
from ..sparsity_study import SparsityStudyConfig, _task
from .heads import _exit_or_never

__all__ = ["CONTEXT_SIZES", "CONTEXT_SEEDS", "CONTEXT_BIAS", "b_context", "context_summary", "context_measures"]

#: State sizes (the context is ``2 S`` tokens) and the sparsity at which they are run.
CONTEXT_SIZES = (8, 16, 32, 64)
CONTEXT_S = 3
#: Fresh seeds (used by no other study); a seed offset ``k`` moves them by ``k``.
CONTEXT_SEEDS = (70, 71, 72)
#: The control's attention bias toward the true pattern, and how often every run is evaluated (steps).
CONTEXT_BIAS = 3.0
CONTEXT_EVAL = 10
#: The budget of a run (steps): a run that never leaves counts here.
CONTEXT_BUDGET = 10_000


def _keys(seed_offset: int = 0) -> list[tuple[float, int, int]]:
    """``(bias, S, seed)`` of every unit, in the order they are run: unbiased, then biased; ``S`` ascending."""
    seeds = [k + seed_offset for k in CONTEXT_SEEDS]
    return [(c, S, k) for c in (0.0, CONTEXT_BIAS) for S in CONTEXT_SIZES for k in seeds]


def _unit(S: int, seed: int, bias: float):
    """One run of paper B's linear map at state size ``S``, ``s = 3``, until it leaves the plateau."""
    config = SparsityStudyConfig.paper()
    stack = config.run(16)  # paper B's width, batch and optimiser; the task is replaced below
    task = _task(S, CONTEXT_S, config.map_seed)
    member = Member(task, seed=seed, bias=bias) if bias else Member(task, seed=seed)
    stack = replace(stack, members=(member,), stop_below=LINEAR_MAP_EXIT, steps=CONTEXT_BUDGET, eval_every=CONTEXT_EVAL)
    return unit("lib.studies._units:fast_curves", FastRunConfig(stack, "fp32"))


def context_summary(values, seed_offset: int = 0) -> dict:
    """Per unit (the study's order; ``None``: not done) -> the published summary of ``b-context``: per state size
    (a string key) the exit step of every seed without (``exits``) and with the bias (``biased_exits``), ``"never"``
    for a run that did not leave within the budget, ``None`` where not done."""
    keys = _keys(seed_offset)
    if len(values) != len(keys):
        raise ValueError(f"need {len(keys)} unit values, got {len(values)}")
    by = dict(zip(keys, values))
    seeds = [k + seed_offset for k in CONTEXT_SEEDS]
    return {
        "seeds": seeds,
        "s": CONTEXT_S,
        "bias": CONTEXT_BIAS,
        "budget": CONTEXT_BUDGET,
        "sizes": {
            str(S): {
                "exits": [_exit_or_never(by[0.0, S, k]) for k in seeds],
                "biased_exits": [_exit_or_never(by[CONTEXT_BIAS, S, k]) for k in seeds],
            }
            for S in CONTEXT_SIZES
        },
    }


def _plateaus(summary: dict, field: str) -> np.ndarray:
    """``(n_S, seeds)`` exit steps of ``field``, a run that never left at the budget (a lower bound)."""
    budget = float(summary["budget"])
    return np.array(
        [[budget if e == "never" else float(e) for e in summary["sizes"][str(S)][field]] for S in CONTEXT_SIZES]
    )


def context_measures(summary: dict) -> dict:
    """What ``b-context`` measures of B-context (module docstring): the growth of the median plateau per doubling of
    S over the sizes up to the first whose median run never leaves, its bootstrap over seeds, and the same growth
    with the bias as the control. ``{}`` until every unbiased run is done (the sizes taken depend on all of them);
    the record is *incomplete* while biased runs are missing."""
    sizes = summary["sizes"]
    if any(e is None for S in CONTEXT_SIZES for e in sizes[str(S)]["exits"]):
        return {}
    plateaus = _plateaus(summary, "exits")
    medians = np.median(plateaus, axis=1)
    censored = np.flatnonzero(medians >= summary["budget"])
    n = len(CONTEXT_SIZES) if censored.size == 0 else int(censored[0]) + 1
    S = np.array(CONTEXT_SIZES[:n], dtype=float)
    value = growth_per_doubling(plateaus[:n], S)
    interval = group_bootstrap_interval(lambda i: growth_per_doubling(plateaus[:n], S, i), plateaus.shape[1])
    biased_done = all(e is not None for s in CONTEXT_SIZES for e in sizes[str(s)]["biased_exits"])
    control = growth_per_doubling(_plateaus(summary, "biased_exits")[:n], S) if biased_done else None
    shown = ", ".join(f"S={int(s)}: {m:,.0f}" for s, m in zip(CONTEXT_SIZES, medians))
    return {
        "B-context": {
            "chapter": "06_sparse_patterns",
            "value": value,
            "interval": interval,
            "control": control,
            "text": (
                f"linear map (s = {summary['s']}), median steps to leave the plateau ({shown}; the budget "
                f"{summary['budget']:,} where the median run never leaves): ×{value:.2f} per doubling of S from "
                f"{int(S[0])} to {int(S[-1])}"
                + (f"; with the bias c = {summary['bias']:g}: ×{control:.2f}" if control is not None else "")
            ),
            "incomplete": [] if biased_done else ["biased runs (the control) not done yet"],
        }
    }


def b_context(seed_offset: int = 0) -> PaperStudy:
    """B-context on paper B's linear map at its settings (module docstring): 24 units, the seeds moved by
    ``seed_offset``."""
    return PaperStudy(
        f"b-context@{seed_offset}" if seed_offset else "b-context",
        ("B-context",),
        "paper B's linear map at S = 8, 16, 32, 64 (s = 3; d_model 128, 8 heads, MLP 512, 8,192 tokens per step, "
        "lr 1e-3), 3 seeds, each until it leaves the plateau (at most 10,000 steps), without and (control) with the "
        f"attention bias c = 3 toward the true pattern, evaluated every {CONTEXT_EVAL} steps, float32",
        tuple(_unit(S, k, c) for c, S, k in _keys(seed_offset)),
        "lib.studies.paper.context:context_summary",
        "lib.studies.paper.context:context_measures",
        seed_offset,
    )
