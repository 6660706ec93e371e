"""Progress of a chapter on the console of the build that executes it, never in the rendered page.

A build at another seed offset (``BOOK_SEED=k make book``) recomputes every committed study a chapter reads, minutes
of work per chapter. With ``BOOK_CONSOLE=1`` (the Makefile sets it at an offset) :func:`enable`, called by
:func:`lib.setup`, sends every progress bar of :func:`lib.core.progress.progress` to the kernel process's own standard
error as it was before the kernel captured it (:func:`stream`: the build's terminal, not the notebook), one line per
update at most every :data:`EVERY` seconds, each prefixed with the chapter and the seconds since it started::

    [04_adam_and_sgld +312 s] Adam fits: data sets:  50%|#####     | 2/4 [03:10<03:10, 95.01s/it]

So a chapter that runs past its timeout has said which study it was recomputing and how far it got.
"""

from __future__ import annotations

import os
import sys
import time

__all__ = ["EVERY", "enable", "say", "stream"]

#: Seconds between two lines of one progress bar.
EVERY = 30.0

_STATE: dict = {}
_CONSOLE: dict = {}


def stream():
    """The console: the standard error the process had before a Jupyter kernel captured it.

    ipykernel forwards whatever reaches file descriptor 2 into the notebook's outputs, ``sys.__stderr__`` included;
    it keeps a copy of the original descriptor (``sys.stderr._original_stdstream_copy``), and a line written there
    reaches only the terminal of the build. Outside a kernel this is ``sys.__stderr__``. ``None``: no console."""
    if "stream" not in _CONSOLE:
        fd = getattr(sys.stderr, "_original_stdstream_copy", None)
        _CONSOLE["stream"] = os.fdopen(os.dup(fd), "w", buffering=1) if isinstance(fd, int) else sys.__stderr__
    return _CONSOLE["stream"]


def say(message: str) -> None:
    """One line on the console, prefixed with the chapter and its elapsed seconds (nothing before :func:`enable`)."""
    if not _STATE:
        return
    out = stream()
    if out is not None:
        out.write(f"[{_STATE['chapter']} +{time.perf_counter() - _STATE['t0']:.0f} s] {message}\n")
        out.flush()


def enable(chapter: str, note: str = "") -> None:
    """Route this kernel's progress bars to the console (module docstring) and announce ``chapter``."""
    import tqdm.auto
    from tqdm.std import tqdm as std_tqdm

    class ConsoleBar(std_tqdm):
        """A tqdm bar that writes whole lines to the process's stderr, at most every :data:`EVERY` seconds."""

        def __init__(self, *args, **kwargs):
            kwargs.update(file=stream(), mininterval=EVERY, ascii=True, ncols=100, leave=False)
            super().__init__(*args, **kwargs)

        def display(self, msg=None, pos=None):  # a line per update instead of a carriage-return redraw
            if self.n == 0 and (self.total or 0) >= 100:  # a training loop's start says nothing; a study's does
                return True
            say(self.format_meter(**self.format_dict))
            return True

    _STATE.update(chapter=chapter, t0=time.perf_counter())
    tqdm.auto.tqdm = ConsoleBar
    os.environ["BOOK_PROGRESS"] = "1"  # lib.core.progress reads it at each call: the bars are on, on the console only
    say(f"started{': ' + note if note else ''}")
