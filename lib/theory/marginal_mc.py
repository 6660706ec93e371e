r"""Check (a) of chapter 2: the closed-form W-marginal against Monte Carlo over the readout W (DERIVED, ours).

:func:`w_marginal_mc` estimates :math:`\ln\int dW\,p(W)\,e^{-E(G,W)}` by sampling W from its prior (or by importance
sampling from the Gaussian W-posterior) and compares it with :mod:`lib.theory.posterior`'s closed form.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ..models.copy_objective import CopyPrior, copy_sq_error
from ._validate import (
    F64,
    check_choice,
    check_model,
    check_prior,
    check_size,
    _DEFAULT,
    _EXACT_MODELS,
    _beta_arg,
    _check_counts,
    _square,
)
from .posterior import _n_seq, attention_of, posterior_terms, readout_posterior

__all__ = ["WMarginalMC", "w_marginal_mc"]


# ----------------------------------------------------------------------------------------------- (a) W-marginal
@dataclass(frozen=True)
class WMarginalMC:
    r"""Monte-Carlo estimate of :math:`\ln Z(G) = \ln\int dW\,p(W)\,e^{-E(G,W)}` against its closed form.

    Attributes
    ----------
    sampler : {"prior", "posterior"}
    n : ndarray ``(k,)``
        Numbers of samples at which the running estimate is reported (geometric checkpoints).
    log_mean : ndarray ``(k,)``
        :math:`\ln \frac1n\sum_{s\le n} w_s` (the MC estimate of :math:`\ln Z`).
    se : ndarray ``(k,)``
        Its standard error (delta method: :math:`\mathrm{sd}(w)/(\bar w\sqrt n)`).
    closed_form : float
        :math:`-(\text{data} + \text{Occam})` from :func:`lib.theory.posterior_terms`.
    map_profile : float
        :math:`-\text{data}`: what the MAP profile :math:`\min_W U` would predict (no Occam term).
    log_w_spread : float
        :math:`\max_s \ln w_s - \min_s \ln w_s`; zero (up to rounding) for ``"posterior"`` when the closed form is exact.
    W_mean_mc, W_mean_se : ndarray ``(V, V)``
        Self-normalised MC posterior mean of :math:`W` and its standard error.
    W_mean_closed, W_map : ndarray ``(V, V)``
        Closed-form posterior mean :math:`(\Gamma+\lambda I)^{-1}C` and the MAP (ridge) readout minimising
        :math:`U(G, W)` (:func:`lib.train.optimal_readout` with ridge :math:`TL/\sigma_W^2`).
    map_grad : float
        Largest :math:`|\partial U/\partial W|` at ``W_mean_closed`` (zero: the posterior mean is the MAP readout).
    """

    sampler: str
    n: np.ndarray
    log_mean: np.ndarray
    se: np.ndarray
    closed_form: float
    map_profile: float
    log_w_spread: float
    W_mean_mc: np.ndarray
    W_mean_se: np.ndarray
    W_mean_closed: np.ndarray
    W_map: np.ndarray
    map_grad: float

    @property
    def z(self) -> float:
        """(final MC estimate − closed form) in units of the final standard error."""
        return float((self.log_mean[-1] - self.closed_form) / self.se[-1])

    @property
    def z_map(self) -> float:
        """The same for the MAP profile (no Occam term): large when MC can tell the two apart."""
        return float((self.log_mean[-1] - self.map_profile) / self.se[-1])


def _gauss_logpdf_cols(W: torch.Tensor, mean: torch.Tensor, chol: torch.Tensor) -> torch.Tensor:
    """Sum over the V columns of ``ln N(W[:, c]; mean[:, c], chol chol^T)``; ``W`` ``(m, V, V)`` -> ``(m,)``."""
    V = W.shape[-1]
    z = torch.linalg.solve_triangular(chol, W - mean, upper=False)  # (m, V, V)
    logdet = 2 * torch.log(torch.diagonal(chol)).sum()
    return -0.5 * z.pow(2).sum((-1, -2)) - V * (0.5 * logdet + 0.5 * V * math.log(2 * math.pi))


def w_marginal_mc(
    model: str,
    G,
    counts: torch.Tensor,
    *,
    beta=None,
    prior: CopyPrior = _DEFAULT,
    n_samples: int = 2**20,
    sampler: str = "prior",
    seed: int = 0,
    n_checkpoints: int = 12,
    chunk: int = 2**16,
) -> WMarginalMC:
    r"""Monte-Carlo check of the closed-form W-marginal at one score matrix ``G``.

    Given :math:`G`, :math:`E(G, W) = \frac1{2TL}\sum_{\mu i}\lVert y_i^\mu - (A X^\mu W)_i\rVert^2` is quadratic in
    :math:`W`, so

    .. math:: Z(G) = \int dW\,\mathcal N(W; 0, \sigma_W^2 I)\,e^{-E(G,W)} = e^{-\text{data}(G) - \text{Occam}(G)}

    (module docstring of :mod:`lib.theory.posterior`). Two unbiased estimators of :math:`Z`:

    * ``"prior"``: :math:`W_s \sim \mathcal N(0,\sigma_W^2 I)`, :math:`w_s = e^{-E(G,W_s)}` — independent of the
      closed form; its variance is finite because :math:`0 < w \le 1`.
    * ``"posterior"``: importance sampling from the closed-form Gaussian W-posterior :math:`q` (mean
      :math:`(\Gamma+\lambda I)^{-1}C`, per-column covariance :math:`\kappa(\Gamma+\lambda I)^{-1}`),
      :math:`w_s = p(W_s)e^{-E}/q(W_s)`. If the closed forms are right, :math:`w_s = Z` for every sample (zero
      variance): a check of the Gaussian posterior and its normaliser together.

    Parameters
    ----------
    model : {"softmax", "linear_v0", "linear_v2"}
    G : Tensor ``(L, L)``
    counts : Tensor ``(L, L, V, V)``
        Pair counts of one data set (:func:`lib.tasks.pair_counts`).
    beta : float or Tensor ``()``, optional
        Uniform channel (``linear_v2`` only).
    prior : CopyPrior
    n_samples : int
        Total number of samples (>= 100).
    sampler : {"prior", "posterior"}
    seed : int
    n_checkpoints : int
        Number of geometric checkpoints from 100 to ``n_samples`` for the running estimate (>= 2).
    chunk : int
        Samples per batch (memory: about ``chunk * (L^2 + 3 V^2) * 8`` bytes).

    Returns
    -------
    WMarginalMC
    """
    check_model(model, _EXACT_MODELS)
    check_prior(prior)
    check_choice("sampler", sampler, ("prior", "posterior"))
    G = _square("G", G, batch=False)
    L = G.shape[-1]
    counts = _check_counts(counts, L, 0)
    V = counts.shape[-1]
    n_samples = check_size("n_samples", n_samples, 100)
    n_checkpoints = check_size("n_checkpoints", n_checkpoints, 2)
    chunk = check_size("chunk", chunk, 1)
    seed = check_size("seed", seed, 0)
    beta = _beta_arg(model, beta)

    A = attention_of(model, G, beta)  # (L, L)
    terms = posterior_terms(model, G, counts, beta=beta, prior=prior)
    mean, cov = readout_posterior(A, counts, prior=prior)  # (V, V), (V, V)
    chol = torch.linalg.cholesky(cov)
    n_seq = _n_seq(counts)
    kappa = prior.T * L
    sW = math.sqrt(prior.sigma_W2)
    gen = torch.Generator().manual_seed(seed)

    log_w, Ws = [], []
    done = 0
    while done < n_samples:
        m = min(chunk, n_samples - done)
        Z = torch.randn(m, V, V, generator=gen, dtype=F64)  # (m, V, V)
        if sampler == "prior":
            W = sW * Z
            lw = torch.zeros(m, dtype=F64)
        else:
            W = mean + chol @ Z  # (m, V, V): columns ~ N(mean[:, c], cov)
            lw = (
                -0.5 * W.pow(2).sum((-1, -2)) / prior.sigma_W2
                - 0.5 * V * V * math.log(2 * math.pi * prior.sigma_W2)
                - _gauss_logpdf_cols(W, mean, chol)
            )
        E = copy_sq_error(A.expand(m, L, L), W, counts, n_seq) / (2 * kappa)  # (m,)
        log_w.append(lw - E)
        Ws.append(W)
        done += m
    log_w = torch.cat(log_w)  # (N,)
    W_all = torch.cat(Ws)  # (N, V, V)

    shift = log_w.max()
    w = torch.exp(log_w - shift)  # (N,), in (0, 1]
    cw, cw2 = torch.cumsum(w, 0), torch.cumsum(w * w, 0)
    n_pts = np.unique(np.round(np.geomspace(min(100, n_samples), n_samples, n_checkpoints)).astype(int))
    idx = torch.as_tensor(n_pts - 1)
    nn = torch.as_tensor(n_pts, dtype=F64)
    mean_w = cw[idx] / nn
    var_w = (cw2[idx] / nn - mean_w**2).clamp_min(0) * nn / (nn - 1).clamp_min(1)
    log_mean = torch.log(mean_w) + shift
    se = torch.sqrt(var_w / nn) / mean_w

    wn = w / w.sum()
    W_mc = torch.einsum("n,nab->ab", wn, W_all)
    W_se = torch.sqrt(torch.einsum("n,nab->ab", wn**2, (W_all - W_mc) ** 2))

    # the MAP readout: minimise U(G, W) = E(G, W) + ||W||^2/(2 sigma_W2) over W in closed form (ridge), and the
    # gradient of U at the posterior mean
    from ..models.copy_objective import optimal_readout

    W_map = optimal_readout(A, counts, ridge=kappa / prior.sigma_W2)
    Wm = mean.clone().requires_grad_(True)
    U = copy_sq_error(A, Wm, counts, n_seq) / (2 * kappa) + Wm.pow(2).sum() / (2 * prior.sigma_W2)
    (gW,) = torch.autograd.grad(U, Wm)

    return WMarginalMC(
        sampler=sampler,
        n=n_pts,
        log_mean=log_mean.numpy(),
        se=se.numpy(),
        closed_form=float(-(terms.data + terms.occam)),
        map_profile=float(-terms.data),
        log_w_spread=float(log_w.max() - log_w.min()),
        W_mean_mc=W_mc.numpy(),
        W_mean_se=W_se.numpy(),
        W_mean_closed=mean.detach().numpy(),
        W_map=W_map.detach().numpy(),
        map_grad=float(gW.abs().max()),
    )
