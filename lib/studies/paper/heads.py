r"""``b-heads-one`` and ``b-heads``: paper B's heads x head-size grid on the linear map at the paper's settings.

(:meth:`lib.WidthStudyConfig.paper`: S = 16, s = 3, 10,000 steps of 8,192 tokens, lr :math:`10^{-3}`, PyTorch's
initialisation, head sizes 4, 8 and 16, three seeds.) ``b-heads-one``: every run with :math:`H = 1`, and the control,
every run with the most heads of the grid (:math:`H = 32`), one unit per (H, head size, seed), float32. The measure
is chapter 6's: how many runs leave the plateau (held-out output-bit loss below :data:`lib.LINEAR_MAP_EXIT`); a unit
stops as soon as it has (the count needs nothing after). ``b-heads``: the whole grid, measured as chapter 6 does.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...measures.comparisons import LINEAR_MAP_EXIT
from ...train.fast_train import FastRunConfig
from .._paper_scale import PaperStudy
from .._study import unit
from ..width_study import WidthStudyConfig


def _paper_grid(seed_offset: int = 0) -> WidthStudyConfig:
    """Paper B's heads x head-size grid (:meth:`lib.WidthStudyConfig.paper`) with every seed moved by ``seed_offset``."""
    config = WidthStudyConfig.paper()
    return replace(config, seeds=tuple(k + seed_offset for k in config.seeds))


def _exit_or_never(v):
    """The exit step of a unit's value (first evaluation with output-bit loss below the exit threshold), ``"never"``
    when it did not leave within its budget, ``None`` when not done."""
    if v is None:
        return None
    below = [s for s, loss in zip(v["steps"], v["pred_loss"]) if loss[0] < LINEAR_MAP_EXIT]
    return below[0] if below else "never"


def _heads_one_keys(seed_offset: int = 0) -> list[tuple[int, int, int]]:
    """``(H, d_head, seed)`` of every ``b-heads-one`` unit, in the order they are run: one head first."""
    config = _paper_grid(seed_offset)
    return [(H, dh, k) for H in (config.heads[0], config.heads[-1]) for dh in config.d_heads for k in config.seeds]


def _grid_units(keys, stop_below: float, seed_offset: int = 0):
    """One float32 unit per ``(H, d_head, seed)`` of ``keys``: that seed's member of the paper-scale grid's stack
    (:meth:`lib.WidthStudyConfig.runs`), trained alone until its output-bit loss is below ``stop_below``."""
    runs = _paper_grid(seed_offset).runs()
    out = []
    for H, dh, k in keys:
        grid = runs["grid", H, dh]
        member = next(m for m in grid.members if m.seed == k)
        out.append(
            unit(
                "lib.studies._units:fast_curves",
                FastRunConfig(replace(grid, members=(member,), stop_below=stop_below), "fp32"),
            )
        )
    return tuple(out)


def _heads_one_units(seed_offset: int = 0):
    return _grid_units(_heads_one_keys(seed_offset), LINEAR_MAP_EXIT, seed_offset)


def heads_one_summary(values, seed_offset: int = 0) -> dict:
    """Per unit (in the study's order; ``None``: not done) -> the published summary of ``b-heads-one``: per
    ``"H,d_head"`` cell the exit step of each seed (``null``: not done; ``"never"``: still on the plateau after the
    budget), and per H the runs that left and the runs done."""
    keys = _heads_one_keys(seed_offset)
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


def _seeds_interval(cells: list[list]):
    """The 90 % bootstrap interval over seeds of the number of runs that leave the plateau, from per-cell exits
    (``cells[d_head][seed]``, as :func:`heads_one_summary` gives them), on the seeds whose runs are all done: each
    resample draws seeds with replacement and counts the runs of the drawn seeds that left. ``None`` with fewer
    than two such seeds."""
    from ...core.stats import group_bootstrap_interval

    exits = np.array(cells, dtype=object)  # (d_head, seed)
    done = [j for j in range(exits.shape[1]) if all(e is not None for e in exits[:, j])]
    if len(done) < 2:
        return None
    left = np.array([sum(isinstance(e, int) for e in exits[:, j]) for j in done], dtype=float)  # per seed
    return group_bootstrap_interval(lambda i: float(left[i].sum()), len(done))


