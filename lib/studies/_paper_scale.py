r"""Paper-scale studies: units of work run through :func:`lib.run_sweep`, resumable, published with what they cost.

A paper-scale study takes CPU-hours, so it is split into **units** (one seed's run, one setting's stack), each a
frozen config and a module-level function that computes it. :func:`run_study` sends the units that are not yet in
the results cache to an executor — a local process pool by default, a ``dask.distributed`` scheduler with
``scheduler="tcp://HOST:PORT"`` — and stores each result the moment it arrives (:func:`lib.run_sweep`): a study
killed part-way resumes where it stopped. :func:`publish` then writes ``data/paper/<name>.json``: how many units are
done ("7 of 10"), the study's summary of the done units, the command that continues it, its cost in CPU-hours and
the CPU capability of every machine that computed a unit.

Each unit's key holds the numerics version of its function (:func:`lib.core.numerics.numerics_version`), so an edit
of the code that computes it gives new keys instead of mixing results of two versions of the code. Every unit runs with one torch
thread in a spawned process, whichever executor carries it, so the published result does not depend on the
executor (tested on a ``LocalCluster``).

Usage::

    python -m lib.studies list          # the registered studies (lib.studies.paper) and what is published
    python -m lib.studies run NAME [--scheduler tcp://HOST:PORT] [--workers N] [--limit K]
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Sequence

from ..core.cache import DATA_DIR, Cache, default_cache
from ._study import StudyUnit, resolve, run_unit, unit, unit_key

__all__ = [
    "StudyUnit",
    "PaperStudy",
    "unit",
    "run_unit",
    "run_study",
    "publish",
    "committed_units",
    "published",
    "executor_for",
    "UnreadableStudy",
]

#: Where published paper-scale studies live (one JSON file per study).
PAPER_DIR = "paper"


@dataclass(frozen=True)
class PaperStudy:
    """A paper-scale study.

    Attributes
    ----------
    name : str
        File name of the published result (``data/paper/<name>.json``); a study at a seed offset ``k`` is named
        ``<base>@<k>`` (:func:`lib.studies.paper.make_study`).
    claims : tuple of str
        The registry's claim ids the study measures.
    setting : str
        The settings, and where they differ from the paper's, what this machine can carry instead.
    units : tuple of StudyUnit
    summarize : str
        ``"package.module:function"`` taking the list of unit values (``None`` where not done) and returning a
        JSON-serialisable dict (the published summary).
    measures : str
        ``"package.module:function"`` taking the published summary and returning ``{claim id: {"samples" or
        "value", "control", "note"}}`` for the claims it can already judge (:func:`lib.studies.paper.paper_records`); empty
        for a study that measures no claim yet.
    seed_offset : int
        What every seed of the study is moved by (0: the seeds first committed). The summary is then called with
        ``seed_offset=`` as a keyword, so that it knows its own seeds.
    """

    name: str
    claims: tuple[str, ...]
    setting: str
    units: tuple[StudyUnit, ...]
    summarize: str
    measures: str = ""
    seed_offset: int = 0

    def __post_init__(self) -> None:
        if not self.name or any(c in self.name for c in "/\\ "):
            raise ValueError(f"name must be a plain file name, got {self.name!r}")
        if not self.units or not all(isinstance(u, StudyUnit) for u in self.units):
            raise ValueError("units must be a non-empty tuple of StudyUnit")
        resolve(self.summarize)
        if not isinstance(self.seed_offset, int) or self.seed_offset < 0:
            raise ValueError(f"seed_offset must be a non-negative int, got {self.seed_offset!r}")
        if self.seed_offset and not self.name.endswith(f"@{self.seed_offset}"):
            raise ValueError(
                f"a study at seed offset {self.seed_offset} is named '<base>@{self.seed_offset}', got {self.name!r}"
            )
        if self.measures:
            resolve(self.measures)

    @property
    def command(self) -> str:
        """The command that runs (or resumes) the study."""
        return f"python -m lib.studies run {self.name}"


def _init_local_worker(parent: int) -> None:
    """A local pool's worker: one torch thread (as :func:`lib.studies._sweep.local_executor`'s) and, on Linux, a SIGTERM the
    moment the process that started it dies (``prctl(PR_SET_PDEATHSIG)``). A study stopped with ``kill`` would
    otherwise leave its workers computing, for hours, units whose results nobody is left to store."""
    import os
    import signal

    from ._sweep import _init_worker

    _init_worker()
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)


def local_pool(workers: int | None = None) -> cf.Executor:
    """The local executor of a study: every unit in a fresh spawned process of its own (:class:`TaskProcesses`, so a
    process that dies fails its own unit only), with one torch thread, ending with the process that started it
    (:func:`_init_local_worker`); at most ``workers`` at once, by default the CPU count, at most 8."""
    import os

    from ._processes import TaskProcesses

    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be a positive int, got {workers!r}")
    n = workers or max(1, min(os.cpu_count() or 1, 8))
    return TaskProcesses(n, initializer=_init_local_worker, initargs=(os.getpid(),))


def executor_for(scheduler: str | None = None, workers: int | None = None) -> tuple[cf.Executor, Callable]:
    """``(executor, close)``: a local pool of ``workers`` (:func:`local_pool`) or a dask scheduler's executor."""
    if scheduler is None:
        pool = local_pool(workers)
        return pool, lambda: pool.shutdown(wait=True, cancel_futures=True)
    if not isinstance(scheduler, str) or not scheduler.startswith(("tcp://", "tls://", "inproc://")):
        raise ValueError(f"scheduler must be an address like tcp://HOST:PORT, got {scheduler!r}")
    from distributed import Client

    client = Client(scheduler)
    return client.get_executor(), client.close


