r"""What the theory predicts along the training-set size: order parameters, losses, susceptibility (DERIVED, ours).

Naming (the seed's): ``c1`` = :math:`\hat c_1`, uniform pooling; ``cG`` = :math:`\hat c_G`, copy (weight on the
previous token); softmax ``d`` = :math:`\hat a_G - \hat a_1`. The target attention is :math:`A_{i,i-1}`:
:math:`p(d)` for softmax, :math:`\hat c_G + \hat c_1/L` for the linear models.

Losses at order parameters (large P, per position; overlaps :math:`Q, R, Q_1, R_1` and :math:`\varepsilon` as in
:mod:`lib.theory.action`). With the posterior-mean (= MAP ridge) readout :math:`\bar W`, whose centred and mean
eigenvalues are :math:`R/(Q+\varepsilon)` and :math:`R_1/(Q_1+\varepsilon)`,

.. math::
    \ell_\text{train} = \ell_\text{test}
      = 1 - \frac1L\Big[\tfrac{V-1}V\,\frac{R^2(Q+2\varepsilon)}{(Q+\varepsilon)^2}
        + \tfrac1V\,\frac{R_1^2(Q_1+2\varepsilon)}{(Q_1+\varepsilon)^2}\Big]

(self-averaged, so train = test at this order; checked against :func:`lib.train.population_loss`). The expected
test loss of a posterior *sample* of :math:`W` adds the readout variance,
:math:`\frac{VT}P\big[(V-1)\frac Q{Q+\varepsilon} + \frac{Q_1}{Q_1+\varepsilon}\big] \propto TV^2/P`.
:file:`paperA.md` §4.4 writes :math:`\tfrac{V-1}V[1-\tfrac{R^2}{L(Q+\varepsilon)}] + \tfrac1V[\dots]`: that is the
ridge *objective* per position (squared error plus :math:`\lambda\lVert\bar W\rVert^2`, i.e. :math:`2T/P` times the data
term of the action), which exceeds the squared error by :math:`O(\varepsilon/(Q+\varepsilon))`; we return both.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..tasks.copy import population_counts
from ..models.copy_objective import CopyPrior, population_loss
from ._validate import F64, as_f64, check_method, check_model, check_prior, check_P, check_sizes
from .action import MODELS, epsilon, order_parameter_attention, reduced_overlaps
from .posterior import readout_posterior
from .solvers import GridSpec, local_response, minima

__all__ = [
    "LossTerms",
    "order_parameter_loss",
    "exact_test_loss",
    "OrderParameters",
    "order_parameters_vs_P",
    "susceptibility",
    "target_attention_of",
]

_DEFAULT = CopyPrior()


@dataclass(frozen=True)
class LossTerms:
    """Per-position losses at order parameters (module docstring); tensors of the batch shape."""

    objective: torch.Tensor  # paper A §4.4: ridge objective per position (2T/P x data term)
    train: torch.Tensor  # squared error of the posterior-mean readout (= its test loss at large P)
    bayes_test: torch.Tensor  # expected test loss of a posterior sample of W


def order_parameter_loss(model: str, x, P, V, L, *, prior: CopyPrior = _DEFAULT) -> LossTerms:
    """Closed-form large-P losses at order parameters ``x`` ``(..., k)`` (broadcast with ``P``, ``V``, ``L``)."""
    check_model(model)
    check_prior(prior)
    P, V, L = as_f64(P), as_f64(V), as_f64(L)
    Q, R, Q1, R1 = reduced_overlaps(model, x, L)
    eps = epsilon(P, V, L, prior)
    objective = (V - 1) / V * (1 - R**2 / (L * (Q + eps))) + (1 - R1**2 / (L * (Q1 + eps))) / V
    train = 1 - ((V - 1) / V * R**2 * (Q + 2 * eps) / (Q + eps) ** 2 + R1**2 * (Q1 + 2 * eps) / (Q1 + eps) ** 2 / V) / L
    variance = V * prior.T / P * ((V - 1) * Q / (Q + eps) + Q1 / (Q1 + eps))
    return LossTerms(objective=objective, train=train, bayes_test=train + variance)


def exact_test_loss(model: str, x, P: float, V: int, L: int, *, prior: CopyPrior = _DEFAULT) -> torch.Tensor:
    """Population test loss (:func:`lib.train.population_loss`) of the attention at ``x`` ``(..., k)`` with the large-P
    posterior-mean readout; ``model`` in ``("softmax", "linear_v0", "linear_v2")`` (the bulk has no single ``A``)."""
    check_model(model, MODELS[:3])
    A = order_parameter_attention(model, x, L)  # (..., L, L)
    W, _ = readout_posterior(A, float(P) * population_counts(L, V), prior=prior)  # (..., V, V)
    return population_loss(A, W)


def target_attention_of(model: str, x, L) -> torch.Tensor:
    r"""Attention on the target key :math:`A_{i,i-1}`: softmax :math:`p(d)`; linear :math:`\hat c_G + \hat c_1/L`."""
    x, L = as_f64(x), as_f64(L)
    if model == "softmax":
        return torch.sigmoid(x[..., 0] - torch.log(L - 1))
    return x[..., 1] + x[..., 0] / L


@dataclass(frozen=True)
class OrderParameters:
    """The global minimum along a grid of ``P`` (arrays ``(n_P, ...)``), with what it implies.

    ``x`` are the order parameters (``names``, seed naming), ``target`` the attention on the previous token,
    ``explained`` the centred explained fraction :math:`R^2/(L(Q+\\varepsilon))`, ``train_loss``/``bayes_test_loss``
    as in :class:`LossTerms`, ``susceptibility`` the largest eigenvalue of the inverse Hessian (order-parameter
    block), ``dx_dlnP`` the slope of the minimum, ``n_minima`` the number of coexisting local minima.
    """

    model: str
    method: str
    names: tuple[str, ...]
    P: np.ndarray
    x: np.ndarray
    action: np.ndarray
    n_minima: np.ndarray
    target: np.ndarray
    explained: np.ndarray
    train_loss: np.ndarray
    bayes_test_loss: np.ndarray
    susceptibility: np.ndarray
    dx_dlnP: np.ndarray


def order_parameters_vs_P(
    model: str, V: int, L: int, P, *, prior: CopyPrior = _DEFAULT, method: str = "bayes", spec: GridSpec = GridSpec()
) -> OrderParameters:
    """Global minimum of the reduced action for every ``P`` of a 1-D grid (one vectorised solve)."""
    check_method(method)
    Vt, Lt = check_sizes(V, L)
    if Vt.dim() or Lt.dim():
        raise ValueError("V and L must be scalars here (use lib.theory.minima for a batch over V and L)")
    P = check_P(P)
    if P.dim() != 1:
        raise ValueError(f"P must be a 1-D grid, got shape {tuple(P.shape)}")
    mins = minima(model, V, L, P, prior=prior, method=method, spec=spec)
    x = torch.as_tensor(mins.global_x, dtype=F64)  # (n_P, k)
    Vn, Ln = Vt.expand_as(P), Lt.expand_as(P)
    resp = local_response(model, x, P, Vn, Ln, prior=prior, method=method)
    loss = order_parameter_loss(model, x, P, Vn, Ln, prior=prior)
    Q, R, _, _ = reduced_overlaps(model, x, Ln)
    explained = R**2 / (Ln * (Q + epsilon(P, Vn, Ln, prior)))
    return OrderParameters(
        model=model,
        method=method,
        names=mins.names,
        P=P.numpy(),
        x=mins.global_x,
        action=mins.global_action,
        n_minima=mins.n,
        target=target_attention_of(model, x, Ln).numpy(),
        explained=explained.numpy(),
        train_loss=loss.train.numpy(),
        bayes_test_loss=loss.bayes_test.numpy(),
        susceptibility=resp["susceptibility"].numpy(),
        dx_dlnP=resp["dx_dlnP"].numpy(),
    )


def susceptibility(
    model: str, V, L, P, *, prior: CopyPrior = _DEFAULT, method: str = "bayes", spec: GridSpec = GridSpec()
) -> np.ndarray:
    r"""Susceptibility at the global minimum: largest eigenvalue of the order-parameter block of :math:`H^{-1}`.

    It diverges where the trivial minimum loses stability (second-order onset) and stays finite across a
    first-order jump. ``V``, ``L``, ``P`` broadcast; returns an array of the broadcast shape.
    """
    mins = minima(model, V, L, P, prior=prior, method=method, spec=spec)
    V, L = check_sizes(V, L)
    V, L, P = torch.broadcast_tensors(V, L, check_P(P))
    x = torch.as_tensor(mins.global_x, dtype=F64).reshape(-1, len(mins.names))  # (n, k), n = prod(B)
    resp = local_response(model, x, P.reshape(-1), V.reshape(-1), L.reshape(-1), prior=prior, method=method)
    return resp["susceptibility"].numpy().reshape(P.shape)  # B
