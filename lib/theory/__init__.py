r"""Theory of paper A: the posterior over the attention matrix, its large-P action, and the phase transitions.

Everything here is DERIVED (ours) from the model of :mod:`lib.models.copy_head` and the loss of
:mod:`lib.train.copy_map`; paper A's full text is not available, so the derivation is ours to verify (the tests
check it against Monte Carlo, finite-P exact posteriors and direct minimisation).

Naming (the seed's, used throughout): **ĉ_1 / â_1 = uniform-pooling strength, ĉ_G / â_G = copy strength** (weight
on the previous token); ``c1``, ``cG`` in code, and ``d = â_G − â_1`` for softmax. paper A
§3.3 uses the opposite letters.

Modules
-------
:mod:`~lib.theory.posterior`
    exact finite-P negative log posterior over G (W integrated out; ``method="map"`` profiles W instead).
:mod:`~lib.theory.action`
    large-P action and the reduced actions of the models ``"softmax"``, ``"linear_v0"`` (A = G, i.i.d.),
    ``"linear_v2"`` (the book's linear model A = (G + βJ)/L) and ``"linear_v2_bulk"`` (V2 with spike+bulk).
:mod:`~lib.theory.grids`, :mod:`~lib.theory.solvers`
    search grids that contain every minimum; every local minimum over whole grids of (V, L, P) at once.
:mod:`~lib.theory.observables`
    order parameters, losses and susceptibility along P.
:mod:`~lib.theory.onsets`
    second-order onsets of the linear models (closed form and numeric).
:mod:`~lib.theory.transitions`
    the softmax first-order point, the linear crossover; the public entry points
    :func:`critical_sample_size` and :func:`crossover_sample_size`.
:mod:`~lib.theory.marginal_mc`, :mod:`~lib.theory.self_averaging`, :mod:`~lib.theory.coverage`, :mod:`~lib.theory.pushforward`
    numerical checks of the derivation (chapter 2): Monte Carlo over W, exact vs large-P action, full-action
    minimisers and their coverage by the order-parameter plane, the logistic-normal pushforward.
"""

from .action import (
    METHODS,
    MODELS,
    ORDER_PARAMETERS,
    epsilon,
    large_p_action,
    linear_action,
    order_parameter_attention,
    reduced_action,
    softmax_action,
    softmax_scores,
)
from .observables import (
    LossTerms,
    OrderParameters,
    exact_test_loss,
    order_parameter_loss,
    order_parameters_vs_P,
    susceptibility,
)
from .posterior import PosteriorTerms, neg_log_posterior, posterior_terms, readout_posterior
from .solvers import GridSpec, Minima, local_response, minima
from .onsets import onset_sample_size
from .transitions import (
    SoftmaxTransition,
    critical_sample_size,
    crossover_sample_size,
    first_order_transition,
    fit_power_law,
    compare_scaling_laws,
    law_ratio,
    SCALING_LAWS,
)
from .marginal_mc import WMarginalMC, w_marginal_mc
from .self_averaging import SelfAveragingGap, self_averaging_gap
from .coverage import FullActionMinima, coverage, minimise_full_action, plane_projection
from .pushforward import (
    PushforwardCheck,
    logistic_normal_logpdf,
    pushforward_check,
    sample_softmax_rows,
    ternary_bin_index,
    ternary_bin_mass,
    ternary_bins,
)

__all__ = [
    # public entry points
    "critical_sample_size",
    "crossover_sample_size",
    # exact finite-P posterior
    "neg_log_posterior",
    "posterior_terms",
    "PosteriorTerms",
    "readout_posterior",
    # large-P and reduced actions
    "MODELS",
    "METHODS",
    "ORDER_PARAMETERS",
    "epsilon",
    "large_p_action",
    "reduced_action",
    "softmax_action",
    "linear_action",
    "softmax_scores",
    "order_parameter_attention",
    # solvers and observables
    "minima",
    "Minima",
    "GridSpec",
    "local_response",
    "order_parameters_vs_P",
    "OrderParameters",
    "susceptibility",
    "order_parameter_loss",
    "LossTerms",
    "exact_test_loss",
    # transitions
    "onset_sample_size",
    "first_order_transition",
    "SoftmaxTransition",
    "fit_power_law",
    "compare_scaling_laws",
    "law_ratio",
    "SCALING_LAWS",
    # numerical checks of the derivation (chapter 2)
    "w_marginal_mc",
    "WMarginalMC",
    "self_averaging_gap",
    "SelfAveragingGap",
    "coverage",
    "plane_projection",
    "minimise_full_action",
    "FullActionMinima",
    "logistic_normal_logpdf",
    "sample_softmax_rows",
    "ternary_bins",
    "ternary_bin_index",
    "ternary_bin_mass",
    "pushforward_check",
    "PushforwardCheck",
]
