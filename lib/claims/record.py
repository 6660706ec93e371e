"""A claim checked in a chapter: the measured value, its interval and control, judged by the registry's rules.

A chapter calls :func:`claim` with the claim's id and what it measured; everything else (statement, criteria and
their reasons, what the control is) comes from the registry (:mod:`lib.claims.registry`), never from the chapter.

**Statuses.** A check on the book's own theory (*derived*) always has status ``derived``, with a verdict (it
holds, holds weakly, does not hold, says the opposite): our derivation checked against itself is never counted for
or against a paper. For a check on trained or sampled models, in this order:

1. ``incomplete`` when part of the measurement was not made (a paper-scale study done in part), whatever the value;
2. ``contradicted`` if the contradicted criterion holds (on the whole interval, when there is one: a contradiction
   must be as sure as a reproduction), except at a setting smaller than the paper's (FAST scale of paper B's
   claims), where it is ``not at our scale``: a smaller model failing says nothing against the paper's;
3. ``not at our scale`` when the value passes a criterion (reproduced, or the weaker partial one) that its negative
   control passes too: a measure that cannot tell the effect from its absence shows nothing;
4. ``reproduced`` if the reproduced criterion holds **and** every one of these does: the 90 % bootstrap interval
   over seeds or prompts lies wholly past the threshold (for a yes/no claim: the condition holds in the resamples
   of that interval, :func:`condition_interval`); the negative control was measured and fails the same
   criterion; the status was the same in every robustness run (``data/robustness.json``: other seed offsets and
   CPU kernels); the claim's setting was not chosen to match the paper (the registry's ``choice``: an agreement that
   a choice builds in is not a reproduction); the value does not come from a committed study with fixed seeds. Each
   requirement that is not met is listed in the record (``unmet``) and the status is ``partial``;
5. ``partial`` if the partial criterion holds (on the whole interval, when there is one); otherwise
   ``not at our scale``. A partial (or better) reading must hold at no fewer than half of the other seed offsets of
   the robustness runs, else the row is ``not at our scale`` (fragile: an accident of one seed).

A value of ``None`` is a run that has not been made (paper scale, the hub): ``not run``.

The chapter shows the claim (HTML box) and embeds a JSON record in that output's metadata, under :data:`CLAIM_KEY`,
from which the ledger is built. What guards the statuses is the committed snapshot ``data/ledger.json``
(``tools/bookctl.py ledger --check``).
"""

from __future__ import annotations

import html
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Mapping

import numpy as np

from .registry import SMALLER_SETTING, Check, get_check

__all__ = [
    "CLAIM_KEY",
    "STATUSES",
    "COUNTED",
    "ClaimRecord",
    "claim",
    "build_record",
    "condition_interval",
    "judge",
    "robustness_runs",
]

CLAIM_KEY = "attention_book_claim"
STATUSES = ("reproduced", "partial", "not at our scale", "contradicted", "incomplete", "derived", "not run")
COUNTED = ("reproduced", "partial", "not at our scale", "contradicted", "incomplete")  # statuses of the papers' claims
STATUS_COLOR = {
    "reproduced": "#2e7d32",
    "partial": "#ef6c00",
    "not at our scale": "#c62828",
    "contradicted": "#6a1b9a",
    "incomplete": "#8d6e63",
    "derived": "#455a64",
    "not run": "#757575",
}
ROBUSTNESS_FILE = "robustness.json"


# --------------------------------------------------------------------------------------------- robustness runs
def robustness_runs(path: str | Path | None = None) -> list[dict]:
    """The committed robustness runs (``data/robustness.json``): ``[{"label", "statuses": {key: status}}]``.

    Each run executed every chapter at another seed offset (``BOOK_SEED``) or CPU kernel
    (``ATEN_CPU_CAPABILITY``) and recorded the status each claim had *before* this requirement was applied.
    An absent file means no such run exists yet.
    """
    if path is None:
        from ..core.env import DATA_DIR

        path = Path(DATA_DIR) / ROBUSTNESS_FILE
    path = Path(path)
    if not path.exists():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    runs = data.get("runs", [])
    if not isinstance(runs, list) or not all(isinstance(r, dict) and "statuses" in r for r in runs):
        raise ValueError(f"{path}: 'runs' must be a list of {{'label', 'statuses'}} objects")
    return runs


