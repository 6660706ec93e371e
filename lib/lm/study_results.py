"""The per-run analysis through the results cache: :func:`study_run` (one run, keyed by :class:`lib.lm.study.RunKey`)
and :func:`study_suite` (every run of a suite, one cache entry each).

One entry per run is what lets the hub analysis resume after a disconnect (a Colab session loses its kernel, not its
cache folder) and a suite built over several sessions be analysed, and published, run by run. Kept apart from
:mod:`lib.lm.study` so that the cache's code fingerprint covers the analysis code only.
"""

from __future__ import annotations

from ..cache import Cache, cached
from ..progress import progress
from . import study as _study
from .study import RunKey, RunResult, StudyConfig, run_key

__all__ = ["study_run", "study_suite"]

#: :func:`lib.lm.study.analyze_run` through the results cache (``cache=False`` computes, a ``Cache`` chooses one).
study_run = cached(_study.analyze_run)


def study_suite(study: StudyConfig, suite, *, cache: Cache | bool | None = None, sizes=None, seeds=None) -> list[RunResult]:
    """Every run (``sizes`` × ``seeds``, default the suite's) of ``suite`` analysed with ``study``, each through the
    cache, seeds outermost (so a partial pass has every size of its first seeds). Returns the results in that order."""
    sizes = tuple(sizes or suite.sizes)
    seeds = tuple(suite.seeds if seeds is None else seeds)
    keys: list[RunKey] = [run_key(study, suite, size, seed) for seed in seeds for size in sizes]
    return [study_run(key, suite, cache=cache) for key in progress(keys, desc=f"study {suite.prefix}")]
