"""Claims: one paper statement, our measured number beside it, a status, and an assert.

A chapter calls :func:`claim` once per claim it tests. The call

1. decides the status from the measured value: ``reproduced`` when the ``reproduced`` criterion holds, else
   ``partial`` when a ``partial`` criterion is given and holds, else ``not at our scale``;
2. shows the claim in the chapter (HTML box) and embeds a JSON record in that output's metadata, under the key
   :data:`CLAIM_KEY`, from which the book's claims ledger is generated (metadata, not a MIME type of its own, so
   renderers that do not know it have nothing to skip);
3. optionally asserts that the status equals ``expect`` (chapters pass none: a status is not typed in advance). What
   guards the statuses is the committed snapshot ``data/ledger.json``: the build compares every status with it and
   fails on a change, and ``make accept-ledger`` rewrites it, so a change of status is a visible diff in a commit
   that says why (``tools/bookctl.py ledger --check``).

The ledger (:func:`collect_claims`, :func:`ledger_markdown`) is built from executed notebooks, never typed by hand.
"""

from __future__ import annotations

import html
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

__all__ = [
    "CLAIM_KEY",
    "STATUSES",
    "Criterion",
    "between",
    "at_least",
    "at_most",
    "within",
    "is_true",
    "ClaimRecord",
    "ClaimMismatch",
    "claim",
    "collect_claims",
    "ledger_markdown",
]

CLAIM_KEY = "attention_book_claim"
STATUSES = ("reproduced", "partial", "not at our scale", "contradicted")
SOURCES = ("A", "B", "ours")
_STATUS_MARK = {"reproduced": "**reproduced**", "partial": "**partial**", "not at our scale": "**not at our scale**",
                "contradicted": "**contradicted**"}  # fmt: skip
_STATUS_COLOR = {"reproduced": "#2e7d32", "partial": "#ef6c00", "not at our scale": "#c62828", "contradicted": "#6a1b9a"}


# --------------------------------------------------------------------------------------------- criteria
@dataclass(frozen=True)
class Criterion:
    """A test on a measured value. Build it with :func:`between`, :func:`at_least`, :func:`at_most`,
    :func:`within` or :func:`is_true`."""

    op: str
    lo: float | None = None
    hi: float | None = None
    text: str = ""

    def __call__(self, value: float | bool) -> bool:
        if self.op == "is_true":
            return bool(value)
        x = float(value)
        if math.isnan(x):
            return False
        ok_lo = self.lo is None or x >= self.lo
        ok_hi = self.hi is None or x <= self.hi
        return ok_lo and ok_hi

    def describe(self) -> str:
        return self.text


def _finite(name: str, x: float) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        raise ValueError(f"{name} must be a finite number, got {x!r}")
    return float(x)


def between(lo: float, hi: float) -> Criterion:
    """``lo <= measured <= hi`` (both finite, ``lo < hi``)."""
    lo, hi = _finite("lo", lo), _finite("hi", hi)
    if not lo < hi:
        raise ValueError(f"between(lo, hi) needs lo < hi, got lo={lo}, hi={hi}")
    return Criterion("between", lo, hi, f"in [{lo:g}, {hi:g}]")


def at_least(lo: float) -> Criterion:
    """``measured >= lo``."""
    lo = _finite("lo", lo)
    return Criterion("at_least", lo, None, f"≥ {lo:g}")


def at_most(hi: float) -> Criterion:
    """``measured <= hi``."""
    hi = _finite("hi", hi)
    return Criterion("at_most", None, hi, f"≤ {hi:g}")


def within(target: float, *, rel: float | None = None, tol: float | None = None) -> Criterion:
    """``|measured - target| <= t`` with ``t = rel*|target|`` or ``t = tol`` (exactly one of them)."""
    target = _finite("target", target)
    if (rel is None) == (tol is None):
        raise ValueError("within() needs exactly one of rel= or tol=")
    if rel is not None:
        rel = _finite("rel", rel)
        if not rel > 0:
            raise ValueError(f"rel must be > 0, got {rel}")
        t, text = rel * abs(target), f"within {100 * rel:g} % of {target:g}"
    else:
        t = _finite("tol", tol)
        if not t > 0:
            raise ValueError(f"tol must be > 0, got {t}")
        text = f"within ±{t:g} of {target:g}"
    return Criterion("within", target - t, target + t, text)


def is_true(text: str = "holds") -> Criterion:
    """The measured value is a boolean computed by the chapter (a qualitative claim)."""
    return Criterion("is_true", None, None, text)


