"""The book's engine: tasks, models, solvers and trainers, plus the glue chapters use.

Chapters import only what is listed here (``import lib``), so the public API is this file. Two subpackages are
imported on their own because of their weight: ``import lib.theory`` (paper A's theory) and ``import lib.lm``
(language models; it imports transformers).
"""

from . import models, plots, tasks, train
from .book import FAST, BookContext, context, finish, glue, interact, setup, widgets_enabled
from .cache import Cache, CacheWarning, cached, default_cache, publish, verify_manifest
from .env import DATA_DIR, ROOT, env_flag
from .claims import (
    CLAIM_KEY,
    REGISTRY,
    STATUSES,
    ClaimRecord,
    at_least,
    at_most,
    between,
    claim,
    collect_claims,
    is_true,
    ledger_markdown,
    within,
)
from .models import GPT, CopyHead, GPTConfig, HookPoint, attention, capture
from .plots import (action_landscape, action_landscape_figure, attention_heatmap, filtered_at, legend_for_runs,
                    mark_interval, plot_sweep, scan_figure, scan_state, ternary_panel)
from .progress import progress
from .seeds import reseed, seed, seed_offset, seeds
from .sweep import SweepError, SweepResult, run_sweep
from .tasks import (
    AutomatonTask,
    CopyTask,
    LinearMapTask,
    automaton_mask,
    copy_batch,
    linear_map_mask,
    pair_counts,
    population_counts,
    sample_map,
    sample_rules,
    sample_tokens,
    shift_matrix,
)
from .train import (
    AdamConfig,
    CopyMapConfig,
    CopyMapResult,
    CopyPrior,
    CopySGLDConfig,
    CopySGLDResult,
    GPTRun,
    GPTRunConfig,
    Member,
    SGLDConfig,
    TransitionScan,
    attention_stats,
    count_minima,
    effective_sample_size,
    first_below,
    fit_copy_map,
    geometric_grid,
    jump_fraction,
    loss_drops,
    midpoint_step,
    optimal_readout,
    plane_coefficients,
    population_loss,
    refine_grid,
    row_drops,
    sample_copy_posterior,
    scan_transition,
    split_rhat,
    spread,
    steepest_step,
    success_rate,
    target_attention,
    train_ensemble,
    train_gpt,
)

__all__ = [
    # book glue
    "ROOT", "DATA_DIR", "FAST", "BookContext", "setup", "context", "env_flag", "glue", "finish", "progress",
    "seed", "seeds", "reseed", "seed_offset",
    # results cache and sweeps
    "Cache", "CacheWarning", "cached", "default_cache", "publish", "verify_manifest",
    "run_sweep", "SweepResult", "SweepError",
    # claims ledger
    "CLAIM_KEY", "STATUSES", "REGISTRY", "ClaimRecord", "claim", "between", "at_least", "at_most", "within",
    "is_true", "collect_claims", "ledger_markdown",
    # tasks
    "CopyTask", "sample_tokens", "copy_batch", "pair_counts", "population_counts", "shift_matrix",
    # models
    "CopyHead", "HookPoint", "attention", "capture",
    # training
    "AdamConfig", "CopyPrior", "CopyMapConfig", "CopyMapResult", "fit_copy_map", "train_ensemble",
    "population_loss", "target_attention", "optimal_readout",
    "SGLDConfig", "CopySGLDConfig", "CopySGLDResult", "sample_copy_posterior", "plane_coefficients", "split_rhat",
    "effective_sample_size",
    # transition scans and metrics
    "TransitionScan", "scan_transition", "geometric_grid", "refine_grid", "steepest_step", "jump_fraction", "count_minima", "loss_drops",
    # paper B's synthetic tasks (chapter 6): tasks, a stacked GPT, its training and metrics
    "LinearMapTask", "AutomatonTask", "sample_map", "sample_rules", "linear_map_mask", "automaton_mask",
    "GPT", "GPTConfig", "GPTRun", "GPTRunConfig", "Member", "train_gpt", "attention_stats", "first_below",
    "midpoint_step", "row_drops", "spread", "success_rate",
    # plots
    "attention_heatmap", "plot_sweep", "mark_interval", "legend_for_runs", "action_landscape", "action_landscape_figure",
    "filtered_at", "scan_figure", "scan_state", "ternary_panel",
    # subpackages
    "models", "plots", "tasks", "train",
]

