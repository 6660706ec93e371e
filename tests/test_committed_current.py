"""Every committed result under data/ was computed by the code as it is now: an edit to a module in a committed
function's import closure (a fingerprint, lib.cache.code_fingerprint) makes its entry stale, and the chapter that
reads it would fail or recompute hours of training. This test names the stale functions."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import lib.cache as cache

DATA = Path(__file__).resolve().parents[1] / "data"


def _function(function_id: str):
    module, _, qualname = function_id.rpartition(".")
    while True:  # the longest importable prefix is the module, the rest the qualified name
        try:
            obj = importlib.import_module(module)
            break
        except ImportError:
            module, _, head = module.rpartition(".")
            qualname = f"{head}.{qualname}"
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return getattr(obj, "__wrapped__", obj)


def _headers():
    for path in sorted(DATA.rglob("*")):
        if path.is_file():
            raw = path.read_bytes()
            if raw.startswith(cache.MAGIC):
                end = raw.index(b"\n", len(cache.MAGIC))
                yield path, json.loads(raw[len(cache.MAGIC) : end])


def test_every_committed_result_is_current():
    headers = list(_headers())
    assert headers, "no committed results found"
    stale = {}
    for path, header in headers:
        if header["code"] != cache.code_fingerprint(_function(header["function"])):
            stale.setdefault(header["function"], []).append(path.name)
    assert not stale, f"stale committed results (their code changed): { {k: len(v) for k, v in stale.items()} }"


def test_every_committed_paper_scale_unit_is_current():
    """A unit committed under data/paper/ is keyed by the code of its training function; after an edit of that code
    its key is no longer among the study's, the study would silently lose it (and its summary would describe runs
    of the old code): the edit must come with the study rerun, or not at all."""
    from lib.paper_scale import published
    from lib.paper_studies import STUDIES, make_study
    from lib.study_unit import unit_key

    files = {p.stem for p in (DATA / "paper").glob("*.json")}
    assert files <= set(STUDIES), f"published studies that are not registered: {sorted(files - set(STUDIES))}"
    for name in sorted(files):
        keys = {unit_key(u) for u in make_study(name, DATA).units}
        saved = set(published(name, DATA)["units"])
        assert saved <= keys, f"{name}: {len(saved - keys)} committed units of code that has changed since"
