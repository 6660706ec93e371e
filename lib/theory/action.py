r"""Large-P (self-averaged) action of the attention posterior, and its reduced forms in the order parameters.

All of this is DERIVED (ours; paper A's full text is not available): from its summary, §3.2–3.3, §4.3, §4.4, and
paper A's linear-attention derivation (§1, §3, §5), re-derived and checked in ``tests/test_theory.py``.

Large-P action
--------------
With :math:`P` sequences the pair counts concentrate on :math:`P` times their expectation, and the exact negative
log posterior (:mod:`lib.theory.posterior`) becomes a function of four overlaps of the attention matrix,
:math:`Q=\lVert A\rVert_F^2`, :math:`R=\langle A,S\rangle`, :math:`Q_1=\lVert A\mathbf 1\rVert^2`,
:math:`R_1=\mathbf 1^\top A\mathbf 1`, with :math:`\varepsilon = VTL/(\sigma_W^2 P)`:

.. math::
    \mathcal S = \text{prior}
      + \frac P{2T}\Big[\tfrac{V-1}V\Big(1-\frac{R^2}{L(Q+\varepsilon)}\Big)
      + \tfrac1V\Big(1-\frac{R_1^2}{L(Q_1+\varepsilon)}\Big)\Big]
      + \underbrace{\tfrac{V(V-1)}2\ln\big(1+\tfrac Q\varepsilon\big)
      + \tfrac V2\ln\big(1+\tfrac{Q_1}\varepsilon\big)}_{\text{Occam (Bayes only)}} .

The first bracket is the centred sector (:math:`V-1` token directions), the second the mean (unigram) sector.
``method="map"`` drops the Occam term (W profiled out instead of integrated out).

Order parameters (the seed's naming)
------------------------------------
**ĉ_1 (â_1) = uniform-pooling strength, ĉ_G (â_G) = copy strength** (weight on the previous token). Note that
:file:`paperA.md` §3.3 uses the opposite letters; we follow the seed.

* ``softmax``: scores :math:`G = \hat a_G S + \hat a_1 (J - S)`; only :math:`d = \hat a_G - \hat a_1` enters the
  likelihood: target attention :math:`p = [1 + (L-1)e^{-d}]^{-1}`, :math:`Q = L[p^2 + (1-p)^2/(L-1)]`,
  :math:`R = Lp`, :math:`Q_1 = R_1 = L`. The prior at fixed :math:`d` is minimised by :math:`\hat a_G = d(L-1)/L`,
  :math:`\hat a_1 = -d/L` (zero-mean rows), giving :math:`\lVert G\rVert^2 = (L-1)d^2`.
* linear models: :math:`A = \hat c_G S + (\hat c_1/L) J`, row sum :math:`u = \hat c_1 + \hat c_G`,
  :math:`Q = L\hat c_G^2 + 2\hat c_G\hat c_1 + \hat c_1^2`, :math:`R = L\hat c_G + \hat c_1`, :math:`Q_1 = Lu^2`,
  :math:`R_1 = Lu`. Priors:

  - ``linear_v0`` (V0, :math:`A = G`, :math:`G_{ij}\sim\mathcal N(0,\sigma_G^2)`): :math:`Q/(2\sigma_G^2)`;
  - ``linear_v2`` (V2, the book's model, :math:`A = (G + \beta J)/L`, :math:`\beta\sim\mathcal N(0,\sigma_\beta^2)`):
    profiling :math:`G`'s :math:`J` component and :math:`\beta` exactly (ours) gives
    :math:`L^2(L-1)\hat c_G^2/(2\sigma_G^2) + u^2/(2\sigma_u^2)` with :math:`\sigma_u^2 = \sigma_\beta^2 + \sigma_G^2/L^2`
    (:file:`paperA_linear.md` §5 keeps only :math:`\beta`: :math:`L^3\hat c_G^2/2 + \hat c_1^2/2`, equal up to O(1/L));
  - ``linear_v2_bulk`` (V2 + spike/bulk): a bulk :math:`b = \lVert A_\perp\rVert^2` of the
    :math:`D = L^2 - 2` score directions orthogonal to :math:`S, J` adds :math:`b` to :math:`Q` and :math:`Q_1`, the prior
    :math:`L^2 b/(2\sigma_G^2)` and the entropy :math:`-(D/2)\ln b`; we write the last two as
    :math:`\frac D2[b/b_0 - 1 - \ln(b/b_0)] \ge 0`, :math:`b_0 = D\sigma_G^2/L^2` (zero at the prior's typical bulk).

Within the symmetric subspace the reduction is exact for the large-P action: at fixed :math:`R` and row sums, every
term grows with :math:`Q` and :math:`Q_1`, which are smallest for equal off-target entries and equal row sums (ours).
"""

from __future__ import annotations

import torch

from ..models.copy_head import attention
from ..tasks.copy import shift_matrix
from ..models.copy_objective import CopyPrior
from ._validate import METHODS, MODELS, as_f64, check_method, check_model, check_prior
from .posterior import attention_of, prior_term

