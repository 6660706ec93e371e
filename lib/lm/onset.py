"""Emergence points and abruptness read off p(target), the quantities paper B's argmax bisection leaves unchecked.

Paper B calls a prompt solved when the greedy next token is its target and finds the first solved checkpoint by
bisection. On the mini-suite that point is fragile: the argmax flips back for most prompts, bisection and a scan
disagree for about half of them, and the flip happens at p(target) near 0.3, where the curve has not jumped yet
(a review of this book's chapter 5). This module defines the point on the probability itself:

* :func:`smooth`: a centred moving mean of p over ``window`` checkpoints (shrinking at the ends);
* :func:`stable_onset`: the first checkpoint from which the smoothed p stays at or above ``theta`` to the end. Our
  choice of ``theta = 0.5``: above one half the target is necessarily the argmax, so the point is a stable version
  of the paper's flip;
* :func:`bisect_onset`: the hub's way (checkpoints cost a download each): bisection on ``p >= theta`` at single
  checkpoints, trusted only where the bracket it ends on is verified monotone (the checkpoint before below, the
  ``verify`` after at or above); :func:`onset_agreement` measures on a full table how often it lands where the scan
  does;
* :func:`max_rise`: the largest *absolute* rise of the smoothed p within ``width`` training steps. Flat noise gives
  a small value (its scale is measured on never-solving curves, :func:`rise_null`), an even ramp of total rise
  ``h`` over ``T`` steps gives about ``h·width/T``, and a jump of height ``h`` gives ``h``.

Everything takes ``(P, n)`` tables: P prompts (or runs) by n checkpoints in training order.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from .emergence import BisectResult

__all__ = [
    "THETA",
    "smooth",
    "stable_onset",
    "OnsetBisect",
    "bisect_onset",
    "onset_agreement",
    "max_rise",
    "ramp_rise",
    "rise_null",
]

#: The probability a prompt must keep (smoothed) to count as solved from that checkpoint on (our choice, see above).
THETA = 0.5


def _table(p) -> np.ndarray:
    a = np.atleast_2d(np.asarray(p, dtype=float))
    if a.ndim != 2 or a.shape[1] == 0:
        raise ValueError(f"p must be a (P, n) table of probabilities, got shape {np.shape(p)}")
    if np.isnan(a).any():
        raise ValueError("p has NaN entries (checkpoints not evaluated): scan tables need every checkpoint")
    return a


def _check_window(window) -> int:
    if not isinstance(window, (int, np.integer)) or window < 1 or window % 2 == 0:
        raise ValueError(f"window must be a positive odd int, got {window!r}")
    return int(window)


def smooth(p, window: int = 3) -> np.ndarray:
    r"""Centred moving mean over ``window`` checkpoints, the window shrinking symmetrically at both ends.

    .. math:: \bar p_i = \frac{1}{2m_i + 1} \sum_{|j - i| \le m_i} p_j, \qquad m_i = \min(w//2,\ i,\ n-1-i)

    so the first and last checkpoints stay as they are (the final one decides "never"). ``window=1`` is the identity.
    """
    a = _table(p)
    w = _check_window(window)
    n = a.shape[1]
    i = np.arange(n)
    m = np.minimum(w // 2, np.minimum(i, n - 1 - i))  # (n,) half-width at each checkpoint
    total = a.copy()
    for d in range(1, w // 2 + 1):  # add the pair at distance d where the half-width reaches it (exact for w=1)
        use = m >= d
        total[:, use] += a[:, i[use] - d] + a[:, i[use] + d]
    return total / (2 * m + 1)


def stable_onset(p, theta: float = THETA, window: int = 3) -> np.ndarray:
    """Per row, the first checkpoint index from which ``smooth(p, window) >= theta`` holds to the end; ``n``
    (never) when the last checkpoint is below ``theta``. ``(P, n) -> (P,)`` ints."""
    if not 0 < theta < 1:
        raise ValueError(f"theta must be in (0, 1), got {theta}")
    s = smooth(p, window) >= theta  # (P, n)
    n = s.shape[1]
    below = np.where(~s, np.arange(n), -1).max(axis=1)  # last index below theta, -1 if none
    return np.where(s[:, -1], below + 1, n).astype(np.int64)


class OnsetBisect(BisectResult):
    """Bisection on ``p >= theta`` for P prompts over n checkpoints.

    Attributes
    ----------
    index : (P,) int
        First index found with ``p >= theta`` (``n`` = below at the last checkpoint).
    verified : (P,) bool
        The bracket holds: the checkpoint before ``index`` is below ``theta`` and the ``verify`` checkpoints after it
        are at or above (never-solvers count as verified: the last checkpoint was evaluated).
    evaluated : dict
        ``{checkpoint index: (P,) p}`` for every checkpoint the search (and its verification) loaded, once each.

    The fields (and ``n_evaluations``) are those of :class:`lib.lm.emergence.BisectResult`, read on p.
    """


def bisect_onset(evaluate: Callable[[int], np.ndarray], n: int, theta: float = THETA, verify: int = 2) -> OnsetBisect:
    """Per-prompt bisection for the first ``p >= theta`` with a shared memo; ``evaluate(i)`` returns the ``(P,)``
    p(target) at checkpoint ``i``. Exact when ``p >= theta`` is monotone in the checkpoint index; ``verified``
    says where the bracket it ends on is checked monotone (``verify`` checkpoints past it)."""
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    if not 0 < theta < 1:
        raise ValueError(f"theta must be in (0, 1), got {theta}")
    if not isinstance(verify, (int, np.integer)) or verify < 0:
        raise ValueError(f"verify must be a non-negative int, got {verify!r}")
    memo: dict[int, np.ndarray] = {}

    def at(i: int) -> np.ndarray:
        if i not in memo:
            v = np.asarray(evaluate(int(i)), dtype=float)
            if v.ndim != 1:
                raise ValueError(f"evaluate({i}) must return a (P,) array, got shape {v.shape}")
            memo[i] = v
        return memo[i]

    P = at(n - 1).size
    index = np.empty(P, dtype=np.int64)
    for k in range(P):
        if at(n - 1)[k] < theta:
            index[k] = n
            continue
        if at(0)[k] >= theta:
            index[k] = 0
            continue
        lo, hi = 0, n - 1  # lo below, hi at or above
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if at(mid)[k] >= theta:
                hi = mid
            else:
                lo = mid
        index[k] = hi
    verified = np.ones(P, dtype=bool)
    for k, i in enumerate(index):
        if i >= n:
            continue
        if i > 0 and at(i - 1)[k] >= theta:
            verified[k] = False
        for j in range(i + 1, min(n, i + 1 + verify)):
            if at(j)[k] < theta:
                verified[k] = False
                break
    return OnsetBisect(index=index, verified=verified, evaluated=dict(sorted(memo.items())))


def onset_agreement(p, theta: float = THETA, window: int = 3, verify: int = 2) -> dict:
    """On a full ``(P, n)`` table: the scan's point (:func:`stable_onset`), bisection's (:func:`bisect_onset` on the
    raw p, as on the hub), and how often they agree, exactly and within one checkpoint, over all prompts and over
    the verified ones. ``verified_agree`` is what a hub run can trust."""
    a = _table(p)
    scan = stable_onset(a, theta, window)
    bis = bisect_onset(lambda i: a[:, i], a.shape[1], theta, verify)
    exact = bis.index == scan
    near = np.abs(bis.index - scan) <= 1
    v = bis.verified
    return {
        "scan": scan,
        "bisect": bis.index,
        "verified": v,
        "agree": float(exact.mean()),
        "within_one": float(near.mean()),
        "verified_frac": float(v.mean()),
        "verified_agree": float(exact[v].mean()) if v.any() else float("nan"),
        "verified_within_one": float(near[v].mean()) if v.any() else float("nan"),
    }


def max_rise(p, steps: Sequence[float], width: float, window: int = 3) -> np.ndarray:
    """Per row, the largest rise ``s(t') - s(t)`` of the smoothed p over checkpoint pairs ``t < t' <= t + width``
    (training steps, so log-spaced early checkpoints do not count as many intervals). ``(P, n) -> (P,)``; 0 for a
    curve that never rises."""
    s = smooth(p, window)
    st = np.asarray(steps, dtype=float)
    if st.shape != (s.shape[1],) or np.any(np.diff(st) <= 0):
        raise ValueError(f"steps must be {s.shape[1]} increasing checkpoint steps, got shape {st.shape}")
    if not width > 0:
        raise ValueError(f"width must be > 0 training steps, got {width}")
    best = np.zeros(s.shape[0])
    for i in range(st.size - 1):
        j = np.searchsorted(st, st[i] + width, side="right")  # checkpoints i+1 .. j-1 lie within the width
        if j > i + 1:
            best = np.maximum(best, (s[:, i + 1 : j] - s[:, i : i + 1]).max(axis=1))
    return best


def ramp_rise(p, steps: Sequence[float], width: float) -> np.ndarray:
    """The reference of an even ramp: each row's total rise ``p[-1] - p[0]`` spread linearly over the training
    span, read over ``width`` steps (``max(0, p[-1] - p[0]) · width / (steps[-1] - steps[0])``)."""
    a = _table(p)
    st = np.asarray(steps, dtype=float)
    if st.shape != (a.shape[1],) or st[-1] <= st[0]:
        raise ValueError(f"steps must be {a.shape[1]} increasing checkpoint steps, got shape {st.shape}")
    return np.maximum(a[:, -1] - a[:, 0], 0.0) * min(1.0, width / (st[-1] - st[0]))


def rise_null(p, steps: Sequence[float], width: float, window: int = 3, *, q: float = 0.95) -> float:
    """The null's scale: the ``q`` quantile of :func:`max_rise` over curves where nothing emerges (pass only
    never-solving rows: prompts below ``theta`` throughout, or a never-solving run's curves). A rise at or below it
    is what such curves do by noise."""
    if not 0 < q <= 1:
        raise ValueError(f"q must be in (0, 1], got {q}")
    return float(np.quantile(max_rise(p, steps, width, window), q))
