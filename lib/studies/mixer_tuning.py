r"""Chapter 7's learning-rate choice for the seven token mixers, as one study committed under ``data/``.

Each architecture trains, on a held-out seed (its own initialisation and data stream; the maps and the rule table
are the task's), at every rate of ``lrs`` on the linear map (every sparsity of ``lm_s``) and on the automaton. The
score of a rate is the mean held-out loss on the predictable tokens over the tuning budget,

.. math:: \bar\ell(\eta) = \frac{1}{K}\sum_{k=0}^{K-1} \ell_k(\eta), \qquad K = \lfloor T_\text{tune} / \Delta \rfloor + 1,

(``Δ = eval_every``; a stack whose members all stopped early, solved, keeps its last value until the budget), averaged
over the sparsities for the linear map; the chosen rate minimises it. Lower means learned sooner or better.

At FAST scale this costs about 2 CPU-minutes, most of a chapter's budget, for a choice that is a setting rather than
a result, so at the default seed it is committed (``python -m lib.studies.mixer_tuning --publish``) and chapter 7
loads it (:func:`load_mixer_tuning`); at other seed offsets (``BOOK_SEED``) and at paper scale it is computed, so
the choice moves with the seeds exactly as it did when the chapter computed it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..core.cache import Cache, cached
from ..core.progress import progress
from ..tasks.automaton import AutomatonTask
from ..core.validate import check_size
from ..tasks.linear_map import LinearMapTask
from ._study import load_or_compute, publish_main
from ..train.gpt_train import GPTRunConfig, Member, run_members

__all__ = [
    "MixerTuningConfig",
    "MixerTuning",
    "mixer_tuning",
    "load_mixer_tuning",
    "mean_loss_over_budget",
    "REGENERATE",
]

REGENERATE = "python -m lib.studies.mixer_tuning --publish"


@dataclass(frozen=True)
class MixerTuningConfig:
    """Settings of the tuning runs (the frozen config is the cache key; :meth:`fast` and :meth:`paper` are chapter 7's).

    ``archs`` and ``lrs`` span the grid. Linear map: ``lm_S`` bits, sparsities ``lm_s``, map ``map_seed`` (distinct
    rows), ``lm_steps`` tuning steps. Automaton: ``ca_C`` colours, ``ca_N`` tables (``ca_seed``), ``ca_S`` cells,
    ``ca_T`` states, ``ca_steps`` steps. Model (both tasks; the automaton's has ``ca_layers`` layers): ``n_heads``,
    ``d_head``, ``d_state``, ``d_mlp`` (``None``: the model's default), ``tokens_per_step``, ``eval_every``,
    ``eval_tokens``. ``tune_seed`` initialises and feeds every run, ``eval_seed`` draws the held-out data, and a stack
    stops once all its members are below ``solved`` (nats).
    """

    archs: tuple[str, ...] = ("attention", "mlp_mixer", "mamba", "deltanet", "rwkv", "mlstm", "linear_rnn")
    lrs: tuple[float, ...] = (1e-3, 3e-3, 1e-2)
    lm_S: int = 8
    lm_s: tuple[int, ...] = (2, 3, 4)
    map_seed: int = 0
    lm_steps: int = 300
    ca_C: int = 2
    ca_N: int = 1
    ca_S: int = 8
    ca_T: int = 4
    ca_seed: int = 1234
    ca_steps: int = 200
    lm_layers: int = 1
    ca_layers: int = 1
    n_heads: int = 8
    d_head: int = 4
    d_state: int = 8
    d_mlp: int | None = None
    tokens_per_step: int = 512
    eval_every: int = 25
    eval_tokens: int = 1024
    tune_seed: int = 100
    eval_seed: int = 999
    solved: float = 0.1 * math.log(2)

    def __post_init__(self) -> None:
        if not self.archs or not all(isinstance(a, str) for a in self.archs):
            raise ValueError(f"archs must be a non-empty tuple of mixer names, got {self.archs!r}")
        if not self.lrs or not all(isinstance(x, float) and x > 0 for x in self.lrs):
            raise ValueError(f"lrs must be a non-empty tuple of positive floats, got {self.lrs!r}")
        if not self.lm_s or any(not 1 <= s <= self.lm_S for s in self.lm_s):
            raise ValueError(
                f"lm_s must be a non-empty tuple of sparsities in [1, lm_S={self.lm_S}], got {self.lm_s!r}"
            )
        for name in (
            "lm_S",
            "lm_steps",
            "ca_C",
            "ca_N",
            "ca_S",
            "ca_T",
            "ca_steps",
            "lm_layers",
            "ca_layers",
            "n_heads",
            "d_head",
            "d_state",
            "tokens_per_step",
            "eval_every",
            "eval_tokens",
        ):
            check_size(name, getattr(self, name), 1)
        for name in ("map_seed", "ca_seed", "tune_seed", "eval_seed"):
            check_size(name, getattr(self, name), 0)
        if self.d_mlp is not None:
            check_size("d_mlp", self.d_mlp, 1)
        if not self.solved > 0:
            raise ValueError(f"solved must be > 0, got {self.solved!r}")

    @classmethod
    def fast(cls) -> "MixerTuningConfig":
        """Chapter 7 at FAST scale (the defaults)."""
        return cls()

    @classmethod
    def paper(cls) -> "MixerTuningConfig":
        """Chapter 7 at paper scale: S = 16, s in {3, 5, 7}, C = 4 with 256 tables, width 128, 4 automaton layers."""
        return cls(
            lrs=(3e-4, 1e-3, 3e-3, 1e-2),
            lm_S=16,
            lm_s=(3, 5, 7),
            lm_steps=3000,
            ca_C=4,
            ca_N=256,
            ca_S=16,
            ca_T=16,
            ca_steps=3000,
            ca_layers=4,
            n_heads=8,
            d_head=16,
            d_state=16,
            d_mlp=512,
            tokens_per_step=8192,
            eval_every=100,
            eval_tokens=16384,
        )

    def lm_task(self, s: int) -> LinearMapTask:
        """The linear map at sparsity ``s``: ``lm_S`` bits, map ``map_seed``, distinct rows."""
        return LinearMapTask(self.lm_S, s, seed=self.map_seed, distinct=True)

    def ca_task(self, seed: int | None = None) -> AutomatonTask:
        """The automaton: ``ca_C`` colours, ``ca_N`` tables drawn from ``seed`` (``None``: ``ca_seed``)."""
        return AutomatonTask(
            C=self.ca_C, S=self.ca_S, T=self.ca_T, N=self.ca_N, seed=self.ca_seed if seed is None else seed
        )

    def model(self, task: str) -> dict:
        """The model and evaluation settings of ``task`` ("linear map" or "automaton"), as ``GPTRunConfig`` keywords."""
        if task not in ("linear map", "automaton"):
            raise ValueError(f"task must be 'linear map' or 'automaton', got {task!r}")
        model = dict(
            n_layers=self.lm_layers if task == "linear map" else self.ca_layers,
            n_heads=self.n_heads,
            d_head=self.d_head,
            d_state=self.d_state,
            tokens_per_step=self.tokens_per_step,
            eval_every=self.eval_every,
            eval_tokens=self.eval_tokens,
        )
        if self.d_mlp is not None:
            model["d_mlp"] = self.d_mlp
        return model

    def run_config(self, arch: str, task: str) -> GPTRunConfig:
        """The stacked tuning run of ``arch`` on ``task`` ("linear map": sparsity-major, rate-minor; "automaton")."""
        model = self.model(task)
        if task == "linear map":
            members = [(self.lm_task(s), lr) for s in self.lm_s for lr in self.lrs]
            steps = self.lm_steps
        else:
            members, steps = [(self.ca_task(), lr) for lr in self.lrs], self.ca_steps
        return GPTRunConfig(
            members=tuple(Member(t, seed=self.tune_seed, lr=lr) for t, lr in members),
            mixer=arch,
            steps=steps,
            lr=self.lrs[min(1, len(self.lrs) - 1)],
            stop_below=self.solved,
            eval_seed=self.eval_seed,
            **model,
        )


@dataclass(frozen=True)
class MixerTuning:
    """The tuning scores ``{(task, arch): (len(lrs),) mean held-out loss}`` and the rates they choose."""

    config: MixerTuningConfig
    scores: dict

    @property
    def best_lr(self) -> dict:
        """``{(task, arch): the rate with the lowest score}``."""
        return {key: self.config.lrs[int(np.argmin(v))] for key, v in self.scores.items()}


def mean_loss_over_budget(pred_loss, budget: int, eval_every: int) -> np.ndarray:
    """Per member, the mean of ``pred_loss (K, E)`` over the budget's ``budget // eval_every + 1`` evaluations.

    A stack whose members all stopped early (solved) has fewer evaluations: its last value is carried on to the
    budget. Lower means learned sooner or better.
    """
    pred_loss = np.asarray(pred_loss)
    n = budget // eval_every + 1
    losses = pred_loss[:n]
    return np.concatenate([losses, np.repeat(losses[-1:], n - len(losses), 0)]).mean(0)


@cached
def mixer_tuning(config: MixerTuningConfig) -> MixerTuning:
    """Train every (architecture, task) tuning stack of ``config`` and score each rate (module docstring)."""
    scores = {}
    for arch in progress(config.archs, desc="mixer tuning"):
        for task, budget in (("linear map", config.lm_steps), ("automaton", config.ca_steps)):
            run = run_members(config.run_config(arch, task), desc=f"{arch}: {task}")
            loss = mean_loss_over_budget(run.pred_loss, budget, config.eval_every)  # (members,)
            scores[task, arch] = loss.reshape(-1, len(config.lrs)).mean(0)  # linear map: mean over sparsities
    return MixerTuning(config=config, scores=scores)


def load_mixer_tuning(config: MixerTuningConfig, *, compute: bool = False, cache: Cache | None = None) -> MixerTuning:
    """The committed tuning for ``config`` (verified against the code that made it), else computed if ``compute``.

    Without a committed result for this config and code, and without ``compute``, a ``RuntimeError`` names the
    command that regenerates it.
    """
    if not isinstance(config, MixerTuningConfig):
        raise TypeError(f"config must be a MixerTuningConfig, got {type(config).__name__}")
    return load_or_compute(
        mixer_tuning, config, compute=compute, regenerate=REGENERATE, cost="about 2 CPU-minutes", cache=cache
    )


if __name__ == "__main__":
    publish_main(
        "lib.studies.mixer_tuning",
        "mixer_tuning",
        lambda m: m.MixerTuningConfig.fast(),
        REGENERATE,
        "Run chapter 7's learning-rate tuning and optionally commit it.",
    )
