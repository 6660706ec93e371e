r"""The registered paper-scale studies (:mod:`lib.paper_scale`): their units, their summaries, and what each summary
measures of the registry's claims (:func:`paper_records`, the ledger's *paper scale* column).

``b-sparsity``: paper B's sparsity sweep (its Fig. 4, left) at state sizes :math:`S = 16` and :math:`32`, every
:math:`s = 1, \dots, S`, three seeds, 10,000 steps of 8,192 tokens, ``d_model`` 128, 8 heads, MLP 512, lr
:math:`10^{-3}`, PyTorch's default initialisation (:meth:`lib.SparsityStudyConfig.paper`; the paper's :math:`S = 8`
is left out: it learns every :math:`s`, and the claim is about 16 and 32): one unit per :math:`(S, s, \text{seed})`,
trained by the float32 fast trainer (:func:`lib.train.fast_train.run_fast`, equal to the reference trainer to
float32 rounding; bfloat16 is not used until its plateau lengths are calibrated against float32). The units the
claim needs come first (:math:`s = S/2, 1, S-1` at :math:`S = 16`, then at 32), so a study done in part measures
the claim before it draws the whole curves.

Our choice, beyond the paper: a unit stops once its held-out loss on the predicting positions is below
:data:`lib.SOLVED` (a tenth of :math:`\ln 2`): a solved run spends no more CPU on a loss that can only go down. Its
final loss is then a little above what 10,000 steps would give, so the gap below can only come out *smaller* than
with the paper's measure (the ends are the solved ones): the stop works against the claim, never for it.

``bf16-calibration``: whether the bfloat16 trainer may stand in for the float32 one at paper scale (it is 1.6-1.9×
faster per step on CPUs with bfloat16 dot products, ``benchmarks/trainer_paper_scale.py``). Rounding every weight
product to 8 significant bits could change what the study measures: on a plateau the gradients that lead to the
sparse pattern are small. The calibration trains paper B's linear map (S = 16, s = 3, the settings above) from 16
fresh seeds (30 to 45) in both precisions, each pair from the same initial weights and batches, each run until it
leaves the plateau (the rule needs nothing after; a first version ran each until solved, and its first unit, bfloat16
seed 30, left at step 1,200 but was not solved at step 10,000: 913 CPU-s for a number known after 1,200 steps), and
compares the steps to leave the plateau (first held-out output-bit loss below :data:`lib.LINEAR_MAP_EXIT`). The rule,
fixed before any unit ran: bfloat16 stands in for float32 when the 90 % bootstrap interval (over seeds) of the median
paired ratio of exit steps, bfloat16 over float32, lies wholly within [2/3, 3/2] (at most a 1.5× bias either way,
against the threefold spread of exits across seeds); an interval reaching outside says "not shown", never "biased",
unless it lies wholly outside. A run that never leaves within 10,000 steps counts at the budget.

``b-heads-one``: the single head of paper B's heads × head-size grid on the linear map, at the paper's settings
(:meth:`lib.WidthStudyConfig.paper`: S = 16, s = 3, 10,000 steps of 8,192 tokens, lr :math:`10^{-3}`, PyTorch's
initialisation, head sizes 4, 8 and 16, three seeds): every run with :math:`H = 1`, and the control, every run with
the most heads of the grid (:math:`H = 32`), one unit per (H, head size, seed), float32. The measure is chapter 6's:
how many runs leave the plateau (held-out output-bit loss below :data:`lib.LINEAR_MAP_EXIT`); a unit stops as soon as
it has (our choice: the count needs nothing after), so only the runs that never leave cost their 10,000 steps. The
single head's units come first; the control's widest cell (:math:`d_\text{model} = 512`) costs the most.

``b-random``: chapter 6's B-random at the paper's settings: the exit step (first held-out output-bit loss below
:data:`lib.LINEAR_MAP_EXIT`) of paper B's linear map (S = 16, s = 3) from the 16 calibration seeds, float32, each run
until it leaves (at most 10,000 steps), and the control, the same seeds with the attention bias c = 3 toward the true
pattern. Its unbiased units are ``bf16-calibration``'s float32 units (the same configs, so the same keys: computed
once). The measure is chapter 6's: the latest over the earliest exit among the seeds that leave.

``b-mixer-tuning`` and ``b-mixer``: chapter 7's B-mixer at the paper's scale (:meth:`lib.MixerComparisonConfig.paper`:
the linear map at S = 16, s = 3, 5, 7, width 128 as 8 heads of 16, MLP 512, 8,192 tokens per step), transformer
against MLP-Mixer, in chapter 7's two stages. The tuning applies chapter 7's rule
(:func:`lib.studies.mixer_tuning.mixer_tuning`) to these two architectures: every rate of the paper-scale grid
(3e-4, 1e-3, 3e-3, 1e-2) at every sparsity, 3,000 steps from the tuning seed, scored by the mean held-out output-bit
loss over the budget averaged over the sparsities; the lowest score chooses the rate. The comparison then trains both
on the three evaluation seeds for 10,000 steps at the chosen rates (its units exist only once the tuning is complete
and committed: :data:`STAGED`) and measures chapter 7's ratio of seed-averaged curves with its control. One unit per
(architecture, sparsity, rate) and per (sparsity, architecture, seed), each a single member on the reference trainer
(:mod:`lib.paper_units_reference`; the fast trainer carries attention only, and both architectures train the same
way), float32 (the bfloat16 calibration covers the transformer's exits, not the MLP-Mixer's curves). A unit stops
once its held-out loss is solved and repeats its last evaluation to the budget, exactly as a frozen member of
chapter 7's stacks does, so the scores and curves are those of the stacks (a member's own data and initialisation
do not depend on the others').

Both start from PyTorch's default initialisation (:data:`lib.studies.paper_defaults.LINEAR_MAP_INIT`), as every
linear-map study at paper scale does since the plateau calibration (chapter 6) found that the initialisation's scale
decides whether the transformer leaves the plateau at this configuration. ``b-mixer-tuning-gpt2`` and
``b-mixer-gpt2`` are the same two stages from the trainer's default initialisation (``"gpt2"``: normal, σ = 0.02),
the first version, run before that mismatch was noticed; they measure no claim and are shown as the contrast (the
comparison stopped at 10 of 18 units when it was superseded).

The summary of ``b-sparsity`` is what chapter 6's B-sparsity reads at FAST scale: per state size and seed, the final held-out loss at
:math:`s = S/2` minus the worse of :math:`s = 1` and :math:`s = S - 1`
(:meth:`lib.studies.sparsity_study.SparsityStudy.gap`), and the same gap at step 0 as the control.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable

import numpy as np

from .cache import DATA_DIR, Cache
from .measures import LINEAR_MAP_EXIT, SOLVED
from .paper_scale import PaperStudy, publish, published
from .stats import bootstrap_interval
from .study_unit import resolve, unit, unit_key
from .studies.sparsity_study import SparsityStudyConfig
from .studies.mixer_comparison import MixerComparisonConfig
from .studies.mixer_tuning import mean_loss_over_budget
from .studies.paper_defaults import LINEAR_MAP_INIT
from .studies.width_study import WidthStudyConfig
from .train.fast_train import FastRunConfig
from .train.gpt_train import Member

__all__ = ["STUDIES", "SPARSITY_SIZES", "sparsity_summary", "sparsity_measures", "b_sparsity", "CALIBRATION_SEEDS",
           "calibration_summary", "calibration_costs", "bf16_calibration", "heads_one_summary", "heads_one_measures", "b_heads_one",
           "RANDOM_BIAS", "random_summary", "random_measures", "b_random", "MIXER_ARCHS", "mixer_tuning_summary",
           "b_mixer_tuning", "mixer_rates", "mixer_summary", "mixer_measures", "b_mixer", "STAGED", "make_study",
           "paper_records", "study_record", "paper_claim", "study_progress"]

#: The state sizes of ``b-sparsity`` (the claim's two).
SPARSITY_SIZES = (16, 32)


def _gap_sparsities(S: int) -> tuple[int, int, int]:
    return S // 2, 1, S - 1


def _sparsity_keys(config: SparsityStudyConfig) -> list[tuple[int, int, int]]:
    """``(S, s, seed)`` of every unit, in the order they are run: the gap's three sparsities at each S first."""
    grid = dict(config.grid)
    first = [(S, s) for S in SPARSITY_SIZES for s in _gap_sparsities(S)]
    rest = [(S, s) for S in SPARSITY_SIZES for s in grid[S] if s not in _gap_sparsities(S)]
    return [(S, s, k) for S, s in first + rest for k in config.seeds]


