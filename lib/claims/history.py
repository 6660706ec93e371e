"""Since which commit each check's criterion and negative control stand, read from the registry's own history.

The criteria were first set in the chapters, at their first runs (2026-11-29), and moved verbatim into the registry
when it was created (2026-12-01, commit bb92439); the controls were added then or later. So no criterion and no
control was fixed before the data of its chapter had been seen. :func:`history` loads ``lib/claims/registry.py`` as
it stood at every commit that changed it and finds, per check, the first commit from which its criteria (the
reproduced, partial and contradicted thresholds) and its control (the text) are the ones registered now, unchanged
since. Reading it needs the git history, so it is run once (``python -m lib.claims history --write``) and committed as
``data/claims_history.json``; a build (a shallow clone, Colab) reads the file.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from .registry import REGISTRY

__all__ = ["HISTORY_FILE", "history", "load_history"]

HISTORY_FILE = "claims_history.json"
_FILES = ("registry.py", "criteria.py")


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


def _criteria(check) -> tuple:
    return tuple(
        None if rule is None else rule.criterion.describe()
        for rule in (check.reproduced, check.partial, check.contradicted)
    )


def _registry_at(root: Path, commit: str) -> dict | None:
    """``{"<chapter>/<id>": (criteria, control)}`` of the registry at ``commit`` (``None`` if it cannot be loaded)."""
    with tempfile.TemporaryDirectory() as tmp:
        pkg = Path(tmp) / "_registry_then"
        pkg.mkdir()
        (pkg / "__init__.py").write_text("", encoding="utf-8")
        for name in _FILES:
            try:
                (pkg / name).write_text(_git(root, "show", f"{commit}:lib/claims/{name}"), encoding="utf-8")
            except subprocess.CalledProcessError:
                return None
        spec = importlib.util.spec_from_file_location(
            "_registry_then", pkg / "__init__.py", submodule_search_locations=[str(pkg)]
        )
        sys.modules["_registry_then"] = importlib.util.module_from_spec(spec)
        try:
            sub = importlib.util.spec_from_file_location("_registry_then.registry", pkg / "registry.py")
            module = importlib.util.module_from_spec(sub)
            sys.modules["_registry_then.registry"] = module
            sub.loader.exec_module(module)
            return {
                f"{k.chapter}/{c.id}": (_criteria(k), k.control) for c in module.REGISTRY.values() for k in c.checks
            }
        except Exception:  # an old layout this reader does not know: that commit is skipped
            return None
        finally:
            for name in [m for m in sys.modules if m.startswith("_registry_then")]:
                del sys.modules[name]


def history(root: str | Path) -> dict:
    """``{"<chapter>/<id>": {"criterion": [commit, date], "control": [commit, date] or None}}``: the first commit of
    the unbroken run of registry versions, up to now, whose criteria (control) equal today's (module docstring);
    ``None`` for a check with no control or one not committed yet."""
    root = Path(root)
    commits = [
        line.split()
        for line in _git(
            root, "log", "--reverse", "--format=%h %ad", "--date=short", "--", "lib/claims/registry.py"
        ).splitlines()
    ]
    now = {f"{k.chapter}/{c.id}": (_criteria(k), k.control) for c in REGISTRY.values() for k in c.checks}
    since: dict[str, list] = {key: [None, None] for key in now}
    for commit, date in commits:
        then = _registry_at(root, commit)
        if then is None:
            continue
        for key, (criteria, control) in now.items():
            old = then.get(key)
            for i, same in enumerate(
                (old is not None and old[0] == criteria, old is not None and bool(control) and old[1] == control)
            ):
                if not same:
                    since[key][i] = None  # changed at or after this commit: the run starts later
                elif since[key][i] is None:
                    since[key][i] = [commit, date]
    return {key: {"criterion": s[0], "control": s[1]} for key, s in sorted(since.items())}


def load_history(path: str | Path | None = None) -> dict:
    """The committed history (``data/claims_history.json``), ``{}`` where it does not exist yet."""
    if path is None:
        from ..core.env import DATA_DIR

        path = Path(DATA_DIR) / HISTORY_FILE
    path = Path(path)
    return json.loads(path.read_text(encoding="utf-8"))["checks"] if path.exists() else {}
