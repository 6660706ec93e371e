"""Per check of the registry: since which commit its criteria, its negative control and its measure stand, and in
which chapter commit its criterion first appeared before the registry existed.

:func:`history` reads ``lib/claims/registry.py`` (with ``criteria.py``) as it stood at every commit that changed it
and finds, per check, the first commit of the unbroken run of registry versions, ending now, whose criteria (the
reproduced, partial and contradicted rules, by their ``describe()`` text), whose control text and whose measure text
equal today's.

Where a check's criteria run starts at the registry's first commit, the criterion is older than the registry: the
chapters passed their criteria to ``lib.claim("<id>", ..., reproduced=..., partial=..., contradicted=...)`` before
it. For such a check :func:`history` reads the chapter's source (``chapters/<slug>.md``, followed across renames) at
every earlier commit that changed it, finds that call in the code cells and compares its three keyword expressions,
with the top-level definitions of the names they use, by :func:`ast.dump` (so a change of layout is no change). The
criterion's origin is the first commit of the unbroken run of chapter versions, ending just before the registry's
first commit, whose expressions equal the last version's. It is given only where the last version's expressions,
evaluated with the registry's own criteria functions, are exactly the criteria of the registry's first version (same
operation, bounds and text); otherwise (a bound computed from the run's data, a number changed on the way into the
registry, no such call) the origin is ``None`` and ``criterion_origin_note`` says why.

Reading it needs the git history, so it is run once (``python -m lib.claims history --write``) and committed as
``data/claims_history.json``; a build (a shallow clone, Colab) reads the file (:func:`load_history`).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import math
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace

from .registry import REGISTRY

__all__ = ["HISTORY_FILE", "history", "load_history"]

HISTORY_FILE = "claims_history.json"
_FILES = ("registry.py", "criteria.py")
_RULES = ("reproduced", "partial", "contradicted")
_MAKERS = ("at_least", "at_most", "between", "within", "is_true")
_BUILTINS = {"len": len, "float": float, "int": int, "abs": abs, "min": min, "max": max, "round": round}
_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


def _criteria(check) -> tuple:
    """The check's three rules as ``describe()`` texts (``None`` for a missing rule)."""
    return tuple(None if rule is None else rule.criterion.describe() for rule in (getattr(check, r) for r in _RULES))


def _exact(criterion) -> tuple:
    """A criterion as ``(op, lo, hi, describe())``: equal tuples test the same values and say so in the same words."""
    return (criterion.op, criterion.lo, criterion.hi, criterion.describe())


def _registry_at(root: Path, commit: str) -> tuple[dict, dict] | None:
    """The registry at ``commit``: ``({"<chapter>/<id>": (criteria, control, measure, exact criteria)}, criteria
    functions by name)``, or ``None`` if it cannot be loaded."""
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
            checks = {
                f"{k.chapter}/{c.id}": (
                    _criteria(k),
                    k.control,
                    getattr(k, "measure", None),
                    tuple(None if r is None else _exact(r.criterion) for r in (getattr(k, n) for n in _RULES)),
                )
                for c in module.REGISTRY.values()
                for k in c.checks
            }
            criteria = sys.modules.get("_registry_then.criteria")
            makers = {name: getattr(criteria, name) for name in _MAKERS if hasattr(criteria, name)}
            return checks, makers
        except Exception:  # an old layout this reader does not know: that commit is skipped
            return None
        finally:
            for name in [m for m in sys.modules if m.startswith("_registry_then")]:
                del sys.modules[name]


# --------------------------------------------------------------------------------------------- chapter sources
def _code_cells(text: str) -> list[str]:
    """The code of every ``{code-cell}`` of a MyST chapter: cell options (``:key: value`` lines, a ``---`` block)
    and IPython magics blanked, so that line numbers are kept."""
    cells = []
    for m in _CELL.finditer(text):
        lines = m.group(1).split("\n")
        i = 0
        if lines and lines[0].strip() == "---":
            end = next((j for j in range(1, len(lines)) if lines[j].strip() == "---"), None)
            if end is not None:
                lines[: end + 1] = [""] * (end + 1)
                i = end + 1
        while i < len(lines) and re.match(r"^:[\w-]+:", lines[i]):
            lines[i] = ""
            i += 1
        cells.append("\n".join("" if ln.lstrip().startswith(("%", "!")) else ln for ln in lines))
    return cells


