"""lib.core.cache: keys, atomic verified entries, corruption/staleness detection, the data/ manifest."""

from __future__ import annotations

import dataclasses
import json
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import lib.core.cache as cache_mod
from lib.core.cache import Cache, CacheWarning, cached, canonical_config, config_key, publish, verify_manifest
from lib.core.numerics import numerics_version
from lib.train import AdamConfig, CopyMapConfig, fit_copy_map


@dataclass(frozen=True)
class Cfg:
    a: int = 1
    b: float = 0.5
    c: tuple = (1, 2)


@dataclass
class Mutable:
    a: int = 1


calls = []


def compute(cfg: Cfg) -> dict:
    calls.append(cfg)
    return {"a": cfg.a, "arr": np.arange(cfg.a) * cfg.b}


@pytest.fixture
def cache(tmp_path):
    calls.clear()
    return Cache(tmp_path / "cache", data_dir=tmp_path / "data", enabled=True)


def test_keys_are_canonical_and_discriminating():
    assert config_key(Cfg()) == config_key(Cfg(1, 0.5, (1, 2)))
    assert config_key(Cfg()) != config_key(Cfg(b=0.25))
    assert config_key(Cfg(c=(1, 2))) != config_key(Cfg(c=(2, 1)))
    nested = CopyMapConfig("softmax", V=4, L=6, P_grid=(10, 20))
    assert config_key(nested) != config_key(dataclasses.replace(nested, adam=AdamConfig(lr=0.01)))
    assert '"__type__":"CopyMapConfig"' in canonical_config(nested)  # a type name, never a module path


@pytest.mark.parametrize("bad", [Mutable(), {"a": 1}, 3, Cfg(c=(np.zeros(2),))])
def test_only_frozen_plain_configs_make_keys(bad):
    with pytest.raises(TypeError):
        config_key(bad)


def test_store_then_load_round_trip(cache):
    v1 = cache.get_or_compute(compute, Cfg(a=3))
    v2 = cache.get_or_compute(compute, Cfg(a=3))
    assert len(calls) == 1 and np.array_equal(v1["arr"], v2["arr"])
    assert cache.path(compute, Cfg(a=3)).exists()
    assert not list(cache.path(compute, Cfg(a=3)).parent.glob("*.tmp"))  # no leftovers of the atomic write


def corrupt_and_reload(cache, mutate):
    cache.get_or_compute(compute, Cfg(a=4))
    path = cache.path(compute, Cfg(a=4))
    mutate(path)
    with pytest.warns(CacheWarning) as record:
        value = cache.get_or_compute(compute, Cfg(a=4))
    assert len(calls) == 2, "a bad entry must be recomputed"
    assert value["a"] == 4
    return str(record[0].message)


def flip_last_byte(path: Path):
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))


def test_flipped_byte_is_detected(cache):
    assert "corrupted" in corrupt_and_reload(cache, flip_last_byte)


def test_truncated_file_is_detected(cache):
    assert "truncated" in corrupt_and_reload(cache, lambda p: p.write_bytes(p.read_bytes()[:-7]))


def test_garbage_file_is_detected(cache):
    assert "magic" in corrupt_and_reload(cache, lambda p: p.write_bytes(b"hello"))


def test_config_mismatch_is_detected(cache):
    """A file whose header holds another config (renamed or edited by hand) is not used."""
    cache.get_or_compute(compute, Cfg(a=5))
    src, dst = cache.path(compute, Cfg(a=5)), cache.path(compute, Cfg(a=4))
    dst.write_bytes(src.read_bytes())
    with pytest.warns(CacheWarning, match="different config"):
        assert cache.get_or_compute(compute, Cfg(a=4))["a"] == 4


def test_a_changed_config_is_a_different_entry(cache):
    cache.get_or_compute(compute, Cfg(a=2))
    cache.get_or_compute(compute, Cfg(a=2, b=0.75))
    assert len(calls) == 2


