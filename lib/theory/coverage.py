r"""Check (c) of chapter 2: how much of the full-action minimiser lies in the order-parameter plane span{S, J}.

"Coverage" is our reading of paper A's coverage analysis (DERIVED, ours): :func:`minimise_full_action` minimises
the action over all :math:`L^2` entries of :math:`G`, :func:`coverage` measures the share of the minimiser in the plane.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ..tasks.copy import shift_matrix
from ..models.copy_objective import CopyPrior
from ._validate import (
    F64,
    check_method,
    check_model,
    check_positive,
    check_prior,
    check_size,
    _DEFAULT,
    _EXACT_MODELS,
    _check_counts,
    _square,
)
from .action import large_p_action
from .observables import target_attention_of
from .posterior import _n_seq, attention_of, neg_log_posterior
from .solvers import minima

__all__ = ["plane_projection", "coverage", "FullActionMinima", "minimise_full_action"]


# ----------------------------------------------------------------------------------------------- (c) coverage
def _row_centred(M: torch.Tensor) -> torch.Tensor:
    return M - M.mean(-1, keepdim=True)


def plane_projection(M, *, row_gauge: bool = False) -> torch.Tensor:
    r"""Orthogonal projection of ``M`` ``(..., L, L)`` onto the order-parameter plane :math:`\mathrm{span}\{S, J\}`.

    .. math:: \Pi(M) = \bar m\,J + \frac{\langle M, \tilde S\rangle}{\lVert\tilde S\rVert^2}\,\tilde S,\qquad
        \bar m = \frac{\langle M, J\rangle}{L^2},\quad \tilde S = S - J/L \perp J .

    :math:`\Pi` is also the average of :math:`M` over the symmetries of the large-P action (permutations of the
    rows, and of the off-target entries within a row, both leave :math:`Q, R, Q_1, R_1` and :math:`\lVert G\rVert`
    unchanged): every diagonal of the target is replaced by the mean target entry, every other entry by the mean
    off-target entry. With ``row_gauge=True`` the row means of ``M`` are removed first (for softmax scores, whose
    row constants are invisible to the attention).
    """
    M = _square("M", M)
    if row_gauge:
        M = _row_centred(M)
    L = M.shape[-1]
    S = shift_matrix(L, dtype=F64)  # (L, L)
    J = torch.ones(L, L, dtype=F64)
    St = S - J / L
    mbar = M.mean((-1, -2))[..., None, None]  # (..., 1, 1)
    a = (M * St).sum((-1, -2))[..., None, None] / St.pow(2).sum()
    return mbar * J + a * St  # (..., L, L)


def coverage(M, *, row_gauge: bool = False) -> torch.Tensor:
    r"""Fraction of the structure of ``M`` ``(..., L, L)`` that lies in the order-parameter plane ("coverage").

    .. math:: \mathrm{cov}(M) = 1 - \frac{\lVert M - \Pi(M)\rVert_F^2}{\lVert M - \bar m J\rVert_F^2}
        = \cos^2\angle\big(M - \bar m J,\ S - J/L\big) \in [0, 1],

    with :math:`\Pi` of :func:`plane_projection`. The uniform component :math:`\bar m J` is removed from the
    denominator: it lies in the plane trivially (uniform pooling, and for softmax the :math:`1/L` every row carries)
    and would otherwise inflate the score. So ``coverage`` is the share of the *non-uniform* part of :math:`M` that
    the copy direction explains: 1 for every matrix of the plane, about :math:`1/(L^2-1)` for a random matrix.
    Where :math:`M = \bar m J` exactly (nothing beyond uniform) it is 1 (the matrix lies in the plane); for
    :math:`M` within rounding of a uniform matrix the ratio is noise.

    Returns
    -------
    Tensor of the leading shape of ``M``.
    """
    M = _square("M", M)
    if row_gauge:
        M = _row_centred(M)
    L = M.shape[-1]
    St = shift_matrix(L, dtype=F64) - 1.0 / L  # (L, L)
    Mc = M - M.mean((-1, -2), keepdim=True)  # (..., L, L)
    num = (Mc * St).sum((-1, -2)).pow(2)
    den = St.pow(2).sum() * Mc.pow(2).sum((-1, -2))
    return torch.where(den > 0, (num / den.clamp_min(1e-300)).clamp(0.0, 1.0), torch.ones_like(den))


@dataclass(frozen=True)
class FullActionMinima:
    r"""Minimisers of an action over all :math:`L^2` entries of :math:`G` (+ :math:`\beta`), from several starts.

    Attributes
    ----------
    model, method, source : str
        ``source`` is ``"large-P"`` (the self-averaged action) or ``"finite-P"`` (the exact action of given counts).
    P : ndarray ``(n_P,)``
    labels : tuple of str ``(n_s,)``
        ``"seed k"`` for random starts, ``"copy"`` for the copy-biased start.
    G0, A0 : ndarray ``(n_s, L, L)``
        Starting scores and their attention (the same starts at every P).
    G, A : ndarray ``(n_P, n_s, L, L)``
        Minimisers and their attention matrices.
    beta : ndarray ``(n_P, n_s)`` or None
        ``linear_v2`` only.
    action, grad : ndarray ``(n_P, n_s)``
        Final action and largest absolute gradient entry.
    coverage : ndarray ``(n_P, n_s)``
        :func:`coverage` of ``A``; ``coverage_start`` ``(n_s,)`` that of ``A0``.
    target : ndarray ``(n_P, n_s)``
        Mean attention on the target key, :math:`\langle A, S\rangle / L`.
    reduced_target : ndarray ``(n_P, m)``
        Target attention at every local minimum of the reduced large-P action (NaN-padded).
    """

    model: str
    method: str
    source: str
    P: np.ndarray
    labels: tuple[str, ...]
    G0: np.ndarray
    A0: np.ndarray
    G: np.ndarray
    A: np.ndarray
    beta: np.ndarray | None
    action: np.ndarray
    grad: np.ndarray
    coverage: np.ndarray
    coverage_start: np.ndarray
    target: np.ndarray
    reduced_target: np.ndarray

    @property
    def best(self) -> np.ndarray:
        """``(n_P,)``: index of the start that reached the lowest action (the global minimiser found)."""
        return np.argmin(self.action, axis=1)

    @property
    def reduced_gap(self) -> np.ndarray:
        """``(n_P, n_s)``: distance of each minimiser's target attention to the nearest reduced-action minimum.

        Linear models are compared up to their sign symmetry :math:`(G, \beta, W) \to -(G, \beta, W)`.
        """
        t, r = self.target[:, :, None], self.reduced_target[:, None, :]
        if self.model != "softmax":
            t, r = np.abs(t), np.abs(r)
        return np.nanmin(np.abs(t - r), axis=-1)


def _copy_scores(model: str, L: int) -> torch.Tensor:
    S = shift_matrix(L, dtype=F64)
    return 3 * math.log(L) * S if model == "softmax" else L * S  # softmax: weight ~0.95 on the target; linear: A = S


def minimise_full_action(
    model: str,
    V: int,
    L: int,
    P,
    *,
    counts: torch.Tensor | None = None,
    n_random: int = 4,
    copy_start: bool = True,
    seed: int = 0,
    init_scale: float = 1.0,
    prior: CopyPrior = _DEFAULT,
    method: str = "bayes",
    tol: float = 1e-9,
    max_rounds: int = 20,
) -> FullActionMinima:
    r"""Minimise the action over the full score matrix with L-BFGS, from random and copy-biased starts.

    Nothing restricts the search to the order-parameter plane: every entry of :math:`G` (and :math:`\beta` for
    ``linear_v2``) is free. The action is either the large-P action :func:`lib.theory.large_p_action` (``counts``
    None) or the exact finite-P negative log posterior of given pair counts (:func:`lib.theory.neg_log_posterior`).

    Starts (the same at every P): ``n_random`` scores :math:`G_0 \sim \mathcal N(0, s^2)` (``s = init_scale``) and,
    with ``copy_start``, :math:`G_0 = g_\text{copy} S + \mathcal N(0, s^2)` with :math:`g_\text{copy} = 3\ln L`
    (softmax) or :math:`L` (linear, :math:`A \approx S`), which reaches the copy branch where it is metastable;
    :math:`\beta_0 \sim \mathcal N(0, 1)` (random) or 0 (copy). The noise keeps every start off the plane, so a
    minimiser in the plane is found, not assumed (gradient flow of a symmetric action would keep a start in the
    plane there).

    Parameters
    ----------
    model : {"softmax", "linear_v0", "linear_v2"}
    V, L : int
    P : sequence of float
        Training-set sizes; with ``counts``, the sizes behind them (checked).
    counts : Tensor ``(n_P, L, L, V, V)``, optional
    n_random : int
    copy_start : bool
    seed : int
        Seed of the starting points.
    init_scale : float
    prior : CopyPrior
    method : {"bayes", "map"}
    tol : float
        Stop when the largest gradient entry is below ``tol`` (or after ``max_rounds`` L-BFGS rounds).

    Returns
    -------
    FullActionMinima
    """
    check_model(model, _EXACT_MODELS)
    check_method(method)
    check_prior(prior)
    V, L = check_size("V", V, 2), check_size("L", L, 2)
    Ps = np.atleast_1d(np.asarray(P, dtype=float))
    if Ps.ndim != 1 or Ps.size == 0 or not np.all(np.isfinite(Ps)) or np.any(Ps <= 0):
        raise ValueError(f"P must be a non-empty 1-D sequence of sizes > 0, got {P!r}")
    n_random = check_size("n_random", n_random, 0)
    if n_random == 0 and not copy_start:
        raise ValueError("need at least one start: n_random >= 1 or copy_start=True")
    seed = check_size("seed", seed, 0)
    init_scale = check_positive("init_scale", init_scale)
    tol = check_positive("tol", tol)
    max_rounds = check_size("max_rounds", max_rounds, 1)
    if counts is not None:
        counts = _check_counts(counts, L, 1)
        if counts.shape[0] != Ps.size or counts.shape[-1] != V:
            raise ValueError(f"counts must have shape ({Ps.size}, {L}, {L}, {V}, {V}), got {tuple(counts.shape)}")
        if not np.allclose(_n_seq(counts).numpy(), Ps):
            raise ValueError(f"counts hold {_n_seq(counts).numpy()} sequences, P says {Ps}")

    gen = torch.Generator().manual_seed(seed)
    starts, betas, labels = [], [], []
    for k in range(n_random):
        starts.append(init_scale * torch.randn(L, L, generator=gen, dtype=F64))  # (L, L)
        betas.append(torch.randn((), generator=gen, dtype=F64))
        labels.append(f"seed {k}")
    if copy_start:
        starts.append(_copy_scores(model, L) + init_scale * torch.randn(L, L, generator=gen, dtype=F64))
        betas.append(torch.zeros((), dtype=F64))
        labels.append("copy")
    use_beta = model == "linear_v2"

    def objective(G, beta, k):
        if counts is None:
            return large_p_action(model, G, float(Ps[k]), V, beta=beta, prior=prior, method=method)
        return neg_log_posterior(model, G, counts[k], beta=beta, prior=prior, method=method)

    n_P, n_s = Ps.size, len(starts)
    G_out = np.zeros((n_P, n_s, L, L))
    b_out = np.zeros((n_P, n_s))
    act, grd = np.zeros((n_P, n_s)), np.zeros((n_P, n_s))
    for k in range(n_P):
        for s in range(n_s):
            G = starts[s].clone().requires_grad_(True)
            beta = betas[s].clone().requires_grad_(True) if use_beta else None
            params = [G] + ([beta] if use_beta else [])
            opt = torch.optim.LBFGS(
                params,
                lr=1.0,
                max_iter=500,
                history_size=50,
                tolerance_grad=tol / 10,
                tolerance_change=1e-16,
                line_search_fn="strong_wolfe",
            )

            def closure():
                opt.zero_grad()
                u = objective(G, beta, k)
                u.backward()
                return u

            for _ in range(max_rounds):
                opt.step(closure)
                u = objective(G, beta, k)
                g = torch.autograd.grad(u, params)
                gmax = max(float(x.abs().max()) for x in g)
                if gmax < tol:
                    break
            G_out[k, s] = G.detach().numpy()
            if use_beta:
                b_out[k, s] = float(beta.detach())
            act[k, s], grd[k, s] = float(u.detach()), gmax

    G_t = torch.as_tensor(G_out)  # (n_P, n_s, L, L)
    b_t = torch.as_tensor(b_out) if use_beta else None
    A_t = attention_of(model, G_t, b_t)  # (n_P, n_s, L, L)
    G0 = torch.stack(starts)  # (n_s, L, L)
    A0 = attention_of(model, G0, torch.stack(betas) if use_beta else None)
    S = shift_matrix(L, dtype=F64)
    red = minima(model, V, L, Ps, prior=prior, method=method)
    red_target = target_attention_of(model, torch.as_tensor(red.x), float(L)).numpy()  # (n_P, m)
    return FullActionMinima(
        model=model,
        method=method,
        source="large-P" if counts is None else "finite-P",
        P=Ps,
        labels=tuple(labels),
        G0=G0.numpy(),
        A0=A0.numpy(),
        G=G_out,
        A=A_t.numpy(),
        beta=b_out if use_beta else None,
        action=act,
        grad=grd,
        coverage=coverage(A_t).numpy(),
        coverage_start=coverage(A0).numpy(),
        target=((A_t * S).sum((-1, -2)) / L).numpy(),
        reduced_target=red_target,
    )
