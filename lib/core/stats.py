r"""Uncertainty over seeds and prompts: percentile bootstrap intervals.

One seed is an anecdote; a claim about trained models is a claim about the distribution of their outcomes. With
values :math:`x_1, \dots, x_n` (one per seed) and a statistic :math:`T` (the median by default), the percentile
bootstrap draws :math:`B` resamples :math:`x^*_b` of size :math:`n` with replacement and reports the
:math:`\tfrac{1-\gamma}{2}` and :math:`\tfrac{1+\gamma}{2}` quantiles of :math:`T(x^*_b)` as the level-:math:`\gamma`
interval. Resampling is seeded, so an interval is a deterministic function of the values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = [
    "Interval",
    "bootstrap_interval",
    "coefficient_of_variation",
    "group_bootstrap_interval",
    "halves_difference",
    "halves_ratio",
    "ratio_interval",
    "interval_score",
    "halves_interval",
]


def _check_resampling(level: float, resamples: int) -> None:
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    if resamples < 100:
        raise ValueError(f"resamples must be >= 100, got {resamples!r}")


@dataclass(frozen=True)
class Interval:
    """A statistic over ``n`` values and its bootstrap interval ``[lo, hi]`` at ``level``."""

    value: float
    lo: float
    hi: float
    level: float
    n: int

    def above(self, threshold: float) -> bool:
        """The whole interval lies above ``threshold``."""
        return bool(self.lo > threshold)

    def below(self, threshold: float) -> bool:
        """The whole interval lies below ``threshold``."""
        return bool(self.hi < threshold)

    def __str__(self) -> str:
        return f"{self.value:.3g} [{self.lo:.3g}, {self.hi:.3g}]"


def bootstrap_interval(
    values,
    statistic: Callable[[np.ndarray], np.ndarray] = np.median,
    *,
    level: float = 0.9,
    resamples: int = 4000,
    seed: int = 0,
) -> Interval:
    """Percentile bootstrap interval of ``statistic`` over the 1-d ``values`` (see the module docstring).

    ``statistic`` must reduce along the last axis (``np.median``, ``np.mean``, ...). Infinite values (censored
    runs) are allowed for order statistics such as the median; NaN is not.
    """
    x = np.asarray(values, dtype=float)
    if x.ndim != 1 or x.size < 2:
        raise ValueError(f"values must be 1-d with at least 2 entries, got shape {x.shape}")
    if np.isnan(x).any():
        raise ValueError("values must not contain NaN")
    _check_resampling(level, resamples)
    rng = np.random.default_rng(seed)
    draws = x[rng.integers(0, x.size, size=(resamples, x.size))]  # (resamples, n)
    stats = np.asarray(statistic(draws, axis=-1), dtype=float)  # (resamples,)
    lo, hi = np.quantile(
        stats, [(1 - level) / 2, (1 + level) / 2], method="inverted_cdf"
    )  # no interpolation: inf stays inf
    return Interval(float(statistic(x)), float(lo), float(hi), level, int(x.size))


def ratio_interval(
    a,
    b,
    statistic: Callable[[np.ndarray], np.ndarray] = np.median,
    *,
    level: float = 0.9,
    resamples: int = 4000,
    seed: int = 0,
) -> Interval:
    r"""Percentile bootstrap interval of :math:`T(a)/T(b)` for two independent groups of values.

    Each resample draws ``a`` and ``b`` with replacement, each within its own group, and takes the ratio of the
    statistics. Values must be finite and the statistic of ``b`` positive (censored runs: pass the budget, which makes
    the ratio a bound, and say which). ``n`` of the result is ``len(a) + len(b)``.
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    for name, v in (("a", x), ("b", y)):
        if v.ndim != 1 or v.size < 2:
            raise ValueError(f"{name} must be 1-d with at least 2 entries, got shape {v.shape}")
        if not np.isfinite(v).all():
            raise ValueError(f"{name} must be finite (put censored runs at the budget)")
    _check_resampling(level, resamples)
    rng = np.random.default_rng(seed)
    num = np.asarray(statistic(x[rng.integers(0, x.size, size=(resamples, x.size))], axis=-1), dtype=float)
    den = np.asarray(statistic(y[rng.integers(0, y.size, size=(resamples, y.size))], axis=-1), dtype=float)
    if not (den > 0).all() or not float(statistic(y)) > 0:
        raise ValueError("the statistic of b must be positive in every resample")
    lo, hi = np.quantile(num / den, [(1 - level) / 2, (1 + level) / 2])
    return Interval(float(statistic(x) / statistic(y)), float(lo), float(hi), level, int(x.size + y.size))


