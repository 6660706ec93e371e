"""Every committed result under data/ is current: its numerics version (lib.core.numerics.numerics_version, the content
of the code that computes it) is that of the code as it is now. An edit of that arithmetic makes its entry stale, and
the chapter that reads it would fail or recompute hours of training; this test names the stale results. Moving code
or editing infrastructure stales nothing (tests/test_result_identity.py)."""

from __future__ import annotations

import json
from pathlib import Path

import lib  # noqa: F401  (registers the committed studies' result names)
import lib.core.cache as cache
import lib.lm.study_results  # noqa: F401  (registers analyze_run)

DATA = Path(__file__).resolve().parents[1] / "data"


def _headers():
    for path in sorted(DATA.rglob("*")):
        if path.is_file():
            raw = path.read_bytes()
            if raw.startswith(b"ATTNBOOK-CACHE"):
                assert raw.startswith(cache.MAGIC), f"{path}: an entry of an older cache format (re-key it)"
                end = raw.index(b"\n", len(cache.MAGIC))
                yield path, json.loads(raw[len(cache.MAGIC) : end])


def test_every_committed_result_is_current():
    headers = list(_headers())
    assert headers, "no committed results found"
    stale = {}
    for path, header in headers:
        assert path.parent.name == header["name"], f"{path}: filed under {path.parent.name}, holds {header['name']}"
        if header["numerics"] != cache.numerics_version(cache.result_function(header["name"])):
            stale.setdefault(header["name"], []).append(path.name)
    assert not stale, f"stale committed results (their code changed): { {k: len(v) for k, v in stale.items()} }"


def test_every_committed_paper_scale_unit_is_current():
    """A unit committed under data/paper/ is keyed by the numerics of its training function; after an edit of them
    its key is no longer among the study's, the study would silently lose it (and its summary would describe runs
    of the old code): the edit must come with the study rerun, or with `python -m lib.studies equate` showing that
    the new code computes the committed numbers bit for bit (lib.studies._equate), or not at all."""
    from lib.studies._paper_scale import published
    from lib.studies.paper import make_study, split_name
    from lib.studies._study import unit_key

    files = {p.stem for p in (DATA / "paper").glob("*.json")}
    unknown = []
    for name in files:
        try:
            split_name(name)  # a registered study, or one at a seed offset
        except ValueError:
            unknown.append(name)
    assert not unknown, f"published studies that are not registered: {sorted(unknown)}"
    for name in sorted(files):
        keys = {unit_key(u) for u in make_study(name, DATA).units}
        saved = set(published(name, DATA)["units"])
        assert saved <= keys, (
            f"{name}: {len(saved - keys)} committed units of code that has changed since (rerun the study, or prove "
            "the change numerics-neutral: python -m lib.studies equate)"
        )
