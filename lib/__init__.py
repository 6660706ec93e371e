"""The book's engine, as the chapters see it: every name here is one a chapter uses (``tests/test_chapter_rules.py``).

Chapters import only ``lib`` (this file) and two subpackages imported on their own because of their weight:
``import lib.theory`` (paper A's theory) and ``import lib.lm`` (language models; it imports transformers).
Everything else (the results cache, sweeps, the claim criteria, trainers' internals) is imported from its module:
``from lib.core.cache import Cache, publish``, ``from lib.studies._sweep import run_sweep``,
``from lib.claims import at_least``.
"""

from . import models, studies, tasks, train  # noqa: F401 (chapters train through lib.studies; they read lib.train's code)

# book glue: scale, seeds, glued values, claims, widgets
from .book import export_figure, finish, glue, glue_all, interact, setup, show_source
from .claims import REGISTRY, claim, condition_interval, meets, part_holds, parts_hold
from .core.seeds import reseed, seed, seed_offset

__all__ = [
    "setup",
    "export_figure",
    "show_source",
    "glue",
    "glue_all",
    "finish",
    "interact",
    "claim",
    "parts_hold",
    "part_holds",
    "meets",
    "condition_interval",
    "REGISTRY",
    "seed",
    "seed_offset",
    "reseed",
]

# paper A: the copy task, the copy head, its objective, MAP fitting, Langevin sampling, transition scans (ch. 1-4)
from .models import CopyHead, capture
from .tasks import CopyTask, copy_batch, pair_counts, population_counts, sample_tokens, shift_matrix
from .train import (
    AdamConfig,
    CopyPrior,
    PosteriorSamplingPlan,
    SGLDConfig,
    geometric_grid,
    loss_drops,
    optimal_readout,
    plane_coefficients,
    population_loss,
    sample_copy_posterior,
    scan_transition,
    target_attention,
)

__all__ += [
    "CopyTask",
    "sample_tokens",
    "copy_batch",
    "pair_counts",
    "population_counts",
    "shift_matrix",
    "CopyHead",
    "capture",
    "AdamConfig",
    "CopyPrior",
    "population_loss",
    "target_attention",
    "optimal_readout",
    "SGLDConfig",
    "PosteriorSamplingPlan",
    "sample_copy_posterior",
    "plane_coefficients",
    "scan_transition",
    "geometric_grid",
    "loss_drops",
]

# paper A's studies: chapter 1's scans on more data sets, chapter 4's Adam fits and the linear head's scaling
from .studies import (
    AdamReplicasConfig,
    LinearScalingConfig,
    ScanReplicasConfig,
    adam_measures,
    bracket_measures,
    jump_law_ratio,
    load_adam_replicas,
    load_linear_scaling,
    load_scan_replicas,
    theory_deviation,
)
from .train import onset_calibration, scaling_exponents, scaling_points, theory_exponents, theory_points
from .train.copy_dynamics import CopyDynamicsConfig, size_grid, train_copy_dynamics, train_copy_heads
from .train.scaling_fits import fit_power_laws  # chapter 3: a set of power-law fits in one call

__all__ += [
    "ScanReplicasConfig",
    "load_scan_replicas",
    "AdamReplicasConfig",
    "adam_measures",
    "bracket_measures",
    "jump_law_ratio",
    "theory_deviation",
    "load_adam_replicas",
    "LinearScalingConfig",
    "load_linear_scaling",
    "onset_calibration",
    "scaling_exponents",
    "scaling_points",
    "theory_exponents",
    "theory_points",
    "CopyDynamicsConfig",
    "train_copy_dynamics",
    "marginal_checks",
    "coverage_checks",
    "fit_power_laws",
    "size_grid",
    "train_copy_heads",
    "linear_curve_readouts",
    "softmax_scaling",
    "onset_scaling",
    "crossover_scaling",
    "sample_efficiency",
]

# paper B: the synthetic tasks, the stacked GPT and its seven token mixers, training, pattern metrics (ch. 6-7)
from .models import ARCHITECTURES, GPT, LABELS, GPTConfig, input_attribution, input_sensitivity
from .tasks import (
    AutomatonTask,
    LinearMapTask,
    automaton_mask,
    dyck_optimal_loss,
    linear_map_mask,
    sample_map,
    sample_rules,
)
from .train import GPTRunConfig, Member, first_below, midpoint_step, spread, train_gpt

__all__ += [
    "LinearMapTask",
    "AutomatonTask",
    "sample_map",
    "sample_rules",
    "linear_map_mask",
    "automaton_mask",
    "dyck_optimal_loss",
    "GPT",
    "GPTConfig",
    "ARCHITECTURES",
    "LABELS",
    "input_attribution",
    "input_sensitivity",
    "GPTRunConfig",
    "Member",
    "train_gpt",
    "first_below",
    "midpoint_step",
    "spread",
]

# paper B's committed studies (chapters 6-8): sweeps, runs, the mixers' tuning and comparison
from .studies import (
    PRE_VARIANTS,
    ContextStudyConfig,
    EmergenceRunsConfig,
    MixerComparisonConfig,
    MixerStudyConfig,
    SparsityStudyConfig,
    WidthStudyConfig,
    bias_ratio,
    growth_per_doubling,
    load_context_study,
    load_emergence_runs,
    load_mixer_comparison,
    load_mixer_study,
    load_mixer_tuning,
    load_width_study,
    mean_loss_over_budget,
    plateau_exponent,
    sparsity_study,
)
from .studies import PlateauCalibrationConfig, load_plateau_calibration  # the linear map's plateau per open choice
from .studies import PASS_EXITED, load_paper_check  # the paper-scale default checked at paper B's configuration

