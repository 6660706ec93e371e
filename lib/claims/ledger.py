"""The claims ledger, built from executed notebooks (never typed by hand): counts per status first, one row per check."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Iterable, Mapping

from .record import CLAIM_KEY, COUNTED, DERIVED_VERDICTS, STATUSES, ClaimRecord
from .history import load_history
from .registry import experiment

__all__ = [
    "collect_claims",
    "ledger_markdown",
    "counts_markdown",
    "paper_counts_markdown",
    "paper_b_sentence",
    "status_counts",
    "claims_table_markdown",
]

SOURCES = ("A", "B", "ours")
_MARK = {s: f"**{s}**" for s in STATUSES}


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


def status_counts(records: Iterable[ClaimRecord]) -> dict[str, int]:
    """Number of checks per status, in the order of :data:`STATUSES`."""
    records = list(records)
    return {s: sum(r.status == s for r in records) for s in STATUSES}


_SOURCE_NAMES = {"A": "Paper A", "B": "Paper B", "ours": "The book's own claims"}


def _tally(records: list[ClaimRecord], status: str) -> str:
    """``"n"`` checks of ``status``, with ``(k experiments)`` where rows share an experiment's data."""
    rows = [r for r in records if r.status == status]
    if not rows:
        return "0"
    k = len({experiment(r.id, r.chapter) for r in rows})
    return f"{len(rows)}" + (f" ({k} experiment{'s' * (k > 1)})" if k < len(rows) else "")


def counts_markdown(records: Iterable[ClaimRecord], paper: Iterable[ClaimRecord] = ()) -> str:
    """The landing page's count: per source (paper A, paper B, the book's own claims) the checks on trained or
    sampled models per status (rows that read one experiment's data counted as one experiment too), then the derived
    checks apart (our theory checked against itself: never counted for or against a paper), the paper-scale column,
    and one sentence, computed, on where paper B's claims are supported."""
    records = list(records)
    if not records:
        return "*No claims have been recorded yet.*"
    paper = list(paper)
    shown = [s for s in COUNTED if any(r.status == s for r in records if r.kind != "derived") or s != "incomplete"]
    lines = ["| claims of | " + " | ".join(shown) + " |", "|---|" + "---|" * len(shown)]
    for source in SOURCES:
        rows = [r for r in records if r.source == source and r.kind != "derived"]
        if rows:
            lines.append(
                f"| {_SOURCE_NAMES[source]} ({len(rows)} check{'s' * (len(rows) != 1)} of "
                f"{len({r.id for r in rows})} claim{'s' * (len({r.id for r in rows}) != 1)}) | "
                + " | ".join(_tally(rows, s) for s in shown)
                + " |"
            )
    derived = [r for r in records if r.kind == "derived"]
    holds = sum(r.raw_status == "holds" for r in derived)
    scales = ", ".join(sorted({r.scale for r in records}))
    text = "\n".join(lines) + "\n\n"
    text += (
        f"Counts of checks on trained or sampled models ({scales} scale); in brackets, how many experiments "
        f"they come from where rows share one. Apart: {len(derived)} *derived* check{'s' * (len(derived) != 1)}, the "
        f"book's own theory checked against itself ({holds} of them hold{'s' * (holds == 1)}), never counted for "
        "or against a paper; properties of the code itself (a mask that hides the answer) are unit tests, not "
        "claims. "
    )
    return text + paper_counts_markdown(records, paper) + "\n\n" + paper_b_sentence(records, paper)


def paper_b_sentence(records: Iterable[ClaimRecord], paper: Iterable[ClaimRecord] = ()) -> str:
    """One sentence on paper B, from the records: which of its claims are reproduced or partial, at which scale."""
    records = [r for r in records if r.source == "B" and r.kind != "derived"]
    paper = [p for p in paper if p.source == "B"]

    def ids(rows, status):
        return sorted({r.id for r in rows if r.status == status})

    parts = []
    for scale, rows in (("FAST scale", records), ("paper scale", paper)):
        rep, part = ids(rows, "reproduced"), ids(rows, "partial")
        said = ([f"reproduced: {', '.join(rep)}"] if rep else []) + ([f"partial: {', '.join(part)}"] if part else [])
        parts.append(f"at {scale}, {'; '.join(said) if said else 'none reproduced or partial'}")
    reproduced = any(r.status == "reproduced" for r in records + paper)
    head = "Paper B: " if reproduced else "No claim of paper B is reproduced yet; "
    return head + " — ".join(parts) + "."


