"""Claims: the registry of what the book tests (criteria, reasons, controls), the check a chapter makes, and the ledger.

- :mod:`lib.claims.criteria` — tests on a value and on its interval;
- :mod:`lib.claims.registry` — every claim: statement, the source's number, per chapter the measurement, criteria
  with their reasons, and the negative control;
- :mod:`lib.claims.record` — :func:`claim`: judge a chapter's measurement by the registry, show it, record it;
- :mod:`lib.claims.ledger` — the ledger built from executed notebooks.

``python -m lib.claims list`` prints the registry (``--json`` for scripts).
"""

from .criteria import Criterion, at_least, at_most, between, is_true, within
from .ledger import (
    collect_claims,
    counts_markdown,
    ledger_markdown,
    paper_b_sentence,
    paper_counts_markdown,
    status_counts,
)
from .record import (
    CLAIM_KEY,
    COUNTED,
    STATUSES,
    ClaimRecord,
    build_record,
    claim,
    condition_interval,
    judge,
    robustness_runs,
)
from .registry import KINDS, REGISTRY, Check, Claim, Rule, get_check, get_claim, meets, part_holds, parts_hold

__all__ = [
    "Criterion",
    "between",
    "at_least",
    "at_most",
    "within",
    "is_true",
    "REGISTRY",
    "KINDS",
    "Claim",
    "Check",
    "Rule",
    "get_claim",
    "get_check",
    "parts_hold",
    "part_holds",
    "meets",
    "CLAIM_KEY",
    "STATUSES",
    "COUNTED",
    "ClaimRecord",
    "build_record",
    "claim",
    "condition_interval",
    "judge",
    "robustness_runs",
    "collect_claims",
    "ledger_markdown",
    "counts_markdown",
    "paper_counts_markdown",
    "paper_b_sentence",
    "status_counts",
]
