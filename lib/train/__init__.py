"""Training: the batched ensemble trainer, paper A's MAP fitting and SGLD, paper B's GPT trainer (the committed
studies that use them are in :mod:`lib.studies`)."""

from .copy_map import CopyMapConfig, CopyMapResult, fit_copy_map
from ..models.copy_objective import (
    CopyPrior,
    copy_objective,
    copy_sq_error,
    optimal_readout,
    population_loss,
    readout_moments,
    target_attention,
)
from .copy_sgld import CopySGLDConfig, CopySGLDResult, PosteriorSamplingPlan, plane_coefficients, sample_copy_posterior
from .ensemble import AdamConfig, Checkpoint, EnsembleRun, member_grad_norm, train_ensemble, train_ensemble_resumable
from .sgld import LangevinRun, SGLDConfig, effective_sample_size, langevin, split_rhat
from ..measures.grids import (
    LossDrops,
    count_minima,
    geometric_grid,
    jump_fraction,
    loss_drops,
    refine_grid,
    steepest_step,
)  # re-exported: lib.measures is their home
from .scan import TransitionScan, scan_transition

__all__ = [
    "CopySGLDConfig",
    "CopySGLDResult",
    "PosteriorSamplingPlan",
    "plane_coefficients",
    "sample_copy_posterior",
    "SGLDConfig",
    "LangevinRun",
    "langevin",
    "split_rhat",
    "effective_sample_size",
    "AdamConfig",
    "CopyMapConfig",
    "CopyMapResult",
    "CopyPrior",
    "EnsembleRun",
    "copy_objective",
    "copy_sq_error",
    "fit_copy_map",
    "optimal_readout",
    "readout_moments",
    "scan_transition",
    "TransitionScan",
    "count_minima",
    "geometric_grid",
    "jump_fraction",
    "loss_drops",
    "LossDrops",
    "refine_grid",
    "steepest_step",
    "member_grad_norm",
    "population_loss",
    "target_attention",
    "train_ensemble",
    "train_ensemble_resumable",
    "Checkpoint",
]
from .gpt_train import GPTRun, GPTRunConfig, Member, run_members, task_parts, train_gpt
from .attention_stats import attention_stats
from ..measures.curves import (
    first_below,
    midpoint_step,
    row_drops,
    spread,
    success_rate,
)  # re-exported: lib.measures is their home

__all__ += [
    "GPTRun",
    "GPTRunConfig",
    "Member",
    "run_members",
    "task_parts",
    "train_gpt",
    "attention_stats",
    "first_below",
    "midpoint_step",
    "row_drops",
    "spread",
    "success_rate",
]
from .prepretrain import TRANSFER_KINDS, Transfer, apply_transfers, transferred_names

__all__ += ["TRANSFER_KINDS", "Transfer", "apply_transfers", "transferred_names"]
from .scaling_fits import (
    crossover_point,
    fit_exponents,
    onset_calibration,
    onset_point,
    scaling_exponents,
    scaling_points,
    theory_exponents,
    theory_points,
)

__all__ += [
    "crossover_point",
    "fit_exponents",
    "onset_calibration",
    "onset_point",
    "scaling_exponents",
    "scaling_points",
    "theory_exponents",
    "theory_points",
]
from .fast_train import FastRunConfig, run_fast, train_fast

__all__ += ["FastRunConfig", "run_fast", "train_fast"]
