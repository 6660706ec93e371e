r"""The smoke run of the paper scale: ``BOOK_FAST=0 BOOK_SMOKE=f`` executes every ``BOOK_FAST=0`` line with the
paper-scale configuration, its steps, seeds and batch sizes cut by the fixed factor ``f``.

A paper-scale run takes CPU-hours, so without this mode the ``BOOK_FAST=0`` branches would be code that never runs.
The smoke run keeps everything that decides *which code runs* at its paper value (the model's widths and depth, the
grids of sizes, sparsities and architectures, the rate grids) and divides what only decides *how long it runs*:

- every ``steps`` or ``*_steps`` field by ``f`` (at least 2), and every ``*_every`` field (and ``thin``) with it;
- every seed tuple (``seeds``, ``*_seeds``) to its first ``len // f`` seeds, but at least 3 where there were 3 or
  more (all of them where fewer), so that medians, bootstrap intervals and the subsets of seeds that some studies
  take (``n_few``, ``n_width``: three at paper scale) still have something to work on;
- every token budget (``tokens``, ``*_tokens``, ``tokens_per_step``) by ``f``, but not below 1,024 tokens (or the
  paper's own value where that is smaller), so a batch still holds whole sequences (the longest paper-scale sequence
  is chapter 6's automaton of width 64: 1,024 tokens); a config whose sequences are shorter may lower this floor
  (``min_tokens``, at least its longest sequence) where the batch is what makes the smoke run slow;
- a plain count that a chapter marks as such (:func:`pick` with ``count=True``: samples, data sets, chains) by ``f``,
  but not below 2 (or the paper's own value where that is smaller).

The results of a smoke run mean nothing: :func:`lib.claim` shows each claim as *not run* and judges none, and the
ledger snapshot is never compared. ``f`` is read from ``BOOK_SMOKE`` (unset or 0: off; otherwise an integer
:math:`\ge 2`); ``make smoke-paper`` sets it. Configs pass through :func:`cut` recursively (frozen dataclasses and
tuples of them, as :func:`lib.core.seeds.reseed`), so a study's own nested configs (an ``AdamConfig``, an ``SGLDConfig``)
are cut too.

In a smoke run an interval of data the cut left undefined is NaN instead of an error (:mod:`lib.core.intervals`).
"""

from __future__ import annotations

import dataclasses
import os


__all__ = ["smoke_factor", "cut", "pick", "MIN_TOKENS", "MIN_SEEDS"]

#: The smallest token budget a cut leaves (or the paper's own, where that is smaller).
MIN_TOKENS = 1024
#: The fewest seeds a cut leaves (or the paper's own number, where that is smaller).
MIN_SEEDS = 3


def smoke_factor() -> int:
    """``f`` from ``BOOK_SMOKE``: 0 when off; ``ValueError`` unless 0 or an integer of at least 2."""
    raw = os.environ.get("BOOK_SMOKE", "0").strip() or "0"
    try:
        f = int(raw)
    except ValueError:
        raise ValueError(f"BOOK_SMOKE must be 0 (off) or an integer factor >= 2, got {raw!r}") from None
    if f == 0:
        return 0
    if f < 2:
        raise ValueError(f"BOOK_SMOKE must be 0 (off) or an integer factor >= 2, got {f}")
    return f


def _count(v: int, f: int, floor: int = 1) -> int:
    return max(min(v, floor), v // f)


def _cut_field(name: str, value, f: int, min_tokens: int = MIN_TOKENS):
    """The cut value of one field, or ``value`` itself when the field is not one that :func:`cut` shortens."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if name == "steps" or name.endswith("_steps"):
            return _count(value, f, 2)
        if name.endswith("_every") or name == "thin":
            return _count(value, f)
        if name in ("tokens", "tokens_per_step") or name.endswith("_tokens"):
            return _count(value, f, min_tokens)
    if (
        (name == "seeds" or name.endswith("_seeds"))
        and isinstance(value, tuple)
        and value
        and all(isinstance(v, int) for v in value)
    ):
        return value[: _count(len(value), f, MIN_SEEDS)]
    return value


def cut(obj, factor: int, *, min_tokens: int = MIN_TOKENS):
    """``obj`` with its steps, seeds and token budgets cut by ``factor`` (module docstring); ``obj`` itself for
    ``factor`` 0 or 1. ``min_tokens``: the floor of a cut token budget (default :data:`MIN_TOKENS`); it must hold
    the config's longest sequence, which the training config checks.

    Frozen dataclasses are rebuilt with :func:`dataclasses.replace` (so their own validation runs on the cut
    values), nested dataclasses and tuples of them recursively; anything else is returned as it is.
    """
    if isinstance(factor, bool) or not isinstance(factor, int) or factor < 0:
        raise ValueError(f"factor must be a non-negative int, got {factor!r}")
    if isinstance(min_tokens, bool) or not isinstance(min_tokens, int) or min_tokens < 1:
        raise ValueError(f"min_tokens must be a positive int, got {min_tokens!r}")
    if factor <= 1:
        return obj
    return _cut(obj, factor, min_tokens)


def _cut(obj, f: int, min_tokens: int = MIN_TOKENS):
    if isinstance(obj, tuple):
        return tuple(_cut(x, f, min_tokens) for x in obj)
    if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        return obj
    changes = {}
    for fld in dataclasses.fields(obj):
        if not fld.init:
            continue
        value = getattr(obj, fld.name)
        new = _cut_field(fld.name, value, f, min_tokens)
        if new is value and (dataclasses.is_dataclass(value) or isinstance(value, tuple)):
            new = _cut(value, f, min_tokens)
        if new is not value and new != value:
            changes[fld.name] = new
    return dataclasses.replace(obj, **changes) if changes else obj


def pick(fast, paper, *, fast_mode: bool, count: bool = False, factor: int | None = None, min_tokens: int = MIN_TOKENS):
    """``fast`` at FAST scale; otherwise ``paper``, cut by the smoke factor when one is set.

    Parameters
    ----------
    fast, paper
        The FAST and the paper-scale value: configs (cut by :func:`cut`), or plain values.
    fast_mode : bool
        Whether the chapter runs at FAST scale.
    count : bool
        ``paper`` is a plain count of repetitions (samples, data sets, chains, seeds): an ``int`` divided by the
        factor (at least 2, or ``paper`` where that is smaller). Without it a plain value is never cut: sizes and grids decide which code runs.
    factor : int, optional
        The smoke factor (default :func:`smoke_factor`).
    min_tokens : int
        The floor of a cut token budget (:func:`cut`).
    """
    if fast_mode:
        return fast
    f = smoke_factor() if factor is None else factor
    if f <= 1:
        return paper
    if count:
        if isinstance(paper, bool) or not isinstance(paper, int) or paper < 1:
            raise ValueError(f"a count must be a positive int, got {paper!r}")
        return _count(paper, f, 2)
    return cut(paper, f, min_tokens=min_tokens)
