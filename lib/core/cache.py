"""Results cache: keyed by a result's name and frozen config, checked against its numerics version; verified; atomic.

An entry is one file ``<dir>/<name>/<config key>.pkl``::

    ATTNBOOK-CACHE 2\\n
    {header JSON: name, canonical config, numerics version, payload sha256 and size, versions}\\n
    <pickled result>

A result's identity is location-free: ``name`` is the function's registered name (:func:`cached`, default its
``__name__``), the canonical config names each dataclass by its registered type name (:func:`type_name`, default its
``__qualname__``), never by module, and the numerics version (:func:`lib.core.numerics.numerics_version`) hashes the
definitions that compute it by content. Moving or renaming modules, or editing infrastructure, stales nothing.

Loading re-checks everything: the magic line, the header, the payload's size (truncation) and sha256 (flipped
bytes), the name, the config (a renamed or hand-edited file) and the numerics version (a result of code whose
arithmetic visibly changed). Any mismatch is reported with a :class:`CacheWarning`, the file is removed and the
result recomputed: a bad entry is never used. Writes go to a temporary file in the same folder, are flushed to disk
and renamed into place, so a crash mid-write leaves no half file under the entry's name.

Committed results live under ``data/`` and are listed in ``data/manifest.json`` with their sha256, size and the
command that regenerates them (:func:`publish`, :func:`verify_manifest`); :class:`Cache` reads them after its own
folder, after checking the manifest's sha256.

Environment: ``BOOK_CACHE_DIR`` sets the folder (default ``build/cache`` in the repository); ``BOOK_CACHE=0``
disables the cache (every call computes; nothing is read or written).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
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
from .numerics import numerics_version

__all__ = [
    "CacheWarning",
    "Cache",
    "canonical_config",
    "config_key",
    "numerics_version",
    "type_name",
    "result_name",
    "result_function",
    "default_cache",
    "cached",
    "publish",
    "verify_manifest",
    "register_files",
    "load_committed",
]

MAGIC = b"ATTNBOOK-CACHE 2\n"
MANIFEST = "manifest.json"


class CacheWarning(UserWarning):
    """A cache entry was corrupted, truncated, stale or mismatched, and is being recomputed."""


# ------------------------------------------------------------------------------------------------ keys
_TYPE_NAMES: dict[str, str] = {}  # registered type name -> "module.qualname" of the lib class that holds it
_RESULT_NAMES: dict[str, str] = {}  # registered result name -> "module.qualname" of the lib function that holds it


def _register(table: dict, name: str, where: str, what: str) -> None:
    held = table.setdefault(name, where)
    if held != where and held.startswith("lib.") and where.startswith("lib."):
        raise ValueError(f"{what} name {name!r} is taken by {held}; give {where} another (a key must name one thing)")


def type_name(cls: type) -> str:
    """The name a config type has in cache keys: ``cls.__key_name__`` if set, else ``cls.__qualname__`` (no module)."""
    name = cls.__dict__.get("__key_name__") or cls.__qualname__
    _register(_TYPE_NAMES, name, f"{cls.__module__}.{cls.__qualname__}", "config type")
    return name


def result_name(func: Callable) -> str:
    """The name a function's results have in cache keys: the one :func:`cached` registered, else ``__name__``."""
    func = getattr(func, "__wrapped__", func)
    return getattr(func, "__result_name__", None) or func.__name__


def result_function(name: str) -> Callable:
    """The function registered (:func:`cached`) under result name ``name``, imported; ``KeyError`` when none is."""
    where = _RESULT_NAMES[name]
    module, _, qualname = where.rpartition(".")
    import importlib

    func = getattr(importlib.import_module(module), qualname)
    return getattr(func, "__wrapped__", func)


