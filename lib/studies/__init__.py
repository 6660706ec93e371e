"""The committed studies: each a cached function of a frozen config, published under ``data/`` for the chapters.

A study runs a set of trainings or samplings (from :mod:`lib.train`) and returns one result object for a chapter's
figures and claims. At FAST scale and the default seeds its result is committed (``python -m lib.studies.<study>
--publish``, with its cost in ``data/manifest.json``) and the chapter loads it; at other seed offsets, or at paper
scale, the chapter computes it. :mod:`lib.studies._study` holds what they share (load or compute, publish).

Paper A: :mod:`~lib.studies.scan_replicas` (chapter 1's scans on more data sets), :mod:`~lib.studies.adam_replicas`
(chapter 4's filtered Adam fits), :mod:`~lib.studies.linear_scaling` (SGLD on the linear head over V and L).
Paper B: :mod:`~lib.studies.sparsity_study`, :mod:`~lib.studies.context_study`, :mod:`~lib.studies.width_study`,
:mod:`~lib.studies.emergence_runs` (chapter 6), :mod:`~lib.studies.mixer_tuning`, :mod:`~lib.studies.mixer_comparison`,
:mod:`~lib.studies.mixer_study` (chapter 7); :mod:`~lib.studies.plateau_calibration` (the linear map's plateau at
paper B's configuration against the choices the paper leaves open) and :mod:`~lib.studies.plateau_check` (the
paper-scale default checked at paper B's configuration on fresh seeds).
"""

from ._study import load_or_compute, publish_main
from .adam_replicas import (
    AdamReplicas,
    AdamReplicasConfig,
    adam_measures,
    adam_replicas,
    bracket_measures,
    jump_law_ratio,
    load_adam_replicas,
    theory_deviation,
)
from .context_study import (
    ContextStudy,
    ContextStudyConfig,
    bias_ratio,
    context_study,
    growth_per_doubling,
    load_context_study,
    plateau_exponent,
)
from .emergence_runs import EmergenceRunsConfig, emergence_runs, load_emergence_runs
from .linear_scaling import (
    LinearScaling,
    LinearScalingConfig,
    copy_share,
    linear_scaling,
    load_linear_scaling,
    uniform_coefficient,
)
from .mixer_comparison import PRE_CONTROL, PRE_VARIANTS, MixerComparisonConfig, load_mixer_comparison, mixer_comparison
from .mixer_study import MixerCurves, MixerStudyConfig, load_mixer_study, mixer_study
from .mixer_tuning import MixerTuningConfig, load_mixer_tuning, mean_loss_over_budget, mixer_tuning
from .plateau_calibration import (
    ARMS,
    PlateauCalibration,
    PlateauCalibrationConfig,
    load_plateau_calibration,
    plateau_calibration,
)
from .plateau_check import CHECK_SEEDS, PASS_EXITED, load_paper_check, paper_check_config
from .scan_replicas import ScanReplicas, ScanReplicasConfig, load_scan_replicas, scan_replicas, scan_summary
from .slim import slim_run
from .sparsity_study import SparsityStudy, SparsityStudyConfig, sparsity_study
from .width_study import Curves, WidthStudy, WidthStudyConfig, load_width_study, width_study

__all__ = [
    "load_or_compute",
    "publish_main",
    "AdamReplicas",
    "AdamReplicasConfig",
    "adam_measures",
    "adam_replicas",
    "bracket_measures",
    "jump_law_ratio",
    "theory_deviation",
    "load_adam_replicas",
    "ContextStudy",
    "ContextStudyConfig",
    "bias_ratio",
    "context_study",
    "growth_per_doubling",
    "load_context_study",
    "plateau_exponent",
    "EmergenceRunsConfig",
    "emergence_runs",
    "load_emergence_runs",
    "LinearScaling",
    "LinearScalingConfig",
    "copy_share",
    "linear_scaling",
    "load_linear_scaling",
    "uniform_coefficient",
    "PRE_CONTROL",
    "PRE_VARIANTS",
    "MixerComparisonConfig",
    "load_mixer_comparison",
    "mixer_comparison",
    "MixerCurves",
    "MixerStudyConfig",
    "load_mixer_study",
    "mixer_study",
    "MixerTuningConfig",
    "load_mixer_tuning",
    "mean_loss_over_budget",
    "mixer_tuning",
    "ARMS",
    "PlateauCalibration",
    "PlateauCalibrationConfig",
    "load_plateau_calibration",
    "plateau_calibration",
    "CHECK_SEEDS",
    "PASS_EXITED",
    "load_paper_check",
    "paper_check_config",
    "ScanReplicas",
    "ScanReplicasConfig",
    "load_scan_replicas",
    "scan_replicas",
    "scan_summary",
    "slim_run",
    "SparsityStudy",
    "SparsityStudyConfig",
    "sparsity_study",
    "Curves",
    "WidthStudy",
    "WidthStudyConfig",
    "load_width_study",
    "width_study",
]
