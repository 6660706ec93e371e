r"""Paper A's single-head attention model for the copy task.

The network maps one-hot inputs :math:`X \in \mathbb R^{L\times V}` to :math:`F(X) = A\,X\,W` with a learned
positional score matrix :math:`G \in \mathbb R^{L\times L}` and a merged value/readout matrix
:math:`W \in \mathbb R^{V\times V}`. Two attention maps:

* softmax: :math:`A = \mathrm{softmax}_{\text{row}}(G)` (rows on the simplex);
* linear (the book's model, derived in chapter 3): :math:`A = (G + \beta J)/L` with :math:`J` the all-ones matrix and
  a scalar :math:`\beta`, the cheap uniform-pooling channel that query/key biases give at infinite width.

Softmax is invariant to row constants, so :math:`\beta` exists only for the linear kind. Attention weights are
always materialised (``hook_attn_scores`` before the map, ``hook_pattern`` after it).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..core.validate import check_size
from .hooks import HookPoint

__all__ = ["KINDS", "check_kind", "attention", "CopyHead"]

KINDS = ("softmax", "linear")


def check_kind(kind: object) -> str:
    """Validate an attention kind (``"softmax"`` or ``"linear"``)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    return kind  # type: ignore[return-value]


def attention(kind: str, G: torch.Tensor, beta: torch.Tensor | None = None) -> torch.Tensor:
    r"""Attention matrix from scores, batched over leading dimensions.

    Parameters
    ----------
    kind : {"softmax", "linear"}
    G : Tensor, shape ``(..., L, L)``
        Scores: row ``i`` = query position, column ``j`` = key position.
    beta : Tensor, shape ``(...)``, optional
        Uniform channel of linear attention (ignored by, and not allowed for, softmax).

    Returns
    -------
    Tensor, shape ``(..., L, L)``
        softmax: :math:`A_{ij} = e^{G_{ij}}/\sum_k e^{G_{ik}}`; linear: :math:`A = (G + \beta J)/L`.
    """
    check_kind(kind)
    if G.dim() < 2 or G.shape[-1] != G.shape[-2]:
        raise ValueError(f"G must have shape (..., L, L), got {tuple(G.shape)}")
    if kind == "softmax":
        if beta is not None:
            raise ValueError("softmax attention is invariant to a uniform score shift: beta must be None")
        return torch.softmax(G, dim=-1)  # (..., L, L)
    L = G.shape[-1]
    if beta is None:
        return G / L
    if beta.shape != G.shape[:-2]:
        raise ValueError(f"beta must have shape {tuple(G.shape[:-2])}, got {tuple(beta.shape)}")
    return (G + beta[..., None, None]) / L  # (..., L, L)


class CopyHead(nn.Module):
    """Single-head attention ``F(X) = A(G) X W`` (paper A), parameters initialised from an explicit seed.

    Parameters
    ----------
    kind : {"softmax", "linear"}
    L, V : int
        Sequence length and vocabulary size.
    seed : int
        Seed of the initialisation.
    init_G, init_W : float
        Standard deviations of the Gaussian initialisation of ``G`` and ``W`` (``beta`` starts at 0).
    copy_init : bool
        Start near the copy solution: ``G += 3 ln(L) S`` (softmax) or ``G += L S`` (linear, so ``A`` gains ``S``),
        and ``W += I``.
    """

    def __init__(
        self,
        kind: str,
        L: int,
        V: int,
        *,
        seed: int = 0,
        init_G: float = 1.0,
        init_W: float = 0.1,
        copy_init: bool = False,
        dtype: torch.dtype = torch.float64,
    ) -> None:
        super().__init__()
        self.kind = check_kind(kind)
        self.L, self.V = check_size("L", L, 2), check_size("V", V, 2)
        G, W, beta = init_copy_params(
            kind, L, V, seed=seed, init_G=init_G, init_W=init_W, copy_init=copy_init, dtype=dtype
        )
        self.G = nn.Parameter(G)  # (L, L)
        self.W = nn.Parameter(W)  # (V, V)
        self.beta = nn.Parameter(beta) if kind == "linear" else None  # ()
        self.hook_attn_scores = HookPoint()
        self.hook_pattern = HookPoint()

    def pattern(self) -> torch.Tensor:
        """The attention matrix ``A``, shape ``(L, L)`` (through the hook points)."""
        scores = self.hook_attn_scores(self.G)  # (L, L)
        return self.hook_pattern(attention(self.kind, scores, self.beta))  # (L, L)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """``X`` one-hot ``(B, L, V)`` -> outputs ``(B, L, V)``."""
        if X.dim() != 3 or X.shape[1:] != (self.L, self.V):
            raise ValueError(f"X must have shape (B, {self.L}, {self.V}), got {tuple(X.shape)}")
        A = self.pattern()  # (L, L)
        return torch.einsum("ij,bjv,vc->bic", A, X, self.W)  # (B, L, V)


def init_copy_params(
    kind: str,
    L: int,
    V: int,
    *,
    seed: int,
    init_G: float,
    init_W: float,
    copy_init: bool,
    dtype: torch.dtype = torch.float64,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Initial ``(G (L, L), W (V, V), beta ())`` of one copy head (shared by :class:`CopyHead` and the trainers)."""
    check_kind(kind)
    L, V = check_size("L", L, 2), check_size("V", V, 2)
    check_size("seed", seed, 0)
    for name, value in (("init_G", init_G), ("init_W", init_W)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
            raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    gen = torch.Generator().manual_seed(seed)
    G = init_G * torch.randn(L, L, generator=gen, dtype=dtype)  # (L, L)
    W = init_W * torch.randn(V, V, generator=gen, dtype=dtype)  # (V, V)
    beta = torch.zeros((), dtype=dtype)
    if copy_init:
        S = torch.roll(torch.eye(L, dtype=dtype), 1, 0)  # (L, L)
        G = G + (3.0 * math.log(L) if kind == "softmax" else float(L)) * S
        W = W + torch.eye(V, dtype=dtype)
    return G, W, beta