# --------------------------------------------------------------------------------------------- judging
def _as_value(name: str, x, boolean: bool):
    if x is None:
        return None
    if boolean:
        if not isinstance(x, (bool, np.bool_)):
            raise TypeError(f"{name}: a qualitative (is_true) claim takes a bool, got {type(x).__name__}")
        return bool(x)
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {type(x).__name__} {x!r}")
    return float(x)


def _robust_counts(runs: Mapping[str, str], raw: str) -> dict:
    """Per kind of robustness run (seed offsets ``BOOK_SEED=k``, CPU kernels otherwise): ``[same, at least partial,
    n]`` of the raw statuses ``runs`` ({label: status}) against this build's ``raw`` status."""
    out = {}
    for kind, labels in (
        ("seeds", [k for k in runs if k.startswith("BOOK_SEED")]),
        ("kernels", [k for k in runs if not k.startswith("BOOK_SEED")]),
    ):
        if labels:
            same = sum(runs[k] == raw for k in labels)
            good = sum(runs[k] in ("reproduced", "partial") for k in labels)
            out[kind] = [same, good, len(labels)]
    return out


#: What a derived check's value says of the book's own theory (its status is always *derived*, never counted).
DERIVED_VERDICTS = ("holds", "holds weakly", "does not hold", "says the opposite")


def judge(
    check: Check,
    value,
    *,
    control=None,
    interval=None,
    robust: Mapping[str, str] | None = None,
    choice: str = "",
    committed: str | None = None,
    incomplete=(),
    smaller: str = "",
) -> tuple[str, str, list[str]]:
    """``(status, status before the robustness requirement, unmet requirements)`` of one check (module docstring).

    ``interval`` is ``(lo, hi)`` or ``None``; ``robust`` is ``{run label: the raw status that run recorded}`` of the
    robustness runs (labels ``BOOK_SEED=k`` are seed offsets, the others CPU kernels), or ``None`` when no run has
    recorded this check; ``choice`` is the claim's chosen-to-match-the-paper note; ``committed`` names the committed
    study with fixed seeds the value comes from (default: the check's own ``committed``); ``incomplete`` lists
    parts of the measurement that were not made (a paper-scale study done in part): the status is then
    *incomplete*, whatever the value; ``smaller`` describes our setting where it is smaller than the paper's (FAST
    scale of a paper-B check): a contradiction found there is *not at our scale*. For a derived check the second
    element is its verdict (:data:`DERIVED_VERDICTS`).
    """
    if value is None:
        return "not run", "not run", []
    rep, part, contra = check.reproduced.criterion, check.partial, check.contradicted
    if check.kind == "derived":  # our own theory: shown with its verdict, never a status of the papers' claims
        verdict = (
            "says the opposite"
            if contra is not None and contra.criterion(value)
            else "holds"
            if rep(value)
            else "holds weakly"
            if part is not None and part.criterion(value)
            else "does not hold"
        )
        return "derived", verdict, []
    raw, unmet = _judge_value(check, value, control, interval, choice, incomplete, smaller)
    if raw in ("not at our scale", "contradicted", "incomplete"):
        return raw, raw, unmet
    committed = check.committed if committed is None else committed
    counts = None if robust is None else _robust_counts(robust, raw)
    status = raw
    if committed:
        if raw == "reproduced":
            unmet.append(
                f"measured on a committed study with fixed seeds ({committed}): other seed offsets need the study rerun"
            )
            status = "partial"
    elif counts is None:
        if raw == "reproduced":
            unmet.append("no robustness runs (other seeds, CPU kernels)")
            status = "partial"
    else:
        seeds = counts.get("seeds")
        if seeds and 2 * seeds[1] < seeds[2]:  # not even partial at half the other seed offsets: an accident of seed 0
            return (
                "not at our scale",
                raw,
                unmet
                + [f"fragile: partial or better at {seeds[1]} of {seeds[2]} other seed offsets (at least half needed)"],
            )
        if raw == "reproduced":
            for kind, (same, _, n) in counts.items():
                if same < n:
                    unmet.append(
                        f"fragile: the status held at {same} of {n} "
                        f"{'other seed offsets' if kind == 'seeds' else 'CPU kernels'}"
                    )
                    status = "partial"
    return status, raw, unmet


