"""Points of emergence: bisection over a checkpoint list, with its monotonicity assumption checked.

A prompt is *solved* at a checkpoint when the greedy next token is its target (paper B). Its point of emergence is
the first checkpoint at which it is solved. Paper B finds it by bisection over the checkpoints, which is exact only if
solving is monotone (once solved, solved at every later checkpoint). Here:

* :func:`first_stable_solved` is the reference: a linear scan for the first checkpoint from which the prompt is solved
  at every later one (``n`` = never, when the last checkpoint fails);
* :func:`bisect_emergence` bisects for many prompts at once with a shared memo of evaluated checkpoints (each
  checkpoint is loaded once however many prompts visit it), requires the final checkpoint to pass (paper B's grey X
  otherwise) and checks the checkpoint after the one found (``verified``);
* :func:`monotonicity` reports, from a full table, how often a prompt flips back to unsolved.

On a monotone sequence bisection and linear scan agree (a tested property); where they differ the sequence was not
monotone, and the analysis reports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

__all__ = [
    "first_stable_solved",
    "bisect_first_solved",
    "BisectResult",
    "bisect_emergence",
    "monotonicity",
    "emergence_steps",
    "seed_emergence",
    "abruptness",
]


def first_stable_solved(solved) -> int:
    """Linear scan: the first index from which ``solved`` stays True to the end; ``len(solved)`` if the last is False."""
    s = np.asarray(solved, dtype=bool)
    if s.ndim != 1 or s.size == 0:
        raise ValueError(f"solved must be a non-empty 1-D boolean sequence, got shape {s.shape}")
    if not s[-1]:
        return s.size
    fails = np.flatnonzero(~s)
    return int(fails[-1] + 1) if fails.size else 0


def bisect_first_solved(is_solved: Callable[[int], bool], n: int) -> int:
    """Bisection for the first solved index in ``0..n-1`` assuming monotonicity; ``n`` if index ``n-1`` fails."""
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    if not is_solved(n - 1):
        return int(n)
    if is_solved(0):
        return 0
    lo, hi = 0, n - 1  # lo fails, hi passes
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if is_solved(mid):
            hi = mid
        else:
            lo = mid
    return int(hi)


@dataclass
class BisectResult:
    """Bisection for P prompts over n checkpoints.

    Attributes
    ----------
    index : (P,) int
        First solved checkpoint index (``n`` = never solved by the last checkpoint).
    verified : (P,) bool
        The checkpoint after ``index`` is also solved (True at the last checkpoint and for never-solvers).
    evaluated : dict
        ``{checkpoint index: (P,) solved}`` for every checkpoint the search evaluated (loaded once each).
    """

    index: np.ndarray
    verified: np.ndarray
    evaluated: dict

    @property
    def n_evaluations(self) -> int:
        return len(self.evaluated)


def bisect_emergence(evaluate: Callable[[int], np.ndarray], n: int) -> BisectResult:
    """Per-prompt bisection with a shared memo: ``evaluate(i)`` returns the ``(P,)`` solved flags at checkpoint ``i``."""
    memo: dict[int, np.ndarray] = {}

    def solved_at(i: int) -> np.ndarray:
        if i not in memo:
            memo[i] = np.asarray(evaluate(int(i)), dtype=bool)
        return memo[i]

    P = solved_at(n - 1).size
    index = np.array([bisect_first_solved(lambda i, p=p: bool(solved_at(i)[p]), n) for p in range(P)], dtype=np.int64)
    verified = np.array([idx >= n - 1 or bool(solved_at(idx + 1)[p]) for p, idx in enumerate(index)], dtype=bool)
    return BisectResult(index=index, verified=verified, evaluated=dict(sorted(memo.items())))


def monotonicity(solved) -> dict:
    """From a full ``(P, n)`` solved table: per prompt, the number of solved→unsolved flips and whether it is monotone,
    and whether bisection lands on the linear scan's point."""
    s = np.asarray(solved, dtype=bool)
    if s.ndim != 2:
        raise ValueError(f"solved must be (P, n), got shape {s.shape}")
    flips = (s[:, :-1] & ~s[:, 1:]).sum(1)
    linear = np.array([first_stable_solved(r) for r in s])
    bis = np.array([bisect_first_solved(lambda i, r=r: bool(r[i]), s.shape[1]) for r in s])
    return {"flips": flips, "monotone": flips == 0, "linear": linear, "bisect": bis, "agree": linear == bis}


def emergence_steps(index, steps: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Paper B's plotted "steps to emergence": the midpoint of the bracketing checkpoints ``(steps[i-1] + steps[i]) / 2``
    (``steps[0]`` for index 0); never-solvers (index ``n``) are placed at the final step. Returns ``(steps, never)``."""
    idx = np.asarray(index)
    st = np.asarray(steps, dtype=float)
    n = st.size
    if idx.size and (idx.min() < 0 or idx.max() > n):
        raise ValueError(f"index must lie in [0, {n}], got range [{idx.min()}, {idx.max()}]")
    never = idx == n
    i = np.clip(idx, 0, n - 1)
    mid = np.where(i > 0, 0.5 * (st[np.maximum(i - 1, 0)] + st[i]), st[0])
    return np.where(never, st[-1], mid), never


def seed_emergence(prompt_steps, never) -> tuple[float, bool]:
    """One run's step for a task (our choice): the median over prompts of their steps to emergence, never-solvers
    counting as the final step; the run is a never-solver when at least half of its prompts never emerge."""
    ps, nv = np.asarray(prompt_steps, dtype=float), np.asarray(never, dtype=bool)
    return float(np.median(ps)), bool(nv.mean() >= 0.5)


def abruptness(p) -> np.ndarray:
    """Per prompt, the largest rise of p(target) between neighbouring checkpoints as a fraction of its total rise
    (``max − min`` over the checkpoints): 1 is a single jump, about ``1/n`` an even ramp. Input ``(P, n)``;
    checkpoints that were not evaluated (NaN, bisection mode) are skipped, so neighbours are evaluated ones."""
    p = np.atleast_2d(np.asarray(p, dtype=float))
    out = np.zeros(p.shape[0])
    for i, row in enumerate(p):
        row = row[~np.isnan(row)]
        span = row.max() - row.min() if row.size > 1 else 0.0
        out[i] = max(np.diff(row).max(), 0.0) / span if span > 0 else 0.0
    return out
