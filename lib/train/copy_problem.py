"""Shared setup of a batched copy-head problem: one count tensor per P, stacked parameters, the sign convention.

:func:`~lib.train.fit_copy_map` (Adam) and :func:`~lib.train.sample_copy_posterior` (Langevin) both train
``n_P x n_I`` copy heads at once: ``n_I`` initialisations at each of ``n_P`` training-set sizes, the data entering
through the pair counts of nested data sets. This module builds that problem once for both.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..models.copy_head import check_kind
from ..tasks.copy import CopyTask, nested_pair_counts, sample_tokens
from ..core.validate import check_size
from ..models.copy_objective import CopyPrior, copy_objective

__all__ = ["check_copy_grid", "default_init_G", "CopyProblem", "build_copy_problem", "positive_trace"]


def check_copy_grid(kind: str, V: int, L: int, P_grid: tuple, data_seed: int) -> None:
    """Validate the fields every copy-head sweep config shares."""
    check_kind(kind)
    check_size("V", V, 2)
    check_size("L", L, 2)
    if not isinstance(P_grid, tuple) or len(P_grid) == 0:
        raise ValueError(f"P_grid must be a non-empty tuple of ints, got {P_grid!r}")
    for p in P_grid:
        check_size("P_grid entry", p, 1)
    if len(set(P_grid)) != len(P_grid):
        raise ValueError(f"P_grid has repeated entries: {P_grid}")
    check_size("data_seed", data_seed, 0)


def default_init_G(kind: str, init_G: float | None) -> float:
    """Std of the random score initialisation: ``init_G`` if given, else 1.0 (softmax) or 0.1 (linear; our choice)."""
    return init_G if init_G is not None else (1.0 if kind == "softmax" else 0.1)


@dataclass
class CopyProblem:
    """``n_P x n_I`` copy heads trained together; parameters are flat ``(E, ...)`` with ``E = n_P * n_I``."""

    kind: str
    counts: torch.Tensor  # (n_P, L, L, V, V)
    P: torch.Tensor  # (n_P, 1)
    n_P: int
    n_I: int

    def shaped(self, params: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Flat ``(E, ...)`` parameters as ``(n_P, n_I, ...)`` views."""
        return {k: v.reshape(self.n_P, self.n_I, *v.shape[1:]) for k, v in params.items()}

    def objective(self, params: dict[str, torch.Tensor], prior: CopyPrior) -> torch.Tensor:
        """The MAP objective :math:`U` (the negative log posterior up to a constant) of every head, ``(E,)``."""
        return copy_objective(self.kind, self.shaped(params), self.counts, self.P, prior).reshape(-1)


def build_copy_problem(
    kind: str,
    V: int,
    L: int,
    P_grid: tuple[int, ...],
    data_seed: int,
    inits: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]],
    device: torch.device | str | None = None,
) -> tuple[CopyProblem, dict[str, torch.Tensor]]:
    """The problem and its initial flat parameters; ``inits`` = one ``(G, W, beta)`` per initialisation."""
    check_copy_grid(kind, V, L, P_grid, data_seed)
    if not inits:
        raise ValueError("need at least one initialisation")
    device = torch.device(device) if device is not None else torch.device("cpu")
    tokens = sample_tokens(CopyTask(V=V, L=L, P=max(P_grid), seed=data_seed))  # (P_max, L)
    counts = nested_pair_counts(tokens, V, P_grid).to(device)  # (n_P, L, L, V, V)
    n_P, n_I = len(P_grid), len(inits)
    G0 = torch.stack([g for g, _, _ in inits])  # (n_I, L, L)
    W0 = torch.stack([w for _, w, _ in inits])  # (n_I, V, V)
    params = {
        "G": G0.expand(n_P, n_I, L, L).reshape(n_P * n_I, L, L).to(device),  # (E, L, L)
        "W": W0.expand(n_P, n_I, V, V).reshape(n_P * n_I, V, V).to(device),  # (E, V, V)
    }
    if kind == "linear":
        params["beta"] = torch.zeros(n_P * n_I, dtype=torch.float64, device=device)  # (E,)
    P = torch.tensor(P_grid, dtype=torch.float64, device=device)[:, None]  # (n_P, 1)
    return CopyProblem(kind=kind, counts=counts, P=P, n_P=n_P, n_I=n_I), params


def positive_trace(G: torch.Tensor, W: torch.Tensor, beta: torch.Tensor | None) -> tuple:
    """The representative with :math:`\\mathrm{tr}\\,W \\ge 0` of linear heads ``(..., L, L)``, ``(..., V, V)``, ``(...)``.

    A linear head is invariant under :math:`(G, \\beta, W) \\to -(G, \\beta, W)`; reporting one representative gives
    its order parameters a definite sign (our choice).
    """
    sign = torch.where(torch.diagonal(W, dim1=-2, dim2=-1).sum(-1) < 0, -1.0, 1.0).to(W.dtype)  # (...)
    return G * sign[..., None, None], W * sign[..., None, None], None if beta is None else beta * sign