def _sparsity_units(config: SparsityStudyConfig):
    member = {}
    stacks = {S: config.run(S) for S in SPARSITY_SIZES}
    for S, stack in stacks.items():  # members ordered (s, seed)
        member.update(zip([(S, s, k) for s in dict(config.grid)[S] for k in config.seeds], stack.members))
    return tuple(unit("lib.paper_units:fast_curves",
                      FastRunConfig(replace(stacks[S], members=(member[S, s, k],), stop_below=SOLVED), "fp32"))
                 for S, s, k in _sparsity_keys(config))  # fmt: skip


def sparsity_summary(values) -> dict:
    """Per unit (in the study's order; ``None``: not done) -> the published summary of ``b-sparsity``: per state
    size ``S`` (a string key), ``final[s]``, ``initial[s]``, ``steps_run[s]`` (per seed, ``None`` where not done),
    and ``gap``, ``control_gap`` per seed where the three sparsities it needs are done (module docstring)."""
    config = SparsityStudyConfig.paper()
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
    return {"B-sparsity": {
        "samples": sizes[weakest]["gap"],
        "control": max(float(np.median(v["control_gap"])) for v in sizes.values()),
        "text": "; ".join(f"S={S}: median gap {np.median(v['gap']):.3f} over {len(v['gap'])} of {seeds} seeds "
                          f"(control at step 0: {np.median(v['control_gap']):.3f})" for S, v in sizes.items()),
        "incomplete": ([f"S = {', '.join(missing)} not measured yet (the criterion takes the weaker state size)"]
                       if missing else []),
    }}  # fmt: skip


def b_sparsity() -> PaperStudy:
    """Paper B's sparsity sweep at S = 16 and 32 (module docstring): 144 units."""
    return PaperStudy("b-sparsity", ("B-sparsity",),
                      "paper B's settings at S = 16 and 32 (every s, 3 seeds, 10,000 steps of 8,192 tokens, d_model "
                      "128, 8 heads, MLP 512, lr 1e-3), float32; a unit stops once solved",
                      _sparsity_units(SparsityStudyConfig.paper()), "lib.paper_studies:sparsity_summary",
                      "lib.paper_studies:sparsity_measures")  # fmt: skip


def _exit_or_never(v):
    """The exit step of a unit's value (first evaluation with output-bit loss below the exit threshold), ``"never"``
    when it did not leave within its budget, ``None`` when not done."""
    if v is None:
        return None
    below = [s for s, loss in zip(v["steps"], v["pred_loss"]) if loss[0] < LINEAR_MAP_EXIT]
    return below[0] if below else "never"


def _heads_one_keys() -> list[tuple[int, int, int]]:
    """``(H, d_head, seed)`` of every ``b-heads-one`` unit, in the order they are run: one head first."""
    config = WidthStudyConfig.paper()
    return [(H, dh, k) for H in (config.heads[0], config.heads[-1]) for dh in config.d_heads for k in config.seeds]


def _grid_units(keys, stop_below: float):
    """One float32 unit per ``(H, d_head, seed)`` of ``keys``: that seed's member of the paper-scale grid's stack
    (:meth:`lib.WidthStudyConfig.runs`), trained alone until its output-bit loss is below ``stop_below``."""
    runs = WidthStudyConfig.paper().runs()
    out = []
    for H, dh, k in keys:
        grid = runs["grid", H, dh]
        member = next(m for m in grid.members if m.seed == k)
        out.append(unit("lib.paper_units:fast_curves",
                        FastRunConfig(replace(grid, members=(member,), stop_below=stop_below), "fp32")))
    return tuple(out)