# paper B's token mixers, Dyck strings and pre-pretraining (chapter 7)
from .models import ARCHITECTURES, LABELS, MIXERS, get_mixer, input_attribution, input_sensitivity
from .tasks import DyckTask, dyck_optimal_loss
from .train import Transfer

__all__ += ["ARCHITECTURES", "LABELS", "MIXERS", "get_mixer", "input_attribution", "input_sensitivity", "DyckTask",
            "dyck_optimal_loss", "Transfer"]

# chapter 6's committed width and depth study
from .train import MixerStudyConfig, WidthStudyConfig, load_mixer_study, load_width_study
from .train.mixer_tuning import MixerTuning, MixerTuningConfig, load_mixer_tuning, mean_loss_over_budget

__all__ += ["MixerStudyConfig", "WidthStudyConfig", "load_mixer_study", "load_width_study"]
__all__ += ["MixerTuning", "MixerTuningConfig", "load_mixer_tuning", "mean_loss_over_budget"]

# chapter 7's committed comparison of the seven mixers (and its pre-pretraining)
from .train.mixer_comparison import (PRE_CONTROL, PRE_VARIANTS, MixerComparison, MixerComparisonConfig,
                                     load_mixer_comparison)

__all__ += ["PRE_CONTROL", "PRE_VARIANTS", "MixerComparison", "MixerComparisonConfig", "load_mixer_comparison"]

# chapter 6's committed transformer runs outside the context sweep
from .train.emergence_runs import EmergenceRuns, EmergenceRunsConfig, load_emergence_runs

__all__ += ["EmergenceRuns", "EmergenceRunsConfig", "load_emergence_runs"]

# uncertainty over seeds, and chapter 6's sparsity sweep as a study
from .stats import (Interval, bootstrap_interval, coefficient_of_variation, group_bootstrap_interval, halves_difference,
                    halves_ratio, ratio_interval)
from .train import SparsityStudy, SparsityStudyConfig, sparsity_study

__all__ += ["Interval", "bootstrap_interval", "coefficient_of_variation", "group_bootstrap_interval", "halves_difference", "halves_ratio", "ratio_interval", "SparsityStudy", "SparsityStudyConfig", "sparsity_study"]

# chapter 4's committed study of where the linear head's transitions lie, and its exponent fits
from .train import (LinearScalingConfig, load_linear_scaling, onset_calibration, scaling_exponents, scaling_points,
                    theory_exponents, theory_points)

__all__ += ["LinearScalingConfig", "load_linear_scaling", "onset_calibration", "scaling_exponents", "scaling_points",
            "theory_exponents", "theory_points"]

# chapter 1's scans repeated on four more data sets (a committed study at the default seed)
from .train import ScanReplicasConfig, load_scan_replicas

__all__ += ["ScanReplicasConfig", "load_scan_replicas"]

# chapter 4's Adam-against-theory measures, and its fits repeated on four more data sets (committed at the default seed)
from .train import AdamReplicasConfig, adam_measures, bracket_measures, load_adam_replicas

__all__ += ["AdamReplicasConfig", "adam_measures", "bracket_measures", "load_adam_replicas"]

# measures read off seed-averaged training curves (seed indices as arguments, for the bootstrap)
from .measures import (LINEAR_MAP_EXIT, SOLVED, archs_beating, automaton_exit, curve_time_ratio, heads_vs_head_size,
                       fluctuation, input_bit_loss, mean_curve_time, relaxation_times, seed_spread)
from .train.copy_dynamics import CopyDynamicsConfig, train_copy_dynamics

__all__ += ["LINEAR_MAP_EXIT", "SOLVED", "archs_beating", "automaton_exit", "curve_time_ratio", "heads_vs_head_size",
            "fluctuation", "input_bit_loss", "mean_curve_time", "relaxation_times", "seed_spread"]
__all__ += ["CopyDynamicsConfig", "train_copy_dynamics"]

# chapter 6's context sweep of the automaton, read again by chapter 8 (a committed study at the default seed)
from .train import ContextStudyConfig, bias_ratio, growth_per_doubling, load_context_study, plateau_exponent

__all__ += ["ContextStudyConfig", "bias_ratio", "growth_per_doubling", "load_context_study", "plateau_exponent"]