def heads_one_measures(summary: dict) -> dict:
    """What ``b-heads-one`` measures of B-heads-one: the runs with one head that leave the plateau, with its interval
    over seeds (:func:`_seeds_interval`), and the same count at the most heads as the control; runs not done yet are
    listed as missing (``{}`` while no single-head run is)."""
    (one, one_got), (most, most_got) = sorted(summary["heads"].items(), key=lambda kv: int(kv[0]))
    if one_got["done"] == 0:
        return {}
    missing = [
        f"{g['of'] - g['done']} of {g['of']} runs with H = {H} not done yet"
        for H, g in ((one, one_got), (most, most_got))
        if g["done"] < g["of"]
    ]
    return {
        "B-heads-one": {
            "value": one_got["left"],
            "interval": _seeds_interval([v for c, v in summary["cells"].items() if c.split(",")[0] == one]),
            "control": most_got["left"] if most_got["done"] else None,
            "text": (
                f"runs with H={one} that leave the plateau: {one_got['left']} of {one_got['done']} done; with H={most}: "
                f"{most_got['left']} of {most_got['done']} done (d_head 4, 8, 16; d_model = H × d_head)"
            ),
            "incomplete": missing,
        }
    }


def b_heads_one(seed_offset: int = 0) -> PaperStudy:
    """One head against the most heads of paper B's grid on the linear map (module docstring): 18 units, the seeds
    moved by ``seed_offset``."""
    return PaperStudy(
        f"b-heads-one@{seed_offset}" if seed_offset else "b-heads-one",
        ("B-heads-one",),
        "paper B's heads × head-size grid on the linear map (S = 16, s = 3, 10,000 steps of 8,192 "
        "tokens, lr 1e-3, head sizes 4, 8, 16, 3 seeds): H = 1 and, as the control, H = 32, float32; "
        "a unit stops once it leaves the plateau",
        _heads_one_units(seed_offset),
        "lib.studies.paper.heads:heads_one_summary",
        "lib.studies.paper.heads:heads_one_measures",
        seed_offset,
    )


#: B-heads' tie margin (chapter 6 uses the same): two mean final losses closer than this are a tie (both solved, or
#: both on the plateau).
HEADS_TIE = 0.01


def _heads_keys(seed_offset: int = 0) -> list[tuple[int, int, int]]:
    """``(H, d_head, seed)`` of every ``b-heads`` unit, in the order they are run: seed by seed (the measure needs
    whole grids of seeds), the narrowest models (``d_model = H d_head``) first within a seed."""
    config = _paper_grid(seed_offset)
    cells = sorted(((H, dh) for H in config.heads for dh in config.d_heads), key=lambda c: (c[0] * c[1], c[0]))
    return [(H, dh, k) for k in config.seeds for H, dh in cells]


def _heads_units(seed_offset: int = 0):
    return _grid_units(_heads_keys(seed_offset), HEADS_TIE / 2, seed_offset)


def heads_summary(values, seed_offset: int = 0) -> dict:
    """Per unit (in the study's order; ``None``: not done) -> the published summary of ``b-heads``: per
    ``"H,d_head"`` cell and seed the final output-bit loss (``null``: not done), the exit step (``"never"``: on the
    plateau to the end) and the steps run."""
    keys = _heads_keys(seed_offset)
    if len(values) != len(keys):
        raise ValueError(f"need {len(keys)} unit values, got {len(values)}")
    config = _paper_grid(seed_offset)
    seeds = list(config.seeds)
    out = {
        "heads": list(config.heads),
        "d_heads": list(config.d_heads),
        "seeds": seeds,
        "budget": config.lm_steps,
        "final": {},
        "exit": {},
        "steps_run": {},
    }
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