def _heads_one_units():
    return _grid_units(_heads_one_keys(), LINEAR_MAP_EXIT)


def heads_one_summary(values) -> dict:
    """Per unit (in the study's order; ``None``: not done) -> the published summary of ``b-heads-one``: per
    ``"H,d_head"`` cell the exit step of each seed (``null``: not done; ``"never"``: still on the plateau after the
    budget), and per H the runs that left and the runs done."""
    keys = _heads_one_keys()
    if len(values) != len(keys):
        raise ValueError(f"need {len(keys)} unit values, got {len(values)}")
    exits = [_exit_or_never(v) for v in values]
    cells: dict[str, list] = {}
    per_h: dict[str, dict] = {}
    for (H, dh, _), e in zip(keys, exits):
        cells.setdefault(f"{H},{dh}", []).append(e)
        got = per_h.setdefault(str(H), {"left": 0, "done": 0, "of": 0})
        got["of"] += 1
        got["done"] += e is not None
        got["left"] += isinstance(e, int)
    return {"cells": cells, "heads": per_h}


def heads_one_measures(summary: dict) -> dict:
    """What ``b-heads-one`` measures of B-heads-one: the runs with one head that leave the plateau, and the same count
    at the most heads as the control; runs not done yet are listed as missing (``{}`` while no single-head run is)."""
    (one, one_got), (most, most_got) = sorted(summary["heads"].items(), key=lambda kv: int(kv[0]))
    if one_got["done"] == 0:
        return {}
    missing = [f"{g['of'] - g['done']} of {g['of']} runs with H = {H} not done yet"
               for H, g in ((one, one_got), (most, most_got)) if g["done"] < g["of"]]  # fmt: skip
    return {"B-heads-one": {
        "value": one_got["left"],
        "control": most_got["left"] if most_got["done"] else None,
        "text": (f"runs with H={one} that leave the plateau: {one_got['left']} of {one_got['done']} done; with H={most}: "
                 f"{most_got['left']} of {most_got['done']} done (d_head 4, 8, 16; d_model = H × d_head)"),
        "incomplete": missing,
    }}  # fmt: skip


def b_heads_one() -> PaperStudy:
    """One head against the most heads of paper B's grid on the linear map (module docstring): 18 units."""
    return PaperStudy("b-heads-one", ("B-heads-one",),
                      "paper B's heads × head-size grid on the linear map (S = 16, s = 3, 10,000 steps of 8,192 "
                      "tokens, lr 1e-3, head sizes 4, 8, 16, 3 seeds): H = 1 and, as the control, H = 32, float32; "
                      "a unit stops once it leaves the plateau", _heads_one_units(),
                      "lib.paper_studies:heads_one_summary", "lib.paper_studies:heads_one_measures")  # fmt: skip


#: B-heads' tie margin (chapter 6 uses the same): two mean final losses closer than this are a tie (both solved, or
#: both on the plateau).
HEADS_TIE = 0.01


def _heads_keys() -> list[tuple[int, int, int]]:
    """``(H, d_head, seed)`` of every ``b-heads`` unit, in the order they are run: seed by seed (the measure needs
    whole grids of seeds), the narrowest models (``d_model = H d_head``) first within a seed."""
    config = WidthStudyConfig.paper()
    cells = sorted(((H, dh) for H in config.heads for dh in config.d_heads), key=lambda c: (c[0] * c[1], c[0]))
    return [(H, dh, k) for k in config.seeds for H, dh in cells]


def _heads_units():
    return _grid_units(_heads_keys(), HEADS_TIE / 2)


def heads_summary(values) -> dict:
    """Per unit (in the study's order; ``None``: not done) -> the published summary of ``b-heads``: per
    ``"H,d_head"`` cell and seed the final output-bit loss (``null``: not done), the exit step (``"never"``: on the
    plateau to the end) and the steps run."""
    keys = _heads_keys()
    if len(values) != len(keys):
        raise ValueError(f"need {len(keys)} unit values, got {len(values)}")
    config = WidthStudyConfig.paper()
    seeds = list(config.seeds)
    out = {"heads": list(config.heads), "d_heads": list(config.d_heads), "seeds": seeds, "budget": config.lm_steps,
           "final": {}, "exit": {}, "steps_run": {}}
    for H in config.heads:
        for dh in config.d_heads:
            for part in ("final", "exit", "steps_run"):
                out[part][f"{H},{dh}"] = [None] * len(seeds)
    for (H, dh, k), v in zip(keys, values):
        if v is None:
            continue
        cell, i = f"{H},{dh}", seeds.index(k)
        out["final"][cell][i] = float(v["pred_loss"][-1][0])
        out["exit"][cell][i] = _exit_or_never(v)
        out["steps_run"][cell][i] = int(v["steps_run"])
    return out


def heads_grid(summary: dict) -> dict:
    """A ``b-heads`` summary as arrays over ``(d_head, H)`` (rows: head sizes, columns: head counts), for the figure
    of the committed grid: ``loss``, the mean final output-bit loss over the seeds done (NaN where none is),
    ``done`` and ``left``, the runs done and those that left the plateau; with ``heads``, ``d_heads``, ``seeds``."""
    heads, d_heads, seeds = summary["heads"], summary["d_heads"], summary["seeds"]
    shape = (len(d_heads), len(heads))
    loss, done, left = np.full(shape, np.nan), np.zeros(shape, dtype=int), np.zeros(shape, dtype=int)
    for i, dh in enumerate(d_heads):
        for j, H in enumerate(heads):
            final = [x for x in summary["final"][f"{H},{dh}"] if x is not None]
            done[i, j] = len(final)
            left[i, j] = sum(isinstance(e, int) for e in summary["exit"][f"{H},{dh}"])
            if final:
                loss[i, j] = float(np.mean(final))
    return {"heads": list(heads), "d_heads": list(d_heads), "seeds": list(seeds), "loss": loss, "done": done,
            "left": left}


