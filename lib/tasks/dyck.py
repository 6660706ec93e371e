r"""k-Dyck strings: balanced sequences of ``k`` bracket types, a pre-pretraining corpus with content-keyed structure.

Tokens ``0..k-1`` open a bracket of that type and ``k..2k-1`` close one. A string of even ``length`` is drawn left to
right: where both are allowed, the next token opens a bracket (a uniformly random type) with probability ``p_open``
and closes the innermost open one otherwise; it must open at depth 0, must close when the remaining tokens are
just enough to close every open bracket, and may not open beyond ``max_depth``. Every string is balanced.

What is predictable: *whether* the next token opens or closes is random where both are allowed, and an opening
type is a coin flip, but a *closing* bracket's type is that of the innermost unmatched opening bracket, a key whose
position depends on the content (unlike the fixed positional patterns of the linear map and the automaton).
:func:`dyck_top` gives that position after each token, the sparse attention target of the query predicting the
next token; :func:`dyck_optimal_loss` the lowest achievable next-token loss.

This is the corpus of Hu et al. (2025, "Between Circuits and Chomsky") in its plain form; its use for pre-pretraining
in paper B is not described in any source we could read, so every setting here is ours.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..core.validate import check_size

__all__ = ["DyckTask", "dyck_batch", "dyck_top", "dyck_optimal_loss", "is_balanced"]


@dataclass(frozen=True)
class DyckTask:
    """k-Dyck strings of a fixed length (a frozen config, usable as a cache key).

    Attributes
    ----------
    k : int
        Bracket types (>= 1); the vocabulary has ``2k`` tokens.
    length : int
        Tokens per string (even, >= 2).
    p_open : float
        Probability of opening where opening and closing are both allowed (in (0, 1)).
    max_depth : int or None
        Deepest nesting (>= 1); ``None`` means ``length // 2``.
    """

    k: int = 4
    length: int = 32
    p_open: float = 0.5
    max_depth: int | None = None

    def __post_init__(self) -> None:
        check_size("k", self.k, 1)
        check_size("length", self.length, 2)
        if self.length % 2:
            raise ValueError(f"length must be even (a balanced string), got {self.length}")
        if not (isinstance(self.p_open, (int, float)) and 0 < self.p_open < 1):
            raise ValueError(f"p_open must be a number in (0, 1), got {self.p_open!r}")
        if self.max_depth is not None:
            check_size("max_depth", self.max_depth, 1)

    @property
    def seq_len(self) -> int:
        return self.length

    @property
    def vocab(self) -> int:
        return 2 * self.k

    @property
    def depth_cap(self) -> int:
        return self.length // 2 if self.max_depth is None else min(self.max_depth, self.length // 2)


def _walk(task: DyckTask, n: int, g: torch.Generator):
    """Sample ``n`` strings; also return, per position, whether opening and closing were both allowed."""
    L, k = task.length, task.k
    tokens = torch.empty(n, L, dtype=torch.long)
    free = torch.empty(n, L, dtype=torch.bool)  # both moves allowed before this token
    stack = torch.zeros(n, L, dtype=torch.long)  # open types, innermost at depth - 1
    depth = torch.zeros(n, dtype=torch.long)
    rows = torch.arange(n)
    for t in range(L):
        u = torch.rand(n, generator=g)
        kind = torch.randint(0, k, (n,), generator=g)
        can_open = (depth + 1 <= L - t - 1) & (depth < task.depth_cap)
        can_close = depth > 0
        both = can_open & can_close
        opens = torch.where(both, u < task.p_open, can_open)
        top = stack[rows, (depth - 1).clamp_min(0)]
        tokens[:, t] = torch.where(opens, kind, k + top)
        stack[rows, depth.clamp_max(L - 1)] = torch.where(opens, kind, stack[rows, depth.clamp_max(L - 1)])
        depth = depth + torch.where(opens, 1, -1)
        free[:, t] = both
    return tokens, free


def dyck_batch(task: DyckTask, n: int, generator: torch.Generator) -> torch.Tensor:
    """``n`` strings, shape ``(n, length)``, int64."""
    if not isinstance(task, DyckTask):
        raise ValueError(f"task must be a DyckTask, got {type(task).__name__}")
    n = check_size("n", n, 1)
    return _walk(task, n, generator)[0]


def dyck_top(tokens: torch.Tensor, k: int) -> torch.Tensor:
    """Position of the innermost unmatched opening bracket after each token, ``(n, L)`` (``-1`` when none)."""
    k = check_size("k", k, 1)
    if tokens.dim() != 2:
        raise ValueError(f"tokens must be (n, L), got {tuple(tokens.shape)}")
    n, L = tokens.shape
    stack = torch.full((n, L + 1), -1, dtype=torch.long)  # stack[:, 0] is a sentinel: empty
    depth = torch.zeros(n, dtype=torch.long)
    rows = torch.arange(n)
    out = torch.empty(n, L, dtype=torch.long)
    for t in range(L):
        opens = tokens[:, t] < k
        depth = depth + torch.where(opens, 1, -1)
        if bool((depth < 0).any()):
            raise ValueError("tokens must be balanced prefixes (a closing bracket with nothing open)")
        stack[rows, depth] = torch.where(opens, torch.full_like(depth, t), stack[rows, depth])
        out[:, t] = stack[rows, depth]
    return out


def is_balanced(tokens: torch.Tensor, k: int) -> torch.Tensor:
    """Whether each string ``(n, L)`` is a well-formed k-Dyck string (every close matches the innermost open)."""
    n, L = tokens.shape
    ok = torch.ones(n, dtype=torch.bool)
    stacks: list[list[int]] = [[] for _ in range(n)]
    for i in range(n):
        for tok in tokens[i].tolist():
            if tok < k:
                stacks[i].append(tok)
            elif not stacks[i] or stacks[i].pop() != tok - k:
                ok[i] = False
                break
        ok[i] = ok[i] and not stacks[i]
    return ok


def dyck_optimal_loss(task: DyckTask, n: int = 4096, seed: int = 0) -> float:
    r"""Lowest mean next-token loss over positions ``1..L-1`` (the model's targets), estimated on ``n`` strings.

    Where both moves are allowed the next token costs :math:`H(p_\text{open}) + p_\text{open}\ln k` nats, a forced
    opening :math:`\ln k`, a forced closing nothing.
    """
    if not isinstance(task, DyckTask):
        raise ValueError(f"task must be a DyckTask, got {type(task).__name__}")
    tokens, free = _walk(task, check_size("n", n, 1), torch.Generator().manual_seed(seed))
    p = task.p_open
    h_both = -(p * math.log(p) + (1 - p) * math.log(1 - p)) + p * math.log(task.k)
    # token t: `free` says both moves were allowed before it; otherwise it was forced (an open costs ln k)
    opens = tokens < task.k
    cost = torch.where(free, torch.full(free.shape, h_both), torch.where(opens, math.log(task.k), 0.0))
    return float(cost[:, 1:].mean())