__all__ += [
    "SparsityStudyConfig",
    "sparsity_study",
    "ContextStudyConfig",
    "load_context_study",
    "bias_ratio",
    "growth_per_doubling",
    "plateau_exponent",
    "WidthStudyConfig",
    "load_width_study",
    "EmergenceRunsConfig",
    "load_emergence_runs",
    "MixerStudyConfig",
    "load_mixer_study",
    "load_mixer_tuning",
    "mean_loss_over_budget",
    "MixerComparisonConfig",
    "load_mixer_comparison",
    "PRE_VARIANTS",
    "PlateauCalibrationConfig",
    "load_plateau_calibration",
    "load_paper_check",
    "PASS_EXITED",
]

# paper-scale studies committed under data/paper/ (lib.studies.paper): what chapters show beside their FAST runs
from .readouts.paper import calibration_costs, heads_grid, mixer_view
from .studies.paper import paper_claim, study_progress, study_record
from .studies.paper.heads import HEADS_TIE
from .studies.paper.seeds import CALIBRATION_BOUNDS

__all__ += [
    "study_record",
    "paper_claim",
    "study_progress",
    "HEADS_TIE",
    "heads_grid",
    "mixer_view",
    "calibration_costs",
    "CALIBRATION_BOUNDS",
]


# measures read off training curves, and intervals over seeds (seed indices as arguments, for the bootstrap)
from .measures.comparisons import (
    LINEAR_MAP_EXIT,
    SOLVED,
    archs_beating,
    automaton_exit,
    curve_time_ratio,
    fluctuation,
    group_time_ratios,
    halves_time_ratio,
    heads_vs_head_size,
    input_bit_loss,
    mean_curve_time,
    relaxation_times,
    slowing_factors,
)
from .core.intervals import bootstrap_interval, group_bootstrap_interval  # NaN on a smoke run's cut data
from .core.stats import halves_ratio
from .core.intervals import censored_ratio_interval

__all__ += [
    "LINEAR_MAP_EXIT",
    "SOLVED",
    "automaton_exit",
    "mean_curve_time",
    "curve_time_ratio",
    "heads_vs_head_size",
    "archs_beating",
    "input_bit_loss",
    "relaxation_times",
    "slowing_factors",
    "fluctuation",
    "bootstrap_interval",
    "group_bootstrap_interval",
    "halves_ratio",
    "censored_ratio_interval",
    "group_time_ratios",
    "halves_time_ratio",
    "future_token_leak",
    "key_share",
    "prepretrain_speedups",
    "seed_nulls",
]

# chapter 6's measures of the emergence runs' comparisons (the staircase and width tables are in lib.readouts)
from .measures.comparisons import (
    emergence_by_bias,
    fixed_width_heads,
    head_size_plateaus,
    heads_halves_control,
    sparsity_medians,
)
from .core.stats import halves_interval, interval_score
from .tasks.linear_map import solved_loss

__all__ += [
    "staircase",
    "width_summary",
    "INDEPENDENT_EXITS",
    "plateau_sensitivity",
    "emergence_by_bias",
    "fixed_width_heads",
    "head_size_plateaus",
    "heads_halves_control",
    "sparsity_medians",
    "halves_interval",
    "interval_score",
    "solved_loss",
]

# chapter 4's fluctuation peak (its readouts of the Langevin samples are in lib.readouts)
from .measures.comparisons import growth_before, peak_ratio, spread_at_widest
from .measures.grids import half_rise_point  # chapter 4: where a filtered curve first reaches half its largest value

__all__ += [
    "half_rise_point",
    "hysteresis",
    "sampled_efficiency",
    "sampled_transition",
    "relative_deviation",
    "order_parameter_deviation",
    "coverage_readouts",
    "scaling_diagnostics",
    "peak_ratio",
    "growth_before",
    "spread_at_widest",
]

# what chapters read off theory curves and committed studies (lib.readouts): one call per argument, no training
from .readouts import (
    coverage_checks,
    coverage_readouts,
    crossover_scaling,
    future_token_leak,
    hysteresis,
    key_share,
    linear_curve_readouts,
    marginal_checks,
    onset_scaling,
    order_parameter_deviation,
    prepretrain_speedups,
    relative_deviation,
    seed_nulls,
    sample_efficiency,
    sampled_efficiency,
    sampled_transition,
    scaling_diagnostics,
    softmax_scaling,
    staircase,
    width_summary,
    INDEPENDENT_EXITS,
    plateau_sensitivity,
)

# figures
from .book.plots import (
    action_landscape,
    action_landscape_figure,
    attention_heatmap,
    filtered_at,
    jump_figure,
    legend_for_runs,
    plot_sweep,
    relative_to,
    scan_figure,
    scan_state,
    ternary_panel,
)

__all__ += [
    "attention_heatmap",
    "plot_sweep",
    "legend_for_runs",
    "scan_figure",
    "jump_figure",
    "filtered_at",
    "scan_state",
    "ternary_panel",
    "relative_to",
    "action_landscape",
    "action_landscape_figure",
    "models",
    "train",
    "tasks",
]