def heads_measures(summary: dict) -> dict:
    """What ``b-heads`` measures of B-heads, as chapter 6 does (:func:`lib.heads_vs_head_size` with
    :data:`HEADS_TIE`): on the seeds whose whole grid is done, the share of decisive (H, d_head) pairs won by more
    heads, its interval resampling those seeds, and the control :func:`lib.heads_halves_control` (both need two
    seeds). ``{}`` while no seed's grid is complete."""
    from .measures import heads_halves_control, heads_vs_head_size
    from .stats import group_bootstrap_interval

    heads, d_heads, seeds = summary["heads"], summary["d_heads"], summary["seeds"]
    final = summary["final"]
    complete = [i for i in range(len(seeds)) if all(final[f"{H},{dh}"][i] is not None for H in heads for dh in d_heads)]
    if not complete:
        return {}
    loss = np.array([[[final[f"{H},{dh}"][i] for i in complete] for H in heads] for dh in d_heads])  # (d_head, H, seeds)
    pairs = heads_vs_head_size(loss, heads, d_heads, HEADS_TIE)
    n = len(complete)
    interval = (group_bootstrap_interval(lambda i: heads_vs_head_size(loss, heads, d_heads, HEADS_TIE, i)["share"], n)
                if n >= 2 else None)  # fmt: skip
    left = {H: sum(isinstance(summary["exit"][f"{H},{dh}"][i], int) for dh in d_heads for i in complete) for H in heads}
    missing = [f"seed {seeds[i]}'s grid not done yet" for i in range(len(seeds)) if i not in complete]
    return {"B-heads": {
        "value": pairs["share"], "interval": interval,
        "control": heads_halves_control(loss, HEADS_TIE) if n >= 2 else None,
        "text": (f"doubling H beat doubling d_head (same d_model) in {pairs['more']} of "
                 f"{pairs['more'] + pairs['bigger']} decisive pairs ({pairs['ties']} ties; mean final output-bit loss "
                 f"over {n} seed{'s' if n > 1 else ''}); runs that left the plateau, per H: "
                 + ", ".join(f"H={H}: {k} of {len(d_heads) * n}" for H, k in left.items())),
        "incomplete": missing,
    }}  # fmt: skip


def b_heads() -> PaperStudy:
    """Paper B's whole heads × head-size grid on the linear map, run to its budget or until solved well below the tie
    margin (module docstring): 54 units."""
    return PaperStudy("b-heads", ("B-heads",),
                      "paper B's heads × head-size grid on the linear map (S = 16, s = 3, H = 1 to 32, head sizes 4, 8, "
                      "16, d_model = H × d_head, 10,000 steps of 8,192 tokens, lr 1e-3, 3 seeds), float32; a unit "
                      "stops once its output-bit loss is below half the tie margin (0.005), after which it could move "
                      "by less than the margin: the final loss of chapter 6's measure, without the steps of a solved run",
                      _heads_units(), "lib.paper_studies:heads_summary", "lib.paper_studies:heads_measures")  # fmt: skip


#: Fresh seeds of ``bf16-calibration`` (used by no other study).
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
    return unit("lib.paper_units:fast_curves", FastRunConfig(stack, precision))


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

    exits = {p: [exit_step(values[2 * i + j]) for i in range(len(CALIBRATION_SEEDS))] for j, p in enumerate(_PRECISIONS)}
    ratios = [b / a for a, b in zip(exits["fp32"], exits["bf16"]) if a is not None and b is not None]
    out = {"seeds": list(CALIBRATION_SEEDS), "exits": exits, "ratios": ratios, "bounds": list(CALIBRATION_BOUNDS),
           "interval": None, "verdict": "not shown"}  # fmt: skip
    if len(ratios) >= 2:
        iv = bootstrap_interval(ratios)
        lo, hi = CALIBRATION_BOUNDS
        out["interval"] = [iv.value, iv.lo, iv.hi]
        out["verdict"] = ("stands in" if lo <= iv.lo and iv.hi <= hi else "biased" if iv.hi < lo or iv.lo > hi
                          else "not shown")  # fmt: skip
    return out


def calibration_costs(record: dict | None) -> dict[str, float]:
    """Median CPU seconds per training step of the committed ``bf16-calibration`` units, per precision (``"fp32"``,
    ``"bf16"``; NaN where none is done), from the study's record (:func:`study_record`): what bfloat16 saves."""
    units = (record or {}).get("units", {})
    per_step: dict[str, list[float]] = {p: [] for p in _PRECISIONS}
    for u in bf16_calibration().units:
        done = units.get(unit_key(u))
        if done is not None:
            per_step[u.config.precision].append(done["cpu_seconds"] / done["value"]["steps_run"])
    return {p: float(np.median(v)) if v else float("nan") for p, v in per_step.items()}


def bf16_calibration() -> PaperStudy:
    """bfloat16 against float32 at paper B's linear map (module docstring): 32 units, no claim."""
    return PaperStudy("bf16-calibration", (), "paper B's linear map (S = 16, s = 3, d_model 128, 8 heads, MLP 512, "
                      "8,192 tokens per step, lr 1e-3), 16 fresh seeds in float32 and bfloat16, each until it leaves the plateau",
                      _calibration_units(), "lib.paper_studies:calibration_summary")  # fmt: skip


#: The attention bias of ``b-random``'s control (chapter 6's: c = 3 toward the true pattern).
RANDOM_BIAS = 3.0
#: How often the control's biased runs are evaluated: they leave the plateau within about 100 steps, so at the
#: study's 100 every one of them sat on the first evaluation and their spread measured the grid (claims-review-2 §4).
RANDOM_BIASED_EVAL = 10