def group_bootstrap_interval(
    statistic: Callable[..., float], sizes, *, level: float = 0.9, resamples: int = 2000, seed: int = 0
) -> Interval:
    r"""Percentile bootstrap interval of a statistic of whole units (chains, runs), resampled within groups.

    ``statistic(*indices)`` gets one integer index array per group (``len(sizes)`` groups of ``sizes[g]`` units) and
    returns a float; each resample draws every group's units with replacement, within the group. The value is
    ``statistic`` on the units as they are. For a statistic of MCMC chains this is the bootstrap over chains, the
    independent units of a sampler (samples within a chain are correlated): e.g. the largest gap between the mean of
    chains started on one branch and the mean of chains started on the other, over ``P``.
    """
    sizes = tuple(int(n) for n in np.atleast_1d(sizes))
    if not sizes or any(n < 2 for n in sizes):
        raise ValueError(f"every group needs at least 2 units, got sizes {sizes}")
    _check_resampling(level, resamples)
    rng = np.random.default_rng(seed)
    stats = np.array([float(statistic(*(rng.integers(0, n, size=n) for n in sizes))) for _ in range(resamples)])
    if np.isnan(stats).any():
        raise ValueError("the statistic returned NaN on a resample")
    lo, hi = np.quantile(stats, [(1 - level) / 2, (1 + level) / 2], method="inverted_cdf")
    value = float(statistic(*(np.arange(n) for n in sizes)))
    return Interval(value, float(lo), float(hi), level, int(sum(sizes)))


def halves_ratio(values, statistic: Callable[[np.ndarray], np.ndarray] = np.median) -> float:
    r"""The larger of :math:`T(x_\text{even})/T(x_\text{odd})` and its inverse: two halves of one group, compared.

    The seeds of one configuration split by position (even and odd), so nothing distinguishes the halves but the
    seeds: a negative control for a claimed ratio between two configurations. Taking the larger direction makes the
    control a spread (:math:`\ge 1`), so it can fail an *at most* criterion and pass an *at least* one only by seed
    noise. Values must be finite (put censored runs at the budget) and the statistics positive.
    """
    x = np.asarray(values, dtype=float)
    if x.ndim != 1 or x.size < 2:
        raise ValueError(f"values must be 1-d with at least 2 entries, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError("values must be finite (put censored runs at the budget)")
    a, b = float(statistic(x[0::2])), float(statistic(x[1::2]))
    if not (a > 0 and b > 0):
        raise ValueError(f"the statistic of each half must be positive, got {a} and {b}")
    return max(a / b, b / a)


def halves_difference(values) -> np.ndarray:
    r"""Odd minus even entries, pairwise: :math:`x_{2k+1} - x_{2k}` (a leftover last entry is dropped).

    Paired differences between two halves of the seeds of one configuration: a negative control for a paired
    difference between two configurations (nothing but the seeds differs, so its median should straddle 0).
    """
    x = np.asarray(values, dtype=float)
    if x.ndim != 1 or x.size < 2:
        raise ValueError(f"values must be 1-d with at least 2 entries, got shape {x.shape}")
    n = x.size // 2
    return x[1 : 2 * n : 2] - x[0 : 2 * n : 2]


def coefficient_of_variation(values, axis: int = -1) -> np.ndarray:
    r"""Standard deviation over mean along ``axis``, :math:`\sigma/\mu` (population :math:`\sigma`, ``ddof=0``).

    A reducing statistic in the form :func:`bootstrap_interval` takes, e.g. for the spread of emergence steps over
    seeds: ``bootstrap_interval(steps, coefficient_of_variation)``.
    """
    x = np.asarray(values, dtype=float)
    return np.std(x, axis=axis) / np.mean(x, axis=axis)


def interval_score(intervals, threshold: float = 0.0) -> int:
    r"""How many of ``intervals`` (:class:`Interval`) lie wholly above ``threshold``, or -1 if any lies wholly below.

    A claim made of several halves (each an interval of a paired difference, say) holds in the halves that clear the
    threshold and is contradicted by any half that clears it the other way.
    """
    intervals = list(intervals)
    if not intervals or not all(isinstance(iv, Interval) for iv in intervals):
        raise ValueError(f"intervals must be a non-empty sequence of Interval, got {intervals!r}")
    if any(iv.below(threshold) for iv in intervals):
        return -1
    return int(sum(iv.above(threshold) for iv in intervals))


def halves_interval(*groups, **kwargs) -> Interval:
    r"""Bootstrap interval of the median of :func:`halves_difference` pooled over ``groups`` (1-d arrays).

    Each group is the seeds of one configuration; within it odd minus even seeds are differences in which nothing
    but the seed changes. Pooling them over the configurations of a paired comparison gives that comparison's
    negative control. ``kwargs`` go to :func:`bootstrap_interval`.
    """
    if not groups:
        raise ValueError("need at least one group")
    return bootstrap_interval(np.concatenate([halves_difference(g) for g in groups]), **kwargs)