def _judge_value(check: Check, value, control, interval, choice, incomplete, smaller) -> tuple[str, list[str]]:
    """The status of a trained or sampled check from its own measurement (before robustness and fixed seeds)."""
    rep, part, contra = check.reproduced.criterion, check.partial, check.contradicted
    if incomplete:
        return "incomplete", list(incomplete)
    if contra is not None and contra.criterion(value) and (interval is None or contra.criterion.holds_on(*interval)):
        if not smaller:
            return "contradicted", []
        return "not at our scale", [
            f"the contradicted criterion holds, at a setting smaller than the paper's "
            f"({smaller}): not a contradiction of the paper"
        ]
    if rep(value):
        bound, status = rep, "reproduced"
    elif part is not None and part.criterion(value) and (interval is None or part.criterion.holds_on(*interval)):
        bound, status = part.criterion, "partial"  # with an interval, partial needs all of it past the bound too
    else:
        return "not at our scale", []
    if control is not None and bound(control):  # the measure cannot tell the effect from its absence
        return "not at our scale", [
            f"the control passes the {status} criterion too: the measure does not tell the effect from its absence"
        ]
    unmet = []
    if status == "reproduced":
        if interval is None:
            unmet.append("no interval over seeds or prompts")
        elif not rep.holds_on(*interval):
            unmet.append(
                "the interval is not wholly past the threshold"
                if rep.op != "is_true"
                else "the condition fails in a resample inside the 90 % bootstrap interval"
            )
    if not check.control:
        unmet.append("no negative control designed")
    elif control is None:
        unmet.append("the control was not measured")
    if choice and status == "reproduced":
        unmet.append("the setting was chosen to match the paper: the agreement is built in")
    return ("partial" if unmet else status), unmet


