r"""Chapter 7's comparison of the seven token mixers, as one study committed under ``data/``.

Each architecture trains at its own learning rate, the one :mod:`lib.studies.mixer_tuning` chose on a held-out seed,
on the evaluation seeds ``seeds``:

* **linear map**: one stack per architecture, every sparsity of ``tuning.lm_s`` times every seed (sparsity-major),
  ``lm_steps`` steps;
* **automaton** (``tuning.ca_N`` rule tables): one stack per architecture over the seeds, ``ca_steps`` steps;
* **pre-pretraining** (our design; paper B gives no setup): the transformer trains ``pre_steps`` steps on a stage-1
  corpus, *k*-Dyck strings (``dyck_k`` bracket types) or trajectories of another rule table (``source_seed``), then
  stage 2 (the linear map at ``s = pre_s``, or the automaton) starts from the stage-1 weights, all of them but the
  vocabulary's (``"full"``) or the token mixer's only (``"mixer"``), against scratch and a negative control whose
  "stage 1" is one step at a rate of :math:`10^{-30}` (every nonzero weight keeps its float32 value, the zero-initialised
  biases move by 1e-30: the untrained weights).

Every stack stops once all its members' held-out loss on the predictable tokens is below ``tuning.solved``. At FAST
scale this costs a chapter's whole budget, so at the default seed it is committed (``python -m
lib.studies.mixer_comparison --publish``) and chapter 7 loads it (:func:`load_mixer_comparison`); at other seed offsets
(``BOOK_SEED``) and at paper scale it is computed. The stacks are exactly those chapter 7 trained itself before
(same configs, so the same results cache entries).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.cache import Cache, cached
from ..core.progress import progress
from ..core.validate import check_size
from ..tasks.dyck import DyckTask
from ._study import load_or_compute, publish_main
from ..train.gpt_train import GPTRunConfig, Member, train_gpt
from ..measures.curves import first_below
from .mixer_tuning import MixerTuningConfig, load_mixer_tuning
from ..train.prepretrain import Transfer
from .slim import slim_run

__all__ = [
    "MixerComparisonConfig",
    "MixerComparison",
    "mixer_comparison",
    "load_mixer_comparison",
    "PRE_VARIANTS",
    "PRE_CONTROL",
    "REGENERATE",
]

REGENERATE = "python -m lib.studies.mixer_comparison --publish"

#: Stage-2 starting points of the pre-pretraining: (name, stage-1 corpus, what transfers); scratch first.
PRE_VARIANTS = (("scratch", None, None),) + tuple(
    (f"{c}, {w}", c, w) for c in ("Dyck", "automaton") for w in ("full", "attention")
)
#: The negative control, trained in the same stack as the variants (its members come last).
PRE_CONTROL = ("untrained, full", "untrained", "full")
TASKS = ("linear map", "automaton")


@dataclass(frozen=True)
class MixerComparisonConfig:
    """Settings of the comparison (the frozen config is the cache key; :meth:`fast` and :meth:`paper` are chapter 7's).

    ``tuning`` holds the architectures, tasks, model and the rate grid (and chooses the rates); ``seeds`` are the
    evaluation seeds, ``lm_steps`` and ``ca_steps`` the budgets. Pre-pretraining: ``pre_steps`` stage-1 steps,
    ``dyck_k`` bracket types, ``pre_seeds`` stage-2 seeds, sparsity ``pre_s`` of the stage-2 linear map,
    ``source_seed`` the stage-1 automaton's rule table.
    """

    tuning: MixerTuningConfig = MixerTuningConfig()
    seeds: tuple[int, ...] = (0, 1)
    lm_steps: int = 400
    ca_steps: int = 300
    pre_steps: int = 400
    dyck_k: int = 4
    pre_seeds: tuple[int, ...] = (0, 1, 2)
    pre_s: int = 2
    source_seed: int = 7

    def __post_init__(self) -> None:
        if not isinstance(self.tuning, MixerTuningConfig):
            raise ValueError(f"tuning must be a MixerTuningConfig, got {type(self.tuning).__name__}")
        for name in ("seeds", "pre_seeds"):
            value = getattr(self, name)
            if not value or not isinstance(value, tuple) or len(set(value)) != len(value):
                raise ValueError(f"{name} must be a non-empty tuple of distinct seeds, got {value!r}")
            for k in value:
                check_size(name, k, 0)
        for name in ("lm_steps", "ca_steps", "pre_steps", "dyck_k"):
            check_size(name, getattr(self, name), 1)
        check_size("source_seed", self.source_seed, 0)
        if not 1 <= self.pre_s <= self.tuning.lm_S:
            raise ValueError(f"pre_s must be in [1, lm_S={self.tuning.lm_S}], got {self.pre_s!r}")
        if "attention" not in self.tuning.archs:
            raise ValueError("the comparison needs the transformer ('attention') among tuning.archs")

    @classmethod
    def fast(cls) -> "MixerComparisonConfig":
        """Chapter 7 at FAST scale (the defaults)."""
        return cls()

    @classmethod
    def paper(cls) -> "MixerComparisonConfig":
        """Chapter 7 at paper scale: the paper-scale tuning, 3 seeds, 10,000 steps; pre-pretraining 3,000 steps."""
        return cls(
            tuning=MixerTuningConfig.paper(),
            seeds=(0, 1, 2),
            lm_steps=10_000,
            ca_steps=10_000,
            pre_steps=3000,
            dyck_k=8,
            pre_s=5,
        )

    def budget(self, task: str) -> int:
        """The step budget of ``task``."""
        return self.lm_steps if task == "linear map" else self.ca_steps

    def stack(self, members, arch: str, task: str, lr: float) -> GPTRunConfig:
        """One evaluation stack of ``arch`` on ``task``'s model and budget, at the stack rate ``lr``."""
        t = self.tuning
        return GPTRunConfig(
            members=tuple(members),
            mixer=arch,
            steps=self.budget(task),
            lr=lr,
            stop_below=t.solved,
            eval_seed=t.eval_seed,
            **t.model(task),
        )

    def run_config(self, arch: str, task: str, lr: float) -> GPTRunConfig:
        """The evaluation stack of ``arch`` on ``task`` at rate ``lr`` (linear map: sparsity-major, seed-minor)."""
        t = self.tuning
        if task == "linear map":
            members = [Member(t.lm_task(s), seed=k, lr=lr) for s in t.lm_s for k in self.seeds]
        elif task == "automaton":
            members = [Member(t.ca_task(), seed=k, lr=lr) for k in self.seeds]
        else:
            raise ValueError(f"task must be 'linear map' or 'automaton', got {task!r}")
        return self.stack(members, arch, task, lr)

    def dyck(self) -> DyckTask:
        """The stage-1 Dyck corpus, as long as the longer stage-2 sequence."""
        t = self.tuning
        return DyckTask(k=self.dyck_k, length=max(2 * t.lm_S, t.ca_S * t.ca_T))

    def stage2_task(self, task: str):
        """The stage-2 task of the pre-pretraining."""
        return self.tuning.lm_task(self.pre_s) if task == "linear map" else self.tuning.ca_task()

    def stage1_configs(self, lr: float) -> dict:
        """``{(corpus, stage-2 task): GPTRunConfig}``: the stage-1 stacks (the stage-2 task's architecture) at ``lr``."""
        out = {}
        for task in TASKS:
            model = self.tuning.model(task)
            for corpus, source in (("Dyck", self.dyck()), ("automaton", self.tuning.ca_task(self.source_seed))):
                out[corpus, task] = GPTRunConfig(
                    members=(Member(source, seed=self.pre_seeds[0]),), steps=self.pre_steps, lr=lr, **model
                )
            out["untrained", task] = GPTRunConfig(
                members=(Member(self.dyck(), seed=self.pre_seeds[0]),), steps=1, lr=1e-30, **model
            )
        return out

    def stage2_config(self, task: str, lr: float, stage1: dict) -> GPTRunConfig:
        """The stage-2 stack of ``task``: every variant of :data:`PRE_VARIANTS` then :data:`PRE_CONTROL`, seed-minor."""
        members = []
        for _, corpus, what in PRE_VARIANTS + (PRE_CONTROL,):
            init = None if corpus is None else Transfer(stage1[corpus, task], 0, "full" if what == "full" else "mixer")
            members += [Member(self.stage2_task(task), seed=k, lr=lr, init=init) for k in self.pre_seeds]
        return self.stack(members, "attention", task, lr)


@dataclass(frozen=True)
class MixerComparison:
    """The runs of the comparison.

    ``best_lr``: ``{(task, arch): rate}`` from the tuning; ``lm``, ``ca``: ``{arch: GPTRun}``; ``stage1``:
    ``{(corpus, task): GPTRun}``; ``pre``: ``{task: GPTRun}`` (members variant-major as in :data:`PRE_VARIANTS`,
    the control last). Every run is a :func:`~lib.studies.slim.slim_run` copy: loss curves only, and for the linear
    map the final weights of the first member (smallest sparsity, first seed), the one chapter 7 maps.
    """

    config: MixerComparisonConfig
    best_lr: dict
    lm: dict
    ca: dict
    stage1: dict
    pre: dict

    def lm_curves(self, arch: str, i: int) -> np.ndarray:
        """``(K, seeds)`` held-out output-bit loss of ``arch`` at the ``i``-th sparsity."""
        n = len(self.config.seeds)
        return self.lm[arch].pred_loss[:, i * n : (i + 1) * n]

    def lm_times(self, arch: str, threshold: float) -> np.ndarray:
        """``(sparsities, seeds)`` first evaluated step below ``threshold`` (``inf``: not within the budget)."""
        run = self.lm[arch]
        return first_below(run.steps, run.pred_loss, threshold).reshape(len(self.config.tuning.lm_s), -1)

    def pre_times(self, task: str, threshold: float) -> np.ndarray:
        """``(variants + control, seeds)`` first step of stage 2 below ``threshold`` (``inf``: not within the budget)."""
        run = self.pre[task]
        return first_below(run.steps, run.pred_loss, threshold).reshape(len(PRE_VARIANTS) + 1, -1)


@cached
def mixer_comparison(config: MixerComparisonConfig) -> MixerComparison:
    """Train every stack of ``config`` (module docstring) at the rates the tuning chooses."""
    best_lr = load_mixer_tuning(config.tuning, compute=True).best_lr
    lm, ca, first = {}, {}, slice(0, 1)
    for arch in progress(config.tuning.archs, desc="mixer comparison"):
        run = train_gpt(config.run_config(arch, "linear map", best_lr["linear map", arch]), desc=f"{arch}: linear map")
        lm[arch] = slim_run(run, members=first)  # the first member's weights: smallest sparsity, first seed
        run = train_gpt(config.run_config(arch, "automaton", best_lr["automaton", arch]), desc=f"{arch}: automaton")
        ca[arch] = slim_run(run)
    stage1_cfg = config.stage1_configs(best_lr["automaton", "attention"])
    stage1 = {key: slim_run(train_gpt(cfg, desc=f"stage 1: {key[0]}")) for key, cfg in stage1_cfg.items()}
    pre = {
        task: slim_run(
            train_gpt(config.stage2_config(task, best_lr[task, "attention"], stage1_cfg), desc=f"stage 2: {task}")
        )
        for task in TASKS
    }
    return MixerComparison(config=config, best_lr=best_lr, lm=lm, ca=ca, stage1=stage1, pre=pre)


def load_mixer_comparison(
    config: MixerComparisonConfig, *, compute: bool = False, cache: Cache | None = None
) -> MixerComparison:
    """The committed comparison for ``config`` (verified against the code that made it), else computed if ``compute``.

    Without a committed result for this config and code, and without ``compute``, a ``RuntimeError`` names the
    command that regenerates it.
    """
    if not isinstance(config, MixerComparisonConfig):
        raise TypeError(f"config must be a MixerComparisonConfig, got {type(config).__name__}")
    return load_or_compute(
        mixer_comparison, config, compute=compute, regenerate=REGENERATE, cost="about 3 CPU-minutes", cache=cache
    )


if __name__ == "__main__":
    publish_main(
        "lib.studies.mixer_comparison",
        "mixer_comparison",
        lambda m: m.MixerComparisonConfig.fast(),
        REGENERATE,
        "Run chapter 7's comparison of the seven token mixers and optionally commit it.",
    )
