"""Criteria: a test on a measured value, and on the whole of its interval.

A criterion is part of a claim's registry entry (:mod:`lib.claims.registry`), changed only in a commit of its own. It tests a point
value (``crit(x)``) and an interval (``crit.holds_on(lo, hi)``: every value between ``lo`` and ``hi`` passes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Criterion", "between", "at_least", "at_most", "within", "is_true"]


@dataclass(frozen=True)
class Criterion:
    """A test on a measured value. Build it with :func:`between`, :func:`at_least`, :func:`at_most`,
    :func:`within` or :func:`is_true`."""

    op: str
    lo: float | None = None
    hi: float | None = None
    text: str = ""

    def __call__(self, value: float | bool) -> bool:
        if self.op == "is_true":
            return bool(value)
        x = float(value)
        if math.isnan(x):
            return False
        return (self.lo is None or x >= self.lo) and (self.hi is None or x <= self.hi)

    def holds_on(self, lo: float, hi: float) -> bool:
        """Every value in ``[lo, hi]`` passes (the interval lies wholly past the threshold).

        The criteria are intervals of the real line, so this is true exactly when both ends pass. For a qualitative
        (``is_true``) criterion the interval is that of the condition's indicator (1 where it holds) over bootstrap
        resamples (:func:`lib.claims.condition_interval`): it passes when both ends are 1, i.e. the condition holds
        in every resample inside the interval's level.
        """
        return self(lo) and self(hi)

    def describe(self) -> str:
        return self.text


def _finite(name: str, x: float) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        raise ValueError(f"{name} must be a finite number, got {x!r}")
    return float(x)


def between(lo: float, hi: float) -> Criterion:
    """``lo <= measured <= hi`` (both finite, ``lo < hi``)."""
    lo, hi = _finite("lo", lo), _finite("hi", hi)
    if not lo < hi:
        raise ValueError(f"between(lo, hi) needs lo < hi, got lo={lo}, hi={hi}")
    return Criterion("between", lo, hi, f"in [{lo:g}, {hi:g}]")


def at_least(lo: float) -> Criterion:
    """``measured >= lo``."""
    lo = _finite("lo", lo)
    return Criterion("at_least", lo, None, f"≥ {lo:g}")


def at_most(hi: float) -> Criterion:
    """``measured <= hi``."""
    hi = _finite("hi", hi)
    return Criterion("at_most", None, hi, f"≤ {hi:g}")


def within(target: float, *, rel: float | None = None, tol: float | None = None) -> Criterion:
    """``|measured - target| <= t`` with ``t = rel*|target|`` or ``t = tol`` (exactly one of them)."""
    target = _finite("target", target)
    if (rel is None) == (tol is None):
        raise ValueError("within() needs exactly one of rel= or tol=")
    if rel is not None:
        rel = _finite("rel", rel)
        if not rel > 0:
            raise ValueError(f"rel must be > 0, got {rel}")
        t, text = rel * abs(target), f"within {100 * rel:g} % of {target:g}"
    else:
        t = _finite("tol", tol)
        if not t > 0:
            raise ValueError(f"tol must be > 0, got {t}")
        text = f"within ±{t:g} of {target:g}"
    return Criterion("within", target - t, target + t, text)


def is_true(text: str = "holds") -> Criterion:
    """The measured value is a boolean (a qualitative claim); ``text`` says what must hold."""
    return Criterion("is_true", None, None, text)