# --------------------------------------------------------------------------------------------- records
@dataclass(frozen=True)
class ClaimRecord:
    """One claim as checked in one chapter run (JSON-serialisable; the ledger's row)."""

    id: str
    source: str  # "A", "B" or "ours"
    chapter: str
    kind: str
    statement: str
    source_value: str
    measure: str
    measured: float | bool | None
    measured_text: str
    interval: dict | None
    control_case: str
    control: float | bool | None
    criterion: str
    why: str
    partial_criterion: str
    status: str
    raw_status: str
    unmet: list
    scale: str
    choice: str = ""
    note: str = ""
    extra: dict = field(default_factory=dict)
    partial_why: str = ""

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping) -> "ClaimRecord":
        """The record from its JSON; a non-finite number that the kernel wrote as a string ("inf") is a float again."""
        data = dict(data)
        for key in ("measured", "control"):
            data[key] = _finite_or_float(data.get(key))
        if isinstance(data.get("interval"), Mapping):
            data["interval"] = {k: _finite_or_float(v) for k, v in data["interval"].items()}
        return cls(**data)

    @property
    def key(self) -> str:
        return f"{self.chapter}/{self.id}"

    def interval_text(self) -> str:
        i = self.interval
        if i is None:
            return ""
        if isinstance(self.measured, bool):  # the indicator of a yes/no condition over bootstrap resamples
            tail, n = 100 * (1 - i["level"]) / 2, i["n"]
            if i["lo"] >= 1:
                return f"(holds in more than {100 - tail:.0f} % of bootstrap resamples, n = {n})"
            if i["hi"] < 1:
                return f"(fails in at least {100 - tail:.0f} % of bootstrap resamples, n = {n})"
            return f"(fails in at least {tail:.0f} % of bootstrap resamples, n = {n})"
        return f"[{i['lo']:.3g}, {i['hi']:.3g}] ({100 * i['level']:.0f} %, n = {i['n']})"

    def robust_text(self) -> str:
        """``kept at k of n other seed offsets, j of m CPU kernels`` (empty when none exists or the study is
        committed)."""
        r = self.extra.get("robust")
        if not r:
            return ""
        if isinstance(r, list):  # a record of the earlier form: [kept, runs]
            return f"kept in {r[0]} of {r[1]} robustness runs"
        parts = [
            f"{r[k][0]} of {r[k][2]} {name}"
            for k, name in (("seeds", "other seed offsets"), ("kernels", "CPU kernels"))
            if k in r
        ]
        return "kept at " + ", ".join(parts)

    @property
    def status_text(self) -> str:
        """The status as the ledger shows it: a derived check with its verdict (``derived: holds``)."""
        return f"derived: {self.raw_status}" if self.status == "derived" else self.status

    def control_text(self) -> str:
        if not self.control_case:
            return "none designed"
        if self.control is None:
            return "not measured"
        value = ("yes" if self.control else "no") if isinstance(self.control, bool) else f"{self.control:.3g}"
        return f"{value} ({'passes' if self.extra.get('control_passes') else 'fails'})"

    # display -------------------------------------------------------------------------------------
    def __str__(self) -> str:
        lines = [
            f"[{self.id}] {self.statement}",
            f"  source: {self.source_value}",
            f"  measured ({self.kind}): {self.measured_text} {self.interval_text()}".rstrip(),
            f"  control: {self.control_case or 'none designed'} -> {self.control_text()}",
            f"  reproduced if {self.criterion} ({self.why}) -> {self.status}",
        ]
        lines += [f"  unmet: {u}" for u in self.unmet]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        e = html.escape
        color = STATUS_COLOR[self.status]
        partial = (
            f"; partial if {e(self.partial_criterion)} ({e(self.partial_why)})"
            if self.partial_criterion
            else f"; no partial level ({e(self.partial_why)})"
            if self.partial_why
            else ""
        )
        interval = f" &nbsp;90 % interval {e(self.interval_text())}" if self.interval else ""
        control = (
            f"<br><strong>Control:</strong> {e(self.control_case)} → {e(self.control_text())}"
            if self.control_case
            else "<br><strong>Control:</strong> none designed yet"
        )
        if self.kind == "derived":
            control = ""
        unmet = f"<br><em>Not yet shown: {e('; '.join(self.unmet))}.</em>" if self.unmet else ""
        choice = f"<br><em>Chosen to match the paper: {e(self.choice)}.</em>" if self.choice else ""
        note = f"<br><em>{e(self.note)}</em>" if self.note else ""
        where = "paper B's own" if self.scale == "paper" else "FAST"
        scale = f" at {where} scale" if self.source == "B" or self.scale == "paper" else ""
        return (
            f'<details class="claim-box" style="border-left:4px solid {color};padding:0.4em 0.8em;margin:0.5em 0;'
            f'background:rgba(127,127,127,0.06)">'
            f"<summary><strong>{e(self.id)}</strong>{e(scale)}: {e(self.statement)} &nbsp;→&nbsp; "
            f'<strong style="color:{color}">{e(self.status_text)}</strong></summary>'
            f"<strong>Claim {e(self.id)}</strong> (paper {e(self.source)}): {e(self.statement)}<br>"
            f"<strong>Source:</strong> {e(self.source_value)}<br>"
            f"<strong>Measured here</strong> ({e(self.kind)}, {e(self.scale)} scale): {e(self.measured_text)}{interval}"
            f"{control}<br>"
            f"<strong>Criterion:</strong> reproduced if {e(self.criterion)} ({e(self.why)}){partial} &nbsp;→&nbsp; "
            f'<strong style="color:{color}">{e(self.status_text)}</strong>{unmet}{choice}{note}</details>'
        )

    def _ipython_display_(self) -> None:
        """Show nothing when the record is a cell's value: :func:`claim` has displayed it already."""

    def _bundle(self) -> tuple[dict, dict]:
        """The display data and the output metadata that carries the record."""
        return {"text/plain": str(self), "text/html": self._repr_html_()}, {CLAIM_KEY: self.to_json()}


def _finite_or_float(x):
    """``x``, or the float that a string such as ``"inf"`` or ``"-inf"`` names (ipykernel writes non-finite numbers of
    output metadata as strings)."""
    if isinstance(x, str) and x.strip().lower() in ("inf", "-inf", "+inf", "infinity", "-infinity", "nan"):
        return float(x)
    return x


def _format(value, fmt: str, unit: str) -> str:
    if value is None:
        return "not run"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return f"{format(int(value) if fmt == 'd' else value, fmt)} {unit}".strip()


