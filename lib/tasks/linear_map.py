r"""Paper B's sparse linear map: :math:`x_1 = A x_0 \bmod 2` with exactly ``s`` ones per row of ``A``.

A sequence is the state :math:`x_0 \in \{0,1\}^S` (uniform) followed by :math:`x_1 = A x_0 \bmod 2`, so it has
``2S`` tokens from the vocabulary ``{0, 1}``. ``A`` is fixed for a run (the map is learned in the weights): every
row holds exactly ``s`` ones at uniformly random columns. Output bit :math:`x_1[i]` is the parity of the input bits
in row ``i``'s support, so the **ground-truth attention pattern** of the query that predicts it is that support.

Next-token indexing: the model reads tokens ``0..2S-2`` and predicts tokens ``1..2S-1``; the query at position
``S-1+i`` predicts :math:`x_1[i]`. :func:`linear_map_mask` puts row ``i`` of ``A`` at query row ``S-1+i``, keys
``0..S-1``: an ``(2S-1, 2S-1)`` mask over the model's input positions.

Floors of the mean next-token loss over the ``2S-1`` predictions: the ``S-1`` predictions of input bits are coin
flips, so a solved map gives :math:`\frac{S-1}{2S-1}\ln 2` (0.335 at S = 16) and an unsolved one
:math:`\ln 2`. For ``s = S`` every output bit is the same parity, so after the first one the model can copy the
previous token: the loss is :math:`\frac{S}{2S-1}\ln 2` without finding any support (the degenerate column).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..core.validate import check_size

__all__ = [
    "LinearMapTask",
    "sample_map",
    "linear_map_step",
    "linear_map_batch",
    "linear_map_mask",
    "output_queries",
    "solved_loss",
    "copy_loss",
]


@dataclass(frozen=True)
class LinearMapTask:
    r"""One sparse linear map (a frozen config, usable as a cache key).

    Attributes
    ----------
    S : int
        State size (>= 2); a sequence has ``2S`` tokens.
    s : int
        Ones per row of ``A`` (``1 <= s <= S``): the size of each output bit's support.
    seed : int
        Seed of ``A`` (:func:`sample_map`).
    distinct : bool
        Draw the rows without repetition (our choice, off by default: the paper draws them independently). With
        repeated rows an output bit equals an earlier one and can be *copied* from one key, a shortcut that
        small maps (``S = 8``) hit often. Needs :math:`\binom{S}{s} \ge S`.
    """

    S: int
    s: int
    seed: int = 0
    distinct: bool = False

    def __post_init__(self) -> None:
        check_size("S", self.S, 2)
        check_size("s", self.s, 1)
        if self.s > self.S:
            raise ValueError(f"s must be <= S (a row has S columns), got s={self.s}, S={self.S}")
        check_size("seed", self.seed, 0)
        if not isinstance(self.distinct, bool):
            raise ValueError(f"distinct must be a bool, got {self.distinct!r}")
        if self.distinct and math.comb(self.S, self.s) < self.S:
            raise ValueError(f"distinct rows need comb(S, s) >= S, got S={self.S}, s={self.s}")

    @property
    def seq_len(self) -> int:
        """Tokens per sequence, ``2S``."""
        return 2 * self.S

    @property
    def vocab(self) -> int:
        """Vocabulary size (bits)."""
        return 2

    @property
    def sparsity(self) -> float:
        """``s / S``."""
        return self.s / self.S


def sample_map(task: LinearMapTask) -> torch.Tensor:
    """The map ``A`` of ``task``: ``(S, S)`` int64 with exactly ``s`` ones per row at random columns.

    With ``task.distinct`` a row that repeats an earlier one is redrawn.
    """
    if not isinstance(task, LinearMapTask):
        raise ValueError(f"task must be a LinearMapTask, got {type(task).__name__}")
    g = torch.Generator().manual_seed(task.seed)
    A = torch.zeros(task.S, task.S, dtype=torch.long)
    seen: set[tuple[int, ...]] = set()
    for i in range(task.S):
        while True:
            cols = tuple(sorted(torch.randperm(task.S, generator=g)[: task.s].tolist()))
            if not (task.distinct and cols in seen):
                break
        seen.add(cols)
        A[i, list(cols)] = 1
    return A


def _check_map(A: torch.Tensor) -> torch.Tensor:
    if not torch.is_tensor(A) or A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"A must be a (..., S, S) tensor, got {getattr(A, 'shape', A)!r}")
    if not bool(((A == 0) | (A == 1)).all()):
        raise ValueError("A must hold only zeros and ones")
    return A.long()


def linear_map_step(A: torch.Tensor, x0: torch.Tensor) -> torch.Tensor:
    r""":math:`x_1 = A x_0 \bmod 2`.

    Parameters
    ----------
    A : Tensor, shape ``(..., S, S)``
        0/1 map (leading axes broadcast against ``x0``'s, e.g. one map per ensemble member).
    x0 : Tensor, shape ``(..., n, S)``
        0/1 states.
    """
    A = _check_map(A)
    if x0.shape[-1] != A.shape[-1]:
        raise ValueError(f"x0 must end with S={A.shape[-1]} bits, got shape {tuple(x0.shape)}")
    return torch.matmul(x0.long(), A.transpose(-1, -2)) % 2  # (..., n, S)


def linear_map_batch(A: torch.Tensor, n: int, generator: torch.Generator) -> torch.Tensor:
    """``n`` fresh sequences ``[x0 ; A x0 mod 2]``, shape ``(n, 2S)``, int64 (``A`` of shape ``(S, S)``)."""
    A = _check_map(A)
    if A.dim() != 2:
        raise ValueError(f"A must be (S, S) here, got {tuple(A.shape)}")
    n = check_size("n", n, 1)
    x0 = torch.randint(0, 2, (n, A.shape[0]), generator=generator)
    return torch.cat([x0, linear_map_step(A, x0)], dim=1)


def linear_map_mask(A: torch.Tensor) -> torch.Tensor:
    """Ground-truth attention mask over the model's ``2S-1`` input positions: ``M[S-1+i, j] = A[i, j]``.

    Returns a float ``(..., 2S-1, 2S-1)`` 0/1 tensor (leading axes of ``A`` kept); rows of queries that predict
    input bits are zero (nothing there is predictable).
    """
    A = _check_map(A)
    S = A.shape[-1]
    M = torch.zeros(*A.shape[:-2], 2 * S - 1, 2 * S - 1)
    M[..., S - 1 : 2 * S - 1, :S] = A.float()
    return M


def output_queries(S: int) -> torch.Tensor:
    """Query positions that predict the output bits ``x1[0..S-1]``: ``S-1 .. 2S-2``."""
    S = check_size("S", S, 2)
    return torch.arange(S - 1, 2 * S - 1)


def solved_loss(S: int) -> float:
    r"""Mean next-token loss of a solved map, :math:`\frac{S-1}{2S-1}\ln 2` (the input bits stay coin flips)."""
    S = check_size("S", S, 2)
    return (S - 1) / (2 * S - 1) * math.log(2)


def copy_loss(S: int) -> float:
    r"""Loss of the degenerate ``s = S`` shortcut (copy the previous output bit), :math:`\frac{S}{2S-1}\ln 2`."""
    S = check_size("S", S, 2)
    return S / (2 * S - 1) * math.log(2)
