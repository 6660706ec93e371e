r"""Chapter 6's transformer runs outside the context sweep, as one study committed under ``data/``.

On the linear map (``S`` bits, sparsity ``s``, map ``map_seed``, distinct rows), one layer of ``n_heads`` heads of
size ``d_head``:

* **seeds**: ``seeds`` (initialisation and data stream) of one model, ``steps`` steps: the staircase, the seed-random
  emergence step;
* **bias**: the first ``n_few`` seeds at every nonzero bias strength ``c`` of the context sweep (``context.biases``),
  ``bias_steps`` steps, stopped once solved (``solved``);
* **heads**: at fixed width ``n_heads * d_head``, every head count of ``heads`` but ``n_heads`` (the ``seeds``
  stack holds that one), the first ``n_width`` seeds;
* **depth**: two layers, the first ``n_few`` seeds.

On the automaton of the context sweep (``context``: its model, its rule table, its held-out data):

* **thin heads**: at the sweep's width, every head count of ``ca_heads`` but the sweep's own, all the sweep's seeds,
  at its smallest width ``S``, stopped once off the plateau (``context.threshold``);
* **many tables**: ``many_N`` rule tables at width ``many_S``, ``many_steps`` steps, the first seed without and with
  the attention bias ``many_bias``.

At FAST scale these take a chapter's budget, so at the default seed they are committed (``python -m
lib.studies.emergence_runs --publish``) and chapter 6 loads them (:func:`load_emergence_runs`); at other seed offsets
(``BOOK_SEED``) and at paper scale they are computed. The stacks are those chapter 6 trained itself before (same
configs, so the same results cache entries).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..core.cache import Cache, cached
from ..core.progress import progress
from ._study import load_or_compute, publish_main
from ..core.validate import check_size
from ..tasks.linear_map import LinearMapTask
from .context_study import ContextStudyConfig
from ..train.gpt_train import GPTRun, GPTRunConfig, Member, train_gpt
from .paper_defaults import LINEAR_MAP_INIT
from .slim import slim_run

__all__ = ["EmergenceRunsConfig", "EmergenceRuns", "emergence_runs", "load_emergence_runs", "REGENERATE"]

REGENERATE = "python -m lib.studies.emergence_runs --publish"


@dataclass(frozen=True)
class EmergenceRunsConfig:
    """Settings of the runs (the frozen config is the cache key; :meth:`fast` and :meth:`paper` are chapter 6's).

    Linear map: ``S``, ``s``, ``map_seed``, ``steps``, ``seeds``, ``n_few``, ``n_width``; model and optimiser
    ``n_heads``, ``d_head``, ``d_mlp`` (``None``: the model's default), ``tokens_per_step``, ``lr``, ``eval_every``,
    ``eval_tokens``, held-out data from ``eval_seed``, initialisation ``lm_init`` (at paper scale
    :data:`lib.studies.paper_defaults.LINEAR_MAP_INIT`); the bias stacks run ``bias_steps``, stop below ``solved``
    and are evaluated every ``bias_eval_every`` steps (they leave the plateau within a few evaluations: at
    ``eval_every`` their spread would be the grid's).
    ``heads`` and ``ca_heads``: head counts at fixed width. Many tables: ``many_N``, ``many_S``, ``many_steps``,
    ``many_bias``. ``context``: the automaton's sweep, whose settings the automaton runs share.
    """

    context: ContextStudyConfig = ContextStudyConfig()
    S: int = 8
    s: int = 2
    map_seed: int = 0
    steps: int = 800
    seeds: tuple[int, ...] = tuple(range(16))
    n_few: int = 4
    n_width: int = 4
    n_heads: int = 8
    d_head: int = 4
    d_mlp: int | None = None
    tokens_per_step: int = 512
    lr: float = 3e-3
    lm_init: str = "gpt2"
    eval_every: int = 25
    eval_tokens: int = 2048
    eval_seed: int = 999
    bias_steps: int = 300
    bias_eval_every: int = 5
    solved: float = 0.1 * math.log(2)
    heads: tuple[int, ...] = (1, 2, 4, 8)
    ca_heads: tuple[int, ...] = (4, 32)
    many_N: int = 16
    many_S: int = 8
    many_steps: int = 800
    many_bias: float = 3.0

    def __post_init__(self) -> None:
        if not isinstance(self.context, ContextStudyConfig):
            raise ValueError(f"context must be a ContextStudyConfig, got {type(self.context).__name__}")
        if len(self.seeds) < 2 or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must be at least 2 distinct seeds, got {self.seeds!r}")
        for name in (
            "S",
            "s",
            "steps",
            "n_few",
            "n_width",
            "n_heads",
            "d_head",
            "tokens_per_step",
            "eval_every",
            "eval_tokens",
            "bias_steps",
            "bias_eval_every",
            "many_N",
            "many_S",
            "many_steps",
        ):
            check_size(name, getattr(self, name), 1)
        for name in ("map_seed", "eval_seed"):
            check_size(name, getattr(self, name), 0)
        for k in self.seeds:
            check_size("seeds", k, 0)
        if self.s > self.S:
            raise ValueError(f"s must be <= S={self.S}, got {self.s!r}")
        if max(self.n_few, self.n_width) > len(self.seeds):
            raise ValueError(f"n_few and n_width must be <= len(seeds)={len(self.seeds)}")
        if self.d_mlp is not None:
            check_size("d_mlp", self.d_mlp, 1)
        width, ca_width = self.n_heads * self.d_head, self.context.n_heads * self.context.d_head
        if not self.heads or any(H < 1 or width % H for H in self.heads):
            raise ValueError(f"heads must divide the width {width}, got {self.heads!r}")
        if not self.ca_heads or any(H < 1 or ca_width % H for H in self.ca_heads):
            raise ValueError(f"ca_heads must divide the sweep's width {ca_width}, got {self.ca_heads!r}")
        if not (self.solved > 0 and self.lr > 0 and self.many_bias > 0):
            raise ValueError("solved, lr and many_bias must be > 0")

    @classmethod
    def fast(cls) -> "EmergenceRunsConfig":
        """Chapter 6 at FAST scale (the defaults)."""
        return cls()

    @classmethod
    def paper(cls) -> "EmergenceRunsConfig":
        """Chapter 6 at paper scale: S = 16, s = 3, width 128 (8 heads of 16), MLP 512, 8,192 tokens per step."""
        return cls(
            context=ContextStudyConfig.paper(),
            S=16,
            s=3,
            steps=10_000,
            n_few=3,
            n_width=3,
            d_head=16,
            d_mlp=512,
            tokens_per_step=8192,
            lr=1e-3,
            eval_every=100,
            eval_tokens=16384,
            heads=(1, 2, 4, 8, 16, 32),
            ca_heads=(4, 16, 128),
            many_N=256,
            many_steps=10_000,
            lm_init=LINEAR_MAP_INIT,
            bias_eval_every=10,
        )

    @property
    def width(self) -> int:
        """The linear map's model width ``n_heads * d_head``."""
        return self.n_heads * self.d_head

    def task(self) -> LinearMapTask:
        """The linear map."""
        return LinearMapTask(self.S, self.s, seed=self.map_seed, distinct=True)

    def model(self, n_heads: int | None = None) -> dict:
        """The linear map's model and optimiser fields of a :class:`GPTRunConfig`, with ``n_heads`` at fixed width."""
        H = self.n_heads if n_heads is None else n_heads
        model = dict(
            n_heads=H,
            d_head=self.width // H,
            tokens_per_step=self.tokens_per_step,
            lr=self.lr,
            eval_every=self.eval_every,
            eval_tokens=self.eval_tokens,
            init=self.lm_init,
        )
        if self.d_mlp is not None:
            model["d_mlp"] = self.d_mlp
        return model

    def stack(self, members, **kw) -> GPTRunConfig:
        """One stack of ``(task, seed, bias c)`` members on the held-out data of ``eval_seed``."""
        return GPTRunConfig(
            members=tuple(Member(t, seed=k, bias=c) for t, k, c in members), eval_seed=self.eval_seed, **kw
        )

    def run_configs(self) -> dict:
        """Every stack: ``{"seeds" | "bias" | "depth" | "many": cfg, ("heads", H): cfg, ("thin", H): cfg}``."""
        lm, few, ctx = self.task(), self.seeds[: self.n_few], self.context
        out = {"seeds": self.stack([(lm, k, 0.0) for k in self.seeds], steps=self.steps, **self.model())}
        out["bias"] = self.stack(
            [(lm, k, c) for c in ctx.biases[1:] for k in few],
            steps=self.bias_steps,
            stop_below=self.solved,
            **{**self.model(), "eval_every": self.bias_eval_every},
        )
        for H in self.heads:
            if H != self.n_heads:  # the seeds stack holds the default head count
                out["heads", H] = self.stack(
                    [(lm, k, 0.0) for k in self.seeds[: self.n_width]], steps=self.steps, **self.model(H)
                )
        out["depth"] = self.stack([(lm, k, 0.0) for k in few], steps=self.steps, n_layers=2, **self.model())
        ca_width = ctx.n_heads * ctx.d_head
        for H in self.ca_heads:
            if H != ctx.n_heads:  # the context sweep holds the default head count
                model = {**ctx.model(), "n_heads": H, "d_head": ca_width // H}
                out["thin", H] = self.stack(
                    [(ctx.task(ctx.sizes[0]), k, 0.0) for k in ctx.seeds],
                    steps=ctx.steps,
                    stop_below=ctx.threshold,
                    **model,
                )
        many = ctx.task(self.many_S, N=self.many_N)
        out["many"] = self.stack(
            [(many, self.seeds[0], 0.0), (many, self.seeds[0], self.many_bias)], steps=self.many_steps, **ctx.model()
        )
        return out


@dataclass(frozen=True)
class EmergenceRuns:
    """The runs: ``runs`` maps each key of :meth:`EmergenceRunsConfig.run_configs` to its :class:`GPTRun`; all but
    the ``"seeds"`` stack (kept whole: attention statistics and weights) as :func:`~lib.studies.slim.slim_run` copies."""

    config: EmergenceRunsConfig
    runs: dict

    def __getitem__(self, key) -> GPTRun:
        return self.runs[key]


@cached
def emergence_runs(config: EmergenceRunsConfig) -> EmergenceRuns:
    """Train every stack of ``config`` (module docstring)."""
    cfgs, runs = config.run_configs(), {}
    for key, cfg in progress(cfgs.items(), desc="emergence runs", total=len(cfgs)):
        run = train_gpt(cfg, desc=str(key))
        runs[key] = run if key == "seeds" else slim_run(run)  # the staircase reads everything of the seeds stack
    return EmergenceRuns(config=config, runs=runs)


def load_emergence_runs(
    config: EmergenceRunsConfig, *, compute: bool = False, cache: Cache | None = None
) -> EmergenceRuns:
    """The committed runs for ``config`` (verified against the code that made them), else computed if ``compute``.

    Without a committed result for this config and code, and without ``compute``, a ``RuntimeError`` names the
    command that regenerates it.
    """
    if not isinstance(config, EmergenceRunsConfig):
        raise TypeError(f"config must be an EmergenceRunsConfig, got {type(config).__name__}")
    return load_or_compute(
        emergence_runs, config, compute=compute, regenerate=REGENERATE, cost="about 2.5 CPU-minutes", cache=cache
    )


if __name__ == "__main__":
    publish_main(
        "lib.studies.emergence_runs",
        "emergence_runs",
        lambda m: m.EmergenceRunsConfig.fast(),
        REGENERATE,
        "Run chapter 6's transformer runs outside the context sweep and optionally commit them.",
    )