def claim(
    id: str,
    value,
    *,
    control=None,
    samples=None,
    interval=None,
    text: str | None = None,
    note: str = "",
    extra: Mapping | None = None,
    show: bool = True,
    robustness: list[dict] | None = None,
) -> ClaimRecord:
    """Check the registered claim ``id`` in the current chapter with the measured ``value``; show and record it.

    Parameters
    ----------
    id : str
        A claim id of the registry, with a check registered for this chapter.
    value : float, bool or None
        The measurement the registry's check names (a bool for a qualitative claim). ``None``: not run. With
        ``samples`` and no ``value``, the check's statistic of the samples.
    control : float or bool, optional
        The same measurement on the check's negative control.
    samples : array-like, optional
        The per-seed (or per-prompt) values; their 90 % percentile-bootstrap interval of the check's statistic
        (:func:`lib.core.stats.bootstrap_interval`) is recorded and must lie wholly past the threshold. A single sample
        (e.g. only one seed qualified at this seed offset) gives the value without an interval, which cannot be
        *reproduced*; none at all is a ``ValueError``.
    interval : lib.core.stats.Interval, optional
        An interval computed by the chapter's study instead of ``samples``. For a qualitative claim, the interval of
        its condition's indicator over bootstrap resamples (:func:`condition_interval`); ``value`` may then be
        ``None``.
    text : str, optional
        How the measured value is shown (default: the number in the check's format).
    note : str
        One line of context shown under the claim.
    extra : mapping, optional
        JSON-serialisable details kept in the record.
    show : bool
        Display the claim box (and embed the ledger record) in the notebook output.
    robustness : list of dict, optional
        Robustness runs to judge by (default: ``data/robustness.json``).
    """
    from ..core.context import context

    ctx = context()
    record = build_record(
        id,
        ctx.chapter,
        value,
        control=control,
        samples=samples,
        interval=interval,
        text=text,
        note=note,
        extra=extra,
        robustness=robustness,
        scale=ctx.scale,
        seed_offset=ctx.seed_offset,
        smoke=ctx.smoke,
    )
    if show:
        _display(record)
    return record


def build_record(
    id: str,
    chapter: str,
    value,
    *,
    control=None,
    samples=None,
    interval=None,
    text: str | None = None,
    note: str = "",
    extra: Mapping | None = None,
    robustness: list[dict] | None = None,
    scale: str = "fast",
    seed_offset: int = 0,
    smoke: int = 0,
    committed: str | None = None,
    incomplete=(),
) -> ClaimRecord:
    """The :class:`ClaimRecord` of claim ``id``'s check in ``chapter``, judged by the registry (what :func:`claim`
    records, without a chapter's context: the paper-scale column is built this way from committed studies).

    Arguments as in :func:`claim`, and the context: ``scale`` (``"fast"`` or ``"paper"``), ``seed_offset``,
    ``smoke`` (the smoke run's cut factor, 0 outside one), ``committed`` and ``incomplete`` (:func:`judge`).
    """
    from ..core.intervals import bootstrap_interval  # NaN on cut data in a smoke run
    from ..core.stats import Interval

    reg, check = get_check(id, chapter)
    boolean = check.reproduced.criterion.op == "is_true"
    if samples is not None and interval is not None:
        raise ValueError(f"claim {id}: give samples= or interval=, not both")
    if samples is not None:
        if boolean:
            raise ValueError(f"claim {id}: a qualitative claim has no samples (give interval=condition_interval(...))")
        stat = np.median if check.statistic == "median" else np.mean
        samples = np.asarray(samples, dtype=float).ravel()
        if samples.size == 0 and smoke:  # a cut run may qualify no seed: not run, not an error
            samples, extra = None, {**(extra or {}), "smoke_no_samples": True}
        elif samples.size == 0:
            raise ValueError(f"claim {id}: no samples (pass value=None for a run that was not made)")
        if samples is None:
            pass
        elif samples.size == 1:  # one seed: the value without an interval (so it cannot be reproduced), not an error
            extra = {**(extra or {}), "samples": 1}
            if value is None:
                value = float(samples[0])
        else:
            interval = bootstrap_interval(samples, stat)
            if value is None:
                value = interval.value
    if smoke and interval is not None and isinstance(interval, Interval) and math.isnan(interval.value):
        interval, extra = None, {**(extra or {}), "smoke_nan_interval": True}  # undefined on cut data (lib.core.stats)
    if interval is not None and not isinstance(interval, Interval):
        raise TypeError(f"claim {id}: interval must be a lib.core.stats.Interval, got {type(interval).__name__}")
    if boolean and interval is not None:
        if not {interval.value, interval.lo, interval.hi} <= {0.0, 1.0}:
            raise ValueError(
                f"claim {id}: a qualitative claim's interval is its condition's indicator "
                f"(lib.claims.condition_interval), got {interval}"
            )
        if value is None:
            value = bool(interval.value)
        elif bool(value) != bool(interval.value):
            raise ValueError(f"claim {id}: value {value} disagrees with its interval's value {interval.value}")
    value = _as_value(f"claim {id}: value", value, boolean)
    control = _as_value(f"claim {id}: control", control, boolean)
    if smoke and isinstance(value, float) and math.isnan(value):  # a cut run may measure nothing: not an error
        value, extra = None, {**(extra or {}), "smoke_nan": True}
    if isinstance(value, float) and math.isnan(value):
        raise ValueError(f"claim {id}: the measured value is NaN")
    if isinstance(control, float) and math.isnan(control):  # e.g. no run qualified for the control at this seed
        control, extra = None, {**(extra or {}), "control_nan": True}  # judged as a control not measured

    runs = robustness_runs() if robustness is None else robustness
    key = f"{chapter}/{id}"
    seen = {r.get("label", str(k)): r.get("statuses", {}).get(key, "not recorded") for k, r in enumerate(runs)}
    bounds = None if interval is None else (interval.lo, interval.hi)
    smaller = SMALLER_SETTING.get((id, chapter), "") if scale == "fast" else ""
    how = dict(
        control=control,
        interval=bounds,
        choice=reg.choice,
        committed=committed,
        incomplete=list(incomplete),
        smaller=smaller,
    )  # a run that did not reach the claim counts as changed
    status, raw, unmet = judge(check, value, robust=seen or None, **how)
    if smoke:  # the smoke run of the paper scale (lib.core.smoke): its numbers mean nothing, no claim is judged
        status = raw = "not run"
        unmet = [f"smoke run (BOOK_SMOKE={smoke}): the paper scale with steps, seeds and tokens cut; not judged"]
    details = dict(extra or {})
    if control is not None:
        details["control_passes"] = bool(check.reproduced.criterion(control))
    if seen and not (check.committed or committed) and check.kind != "derived":  # fixed seeds or theory: vacuous
        details["robust"] = _robust_counts(seen, raw)
    details["seed_offset"] = seed_offset
    record = ClaimRecord(
        id=id,
        source=reg.source,
        chapter=chapter,
        kind=check.kind,
        statement=reg.statement,
        source_value=reg.source_value,
        measure=check.measure,
        measured=value,
        measured_text=text if text is not None else _format(value, check.fmt, check.unit),
        interval=None
        if interval is None
        else {"value": interval.value, "lo": interval.lo, "hi": interval.hi, "level": interval.level, "n": interval.n},
        control_case=check.control,
        control=control,
        criterion=check.reproduced.criterion.describe(),
        why=check.reproduced.why,
        partial_criterion=check.partial.criterion.describe() if check.partial else "",
        status=status,
        raw_status=raw,
        unmet=unmet,
        scale=scale,
        choice=reg.choice,
        note=note,
        extra=details,
        partial_why=check.partial.why if check.partial else check.no_partial,
    )
    json.dumps(record.to_json())  # fail early if extra is not JSON-serialisable
    return record


