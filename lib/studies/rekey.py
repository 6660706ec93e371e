r"""Re-key the committed results once, from the location-bound keys of cache format 1 to the location-free keys of
format 2 (:mod:`lib.core.cache`): ``python -m lib.studies rekey --legacy-root DIR``.

Format 1 keyed a result by its function's module path, its config with each dataclass named by module path, and a
fingerprint of every ``lib`` module the function imported. Format 2 keys it by a result name, type names and the
numerics version (:func:`lib.core.numerics.numerics_version`). The mapping goes through :data:`TABLE`, written out. Every
entry is first checked under the old scheme against the last format-1 source tree (``DIR``, e.g. ``git worktree add
DIR 132c8b1``): its old fingerprint must match that tree's code, so the payload is what that code computed. Payloads
are copied byte for byte. Paper-scale units (``data/paper/*.json``) get their new unit keys from their study's
current units, and the language-model suite index its new config key. Entries already re-keyed are left alone, so
the command is idempotent.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib
import json
import math
import enum
import dataclasses
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..core.cache import MAGIC, _atomic_write, _read_manifest, _sha256, config_key, numerics_version
from ..core.env import DATA_DIR

__all__ = ["TABLE", "rekey", "legacy_config_key"]

LEGACY_MAGIC = b"ATTNBOOK-CACHE 1\n"
FINGERPRINT_ROOTS = ("lib",)

#: Format 1's function ids -> format 2's result names. Config types are renamed from ``module.qualname`` to
#: ``qualname`` (:func:`lib.core.cache.type_name`); no field is renamed in this step.
TABLE = {
    "results": {
        "lib.lm.study.analyze_run": "analyze_run",
        "lib.studies.adam_replicas.adam_replicas": "adam_replicas",
        "lib.studies.context_study.context_study": "context_study",
        "lib.studies.emergence_runs.emergence_runs": "emergence_runs",
        "lib.studies.linear_scaling.linear_scaling": "linear_scaling",
        "lib.studies.mixer_comparison.mixer_comparison": "mixer_comparison",
        "lib.studies.mixer_study.mixer_study": "mixer_study",
        "lib.studies.mixer_tuning.mixer_tuning": "mixer_tuning",
        "lib.studies.plateau_calibration.plateau_calibration": "plateau_calibration",
        "lib.studies.scan_replicas.scan_replicas": "scan_replicas",
        "lib.studies.sparsity_study.sparsity_study": "sparsity_study",
        "lib.studies.width_study.width_study": "width_study",
    },
    "units": {
        "lib.paper_units:fast_curves": "fast_curves",
        "lib.paper_units_reference:reference_curves": "reference_curves",
    },
}


# ------------------------------------------------------------------------------------------- format 1, as it was
def _legacy_canonical(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        fields = {f.name: _legacy_canonical(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
        return {"__type__": f"{type(obj).__module__}.{type(obj).__qualname__}", **fields}
    if isinstance(obj, enum.Enum):
        return {"__enum__": f"{type(obj).__qualname__}.{obj.name}"}
    if isinstance(obj, (bool, str)) or obj is None:
        return obj
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        x = float(obj)
        return {"__float__": repr(x)} if not math.isfinite(x) else x
    if isinstance(obj, (tuple, list)):
        return [_legacy_canonical(x) for x in obj]
    if isinstance(obj, dict):
        return {k: _legacy_canonical(obj[k]) for k in sorted(obj)}
    raise TypeError(f"cannot canonicalise a {type(obj).__name__}")


def _dumps(tree: Any) -> str:
    return json.dumps(tree, sort_keys=True, separators=(",", ":"))


def legacy_config_key(config: Any) -> str:
    """Format 1's key of ``config`` (dataclasses named by module path)."""
    return hashlib.sha256(_dumps(_legacy_canonical(config)).encode()).hexdigest()[:24]


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
                if isinstance(body[0].value.value, str):
                    node.body = body[1:] or [ast.Pass()]
    return tree


def _lib_imports(module: str, tree: ast.AST) -> set[str]:
    """Names of the modules under :data:`FINGERPRINT_ROOTS` that ``module`` imports."""
    # the package a relative import starts from: a package's own __init__ imports relative to the package itself
    package = module[: -len(".__init__")] if module.endswith(".__init__") else module.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] in FINGERPRINT_ROOTS)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] in FINGERPRINT_ROOTS:
                out.add(target)
                out.update(f"{target}.{a.name}" for a in node.names)  # `from .x import y` may import module y
    return out