def _claim_id(node: ast.AST) -> str | None:
    """The claim id of a ``lib.claim("<id>", ...)`` (or ``claim("<id>", ...)``) call, else ``None``."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    f = node.func
    if not ((isinstance(f, ast.Attribute) and f.attr == "claim") or (isinstance(f, ast.Name) and f.id == "claim")):
        return None
    first = node.args[0]
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None


def _loads(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - {
        "lib",
        "math",
        *_BUILTINS,
    }


def _definitions(names: set[str], env: dict) -> tuple:
    """``((name, ast.dump of its top-level definition or None), ...)`` for ``names`` and the names those use."""
    seen: dict[str, str | None] = {}
    todo = [(n, env) for n in names]
    while todo:
        name, scope = todo.pop()
        if name in seen:
            continue
        bound = scope.get(name)
        seen[name] = None if bound is None else ast.dump(bound[0])
        if bound is not None:
            todo += [(n, bound[1]) for n in _loads(bound[0])]
    return tuple(sorted(seen.items()))


def _claim_calls(text: str) -> dict[str, list[tuple[tuple, dict, dict]]]:
    """Per claim id, every ``lib.claim`` call in the chapter's code cells: ``(signature, expressions, names)``.

    The signature is ``ast.dump`` of the ``reproduced``, ``partial`` and ``contradicted`` expressions (``None`` where
    absent) and of the top-level definitions of the names they use; ``names`` maps a name bound at top level before
    the call to ``(value node, the names bound before it)``, or to ``None`` where it was bound otherwise (a loop, an
    unpacking, an import).
    """
    calls: dict[str, list] = {}
    env: dict = {}
    for code in _code_cells(text):
        try:
            tree = ast.parse(code)
        except SyntaxError:
            continue
        for stmt in tree.body:
            for node in ast.walk(stmt):
                cid = _claim_id(node)
                if cid is None:
                    continue
                exprs = {k.arg: k.value for k in node.keywords if k.arg in _RULES}
                names = set().union(*(_loads(e) for e in exprs.values())) if exprs else set()
                sig = (tuple(ast.dump(exprs[r]) if r in exprs else None for r in _RULES), _definitions(names, env))
                calls.setdefault(cid, []).append((sig, exprs, dict(env)))
            stored = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
                stored |= {getattr(stmt, "name", None)} | {
                    (a.asname or a.name).split(".")[0] for a in getattr(stmt, "names", ())
                }
            before = dict(env)
            for name in stored - {None}:
                env[name] = None
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                env[stmt.targets[0].id] = (stmt.value, before)
    return calls


def _safe(node: ast.AST) -> bool:
    """Only numbers, arithmetic, the criteria functions (``lib.<name>``), ``math.<name>`` and a few builtins."""
    allowed = (ast.Call, ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Tuple, ast.List, ast.keyword)
    allowed += (ast.operator, ast.unaryop, ast.expr_context)
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute):
            if not (isinstance(n.value, ast.Name) and n.value.id in ("lib", "math") and not n.attr.startswith("_")):
                return False
        elif not isinstance(n, allowed):
            return False
    return True


def _evaluate(exprs: dict, env: dict, makers: dict) -> tuple | None:
    """The three rules' criteria as :func:`_exact` tuples, evaluated with ``makers`` as ``lib``; ``None`` where an
    expression uses anything but constants bound at top level (a bound computed from the run's data)."""
    memo: dict[int, object] = {}

    def value(node: ast.AST, scope: dict):
        if not _safe(node):
            raise ValueError("not a constant expression")
        ns: dict = {"lib": SimpleNamespace(**makers), "math": math, **_BUILTINS}
        for name in _loads(node):
            bound = scope.get(name)
            if bound is None:
                raise ValueError(f"{name} is not a top-level constant")
            if id(bound[0]) not in memo:
                memo[id(bound[0])] = value(*bound)
            ns[name] = memo[id(bound[0])]
        return eval(compile(ast.Expression(node), "<chapter>", "eval"), {"__builtins__": {}}, ns)

    try:
        return tuple(_exact(value(exprs[r], env)) if r in exprs else None for r in _RULES)
    except Exception:
        return None


def _chapter_versions(root: Path, slug: str, before: str) -> list[tuple[str, str, str]]:
    """``[(commit, date, path)]``, oldest first, of the commits before ``before`` that changed the chapter
    ``chapters/<slug>.md`` as it stood at ``before`` (renames followed)."""
    out = _git(
        root,
        "log",
        "--follow",
        "--format=%x00%H %h %ad",
        "--date=short",
        "--name-status",
        before,
        "--",
        f"chapters/{slug}.md",
    )
    full = _git(root, "rev-parse", before).strip()
    versions = []
    for chunk in out.split("\x00")[1:]:
        lines = [ln for ln in chunk.splitlines() if ln.strip()]
        sha, short, date = lines[0].split()
        if sha == full or len(lines) < 2:
            continue
        status = lines[-1].split("\t")
        if status[0].startswith("D"):
            continue
        versions.append((short, date, status[-1]))
    return versions[::-1]


def _origins(root: Path, first: str, keys: list[str], registered: dict, makers: dict) -> dict:
    """``{key: (origin [commit, date] or None, note)}``: where each check's criterion first appeared in its chapter
    before the registry's first commit ``first`` (module docstring); ``registered`` is the registry at ``first``."""
    found = {}
    parsed: dict[str, list] = {}
    for key in keys:
        slug, cid = key.split("/", 1)
        if slug not in parsed:
            parsed[slug] = []
            for commit, date, path in _chapter_versions(root, slug, first):
                try:
                    parsed[slug].append((commit, date, _claim_calls(_git(root, "show", f"{commit}:{path}"))))
                except subprocess.CalledProcessError:
                    continue
        versions = parsed[slug]
        last = versions[-1][2].get(cid, []) if versions else []
        if len(last) != 1:
            found[key] = (None, f"{len(last)} lib.claim calls of {cid} in the chapter before the registry")
            continue
        target, exprs, env = last[0]
        chapter = _evaluate(exprs, env, makers)
        if chapter != registered[key][3]:
            text = ", ".join(f"{r}={ast.unparse(e)}" for r, e in exprs.items())
            if chapter is None:
                note = f"the chapter's criteria ({text}) are not constants"
            else:
                said = [", ".join(f"{r} {c[3]}" for r, c in zip(_RULES, x) if c) for x in (chapter, registered[key][3])]
                note = f"the chapter's criteria ({text}: {said[0]}) are not the registry's ({said[1]})"
            found[key] = (None, note)
            continue
        since = None
        for commit, date, calls in versions:
            if [c[0] for c in calls.get(cid, [])] != [target]:
                since = None  # absent or changed here: the run starts later
            elif since is None:
                since = [commit, date]
        found[key] = (since, "")
    return found


def history(root: str | Path, registry: Mapping | None = None) -> dict:
    """Per check ``"<chapter>/<id>"``: ``{"criterion", "control", "measure": [commit, date] or None,
    "criterion_origin": [commit, date] or None, "criterion_origin_note": str}`` (module docstring).

    ``criterion``, ``control`` and ``measure`` are the first commit of the unbroken run of registry versions, up to
    now, in which each equals today's (``None`` for a check with no control, or one not committed yet);
    ``criterion_origin`` is the chapter commit in which a criterion registered at the registry's first commit was
    set, where that can be traced, and ``criterion_origin_note`` says why not where it cannot.

    Parameters
    ----------
    root : str or Path
        The repository's root (a clone with its history).
    registry : mapping, optional
        The claims now, ``{id: Claim}``; default :data:`lib.claims.registry.REGISTRY`.
    """
    root = Path(root)
    commits = [
        line.split()
        for line in _git(
            root, "log", "--reverse", "--format=%h %ad", "--date=short", "--", "lib/claims/registry.py"
        ).splitlines()
    ]
    registry = REGISTRY if registry is None else registry
    now = {f"{k.chapter}/{c.id}": (_criteria(k), k.control, k.measure) for c in registry.values() for k in c.checks}
    since: dict[str, list] = {key: [None, None, None] for key in now}
    first = None
    for commit, date in commits:
        loaded = _registry_at(root, commit)
        if loaded is None:
            continue
        then, makers = loaded
        if first is None:
            first = (commit, date, then, makers)
        for key, (criteria, control, measure) in now.items():
            old = then.get(key)
            for i, same in enumerate(
                (
                    old is not None and old[0] == criteria,
                    old is not None and bool(control) and old[1] == control,
                    old is not None and old[2] == measure,
                )
            ):
                if not same:
                    since[key][i] = None  # changed at or after this commit: the run starts later
                elif since[key][i] is None:
                    since[key][i] = [commit, date]
    origins = {}
    if first is not None:
        at_first = [key for key, s in since.items() if s[0] is not None and s[0][0] == first[0]]
        origins = _origins(root, first[0], at_first, first[2], first[3])
    out = {}
    for key, s in sorted(since.items()):
        origin, note = origins.get(key, (None, "the criteria stand since a later registry commit"))
        if s[0] is None:
            note = "not committed"
        out[key] = {
            "criterion": s[0],
            "control": s[1],
            "measure": s[2],
            "criterion_origin": origin,
            "criterion_origin_note": note,
        }
    return out


def load_history(path: str | Path | None = None) -> dict:
    """The committed history (``data/claims_history.json``), ``{}`` where it does not exist yet."""
    if path is None:
        from ..core.env import DATA_DIR

        path = Path(DATA_DIR) / HISTORY_FILE
    path = Path(path)
    return json.loads(path.read_text(encoding="utf-8"))["checks"] if path.exists() else {}