# --------------------------------------------------------------------------------------------- records
@dataclass(frozen=True)
class ClaimRecord:
    """One claim as tested in one chapter run (JSON-serialisable; the ledger's row)."""

    id: str
    source: str  # "A", "B" or "ours"
    chapter: str
    statement: str
    source_value: str
    measured: float | bool
    measured_text: str
    criterion: str
    partial_criterion: str
    status: str
    expected: str | None
    scale: str
    note: str = ""
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping) -> "ClaimRecord":
        return cls(**dict(data))

    # display -------------------------------------------------------------------------------------
    def __str__(self) -> str:
        return (
            f"[{self.id}] {self.statement}\n  source: {self.source_value}\n  measured: {self.measured_text}"
            f" (reproduced if {self.criterion}) -> {self.status}"
        )

    def _repr_html_(self) -> str:
        e = html.escape
        color = _STATUS_COLOR[self.status]
        note = f"<br><em>{e(self.note)}</em>" if self.note else ""
        partial = f"; partial if {e(self.partial_criterion)}" if self.partial_criterion else ""
        return (
            f'<div class="claim-box" style="border-left:4px solid {color};padding:0.4em 0.8em;margin:0.5em 0;'
            f'background:rgba(127,127,127,0.06)">'
            f"<strong>Claim {e(self.id)}</strong> (paper {e(self.source)}): {e(self.statement)}<br>"
            f"<strong>Source:</strong> {e(self.source_value)} &nbsp;·&nbsp; "
            f"<strong>Measured here</strong> ({e(self.scale)} scale): {e(self.measured_text)}<br>"
            f"<strong>Criterion:</strong> reproduced if {e(self.criterion)}{partial} &nbsp;→&nbsp; "
            f'<strong style="color:{color}">{e(self.status)}</strong>{note}</div>'
        )

    def _ipython_display_(self) -> None:
        """Show nothing when the record is a cell's value: :func:`claim` has displayed it already."""

    def _bundle(self) -> tuple[dict, dict]:
        """The display data and the output metadata that carries the record."""
        return {"text/plain": str(self), "text/html": self._repr_html_()}, {CLAIM_KEY: self.to_json()}


class ClaimMismatch(AssertionError):
    """A claim's status differs from the status its chapter expects."""


def _format(value: float | bool, fmt: str, unit: str) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    text = format(value, fmt)
    return f"{text} {unit}".strip()


def claim(
    id: str,
    *,
    statement: str,
    source_value: str,
    measured: float | bool,
    reproduced: Criterion,
    partial: Criterion | None = None,
    contradicted: Criterion | None = None,
    expect: str | Mapping[str, str | None] | None = None,
    source: str | None = None,
    fmt: str = ".3g",
    unit: str = "",
    measured_text: str | None = None,
    note: str = "",
    extra: Mapping | None = None,
    show: bool = True,
) -> ClaimRecord:
    """Record one claim of a paper with our measured value, show it, and assert its status.

    Parameters
    ----------
    id : str
        Stable identifier, e.g. ``"A-soft-order"`` (ids are stable once used; the ledger groups by them).
    statement : str
        What the source claims, in one sentence.
    source_value : str
        The source's number or qualitative statement, e.g. ``"≈300 samples"``.
    measured : float or bool
        Our measured value (a boolean for a qualitative claim tested with :func:`is_true`).
    reproduced, partial : Criterion
        The status is ``reproduced`` if ``reproduced(measured)``, else ``partial`` if ``partial(measured)``,
        else ``not at our scale``.
    contradicted : Criterion, optional
        Our data say the opposite of the claim: checked first; ``contradicted`` if it holds.
    expect : str or mapping, optional
        The status expected (default: none, nothing asserted; the ledger snapshot guards statuses), or ``{"fast": ..., "full": ...}`` per scale. A mismatch raises
        :class:`ClaimMismatch` (an ``AssertionError``), which fails the chapter in CI. ``None`` for a scale: no
        status is expected there (a run that has never been made has no expected outcome); it is recorded only.
    source : {"A", "B", "ours"}, optional
        Inferred from the id prefix ``A-`` / ``B-``, otherwise ``"ours"``.
    fmt, unit, measured_text
        How the measured value is shown; ``measured_text`` overrides the formatted number.
    note : str
        One line of context shown under the claim (e.g. "our choice: ...").
    extra : mapping, optional
        JSON-serialisable details kept in the record.
    show : bool
        Display the claim box (and embed the ledger record) in the notebook output.
    """
    from . import book

    ctx = book.context()
    if not isinstance(id, str) or not id.strip():
        raise ValueError(f"claim id must be a non-empty string, got {id!r}")
    for name, text in (("statement", statement), ("source_value", source_value)):
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{name} must be a non-empty string, got {text!r}")
    if not isinstance(reproduced, Criterion):
        raise TypeError(f"reproduced must be a Criterion (between/at_least/at_most/within/is_true), got {reproduced!r}")
    for name, crit in (("partial", partial), ("contradicted", contradicted)):
        if crit is not None and not isinstance(crit, Criterion):
            raise TypeError(f"{name} must be a Criterion or None, got {crit!r}")
    if isinstance(measured, bool) != (reproduced.op == "is_true"):
        raise TypeError(f"claim {id}: a boolean measured value goes with is_true() and only with it, got {measured!r}")
    if not isinstance(measured, bool):
        if not isinstance(measured, (int, float)) or isinstance(measured, complex):
            raise TypeError(f"claim {id}: measured must be a number or a bool, got {type(measured).__name__}")
        measured = float(measured)
    if source is None:
        source = id.split("-", 1)[0] if id.split("-", 1)[0] in ("A", "B") else "ours"
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
    if expect is None or isinstance(expect, str):
        expected = expect
    else:
        if set(expect) != {"fast", "full"}:
            raise ValueError(f"expect mapping needs exactly the keys 'fast' and 'full', got {sorted(expect)}")
        expected = expect[ctx.scale]
    if expected is not None and expected not in STATUSES:
        raise ValueError(f"expect must be one of {STATUSES} or None, got {expected!r}")

    if contradicted is not None and contradicted(measured):
        status = "contradicted"
    elif reproduced(measured):
        status = "reproduced"
    elif partial is not None and partial(measured):
        status = "partial"
    else:
        status = "not at our scale"

    record = ClaimRecord(
        id=id,
        source=source,
        chapter=ctx.chapter,
        statement=statement.strip(),
        source_value=source_value.strip(),
        measured=measured,
        measured_text=measured_text if measured_text is not None else _format(measured, fmt, unit),
        criterion=reproduced.describe(),
        partial_criterion=partial.describe() if partial is not None else "",
        status=status,
        expected=expected,
        scale=ctx.scale,
        note=note,
        extra=dict(extra or {}),
    )
    json.dumps(record.to_json())  # fail early if extra is not JSON-serialisable
    if show:
        _display(record)
    if expected is not None and status != expected:
        raise ClaimMismatch(
            f"claim {id} ({ctx.chapter}, {ctx.scale} scale): measured {record.measured_text} gives status "
            f"'{status}' (reproduced if {record.criterion}), but the chapter expects '{expected}'"
        )
    return record


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