__all__ = [
    "MODELS",
    "METHODS",
    "ORDER_PARAMETERS",
    "epsilon",
    "overlaps",
    "sector_action",
    "large_p_action",
    "softmax_action",
    "linear_action",
    "reduced_action",
    "reduced_overlaps",
    "softmax_scores",
    "order_parameter_attention",
    "bulk_dimension",
]

#: Names of the order parameters of each reduced model (seed naming; ``b`` = bulk :math:`\lVert A_\perp\rVert^2`).
ORDER_PARAMETERS = {
    "softmax": ("d",),
    "linear_v0": ("c1", "cG"),
    "linear_v2": ("c1", "cG"),
    "linear_v2_bulk": ("c1", "cG", "b"),
}
_DEFAULT = CopyPrior()


def epsilon(P, V, L, prior: CopyPrior = _DEFAULT) -> torch.Tensor:
    r""":math:`\varepsilon = VTL/(\sigma_W^2 P)`: the ridge :math:`\lambda = TL/\sigma_W^2` in units of :math:`P/V`."""
    return as_f64(V) * prior.T * as_f64(L) / (prior.sigma_W2 * as_f64(P))


def bulk_dimension(L) -> torch.Tensor:
    """:math:`D = L^2 - 2`: score directions orthogonal to the copy (S) and uniform (J) patterns."""
    return as_f64(L) ** 2 - 2


