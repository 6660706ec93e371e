r"""Paper A's MAP objective for the copy head, computed from the data's sufficient statistics.

Objective (paper A's MAP): with temperature :math:`T` and Gaussian priors,

.. math::
    U(G, W, \beta) = \frac{1}{2TL}\sum_{\mu=1}^P \sum_{i=1}^L \lVert y^\mu_i - f_i(X^\mu)\rVert^2
      + \frac{\lVert G\rVert_F^2}{2\sigma_G^2} + \frac{\lVert W\rVert_F^2}{2\sigma_W^2}
      \;\Big[+ \frac{\beta^2}{2\sigma_\beta^2}\ \text{(linear)}\Big].

The data term needs only the pair counts :math:`N_{jkab}` (:func:`lib.tasks.pair_counts`): with :math:`y_i = x_{i-1}`,

.. math::
    \sum_{\mu,i}\lVert y_i - f_i\rVert^2 = PL - 2\sum_{ij} A_{ij}\sum_{ab} N_{j,i-1,ab} W_{ab}
      + \sum_{i,j,k} A_{ij}A_{ik}\sum_{ab} N_{jkab}(WW^\top)_{ab},

so evaluating it costs :math:`O(L^2V^2)` whatever :math:`P` is (the direct form costs :math:`O(PL^2V)`;
``benchmarks/copy_stats.py`` measures the ratio). With the expected counts of fresh data the same formula gives the
exact test loss (:func:`population_loss`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .copy_head import attention, check_kind
from ..tasks.copy import population_counts, shift_matrix

__all__ = [
    "CopyPrior",
    "copy_sq_error",
    "copy_objective",
    "population_loss",
    "target_attention",
    "optimal_readout",
    "readout_moments",
]


def _check_square(name: str, M: torch.Tensor) -> None:
    if not torch.is_tensor(M):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(M).__name__}")
    if M.dim() < 2 or M.shape[-1] != M.shape[-2] or M.shape[-1] < 2:
        raise ValueError(f"{name} must have shape (..., n, n) with n >= 2, got {tuple(M.shape)}")


def _positive(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


@dataclass(frozen=True)
class CopyPrior:
    """Likelihood temperature and prior variances of the copy head (paper A's defaults: all 1)."""

    T: float = 1.0
    sigma_G2: float = 1.0
    sigma_W2: float = 1.0
    sigma_beta2: float = 1.0

    def __post_init__(self) -> None:
        for name in ("T", "sigma_G2", "sigma_W2", "sigma_beta2"):
            _positive(name, getattr(self, name))


def copy_sq_error(A: torch.Tensor, W: torch.Tensor, counts: torch.Tensor, n_seq: torch.Tensor | float) -> torch.Tensor:
    r"""Summed squared error :math:`\sum_{\mu,i}\lVert y_i - f_i\rVert^2` from pair counts.

    Parameters
    ----------
    A : Tensor ``(..., L, L)``
        Attention matrices (any leading member shape ``M``).
    W : Tensor ``(..., V, V)``
        Readouts, same leading shape as ``A``.
    counts : Tensor ``(C..., L, L, V, V)``
        Pair counts; ``C`` is a prefix of the member shape (e.g. one count tensor per ``P`` shared by all
        initialisations at that ``P``), or empty (one count tensor for all members).
    n_seq : Tensor or float
        Number of sequences behind the counts, broadcastable to the member shape.

    Returns
    -------
    Tensor of the member shape.
    """
    L = A.shape[-1]
    V = W.shape[-1]
    if counts.shape[-4:] != (L, L, V, V):
        raise ValueError(f"counts must end in (L, L, V, V) = {(L, L, V, V)}, got {tuple(counts.shape)}")
    member = A.shape[:-2]
    c = counts.dim() - 4  # number of leading count dims
    if W.shape[:-2] != member or tuple(counts.shape[:c]) != tuple(member[:c]):
        raise ValueError(f"shapes do not line up: A {tuple(A.shape)}, W {tuple(W.shape)}, counts {tuple(counts.shape)}")
    Cn = int(np.prod(member[:c])) if c else 1
    A_ = A.reshape(Cn, -1, L, L)  # (C, R, L, L), R = members sharing one count tensor
    W_ = W.reshape(Cn, -1, V * V)  # (C, R, V*V)
    N = counts.reshape(Cn, L, L, V * V)  # (C, j, k, ab)
    WW = (W.reshape(Cn, -1, V, V) @ W.reshape(Cn, -1, V, V).transpose(-1, -2)).reshape(Cn, -1, V * V)  # (C, R, V*V)
    B = torch.einsum("cjkz,crz->crjk", N, W_)  # (C, R, L, L): sum_ab N[j,k,ab] W_ab
    B = torch.roll(B, shifts=1, dims=-1)  # (C, R, j, i) = B[j, i-1]: the target of query i is key i-1
    M = torch.einsum("cjkz,crz->crjk", N, WW)  # (C, R, L, L): sum_ab N[j,k,ab] (WW^T)_ab
    lin = torch.einsum("crij,crji->cr", A_, B)  # (C, R)
    quad = torch.einsum("crij,crjk,crik->cr", A_, M, A_)  # (C, R)
    out = (quad - 2 * lin).reshape(member)
    return out + torch.as_tensor(n_seq, dtype=A.dtype) * L


def copy_objective(
    kind: str,
    params: dict[str, torch.Tensor],
    counts: torch.Tensor,
    P: torch.Tensor,
    prior: CopyPrior,
) -> torch.Tensor:
    """MAP objective :math:`U` per member (see the module docstring), shape = member shape of ``params["G"]``."""
    check_kind(kind)
    if not isinstance(prior, CopyPrior):
        raise TypeError(f"prior must be a CopyPrior, got {type(prior).__name__}")
    missing = {"G", "W"} - set(params)
    if missing:
        raise ValueError(f"params lacks {sorted(missing)}")
    G, W = params["G"], params["W"]  # (..., L, L), (..., V, V)
    beta = params.get("beta") if kind == "linear" else None
    A = attention(kind, G, beta)  # (..., L, L)
    L = G.shape[-1]
    data = copy_sq_error(A, W, counts, P) / (2 * prior.T * L)
    reg = G.pow(2).sum((-1, -2)) / (2 * prior.sigma_G2) + W.pow(2).sum((-1, -2)) / (2 * prior.sigma_W2)
    if beta is not None:
        reg = reg + beta.pow(2) / (2 * prior.sigma_beta2)
    return data + reg


def population_loss(A: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """Exact test loss (mean squared error per position on fresh i.i.d. sequences), member shape of ``A``."""
    _check_square("A", A)
    _check_square("W", W)
    L, V = A.shape[-1], W.shape[-1]
    counts = population_counts(L, V, dtype=A.dtype, device=A.device)  # (L, L, V, V)
    return copy_sq_error(A, W, counts, 1.0) / L


def readout_moments(A: torch.Tensor, counts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The two moment matrices of the readout regression, :math:`\Phi^\top\Phi` and :math:`\Phi^\top Y`, from pair counts.

    With :math:`\phi_i = \sum_j A_{ij} x_j` stacked over sequences and positions into :math:`\Phi`,
    :math:`(\Phi^\top\Phi)_{ab} = \sum_{ijk} A_{ij}A_{ik}N_{jkab}` and
    :math:`(\Phi^\top Y)_{ab} = \sum_{ij} A_{ij}N_{j,i-1,ab}` (the target of query :math:`i` is key :math:`i-1`).

    Parameters
    ----------
    A : Tensor ``(..., L, L)``
    counts : Tensor ``(..., L, L, V, V)``
        Pair counts; leading dimensions broadcast against those of ``A``.

    Returns
    -------
    gram, cross : Tensor ``(..., V, V)`` each
    """
    gram = torch.einsum("...ij,...ik,...jkab->...ab", A, A, counts)  # (..., V, V)
    cross = torch.einsum("...ij,...jiab->...ab", A, torch.roll(counts, shifts=1, dims=-3))  # (..., V, V): N[j, i-1]
    return gram, cross


def optimal_readout(A: torch.Tensor, counts: torch.Tensor, ridge: float = 0.0) -> torch.Tensor:
    r"""The readout minimising squared error plus ``ridge * ||W||^2`` for fixed attention, from pair counts.

    With :math:`\phi_i = \sum_j A_{ij} x_j` stacked into :math:`\Phi`:
    :math:`(\Phi^\top\Phi)_{ab} = \sum_{ijk} A_{ij}A_{ik}N_{jkab}`, :math:`(\Phi^\top Y)_{ab} = \sum_{ij} A_{ij}N_{j,i-1,ab}`
    and :math:`W^* = (\Phi^\top\Phi + \lambda I)^{-1}\Phi^\top Y`. For MAP at fixed ``A`` use
    ``ridge = T L / sigma_W2``; ``ridge = 0`` with population counts gives the best readout on fresh data.

    Parameters
    ----------
    A : Tensor ``(..., L, L)``
    counts : Tensor ``(L, L, V, V)``
        One count tensor shared by all members.
    ridge : float
        :math:`\lambda \ge 0`.

    Returns
    -------
    Tensor ``(..., V, V)``
    """
    if counts.dim() != 4:
        raise ValueError(f"counts must have shape (L, L, V, V), got {tuple(counts.shape)}")
    if not ridge >= 0:
        raise ValueError(f"ridge must be >= 0, got {ridge!r}")
    L, V = counts.shape[0], counts.shape[-1]
    if A.shape[-2:] != (L, L):
        raise ValueError(f"A must end in ({L}, {L}), got {tuple(A.shape)}")
    gram, cross = readout_moments(A, counts)  # (..., V, V) each
    eye = torch.eye(V, dtype=A.dtype, device=A.device)
    return torch.linalg.solve(gram + ridge * eye, cross)  # (..., V, V)


def target_attention(A: torch.Tensor) -> torch.Tensor:
    r"""Mean attention on the target key, :math:`\langle A, S\rangle / L = \frac1L\sum_i A_{i,i-1}`, member shape."""
    _check_square("A", A)
    L = A.shape[-1]
    S = shift_matrix(L, dtype=A.dtype, device=A.device)
    return (A * S).sum((-1, -2)) / L


# ------------------------------------------------------------------------------------------ fitting
