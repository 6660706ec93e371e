"""Executing a chapter twice gives identical claim values (run by `make test` after the chapters were executed).

The first execution is the one nbmake made of the staged book (``--executed-dir``); this test executes the same
chapters again from their sources, with the results cache off so that everything is recomputed, and compares every
claim's measured value and status. It covers the first two chapters of the table of contents (the issue asks for at
least two; while the book has one chapter, it covers that one).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lib.claims import collect_claims
from tools import bookctl

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = bookctl.chapter_docnames(ROOT)[:2]


@pytest.fixture(scope="module")
def executed_dir(request) -> Path:
    value = request.config.getoption("--executed-dir")
    if value is None:
        pytest.skip("no --executed-dir given (make test passes it after executing the chapters)")
    return Path(value)


@pytest.mark.parametrize("doc", CHAPTERS)
def test_second_execution_gives_identical_claims(executed_dir, doc, tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    first_path = executed_dir / f"{doc}.ipynb"
    assert first_path.exists(), f"{first_path}: execute the staged book first"
    first = collect_claims([first_path])
    assert first, f"{doc}: the executed chapter recorded no claims"

    monkeypatch.setenv("BOOK_FAST", "1")
    monkeypatch.setenv("BOOK_CACHE", "0")  # recompute everything
    monkeypatch.setenv("BOOK_PROGRESS", "0")
    nb = nbformat.reads(bookctl.notebook_text(ROOT / f"{doc}.md"), as_version=4)
    NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    second_path = tmp_path / "second.ipynb"
    second_path.write_text(json.dumps(nb))
    second = collect_claims([second_path])

    assert [r.id for r in second] == [r.id for r in first]
    for a, b in zip(first, second):
        assert (a.measured, a.measured_text, a.status) == (b.measured, b.measured_text, b.status), a.id