def random_summary(values) -> dict:
    """Per unit (the unbiased runs of every seed, then the biased ones; ``None``: not done) -> the published summary
    of ``b-random``: per seed the exit step (``"never"``: not within 10,000 steps) without and with the bias, and
    the evaluation interval (an exit is known to within it)."""
    n = len(CALIBRATION_SEEDS)
    if len(values) != 2 * n:
        raise ValueError(f"need {2 * n} unit values, got {len(values)}")
    every = SparsityStudyConfig.paper().run(16).eval_every
    return {"seeds": list(CALIBRATION_SEEDS), "bias": RANDOM_BIAS, "eval_every": every,
            "biased_eval_every": RANDOM_BIASED_EVAL,
            "exits": [_exit_or_never(v) for v in values[:n]], "biased_exits": [_exit_or_never(v) for v in values[n:]]}


def random_measures(summary: dict) -> dict:
    """What ``b-random`` measures of B-random, as chapter 6's check does: the latest over the earliest exit among the
    seeds that leave (:func:`lib.spread`; never-leaving seeds left out, a lower bound), with the bootstrap over seeds
    (a resample with fewer than two exits counts as 1), and the same spread with the bias as the control. ``{}``
    while fewer than two unbiased runs are done."""
    from .stats import group_bootstrap_interval
    from .train.pattern_metrics import spread

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
    return {"B-random": {
        "chapter": "06_sparse_patterns",
        "value": float(spread(t)), "interval": interval,
        "control": float(spread(tb)) if np.isfinite(tb).sum() >= 2 else None,
        "text": (f"with the bias c = {summary['bias']:g} (the control): "
                 + (f"{spread(tb):.1f}" if np.isfinite(tb).sum() >= 2 else "not measured")
                 + f"; without it, {left} of {t.size} seeds left the plateau within 10,000 steps (exits "
                 f"{int(np.min(t))}-{int(np.max(t[np.isfinite(t)]))}): latest / earliest exit = {spread(t):.1f}"),
        "incomplete": missing,
    }}  # fmt: skip


def b_random() -> PaperStudy:
    """Seed-to-seed spread of the exit on paper B's linear map, and its control with the bias (module docstring):
    32 units, the unbiased ones those of ``bf16-calibration`` in float32."""
    units = tuple(_linear_map_unit(k, "fp32") for k in CALIBRATION_SEEDS)
    control = tuple(_linear_map_unit(k, "fp32", RANDOM_BIAS, RANDOM_BIASED_EVAL) for k in CALIBRATION_SEEDS)
    return PaperStudy("b-random", ("B-random",),
                      "paper B's linear map (S = 16, s = 3, d_model 128, 8 heads, MLP 512, 8,192 tokens per step, lr "
                      "1e-3), 16 seeds until each leaves the plateau (at most 10,000 steps), without and (control) "
                      f"with the attention bias c = 3 toward the true pattern (evaluated every {RANDOM_BIASED_EVAL} "
                      "steps), float32",
                      units + control, "lib.paper_studies:random_summary", "lib.paper_studies:random_measures")  # fmt: skip


#: The two architectures of ``b-mixer-tuning`` and ``b-mixer`` (B-mixer compares them).
MIXER_ARCHS = ("attention", "mlp_mixer")


def _mixer_tuning_keys() -> list[tuple[str, int, float]]:
    """``(arch, s, lr)`` of every ``b-mixer-tuning`` unit, in the order they are run."""
    t = MixerComparisonConfig.paper().tuning
    return [(arch, s, lr) for arch in MIXER_ARCHS for s in t.lm_s for lr in t.lrs]


def _mixer_tuning_units(init: str):
    t = MixerComparisonConfig.paper().tuning
    out = []
    for arch, s, lr in _mixer_tuning_keys():
        stack = t.run_config(arch, "linear map")  # every (s, lr) of the grid in one stack; a unit holds one of them
        out.append(unit("lib.paper_units_reference:reference_curves",
                        replace(stack, members=(Member(t.lm_task(s), seed=t.tune_seed),), lr=lr, init=init)))
    return tuple(out)


def mixer_tuning_summary(values) -> dict:
    """Per unit (in the study's order; ``None``: not done) -> the published summary of ``b-mixer-tuning``: per
    architecture the score of each rate (chapter 7's rule, :func:`lib.studies.mixer_tuning.mean_loss_over_budget`
    averaged over the sparsities; ``null`` until every sparsity of that rate is done), the rate with the lowest
    score (``null`` until every rate is scored), and per rate the sparsities at which the run left the plateau within
    the budget (its output-bit loss below :data:`lib.LINEAR_MAP_EXIT` at some evaluation): a rate's score differs from
    the plateau's by noise alone when that list is empty."""
    keys = _mixer_tuning_keys()
    if len(values) != len(keys):
        raise ValueError(f"need {len(keys)} unit values, got {len(values)}")
    t = MixerComparisonConfig.paper().tuning
    by = dict(zip(keys, values))
    out = {"lrs": list(t.lrs), "sparsities": list(t.lm_s), "budget": t.lm_steps, "archs": {}}
    for arch in MIXER_ARCHS:
        scores = []
        for lr in t.lrs:
            runs = [by[arch, s, lr] for s in t.lm_s]
            scores.append(None if None in runs else float(np.mean(
                [mean_loss_over_budget(v["pred_loss"], t.lm_steps, t.eval_every)[0] for v in runs])))
        best = None if None in scores else t.lrs[int(np.argmin(scores))]
        left = [[s for s in t.lm_s if by[arch, s, lr] is not None
                 and float(np.min(by[arch, s, lr]["pred_loss"])) < LINEAR_MAP_EXIT] for lr in t.lrs]
        out["archs"][arch] = {"scores": scores, "best_lr": best, "left_plateau": left,
                              "steps_run": {str(s): [None if by[arch, s, lr] is None else by[arch, s, lr]["steps_run"]
                                                     for lr in t.lrs] for s in t.lm_s}}  # fmt: skip
    return out


#: The initialisation of each version of the B-mixer studies: ``{suffix: GPTRunConfig.init}`` (module docstring).
MIXER_INITS = {"": LINEAR_MAP_INIT, "-gpt2": "gpt2"}