def test_code_change_makes_entries_stale(cache, monkeypatch):
    cache.get_or_compute(compute, Cfg(a=6))
    monkeypatch.setattr(cache_mod, "numerics_version", lambda func: "0" * 64)
    with pytest.warns(CacheWarning, match="stale"):
        cache.get_or_compute(compute, Cfg(a=6))
    assert len(calls) == 2


def _fresh(monkeypatch, tmp_path, pkg, files):
    import importlib
    import sys

    import lib.core.numerics as numerics

    for name in [m for m in sys.modules if m == pkg or m.startswith(pkg + ".")]:
        del sys.modules[name]
    root = tmp_path / pkg
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(numerics, "NUMERICS", (pkg,))
    importlib.invalidate_caches()
    return root


def test_numerics_version_follows_calls_and_ignores_prose(tmp_path, monkeypatch):
    """Editing the arithmetic of a called function changes the version; a docstring, comment, annotation, decorator
    or an uncalled function of the same module does not."""
    import importlib

    root = _fresh(
        monkeypatch,
        tmp_path,
        "nvdemo",
        {
            "__init__.py": "",
            "a.py": "from .b import g\n\ndef f(x):\n    return g(x)\n",
            "b.py": 'def g(x):\n    """double"""\n    return 2 * x  # twice\n',
        },
    )
    f = importlib.import_module("nvdemo.a").f
    v0 = numerics_version(f)
    (root / "b.py").write_text(
        'def g(x: int) -> int:\n    """Twice x."""\n    return 2 * x  # edited\n\ndef unused():\n    return 7\n'
    )
    assert numerics_version(f) == v0
    (root / "b.py").write_text("def g(x):\n    return 3 * x\n")
    assert numerics_version(f) != v0
    assert numerics_version(fit_copy_map) == numerics_version(fit_copy_map)


def test_numerics_version_is_independent_of_location(tmp_path, monkeypatch):
    """The same definitions in other modules, reached through a package's re-export, give the same version."""
    import importlib

    _fresh(
        monkeypatch,
        tmp_path,
        "nvloc",
        {
            "__init__.py": "",
            "one/__init__.py": "from .core import h\n",
            "one/core.py": "SCALE = 3\n\ndef h(x):\n    return SCALE * x\n",
            "user.py": "from .one import h\n\ndef f(x):\n    return h(x) + 1\n",
            "two/__init__.py": "",
            "two/deep/__init__.py": "from ..helpers import h\n",
            "two/helpers.py": "def h(x):\n    return SCALE * x\n\nSCALE = 3\n",
            "moved.py": "from .two.deep import h\n\n\ndef f(x):\n    return h(x) + 1\n",
        },
    )
    assert numerics_version(importlib.import_module("nvloc.user").f) == numerics_version(
        importlib.import_module("nvloc.moved").f
    )


def test_numerics_version_follows_a_package_init_and_a_registry(tmp_path, monkeypatch):
    """`from .pkg import x` reaches pkg/__init__.py and on to pkg/sub.py; a class held in a registry filled at import
    time (a dict of specs, like lib.models.MIXERS) is reached through the registry."""
    import importlib

    root = _fresh(
        monkeypatch,
        tmp_path,
        "nvreg",
        {
            "__init__.py": "",
            "inner/__init__.py": "from . import sub\nfrom .sub import h\n",
            "inner/sub.py": "def h(x):\n    return x + 1\n",
            "table.py": "REGISTRY = {}\n\ndef register(name, cls):\n    REGISTRY[name] = cls\n",
            "impl.py": "from .table import register\n\nclass Impl:\n    def go(self, x):\n        return x * 5\n\nregister('impl', Impl)\n",
            "user.py": "from .inner import h\nfrom .table import REGISTRY\nfrom . import impl  # noqa\n\n"
            "def f(x):\n    return REGISTRY['impl']().go(h(x))\n",
        },
    )
    f = importlib.import_module("nvreg.user").f
    v0 = numerics_version(f)
    (root / "inner/sub.py").write_text("def h(x):\n    return x + 2\n")
    assert numerics_version(f) != v0
    v1 = numerics_version(f)
    (root / "impl.py").write_text(
        "from .table import register\n\nclass Impl:\n    def go(self, x):\n        return x * 6\n\n"
        "register('impl', Impl)\n"
    )
    assert numerics_version(f) != v1


