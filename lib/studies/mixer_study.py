r"""Chapter 7's token mixers on the many-rule cellular automaton, one committed study per architecture.

Paper B's automaton draws one of many rule tables per sequence, so a model must infer the active table from the
earlier states before applying it: the setting in which the paper finds the transformer best. At chapter 7's FAST
scale this needs 4 layers and thousands of steps per architecture (about 105 CPU-minutes for all seven on AVX-512 cores, Mamba alone 32), so it runs
once here and is committed under ``data/`` (:func:`lib.publish`); the chapter loads it (:func:`load_mixer_study`).

One stack per architecture: every learning rate of ``lrs`` times the held-out tuning seed and the evaluation
``seeds`` (a rate per member costs nothing extra: :mod:`lib.train.gpt_train`). The chapter picks each
architecture's rate on the tuning seed and reports the evaluation seeds. Only the held-out loss curves on the
predictable cells are kept.

Regenerate and commit (one process per group of architectures runs them side by side)::

    python -m lib.studies.mixer_study --publish attention mamba linear_rnn mlp_mixer
    python -m lib.studies.mixer_study --publish deltanet rwkv mlstm
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np

from ..core.cache import Cache, cached, publish
from ._study import load_or_compute
from ..models.mixers import ARCHITECTURES, get_mixer
from ..tasks.automaton import AutomatonTask
from ..core.validate import check_size
from ..train.gpt_train import GPTRunConfig, Member, run_members

__all__ = ["MixerStudyConfig", "MixerCurves", "mixer_study", "load_mixer_study", "REGENERATE"]

REGENERATE = "python -m lib.studies.mixer_study --publish <architectures>"


@dataclass(frozen=True)
class MixerStudyConfig:
    """One architecture on the many-rule automaton (defaults: chapter 7's FAST scale; the frozen config is the key).

    ``arch`` (a registered mixer), the automaton (``C``, ``N`` tables from ``rule_seed``, ``S``, ``T``), the model
    (``n_layers``, ``n_heads`` x ``d_head``, ``d_state``), ``steps`` of ``tokens`` tokens, the rates ``lrs``, the
    held-out ``tune_seed`` and the evaluation ``seeds``.
    """

    arch: str = "attention"
    C: int = 2
    N: int = 16
    S: int = 8
    T: int = 4
    rule_seed: int = 1234
    n_layers: int = 4
    n_heads: int = 4
    d_head: int = 8
    d_state: int = 8
    steps: int = 4000
    tokens: int = 1024
    lrs: tuple[float, ...] = (1e-3, 3e-3)
    tune_seed: int = 100
    seeds: tuple[int, ...] = (0, 1)
    eval_every: int = 25

    def __post_init__(self) -> None:
        get_mixer(self.arch)
        if not isinstance(self.lrs, tuple) or not self.lrs or not all(isinstance(r, float) and r > 0 for r in self.lrs):
            raise ValueError(f"lrs must be a non-empty tuple of floats > 0, got {self.lrs!r}")
        if not isinstance(self.seeds, tuple) or not self.seeds:
            raise ValueError(f"seeds must be a non-empty tuple, got {self.seeds!r}")
        for k in (self.tune_seed, *self.seeds):
            check_size("seeds", k, 0)
        if self.tune_seed in self.seeds:
            raise ValueError(f"tune_seed={self.tune_seed} must not be one of the evaluation seeds {self.seeds}")
        self.run()  # validates the task and the model

    def task(self) -> AutomatonTask:
        return AutomatonTask(C=self.C, S=self.S, T=self.T, N=self.N, seed=self.rule_seed)

    def run(self) -> GPTRunConfig:
        """The stack: members ordered (rate, seed) with the tuning seed first for every rate."""
        members = tuple(Member(self.task(), seed=k, lr=lr) for lr in self.lrs for k in (self.tune_seed, *self.seeds))
        return GPTRunConfig(
            members=members,
            mixer=self.arch,
            n_layers=self.n_layers,
            n_heads=self.n_heads,
            d_head=self.d_head,
            d_state=self.d_state,
            steps=self.steps,
            tokens_per_step=self.tokens,
            lr=self.lrs[0],
            eval_every=self.eval_every,
            eval_tokens=4096,
        )


@dataclass
class MixerCurves:
    """Held-out loss on the predictable cells: ``steps`` ``(K,)``, ``pred_loss`` ``(K, rates, 1 + seeds)``
    (index 0 of the last axis: the tuning seed)."""

    config: MixerStudyConfig
    steps: np.ndarray
    pred_loss: np.ndarray

    def tuning(self) -> np.ndarray:
        """``(K, rates)``: the tuning seed at every rate."""
        return self.pred_loss[:, :, 0]

    def evaluation(self, rate: int) -> np.ndarray:
        """``(K, seeds)``: the evaluation seeds at rate index ``rate``."""
        return self.pred_loss[:, rate, 1:]


@cached
def mixer_study(config: MixerStudyConfig) -> MixerCurves:
    """Train the stack of ``config`` (long: see the module docstring) and keep its loss curves."""
    if not isinstance(config, MixerStudyConfig):
        raise ValueError(f"config must be a MixerStudyConfig, got {type(config).__name__}")
    run = run_members(config.run(), desc=f"mixer study: {config.arch}")
    n = 1 + len(config.seeds)
    curves = run.pred_loss.reshape(len(run.steps), len(config.lrs), n)  # members are ordered (rate, seed)
    assert curves.shape == (len(run.steps), len(config.lrs), n)
    return MixerCurves(config, run.steps.copy(), curves.copy())


def load_mixer_study(config: MixerStudyConfig, *, compute: bool = False, cache: Cache | None = None) -> MixerCurves:
    """The committed curves of one architecture (verified against the code), else computed if ``compute``;
    otherwise a ``RuntimeError`` with the command that regenerates them."""
    return load_or_compute(
        mixer_study,
        config,
        compute=compute,
        cache=cache,
        regenerate=REGENERATE.replace("<architectures>", config.arch),
        cost="2-30 CPU-minutes per architecture",
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        description="Train chapter 7's mixers on the many-rule automaton; optionally commit."
    )
    parser.add_argument("archs", nargs="*", default=list(ARCHITECTURES), help="architectures (default: all seven)")
    parser.add_argument("--publish", action="store_true", help="copy each result to data/ with its manifest entry")
    args = parser.parse_args(argv)
    import importlib

    import torch

    torch.set_num_threads(1)
    module = importlib.import_module("lib.studies.mixer_study")  # not __main__: the cache key names the module
    for arch in args.archs:
        config = module.MixerStudyConfig(arch=arch)
        module.mixer_study(config)
        if args.publish:
            command = module.REGENERATE.replace("<architectures>", arch)
            print("published", publish(module.mixer_study.__wrapped__, config, command), flush=True)


if __name__ == "__main__":
    main()