def _module_file(name: str, root: Path) -> Path | None:
    """Where module ``name`` was in the format-1 tree at ``root`` (None for a name that is not a module there)."""
    base = root.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


@functools.lru_cache(maxsize=None)
def _module_info(path: str, stamp: tuple[int, int], module: str) -> tuple[str, frozenset[str]]:
    """(digest of the docstring-free AST, lib modules imported) of one source file (memoised per mtime and size)."""
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    imports = frozenset(_lib_imports(module, tree))
    digest = hashlib.sha256(ast.dump(_strip_docstrings(tree)).encode()).hexdigest()
    return digest, imports


def code_fingerprint(module: str, root: Path) -> str:
    """Format 1's fingerprint of a function of ``module``, over the source tree at ``root``: sha256 over the
    docstring-free ASTs of the module and every ``lib`` module it imports (transitively)."""
    seen: dict[str, str] = {}
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = _module_file(name, root)
        if path is None:  # not a module (e.g. a function imported by name)
            continue
        as_module = name + (".__init__" if path.name == "__init__.py" else "")
        stat = path.stat()
        digest, imports = _module_info(str(path), (stat.st_mtime_ns, stat.st_size), as_module)
        seen[name] = digest
        todo.extend(imports - set(seen))
    return hashlib.sha256(json.dumps(sorted(seen.items())).encode()).hexdigest()


def _resolve_id(function_id: str) -> Callable:
    module, _, qualname = function_id.rpartition(".")
    while True:
        try:
            obj = importlib.import_module(module)
            break
        except ImportError:
            module, _, head = module.rpartition(".")
            qualname = f"{head}.{qualname}"
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return getattr(obj, "__wrapped__", obj)


# ------------------------------------------------------------------------------------------- the mapping
def _retype(tree: Any) -> Any:
    """Format 1's canonical tree with every ``__type__`` renamed to its format-2 type name."""
    if isinstance(tree, dict):
        out = {k: _retype(v) for k, v in tree.items()}
        if "__type__" in out:
            out["__type__"] = out["__type__"].rpartition(".")[2]
        return out
    if isinstance(tree, list):
        return [_retype(x) for x in tree]
    return tree


def _split(raw: bytes, magic: bytes) -> tuple[dict, bytes]:
    end = raw.index(b"\n", len(magic))
    return json.loads(raw[len(magic) : end]), raw[end + 1 :]


def _rekey_entries(data_dir: Path, manifest: dict, log: list[str], root: Path) -> None:
    files = manifest["files"]
    for rel in sorted(files):
        path = data_dir / rel
        if not rel.startswith("cache/") or not path.is_file():
            continue
        raw = path.read_bytes()
        if not raw.startswith(LEGACY_MAGIC):
            continue
        header, payload = _split(raw, LEGACY_MAGIC)
        old_id = header["function"]
        name = TABLE["results"][old_id]
        func = _resolve_id(old_id)
        if header["code"] != code_fingerprint(old_id.rpartition(".")[0], root):
            raise ValueError(f"{rel}: stale under format 1 (its code changed); republish it before re-keying")
        if _sha256(payload) != header["payload_sha256"] or len(payload) != header["payload_size"]:
            raise ValueError(f"{rel}: payload does not match its header")
        config = _dumps(_retype(json.loads(header["config"])))
        key = hashlib.sha256(config.encode()).hexdigest()[:24]
        new = {k: v for k, v in header.items() if k not in ("function", "code", "config")}
        new.update(name=name, config=config, numerics=numerics_version(func))
        blob = MAGIC + json.dumps(new, sort_keys=True).encode() + b"\n" + payload
        new_rel = f"cache/{name}/{key}.pkl"
        _atomic_write(data_dir / new_rel, blob)
        entry = {k: v for k, v in files.pop(rel).items() if k != "function"}
        entry.update(sha256=_sha256(blob), size=len(blob), name=name)
        files[new_rel] = entry
        path.unlink()
        log.append(f"{rel} -> {new_rel}")
    for folder in sorted((data_dir / "cache").iterdir()):
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()


