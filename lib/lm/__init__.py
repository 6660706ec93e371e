"""Paper B in language models: model suites (PolyPythias from the hub, or the offline mini-suite in the same
layout), the four tasks as prompt sets, points of emergence by bisection over checkpoints, and attention-pattern
patching through transformers' ``AttentionInterface``.

Modules: :mod:`~lib.lm.suite` (sizes × seeds × revisions, hub/local loading), :mod:`~lib.lm.hubcache` (any local
suite written as a hub cache in Pythia's layout, for the hub code offline), :mod:`~lib.lm.english` and
:mod:`~lib.lm.bpe` (English prose and a byte-level BPE of Pythia's kind learned on it), :mod:`~lib.lm.tokenizer` and
:mod:`~lib.lm.corpus` (the mini-suite's vocabulary and synthetic corpus), :mod:`~lib.lm.minisuite` (the resumable
build command), :mod:`~lib.lm.prompts`, :mod:`~lib.lm.emergence`, :mod:`~lib.lm.onset` (emergence and abruptness on
p(target), with bisection's bracket verified), :mod:`~lib.lm.patching`, :mod:`~lib.lm.patch_stats` (held-out head
ranking, capped K, recovery with its interval and guard), :mod:`~lib.lm.tasks` (the four tasks built one way for every byte-level BPE),
:mod:`~lib.lm.study` and :mod:`~lib.lm.study_results` (the per-run analysis of a BPE suite or the hub, cached per run, published run by run),
:mod:`~lib.lm.study_report` (chapter 5's readings of it), :mod:`~lib.lm.heads` (previous-token and induction scores)
and :mod:`~lib.lm.results` (committed files and the exported checkpoint pair).
"""

from .corpus import CorpusConfig, CorpusSampler
from .emergence import (
    BisectResult,
    abruptness,
    bisect_emergence,
    bisect_first_solved,
    emergence_steps,
    first_stable_solved,
    monotonicity,
    seed_emergence,
)
from .bpe import BPEConfig, train_bpe
from .heads import head_scores
from .hubcache import write_hub_cache
from .minisuite import (
    BPE_SUITE,
    MINISUITE,
    SCALES,
    TINY_SUITE,
    MiniSuiteConfig,
    ModelSize,
    TrainConfig,
    build_suite,
    checkpoint_schedule,
)
from .patching import (
    PatchResult,
    all_single_head_logits,
    make_patchable,
    patch_heads,
    patched_last_logits,
    record_patterns,
    register_patchable,
    single_head_masks,
    target_probs,
    topk_masks,
)
from .onset import THETA, bisect_onset, max_rise, onset_agreement, ramp_rise, rise_null, smooth, stable_onset
from .patch_stats import MIN_GAIN, Recovery, capped_ks, rank_heads, recovery, split_prompts
from .study import RunKey, RunPatch, RunResult, StudyConfig, analyze_run, evaluate_prompts, run_key
from .study_report import (
    PatchSummary,
    RiseSummary,
    RunPoints,
    StudyTable,
    flip_lead,
    patch_summary,
    rise_summary,
    run_points,
    study_table,
)
from .study_results import (
    BPE_DATA,
    BPE_PAIR,
    COLAB_SELECTION,
    LivePatch,
    committed_runs,
    export_study_pair,
    live_patch,
    open_study,
    pair_run,
    publish_runs,
    study_run,
    study_source,
    study_suite,
)
from .tasks import PERIODS, build_prompts, task_pools
from .tasks import TASK_TITLES as STUDY_TASK_TITLES
from .tasks import TASKS as STUDY_TASKS
from .prompts import PAPER_EXAMPLE, TASK_TITLES, TASKS, PromptSet, prompt_set
from .suite import (
    PYTHIA_SIZES,
    CheckpointError,
    HubSuite,
    HubUnreachable,
    LocalSuite,
    Suite,
    SuiteIndexError,
    SuiteWarning,
    check_transformers,
    hub_cache_dir,
    hub_offline,
    hub_reachable,
    open_suite,
    pythia_steps,
)
from .tokenizer import VocabConfig, build_tokenizer, build_vocab, single_token_id

__all__ = [
    # suites
    "Suite",
    "LocalSuite",
    "HubSuite",
    "open_suite",
    "hub_reachable",
    "HubUnreachable",
    "SuiteIndexError",
    "CheckpointError",
    "SuiteWarning",
    "PYTHIA_SIZES",
    "pythia_steps",
    "hub_offline",
    "hub_cache_dir",
    "check_transformers",
    "write_hub_cache",
    # the mini-suite
    "VocabConfig",
    "build_vocab",
    "build_tokenizer",
    "single_token_id",
    "BPEConfig",
    "train_bpe",
    "CorpusConfig",
    "CorpusSampler",
    "ModelSize",
    "TrainConfig",
    "MiniSuiteConfig",
    "MINISUITE",
    "TINY_SUITE",
    "BPE_SUITE",
    "SCALES",
    "checkpoint_schedule",
    "build_suite",
    # tasks
    "TASKS",
    "TASK_TITLES",
    "PAPER_EXAMPLE",
    "PromptSet",
    "prompt_set",
    "build_prompts",
    "task_pools",
    # emergence
    "first_stable_solved",
    "bisect_first_solved",
    "BisectResult",
    "bisect_emergence",
    "monotonicity",
    "emergence_steps",
    "seed_emergence",
    "abruptness",
    "THETA",
    "smooth",
    "stable_onset",
    "bisect_onset",
    "onset_agreement",
    "max_rise",
    "ramp_rise",
    "rise_null",
    # patching
    "register_patchable",
    "make_patchable",
    "record_patterns",
    "patched_last_logits",
    "all_single_head_logits",
    "single_head_masks",
    "topk_masks",
    "target_probs",
    "PatchResult",
    "patch_heads",
    "head_scores",
    "MIN_GAIN",
    "split_prompts",
    "rank_heads",
    "capped_ks",
    "Recovery",
    "recovery",
    # committed files
    "RunPatch",
    "evaluate_prompts",
    # the per-run study (BPE suites and the hub)
    "StudyConfig",
    "RunKey",
    "RunResult",
    "run_key",
    "analyze_run",
    "study_run",
    "study_suite",
    "STUDY_TASKS",
    "STUDY_TASK_TITLES",
    "PERIODS",
    "publish_runs",
    "committed_runs",
    "open_study",
    "study_source",
    "pair_run",
    "export_study_pair",
    "live_patch",
    "LivePatch",
    "BPE_DATA",
    "BPE_PAIR",
    "COLAB_SELECTION",
    # chapter 5's readings of the per-run study
    "StudyTable",
    "study_table",
    "RunPoints",
    "run_points",
    "flip_lead",
    "RiseSummary",
    "rise_summary",
    "PatchSummary",
    "patch_summary",
]