def _init_words(init: str) -> str:
    return ("PyTorch's default initialisation" if init == "torch" else
            "the trainer's default initialisation (normal, σ = 0.02)")  # fmt: skip


def b_mixer_tuning(version: str = "") -> PaperStudy:
    """Chapter 7's learning-rate tuning at paper scale for the transformer and the MLP-Mixer (module docstring):
    24 units, no claim (``b-mixer`` trains at the rates it chooses); ``version`` is a key of :data:`MIXER_INITS`."""
    init = MIXER_INITS[version]
    return PaperStudy(f"b-mixer-tuning{version}", (),
                      "chapter 7's tuning at paper scale for the transformer and the MLP-Mixer: the linear map at S = 16, "
                      "s = 3, 5, 7, width 128 (8 heads of 16), MLP 512, 8,192 tokens per step, rates 3e-4, 1e-3, 3e-3, "
                      f"1e-2, 3,000 steps from the tuning seed, {_init_words(init)}, float32, reference trainer; a unit "
                      "stops once solved", _mixer_tuning_units(init), "lib.paper_studies:mixer_tuning_summary")  # fmt: skip


def mixer_rates(data_dir: Path | str = DATA_DIR, version: str = "") -> dict[str, float] | None:
    """``{arch: rate}`` chosen by the committed ``b-mixer-tuning`` (of ``version``), or ``None`` until all its units
    are done."""
    record = study_record(f"b-mixer-tuning{version}", data_dir)
    if record is None:
        return None
    rates = {arch: got["best_lr"] for arch, got in record["summary"]["archs"].items()}
    return None if None in rates.values() else rates


def _mixer_keys() -> list[tuple[int, str, int]]:
    """``(s, arch, seed)`` of every ``b-mixer`` unit, in the order they are run: sparsity by sparsity, so that a
    study done in part has whole groups of the measure."""
    c = MixerComparisonConfig.paper()
    return [(s, arch, k) for s in c.tuning.lm_s for arch in MIXER_ARCHS for k in c.seeds]


def b_mixer(data_dir: Path | str = DATA_DIR, version: str = "") -> PaperStudy:
    """Chapter 7's B-mixer at paper scale (module docstring): 18 units at the rates ``b-mixer-tuning`` (of the same
    ``version``, a key of :data:`MIXER_INITS`) chose; a ``RuntimeError`` names the tuning's command while it is not
    complete. Only the default version measures the claim."""
    init, tuning = MIXER_INITS[version], f"b-mixer-tuning{version}"
    rates = mixer_rates(data_dir, version)
    if rates is None:
        raise RuntimeError(f"b-mixer{version} trains at the rates {tuning} chooses, which is not complete: run "
                           f"`python -m lib.paper_scale run {tuning}` first")  # fmt: skip
    c = MixerComparisonConfig.paper()
    units = []
    for s, arch, k in _mixer_keys():
        stack = c.run_config(arch, "linear map", rates[arch])
        units.append(unit("lib.paper_units_reference:reference_curves",
                          replace(stack, members=(Member(c.tuning.lm_task(s), seed=k),), init=init)))
    return PaperStudy(f"b-mixer{version}", () if version else ("B-mixer",),
                      "chapter 7's comparison at paper scale, transformer against MLP-Mixer: the linear map at S = 16, "
                      f"s = 3, 5, 7, 3 seeds, 10,000 steps, each at the rate {tuning} chose "
                      f"({', '.join(f'{a}: {r:g}' for a, r in rates.items())}), {_init_words(init)}, float32, "
                      "reference trainer; a unit stops once solved (a solved run repeats its last loss, as a frozen "
                      "member of chapter 7's stack)", tuple(units), "lib.paper_studies:mixer_summary",
                      "" if version else "lib.paper_studies:mixer_measures")  # fmt: skip


def mixer_summary(values) -> dict:
    """Per unit (in the study's order; ``None``: not done) -> the published summary of ``b-mixer``: the evaluation
    grid (every ``eval_every`` steps up to the budget) and per ``"arch,s"`` the output-bit loss curve of each seed on
    it (``null``: not done; a unit that stopped once solved repeats its last value to the budget)."""
    keys = _mixer_keys()
    if len(values) != len(keys):
        raise ValueError(f"need {len(keys)} unit values, got {len(values)}")
    c = MixerComparisonConfig.paper()
    budget, every = c.lm_steps, c.tuning.eval_every
    grid = list(range(0, budget + 1, every))
    curves: dict[str, list] = {}
    for (s, arch, _), v in zip(keys, values):
        curve = None
        if v is not None:
            seen = dict(zip(v["steps"], (loss[0] for loss in v["pred_loss"])))
            curve, last = [], None
            for step in grid:
                last = seen.get(step, last)
                curve.append(last)
            if None in curve:
                raise ValueError("a unit's curve must start at step 0 and be evaluated every eval_every steps")
        curves.setdefault(f"{arch},{s}", []).append(curve)
    return {"steps": grid, "budget": budget, "sparsities": list(c.tuning.lm_s), "seeds": list(c.seeds),
            "archs": list(MIXER_ARCHS), "curves": curves}  # fmt: skip


