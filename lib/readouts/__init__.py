"""What chapters read off a theory curve or a committed study: tables, summaries and derived measures (no training).

Each module turns a result the engine computed into what one argument of a chapter needs, as one call returning a
result object (its ``table()`` to print and ``summary()`` to glue), so the chapter stays prose over a few lines.
None is imported by a trainer or a committed study (their results are keyed by their code, and these readouts can
change without touching them).

* :mod:`~lib.readouts.derivation_checks`: chapter 2's numerical checks of the derivation over their cases;
* :mod:`~lib.readouts.critical_sizes`: chapter 3's critical sizes of the reduced theory and their scaling fits;
* :mod:`~lib.readouts.posterior`: chapter 4's readouts of the Langevin samples (hysteresis, coverage, diagnostics);
* :mod:`~lib.readouts.staircase`, :mod:`~lib.readouts.width`, :mod:`~lib.readouts.plateau`: chapter 6's head-by-head
  order of learning, the width study's tables, and which open choice decides the linear map's plateau;
* :mod:`~lib.readouts.probes`, :mod:`~lib.readouts.speedups`: chapter 7's causality and key probes of a token mixer,
  and the speed-ups of pre-pretraining.
"""

from .critical_sizes import crossover_scaling, linear_curve_readouts, onset_scaling, sample_efficiency, softmax_scaling
from .derivation_checks import coverage_checks, marginal_checks
from .posterior import (
    coverage_readouts,
    hysteresis,
    order_parameter_deviation,
    relative_deviation,
    sampled_efficiency,
    sampled_transition,
    scaling_diagnostics,
)
from .probes import future_token_leak, key_share
from .plateau import INDEPENDENT_EXITS, plateau_sensitivity
from .speedups import prepretrain_speedups, seed_nulls
from .staircase import staircase
from .width import width_summary

__all__ = [
    "crossover_scaling",
    "linear_curve_readouts",
    "onset_scaling",
    "sample_efficiency",
    "softmax_scaling",
    "coverage_checks",
    "marginal_checks",
    "coverage_readouts",
    "hysteresis",
    "relative_deviation",
    "order_parameter_deviation",
    "sampled_efficiency",
    "sampled_transition",
    "scaling_diagnostics",
    "future_token_leak",
    "key_share",
    "prepretrain_speedups",
    "seed_nulls",
    "staircase",
    "width_summary",
    "INDEPENDENT_EXITS",
    "plateau_sensitivity",
]
