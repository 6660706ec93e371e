r"""Check (b) of chapter 2: the exact finite-P action against the large-P (self-averaged) action (DERIVED, ours)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..tasks.copy import CopyTask, nested_pair_counts, sample_tokens
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
    _beta_arg,
    _square,
)
from .action import large_p_action
from .posterior import neg_log_posterior, posterior_terms

__all__ = ["SelfAveragingGap", "self_averaging_gap"]


# ----------------------------------------------------------------------------------------------- (b) self-averaging
@dataclass(frozen=True)
class SelfAveragingGap:
    r"""Exact finite-P action against the large-P action over sampled data sets.

    Attributes
    ----------
    P : ndarray ``(n_P,)``
    exact : ndarray ``(*B, n_data, n_P)``
        :math:`-\ln p(G\mid D_P)` for each data set (nested: :math:`D_P` is the first :math:`P` sequences).
    large : ndarray ``(*B, n_P)``
        The self-averaged action at the same :math:`G`.
    likelihood : ndarray ``(*B, n_P)``
        Its likelihood part (data + Occam; everything but the prior), which grows like :math:`P`.
    per_sample_rms : ndarray ``(*B, n_P)``
        Root mean square over data sets of the per-sequence difference :math:`(\text{exact} - \text{large})/P`.
    fluctuation, bias : ndarray ``(*B, n_P)``
        Standard deviation and mean over data sets of the per-sequence difference: ``per_sample_rms**2`` is
        ``fluctuation**2 + bias**2`` (up to the ``n_data - 1`` normalisation).
    rel_rms : ndarray ``(*B, n_P)``
        Root mean square over data sets of :math:`(\text{exact} - \text{large})/\text{likelihood}`.
    slope : ndarray ``(*B,)``
        Least-squares slope of :math:`\ln` ``per_sample_rms`` against :math:`\ln P` over ``P >= fit_from``
        (:math:`-1/2` expected once the :math:`O(\sqrt P)` fluctuations dominate the :math:`O(1)` bias).
    fit_from : float
    """

    P: np.ndarray
    exact: np.ndarray
    large: np.ndarray
    likelihood: np.ndarray
    per_sample_rms: np.ndarray
    fluctuation: np.ndarray
    bias: np.ndarray
    rel_rms: np.ndarray
    slope: np.ndarray
    fit_from: float


def self_averaging_gap(
    model: str,
    G,
    V: int,
    P_grid,
    *,
    beta=None,
    n_datasets: int = 16,
    seed: int = 0,
    fit_from: float | None = None,
    prior: CopyPrior = _DEFAULT,
    method: str = "bayes",
) -> SelfAveragingGap:
    r"""How fast the exact action approaches the large-P action as the training set grows.

    The exact action depends on the data through the pair counts :math:`N_{jkab}`, sums of :math:`P` i.i.d. terms,
    so :math:`N = P\,\mathbb E N + O(\sqrt P)` and the data and Occam terms fluctuate by :math:`O(\sqrt P)` around
    the large-P action (which grows like :math:`P`): the relative difference should shrink like :math:`P^{-1/2}`.

    Parameters
    ----------
    model : {"softmax", "linear_v0", "linear_v2"}
    G : Tensor ``(*B, L, L)``
        One or a batch of fixed score matrices.
    V : int
    P_grid : sequence of int
        Training-set sizes (>= 1, increasing).
    beta : Tensor ``(*B,)``, optional
        ``linear_v2`` only.
    n_datasets : int
        Independent data sets (data seeds ``seed, seed + 1, ...``).
    fit_from : float, optional
        Smallest P of the slope fit (default: the whole grid); at least two grid points must remain.
    prior : CopyPrior
    method : {"bayes", "map"}

    Returns
    -------
    SelfAveragingGap
    """
    check_model(model, _EXACT_MODELS)
    check_method(method)
    check_prior(prior)
    G = _square("G", G)
    L = G.shape[-1]
    V = check_size("V", V, 2)
    n_datasets = check_size("n_datasets", n_datasets, 2)
    seed = check_size("seed", seed, 0)
    grid = [check_size("P_grid entry", p, 1) for p in P_grid]
    if len(grid) < 2 or any(b <= a for a, b in zip(grid, grid[1:])):
        raise ValueError(f"P_grid must hold at least two increasing sizes, got {list(P_grid)}")
    beta = _beta_arg(model, beta)
    fit_from = float(grid[0]) if fit_from is None else check_positive("fit_from", fit_from)
    if sum(p >= fit_from for p in grid) < 2:
        raise ValueError(f"fit_from={fit_from} leaves fewer than two grid points for the slope fit")

    counts = torch.stack(
        [
            nested_pair_counts(sample_tokens(CopyTask(V=V, L=L, P=grid[-1], seed=seed + s)), V, grid)
            for s in range(n_datasets)
        ]
    )  # (n_data, n_P, L, L, V, V)
    P = torch.tensor(grid, dtype=F64)  # (n_P,)
    Gb = G[..., None, None, :, :]  # (*B, 1, 1, L, L)
    bb = None if beta is None else beta[..., None, None]
    exact = neg_log_posterior(model, Gb, counts, beta=bb, prior=prior, method=method)  # (*B, n_data, n_P)
    Gl = G[..., None, :, :]  # (*B, 1, L, L)
    bl = None if beta is None else beta[..., None]
    large = large_p_action(model, Gl, P, V, beta=bl, prior=prior, method=method)  # (*B, n_P)
    prior_part = posterior_terms(
        model, Gl, P[:, None, None, None, None] * torch.ones(1, L, L, V, V, dtype=F64), beta=bl, prior=prior
    ).prior  # (*B, 1)
    like = large - prior_part  # (*B, n_P)
    diff = exact - large[..., None, :]  # (*B, n_data, n_P)
    per_sample = (diff / P).pow(2).mean(-2).sqrt()  # (*B, n_P)
    rel = (diff / like[..., None, :]).pow(2).mean(-2).sqrt()  # (*B, n_P)
    fluct = (diff / P).std(-2)  # (*B, n_P)
    bias = (diff / P).mean(-2)  # (*B, n_P)
    sel = P >= fit_from
    x = torch.log(P[sel]) - torch.log(P[sel]).mean()
    y = torch.log(per_sample[..., sel])
    slope = ((y - y.mean(-1, keepdim=True)) * x).sum(-1) / x.pow(2).sum()
    return SelfAveragingGap(
        P=P.numpy(),
        exact=exact.detach().numpy(),
        large=large.detach().numpy(),
        likelihood=like.detach().numpy(),
        per_sample_rms=per_sample.detach().numpy(),
        fluctuation=fluct.detach().numpy(),
        bias=bias.detach().numpy(),
        rel_rms=rel.detach().numpy(),
        slope=slope.detach().numpy(),
        fit_from=float(fit_from),
    )
