"""Seeded data generators: paper A's copy task; paper B's linear map and cellular automata; k-Dyck strings."""

from .copy import (
    CopyTask,
    check_size,
    copy_batch,
    encode,
    nested_pair_counts,
    pair_counts,
    population_counts,
    sample_tokens,
    shift_matrix,
)

__all__ = [
    "CopyTask",
    "check_size",
    "copy_batch",
    "encode",
    "nested_pair_counts",
    "pair_counts",
    "population_counts",
    "sample_tokens",
    "shift_matrix",
]
from .linear_map import (
    LinearMapTask,
    linear_map_batch,
    linear_map_mask,
    linear_map_step,
    output_queries,
    sample_map,
)
from .automaton import (
    AutomatonTask,
    automaton_batch,
    automaton_mask,
    automaton_step,
    predictable_queries,
    sample_rules,
)

__all__ += [
    "LinearMapTask",
    "linear_map_batch",
    "linear_map_mask",
    "linear_map_step",
    "output_queries",
    "sample_map",
    "AutomatonTask",
    "automaton_batch",
    "automaton_mask",
    "automaton_step",
    "predictable_queries",
    "sample_rules",
]
from .dyck import DyckTask, dyck_batch, dyck_optimal_loss, dyck_top, is_balanced

__all__ += ["DyckTask", "dyck_batch", "dyck_optimal_loss", "dyck_top", "is_balanced"]