def overlaps(A: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    r""":math:`(Q, R, Q_1, R_1)` of attention matrices ``A`` ``(..., L, L)``; each of the leading shape."""
    S = shift_matrix(A.shape[-1], dtype=A.dtype, device=A.device)  # (L, L)
    rows = A.sum(-1)  # (..., L)
    return A.pow(2).sum((-1, -2)), (A * S).sum((-1, -2)), rows.pow(2).sum(-1), rows.sum(-1)


def sector_action(Q, R, Q1, R1, P, V, L, *, prior: CopyPrior = _DEFAULT, method: str = "bayes") -> torch.Tensor:
    """Data term plus (for ``"bayes"``) the Occam term of the large-P action, from the overlaps (module docstring)."""
    check_method(method)
    P, V, L = as_f64(P), as_f64(V), as_f64(L)
    eps = epsilon(P, V, L, prior)
    data = P / (2 * prior.T) * ((V - 1) / V * (1 - R**2 / (L * (Q + eps))) + (1 - R1**2 / (L * (Q1 + eps))) / V)
    if method == "map":
        return data
    return data + V * (V - 1) / 2 * torch.log1p(Q / eps) + V / 2 * torch.log1p(Q1 / eps)


def large_p_action(
    model: str, G, P, V, *, beta=None, prior: CopyPrior = _DEFAULT, method: str = "bayes"
) -> torch.Tensor:
    r"""Self-averaged action of a full score matrix ``G`` ``(..., L, L)`` (+ ``beta`` ``(...)`` for ``linear_v2``).

    Equals :func:`lib.theory.posterior.neg_log_posterior` with the counts replaced by ``P`` times their expectation
    (tested). ``model`` is one of ``"softmax"``, ``"linear_v0"``, ``"linear_v2"``.
    """
    check_model(model, MODELS[:3])
    check_prior(prior)
    G = as_f64(G)
    Q, R, Q1, R1 = overlaps(attention_of(model, G, beta))
    return prior_term(model, G, beta, prior) + sector_action(
        Q, R, Q1, R1, P, V, G.shape[-1], prior=prior, method=method
    )


def _softmax_p(d, L):
    return torch.sigmoid(d - torch.log(L - 1))  # 1 / (1 + (L-1) e^{-d})


def reduced_overlaps(model: str, x, L):
    r""":math:`(Q, R, Q_1, R_1)` at order parameters ``x`` ``(..., k)`` (seed coordinates, see ``ORDER_PARAMETERS``).

    For ``linear_v2_bulk`` the bulk :math:`b` is included in :math:`Q` and :math:`Q_1`.
    """
    check_model(model)
    x, L = as_f64(x), as_f64(L)
    if model == "softmax":
        p = _softmax_p(x[..., 0], L)
        Q = L * (p**2 + (1 - p) ** 2 / (L - 1))
        return Q, L * p, L.expand_as(p), L.expand_as(p)
    c1, cG = x[..., 0], x[..., 1]
    u = c1 + cG
    Q, Q1 = L * cG**2 + 2 * cG * c1 + c1**2, L * u**2
    if model == "linear_v2_bulk":
        Q, Q1 = Q + x[..., 2], Q1 + x[..., 2]
    return Q, L * cG + c1, Q1, L * u


def _reduced_prior(model: str, x, L, prior: CopyPrior) -> torch.Tensor:
    if model == "softmax":
        return (L - 1) * x[..., 0] ** 2 / (2 * prior.sigma_G2)
    c1, cG = x[..., 0], x[..., 1]
    if model == "linear_v0":
        return (L * cG**2 + 2 * cG * c1 + c1**2) / (2 * prior.sigma_G2)
    sigma_u2 = prior.sigma_beta2 + prior.sigma_G2 / L**2
    out = L**2 * (L - 1) * cG**2 / (2 * prior.sigma_G2) + (c1 + cG) ** 2 / (2 * sigma_u2)
    if model == "linear_v2_bulk":
        D = bulk_dimension(L)
        r = x[..., 2] / (D * prior.sigma_G2 / L**2)  # b / b0
        out = out + D / 2 * (r - 1 - torch.log(r))
    return out


def reduced_action(model: str, x, P, V, L, *, prior: CopyPrior = _DEFAULT, method: str = "bayes") -> torch.Tensor:
    r"""Reduced large-P action at order parameters ``x`` ``(..., k)``; ``P``, ``V``, ``L`` broadcast with ``x[..., 0]``.

    Vectorised and differentiable (torch float64): whole phase diagrams evaluate in one call.
    """
    check_model(model)
    check_method(method)
    check_prior(prior)
    x, L = as_f64(x), as_f64(L)
    if x.shape[-1] != len(ORDER_PARAMETERS[model]):
        raise ValueError(f"x must end in {len(ORDER_PARAMETERS[model])} order parameters {ORDER_PARAMETERS[model]}")
    Q, R, Q1, R1 = reduced_overlaps(model, x, L)
    return _reduced_prior(model, x, L, prior) + sector_action(Q, R, Q1, R1, P, V, L, prior=prior, method=method)


def softmax_action(d, P, V, L, *, prior: CopyPrior = _DEFAULT, method: str = "bayes") -> torch.Tensor:
    r"""Reduced softmax action :math:`\mathcal S(d)`, :math:`d = \hat a_G - \hat a_1` (broadcast over all arguments).

    .. math::
        \mathcal S(d) = \frac{(L-1)d^2}{2\sigma_G^2} + \frac P{2T}\frac{V-1}V\Big[1 - \frac{Lp^2}{Q+\varepsilon}\Big]
          + \frac{V(V-1)}2\ln\Big(1+\frac Q\varepsilon\Big) + \text{(mean sector, independent of } d)
    """
    return reduced_action("softmax", as_f64(d)[..., None], P, V, L, prior=prior, method=method)


def linear_action(
    c1, cG, P, V, L, *, model: str = "linear_v2", b=None, prior: CopyPrior = _DEFAULT, method: str = "bayes"
) -> torch.Tensor:
    r"""Reduced linear action :math:`\mathcal S(\hat c_1, \hat c_G[, b])` (``c1`` uniform, ``cG`` copy; broadcast).

    ``model`` is ``"linear_v2"`` (the book's model, default), ``"linear_v0"`` or ``"linear_v2_bulk"`` (needs ``b > 0``).
    Even under :math:`(\hat c_1, \hat c_G) \to -(\hat c_1, \hat c_G)` (with :math:`W \to -W`).
    """
    check_model(model, MODELS[1:])
    c1, cG = torch.broadcast_tensors(as_f64(c1), as_f64(cG))
    parts = [c1, cG]
    if model == "linear_v2_bulk":
        if b is None:
            raise ValueError("b (the bulk ||A_perp||^2 > 0) is required for model='linear_v2_bulk'")
        parts = list(torch.broadcast_tensors(c1, cG, as_f64(b)))
    elif b is not None:
        raise ValueError(f"b is only used by model='linear_v2_bulk', got model={model!r}")
    return reduced_action(model, torch.stack(parts, -1), P, V, L, prior=prior, method=method)


def softmax_scores(d, L) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Prior-optimal scores at fixed :math:`d`: :math:`(\hat a_1, \hat a_G) = (-d/L,\ d(L-1)/L)` (zero-mean rows)."""
    d, L = as_f64(d), as_f64(L)
    return -d / L, d * (L - 1) / L


def order_parameter_attention(model: str, x, L: int) -> torch.Tensor:
    r"""The attention matrix ``(..., L, L)`` at order parameters ``x`` (``softmax``, ``linear_v0``, ``linear_v2``).

    softmax: :math:`A = \mathrm{softmax}(\hat a_G S + \hat a_1 (J-S))`; linear: :math:`A = \hat c_G S + (\hat c_1/L) J`.
    (The bulk of ``linear_v2_bulk`` is a random matrix, so it has no single attention matrix.)
    """
    check_model(model, MODELS[:3])
    x = as_f64(x)
    S = shift_matrix(L)  # (L, L)
    J = torch.ones(L, L, dtype=torch.float64)
    if model == "softmax":
        a1, aG = softmax_scores(x[..., 0], float(L))
        return attention("softmax", aG[..., None, None] * S + a1[..., None, None] * (J - S))  # (..., L, L)
    return x[..., 1, None, None] * S + x[..., 0, None, None] / L * J  # (..., L, L)