# --------------------------------------------------------------------------------------------- ledger
def collect_claims(notebooks: Iterable[str | Path]) -> list[ClaimRecord]:
    """Read every claim record embedded in the output metadata of executed notebooks (``.ipynb``).

    Raises
    ------
    ValueError
        If one chapter records the same claim id twice.
    """
    records: list[ClaimRecord] = []
    for path in notebooks:
        nb = json.loads(Path(path).read_text(encoding="utf-8"))
        seen: set[str] = set()
        for cell in nb.get("cells", []):
            for out in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
                payload = out.get("metadata", {}).get(CLAIM_KEY)
                if payload is None:
                    continue
                rec = ClaimRecord.from_json(payload)
                if rec.id in seen:
                    raise ValueError(f"{path}: claim {rec.id} is recorded twice")
                seen.add(rec.id)
                records.append(rec)
    return records


def _cell(text: str) -> str:
    return html.escape(text, quote=False).replace("|", "\\|").replace("\n", " ")


def ledger_markdown(records: Iterable[ClaimRecord], chapter_titles: Mapping[str, str] | None = None) -> str:
    """The claims ledger as a MyST markdown table, one row per (claim, chapter).

    ``chapter_titles`` maps a chapter slug to its docname for a cross-reference (``chapters/<slug>``).
    """
    records = sorted(records, key=lambda r: (SOURCES.index(r.source), r.id, r.chapter))
    if not records:
        return "*No claims have been recorded yet.*\n"
    counts = {s: sum(r.status == s for r in records) for s in STATUSES}
    lines = [
        f"{len(records)} claim checks from the executed chapters: "
        + ", ".join(f"{counts[s]} {s}" for s in STATUSES)
        + f" (scale: {', '.join(sorted({r.scale for r in records}))}).",
        "",
        "| claim | the source says | measured here | status | ch. |",
        "|---|---|---|---|---|",
    ]
    for r in records:
        chapter = r.chapter
        if chapter_titles and r.chapter in chapter_titles:
            chapter = f"{{doc}}`{r.chapter[:2].lstrip('0')} <{chapter_titles[r.chapter]}>`"
        cells = [
            f"`{r.id}` {_cell(r.statement)}",
            _cell(r.source_value),
            f"{_cell(r.measured_text)} (reproduced if {_cell(r.criterion)})",
            _STATUS_MARK[r.status],
            chapter,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
