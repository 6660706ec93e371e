"""What chapters read off the committed paper-scale studies (:mod:`lib.studies.paper`): the heads grid as arrays,
the calibration's costs, and the token-mixer study's sentences and curves."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..core.cache import DATA_DIR
from ..measures import SOLVED
from ..studies.paper import study_progress, study_record
from ..studies._study import unit_key
from ..studies.paper.mixers import mixer_measures, mixer_rates
from ..studies.paper.seeds import _PRECISIONS, bf16_calibration

__all__ = ["heads_grid", "calibration_costs", "tuning_exits", "mixer_finals", "mixer_solved_at", "mixer_view"]


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
    return {
        "heads": list(heads),
        "d_heads": list(d_heads),
        "seeds": list(seeds),
        "loss": loss,
        "done": done,
        "left": left,
    }


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
            parts.append(
                f"{labels.get(arch, arch)} "
                + (
                    f"{sum(x < SOLVED for x in last)} of {len(last)} solved, mean last loss {np.mean(last):.3f}"
                    if last
                    else "none done"
                )
            )
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
            parts.append(
                f"{labels.get(arch, arch)} "
                + (", ".join(f"{a:,}" if a is not None else f"not by {budget:,}" for a in at) if at else "none done")
            )
            if len(done) == len(summary["seeds"]):
                # (step, never solved), a seed solved at the budget before one never solved: the middle seed(s)
                ranked = sorted((budget if a is None else a, a is None) for a in at)
                n = len(ranked)
                middle = ranked[(n - 1) // 2 : n // 2 + 1]
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
    out["scores"] = (
        none
        if tuned is None
        else " · ".join(
            f"{labels.get(a, a)} " + ", ".join("–" if x is None else f"{x:.3f}" for x in v["scores"])
            for a, v in tuned["archs"].items()
        )
        + f" (rates {', '.join(f'{r:g}' for r in tuned['lrs'])})"
    )
    out["left"] = none if tuned is None else tuning_exits(tuned, labels)
    summary = None if comparison is None else comparison["summary"]
    measured = {} if summary is None else mixer_measures(summary)
    out["ratio"] = measured["B-mixer"]["text"] if measured else none
    out["finals"] = none if summary is None else mixer_finals(summary, labels)
    out["solved_at"] = none if summary is None else mixer_solved_at(summary, labels)
    out["summary"] = summary
    return out
