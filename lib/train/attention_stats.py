r"""Attention statistics of paper B's synthetic runs against the true support, evaluated while training.

Per head, per predicting query ``q``, over a batch, for a pattern row :math:`a_{q\cdot}` and the true support
:math:`\mathcal S_q` (the ones of the ground-truth mask row):

* entropy :math:`H_q = -\sum_k a_{qk}\ln a_{qk}` (uniform over ``n`` keys: :math:`\ln n`; on an ``s``-key support:
  :math:`\ln s`);
* support mass :math:`m_q = \sum_{k\in\mathcal S_q} a_{qk}`;
* IoU of the head's top-``s`` keys :math:`\mathcal T_q` with the support,
  :math:`|\mathcal T_q\cap\mathcal S_q| / |\mathcal T_q\cup\mathcal S_q|`.
"""

from __future__ import annotations

import torch

__all__ = ["attention_stats"]


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
