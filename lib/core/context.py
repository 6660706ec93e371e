"""The current chapter run's context: chapter, scale, seeds, device (set by :func:`lib.book.setup`, read by claims)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["BookContext", "context", "set_context"]


@dataclass(frozen=True)
class BookContext:
    """What ``setup`` decided for one chapter run.

    Attributes
    ----------
    chapter : str
        The chapter's slug, e.g. ``"01_copy_task"``; recorded with every claim.
    fast : bool
        CI scale (True) or paper scale (False).
    seed : int
        The global seed set for ``random``, ``numpy`` and ``torch`` (after the ``BOOK_SEED`` offset).
    device : torch.device
        CUDA at paper scale when a GPU is present, CPU otherwise.
    started : float
        ``time.perf_counter()`` at setup, for the run-time report in ``finish``.
    seed_offset : int
        ``BOOK_SEED``: every chapter seed is moved by ``100000 * seed_offset`` (:mod:`lib.core.seeds`).
    smoke : int
        ``BOOK_SMOKE``: 0, or the factor by which the smoke run cuts the paper scale (:mod:`lib.core.smoke`).
    """

    chapter: str
    fast: bool
    seed: int
    device: torch.device
    started: float
    seed_offset: int = 0
    smoke: int = 0

    @property
    def scale(self) -> str:
        """``"fast"``, ``"full"`` or ``"smoke"`` (the paper scale cut by ``BOOK_SMOKE``)."""
        return "fast" if self.fast else "smoke" if self.smoke else "full"

    def pick(self, fast, paper, *, count: bool = False, min_tokens: int | None = None):
        """``fast`` at FAST scale, else ``paper`` (cut in a smoke run; :func:`lib.core.smoke.pick`).

        ``count=True`` marks a plain ``int`` as a count of repetitions (samples, data sets, seeds), which a smoke
        run divides; configs (frozen dataclasses) are always cut, other plain values never. ``min_tokens``: the
        floor of a cut token budget (default :data:`lib.core.smoke.MIN_TOKENS`), for configs of shorter sequences.
        """
        from .smoke import MIN_TOKENS, pick

        return pick(
            fast,
            paper,
            fast_mode=self.fast,
            count=count,
            factor=self.smoke,
            min_tokens=MIN_TOKENS if min_tokens is None else min_tokens,
        )

    def scaled(self, config):
        """``config`` as this run uses it: cut by :func:`lib.core.smoke.cut` in a smoke run, else ``config`` itself (for
        a config whose scale-dependent values the chapter has already chosen)."""
        from .smoke import cut

        return cut(config, self.smoke) if self.smoke else config

    def check(self, condition, message: str) -> None:
        """Assert a statement of the prose about a trained or sampled result (``AssertionError`` with ``message``
        when it fails), except in a smoke run, whose cut runs decide nothing: there it only prints that the check
        was not made. Statements about the theory, which a smoke run does not cut, stay plain asserts."""
        if self.smoke:
            print(f"smoke run: not checked: {message}")
        elif not condition:
            raise AssertionError(message)


_CONTEXT: BookContext | None = None


def set_context(ctx: BookContext) -> BookContext:
    """Make ``ctx`` the current chapter run's context (:func:`lib.book.setup` calls it); returns it."""
    global _CONTEXT
    if not isinstance(ctx, BookContext):
        raise ValueError(f"set_context needs a BookContext, got {type(ctx).__name__}")
    _CONTEXT = ctx
    return ctx


def context() -> BookContext:
    """The context of the current chapter run (``lib.setup`` must have been called)."""
    if _CONTEXT is None:
        raise RuntimeError("lib.setup(chapter) has not been called in this kernel")
    return _CONTEXT