def mixer_measures(summary: dict) -> dict:
    """What ``b-mixer`` measures of B-mixer, as chapter 7's check does: transformer over MLP-Mixer steps until the
    seed-averaged output-bit loss falls below :data:`lib.LINEAR_MAP_EXIT` (:func:`lib.curve_time_ratio`, geometric
    mean over the sparsities whose six runs are done), its interval resampling each architecture's seeds, and the
    transformer's seeds split in halves as the control (:func:`lib.halves_time_ratio`). ``{}`` while no sparsity is
    complete."""
    from types import SimpleNamespace

    from .measures import curve_time_ratio, group_time_ratios, halves_time_ratio
    from .stats import group_bootstrap_interval

    tf_name, mix_name = summary["archs"]
    done = [s for s in summary["sparsities"]
            if all(None not in summary["curves"][f"{a},{s}"] for a in (tf_name, mix_name))]  # fmt: skip
    if not done:
        return {}
    steps, budget, n = np.array(summary["steps"]), float(summary["budget"]), len(summary["seeds"])

    def run(arch):  # group-major (K, sparsities x seeds), as chapter 7's stacks
        return SimpleNamespace(steps=steps, pred_loss=np.array(
            [c for s in done for c in summary["curves"][f"{arch},{s}"]], dtype=float).T)

    tf, mix = run(tf_name), run(mix_name)
    g = len(done)
    ratio = curve_time_ratio(tf, mix, g, LINEAR_MAP_EXIT, budget)
    interval = group_bootstrap_interval(lambda i, j: curve_time_ratio(tf, mix, g, LINEAR_MAP_EXIT, budget, i, j), (n, n))
    terms = group_time_ratios(tf, mix, g, LINEAR_MAP_EXIT, budget)
    per_s = ", ".join(f"{'≥ ' if low else ''}{r:.1f} at s = {done[i]}" for i, r, low in terms) or "none"
    missing = [f"s = {s} not done yet" for s in summary["sparsities"] if s not in done]
    return {"B-mixer": {
        "value": ratio, "interval": interval,
        "control": halves_time_ratio(tf, g, LINEAR_MAP_EXIT, budget),
        "text": (f"transformer / MLP-Mixer steps until the seed-averaged loss leaves the plateau: {per_s} "
                 f"(geometric mean {ratio:.1f}; ≥: the transformer's curve still on the plateau at step "
                 f"{int(budget):,}, a lower bound)"),
        "incomplete": missing,
    }}  # fmt: skip


#: ``{name: function returning the PaperStudy}`` (``b-mixer`` takes ``data_dir``: its rates come from a study).
STUDIES: dict[str, Callable[..., PaperStudy]] = {"b-sparsity": b_sparsity, "b-heads-one": b_heads_one,
                                                 "bf16-calibration": bf16_calibration, "b-random": b_random,
                                                 "b-mixer-tuning": b_mixer_tuning, "b-mixer": b_mixer,
                                                 "b-heads": b_heads,
                                                 "b-mixer-tuning-gpt2": lambda: b_mixer_tuning("-gpt2"),
                                                 "b-mixer-gpt2": lambda data_dir=DATA_DIR: b_mixer(data_dir, "-gpt2")}
#: Studies whose units depend on another study's committed result: ``{name: the study it needs}``.
STAGED = {"b-mixer": "b-mixer-tuning", "b-mixer-gpt2": "b-mixer-tuning-gpt2"}


def make_study(name: str, data_dir: Path | str = DATA_DIR) -> PaperStudy:
    """The study ``name`` (a staged one built from the committed results under ``data_dir``)."""
    return STUDIES[name](data_dir) if name in STAGED else STUDIES[name]()


def paper_records(data_dir: Path | str = DATA_DIR) -> list:
    """The ledger's *paper scale* column: one :class:`lib.claims.ClaimRecord` (``scale="paper"``) per claim a
    published study measures, judged by the registry's check for that claim exactly as at FAST scale
    (:func:`lib.claims.build_record`), with "k of n units" and the study's cost in its note. Every such study is
    committed with fixed seeds, so none is *reproduced* before it is rerun at other seed offsets."""
    from .claims import REGISTRY, build_record

    records = []
    for name in STUDIES:
        if published(name, data_dir) is None:
            continue
        study = make_study(name, data_dir)
        record = study_record(name, data_dir) if study.measures else None
        if record is None:
            continue
        measured = resolve(study.measures)(record["summary"])
        for cid, m in measured.items():
            chapter = m.get("chapter") or REGISTRY[cid].checks[0].chapter
            note = (f"paper-scale study {name}: {record['done']} of {record['of']} units, {record['cpu_hours']} "
                    f"CPU-hours ({', '.join(record['cpu_capability'])}); `{record['command']}`")  # fmt: skip
            records.append(build_record(cid, chapter, m.get("value"), control=m.get("control"),
                                        samples=m.get("samples"), interval=m.get("interval"), text=m.get("text"),
                                        note=note, scale="paper",
                                        committed=f"the paper-scale study {name} (data/paper/)",
                                        incomplete=m.get("incomplete", ()), robustness=[], extra={"study": name}))  # fmt: skip
    return records


def study_record(name: str, data_dir: Path | str = DATA_DIR) -> dict | None:
    """The record of study ``name`` as its committed units give it now (:func:`lib.paper_scale.publish` of the units
    under ``data/paper/`` alone, through the study's current summary; nothing computed, nothing written), or ``None``
    when nothing is published. The ledger and the chapters read this, so they always describe exactly the committed
    units of the current code."""
    if published(name, data_dir) is None:
        return None
    return publish(make_study(name, data_dir), cache=Cache(enabled=False), data_dir=data_dir, write=False)


def paper_claim(id: str, data_dir: Path | str = DATA_DIR, show: bool = True):
    """Claim ``id``'s row of the *paper scale* column (:func:`paper_records`), shown as a claim box beside the FAST
    one; ``None`` (shown as a line saying so) where no committed study measures it yet. Nothing is recorded in the
    notebook's metadata: the ledger reads the committed studies itself."""
    found = [r for r in paper_records(data_dir) if r.id == id]
    record = found[0] if found else None
    if show:
        from IPython.display import HTML, display

        display(HTML(record._repr_html_()) if record is not None else
                HTML(f"<p><em>Claim {id} at paper scale: not run (no committed study measures it yet).</em></p>"))
    return record


def study_progress(record: dict | None, name: str | None = None) -> dict:
    """``done``, ``of`` and ``cpu_hours`` of a study's record (:func:`study_record`); for ``None`` (nothing
    published) zeros, with ``of`` the number of units of study ``name`` when it is given."""
    if record is None:
        of = 0 if name is None else len(_mixer_keys()) if name in STAGED else len(STUDIES[name]().units)
        return {"done": 0, "of": of, "cpu_hours": 0.0}
    return {k: record[k] for k in ("done", "of", "cpu_hours")}