def _record_path(name: str, data_dir: Path | str) -> Path:
    return Path(data_dir) / PAPER_DIR / f"{name}.json"


class UnreadableStudy(ValueError):
    """A published study file that is not a study record (truncated, corrupt, or not JSON)."""


def published(name: str, data_dir: Path | str = DATA_DIR) -> dict | None:
    """The published record of study ``name`` (``data/paper/<name>.json``), or ``None``.

    Raises
    ------
    UnreadableStudy
        If the file is not a study record, naming it and the commands that repair it.
    """
    path = _record_path(name, data_dir)
    if not path.exists():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        problem = f"is not valid JSON ({err.msg if isinstance(err, json.JSONDecodeError) else err}; truncated?)"
    else:
        if isinstance(record, dict) and isinstance(record.get("units"), dict):
            return record
        problem = "is not a study record (no 'units' mapping)"
    raise UnreadableStudy(
        f"{path} {problem}: restore the committed version with `git checkout -- {path}` and then run "
        f"`python -m lib.studies publish {name}`, which adds the units the results cache still holds"
    )


@contextlib.contextmanager
def _publishing_lock(data_dir: Path | str):
    """Exclusive lock over publishing into ``data_dir`` (every study file and the manifest): two runs of one study,
    or of two studies, never interleave a read-merge-write."""
    import fcntl

    folder = Path(data_dir) / PAPER_DIR
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".publish.lock", "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file of a unique name in the same folder and a rename, so a
    reader sees the old file or the new one, never a part."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def committed_units(study: PaperStudy, data_dir: Path | str = DATA_DIR) -> dict[str, dict]:
    """The study's units whose results are committed, ``{unit_key: {"value", "cpu_seconds", ...}}``, for the units
    as they are defined now (a committed result of a unit of older code has another key and is not returned)."""
    record = published(study.name, data_dir) or {}
    saved = record.get("units", {})
    return {k: saved[k] for k in (unit_key(u) for u in study.units) if k in saved}


class _Publishing(Cache):
    """``cache``, publishing the study after every unit it stores (a study stopped part-way keeps, under ``data/``,
    every unit it finished)."""

    def __init__(self, cache: Cache, after: Callable[[], object]):
        super().__init__(cache.directory, data_dir=cache.data_dir, enabled=cache.enabled)
        self._after = after

    def load(self, func, config):
        from ._stack import UnitStack, run_task

        if func is not run_task:
            return super().load(func, config)
        if not isinstance(config, UnitStack):  # a unit alone: filed under run_unit, as publish reads it
            return super().load(run_unit, config)
        got = [super(_Publishing, self).load(run_unit, u) for u in config.units]
        return (True, [v for _, v in got]) if all(hit for hit, _ in got) else (False, None)

    def store(self, func, config, value, *, cost=None):
        from ._stack import UnitStack, run_task

        if func is not run_task:
            path = super().store(func, config, value, cost=cost)
        elif isinstance(config, UnitStack):  # each unit of a stack filed as its own, as publish reads it
            path = None
            for u, v in zip(config.units, value):
                path = super().store(run_unit, u, v)
        else:
            path = super().store(run_unit, config, value, cost=cost)
        self._after()
        return path


