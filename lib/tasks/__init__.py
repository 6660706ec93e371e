"""Seeded data generators. Paper A's copy task now; paper B's linear map, cellular automata and Dyck to come."""

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
