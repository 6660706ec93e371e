"""When each check's criterion and negative control first appeared in the repository, in their present wording.

The criteria were first set in the chapters, at their first runs (2026-11-29), and moved verbatim into the registry
on 2026-12-01 (commit bb92439); the controls were added then or later. So no criterion and no control was fixed
before the data of its chapter had been seen, and the ledger says, per check, since which commit its present
criterion and control stand. The dates are read from git once (``python -m lib.claims history --write``: the first
commit in which the text of the criterion's reason, and of the control, occurs) and committed under
``data/claims_history.json``, so that a build needs no git history (a shallow clone, Colab).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from .registry import REGISTRY

__all__ = ["HISTORY_FILE", "history", "load_history", "snippet"]

HISTORY_FILE = "claims_history.json"
#: Characters of a text searched for: short enough to lie inside one string literal of the registry's source.
SNIPPET = 28


def snippet(text: str) -> str:
    """The start of ``text`` that git's pickaxe looks for."""
    return text.strip()[:SNIPPET]


def _first_commit(root: Path, text: str) -> list[str] | None:
    out = subprocess.run(["git", "log", "-S", snippet(text), "--reverse", "--format=%h %ad", "--date=short", "--",
                          "lib", "chapters"], cwd=root, capture_output=True, text=True, check=True).stdout.split("\n")  # fmt: skip
    return out[0].split() if out and out[0] else None


def history(root: str | Path) -> dict:
    """``{"<chapter>/<id>": {"criterion": [commit, date], "control": [commit, date] or None}}`` from git (module
    docstring); a text not found in any commit (not committed yet) is ``None``."""
    root = Path(root)
    out = {}
    for claim in REGISTRY.values():
        for check in claim.checks:
            out[f"{check.chapter}/{claim.id}"] = {
                "criterion": _first_commit(root, check.reproduced.why),
                "control": _first_commit(root, check.control) if check.control else None,
            }
    return dict(sorted(out.items()))


def load_history(path: str | Path | None = None) -> dict:
    """The committed history (``data/claims_history.json``), ``{}`` where it does not exist yet."""
    if path is None:
        from ..env import DATA_DIR

        path = Path(DATA_DIR) / HISTORY_FILE
    path = Path(path)
    return json.loads(path.read_text(encoding="utf-8"))["checks"] if path.exists() else {}