def tuning_exits(summary: dict, labels: dict[str, str] | None = None) -> str:
    """One sentence per architecture of a ``b-mixer-tuning`` summary: at which rates and sparsities its tuning run
    left the plateau within the budget ("at no rate": every score is a loss on or near the plateau, and the chosen
    rate is the one whose loss had fallen furthest, not one that learned the map)."""
    if "left_plateau" not in next(iter(summary["archs"].values()), {}):
        raise ValueError("summary has no 'left_plateau' (published before it was recorded): publish it again")
    labels = labels or {}
    parts = []
    for arch, got in summary["archs"].items():
        hits = [f"{lr:g} (s = {', '.join(map(str, ss))})" for lr, ss in zip(summary["lrs"], got["left_plateau"]) if ss]
        parts.append(f"{labels.get(arch, arch)}: " + ("; ".join(hits) if hits else "at no rate and no sparsity"))
    return " · ".join(parts)


def mixer_finals(summary: dict, labels: dict[str, str] | None = None) -> str:
    """Per sparsity and architecture of a ``b-mixer`` summary, over the seeds done: how many runs are solved (their
    last held-out output-bit loss below :data:`lib.SOLVED`, :math:`0.1 \\ln 2`) and their mean last loss; "none
    done" where no seed has run."""
    labels = labels or {}
    out = []
    for s in summary["sparsities"]:
        parts = []
        for arch in summary["archs"]:
            last = [c[-1] for c in summary["curves"][f"{arch},{s}"] if c is not None]
            parts.append(f"{labels.get(arch, arch)} " + (
                f"{sum(x < SOLVED for x in last)} of {len(last)} solved, mean last loss {np.mean(last):.3f}"
                if last else "none done"))
        out.append(f"s = {s}: " + ", ".join(parts))
    return "; ".join(out)


def mixer_solved_at(summary: dict, labels: dict[str, str] | None = None) -> str:
    """Per sparsity of a ``b-mixer`` summary: the step at which each done seed's curve is first below
    :data:`lib.SOLVED` (a solved run, :math:`0.1 \\ln 2`), per architecture, and, where both architectures' seeds are
    all done, the ratio of their medians (transformer over MLP-Mixer; a seed never solved counts at the budget, and
    "≥" marks a median that is such a seed, so the ratio is a lower bound). Shown beside B-mixer, not scored: the
    registry's check times the exit from the plateau (:data:`lib.LINEAR_MAP_EXIT`), fixed before these runs."""
    labels = labels or {}
    budget, steps = summary["budget"], summary["steps"]
    out = []
    for s in summary["sparsities"]:
        parts, medians = [], []
        for arch in summary["archs"]:
            done = [c for c in summary["curves"][f"{arch},{s}"] if c is not None]
            at = [next((t for t, loss in zip(steps, c) if loss < SOLVED), None) for c in done]
            parts.append(f"{labels.get(arch, arch)} " + (", ".join(f"{a:,}" if a is not None else f"not by {budget:,}"
                                                                   for a in at) if at else "none done"))
            if len(done) == len(summary["seeds"]):
                # (step, never solved), a seed solved at the budget before one never solved: the middle seed(s)
                ranked = sorted((budget if a is None else a, a is None) for a in at)
                n = len(ranked)
                middle = ranked[(n - 1) // 2: n // 2 + 1]
                medians.append((float(np.mean([m[0] for m in middle])), any(m[1] for m in middle)))
        text = f"s = {s}: " + "; ".join(parts)
        if len(medians) == 2 and medians[1][0] > 0:
            (tf, low), (mix, _) = medians
            text += f" (ratio of medians {'≥ ' if low else ''}{tf / mix:.1f})"
        out.append(text)
    return " · ".join(out)


def mixer_view(version: str = "", labels: dict[str, str] | None = None, data_dir: Path | str = DATA_DIR) -> dict:
    """What chapter 7 glues of one version of the B-mixer studies (a key of :data:`MIXER_INITS`): the progress of
    both stages (``tuning_done``, ``tuning_of``, ``tuning_cpu_hours``, ``done``, ``of``, ``cpu_hours``), the rates
    chosen, the tuning scores with their rates, where the tuning runs left the plateau (:func:`tuning_exits`), the
    comparison's ratio text (:func:`mixer_measures`), finals (:func:`mixer_finals`) and solve steps
    (:func:`mixer_solved_at`); "none yet" where a stage
    has nothing to say. ``summary`` is the comparison's published summary (``None`` before its first unit)."""
    labels = labels or {}
    tuning = study_record(f"b-mixer-tuning{version}", data_dir)
    comparison = study_record(f"b-mixer{version}", data_dir)
    out = {f"tuning_{k}": v for k, v in study_progress(tuning, f"b-mixer-tuning{version}").items()}
    out.update(study_progress(comparison, f"b-mixer{version}"))
    none = "none yet"
    tuned = tuning["summary"] if tuning is not None else None
    rates = mixer_rates(data_dir, version)
    out["rates"] = ", ".join(f"{labels.get(a, a)} {r:g}" for a, r in rates.items()) if rates else none
    out["scores"] = none if tuned is None else " · ".join(
        f"{labels.get(a, a)} " + ", ".join("–" if x is None else f"{x:.3f}" for x in v["scores"])
        for a, v in tuned["archs"].items()) + f" (rates {', '.join(f'{r:g}' for r in tuned['lrs'])})"
    out["left"] = none if tuned is None else tuning_exits(tuned, labels)
    summary = None if comparison is None else comparison["summary"]
    measured = {} if summary is None else mixer_measures(summary)
    out["ratio"] = measured["B-mixer"]["text"] if measured else none
    out["finals"] = none if summary is None else mixer_finals(summary, labels)
    out["solved_at"] = none if summary is None else mixer_solved_at(summary, labels)
    out["summary"] = summary
    return out
