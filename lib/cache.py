"""Results cache: keyed by function, frozen config and the `lib` code the function depends on; verified; atomic.

An entry is one file ``<dir>/<function>/<config key>.pkl``::

    ATTNBOOK-CACHE 1\\n
    {header JSON: function, canonical config, code fingerprint, payload sha256 and size, versions}\\n
    <pickled result>

Loading re-checks everything: the magic line, the header, the payload's size (truncation) and sha256 (flipped
bytes), the function, the config (a renamed or hand-edited file) and the code fingerprint (a stale result of older
code). Any mismatch is reported with a :class:`CacheWarning`, the file is removed and the result recomputed: a bad
entry is never used. Writes go to a temporary file in the same folder, are flushed to disk and renamed into place,
so a crash mid-write leaves no half file under the entry's name.

The code fingerprint hashes the abstract syntax trees (docstrings stripped, so prose edits do not invalidate) of
the function's module and of every ``lib`` module it imports, transitively.

Committed results live under ``data/`` and are listed in ``data/manifest.json`` with their sha256, size and the
command that regenerates them (:func:`publish`, :func:`verify_manifest`); :class:`Cache` reads them after its own
folder, after checking the manifest's sha256.

Environment: ``BOOK_CACHE_DIR`` sets the folder (default ``build/cache`` in the repository); ``BOOK_CACHE=0``
disables the cache (every call computes; nothing is read or written).
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import functools
import hashlib
import importlib.util
import json
import math
import os
import pickle
import platform
import sys
import tempfile
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .env import DATA_DIR, ROOT, env_flag

__all__ = [
    "CacheWarning",
    "Cache",
    "canonical_config",
    "config_key",
    "code_fingerprint",
    "default_cache",
    "cached",
    "publish",
    "verify_manifest",
    "load_committed",
]

MAGIC = b"ATTNBOOK-CACHE 1\n"
#: Top-level packages whose modules enter a code fingerprint.
FINGERPRINT_ROOTS = ("lib",)
MANIFEST = "manifest.json"


class CacheWarning(UserWarning):
    """A cache entry was corrupted, truncated, stale or mismatched, and is being recomputed."""


# ------------------------------------------------------------------------------------------------ keys
def _canonical(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        if not obj.__dataclass_params__.frozen:
            raise TypeError(f"configs must be frozen dataclasses; {type(obj).__name__} is not frozen")
        fields = {f.name: _canonical(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
        return {"__type__": f"{type(obj).__module__}.{type(obj).__qualname__}", **fields}
    if isinstance(obj, enum.Enum):
        return {"__enum__": f"{type(obj).__qualname__}.{obj.name}"}
    if isinstance(obj, (bool, str)) or obj is None:
        return obj
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        x = float(obj)
        if not math.isfinite(x):
            return {"__float__": repr(x)}
        return x
    if isinstance(obj, (tuple, list)):
        return [_canonical(x) for x in obj]
    if isinstance(obj, dict):
        if not all(isinstance(k, str) for k in obj):
            raise TypeError("config dicts need string keys")
        return {k: _canonical(obj[k]) for k in sorted(obj)}
    raise TypeError(
        f"cannot use a {type(obj).__name__} in a cache key: configs hold numbers, strings, tuples and frozen dataclasses"
    )


def canonical_config(config: Any) -> str:
    """The config as canonical JSON (sorted keys, type names of dataclasses included)."""
    if not (dataclasses.is_dataclass(config) and not isinstance(config, type)):
        raise TypeError(f"config must be a frozen dataclass instance, got {type(config).__name__}")
    return json.dumps(_canonical(config), sort_keys=True, separators=(",", ":"))


def config_key(config: Any) -> str:
    """A short stable hash of the canonical config (the entry's file name)."""
    return hashlib.sha256(canonical_config(config).encode()).hexdigest()[:24]


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


def _module_file(name: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin)


@functools.lru_cache(maxsize=None)
def _module_info(path: str, stamp: tuple[int, int], module: str) -> tuple[str, frozenset[str]]:
    """(digest of the docstring-free AST, lib modules imported) of one source file (memoised per mtime and size)."""
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    imports = frozenset(_lib_imports(module, tree))
    digest = hashlib.sha256(ast.dump(_strip_docstrings(tree)).encode()).hexdigest()
    return digest, imports


def code_fingerprint(func: Callable) -> str:
    """sha256 over the docstring-free ASTs of ``func``'s module and every ``lib`` module it imports (transitively)."""
    module = getattr(func, "__module__", None)
    if not module:
        raise TypeError(f"{func!r} has no module to fingerprint")
    seen: dict[str, str] = {}
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = _module_file(name)
        if path is None:  # not a module (e.g. a function imported by name) or not Python source
            continue
        as_module = name + (".__init__" if path.name == "__init__.py" else "")
        stat = path.stat()
        digest, imports = _module_info(str(path), (stat.st_mtime_ns, stat.st_size), as_module)
        seen[name] = digest
        todo.extend(imports - set(seen))
    return hashlib.sha256(json.dumps(sorted(seen.items())).encode()).hexdigest()


def _function_id(func: Callable) -> str:
    return f"{func.__module__}.{func.__qualname__}"


# ------------------------------------------------------------------------------------------------ cache
def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Cache:
    """A folder of verified results, plus (read-only) the committed results under ``data/``.

    Parameters
    ----------
    directory : path, optional
        Where entries are written (default: ``BOOK_CACHE_DIR`` or ``build/cache`` in the repository).
    data_dir : path or None
        Folder of committed results with a ``manifest.json`` (default ``data/``); None to ignore it.
    enabled : bool, optional
        False makes every lookup a miss and every store a no-op (default: ``BOOK_CACHE``, on).
    """

    def __init__(self, directory: str | Path | None = None, *, data_dir: str | Path | None = DATA_DIR, enabled: bool | None = None):
        env_dir = os.environ.get("BOOK_CACHE_DIR")
        self.directory = Path(directory) if directory is not None else Path(env_dir) if env_dir else ROOT / "build" / "cache"
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self.enabled = env_flag("BOOK_CACHE", True) if enabled is None else bool(enabled)

    def __repr__(self) -> str:
        return f"Cache({str(self.directory)!r}, enabled={self.enabled})"

    # paths ------------------------------------------------------------------------------------------
    def path(self, func: Callable, config: Any) -> Path:
        """Where the entry of ``func(config)`` lives in this cache's folder."""
        return self.directory / _function_id(func) / f"{config_key(config)}.pkl"

    def _committed_path(self, func: Callable, config: Any) -> Path | None:
        if self.data_dir is None:
            return None
        rel = f"cache/{_function_id(func)}/{config_key(config)}.pkl"
        manifest = _read_manifest(self.data_dir)
        entry = manifest["files"].get(rel)
        if entry is None:
            return None
        path = self.data_dir / rel
        if not path.exists():
            warnings.warn(CacheWarning(f"{path}: listed in the manifest but missing; recomputing"), stacklevel=3)
            return None
        data = path.read_bytes()
        if len(data) != entry["size"] or _sha256(data) != entry["sha256"]:
            warnings.warn(CacheWarning(f"{path}: sha256/size differ from data/{MANIFEST}; not used, recomputing"), stacklevel=3)
            return None
        return path

    # read / write ----------------------------------------------------------------------------------
    def load(self, func: Callable, config: Any) -> tuple[bool, Any]:
        """``(True, value)`` for a verified entry, ``(False, None)`` otherwise (bad entries are reported and removed)."""
        if not self.enabled:
            return False, None
        path = self.path(func, config)
        if path.exists():
            ok, value = self._read_verified(path, func, config, removable=True)
            if ok:
                return True, value
        committed = self._committed_path(func, config)
        if committed is not None:
            return self._read_verified(committed, func, config, removable=False)
        return False, None

    def _read_verified(self, path: Path, func: Callable, config: Any, *, removable: bool) -> tuple[bool, Any]:
        problem = None
        try:
            raw = path.read_bytes()
            if not raw.startswith(MAGIC):
                raise ValueError("not a cache file (bad magic line)")
            end = raw.index(b"\n", len(MAGIC))
            header = json.loads(raw[len(MAGIC) : end])
            payload = raw[end + 1 :]
            if len(payload) != header["payload_size"]:
                raise ValueError(f"truncated: payload has {len(payload)} of {header['payload_size']} bytes")
            if _sha256(payload) != header["payload_sha256"]:
                raise ValueError("corrupted: payload sha256 does not match its header")
            if header["function"] != _function_id(func):
                raise ValueError(f"holds a result of {header['function']}, not {_function_id(func)}")
            if header["config"] != canonical_config(config):
                raise ValueError("holds a result for a different config")
            if header["code"] != code_fingerprint(func):
                raise ValueError("stale: the lib code it was computed with has changed")
            value = pickle.loads(payload)
        except Exception as err:  # noqa: BLE001 - every failure mode means: do not use this entry
            problem = f"{type(err).__name__}: {err}" if not isinstance(err, ValueError) else str(err)
        if problem is None:
            return True, value
        warnings.warn(CacheWarning(f"cache entry {path}: {problem}; recomputing"), stacklevel=3)
        if removable:
            path.unlink(missing_ok=True)
        return False, None

    def store(self, func: Callable, config: Any, value: Any, *, cost: dict | None = None) -> Path | None:
        """Write the entry of ``func(config)`` atomically; returns its path (None when disabled).

        ``cost``: what computing it took (``cpu_seconds``, ``wall_seconds``), kept in the header with the machine
        (processor architecture, torch's CPU kernel capability, thread count) so a committed result says where and
        at what price it was made.
        """
        if not self.enabled:
            return None
        payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        header = {
            "function": _function_id(func),
            "config": canonical_config(config),
            "code": code_fingerprint(func),
            "payload_sha256": _sha256(payload),
            "payload_size": len(payload),
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "numpy": np.__version__,
            "machine": _machine(),
        }
        if cost:
            header["cost"] = dict(cost)
        path = self.path(func, config)
        _atomic_write(path, MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n" + payload)
        return path

    def get_or_compute(self, func: Callable, config: Any, *args: Any, **kwargs: Any) -> Any:
        """``func(config, *args, **kwargs)`` from the cache, or computed and stored.

        Only ``config`` keys the entry: extra arguments must not change the result (a device, a progress label).
        """
        hit, value = self.load(func, config)
        if hit:
            return value
        cpu, wall = time.process_time(), time.perf_counter()
        value = func(config, *args, **kwargs)
        cost = {"cpu_seconds": round(time.process_time() - cpu, 1), "wall_seconds": round(time.perf_counter() - wall, 1)}
        self.store(func, config, value, cost=cost)
        return value


def _machine() -> dict:
    """Where a result was computed: float results of the same code differ between CPU kernels and thread counts."""
    out = {"arch": platform.machine(), "cpus": os.cpu_count()}
    torch = sys.modules.get("torch")  # only when the computation used it (no import for numpy-only results)
    if torch is not None:
        out.update(torch=torch.__version__, cpu_capability=torch.backends.cpu.get_cpu_capability(),
                   threads=torch.get_num_threads())  # fmt: skip
    return out


def default_cache() -> Cache:
    """The cache configured by the environment (``BOOK_CACHE_DIR``, ``BOOK_CACHE``)."""
    return Cache()


def cached(func: Callable) -> Callable:
    """Decorate ``func(config, **kwargs)`` so calls go through the cache; ``cache=False`` or a :class:`Cache` per call.

    The undecorated function stays reachable as ``func.__wrapped__`` (the cache fingerprints its module).
    """

    @functools.wraps(func)
    def wrapper(config, *args, cache: Cache | bool | None = None, **kwargs):
        if cache is False:
            return func(config, *args, **kwargs)
        if cache is None or cache is True:
            cache = default_cache()
        if not isinstance(cache, Cache):
            raise TypeError(f"cache must be a Cache, True/None (default) or False, got {type(cache).__name__}")
        return cache.get_or_compute(func, config, *args, **kwargs)

    return wrapper


# ------------------------------------------------------------------------------------------------ data/
def _read_manifest(data_dir: Path) -> dict:
    path = Path(data_dir) / MANIFEST
    if not path.exists():
        return {"files": {}}
    manifest = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        raise ValueError(f"{path}: expected an object with a 'files' mapping")
    return manifest


def publish(func: Callable, config: Any, command: str, *, cache: Cache | None = None, data_dir: str | Path = DATA_DIR) -> Path:
    """Copy the verified entry of ``func(config)`` into ``data/cache/`` and record it in the manifest.

    ``command`` is the shell command that regenerates it from a fresh clone (it is stored with the entry).
    """
    if not isinstance(command, str) or not command.strip():
        raise ValueError("command must be the non-empty shell command that regenerates the result")
    cache = cache or default_cache()
    if not cache.enabled:
        raise ValueError("the cache is disabled (BOOK_CACHE=0): nothing to publish")
    src = cache.path(func, config)
    ok, _ = cache._read_verified(src, func, config, removable=False) if src.exists() else (False, None)
    if not ok:
        raise ValueError(f"no verified cache entry for {_function_id(func)} with this config: compute it first")
    data_dir = Path(data_dir)
    rel = f"cache/{_function_id(func)}/{config_key(config)}.pkl"
    data = src.read_bytes()
    _atomic_write(data_dir / rel, data)
    manifest = _read_manifest(data_dir)
    entry = {"sha256": _sha256(data), "size": len(data), "command": command.strip(), "function": _function_id(func)}
    header = json.loads(data[len(MAGIC):].split(b"\n", 1)[0])
    entry.update({k: header[k] for k in ("created", "machine", "cost") if k in header})  # where, when, at what price
    manifest["files"][rel] = entry
    manifest["files"] = dict(sorted(manifest["files"].items()))
    _atomic_write(data_dir / MANIFEST, (json.dumps(manifest, indent=2) + "\n").encode())
    return data_dir / rel


def load_committed(func: Callable, config: Any, *, cache: Cache | None = None) -> tuple[bool, Any]:
    """``(True, value)`` for a verified entry of ``func(config)`` in the cache folder or in ``data/``, else
    ``(False, None)``. Committed results are read even with the cache off (``BOOK_CACHE=0``): they are data."""
    cache = cache or default_cache()
    reader = cache if cache.enabled else Cache(Path(tempfile.gettempdir()) / "attnbook-no-local-cache",
                                                data_dir=cache.data_dir, enabled=True)  # fmt: skip
    return reader.load(getattr(func, "__wrapped__", func), config)


def verify_manifest(data_dir: str | Path = DATA_DIR) -> list[str]:
    """Problems with the committed results: missing, resized or altered files, files not in the manifest,
    entries without a regenerating command. An empty list means all is well."""
    data_dir = Path(data_dir)
    manifest = _read_manifest(data_dir)
    problems = []
    for rel, entry in manifest["files"].items():
        path = data_dir / rel
        if not path.exists():
            problems.append(f"{rel}: listed but missing")
            continue
        data = path.read_bytes()
        if len(data) != entry.get("size"):
            problems.append(f"{rel}: size {len(data)} != manifest {entry.get('size')}")
        elif _sha256(data) != entry.get("sha256"):
            problems.append(f"{rel}: sha256 differs from the manifest")
        if not str(entry.get("command", "")).strip():
            problems.append(f"{rel}: no regenerating command")
    listed = set(manifest["files"])
    for path in sorted(data_dir.rglob("*")):
        rel = path.relative_to(data_dir).as_posix()
        if path.is_file() and rel not in listed and rel not in (MANIFEST, "README.md"):
            problems.append(f"{rel}: committed under data/ but not in {MANIFEST}")
    return problems
