"""A committed result's identity is its name, config and numerics, never where its code lives.

Three checks against the committed results themselves (data/):
- a study module moved to another package (its source re-imported under a new module name) still finds its
  committed result: same result name, same config key, same numerics version, and the cache serves the payload;
- a copy of lib/ with infrastructure edited (progress bars, the cache, validation, a new statistics function) gives
  every committed result and paper-scale unit function the numerics version it was stored with;
- the same copy with one statement added to a function the studies reach (the copy head's attention) gives new
  versions to the results that reach it and to no other.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import lib  # noqa: F401  (registers the studies' result names)
import lib.core.cache as cache
import lib.lm.study_results  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"

#: FAST studies whose committed config is their default (config expression in the study's own module).
MOVABLE = {
    "width_study": "WidthStudyConfig()",
    "scan_replicas": "ScanReplicasConfig.fast()",
    "adam_replicas": "AdamReplicasConfig.fast()",
    "context_study": "ContextStudyConfig.fast()",
    "linear_scaling": "LinearScalingConfig()",
    "mixer_tuning": "MixerTuningConfig.fast()",
}


def _headers() -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for path in sorted((DATA / "cache").rglob("*.pkl")):
        raw = path.read_bytes()
        end = raw.index(b"\n", len(cache.MAGIC))
        header = json.loads(raw[len(cache.MAGIC) : end])
        out.setdefault(header["name"], []).append(header)
    return out


def _relocate(module: str, tmp_path: Path, new: str):
    """Import ``module``'s source as ``relocated.<new>``, its relative imports made absolute."""
    src = Path(importlib.import_module(module).__file__).read_text(encoding="utf-8")
    package = module.rpartition(".")[0]

    def absolute(m: re.Match) -> str:
        indent, dots, rest = m.group(1), m.group(2), m.group(3)
        parts = package.split(".")
        return f"{indent}from " + ".".join(parts[: len(parts) - (len(dots) - 1)] + ([rest] if rest else []))

    src = re.sub(r"^(\s*)from (\.+)([\w.]*)", absolute, src, flags=re.M)
    folder = tmp_path / "relocated"
    folder.mkdir(exist_ok=True)
    (folder / "__init__.py").write_text("")
    (folder / f"{new}.py").write_text(src)
    if str(tmp_path) not in sys.path:
        sys.path.insert(0, str(tmp_path))
    importlib.invalidate_caches()
    return importlib.import_module(f"relocated.{new}")


@pytest.mark.parametrize("name", sorted(MOVABLE))
def test_a_moved_study_module_finds_its_committed_result(name, tmp_path):
    original = cache.result_function(name)
    moved_mod = _relocate(original.__module__, tmp_path, f"moved_{name}")
    try:
        moved = getattr(moved_mod, name).__wrapped__
        assert moved.__module__ != original.__module__
        assert cache.result_name(moved) == name
        assert cache.numerics_version(moved) == cache.numerics_version(original)
        config = eval(MOVABLE[name], vars(moved_mod))  # the moved module's own config class
        assert type(config).__module__ == moved_mod.__name__
        reader = cache.Cache(tmp_path / "empty", data_dir=DATA, enabled=True)
        hit, _ = reader.load(moved, config)
        assert hit, f"{name}: the committed result is not found from the moved module"
    finally:
        for m in [m for m in sys.modules if m.startswith("relocated")]:
            del sys.modules[m]


_PROBE = r"""
import json, sys
import lib, lib.lm.study_results, lib.studies._units
from lib.core import cache
names = json.loads(sys.argv[1])
out = {n: cache.numerics_version(cache.result_function(n)) for n in names}
out["fast_curves"] = cache.numerics_version(lib.studies._units.fast_curves)
out["reference_curves"] = cache.numerics_version(lib.studies._units.reference_curves)
print(json.dumps(out))
"""


def _versions_in(tree: Path, names: list[str]) -> dict[str, str]:
    run = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(names)],
        cwd=tree,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tree), "BOOK_CACHE": "0"},
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def _copy_lib(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "lib", tree / "lib", ignore=shutil.ignore_patterns("__pycache__"))
    return tree


def _edit(path: Path, func: str, statement: str) -> None:
    """Insert ``statement`` at the top of function ``func``'s body in ``path`` (after its docstring)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == func)
    at = 1 if ast.get_docstring(node) else 0
    node.body.insert(at, ast.parse(statement).body[0])
    path.write_text(ast.unparse(tree), encoding="utf-8")


@pytest.fixture(scope="module")
def stored():
    headers = _headers()
    assert headers, "no committed results"
    versions = {}
    for name, hs in headers.items():
        assert len({h["numerics"] for h in hs}) == 1, f"{name}: committed under several numerics versions"
        versions[name] = hs[0]["numerics"]
    import lib.studies._units

    versions["fast_curves"] = cache.numerics_version(lib.studies._units.fast_curves)
    versions["reference_curves"] = cache.numerics_version(lib.studies._units.reference_curves)
    return versions


def test_editing_infrastructure_stales_nothing(tmp_path, stored):
    tree = _copy_lib(tmp_path)
    lib_dir = tree / "lib"
    with open(lib_dir / "core" / "progress.py", "a") as fh:
        fh.write("\n\ndef _spinner(n):\n    return '|/-\\\\'[n % 4]\n")
    with open(lib_dir / "core" / "cache.py", "a") as fh:
        fh.write("\n\ndef _describe(entry):\n    return f'entry {entry}'\n")
    with open(lib_dir / "core" / "validate.py", "a") as fh:
        fh.write("\n\ndef check_nonempty(x, name):\n    if not x:\n        raise ValueError(f'{name} is empty')\n")
    with open(lib_dir / "core" / "stats.py", "a") as fh:
        fh.write("\n\ndef midrange(x):\n    return (min(x) + max(x)) / 2\n")
    names = sorted(n for n in stored if n not in ("fast_curves", "reference_curves"))
    assert _versions_in(tree, names) == stored


def test_editing_arithmetic_stales_what_reaches_it(tmp_path, stored):
    tree = _copy_lib(tmp_path)
    _edit(tree / "lib" / "models" / "copy_head.py", "attention", "_unused = 0")
    names = sorted(n for n in stored if n not in ("fast_curves", "reference_curves"))
    after = _versions_in(tree, names)
    changed = {n for n in stored if after[n] != stored[n]}
    assert {"scan_replicas", "adam_replicas"} <= changed  # paper A's copy-head studies reach the attention
    assert not changed & {"context_study", "mixer_study", "analyze_run", "fast_curves"}  # GPT and LM ones do not
