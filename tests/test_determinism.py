"""Executing a chapter twice gives identical claim values (run by `make test` after the chapters were executed).

`make test` executes every staged chapter once (``--executed-dir``, results cache on), then stages a second copy and
executes its first two chapters again with the results cache off, so that everything is recomputed, through the same
nbmake path (``--second-dir``). This test compares every claim's measured value and status between the two.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lib.claims import collect_claims
from tools import bookctl

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = bookctl.chapter_docnames(ROOT)[:2]


@pytest.fixture(scope="module")
def dirs(request) -> tuple[Path, Path]:
    first, second = request.config.getoption("--executed-dir"), request.config.getoption("--second-dir")
    if first is None or second is None:
        pytest.skip("needs --executed-dir and --second-dir (make test passes them after executing the chapters twice)")
    return Path(first), Path(second)


@pytest.mark.parametrize("doc", CHAPTERS)
def test_second_execution_gives_identical_claims(dirs, doc):
    paths = [d / f"{doc}.ipynb" for d in dirs]
    for p in paths:
        assert p.exists(), f"{p}: execute the staged chapters first"
    first, second = (collect_claims([p]) for p in paths)
    assert first, f"{doc}: the executed chapter recorded no claims"
    assert [r.id for r in second] == [r.id for r in first]
    for a, b in zip(first, second):
        assert (a.measured, a.measured_text, a.status) == (b.measured, b.measured_text, b.status), a.id
