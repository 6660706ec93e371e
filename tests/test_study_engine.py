"""The paper-scale engine keeps what it computed: a dead unit fails alone, publishing is locked and atomic, and a
truncated study file is reported, not a traceback."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pytest

from lib.core.cache import Cache
from lib.studies._paper_scale import PaperStudy, UnreadableStudy, publish, published, run_study, unit
from lib.studies._processes import TaskProcesses, WorkerDied

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sweep_helpers  # noqa: E402  (task processes import the unit functions by name)
from sweep_helpers import Risky  # noqa: E402


def _study(dies=(), n=4, sleep=0.0, name="squares") -> PaperStudy:
    units = tuple(unit("sweep_helpers:square_or_die", Risky(x, die=x in dies, sleep=sleep)) for x in range(n))
    return PaperStudy(name, (), "squares (a test)", units, "sweep_helpers:summarize_squares")


@pytest.fixture
def data(tmp_path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    (data / "manifest.json").write_text(json.dumps({"files": {}}))
    return data


def test_a_task_whose_process_dies_fails_alone():
    with TaskProcesses(2) as ex:
        futures = [ex.submit(sweep_helpers.square_or_die, Risky(x, die=x == 1)) for x in range(4)]
        done = [f.exception(timeout=120) for f in futures]
    assert isinstance(done[1], WorkerDied) and "exit code -9" in str(done[1])
    assert [futures[i].result()["y"] for i in (0, 2, 3)] == [0, 4, 9]


def test_a_task_raises_in_the_parent_as_it_did_in_its_process():
    with TaskProcesses(1) as ex:
        f = ex.submit(sweep_helpers.square, sweep_helpers.Job(3, fail=True))
        with pytest.raises(ValueError, match="fails on purpose"):
            f.result(timeout=120)
    with pytest.raises(RuntimeError, match="after shutdown"):
        ex.submit(sweep_helpers.square, sweep_helpers.Job(1))
    with pytest.raises(ValueError, match="max_workers"):
        TaskProcesses(0)


def test_a_unit_that_kills_its_worker_costs_only_itself(data, tmp_path):
    from lib.studies._sweep import SweepError

    cache = Cache(tmp_path / "cache", enabled=True)
    with pytest.raises(SweepError, match="process died"):
        run_study(_study(dies={2}), workers=2, cache=cache, data_dir=data)
    record = published("squares", data)
    assert record["done"] == 3 and record["summary"]["y"] == [0, 1, None, 9]  # every other unit is published


def test_two_runs_of_one_study_at_once_lose_and_duplicate_nothing(data, tmp_path):
    study = _study(n=4, sleep=0.3)
    caches = [Cache(tmp_path / f"cache{i}", enabled=True) for i in range(2)]
    errors = []

    def run(i):
        try:
            run_study(study, workers=1, cache=caches[i], data_dir=data)
        except Exception as err:  # noqa: BLE001
            errors.append(err)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    record = published("squares", data)
    assert record["done"] == 4 and record["summary"]["y"] == [x * x for x in range(4)]
    assert not list((data / "paper").glob("*.tmp"))  # no temporary file left behind


def test_a_truncated_study_file_is_named_with_its_repair(data, tmp_path, capsys):
    from lib.studies.paper import paper_records

    run_study(_study(n=2), workers=1, cache=Cache(tmp_path / "cache", enabled=True), data_dir=data)
    path = data / "paper" / "squares.json"
    path.write_text(path.read_text()[:50])  # truncated mid-write by something else
    with pytest.raises(UnreadableStudy, match=r"squares\.json is not valid JSON.*git checkout.*lib\.studies publish"):
        published("squares", data)
    path.write_text("[]")
    with pytest.raises(UnreadableStudy, match="not a study record"):
        publish(_study(n=2), cache=Cache(tmp_path / "cache", enabled=True), data_dir=data)
    real = data / "paper" / "b-random.json"
    real.write_text("{")
    rows = paper_records(data)  # the ledger reports the study instead of crashing
    assert [(r.id, r.status) for r in rows] == [("B-random", "not run")] and "unreadable" in rows[0].note
