"""Argument checks shared by every layer of ``lib``: one wording for every ``ValueError`` / ``TypeError``.

Each check returns the validated value (converted where it says so) or raises an error that names the argument,
what it must be and what it got, e.g. ``ValueError: steps must be >= 1, got 0``.
"""

from __future__ import annotations

import math
import numbers

__all__ = ["check_size", "check_choice", "check_positive"]


def check_size(name: str, value: object, minimum: int) -> int:
    """An integer size: a Python/NumPy int (not a bool, not a float) that is at least ``minimum``; as ``int``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def check_choice(name: str, value: object, allowed: tuple[str, ...]) -> str:
    """A string from ``allowed`` (``TypeError`` for a non-string, ``ValueError`` for an unknown string)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, one of {allowed}; got {type(value).__name__}")
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    return value


def check_positive(name: str, value: object) -> float:
    """A finite real number > 0 (not a bool), as ``float``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value)) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)
