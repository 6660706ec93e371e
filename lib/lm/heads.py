"""What an attention head does on a repeated sequence: previous-token and induction (copy) scores.

On a prompt that repeats a span of length ``period`` (the repetition tasks), a *previous-token* head puts its weight
at key ``t − 1``; an *induction* head, at query ``t`` in the repeat, attends to ``t − period + 1``: the token after
the earlier occurrence of the current token, which is the one to copy (Olsson et al. 2022). Paper B's Fig. 1 names
its two patched heads by these patterns; the scores check the heads ranked by Δp.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["head_scores"]


def head_scores(patterns, period: int) -> dict[str, np.ndarray]:
    """Mean attention on the previous token and on the induction target, per head.

    Parameters
    ----------
    patterns : (L, N, H, T, T)
        Post-softmax attention (e.g. from :func:`lib.lm.patching.record_patterns`).
    period : int
        Length of the repeated span (8 for the ``rep`` task, 10 for ``icr``).

    Returns
    -------
    dict with ``"prev"`` and ``"induction"``, each ``(L, H)``: the previous-token score averages queries
    ``1..T-1``; the induction score averages the queries of the repeat, ``period..T-1``.
    """
    A = torch.as_tensor(patterns, dtype=torch.float64)
    if A.ndim != 5 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"patterns must be (L, N, H, T, T), got {tuple(A.shape)}")
    T = A.shape[-1]
    if not isinstance(period, int) or not 1 <= period < T:
        raise ValueError(f"period must be an int in [1, {T - 1}], got {period!r}")
    q = torch.arange(1, T)
    prev = A[..., q, q - 1].mean((-1, 1))  # (L, H)
    qi = torch.arange(period, T)
    ind = A[..., qi, qi - period + 1].mean((-1, 1))  # (L, H)
    return {"prev": prev.numpy(), "induction": ind.numpy()}
