r"""Exact finite-P posterior over the attention scores, with the readout W integrated out (DERIVED, ours).

Model (:mod:`lib.models.copy_head`): :math:`F(X) = A(G) X W`, loss :math:`E = \frac1{2TL}\sum_{\mu,i}\lVert y_i - f_i\rVert^2`
(noise variance :math:`\kappa = TL` per entry), priors :math:`G_{ij}\sim\mathcal N(0,\sigma_G^2)`,
:math:`W_{ab}\sim\mathcal N(0,\sigma_W^2)` (and :math:`\beta\sim\mathcal N(0,\sigma_\beta^2)` for the book's linear model).
Attention maps (``model``):

* ``"softmax"``: :math:`A = \mathrm{softmax}_\text{row}(G)`;
* ``"linear_v2"`` (the book's linear model, V2): :math:`A = (G + \beta J)/L`;
* ``"linear_v0"`` (the i.i.d. model V0 of :file:`paperA.md`): :math:`A = G`.

Given :math:`G` the model is Bayesian linear regression on the features :math:`\phi_{\mu i} = \sum_j A_{ij}x^\mu_j`
(stacked into :math:`\Phi \in \mathbb R^{PL\times V}`), so :math:`W` integrates out in closed form. With
:math:`\lambda = \kappa/\sigma_W^2`, :math:`\Gamma = \Phi^\top\Phi`, :math:`C = \Phi^\top Y` (both from the pair counts
by :func:`lib.models.copy_objective.readout_moments`, at a cost independent of :math:`P`) and :math:`\lVert Y\rVert^2 = PL`,

.. math::
    -\ln p(G\mid D) = \underbrace{\frac{\lVert G\rVert_F^2}{2\sigma_G^2}}_{\text{prior}}
      + \underbrace{\frac1{2\kappa}\big[PL - \mathrm{tr}\,C^\top(\Gamma+\lambda I)^{-1}C\big]}_{\text{data}}
      + \underbrace{\frac V2\ln\det\big(I + \Gamma/\lambda\big)}_{\text{Occam}} ,

with no further constant: :math:`\int dW\,p(W)\,e^{-E(G,W)} = e^{-\text{data}-\text{Occam}}` exactly (tested by
Monte Carlo). Dropping the Occam term gives :math:`\min_W U(G,W)`, the MAP objective of
:mod:`lib.train.copy_map` profiled over :math:`W` (``method="map"``). Given :math:`G`, the columns of :math:`W` are
independent Gaussians with mean :math:`(\Gamma+\lambda I)^{-1}C` and covariance :math:`\kappa(\Gamma+\lambda I)^{-1}`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..models.copy_head import attention
from ..models.copy_objective import CopyPrior, readout_moments
from ._validate import MODELS, as_f64, check_method, check_model, check_prior

__all__ = ["PosteriorTerms", "attention_of", "prior_term", "posterior_terms", "neg_log_posterior", "readout_posterior"]

_EXACT_MODELS = MODELS[:3]
_DEFAULT = CopyPrior()


def attention_of(model: str, G: torch.Tensor, beta: torch.Tensor | None = None) -> torch.Tensor:
    """Attention ``(..., L, L)`` of scores ``G`` for ``model`` in ``("softmax", "linear_v0", "linear_v2")``."""
    check_model(model, _EXACT_MODELS)
    if G.dim() < 2 or G.shape[-1] != G.shape[-2]:
        raise ValueError(f"G must have shape (..., L, L), got {tuple(G.shape)}")
    if model == "softmax":
        if beta is not None:
            raise ValueError("beta must be None for softmax (softmax is invariant to a uniform score shift)")
        return attention("softmax", G)
    if model == "linear_v0":
        if beta is not None:
            raise ValueError("beta must be None for linear_v0 (A = G has no uniform channel)")
        return G
    return attention("linear", G, None if beta is None else as_f64(beta))


def prior_term(model: str, G: torch.Tensor, beta: torch.Tensor | None, prior: CopyPrior) -> torch.Tensor:
    r""":math:`\lVert G\rVert^2/(2\sigma_G^2)` (+ :math:`\beta^2/(2\sigma_\beta^2)` for ``linear_v2``), member shape."""
    out = G.pow(2).sum((-1, -2)) / (2 * prior.sigma_G2)
    if model == "linear_v2" and beta is not None:
        out = out + as_f64(beta).pow(2) / (2 * prior.sigma_beta2)
    return out


@dataclass(frozen=True)
class PosteriorTerms:
    """The three terms of :math:`-\\ln p(G\\mid D)` (module docstring), each of the member shape."""

    prior: torch.Tensor
    data: torch.Tensor
    occam: torch.Tensor

    def total(self, method: str = "bayes") -> torch.Tensor:
        """``prior + data + occam`` (``"bayes"``) or ``prior + data`` (``"map"``)."""
        check_method(method)
        return self.prior + self.data + (self.occam if method == "bayes" else 0.0)


def _n_seq(counts: torch.Tensor) -> torch.Tensor:
    """Number of sequences behind pair counts: :math:`\\sum_a N_{11aa}` (real-valued for expected counts)."""
    return counts[..., 0, 0, :, :].diagonal(dim1=-2, dim2=-1).sum(-1)


def _check_counts(counts: torch.Tensor, L: int) -> None:
    if not isinstance(counts, torch.Tensor):
        raise TypeError(f"counts must be a torch.Tensor, got {type(counts).__name__}")
    if counts.dim() < 4 or counts.shape[-4:-2] != (L, L) or counts.shape[-1] != counts.shape[-2]:
        raise ValueError(f"counts must have shape (..., {L}, {L}, V, V), got {tuple(counts.shape)}")


def posterior_terms(model: str, G, counts: torch.Tensor, *, beta=None, prior: CopyPrior = _DEFAULT) -> PosteriorTerms:
    r"""Prior, data and Occam terms of the exact negative log posterior over ``G`` (and ``beta``).

    Parameters
    ----------
    model : {"softmax", "linear_v0", "linear_v2"}
    G : Tensor ``(..., L, L)``
        Scores (differentiable: autograd gives exact gradients).
    counts : Tensor ``(..., L, L, V, V)``
        Pair counts (:func:`lib.tasks.pair_counts`), or ``P *`` :func:`lib.tasks.population_counts` for the large-P
        limit; leading dimensions broadcast against those of ``G``.
    beta : Tensor ``(...)``, optional
        Uniform channel of ``linear_v2`` (``None`` = 0).
    prior : CopyPrior

    Returns
    -------
    PosteriorTerms
    """
    check_prior(prior)
    G = as_f64(G)
    _check_counts(counts, G.shape[-1])
    A = attention_of(model, G, beta)  # (..., L, L)
    L, V = G.shape[-1], counts.shape[-1]
    kappa = prior.T * L
    lam = kappa / prior.sigma_W2
    gram, cross = readout_moments(A, counts.to(torch.float64))  # (..., V, V) each
    chol = torch.linalg.cholesky(gram + lam * torch.eye(V, dtype=torch.float64))  # (..., V, V)
    Z = torch.linalg.solve_triangular(chol, cross, upper=False)  # (..., V, V): L_c^{-1} C
    explained = Z.pow(2).sum((-1, -2))  # tr C^T (Gamma + lam)^{-1} C
    data = (_n_seq(counts) * L - explained) / (2 * kappa)
    logdet = 2 * torch.log(torch.diagonal(chol, dim1=-2, dim2=-1)).sum(-1) - V * torch.log(
        torch.tensor(lam, dtype=torch.float64)
    )
    return PosteriorTerms(prior=prior_term(model, G, beta, prior), data=data, occam=V / 2 * logdet)


def neg_log_posterior(
    model: str, G, counts: torch.Tensor, *, beta=None, prior: CopyPrior = _DEFAULT, method: str = "bayes"
) -> torch.Tensor:
    """Exact :math:`-\\ln p(G\\mid D)` (``"bayes"``) or :math:`\\min_W U` (``"map"``); see :func:`posterior_terms`."""
    check_method(method)
    return posterior_terms(model, G, counts, beta=beta, prior=prior).total(method)


def readout_posterior(
    A: torch.Tensor, counts: torch.Tensor, *, prior: CopyPrior = _DEFAULT
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Gaussian posterior of the readout given the attention: mean ``(..., V, V)`` and per-column covariance ``(..., V, V)``.

    Mean :math:`(\Gamma + \lambda I)^{-1}C` (= :func:`lib.train.optimal_readout` with ``ridge = TL/sigma_W2``, the MAP
    readout), covariance :math:`\kappa(\Gamma+\lambda I)^{-1}` shared by the :math:`V` output columns.
    """
    check_prior(prior)
    A = as_f64(A)
    _check_counts(counts, A.shape[-1])
    L, V = A.shape[-1], counts.shape[-1]
    kappa = prior.T * L
    gram, cross = readout_moments(A, counts.to(torch.float64))  # (..., V, V)
    prec = gram + kappa / prior.sigma_W2 * torch.eye(V, dtype=torch.float64)  # (..., V, V)
    cov = kappa * torch.linalg.inv(prec)
    return torch.linalg.solve(prec, cross), 0.5 * (cov + cov.transpose(-1, -2))
