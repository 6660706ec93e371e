r"""When things happen in a training curve recorded at ``steps`` (the first axis).

:func:`first_below` (plateau length, time to learn; ``inf`` marks a censored run that never got there, which counts
as *not learned* and is never dropped), :func:`midpoint_step` (when a drop happens), :func:`success_rate`,
:func:`spread` and :func:`row_drops`.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["first_below", "midpoint_step", "success_rate", "spread", "row_drops"]


def _curves(steps, values) -> tuple[np.ndarray, np.ndarray]:
    steps = np.asarray(steps, dtype=float)
    values = np.asarray(values, dtype=float)
    if steps.ndim != 1 or steps.size < 1 or values.shape[:1] != steps.shape:
        raise ValueError(f"values must have steps' length {steps.shape} on the first axis, got {values.shape}")
    if np.any(np.diff(steps) <= 0):
        raise ValueError("steps must be strictly increasing")
    return steps, values


def first_below(steps, values, threshold: float) -> np.ndarray:
    """First recorded step with ``value < threshold``, per trailing index; ``inf`` where never (censored).

    With ``values`` of shape ``(K, ...)`` the result has shape ``(...)``. The resolution is the recording
    interval (a run that is below at its first recorded point gets ``steps[0]``).
    """
    steps, values = _curves(steps, values)
    if not math.isfinite(threshold):
        raise ValueError(f"threshold must be finite, got {threshold!r}")
    below = values < threshold
    idx = below.argmax(0)
    out = steps[idx].astype(float)
    return np.where(below.any(0), out, np.inf)


def midpoint_step(steps, values, *, start: float | np.ndarray | None = None, end: float | np.ndarray | None = None):
    """First step at which a falling curve is below the midpoint of ``start`` and ``end`` (``inf`` if never).

    ``start`` defaults to the first value and ``end`` to the last (both per trailing index). A curve that does not
    fall by at least 10 % of ``start`` has no drop and gets ``inf``.
    """
    steps, values = _curves(steps, values)
    start = values[0] if start is None else np.asarray(start, dtype=float)
    end = values[-1] if end is None else np.asarray(end, dtype=float)
    mid = 0.5 * (start + end)
    below = values < mid
    out = np.where(below.any(0), steps[below.argmax(0)], np.inf)
    return np.where(start - end >= 0.1 * np.abs(start), out, np.inf)


def success_rate(times, budget: float) -> float:
    """Share of runs whose time is at most ``budget`` (censored ``inf`` runs count as failures)."""
    times = np.asarray(times, dtype=float).ravel()
    if times.size == 0:
        raise ValueError("times is empty")
    if np.isnan(times).any():
        raise ValueError("times must not contain NaN (use inf for runs that never got there)")
    return float(np.mean(times <= budget))


def spread(times) -> float:
    """Ratio of the largest to the smallest time among the runs that got there (``nan`` if fewer than two)."""
    t = np.asarray(times, dtype=float).ravel()
    t = t[np.isfinite(t)]
    if t.size < 2 or t.min() <= 0:
        return float("nan")
    return float(t.max() / t.min())


def row_drops(steps, token_loss, entropy, *, threshold: float) -> dict[str, np.ndarray]:
    """When each output row's loss drops, and when the entropy of the head that serves it drops.

    Parameters
    ----------
    steps : array ``(K,)``
    token_loss : array ``(K, Q)``
        Loss of each predicting query (row) of one run.
    entropy : array ``(K, H, Q)``
        Attention entropy of each head at each query (heads of all layers stacked on ``H``).
    threshold : float
        A row counts as learned from the first step its loss is below ``threshold``.

    Returns
    -------
    dict with ``loss_step`` ``(Q,)`` (first step below ``threshold``, ``inf`` if never), ``head`` ``(Q,)`` (the head
    whose entropy at that row falls most over the run) and ``entropy_step`` ``(Q,)`` (that head's midpoint step).
    """
    steps, token_loss = _curves(steps, token_loss)
    _, entropy = _curves(steps, entropy)
    if token_loss.ndim != 2 or entropy.ndim != 3 or entropy.shape[2] != token_loss.shape[1]:
        raise ValueError(f"need token_loss (K, Q) and entropy (K, H, Q), got {token_loss.shape}, {entropy.shape}")
    loss_step = first_below(steps, token_loss, threshold)
    fall = entropy[0] - entropy[-1]  # (H, Q)
    head = fall.argmax(0)  # (Q,)
    curves = entropy[:, head, np.arange(entropy.shape[2])]  # (K, Q)
    return {"loss_step": loss_step, "head": head, "entropy_step": midpoint_step(steps, curves)}
