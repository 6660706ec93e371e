"""Where the paper-scale unit now running trains and checkpoints: set by the study engine around each unit, read by the
unit's function (:func:`lib.studies._units.fast_curves`).

A unit's identity (its study, config and numerics) never holds these: a unit trained on a GPU or resumed from a
checkpoint is the same unit, and the engine records the device it ran on beside its machine.

Environment (read by :func:`unit_device` and :func:`checkpoint_every` in the engine's process, inherited by its
workers): ``BOOK_UNIT_DEVICE`` (``auto``: CUDA when present, else the CPU; or ``cpu``, ``cuda``, ``cuda:N``) and
``BOOK_CHECKPOINT_EVERY`` (optimiser steps between checkpoints, default 500; 0 disables checkpoints) and
``BOOK_CHECKPOINT_DIR`` (default ``data/paper/.checkpoints``).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

__all__ = ["UnitContext", "current_unit", "unit_running", "unit_device", "checkpoint_every", "checkpoint_dir"]


@dataclass(frozen=True)
class UnitContext:
    """Where one unit runs.

    Attributes
    ----------
    device : str
        The torch device to train on (``"cpu"``, ``"cuda"``, ``"cuda:N"``).
    checkpoint : Path or None
        The unit's checkpoint file (resumed from when it exists, removed by the engine when the unit is done); None:
        no checkpoints.
    every : int
        Optimiser steps between checkpoints.
    """

    device: str = "cpu"
    checkpoint: Path | None = None
    every: int = 500

    def __post_init__(self) -> None:
        if not isinstance(self.device, str) or not (self.device == "cpu" or self.device.startswith("cuda")):
            raise ValueError(f"UnitContext.device must be 'cpu', 'cuda' or 'cuda:N', got {self.device!r}")
        if isinstance(self.every, bool) or not isinstance(self.every, int) or self.every < 1:
            raise ValueError(f"UnitContext.every must be an int >= 1, got {self.every!r}")


_CURRENT = UnitContext()


def current_unit() -> UnitContext:
    """The context of the unit now running in this process (outside the engine: the CPU, no checkpoints)."""
    return _CURRENT


@contextlib.contextmanager
def unit_running(ctx: UnitContext) -> Iterator[UnitContext]:
    """Make ``ctx`` the current unit's context for the duration of the block."""
    global _CURRENT
    if not isinstance(ctx, UnitContext):
        raise ValueError(f"unit_running needs a UnitContext, got {type(ctx).__name__}")
    before, _CURRENT = _CURRENT, ctx
    try:
        yield ctx
    finally:
        _CURRENT = before


def unit_device() -> str:
    """The device units train on: ``BOOK_UNIT_DEVICE`` (default ``auto``: ``"cuda"`` when torch sees a GPU, else
    ``"cpu"``). ``ValueError`` for another value, or for ``cuda`` on a machine without one."""
    raw = os.environ.get("BOOK_UNIT_DEVICE", "auto").strip().lower() or "auto"
    import torch

    if raw == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if raw != "cpu" and not (raw == "cuda" or (raw.startswith("cuda:") and raw[5:].isdigit())):
        raise ValueError(f"BOOK_UNIT_DEVICE must be auto, cpu, cuda or cuda:N, got {raw!r}")
    if raw.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"BOOK_UNIT_DEVICE={raw} but torch sees no CUDA device on this machine")
    return raw


def checkpoint_every() -> int:
    """Optimiser steps between a unit's checkpoints: ``BOOK_CHECKPOINT_EVERY`` (default 500; 0: none)."""
    raw = os.environ.get("BOOK_CHECKPOINT_EVERY", "500").strip() or "500"
    if not raw.isdigit():
        raise ValueError(f"BOOK_CHECKPOINT_EVERY must be an int >= 0, got {raw!r}")
    return int(raw)


def checkpoint_dir() -> Path:
    """Where units keep their checkpoints: ``BOOK_CHECKPOINT_DIR``, by default ``data/paper/.checkpoints/``, beside
    the published units, so that the checkpoints of units in flight can be committed when a session ends and a
    later run on another machine resumes them (a hidden folder: not a result, not in the data manifest)."""
    raw = os.environ.get("BOOK_CHECKPOINT_DIR", "").strip()
    if raw:
        return Path(raw)
    from .env import DATA_DIR

    return Path(DATA_DIR) / "paper" / ".checkpoints"