def paper_counts_markdown(records: Iterable[ClaimRecord], paper: Iterable[ClaimRecord]) -> str:
    """One line: the paper-scale column's count per status, over the claims of ``records`` (a claim no committed
    paper-scale study measures is *not run* there)."""
    paper = {(p.chapter, p.id): p for p in paper}
    statuses = [
        paper[(r.chapter, r.id)].status if (r.chapter, r.id) in paper else "not run"
        for r in records
        if r.kind != "derived"
    ]
    counted = " · ".join(f"{statuses.count(s)} {s}" for s in COUNTED if statuses.count(s))
    return (
        f"At paper scale, in studies run at the paper's own settings: {counted + '; ' if counted else ''}"
        f"{statuses.count('not run')} not run."
    )


def _cell(text: str) -> str:
    return html.escape(text, quote=False).replace("|", "\\|").replace("\n", " ")


def ledger_markdown(
    records: Iterable[ClaimRecord],
    chapter_titles: Mapping[str, str] | None = None,
    paper: Iterable[ClaimRecord] = (),
    history: Mapping | None = None,
) -> str:
    """The ledger as MyST markdown, to be read at a glance: the count per status, a compact table (claim, status,
    chapter), and the full table one click away (a dropdown).

    A full row: the claim, the source's value, ours with its interval, the control's value, the criterion (its
    reason a hover away), the status, the robustness runs it kept, what a *reproduced* still lacks, and the *paper
    scale* column: the status from a committed paper-scale study (``paper``, records of ``scale="paper"``: their
    value, interval and control), *not run* where none exists. ``chapter_titles`` maps a chapter slug to its docname
    for a cross-reference; ``history`` (default: the committed :func:`lib.claims.history.load_history`) gives the
    commit since which each check's criterion and control stand.
    """
    paper = {(p.chapter, p.id): p for p in paper}
    history = load_history() if history is None else history
    records = sorted(records, key=lambda r: (SOURCES.index(r.source), r.id, r.chapter))
    if not records:
        return "*No claims have been recorded yet.*\n"

    def chapter(r):
        if chapter_titles and r.chapter in chapter_titles:
            return f"{{doc}}`{r.chapter[:2].lstrip('0')} <{chapter_titles[r.chapter]}>`"
        return r.chapter

    lines = [
        counts_markdown(records, paper.values()),
        "",
        "| status | checks |",
        "|---|---|",
    ]
    for s_ in STATUSES:
        if s_ == "derived":  # by verdict: our own theory, never counted
            for verdict in DERIVED_VERDICTS:
                ids = [f"`{r.id}` ({chapter(r)})" for r in records if r.status == s_ and r.raw_status == verdict]
                if ids:
                    lines.append(f"| **derived: {verdict}** | {', '.join(ids)} |")
            continue
        ids = [f"`{r.id}` ({chapter(r)})" for r in records if r.status == s_]
        if ids:
            lines.append(f"| {_MARK[s_]} | {', '.join(ids)} |")
    lines += [
        "",
        ":::{dropdown} Every check in full: the paper's number, ours with its interval, the control, the "
        "criterion, what it lacks",
        "",
        "| claim | the source says | ours [90 % interval] | control | reproduced if | status | paper scale | ch. |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        ours = _cell(r.measured_text) + (f" {_cell(r.interval_text())}" if r.interval else "")
        control = "—" if r.kind == "derived" else _cell(r.control_text())
        status = f"**{r.status_text}**" + (f"<br><small>{_cell(r.robust_text())}</small>" if r.robust_text() else "")
        status += f"<br><small>lacks: {_cell('; '.join(r.unmet))}</small>" if r.unmet else ""
        since = _since(history.get(r.key, {}))
        cells = [
            f"`{r.id}` {_cell(r.statement)}",
            _cell(r.source_value),
            ours,
            control,
            f'<span title="{html.escape(r.why)}">{_cell(r.criterion)}</span>' + since,
            status,
            _paper_cell(r, paper.get((r.chapter, r.id))),
            chapter(r),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", ":::"]
    return "\n".join(lines) + "\n"


def _since(h: Mapping) -> str:
    """Since when the check's criterion, control and measure stand, and the chapter commit that first set a criterion
    older than the registry (:mod:`lib.claims.history`), as one small note."""
    parts = [f"{what} since {h[what][1]} ({h[what][0]})" for what in ("criterion", "control", "measure") if h.get(what)]
    origin = h.get("criterion_origin")
    if origin and h.get("criterion"):
        parts[0] = (
            f"criterion set in the chapter {origin[1]} ({origin[0]}), registered {h['criterion'][1]} "
            f"({h['criterion'][0]})"
        )
    return f"<br><small>{'; '.join(parts)}</small>" if parts else ""


def _paper_cell(r: ClaimRecord, p: ClaimRecord | None) -> str:
    """The *paper scale* cell of row ``r``: ``—`` for our own derivation, *not run* without a committed study."""
    if r.kind == "derived":
        return "—"
    if p is None:
        return _MARK["not run"]
    ours = _cell(p.measured_text) + (f" {_cell(p.interval_text())}" if p.interval else "")
    return f"{_MARK[p.status]}<br><small>{ours}; control {_cell(p.control_text())}; {_cell(p.note)}</small>"


_EXPONENT = re.compile(r"([A-Za-z])\^(\{[^}]*\}|[-−]?[0-9]+(?:\.[0-9]+)?)")


def _math(text: str) -> str:
    """``text`` for a table cell, with caret exponents typeset as maths (``L^{3/2}`` -> :math:`L^{3/2}`)."""
    return _EXPONENT.sub(lambda m: f"${m.group(1)}^{{{m.group(2).strip('{}').replace('−', '-')}}}$", _cell(text))


def claims_table_markdown(
    records: Iterable[ClaimRecord],
    paper: Iterable[ClaimRecord] = (),
    chapter_titles: Mapping[str, str] | None = None,
) -> str:
    """The landing page's table, for a reader: per paper (A, B, the book's own), one row per claim on trained or
    sampled models: the claim in words, the paper's value, ours (the first chapter that measures it), the status in
    each chapter that checks it and at paper scale. Then one line per *contradicted* row saying what contradicts
    what. The derived checks (our theory checked against itself) are counted apart, not listed here."""
    paper = {(p.chapter, p.id): p for p in paper}
    rows = [r for r in records if r.kind != "derived"]
    chapter_titles = chapter_titles or {}

    def where(r):
        n = r.chapter[:2].lstrip("0")
        return f"{{doc}}`ch. {n} <{chapter_titles[r.chapter]}>`" if r.chapter in chapter_titles else f"ch. {n}"

    out = []
    for source in SOURCES:
        ids = sorted({r.id for r in rows if r.source == source})
        if not ids:
            continue
        out += [
            "",
            f"**{_SOURCE_NAMES[source]}**",
            "",
            "| claim | the paper | ours | status | paper scale |",
            "|---|---|---|---|---|",
        ]
        for cid in ids:
            mine = sorted((r for r in rows if r.id == cid), key=lambda r: r.chapter)
            status = " · ".join(f"{r.status} ({where(r)})" for r in mine)
            scaled = [paper[(r.chapter, r.id)] for r in mine if (r.chapter, r.id) in paper]
            at_paper = " · ".join(p.status for p in scaled) if scaled else "not run"
            source_value = "—" if source == "ours" else _math(mine[0].source_value)
            out.append(
                f"| {_math(mine[0].statement)} <small>{cid}</small> | {source_value} | {_math(mine[0].measured_text)} | {status} | "
                f"{at_paper} |"
            )
    against = [r for r in rows if r.status == "contradicted"] + [
        p for p in paper.values() if p.status == "contradicted"
    ]
    if against:
        out += ["", "What is *contradicted*, each in one line:", ""]
        out += [
            f"- {r.id} ({where(r)}{', paper scale' if r.scale == 'paper' else ''}): ours "
            f"{_math(r.measured_text)}; the paper: {_math(r.source_value)}."
            for r in against
        ]
    return "\n".join(out).strip() + "\n"
