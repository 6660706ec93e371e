r"""Metrics of paper B's synthetic runs: attention statistics against the true support, and when things happen.

Attention statistics (per head, per predicting query ``q``, over a batch), for a pattern row
:math:`a_{q\cdot}` and the true support :math:`\mathcal S_q` (the ones of the ground-truth mask row):

* entropy :math:`H_q = -\sum_k a_{qk}\ln a_{qk}` (uniform over ``n`` keys: :math:`\ln n`; on an ``s``-key support:
  :math:`\ln s`);
* support mass :math:`m_q = \sum_{k\in\mathcal S_q} a_{qk}`;
* IoU of the head's top-``s`` keys :math:`\mathcal T_q` with the support,
  :math:`|\mathcal T_q\cap\mathcal S_q| / |\mathcal T_q\cup\mathcal S_q|`.

Times, from curves recorded at ``steps`` (the first axis): :func:`first_below` (plateau length, time to learn;
``inf`` marks a censored run that never got there, which counts as *not learned* and is never dropped),
:func:`midpoint_step` (when a drop happens), :func:`success_rate` and :func:`spread`.
"""

from __future__ import annotations

import math

import numpy as np
import torch

__all__ = [
    "attention_stats",
    "first_below",
    "midpoint_step",
    "success_rate",
    "spread",
    "row_drops",
]


def attention_stats(pattern: torch.Tensor, mask: torch.Tensor, queries: torch.Tensor) -> dict[str, torch.Tensor]:
    """Entropy, support mass and top-s IoU of each head at each predicting query.

    The entropy is averaged over the batch; mass and IoU are those of the batch-averaged pattern (the averaged
    attention map, as the paper plots it; mass is linear, so it equals the batch mean of the per-sequence masses).

    Parameters
    ----------
    pattern : Tensor, shape ``(E, B, H, L, L)``
        Attention weights (rows sum to one over the causal keys).
    mask : Tensor, shape ``(E, L, L)`` or ``(L, L)``
        Ground-truth 0/1 support of each query row.
    queries : Tensor, shape ``(Q,)``
        Query positions to measure (rows with a non-empty support).

    Returns
    -------
    dict with ``entropy``, ``mass``, ``iou``, each ``(E, H, Q)`` (float64).
    """
    if pattern.dim() != 5 or pattern.shape[-1] != pattern.shape[-2]:
        raise ValueError(f"pattern must be (E, B, H, L, L), got {tuple(pattern.shape)}")
    E, _, _, L, _ = pattern.shape
    if mask.dim() == 2:
        mask = mask.expand(E, L, L)
    if mask.shape != (E, L, L):
        raise ValueError(f"mask must be (E, L, L) or (L, L) with E={E}, L={L}, got {tuple(mask.shape)}")
    a = pattern[..., queries, :]  # (E, B, H, Q, L)
    m = mask[:, queries, :].to(a.dtype)[:, None]  # (E, 1, Q, L)
    k = m.sum(-1)  # (E, 1, Q) support sizes
    if bool((k == 0).any()):
        raise ValueError("every measured query needs a non-empty support in mask")
    entropy = -torch.xlogy(a, a).sum(-1).mean(1)  # (E, H, Q)
    mean = a.mean(1)  # (E, H, Q, L): the averaged map
    mass = (mean * m).sum(-1)
    s_max = int(k.max())
    top = torch.topk(mean, s_max, dim=-1).indices  # (E, H, Q, s_max)
    hit = torch.gather(m.expand_as(mean), -1, top)  # 1 where a top key is in the support
    keep = (torch.arange(s_max, device=a.device) < k[..., None]).to(hit.dtype)  # only the first s of the top keys count
    inter = (hit * keep).sum(-1)
    iou = inter / (2 * k - inter)
    return {"entropy": entropy.double(), "mass": mass.double(), "iou": iou.double()}


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