def run_study(
    study: PaperStudy,
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    limit: int | None = None,
    only: Sequence[int] | None = None,
    cache: Cache | None = None,
    data_dir: Path | str = DATA_DIR,
    publish_to_data: bool = True,
    stack: int = 1,
) -> dict:
    """Compute the study's missing units (of its first ``limit`` units, or of the units at the indices ``only``, or
    all) and publish what is done, after every unit (so a study stopped at any point keeps what it computed, under
    ``data/``).

    A unit is done when its result is committed (:func:`committed_units`) or in the results cache. Returns the
    published record (:func:`publish`). Units that fail are reported by :class:`lib.SweepError` after every success
    has been stored.

    ``stack`` > 1 trains up to that many units of one shape as one run (:mod:`lib.studies._stack`; for a GPU), each
    filed and published as its own unit."""
    from ._stack import make_stacks, run_task
    from ._sweep import run_sweep

    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be a positive int or None, got {limit!r}")
    chosen = study.units[:limit] if limit else study.units
    if only is not None:
        if limit is not None:
            raise ValueError("give limit or only, not both")
        bad = [i for i in only if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(study.units)]
        if bad or not only:
            raise ValueError(f"only must name unit indices 0..{len(study.units) - 1} of {study.name}, got {only!r}")
        chosen = [study.units[i] for i in sorted(set(only))]
    if isinstance(stack, bool) or not isinstance(stack, int) or stack < 1:
        raise ValueError(f"stack must be an int >= 1, got {stack!r}")
    cache = cache or default_cache()
    done = committed_units(study, data_dir)
    todo = [u for u in chosen if unit_key(u) not in done]
    if todo:
        executor, close = executor_for(scheduler, workers)
        publishing = _Publishing(cache, lambda: publish(study, cache=cache, data_dir=data_dir, write=publish_to_data))
        try:
            if stack == 1:
                run_sweep(run_unit, todo, executor=executor, cache=publishing, max_workers=workers, desc=study.name)
            else:
                tasks = make_stacks(todo, stack)
                run_sweep(run_task, tasks, executor=executor, cache=publishing, max_workers=workers, desc=study.name)
        finally:
            close()
    return publish(study, cache=cache, data_dir=data_dir, write=publish_to_data)


def summarize(study: PaperStudy, values: list) -> dict:
    """The study's summary of its unit values (``None``: not done), told its seed offset when it has one."""
    how = {"seed_offset": study.seed_offset} if study.seed_offset else {}
    return resolve(study.summarize)(values, **how)


def publish(
    study: PaperStudy, *, cache: Cache | None = None, data_dir: Path | str = DATA_DIR, write: bool = True
) -> dict:
    """The record of what is done (committed units, then the results cache; nothing is computed), written to
    ``data/paper/<name>.json`` and the data manifest when ``write``.

    The record holds every done unit's result under its :func:`lib.studies._study.unit_key` (so a later session resumes
    from ``data/`` alone), the summary of the done units, "k of n", the command, the CPU-hours the done units took
    and the CPU capability of every machine that computed one."""
    cache = cache or default_cache()
    if write:
        with _publishing_lock(data_dir):  # the committed units are read again under the lock: nothing is lost
            return _publish(study, cache, data_dir, write=True)
    return _publish(study, cache, data_dir, write=False)


def _publish(study: PaperStudy, cache: Cache, data_dir: Path | str, *, write: bool) -> dict:
    committed = committed_units(study, data_dir)
    outs = []
    for u in study.units:
        key = unit_key(u)
        hit, value = (True, committed[key]) if key in committed else cache.load(run_unit, u)
        outs.append(value if hit else None)
    finished = [o for o in outs if o is not None]
    record = {
        "study": study.name,
        "claims": list(study.claims),
        "setting": study.setting,
        "command": study.command,
        "done": len(finished),
        "of": len(outs),
        "cpu_hours": round(sum(o["cpu_seconds"] for o in finished) / 3600, 3),
        "cpu_capability": sorted({str(o["machine"].get("cpu_capability")) for o in finished}),
        "updated": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "seed_offset": study.seed_offset,
        "summary": summarize(study, [None if o is None else o["value"] for o in outs]),
        "units": {unit_key(u): o for u, o in zip(study.units, outs) if o is not None},
    }
    before = published(study.name, data_dir) if committed else None
    if before and before.get("equated"):  # verifications within a tolerance (lib.studies._equate) stay on record
        record["equated"] = before["equated"]
    if write:
        from ..core.cache import register_files

        path = _record_path(study.name, data_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_atomic(path, json.dumps(record, indent=1, sort_keys=True) + "\n")
        register_files([path], study.command, "lib.studies._paper_scale.publish", data_dir=Path(data_dir))
    return record
