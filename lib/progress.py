"""Progress bars for long loops (bottom layer: any module may use it)."""

from __future__ import annotations

import os
from typing import Any, Iterable

__all__ = ["progress"]


def progress(iterable: Iterable | None = None, **kwargs: Any):
    """A tqdm progress bar (a notebook widget when interactive).

    ``BOOK_PROGRESS=0`` in the environment silences every bar (the book build sets it, so rendered pages do not
    carry progress-bar debris).
    """
    from tqdm.auto import tqdm

    flag = os.environ.get("BOOK_PROGRESS", "1").strip().lower()
    kwargs.setdefault("disable", flag in {"0", "false", "no", "off"})
    kwargs.setdefault("leave", False)
    return tqdm(iterable, **kwargs)
