"""Progress bars for long loops (bottom layer: any module may use it)."""

from __future__ import annotations

from typing import Any, Iterable

from .env import env_flag

__all__ = ["progress"]


def progress(iterable: Iterable | None = None, **kwargs: Any):
    """A tqdm progress bar (a notebook widget when interactive).

    ``BOOK_PROGRESS=0`` in the environment silences every bar (the book build sets it, so rendered pages do not
    carry progress-bar debris).
    """
    from tqdm.auto import tqdm

    kwargs.setdefault("disable", not env_flag("BOOK_PROGRESS", True))
    kwargs.setdefault("leave", False)
    return tqdm(iterable, **kwargs)