def _pair_cells(heads, d_heads) -> set[tuple[int, int]]:
    """The cells ``(H, d_head)`` that enter a pair of :func:`lib.heads_vs_head_size`: ``(H, 2d)`` against ``(2H, d)``
    (the grid's last corner, most heads and the largest heads, enters none)."""
    cells = set()
    for i in range(len(d_heads) - 1):
        for j in range(len(heads) - 1):
            if heads[j + 1] == 2 * heads[j] and d_heads[i + 1] == 2 * d_heads[i]:
                cells |= {(heads[j], d_heads[i + 1]), (heads[j + 1], d_heads[i])}
    return cells


def heads_measures(summary: dict) -> dict:
    """What ``b-heads`` measures of B-heads, as chapter 6 does (:func:`lib.heads_vs_head_size` with
    :data:`HEADS_TIE`): on the seeds whose cells that enter a pair are all done (:func:`_pair_cells`), the share of decisive (H, d_head) pairs won by more
    heads, its interval resampling those seeds, and the control :func:`lib.heads_halves_control` (both need two
    seeds; a cell not run yet is left out of it). ``{}`` while no seed's pairs are complete."""
    from ...measures.comparisons import heads_halves_control, heads_vs_head_size
    from ...core.stats import group_bootstrap_interval

    heads, d_heads, seeds = summary["heads"], summary["d_heads"], summary["seeds"]
    final = summary["final"]
    needed = _pair_cells(heads, d_heads)
    complete = [i for i in range(len(seeds)) if all(final[f"{H},{dh}"][i] is not None for H, dh in needed)]
    if not complete:
        return {}
    loss = np.array(
        [
            [[np.nan if final[f"{H},{dh}"][i] is None else final[f"{H},{dh}"][i] for i in complete] for H in heads]
            for dh in d_heads
        ]
    )  # (d_head, H, seeds); NaN: a cell that enters no pair, not run yet
    pairs = heads_vs_head_size(loss, heads, d_heads, HEADS_TIE)
    n = len(complete)
    interval = (
        group_bootstrap_interval(lambda i: heads_vs_head_size(loss, heads, d_heads, HEADS_TIE, i)["share"], n)
        if n >= 2
        else None
    )
    exits = summary["exit"]
    left = {H: sum(isinstance(exits[f"{H},{dh}"][i], int) for dh in d_heads for i in complete) for H in heads}
    ran = {H: sum(exits[f"{H},{dh}"][i] is not None for dh in d_heads for i in complete) for H in heads}
    missing = [f"seed {seeds[i]}'s grid not done yet" for i in range(len(seeds)) if i not in complete]
    return {
        "B-heads": {
            "value": pairs["share"],
            "interval": interval,
            "control": heads_halves_control(loss, HEADS_TIE) if n >= 2 else None,
            "text": (
                f"doubling H beat doubling d_head (same d_model) in {pairs['more']} of "
                f"{pairs['more'] + pairs['bigger']} decisive pairs ({pairs['ties']} ties; mean final output-bit loss "
                f"over {n} seed{'s' if n > 1 else ''}); runs that left the plateau, per H: "
                + ", ".join(f"H={H}: {k} of {ran[H]}" for H, k in left.items())
            ),
            "incomplete": missing,
        }
    }


def b_heads(seed_offset: int = 0) -> PaperStudy:
    """Paper B's whole heads × head-size grid on the linear map, run to its budget or until solved well below the tie
    margin (module docstring): 54 units, the seeds moved by ``seed_offset``."""
    return PaperStudy(
        f"b-heads@{seed_offset}" if seed_offset else "b-heads",
        ("B-heads",),
        "paper B's heads × head-size grid on the linear map (S = 16, s = 3, H = 1 to 32, head sizes 4, 8, "
        "16, d_model = H × d_head, 10,000 steps of 8,192 tokens, lr 1e-3, 3 seeds), float32; a unit "
        "stops once its output-bit loss is below half the tie margin (0.005), after which it could move "
        "by less than the margin: the final loss of chapter 6's measure, without the steps of a solved run",
        _heads_units(seed_offset),
        "lib.studies.paper.heads:heads_summary",
        "lib.studies.paper.heads:heads_measures",
        seed_offset,
    )
