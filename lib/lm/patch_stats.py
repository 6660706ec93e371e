r"""The statistics around attention-pattern patching: held-out head ranking, capped K, recovery with an interval.

Paper B patches the attention patterns of the checkpoint after emergence into the one before and reports how much
of the gain in p(target) the top heads recover. Ranked and scored on the same prompts, the top-K recovery is
biased upward (the ranking picks the heads that happen to help *these* prompts), and a ratio whose denominator is
near zero is noise. Here:

* :func:`split_prompts` cuts the prompts into a ranking half and a held-out half (seeded);
* :func:`rank_heads` orders heads by their mean single-head gain on the ranking half;
* :func:`capped_ks` keeps only the K that a model with ``n_heads`` heads can have (review: K = 16 on 12 heads);
* :func:`recovery` is the fraction of the way from ``p_from`` to ``p_to`` that the patched model goes,

  .. math:: R = \frac{\bar p_\text{patched} - \bar p_\text{from}}{\bar p_\text{to} - \bar p_\text{from}},

  with a percentile bootstrap over prompts and a guard: when the change :math:`|\bar p_\text{to} - \bar
  p_\text{from}|` is below ``min_gain`` there is nothing to recover and :math:`R` is NaN with the reason. Denoising (new patterns
  into the old model) is ``recovery(p_old, p_new, p_patched)``; the reverse, noising direction (old patterns into the
  new model) is ``recovery(p_new, p_old, p_noised)``: the fraction of the gain that the old patterns take away.

A control pair (two checkpoints with no emergence between them) has no change, so its :func:`recovery` is NaN by the
guard; what it is checked on is the absolute shift ``p_patched - p_from``
(``lib.core.stats.bootstrap_interval(shift, np.mean)``), which should be near zero there and not in the emergence pair.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..core.stats import _check_resampling

__all__ = ["MIN_GAIN", "split_prompts", "rank_heads", "capped_ks", "Recovery", "recovery"]

#: Below this change in mean p(target) between the two checkpoints a pair has nothing to recover (our choice: 0.05,
#: a tenth of the 0.5 that :data:`lib.lm.onset.THETA` asks a solved prompt to keep).
MIN_GAIN = 0.05


def split_prompts(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A seeded split of ``range(n)`` into the ranking half (``n // 2`` prompts) and the held-out rest, each sorted."""
    if not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"n must be an int >= 2 (one prompt per half at least), got {n!r}")
    perm = np.random.default_rng([int(seed), int(n)]).permutation(int(n))
    return np.sort(perm[: n // 2]), np.sort(perm[n // 2 :])


def rank_heads(p_head, p_old) -> np.ndarray:
    """Heads ordered by mean single-head gain ``mean(p_head - p_old)`` over prompts, best first, as flat indices
    ``l·H + h``. ``p_head (L, H, P)``, ``p_old (P,)``; ties keep the lower index."""
    ph = np.asarray(p_head, dtype=float)
    po = np.asarray(p_old, dtype=float)
    if ph.ndim != 3 or po.shape != ph.shape[-1:]:
        raise ValueError(f"p_head must be (L, H, P) and p_old (P,), got {ph.shape} and {po.shape}")
    gain = (ph - po).mean(-1).ravel()  # (L·H,)
    return np.argsort(-gain, kind="stable")


def capped_ks(ks: Sequence[int], n_heads: int) -> tuple[int, ...]:
    """The K of ``ks`` a model of ``n_heads`` heads can patch: each capped at ``n_heads``, duplicates removed."""
    if not isinstance(n_heads, (int, np.integer)) or n_heads < 1:
        raise ValueError(f"n_heads must be a positive int, got {n_heads!r}")
    ks = tuple(int(k) for k in ks)
    if not ks or min(ks) < 1:
        raise ValueError(f"ks must be positive ints, got {ks}")
    return tuple(sorted({min(k, int(n_heads)) for k in ks}))


@dataclass(frozen=True)
class Recovery:
    """The recovered fraction, its bootstrap interval over prompts, and what it rests on.

    ``value``/``lo``/``hi`` are NaN when the change ``mean(p_to) - mean(p_from)`` is smaller than ``min_gain`` in size
    (``reason`` says so); the interval alone is NaN when more than 5 % of the resamples lose it (smaller, or of the
    other sign: an interval that rests on few resamples is not one). ``dropped`` is that fraction.
    """

    value: float
    lo: float
    hi: float
    change: float
    level: float
    n: int
    dropped: float
    reason: str = ""

    @property
    def ok(self) -> bool:
        return not self.reason

    def __str__(self) -> str:
        return self.reason or f"{self.value:.2f} [{self.lo:.2f}, {self.hi:.2f}]"


def recovery(
    p_from, p_to, p_patched, *, min_gain: float = MIN_GAIN, level: float = 0.9, resamples: int = 2000, seed: int = 0
) -> Recovery:
    """The fraction :math:`R` of the module docstring over P prompts (``(P,)`` arrays, resampled jointly)."""
    a, b, c = (np.asarray(x, dtype=float) for x in (p_from, p_to, p_patched))
    if a.ndim != 1 or a.shape != b.shape or a.shape != c.shape or a.size < 2:
        raise ValueError(
            f"p_from, p_to, p_patched must be (P,) arrays of one length >= 2, got {a.shape}, {b.shape}, {c.shape}"
        )
    if not (np.isfinite(a).all() and np.isfinite(b).all() and np.isfinite(c).all()):
        raise ValueError("probabilities must be finite")
    if not min_gain > 0:
        raise ValueError(f"min_gain must be > 0, got {min_gain}")
    _check_resampling(level, resamples)
    n = a.size
    change = float(b.mean() - a.mean())
    if abs(change) < min_gain:
        nan = float("nan")
        return Recovery(nan, nan, nan, change, level, n, 1.0, f"no change to recover (|{change:.3f}| < {min_gain})")
    idx = np.random.default_rng(seed).integers(0, n, size=(resamples, n))  # (resamples, P)
    g = b[idx].mean(1) - a[idx].mean(1)
    keep = (np.sign(g) == np.sign(change)) & (np.abs(g) >= min_gain)
    r = (c[idx].mean(1) - a[idx].mean(1))[keep] / g[keep]
    dropped = float(1 - keep.mean())
    value = float((c.mean() - a.mean()) / change)
    if dropped > 0.05:
        nan = float("nan")
        return Recovery(
            value, nan, nan, change, level, n, dropped, f"change below {min_gain} in {dropped:.0%} of resamples"
        )
    lo, hi = np.quantile(r, [(1 - level) / 2, (1 + level) / 2])
    return Recovery(value, float(lo), float(hi), change, level, n, dropped)
