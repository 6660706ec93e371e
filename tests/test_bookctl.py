"""tools/bookctl.py: staging, the executed-only ledger, new chapters."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tools import bookctl

ROOT = Path(__file__).resolve().parent.parent


def test_stage_converts_chapters_to_notebooks(tmp_path):
    out = tmp_path / "book"
    bookctl.stage(out, ROOT)
    assert (out / "_config.yml").exists() and (out / "_toc.yml").exists() and (out / "intro.md").exists()
    for doc in bookctl.chapter_docnames(ROOT):
        nb = json.loads((out / f"{doc}.ipynb").read_text())
        assert nb["metadata"]["kernelspec"]["name"] == "python3"
        assert not (out / f"{doc}.md").exists()  # one source per page (Sphinx would warn about two)
    # the ledger refuses chapters that were not executed
    with pytest.raises(SystemExit, match="not been executed"):
        bookctl.ledger(out, ROOT)


def test_ledger_from_executed_notebooks(tmp_path):
    import lib
    from lib.claims import CLAIM_KEY

    out = tmp_path / "book"
    bookctl.stage(out, ROOT)
    lib.setup("01_copy_task", fast=True)
    rec = lib.claim("A-soft-order", 0.9, control=0.1, show=False, robustness=[])
    for doc in bookctl.chapter_docnames(ROOT):
        path = out / f"{doc}.ipynb"
        nb = json.loads(path.read_text())
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        for i, cell in enumerate(code):
            cell["execution_count"] = i + 1
        code[-1]["outputs"].append(
            {"output_type": "display_data", "metadata": {CLAIM_KEY: rec.to_json()}, "data": {"text/plain": "x"}}
        )
        path.write_text(json.dumps(nb))
    text, records, paper = bookctl.ledger(out, ROOT)
    assert (out / bookctl.LEDGER_FILE).read_text() == text
    counts = (out / bookctl.COUNTS_FILE).read_text()
    assert counts.startswith("| claims of |") and "At paper scale" in counts  # the landing page leads with it
    assert "| Paper A (8 checks of 1 claim) |" in counts and "of paper B" in counts  # per paper; paper B
    assert "| paper scale |" in text and all(p.scale == "paper" for p in paper)
    assert "`A-soft-order`" in text and "{doc}`1 </chapters/01_copy_task>`" in text
    assert len(records) == len(bookctl.chapter_docnames(ROOT))


def test_snapshot_accept_then_check(tmp_path):
    import dataclasses

    import lib

    lib.setup("01_copy_task", fast=True)
    a = lib.claim("A-soft-order", 0.9, control=0.1, show=False, robustness=[])
    b = lib.claim("A-soft-300", 900.0, show=False, robustness=[])
    snap = tmp_path / "data" / "ledger.json"
    snap.parent.mkdir()
    bookctl.accept_snapshot([a, b], "fast", snap, ROOT)
    assert bookctl.check_snapshot([a, b], "fast", snap) == []
    assert bookctl.check_snapshot([a], "full", snap) == []  # a scale never accepted has nothing to compare
    flipped = dataclasses.replace(b, status="reproduced")
    changes = bookctl.check_snapshot([a, flipped], "fast", snap)
    assert changes == ["01_copy_task/A-soft-300: 'not at our scale' -> 'reproduced'"]
    assert any("not recorded" in c for c in bookctl.check_snapshot([a], "fast", snap))
    c = dataclasses.replace(a, id="A-loss")
    assert any("new claim" in line for line in bookctl.check_snapshot([a, b, c], "fast", snap))
    manifest = json.loads((snap.parent / "manifest.json").read_text())
    assert manifest["files"]["ledger.json"]["command"] == bookctl.ACCEPT_COMMAND
    assert lib.core.cache.verify_manifest(snap.parent) == []  # the snapshot is committed data like any other
    assert "missing" in bookctl.check_snapshot([a], "fast", tmp_path / "nowhere.json")[0]
    # a chapter that read another source (chapter 5 on a hub suite) is left out of the comparison on both sides
    assert bookctl.check_snapshot([a, flipped], "fast", snap, skip={"01_copy_task"}) == []
    # at another seed offset the share of kept statuses is what counts (a claim not recorded counts as moved)
    assert bookctl.kept_share([a, flipped], "fast", snap) == (1, 2) and bookctl.kept_share([a], "fast", snap) == (1, 2)
    assert bookctl.kept_share([a, b], "fast", snap) == (2, 2) and bookctl.seed_offsets([a, b]) == {0}


def test_ledger_check_at_another_seed_offset_needs_nine_in_ten_kept(tmp_path, monkeypatch, capsys):
    import dataclasses

    import lib

    lib.setup("01_copy_task", fast=True)
    base = lib.claim("A-soft-order", 0.9, control=0.1, show=False, robustness=[])
    recs = [dataclasses.replace(base, id=f"X{i}") for i in range(10)]
    snap = tmp_path / "ledger.json"
    bookctl.accept_snapshot(recs, "fast", snap, ROOT)
    moved = lambda n, off: [
        dataclasses.replace(
            r,
            status="contradicted" if i < n else r.status,  # noqa: E731
            extra=dict(r.extra, seed_offset=off),
        )
        for i, r in enumerate(recs)
    ]
    monkeypatch.setattr(bookctl, "ledger", lambda out: ("# ledger", moved_now, paper_now))
    paper_now = []
    moved_now = moved(1, 4)  # 9 of 10 kept at offset 4: passes, listing the moved claim
    assert bookctl.main(["ledger", str(tmp_path), "--check", str(snap)]) == 0
    assert "9 of 10 statuses kept" in capsys.readouterr().out
    moved_now = moved(2, 4)  # 8 of 10: fails
    assert bookctl.main(["ledger", str(tmp_path), "--check", str(snap)]) == 1
    moved_now = moved(1, 0)  # at the default seed any change fails
    assert bookctl.main(["ledger", str(tmp_path), "--check", str(snap)]) == 1
    moved_now = moved(0, 4)  # and a build at another offset never becomes the snapshot
    with pytest.raises(SystemExit, match="seed offset"):
        bookctl.main(["ledger", str(tmp_path), "--accept", str(snap)])
    # the paper-scale column (committed studies) does not depend on the offset: any change of it fails
    paper = dataclasses.replace(base, id="B-x", scale="paper", status="partial")
    bookctl.accept_snapshot([paper], bookctl.PAPER_STUDIES, snap, ROOT)
    paper_now = [paper]
    assert bookctl.main(["ledger", str(tmp_path), "--check", str(snap)]) == 0
    paper_now = [dataclasses.replace(paper, status="not at our scale")]
    assert bookctl.main(["ledger", str(tmp_path), "--check", str(snap)]) == 1
    assert "paper-scale statuses" in capsys.readouterr().err


def test_the_hub_source_takes_chapter_5_out_of_the_comparison(monkeypatch):
    monkeypatch.delenv("BOOK_LM_HUB", raising=False)
    assert bookctl.skipped_chapters() == set()
    monkeypatch.setenv("BOOK_LM_HUB", "attnbook/bpe")
    assert bookctl.skipped_chapters() == {"05_language_models"}


def test_new_chapter_from_template(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    for name in ("_config.yml", "_toc.yml", "intro.md"):
        shutil.copy2(ROOT / name, root / name)
    shutil.copytree(ROOT / "templates", root / "templates")
    (root / "chapters").mkdir()
    path = bookctl.new_chapter("02_bayesian_posterior", "The Bayesian derivation", root)
    text = path.read_text()
    assert text.splitlines()[12] == "# The Bayesian derivation"
    assert 'lib.setup("02_bayesian_posterior")' in text
    assert bookctl.repository_url(root) in text
    with pytest.raises(SystemExit, match="exists"):
        bookctl.new_chapter("02_bayesian_posterior", "again", root)
    with pytest.raises(SystemExit, match="slug"):
        bookctl.new_chapter("bad", "x", root)


def test_robustness_run_is_recorded_from_an_executed_book(tmp_path):
    import lib
    from lib.claims import CLAIM_KEY

    out = tmp_path / "book"
    bookctl.stage(out, ROOT)
    lib.setup("01_copy_task", fast=True)
    sure = lib.core.stats.Interval(0.95, 0.93, 0.97, 0.9, 5)  # wholly past the bound
    rec = lib.claim("A-soft-order", 0.95, interval=sure, control=0.05, show=False, robustness=[])
    first = bookctl.chapter_docnames(ROOT)[0]
    path = out / f"{first}.ipynb"
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    code[-1]["outputs"] = [{"output_type": "display_data", "metadata": {CLAIM_KEY: rec.to_json()}, "data": {}}]
    code[0]["outputs"] = [{"output_type": "error", "ename": "AssertionError", "evalue": "", "traceback": []}]
    path.write_text(json.dumps(nb))
    run = bookctl.robustness_run(out, "BOOK_SEED=1", ROOT)
    assert run["statuses"] == {"01_copy_task/A-soft-order": "reproduced"}  # the raw status, before robustness
    assert "01_copy_task" in run["failed_chapters"] and run["cpu_capability"]
    target = tmp_path / "data" / "robustness.json"
    target.parent.mkdir()
    bookctl.record_robustness(run, target, ROOT)
    bookctl.record_robustness(dict(run, statuses={}), target, ROOT)  # the same label replaces the run
    runs = json.loads(target.read_text())["runs"]
    assert len(runs) == 1 and runs[0]["statuses"] == {}
    assert lib.claims.robustness_runs(target) == runs
    assert lib.core.cache.verify_manifest(target.parent) == []


def test_robustness_merge_redoes_only_the_named_chapters(tmp_path):
    target = tmp_path / "data" / "robustness.json"
    target.parent.mkdir()
    base = {
        "label": "BOOK_SEED=1",
        "date": "2026-12-01",
        "failed_chapters": [],
        "statuses": {"01_copy_task/A-loss": "reproduced", "06_sparse_patterns/B-bias": "partial"},
    }
    bookctl.record_robustness(base, target, ROOT)
    redo = dict(base, statuses={"06_sparse_patterns/B-bias": "not at our scale"})
    bookctl.record_robustness(redo, target, ROOT, merge=True)
    (run,) = json.loads(target.read_text())["runs"]
    assert run["statuses"] == {"01_copy_task/A-loss": "reproduced", "06_sparse_patterns/B-bias": "not at our scale"}
    assert run["redone"] == {"06_sparse_patterns": "2026-12-01"}


def test_execution_times_read_the_cell_timestamps(tmp_path):
    out = tmp_path / "book"
    bookctl.stage(out, ROOT)
    first = bookctl.chapter_docnames(ROOT)[0]
    path = out / f"{first}.ipynb"
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    code[0]["metadata"]["execution"] = {
        "iopub.execute_input": "2026-12-07T03:00:00.000000Z",
        "shell.execute_reply": "2026-12-07T03:00:01.000000Z",
    }
    code[-1]["metadata"]["execution"] = {
        "iopub.execute_input": "2026-12-07T03:02:00.000000Z",
        "shell.execute_reply": "2026-12-07T03:02:05.500000Z",
    }
    path.write_text(json.dumps(nb))
    times = bookctl.execution_times(out, ROOT)
    assert times[Path(first).name] == 125.5  # first cell's start to the last cell's end
    assert all(t is None for name, t in times.items() if name != Path(first).name)  # never executed
