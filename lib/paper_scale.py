r"""Paper-scale studies: units of work run through :func:`lib.run_sweep`, resumable, published with what they cost.

A paper-scale study takes CPU-hours, so it is split into **units** (one seed's run, one setting's stack), each a
frozen config and a module-level function that computes it. :func:`run_study` sends the units that are not yet in
the results cache to an executor — a local process pool by default, a ``dask.distributed`` scheduler with
``scheduler="tcp://HOST:PORT"`` — and stores each result the moment it arrives (:func:`lib.run_sweep`): a study
killed part-way resumes where it stopped. :func:`publish` then writes ``data/paper/<name>.json``: how many units are
done ("7 of 10"), the study's summary of the done units, the command that continues it, its cost in CPU-hours and
the CPU capability of every machine that computed a unit.

Each unit's key holds the code fingerprint of its function (:func:`lib.cache.code_fingerprint`), so an edit of the
training code gives new keys instead of mixing results of two versions of the code. Every unit runs with one torch
thread in a spawned process, whichever executor carries it, so the published result does not depend on the
executor (tested on a ``LocalCluster``).

Usage::

    python -m lib.paper_scale list          # the registered studies (lib.paper_studies) and what is published
    python -m lib.paper_scale run NAME [--scheduler tcp://HOST:PORT] [--workers N] [--limit K]
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import importlib
import json
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from .cache import DATA_DIR, Cache, _machine, code_fingerprint, default_cache

__all__ = ["StudyUnit", "PaperStudy", "unit", "run_unit", "run_study", "publish", "executor_for", "main"]

#: Where published paper-scale studies live (one JSON file per study).
PAPER_DIR = "paper"


def _resolve(path: str) -> Callable:
    """The function named ``"package.module:function"``."""
    if not isinstance(path, str) or path.count(":") != 1:
        raise ValueError(f"a function is named 'package.module:function', got {path!r}")
    module, name = path.split(":")
    func = getattr(importlib.import_module(module), name, None)
    if not callable(func):
        raise ValueError(f"{path!r} is not a function")
    return getattr(func, "__wrapped__", func)


@dataclass(frozen=True)
class StudyUnit:
    """One unit of a study: ``func(config)``, with the code fingerprint of ``func`` when the unit was defined."""

    func: str
    config: Any
    code: str


def unit(func: str, config: Any) -> StudyUnit:
    """The :class:`StudyUnit` of ``func`` (``"package.module:function"``) on the frozen dataclass ``config``."""
    return StudyUnit(func, config, code_fingerprint(_resolve(func)))


def run_unit(u: StudyUnit) -> dict:
    """Compute one unit: ``{"value": func(config), "cpu_seconds", "wall_seconds", "machine"}``.

    ``ValueError`` when the code of ``func`` has changed since the unit was defined (a unit keyed by old code must
    not be computed by new code)."""
    if not isinstance(u, StudyUnit):
        raise ValueError(f"run_unit needs a StudyUnit, got {type(u).__name__}")
    func = _resolve(u.func)
    if code_fingerprint(func) != u.code:
        raise ValueError(f"the code of {u.func} changed since this unit was defined; define the study again")
    cpu, wall = time.process_time(), time.perf_counter()
    value = func(u.config)
    return {"value": value, "cpu_seconds": time.process_time() - cpu, "wall_seconds": time.perf_counter() - wall,
            "machine": _machine()}  # fmt: skip


@dataclass(frozen=True)
class PaperStudy:
    """A paper-scale study.

    Attributes
    ----------
    name : str
        File name of the published result (``data/paper/<name>.json``).
    claims : tuple of str
        The registry's claim ids the study measures.
    setting : str
        The settings, and where they differ from the paper's, what this machine can carry instead.
    units : tuple of StudyUnit
    summarize : str
        ``"package.module:function"`` taking the list of unit values (``None`` where not done) and returning a
        JSON-serialisable dict (the published summary).
    """

    name: str
    claims: tuple[str, ...]
    setting: str
    units: tuple[StudyUnit, ...]
    summarize: str

    def __post_init__(self) -> None:
        if not self.name or any(c in self.name for c in "/\\ "):
            raise ValueError(f"name must be a plain file name, got {self.name!r}")
        if not self.units or not all(isinstance(u, StudyUnit) for u in self.units):
            raise ValueError("units must be a non-empty tuple of StudyUnit")
        _resolve(self.summarize)

    @property
    def command(self) -> str:
        """The command that runs (or resumes) the study."""
        return f"python -m lib.paper_scale run {self.name}"


def executor_for(scheduler: str | None = None, workers: int | None = None) -> tuple[cf.Executor | None, Callable]:
    """``(executor, close)``: ``None`` (the sweep's own local pool of ``workers``) or a dask scheduler's executor."""
    if scheduler is None:
        return None, lambda: None
    if not isinstance(scheduler, str) or not scheduler.startswith(("tcp://", "tls://", "inproc://")):
        raise ValueError(f"scheduler must be an address like tcp://HOST:PORT, got {scheduler!r}")
    from distributed import Client

    client = Client(scheduler)
    return client.get_executor(), client.close


def run_study(study: PaperStudy, *, scheduler: str | None = None, workers: int | None = None, limit: int | None = None,
              cache: Cache | None = None, data_dir: Path | str = DATA_DIR, publish_to_data: bool = True) -> dict:  # fmt: skip
    """Compute the study's missing units (the first ``limit`` of them, or all) and publish what is done.

    Returns the published record (:func:`publish`). Units that fail are reported by :class:`lib.SweepError` after
    every success has been stored."""
    from .sweep import run_sweep

    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be a positive int or None, got {limit!r}")
    cache = cache or default_cache()
    units = list(study.units[:limit] if limit else study.units)
    executor, close = executor_for(scheduler, workers)
    try:
        run_sweep(run_unit, units, executor=executor, cache=cache, max_workers=workers, desc=study.name)
    finally:
        close()
    return publish(study, cache=cache, data_dir=data_dir, write=publish_to_data)


def publish(study: PaperStudy, *, cache: Cache | None = None, data_dir: Path | str = DATA_DIR,
            write: bool = True) -> dict:  # fmt: skip
    """The record of what is done (from the cache; nothing is computed), written to ``data/paper/<name>.json``
    and the data manifest when ``write``."""
    cache = cache or default_cache()
    done = [cache.load(run_unit, u) for u in study.units]
    outs = [value if hit else None for hit, value in done]
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
        "summary": _resolve(study.summarize)([None if o is None else o["value"] for o in outs]),
    }
    if write:
        from .lm.results import register_files

        path = Path(data_dir) / PAPER_DIR / f"{study.name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        register_files([path], study.command, "lib.paper_scale.publish", data_dir=Path(data_dir))
    return record


def main(argv: list[str] | None = None) -> int:
    """The command line (module docstring); the studies are :data:`lib.paper_studies.STUDIES`."""
    from .paper_studies import STUDIES

    parser = argparse.ArgumentParser(prog="python -m lib.paper_scale", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="the registered studies and what is published of each")
    run = sub.add_parser("run", help="run (or resume) a study and publish what is done")
    run.add_argument("name", choices=sorted(STUDIES))
    run.add_argument("--scheduler", default=None, help="a dask scheduler, tcp://HOST:PORT (default: a local pool)")
    run.add_argument("--workers", type=int, default=None, help="local pool size")
    run.add_argument("--limit", type=int, default=None, help="run only the first K units")
    args = parser.parse_args(argv)
    if args.cmd == "list":
        for name in sorted(STUDIES):
            path = DATA_DIR / PAPER_DIR / f"{name}.json"
            got = json.loads(path.read_text()) if path.exists() else None
            print(f"{name}: " + (f"{got['done']} of {got['of']} units, {got['cpu_hours']} CPU-hours" if got else "not run"))
        return 0
    record = run_study(STUDIES[args.name](), scheduler=args.scheduler, workers=args.workers, limit=args.limit)
    print(json.dumps({k: record[k] for k in ("study", "done", "of", "cpu_hours", "cpu_capability")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
