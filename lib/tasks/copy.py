r"""Paper A's copy task: i.i.d. uniform one-hot tokens, the target is the previous token.

A sequence has ``L`` tokens :math:`t_1..t_L \in \{0..V-1\}`, one-hot rows :math:`x_j = e_{t_j}`, and the target at
position :math:`i` is :math:`y_i = x_{i-1}` (cyclic: :math:`y_1 = x_L`), i.e. :math:`Y = S X` with the shift matrix
:math:`S_{i,i-1} = 1`. A single attention head solves it exactly with :math:`A = S`, :math:`W = I`.

Sufficient statistics
---------------------
For a model :math:`f_i = \sum_j A_{ij} x_j^\top W` the summed squared error over a data set depends on the data only
through the pair counts

.. math:: N_{jkab} = \#\{\mu : t^\mu_j = a,\ t^\mu_k = b\},

an ``(L, L, V, V)`` tensor whose size does not grow with ``P`` (see :mod:`lib.models.copy_objective`). For fresh data the
expected counts per sequence are :math:`\delta_{jk}\delta_{ab}/V + (1-\delta_{jk})/V^2` (:func:`population_counts`),
which turns the test loss into a closed form.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..core.validate import check_size

__all__ = [
    "CopyTask",
    "check_size",
    "shift_matrix",
    "sample_tokens",
    "encode",
    "copy_batch",
    "pair_counts",
    "nested_pair_counts",
    "population_counts",
]


@dataclass(frozen=True)
class CopyTask:
    """The data set of one copy-task experiment (a frozen config, usable as a cache key).

    Attributes
    ----------
    V : int
        Vocabulary size (>= 2).
    L : int
        Sequence length (>= 2).
    P : int
        Number of training sequences (>= 1).
    seed : int
        Data seed. Data sets are nested: the first ``P'`` sequences of ``CopyTask(V, L, P, seed)`` are the data set
        ``CopyTask(V, L, P', seed)`` (our choice: it makes curves over ``P`` smooth in the data).
    """

    V: int
    L: int
    P: int
    seed: int = 0

    def __post_init__(self) -> None:
        check_size("V", self.V, 2)
        check_size("L", self.L, 2)
        check_size("P", self.P, 1)
        check_size("seed", self.seed, 0)


def shift_matrix(L: int, dtype: torch.dtype = torch.float64, device: torch.device | str | None = None) -> torch.Tensor:
    """The cyclic shift :math:`S` with :math:`S_{i,i-1} = 1` (row ``i`` attends to key ``i-1``), shape ``(L, L)``."""
    L = check_size("L", L, 2)
    return torch.roll(torch.eye(L, dtype=dtype, device=device), shifts=1, dims=0)  # (L, L)


def sample_tokens(task: CopyTask) -> torch.Tensor:
    """Draw the task's token ids, shape ``(P, L)``, dtype ``int64``, uniform on ``{0..V-1}``."""
    if not isinstance(task, CopyTask):
        raise TypeError(f"task must be a CopyTask, got {type(task).__name__}")
    gen = torch.Generator().manual_seed(task.seed)
    # Filled row-major from one stream, so a smaller P is a prefix of a larger one (tested).
    return torch.randint(task.V, (task.P, task.L), generator=gen)  # (P, L)


def encode(tokens: torch.Tensor, V: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """One-hot encode token ids ``(..., L)`` into ``(..., L, V)``."""
    V = check_size("V", V, 2)
    if tokens.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"tokens must be an integer tensor, got {tokens.dtype}")
    if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= V):
        raise ValueError(f"token ids must lie in [0, {V - 1}]")
    return torch.nn.functional.one_hot(tokens.long(), V).to(dtype)  # (..., L, V)


def copy_batch(tokens: torch.Tensor, V: int, dtype: torch.dtype = torch.float64) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and targets of the copy task: ``X`` ``(P, L, V)`` and ``Y = S X`` (``y_i = x_{i-1}``, cyclic)."""
    X = encode(tokens, V, dtype)  # (P, L, V)
    Y = torch.roll(X, shifts=1, dims=-2)  # (P, L, V): Y[:, i] = X[:, i-1]
    return X, Y


def pair_counts(tokens: torch.Tensor, V: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    r"""Pair counts :math:`N_{jkab} = \#\{\mu: t_j=a, t_k=b\}` of token ids ``(P, L)``, shape ``(L, L, V, V)``.

    Computed as one Gram matrix of the flattened one-hot data: :math:`X^\top X` with ``X`` of shape ``(P, L V)``.
    """
    if tokens.dim() != 2:
        raise ValueError(f"tokens must have shape (P, L), got {tuple(tokens.shape)}")
    P, L = tokens.shape
    X = encode(tokens, V, dtype).reshape(P, L * V)  # (P, L*V)
    gram = X.T @ X  # (L*V, L*V)
    return gram.reshape(L, V, L, V).permute(0, 2, 1, 3).contiguous()  # (L, L, V, V)


def nested_pair_counts(tokens: torch.Tensor, V: int, P_grid: tuple[int, ...] | list[int]) -> torch.Tensor:
    """Pair counts of the first ``P`` sequences for every ``P`` in ``P_grid``, shape ``(len(P_grid), L, L, V, V)``.

    Uses cumulative sums over the sorted grid, so the cost is that of one pass over ``max(P_grid)`` sequences.
    """
    if len(P_grid) == 0:
        raise ValueError("P_grid must not be empty")
    grid = [check_size("P", p, 1) for p in P_grid]
    if max(grid) > tokens.shape[0]:
        raise ValueError(f"P_grid asks for {max(grid)} sequences, only {tokens.shape[0]} given")
    order = sorted(set(grid))
    out: dict[int, torch.Tensor] = {}
    running = None
    prev = 0
    for p in order:
        block = pair_counts(tokens[prev:p], V)  # (L, L, V, V)
        running = block if running is None else running + block
        out[p] = running
        prev = p
    return torch.stack([out[p] for p in grid])  # (n_P, L, L, V, V)


def population_counts(
    L: int, V: int, dtype: torch.dtype = torch.float64, device: torch.device | str | None = None
) -> torch.Tensor:
    r"""Expected pair counts per fresh sequence, shape ``(L, L, V, V)``.

    :math:`\mathbb E N_{jkab} = \delta_{jk}\delta_{ab}/V + (1-\delta_{jk})/V^2` for i.i.d. uniform tokens.
    """
    L, V = check_size("L", L, 2), check_size("V", V, 2)
    eye_L = torch.eye(L, dtype=dtype, device=device)
    same = eye_L[:, :, None, None] * torch.eye(V, dtype=dtype, device=device)[None, None] / V
    diff = (1 - eye_L)[:, :, None, None] * torch.full((V, V), 1.0 / V**2, dtype=dtype, device=device)
    return same + diff  # (L, L, V, V)