def _canonical(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        if not obj.__dataclass_params__.frozen:
            raise TypeError(f"configs must be frozen dataclasses; {type(obj).__name__} is not frozen")
        fields = {f.name: _canonical(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
        return {"__type__": type_name(type(obj)), **fields}
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

    def __init__(
        self,
        directory: str | Path | None = None,
        *,
        data_dir: str | Path | None = DATA_DIR,
        enabled: bool | None = None,
    ):
        env_dir = os.environ.get("BOOK_CACHE_DIR")
        self.directory = (
            Path(directory) if directory is not None else Path(env_dir) if env_dir else ROOT / "build" / "cache"
        )
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self.enabled = env_flag("BOOK_CACHE", True) if enabled is None else bool(enabled)

    def __repr__(self) -> str:
        return f"Cache({str(self.directory)!r}, enabled={self.enabled})"

    # paths ------------------------------------------------------------------------------------------
    def path(self, func: Callable, config: Any) -> Path:
        """Where the entry of ``func(config)`` lives in this cache's folder."""
        return self.directory / result_name(func) / f"{config_key(config)}.pkl"

    def _committed_path(self, func: Callable, config: Any) -> Path | None:
        if self.data_dir is None:
            return None
        rel = f"cache/{result_name(func)}/{config_key(config)}.pkl"
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
            warnings.warn(
                CacheWarning(f"{path}: sha256/size differ from data/{MANIFEST}; not used, recomputing"), stacklevel=3
            )
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
            if header["name"] != result_name(func):
                raise ValueError(f"holds a result of {header['name']}, not {result_name(func)}")
            if header["config"] != canonical_config(config):
                raise ValueError("holds a result for a different config")
            if header["numerics"] != numerics_version(func):
                raise ValueError("stale: the code that computes it has changed (its numerics version differs)")
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
            "name": result_name(func),
            "config": canonical_config(config),
            "numerics": numerics_version(func),
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
        cost = {
            "cpu_seconds": round(time.process_time() - cpu, 1),
            "wall_seconds": round(time.perf_counter() - wall, 1),
        }
        self.store(func, config, value, cost=cost)
        return value


#: CPU features that change which kernels run (and so the last bits of float results).
_ISA_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile")


@functools.lru_cache(maxsize=1)
def _cpu() -> dict:
    """The CPU's model name and kernel-relevant features, from ``/proc/cpuinfo`` (empty where there is none)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    model = next((ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("model name")), "")
    flags = next((set(ln.split(":", 1)[1].split()) for ln in text.splitlines() if ln.startswith("flags")), set())
    return {"cpu": model, "isa": [f for f in _ISA_FLAGS if f in flags]}


def _machine() -> dict:
    """Where a result was computed: float results of the same code differ between CPU kernels (two CPUs of one
    torch capability may still differ in the last bits), and thread counts."""
    out = {"arch": platform.machine(), "cpus": os.cpu_count(), **_cpu()}
    torch = sys.modules.get("torch")  # only when the computation used it (no import for numpy-only results)
    if torch is not None:
        out.update(
            torch=torch.__version__,
            cpu_capability=torch.backends.cpu.get_cpu_capability(),
            threads=torch.get_num_threads(),
        )
    return out


def default_cache() -> Cache:
    """The cache configured by the environment (``BOOK_CACHE_DIR``, ``BOOK_CACHE``)."""
    return Cache()


def cached(func: Callable | None = None, *, name: str | None = None) -> Callable:
    """Decorate ``func(config, **kwargs)`` so calls go through the cache; ``cache=False`` or a :class:`Cache` per call.

    ``name`` is the results' name in keys (default ``func.__name__``): one name, one function across ``lib``. Used
    bare (``@cached``) or with a name (``@cached(name="width_study")``). The undecorated function stays reachable
    as ``func.__wrapped__``.
    """
    if func is None:
        return functools.partial(cached, name=name)
    label = name or func.__name__
    _register(_RESULT_NAMES, label, f"{func.__module__}.{func.__qualname__}", "result")
    func.__result_name__ = label

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


def publish(
    func: Callable, config: Any, command: str, *, cache: Cache | None = None, data_dir: str | Path = DATA_DIR
) -> Path:
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
        raise ValueError(f"no verified cache entry for {result_name(func)} with this config: compute it first")
    data_dir = Path(data_dir)
    rel = f"cache/{result_name(func)}/{config_key(config)}.pkl"
    data = src.read_bytes()
    _atomic_write(data_dir / rel, data)
    manifest = _read_manifest(data_dir)
    entry = {"sha256": _sha256(data), "size": len(data), "command": command.strip(), "name": result_name(func)}
    header = json.loads(data[len(MAGIC) :].split(b"\n", 1)[0])
    entry.update({k: header[k] for k in ("created", "machine", "cost") if k in header})  # where, when, at what price
    manifest["files"][rel] = entry
    manifest["files"] = dict(sorted(manifest["files"].items()))
    _atomic_write(data_dir / MANIFEST, (json.dumps(manifest, indent=2) + "\n").encode())
    return data_dir / rel


def load_committed(func: Callable, config: Any, *, cache: Cache | None = None) -> tuple[bool, Any]:
    """``(True, value)`` for a verified entry of ``func(config)`` in the cache folder or in ``data/``, else
    ``(False, None)``. Committed results are read even with the cache off (``BOOK_CACHE=0``): they are data."""
    cache = cache or default_cache()
    reader = (
        cache
        if cache.enabled
        else Cache(Path(tempfile.gettempdir()) / "attnbook-no-local-cache", data_dir=cache.data_dir, enabled=True)
    )
    return reader.load(getattr(func, "__wrapped__", func), config)


def verify_manifest(data_dir: str | Path = DATA_DIR) -> list[str]:
    """Problems with the committed results: missing, resized or altered files, files not in the manifest,
    entries without a regenerating command. An empty list means all is well. Hidden files and folders (a name
    starting with a dot: the publishing lock, a temporary file before its rename, the checkpoints of units in flight)
    are not results and are not reported."""
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
        if (
            path.is_file()
            and not any(part.startswith(".") for part in path.relative_to(data_dir).parts)
            and rel not in listed
            and rel not in (MANIFEST, "README.md")
        ):
            problems.append(f"{rel}: committed under data/ but not in {MANIFEST}")
    return problems


def register_files(paths, command: str, function: str, data_dir: Path = DATA_DIR) -> None:
    """Add plain files under ``data_dir`` to its manifest (sha256, size, regenerating command, producing function)."""
    manifest = _read_manifest(data_dir)
    for path in paths:
        data = Path(path).read_bytes()
        rel = Path(path).resolve().relative_to(Path(data_dir).resolve()).as_posix()
        manifest["files"][rel] = {"sha256": _sha256(data), "size": len(data), "command": command, "function": function}
    manifest["files"] = dict(sorted(manifest["files"].items()))
    _atomic_write(Path(data_dir) / "manifest.json", (json.dumps(manifest, indent=2) + "\n").encode())
