"""lib.studies._sweep: executors (threads, the default process pool, dask.distributed), resuming after a kill, errors."""

from __future__ import annotations

import concurrent.futures as cf
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from lib.core.cache import Cache
from lib.studies._sweep import SweepError, run_sweep

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sweep_helpers import Job, calls, square  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def jobs(n, log, **kw):
    return [Job(x=i, log=str(log), **kw) for i in range(n)]


def test_results_in_order_and_second_run_loads_everything(tmp_path):
    cache = Cache(tmp_path / "c", enabled=True)
    log = tmp_path / "calls.log"
    with cf.ThreadPoolExecutor(2) as ex:
        first = run_sweep(square, jobs(6, log), executor=ex, cache=cache)
        second = run_sweep(square, jobs(6, log), executor=ex, cache=cache)
    assert [r["y"] for r in first.results] == [i * i for i in range(6)]
    assert first.computed == list(range(6)) and first.loaded == []
    assert second.loaded == list(range(6)) and second.computed == []
    assert sorted(calls(log)) == list(range(6))  # nothing computed twice


def test_duplicates_are_computed_once(tmp_path):
    log = tmp_path / "calls.log"
    configs = [Job(1, str(log)), Job(2, str(log)), Job(1, str(log))]
    with cf.ThreadPoolExecutor(2) as ex:
        out = run_sweep(square, configs, executor=ex, cache=Cache(tmp_path / "c", enabled=True))
    assert [r["y"] for r in out.results] == [1, 4, 1]
    assert sorted(calls(log)) == [1, 2]


def test_errors_are_reported_with_their_config_and_do_not_lose_the_others(tmp_path):
    cache = Cache(tmp_path / "c", enabled=True)
    configs = [Job(0), Job(1, fail=True), Job(2)]
    with cf.ThreadPoolExecutor(2) as ex, pytest.raises(SweepError) as info:
        run_sweep(square, configs, executor=ex, cache=cache)
    message = str(info.value)
    assert "Job(x=1" in message and "fails on purpose" in message and "Traceback" in message
    result = info.value.result
    assert result.results[0]["y"] == 0 and result.results[2]["y"] == 4 and result.results[1] is None
    assert cache.load(square, Job(2))[0] and not cache.load(square, Job(1, fail=True))[0]
    with cf.ThreadPoolExecutor(2) as ex:
        quiet = run_sweep(square, configs, executor=ex, cache=cache, raise_on_error=False)
    assert list(quiet.errors) == [1] and quiet.loaded == [0, 2]


def test_default_process_pool(tmp_path):
    out = run_sweep(square, [Job(3), Job(4)], cache=Cache(tmp_path / "c", enabled=True), max_workers=2)
    assert [r["y"] for r in out.results] == [9, 16]


def test_dask_local_cluster_on_loopback(tmp_path):
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None, silence_logs=40
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        out = run_sweep(
            square, [Job(5), Job(6)], executor=client.get_executor(), cache=Cache(tmp_path / "c", enabled=True)
        )
    assert [r["y"] for r in out.results] == [25, 36] and out.computed == [0, 1]


def test_killed_sweep_resumes_without_recomputing_or_losing(tmp_path):
    """A real SIGKILL of the sweep's process group part-way; the rerun loads what finished and computes the rest."""
    n = 10
    cache_dir, log = tmp_path / "c", tmp_path / "calls.log"
    script = textwrap.dedent(f"""
        import sys
        sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / "tests")!r}]
        from lib.core.cache import Cache
        from lib.studies._sweep import run_sweep
        from sweep_helpers import Job, square
        run_sweep(square, [Job(x=i, log={str(log)!r}, sleep=0.4) for i in range({n})],
                  cache=Cache({str(cache_dir)!r}, enabled=True), max_workers=2)
    """)
    proc = subprocess.Popen(
        [sys.executable, "-c", script], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.time() + 60
    entries = lambda: sorted(cache_dir.rglob("*.pkl")) if cache_dir.exists() else []  # noqa: E731
    while len(entries()) < 3 and time.time() < deadline:
        assert proc.poll() is None, "the sweep ended before it could be killed"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    done_before = len(entries())
    assert 3 <= done_before < n, f"kill came too late ({done_before} of {n} done)"
    calls_before = calls(log)
    # a SIGKILL that lands inside a write leaves that write's temporary file: nothing can prevent it,
    # but it must never be read as an entry, and the rerun must not add one of its own
    orphans = set(cache_dir.rglob("*.tmp"))

    cache = Cache(cache_dir, enabled=True)
    with cf.ThreadPoolExecutor(2) as ex:
        out = run_sweep(square, [Job(x=i, log=str(log), sleep=0.4) for i in range(n)], executor=ex, cache=cache)
    # every config once, either loaded or computed, and all results right
    assert sorted(out.loaded + out.computed) == list(range(n))
    assert len(out.loaded) == done_before
    assert [r["y"] for r in out.results] == [i * i for i in range(n)]
    # nothing that had finished was computed again
    after = calls(log)[len(calls_before) :]
    assert set(after) == set(out.computed) and not set(after) & set(out.loaded)
    assert set(cache_dir.rglob("*.tmp")) <= orphans, "the rerun left a half-written file behind"


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(configs=[]), ValueError, "empty"),
        (dict(configs="abc"), TypeError, "sequence"),
        (dict(configs=[{"x": 1}]), TypeError, "frozen dataclass"),
        (dict(func=lambda c: c), TypeError, "module-level"),
        (dict(cache="yes"), TypeError, "cache"),
        (dict(executor="pool"), TypeError, "executor"),
    ],
)
def test_bad_sweep_arguments(kwargs, exc, match):
    args = dict(func=square, configs=[Job(1)])
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        run_sweep(args.pop("func"), args.pop("configs"), **args)
