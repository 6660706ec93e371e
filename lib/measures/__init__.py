"""Measures: numbers read off arrays (curves, grids, groups of runs), numpy and lib.core only; one home for each.

:mod:`~lib.measures.curves` (when a curve crosses a threshold, midpoints, success rates, spreads),
:mod:`~lib.measures.grids` (steepest steps, jump fractions, minima counts, geometric and refined grids) and
:mod:`~lib.measures.comparisons` (times, ratios and comparisons over seeds, heads and architectures).
"""

from .comparisons import LINEAR_MAP_EXIT, SOLVED
from .curves import first_below, midpoint_step, row_drops, spread, success_rate
from .grids import (
    LossDrops,
    count_minima,
    geometric_grid,
    half_rise_point,
    jump_fraction,
    loss_drops,
    refine_grid,
    steepest_step,
)

__all__ = [
    "LINEAR_MAP_EXIT",
    "SOLVED",
    "first_below",
    "midpoint_step",
    "row_drops",
    "spread",
    "success_rate",
    "LossDrops",
    "count_minima",
    "geometric_grid",
    "jump_fraction",
    "loss_drops",
    "refine_grid",
    "steepest_step",
    "half_rise_point",
]
