"""Sweeps: run ``func(config)`` for many configs on any ``concurrent.futures.Executor``, through the cache.

* Executors: a local process pool by default (spawned workers, one torch thread each), or anything with the
  ``concurrent.futures.Executor`` interface, e.g. a ``dask.distributed`` cluster's ``client.get_executor()``.
* Resumable: every result is written to the cache (atomically, by this process) the moment it arrives, and
  configs already in the cache are loaded instead of submitted. A sweep killed part-way resumes where it stopped:
  nothing completed is recomputed, nothing is lost or duplicated.
* Errors: a config that raises is reported with its config and traceback; the others go on and are kept.
  :class:`SweepError` is raised at the end (after every success is stored) unless ``raise_on_error=False``.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ..core.cache import Cache, canonical_config, default_cache
from ..core.progress import progress

__all__ = ["SweepResult", "SweepError", "run_sweep", "local_executor"]


class SweepError(RuntimeError):
    """One or more configs of a sweep failed (the others were computed and stored; ``.result`` holds them)."""

    def __init__(self, message: str, result: "SweepResult"):
        super().__init__(message)
        self.result = result


@dataclass
class SweepResult:
    """Results in the order of the configs given.

    Attributes
    ----------
    configs : list
    results : list
        ``func(config)`` per config (None where it failed).
    loaded, computed : list of int
        Indices of the configs read from the cache and of those computed in this run.
    errors : dict of int to str
        Index -> the config and the traceback of its failure.
    """

    configs: list
    results: list
    loaded: list[int] = field(default_factory=list)
    computed: list[int] = field(default_factory=list)
    errors: dict[int, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.errors


def _init_worker() -> None:
    import torch

    torch.set_num_threads(1)


def _call(func: Callable, config: Any) -> Any:
    """Run one config in a worker; exceptions travel back with their formatted traceback."""
    try:
        return func(config)
    except BaseException as err:  # noqa: BLE001 - reported per config by the parent
        raise RuntimeError(f"{type(err).__name__}: {err}\n{traceback.format_exc()}") from None


def local_executor(max_workers: int | None = None) -> cf.ProcessPoolExecutor:
    """A process pool with spawned workers (safe with torch) and one torch thread per worker."""
    workers = max_workers or max(1, min(os.cpu_count() or 1, 8))
    if workers < 1:
        raise ValueError(f"max_workers must be >= 1, got {max_workers}")
    return cf.ProcessPoolExecutor(
        max_workers=workers, mp_context=multiprocessing.get_context("spawn"), initializer=_init_worker
    )


def run_sweep(
    func: Callable,
    configs: Sequence[Any],
    *,
    executor: cf.Executor | None = None,
    cache: Cache | bool | None = None,
    max_workers: int | None = None,
    desc: str | None = None,
    raise_on_error: bool = True,
) -> SweepResult:
    """Run ``func(config)`` for every config, loading what the cache has and storing what is computed.

    Parameters
    ----------
    func : callable
        A module-level function of one frozen-dataclass config (it must be importable by the workers).
    configs : sequence of frozen dataclasses
        Duplicates are computed once.
    executor : concurrent.futures.Executor, optional
        Default: :func:`local_executor` (created and shut down here). A given executor is not shut down.
    cache : Cache, True/None (default cache) or False (no cache: nothing is resumable)
    max_workers : int, optional
        Size of the default process pool.
    desc : str, optional
        Progress-bar label.
    raise_on_error : bool
        Raise :class:`SweepError` after the sweep if any config failed.
    """
    if not callable(func) or getattr(func, "__name__", "") == "<lambda>":
        raise TypeError("func must be a module-level function (workers import it by name; lambdas cannot travel)")
    if isinstance(configs, (str, bytes)) or not isinstance(configs, Sequence):
        raise TypeError(f"configs must be a sequence of frozen dataclasses, got {type(configs).__name__}")
    if len(configs) == 0:
        raise ValueError("configs is empty: nothing to sweep")
    keys = [canonical_config(c) for c in configs]  # validates every config up front
    if cache is None or cache is True:
        cache = default_cache()
    elif cache is False:
        cache = Cache(enabled=False)
    elif not isinstance(cache, Cache):
        raise TypeError(f"cache must be a Cache, True/None or False, got {type(cache).__name__}")
    if executor is not None and not isinstance(executor, cf.Executor):
        raise TypeError(f"executor must be a concurrent.futures.Executor, got {type(executor).__name__}")

    first: dict[str, int] = {}
    for i, key in enumerate(keys):
        first.setdefault(key, i)
    unique = sorted(first.values())
    out = SweepResult(configs=list(configs), results=[None] * len(configs))

    todo = []
    for i in unique:
        hit, value = cache.load(func, configs[i])
        if hit:
            out.results[i] = value
            out.loaded.append(i)
        else:
            todo.append(i)

    bar = progress(
        total=len(unique), desc=desc or f"sweep {getattr(func, '__name__', 'func')}", initial=len(out.loaded)
    )
    own = executor is None and todo
    if own:
        executor = local_executor(max_workers)
    try:
        if todo:
            futures = {executor.submit(_call, func, configs[i]): i for i in todo}
            for fut in cf.as_completed(futures):
                i = futures[fut]
                try:
                    value = fut.result()
                except BaseException as err:  # noqa: BLE001
                    out.errors[i] = f"config {configs[i]!r} failed:\n{err}"
                else:
                    cache.store(func, configs[i], value)
                    out.results[i] = value
                    out.computed.append(i)
                bar.update(1)
    finally:
        bar.close()
        if own:
            executor.shutdown(wait=True, cancel_futures=True)

    for i, key in enumerate(keys):  # fill duplicates from their first occurrence
        j = first[key]
        if j != i:
            out.results[i] = out.results[j]
            if j in out.errors:
                out.errors[i] = out.errors[j]
    out.computed.sort()
    if out.errors and raise_on_error:
        raise SweepError(
            f"{len(out.errors)} of {len(configs)} configs failed:\n\n" + "\n\n".join(out.errors.values()), out
        )
    return out