def _rekey_units(data_dir: Path, manifest: dict, log: list[str], root: Path) -> None:
    todo = sorted((data_dir / "paper").glob("*.json"))
    while todo:  # a staged study (b-mixer) is defined from its tuning study's record: re-key that one first
        deferred = []
        for path in todo:
            try:
                _rekey_record(path, data_dir, manifest, log, root)
            except RuntimeError:
                deferred.append(path)
        if len(deferred) == len(todo):
            _rekey_record(deferred[0], data_dir, manifest, log, root)  # raises the study's own error
        todo = deferred


def _rekey_record(path: Path, data_dir: Path, manifest: dict, log: list[str], root: Path) -> None:
    from .paper import make_study
    from ._study import unit_key

    record = json.loads(path.read_text(encoding="utf-8"))
    study = make_study(path.stem, data_dir)
    if not set(record["units"]) <= {unit_key(u) for u in study.units}:  # not re-keyed yet
        fps: dict[str, str] = {}
        mapping = {}
        for u in study.units:
            legacy = {name: func for func, name in TABLE["units"].items()}[u.name]  # where format 1 had it
            fp = fps.setdefault(legacy, code_fingerprint(legacy.split(":")[0], root))
            old = {
                "__type__": "lib.study_unit.StudyUnit",
                "code": fp,
                "config": _legacy_canonical(u.config),
                "func": legacy,
            }
            mapping[hashlib.sha256(_dumps(old).encode()).hexdigest()[:24]] = unit_key(u)
        missing = set(record["units"]) - set(mapping)
        if missing:
            raise ValueError(f"{path.name}: {len(missing)} committed units match no unit of the current code")
        record["units"] = {mapping[k]: v for k, v in record["units"].items()}
        blob = (json.dumps(record, indent=1, sort_keys=True) + "\n").encode()
        _atomic_write(path, blob)
        rel = path.relative_to(data_dir).as_posix()
        manifest["files"][rel].update(sha256=_sha256(blob), size=len(blob))
        log.append(f"{rel}: {len(mapping)} units, {len(record['units'])} committed, re-keyed")


def _rekey_suites(data_dir: Path, manifest: dict, log: list[str]) -> None:
    from ..lm.minisuite import SCALES

    for path in sorted((data_dir / "lm").glob("*/suite.json")):
        index = json.loads(path.read_text(encoding="utf-8"))
        meta = index.get("meta", {})
        old = meta.get("config_key")
        if old is None:
            continue
        match = [c for c in SCALES.values() if legacy_config_key(c) == old]
        if not match:
            if any(config_key(c) == old for c in SCALES.values()):
                continue  # already re-keyed
            log.append(
                f"{path.relative_to(data_dir).as_posix()}: config key {old} is no current suite's (built by "
                "older code); left as it is"
            )
            continue
        meta["config_key"] = config_key(match[0])
        raw = path.read_text(encoding="utf-8")
        indent = 1 if raw.startswith('{\n "') else 2
        blob = (json.dumps(index, indent=indent) + "\n").encode()
        _atomic_write(path, blob)
        rel = path.relative_to(data_dir).as_posix()
        manifest["files"][rel].update(sha256=_sha256(blob), size=len(blob))
        log.append(f"{rel}: config key {old} -> {meta['config_key']}")


def rekey(legacy_root: str | Path, data_dir: str | Path = DATA_DIR) -> list[str]:
    """Re-key every committed result under ``data_dir``, checking old keys against the format-1 source tree at
    ``legacy_root`` (module docstring); returns what was done, one line each."""
    data_dir, root = Path(data_dir), Path(legacy_root)
    if not (root / "lib" / "cache.py").is_file():
        raise ValueError(f"legacy_root {root} holds no lib/cache.py: give a checkout of the last format-1 commit")
    manifest = _read_manifest(data_dir)
    log: list[str] = []
    _rekey_entries(data_dir, manifest, log, root)
    _rekey_units(data_dir, manifest, log, root)
    _rekey_suites(data_dir, manifest, log)
    manifest["files"] = dict(sorted(manifest["files"].items()))
    _atomic_write(data_dir / "manifest.json", (json.dumps(manifest, indent=2) + "\n").encode())
    return log
