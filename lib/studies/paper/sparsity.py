r"""``b-sparsity``: paper B's sparsity sweep (its Fig. 4, left) at state sizes :math:`S = 16` and :math:`32`.

Every :math:`s = 1, \dots, S`, three seeds, 10,000 steps of 8,192 tokens, ``d_model`` 128, 8 heads, MLP 512, lr
:math:`10^{-3}`, PyTorch's default initialisation (:meth:`lib.SparsityStudyConfig.paper`; the paper's :math:`S = 8`
is left out: it learns every :math:`s`, and the claim is about 16 and 32): one unit per :math:`(S, s, \text{seed})`,
trained by the float32 fast trainer (:func:`lib.train.fast_train.run_fast`, equal to the reference trainer to
float32 rounding). The units the claim needs come first (:math:`s = S/2, 1, S-1` at :math:`S = 16`, then at 32), so a
study done in part measures the claim before it draws the whole curves.

Next come the fewest units that decide paper B's two other statements (:data:`DECIDING`, chosen before any of them ran,
from paper B's Fig. 4 as read in the reference notes): at :math:`S = 16`, where the peak lies, :math:`s = 4` and
:math:`s = 12`, the sparsities where paper B's curve has fallen half way from its peak (0.50 against 0.67 at
:math:`s = 8` and 0.34-0.36 at the ends), so that two sides lower than the middle and higher than the ends place the
peak in the middle; at :math:`S = 32`, "only the extremes are learned", the boundary on each side: :math:`s = 2`
(learned in paper B) against :math:`s = 3` and :math:`s = 30` (not learned, 0.60-0.69), beside :math:`s = 1, 16, 31`
of the gap. Three seeds each: 15 units; ``python -m lib.studies run b-sparsity --limit 33`` runs the gap's and these.
The other 111 units (the whole curves) follow and are not needed by any claim.

Our choice, beyond the paper: a unit stops once its held-out loss on the predicting positions is below
:data:`lib.SOLVED` (a tenth of :math:`\ln 2`). Its final loss is then a little above what 10,000 steps would give, so
the gap can only come out *smaller* than with the paper's measure: the stop works against the claim, never for it.
The summary is what chapter 6's B-sparsity reads at FAST scale: per state size and seed, the final held-out loss at
:math:`s = S/2` minus the worse of :math:`s = 1` and :math:`s = S - 1`
(:meth:`lib.studies.sparsity_study.SparsityStudy.gap`), and the same gap at step 0 as the control.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...core.stats import bootstrap_interval
from ...measures.comparisons import SOLVED
from ...train.fast_train import FastRunConfig
from .._paper_scale import PaperStudy
from .._study import unit
from ..sparsity_study import SparsityStudyConfig


SPARSITY_SIZES = (16, 32)


def _gap_sparsities(S: int) -> tuple[int, int, int]:
    return S // 2, 1, S - 1


#: The (S, s) run right after the gap's (module docstring): where the peak lies at S = 16, the learned extremes'
#: boundary at S = 32.
DECIDING = ((16, 4), (16, 12), (32, 2), (32, 3), (32, 30))


def _sparsity_keys(config: SparsityStudyConfig) -> list[tuple[int, int, int]]:
    """``(S, s, seed)`` of every unit, in the order they are run: the gap's three sparsities at each S first, then
    :data:`DECIDING`, then the rest of the curves."""
    grid = dict(config.grid)
    first = [(S, s) for S in SPARSITY_SIZES for s in _gap_sparsities(S)] + list(DECIDING)
    rest = [(S, s) for S in SPARSITY_SIZES for s in grid[S] if (S, s) not in first]
    return [(S, s, k) for S, s in first + rest for k in config.seeds]


def _sparsity_units(config: SparsityStudyConfig):
    member = {}
    stacks = {S: config.run(S) for S in SPARSITY_SIZES}
    for S, stack in stacks.items():  # members ordered (s, seed)
        member.update(zip([(S, s, k) for s in dict(config.grid)[S] for k in config.seeds], stack.members))
    return tuple(
        unit(
            "lib.studies._units:fast_curves",
            FastRunConfig(replace(stacks[S], members=(member[S, s, k],), stop_below=SOLVED), "fp32"),
        )
        for S, s, k in _sparsity_keys(config)
    )


def sparsity_summary(values, seed_offset: int = 0) -> dict:
    """Per unit (in the study's order; ``None``: not done) -> the published summary of ``b-sparsity``: per state
    size ``S`` (a string key), ``final[s]``, ``initial[s]``, ``steps_run[s]`` (per seed, ``None`` where not done),
    and ``gap``, ``control_gap`` per seed where the three sparsities it needs are done (module docstring)."""
    config = SparsityStudyConfig.paper(seed_offset)
    keys = _sparsity_keys(config)
    if len(values) != len(keys):
        raise ValueError(f"need {len(keys)} unit values, got {len(values)}")
    by = dict(zip(keys, values))
    out = {"seeds": list(config.seeds), "sizes": {}}
    for S in SPARSITY_SIZES:
        size = {"final": {}, "initial": {}, "steps_run": {}}
        for s in dict(config.grid)[S]:
            runs = [by[S, s, k] for k in config.seeds]
            size["final"][str(s)] = [None if v is None else v["loss"][-1][0] for v in runs]
            size["initial"][str(s)] = [None if v is None else v["loss"][0][0] for v in runs]
            size["steps_run"][str(s)] = [None if v is None else v["steps_run"] for v in runs]
        for field, name in (("final", "gap"), ("initial", "control_gap")):
            gaps = []
            for j, _ in enumerate(config.seeds):
                mid, low, high = (size[field][str(s)][j] for s in _gap_sparsities(S))
                if None not in (low, mid, high):
                    gaps.append(float(mid - max(low, high)))
            size[name] = gaps
        out["sizes"][str(S)] = size
    return out


def sparsity_measures(summary: dict) -> dict:
    """What ``b-sparsity`` measures of B-sparsity, as its FAST check does: the per-seed gaps at the state size whose
    90 % bootstrap interval reaches lower, the median step-0 gap at its most favourable as the control. A state size
    with fewer than two seeds done is not measured, and the claim's record says so (``incomplete``); ``{}`` while
    none is."""
    sizes = {S: v for S, v in summary["sizes"].items() if len(v["gap"]) >= 2}
    if not sizes:
        return {}
    weakest = min(sizes, key=lambda S: bootstrap_interval(sizes[S]["gap"]).lo)
    missing = [S for S in summary["sizes"] if S not in sizes]
    seeds = len(summary["seeds"])
    return {
        "B-sparsity": {
            "samples": sizes[weakest]["gap"],
            "control": max(float(np.median(v["control_gap"])) for v in sizes.values()),
            "text": "; ".join(
                f"S={S}: median gap {np.median(v['gap']):.3f} over {len(v['gap'])} of {seeds} seeds "
                f"(control at step 0: {np.median(v['control_gap']):.3f})"
                for S, v in sizes.items()
            ),
            "incomplete": (
                [f"S = {', '.join(missing)} not measured yet (the criterion takes the weaker state size)"]
                if missing
                else []
            ),
        }
    }


def b_sparsity(seed_offset: int = 0) -> PaperStudy:
    """Paper B's sparsity sweep at S = 16 and 32 (module docstring): 144 units, the seeds moved by ``seed_offset``."""
    return PaperStudy(
        f"b-sparsity@{seed_offset}" if seed_offset else "b-sparsity",
        ("B-sparsity",),
        "paper B's settings at S = 16 and 32 (every s, 3 seeds, 10,000 steps of 8,192 tokens, d_model "
        "128, 8 heads, MLP 512, lr 1e-3), float32; a unit stops once solved",
        _sparsity_units(SparsityStudyConfig.paper(seed_offset)),
        "lib.studies.paper.sparsity:sparsity_summary",
        "lib.studies.paper.sparsity:sparsity_measures",
        seed_offset,
    )
