r"""Seed offsets: ``BOOK_SEED=k`` moves every seed of every chapter, so a claim can be checked at other seeds.

A chapter's seeds are small integers chosen once (``seed=0``, ``seeds=(0, 1, 2)``). With ``BOOK_SEED=k`` each of them
becomes :math:`s + 100\,000\,k` — the data (which map, which rule table, which training sequences), the initialisations
and the data order all change, and no two offsets share a seed while a chapter's seeds stay below 100,000. ``k = 0``
(the default) leaves every seed as written, so the default build and its results cache are unchanged.

Chapters apply the offset at the point where they choose: :func:`seed` for one integer, :func:`seeds` for a tuple,
:func:`reseed` for a whole frozen config (every field named ``seed``, ``*_seed``, ``seeds`` or ``*_seeds``, also inside
nested configs such as a ``Member``'s task). Results committed under ``data/`` are fixed studies: they keep their seeds
whatever the offset, and claims measured on them say so.
"""

from __future__ import annotations

import dataclasses
import os

__all__ = ["SEED_STRIDE", "seed_offset", "seed", "seeds", "reseed"]

SEED_STRIDE = 100_000


def seed_offset() -> int:
    """The offset ``k`` from ``BOOK_SEED`` (default 0); ``ValueError`` unless a non-negative integer."""
    raw = os.environ.get("BOOK_SEED", "0").strip() or "0"
    try:
        k = int(raw)
    except ValueError:
        raise ValueError(f"BOOK_SEED must be a non-negative integer, got {raw!r}") from None
    if k < 0:
        raise ValueError(f"BOOK_SEED must be a non-negative integer, got {k}")
    return k


def seed(s: int) -> int:
    """``s + 100000 k`` for ``BOOK_SEED=k``."""
    if isinstance(s, bool) or not isinstance(s, int) or s < 0:
        raise ValueError(f"a seed must be a non-negative int, got {s!r}")
    if s >= SEED_STRIDE:
        raise ValueError(f"chapter seeds must be below {SEED_STRIDE:,} so that offsets never collide, got {s}")
    return s + SEED_STRIDE * seed_offset()


def seeds(ss) -> tuple[int, ...]:
    """:func:`seed` of each."""
    return tuple(seed(s) for s in ss)


def _is_seed_field(name: str) -> bool:
    return name in ("seed", "seeds") or name.endswith(("_seed", "_seeds"))


def reseed(obj):
    """``obj`` with every seed field offset (frozen dataclasses, recursively, and tuples of them); ``obj`` itself
    when the offset is 0."""
    if seed_offset() == 0:
        return obj
    return _reseed(obj)


def _reseed(obj):
    if isinstance(obj, tuple):
        return tuple(_reseed(x) for x in obj)
    if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        return obj
    changes = {}
    for f in dataclasses.fields(obj):
        if not f.init:
            continue
        value = getattr(obj, f.name)
        if _is_seed_field(f.name) and isinstance(value, int) and not isinstance(value, bool):
            changes[f.name] = seed(value)
        elif _is_seed_field(f.name) and isinstance(value, tuple) and all(isinstance(v, int) for v in value):
            changes[f.name] = seeds(value)
        elif dataclasses.is_dataclass(value) or isinstance(value, tuple):
            new = _reseed(value)
            if new is not value:
                changes[f.name] = new
    return dataclasses.replace(obj, **changes) if changes else obj
