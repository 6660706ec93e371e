r"""The intervals chapters use: NaN where a smoke run cut the data, and ratios censored at a budget.

:func:`bootstrap_interval`, :func:`ratio_interval` and :func:`group_bootstrap_interval` are
:mod:`lib.core.stats`'s, except in a smoke run (:mod:`lib.core.smoke`), where data too thin to define an interval
give a NaN interval instead of an error.

:func:`censored_ratio_interval`: a run that never leaves its plateau within the budget :math:`T` is put at :math:`T`
(its true time is :math:`\ge T`). For a ratio of medians :math:`m(a)/m(b)` this is safe in one direction only. A
censored numerator makes the ratio a lower bound. A denominator whose median sits at :math:`T` is itself only a lower
bound, so the ratio bounds nothing: two groups that both never arrive give :math:`T/T = 1`, a number that would pass
"not faster" with no evidence at all. It is :func:`lib.core.stats.ratio_interval` (the same resamples, the same
value) with that rule: wherever a resample's denominator statistic sits at the budget, the interval is undefined
(NaN), and no criterion holds on it (:meth:`lib.claims.Criterion.holds_on`), so such a claim can be neither
reproduced nor partial nor contradicted on an interval.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from . import stats
from .smoke import smoke_factor
from .stats import Interval

__all__ = ["bootstrap_interval", "ratio_interval", "group_bootstrap_interval", "censored_ratio_interval"]


def _nan_interval(level: float, n: int):
    return Interval(float("nan"), float("nan"), float("nan"), level, int(n))


def _undefined(v: np.ndarray, finite: bool) -> bool:
    return v.ndim != 1 or v.size < 2 or bool(np.isnan(v).any() if not finite else not np.isfinite(v).all())


def bootstrap_interval(values, statistic=np.median, *, level: float = 0.9, **kw):
    """:func:`lib.core.stats.bootstrap_interval`; NaN in a smoke run when ``values`` cannot define it (module docstring)."""
    x = np.asarray(values, dtype=float)
    if smoke_factor() and _undefined(x, finite=False):
        return _nan_interval(level, x.size)
    return stats.bootstrap_interval(values, statistic, level=level, **kw)


def ratio_interval(a, b, statistic=np.median, *, level: float = 0.9, **kw):
    """:func:`lib.core.stats.ratio_interval`; NaN in a smoke run when ``a`` or ``b`` cannot define it (module docstring)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if smoke_factor() and (_undefined(x, finite=True) or _undefined(y, finite=True)):
        return _nan_interval(level, x.size + y.size)
    return stats.ratio_interval(a, b, statistic, level=level, **kw)


def group_bootstrap_interval(statistic, sizes, *, level: float = 0.9, **kw):
    """:func:`lib.core.stats.group_bootstrap_interval`; NaN in a smoke run when the statistic is NaN on a resample."""
    try:
        return stats.group_bootstrap_interval(statistic, sizes, level=level, **kw)
    except ValueError as err:
        if smoke_factor() and "returned NaN" in str(err):
            return _nan_interval(level, int(np.sum(np.atleast_1d(sizes))))
        raise


def censored_ratio_interval(
    a,
    b,
    budget: float,
    statistic: Callable[[np.ndarray], np.ndarray] = np.median,
    *,
    level: float = 0.9,
    resamples: int = 4000,
    seed: int = 0,
) -> Interval:
    r"""Percentile bootstrap interval of :math:`T(a)/T(b)` with runs censored at ``budget`` (module docstring).

    Parameters
    ----------
    a, b : array-like, 1-d, at least 2 entries each
        Step counts, the runs that never arrived put at ``budget`` (no value above it).
    budget : float
        The step budget (positive, finite).
    statistic, level, resamples, seed
        As :func:`lib.core.stats.ratio_interval`: each resample draws ``a`` and ``b`` with replacement within its group.

    Returns
    -------
    Interval
        The plain ratio of the statistics as the value; ``lo = hi = NaN`` when the statistic of ``b`` or of any
        resample of ``b`` is at the budget, else the percentile interval of the resampled ratios.
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if smoke_factor() and (_undefined(x, finite=True) or _undefined(y, finite=True)):
        return _nan_interval(level, x.size + y.size)  # a smoke run's cut data may define nothing (lib.core.smoke)
    plain = stats.ratio_interval(x, y, statistic, level=level, resamples=resamples, seed=seed)  # checks a and b
    if not (np.isfinite(budget) and budget > 0):
        raise ValueError(f"budget must be positive and finite, got {budget!r}")
    if (x > budget).any() or (y > budget).any():
        raise ValueError(f"values must not exceed the budget {budget} (put censored runs at the budget)")
    rng = np.random.default_rng(seed)  # the resamples of lib.core.stats.ratio_interval: a's draws, then b's
    rng.integers(0, x.size, size=(resamples, x.size))
    den = np.asarray(statistic(y[rng.integers(0, y.size, size=(resamples, y.size))], axis=-1), dtype=float)
    if float(statistic(y)) >= budget or (den >= budget).any():
        return Interval(plain.value, float("nan"), float("nan"), level, plain.n)
    return plain
