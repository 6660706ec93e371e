"""What a committed study keeps of a trained stack: the loss curves, and the rest only where a chapter reads it.

A :class:`~lib.train.gpt_train.GPTRun` carries, besides its loss curves, attention statistics per head and query and
the final parameters of every member: megabytes per stack, most of which no chapter reads. Committed studies store
:func:`slim_run` copies; a dropped field is ``None``.
"""

from __future__ import annotations

import dataclasses

from ..train.gpt_train import GPTRun

__all__ = ["slim_run", "DROPPED"]

#: Fields dropped unless ``stats`` is set (the per-query losses, attention statistics, training losses and masks).
DROPPED = ("token_loss", "entropy", "mass", "iou", "train_loss", "masks")


def slim_run(run: GPTRun, *, members: slice | None = None, stats: bool = False) -> GPTRun:
    """``run`` with its loss curves (``steps``, ``loss``, ``pred_loss``) and config; the fields of :data:`DROPPED`
    only if ``stats``; the final parameters only of ``members`` (a slice of the stack; ``None``: none kept)."""
    if not isinstance(run, GPTRun):
        raise TypeError(f"run must be a GPTRun, got {type(run).__name__}")
    if members is not None and not isinstance(members, slice):
        raise TypeError(f"members must be a slice or None, got {type(members).__name__}")
    changes = {} if stats else dict.fromkeys(DROPPED)
    changes["params"] = None if members is None else {k: v[members] for k, v in run.params.items()}
    return dataclasses.replace(run, **changes)