def condition_interval(
    condition: Callable[..., bool], *groups, level: float = 0.9, resamples: int = 2000, seed: int = 0
):
    r"""Bootstrap interval of a yes/no condition's indicator, resampling the units (seeds, data sets) of each group.

    ``groups`` are arrays whose **last** axis holds the independent units (arrays measured on the same units, e.g. two
    heads trained on the same data sets, go in one group stacked on a leading axis, so that they are resampled
    together). Each resample draws every group's units with replacement, within the group
    (:func:`lib.core.stats.group_bootstrap_interval`), and evaluates ``condition(*resampled_groups)``; the interval is the
    percentile interval at ``level`` of the indicator :math:`\mathbb 1[\text{condition}]`. Its lower end is 1
    exactly when the condition fails in fewer than :math:`(1 - \text{level})/2` of the resamples, the yes/no form
    of "the interval lies wholly past the threshold"; ``value`` is the condition on the units as they are.
    """
    from ..core.intervals import group_bootstrap_interval  # NaN on cut data in a smoke run

    arrays = [np.asarray(g, dtype=float) for g in groups]
    if not arrays:
        raise ValueError("condition_interval needs at least one group")
    for k, a in enumerate(arrays):
        if a.ndim < 1 or a.shape[-1] < 2:
            raise ValueError(f"group {k}: the last axis holds the units and needs at least 2, got shape {a.shape}")

    def indicator(*idx) -> float:
        return float(bool(condition(*(a[..., i] for a, i in zip(arrays, idx)))))

    return group_bootstrap_interval(
        indicator, [a.shape[-1] for a in arrays], level=level, resamples=resamples, seed=seed
    )


def _display(record: ClaimRecord) -> None:
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        print(record)
        return
    if get_ipython() is None:
        print(record)
        return
    data, metadata = record._bundle()
    display(data, raw=True, metadata=metadata)
