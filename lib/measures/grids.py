"""Metrics of a transition measured on a grid of training-set sizes.

A first-order (discontinuous) transition puts almost all of an order parameter's change into one step of a fine
grid, however fine; a continuous one spreads it over many. :func:`jump_fraction` measures exactly that, and
:func:`refine_grid` builds the fine grid inside the steepest step of a coarse one. Coexisting minima (several
converged runs at one ``P`` with different order parameters) are the other first-order signature
(:func:`count_minima`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "steepest_step",
    "half_rise_point",
    "jump_fraction",
    "refine_grid",
    "count_minima",
    "geometric_grid",
    "LossDrops",
    "loss_drops",
]


def _as_curve(y) -> np.ndarray:
    y = np.asarray(y, dtype=float)
    if y.ndim != 1 or y.size < 2:
        raise ValueError(f"need a 1-D curve with at least 2 points, got shape {y.shape}")
    if not np.all(np.isfinite(y)):
        raise ValueError("the curve contains non-finite values")
    return y


def geometric_grid(lo: int, hi: int, n: int) -> tuple[int, ...]:
    """``n`` distinct integers spaced geometrically from ``lo`` to ``hi`` (inclusive), as a tuple."""
    if not (isinstance(lo, (int, np.integer)) and isinstance(hi, (int, np.integer)) and 1 <= lo < hi):
        raise ValueError(f"need integers 1 <= lo < hi, got lo={lo!r}, hi={hi!r}")
    if not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"n must be an int >= 2, got {n!r}")
    grid = np.unique(np.round(np.geomspace(lo, hi, n)).astype(int))
    return tuple(int(p) for p in grid)


def steepest_step(y) -> int:
    """Index ``k`` of the largest absolute change ``|y[k+1] - y[k]|`` between neighbouring grid points."""
    y = _as_curve(y)
    return int(np.argmax(np.abs(np.diff(y))))


def half_rise_point(P, y) -> float:
    r"""The :math:`P` at which ``y`` first reaches half its largest value on the grid ``P`` (increasing, > 0),
    interpolated linearly in :math:`\ln P` between the two grid points around the crossing: with :math:`k` the first
    index where :math:`y_k \ge y_\max/2`, :math:`\ln P = \ln P_{k-1} + t\,(\ln P_k - \ln P_{k-1})`,
    :math:`t = (y_\max/2 - y_{k-1})/(y_k - y_{k-1})`; :math:`P_0` when the first point is already there.

    Raises
    ------
    ValueError
        If ``P`` is not increasing and positive, has another shape than ``y``, or ``y``'s largest value is not > 0.
    """
    y, P = _as_curve(y), np.asarray(P, dtype=float)
    if P.shape != y.shape or np.any(P <= 0) or np.any(np.diff(P) <= 0):
        raise ValueError(f"P must be increasing and > 0 with the shape of y {y.shape}, got {P.shape}")
    half = 0.5 * y.max()
    if not half > 0:
        raise ValueError(f"y must rise above 0 to have a half-rise point, largest value {y.max()}")
    k = int(np.argmax(y >= half))
    if k == 0:
        return float(P[0])
    t = (half - y[k - 1]) / (y[k] - y[k - 1])
    return float(np.exp(np.log(P[k - 1]) + t * (np.log(P[k]) - np.log(P[k - 1]))))


def jump_fraction(y) -> float:
    """Largest single-step change as a fraction of the total change over the curve, in ``[0, 1]``.

    For a monotone curve it is ``max |Δy| / |y[-1] - y[0]|``. A discontinuity inside the range gives a value near
    1 on any grid; a smooth curve on ``n`` evenly spread steps gives about ``1/n``.

    Raises
    ------
    ValueError
        If the curve does not change at all (no transition to measure).
    """
    y = _as_curve(y)
    total = np.abs(np.diff(y)).sum()
    if total == 0:
        raise ValueError("the curve is constant: no transition to measure")
    return float(np.abs(np.diff(y)).max() / total)


def refine_grid(lo: int, hi: int, n: int) -> tuple[int, ...]:
    """Up to ``n`` distinct integers evenly spaced in ``[lo, hi]`` (both included)."""
    if not (isinstance(lo, (int, np.integer)) and isinstance(hi, (int, np.integer)) and 1 <= lo < hi):
        raise ValueError(f"need integers 1 <= lo < hi, got lo={lo!r}, hi={hi!r}")
    if not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"n must be an int >= 2, got {n!r}")
    return tuple(int(p) for p in np.unique(np.round(np.linspace(lo, hi, n)).astype(int)))


def count_minima(values, grad_norm, *, atol: float, gtol: float = 1e-3) -> int:
    """Number of distinct converged minima among runs at one ``P``.

    Runs with gradient norm ``<= gtol`` count as converged; their order-parameter ``values`` are clustered with
    tolerance ``atol`` (single linkage on the sorted values).
    """
    values = np.asarray(values, dtype=float)
    grad_norm = np.asarray(grad_norm, dtype=float)
    if values.shape != grad_norm.shape or values.ndim != 1:
        raise ValueError(f"values and grad_norm must be 1-D of one shape, got {values.shape}, {grad_norm.shape}")
    if not atol > 0 or not gtol > 0:
        raise ValueError(f"atol and gtol must be > 0, got atol={atol}, gtol={gtol}")
    conv = np.sort(values[np.isfinite(grad_norm) & (grad_norm <= gtol)])
    if conv.size == 0:
        return 0
    return int(1 + np.sum(np.diff(conv) > atol))


@dataclass(frozen=True)
class LossDrops:
    r"""The drops of a loss curve against :math:`\ln P`.

    Attributes
    ----------
    P_peaks : ndarray
        Where the drop rate :math:`r = -d\ell/d\ln P` has a local maximum above ``min_rate`` (one per drop).
    rates : ndarray
        The rate at each peak.
    plateau_rates : ndarray
        The lowest rate between consecutive peaks (``len(P_peaks) - 1`` values).
    """

    P_peaks: np.ndarray
    rates: np.ndarray
    plateau_rates: np.ndarray

    @property
    def plateau_ratio(self) -> float:
        """Deepest plateau relative to the smaller of its two neighbouring drops (NaN with fewer than two drops).

        Below 1/2, the curve reads as "drop, plateau, drop": two distinct drops.
        """
        if len(self.P_peaks) < 2:
            return float("nan")
        ratios = self.plateau_rates / np.minimum(self.rates[:-1], self.rates[1:])
        return float(ratios.min())


def loss_drops(P, loss, *, min_rate: float = 0.01) -> LossDrops:
    """Locate the drops of ``loss`` on an increasing grid ``P`` (peaks of ``-d loss / d ln P`` above ``min_rate``)."""
    P = np.asarray(P, dtype=float)
    y = np.asarray(loss, dtype=float)
    if P.ndim != 1 or P.shape != y.shape or P.size < 5:
        raise ValueError(f"P and loss must be 1-D of one shape with >= 5 points, got {P.shape} and {y.shape}")
    if not (np.all(np.diff(P) > 0) and P[0] > 0):
        raise ValueError("P must be positive and strictly increasing")
    if not np.all(np.isfinite(y)):
        raise ValueError("loss contains non-finite values")
    if not min_rate > 0:
        raise ValueError(f"min_rate must be > 0, got {min_rate}")
    rate = -np.gradient(y, np.log(P))  # (n,)
    interior = np.arange(1, P.size - 1)
    is_peak = (
        (rate[interior] > rate[interior - 1]) & (rate[interior] >= rate[interior + 1]) & (rate[interior] > min_rate)
    )
    peaks = interior[is_peak]
    plateaus = np.array([rate[a : b + 1].min() for a, b in zip(peaks[:-1], peaks[1:])])
    return LossDrops(P_peaks=P[peaks], rates=rate[peaks], plateau_rates=plateaus)