def test_disabled_cache_computes_every_time(tmp_path):
    calls.clear()
    off = Cache(tmp_path / "c", enabled=False)
    off.get_or_compute(compute, Cfg())
    off.get_or_compute(compute, Cfg())
    assert len(calls) == 2 and not (tmp_path / "c").exists()


def test_env_disables_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("BOOK_CACHE", "0")
    monkeypatch.setenv("BOOK_CACHE_DIR", str(tmp_path / "envcache"))
    c = Cache()
    assert not c.enabled and c.directory == tmp_path / "envcache"


def test_cached_decorator(tmp_path):
    calls.clear()
    memo = cached(compute)
    c = Cache(tmp_path / "c", enabled=True)
    memo(Cfg(a=2), cache=c)
    memo(Cfg(a=2), cache=c)
    memo(Cfg(a=2), cache=False)
    assert len(calls) == 2
    with pytest.raises(TypeError, match="cache"):
        memo(Cfg(), cache="yes")


def test_cached_fit_copy_map_round_trip(tmp_path):
    cfg = CopyMapConfig("softmax", V=4, L=6, P_grid=(5, 50), init_seeds=(0,), adam=AdamConfig(steps=50))
    c = Cache(tmp_path / "c", enabled=True)
    a = c.get_or_compute(fit_copy_map, cfg)
    b = c.get_or_compute(fit_copy_map, cfg)
    assert a is not b and np.array_equal(a.U, b.U) and b.config == cfg


# ------------------------------------------------------------------------------------------ data/ manifest
def test_publish_and_verify_manifest(cache, tmp_path):
    data = tmp_path / "data"
    cache.get_or_compute(compute, Cfg(a=7))
    with pytest.raises(ValueError, match="command"):
        publish(compute, Cfg(a=7), " ", cache=cache, data_dir=data)
    with pytest.raises(ValueError, match="no verified cache entry"):
        publish(compute, Cfg(a=8), "make x", cache=cache, data_dir=data)
    path = publish(compute, Cfg(a=7), "python -m something --a 7", cache=cache, data_dir=data)
    manifest = json.loads((data / "manifest.json").read_text())
    entry = manifest["files"][path.relative_to(data).as_posix()]
    assert entry["command"] == "python -m something --a 7" and entry["size"] == path.stat().st_size
    assert verify_manifest(data) == []

    # the committed copy serves a fresh cache folder
    calls.clear()
    fresh = Cache(tmp_path / "other", data_dir=data, enabled=True)
    assert fresh.get_or_compute(compute, Cfg(a=7))["a"] == 7 and calls == []

    # an altered committed file is reported by the manifest check and not used
    flip_last_byte(path)
    assert any("sha256" in p for p in verify_manifest(data))
    with pytest.warns(CacheWarning, match="manifest"):
        fresh.get_or_compute(compute, Cfg(a=7))
    assert len(calls) == 1

    (data / ".publish.lock").write_bytes(b"")  # a hidden file (lock, temporary) is not a result
    (data / "paper" / ".checkpoints").mkdir(parents=True)
    (data / "paper" / ".checkpoints" / "unit.pt").write_bytes(b"x")  # nor a unit's checkpoint in a hidden folder
    (data / "stray.bin").write_bytes(b"x")
    assert [p for p in verify_manifest(data) if "not in manifest.json" in p] == [
        "stray.bin: committed under data/ but not in manifest.json"
    ]
    path.unlink()
    assert any("missing" in p for p in verify_manifest(data))


def test_repository_manifest_is_consistent():
    assert verify_manifest() == []


def test_no_warning_on_clean_hits(cache):
    cache.get_or_compute(compute, Cfg(a=9))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cache.get_or_compute(compute, Cfg(a=9))
