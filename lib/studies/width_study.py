r"""Paper B's width and depth questions as one committed study (chapter 6): heads x head size, thin heads, depth.

Paper B's Fig. 5 trains the linear map over a grid of head counts :math:`H` and head sizes :math:`d_\text{head}`
(so :math:`d_\text{model} = H\,d_\text{head}`) and finds that more heads help more than bigger heads; on the
many-rule cellular automaton it finds a minimum head size and (its App. B.5, per a reproduction) that depth helps.
At chapter 6's FAST scale these grids cost tens of CPU-minutes, so they run once here and are committed under
``data/`` (:func:`lib.publish`); the chapter loads them (:func:`load_width_study`) and runs the cheap parts live.

Three experiments, each a set of stacked runs of :func:`lib.train.gpt_train.run_members` (one stack per model
shape, one member per seed), every run online with Adam at the same rate:

* **grid** -- the linear map :math:`x_1 = A x_0 \bmod 2` (``S``, ``s``) for every ``H`` in ``heads`` and
  ``d_head`` in ``d_heads``, one layer, MLP :math:`4 d_\text{model}`;
* **thin heads** -- the automaton with ``ca_N`` rule tables at a fixed width ``ca_width`` split into each ``H`` of
  ``ca_heads`` (``d_head = ca_width / H``), ``ca_layers`` layers;
* **depth** -- the same automaton with ``ca_heads[0]`` heads and each depth in ``ca_depths``.

Only the held-out loss curves are kept (all tokens and the predictable ones, per evaluation and seed): thresholds
are applied by the chapter.

Regenerate (about 19 CPU-minutes on one AVX-512 core) and commit::

    python -m lib.studies.width_study --publish
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..core.cache import Cache, cached
from ._study import load_or_compute, publish_main
from ..core.progress import progress
from ..tasks.automaton import AutomatonTask
from ..core.validate import check_size
from ..tasks.linear_map import LinearMapTask
from ..train.gpt_train import GPTRunConfig, Member, run_members
from .paper_defaults import LINEAR_MAP_INIT

__all__ = ["WidthStudyConfig", "WidthStudy", "Curves", "width_study", "load_width_study", "REGENERATE"]

REGENERATE = "python -m lib.studies.width_study --publish"


def _check_sizes(name: str, values, minimum: int = 1) -> None:
    if not isinstance(values, tuple) or not values:
        raise ValueError(f"{name} must be a non-empty tuple, got {values!r}")
    for v in values:
        check_size(name, v, minimum)


@dataclass(frozen=True)
class WidthStudyConfig:
    """The study's settings (the defaults are chapter 6's FAST scale; the frozen config is the cache key).

    Linear map: ``S``, ``s``, ``map_seed`` (chapter 6's map: distinct rows), ``heads`` x ``d_heads``, ``lm_steps``
    steps of ``lm_tokens`` tokens, ``lm_eval_tokens`` held out per evaluation, initialisation ``lm_init`` (at paper
    scale :data:`lib.studies.paper_defaults.LINEAR_MAP_INIT`). Automaton: ``ca_C`` colours, ``ca_N`` rule tables
    (``ca_seed``), ``ca_S`` cells, ``ca_T`` states, ``ca_width`` = H d_head, ``ca_heads`` at ``ca_layers`` layers,
    ``ca_depths`` at ``ca_heads[0]`` heads, ``ca_steps`` steps of ``ca_tokens`` tokens, ``ca_eval_tokens`` held out.
    Both: ``seeds``/``ca_seeds``, ``lr``, ``eval_every``.

    The held-out budgets are fields rather than constants so that a smoke run (:mod:`lib.core.smoke`) cuts them with the
    training budgets: evaluation, with the attention statistics of every head, was 95 % of this study's smoke run.
    """

    S: int = 8
    s: int = 2
    map_seed: int = 0
    heads: tuple[int, ...] = (1, 2, 4, 8, 16)
    d_heads: tuple[int, ...] = (4, 8, 16)
    seeds: tuple[int, ...] = (0, 1, 2, 3)
    lm_steps: int = 800
    lm_tokens: int = 512
    lm_init: str = "gpt2"
    lm_eval_tokens: int = 2048
    ca_C: int = 2
    ca_N: int = 16
    ca_S: int = 8
    ca_T: int = 4
    ca_seed: int = 1234
    ca_width: int = 32
    ca_heads: tuple[int, ...] = (4, 32)
    ca_layers: int = 4
    ca_depths: tuple[int, ...] = (1, 2, 4)
    ca_steps: int = 4000
    ca_tokens: int = 1024
    ca_eval_tokens: int = 4096
    ca_seeds: tuple[int, ...] = (0, 1)
    lr: float = 3e-3
    eval_every: int = 25

    def __post_init__(self) -> None:
        for name in (
            "S",
            "s",
            "lm_steps",
            "lm_tokens",
            "lm_eval_tokens",
            "ca_S",
            "ca_T",
            "ca_N",
            "ca_width",
            "ca_layers",
            "ca_steps",
            "ca_tokens",
            "ca_eval_tokens",
            "eval_every",
        ):
            check_size(name, getattr(self, name), 1)
        check_size("ca_C", self.ca_C, 2)
        for name in ("heads", "d_heads", "ca_heads", "ca_depths"):
            _check_sizes(name, getattr(self, name))
        for name in ("seeds", "ca_seeds"):
            _check_sizes(name, getattr(self, name), 0)
        bad = [H for H in self.ca_heads if self.ca_width % H]
        if bad:
            raise ValueError(f"ca_heads must divide ca_width={self.ca_width}, got {bad}")
        if not (isinstance(self.lr, float) and self.lr > 0):
            raise ValueError(f"lr must be a float > 0, got {self.lr!r}")
        self.lm_task(), self.ca_task()  # validates the tasks

    @classmethod
    def fast(cls) -> "WidthStudyConfig":
        """Chapter 6's FAST study (the defaults; committed)."""
        return cls()

    @classmethod
    def paper(cls) -> "WidthStudyConfig":
        """Paper B's heads x head-size grid on its linear map (S=16, s=3, 10,000 steps of 8,192 tokens, lr 1e-3) and
        its many-rule automaton (C=4, N=256, T=16, width 128, 4 layers); S=8 keeps the automaton affordable (ours)."""
        return cls(
            S=16,
            s=3,
            heads=(1, 2, 4, 8, 16, 32),
            d_heads=(4, 8, 16),
            seeds=(0, 1, 2),
            lm_steps=10_000,
            lm_tokens=8192,
            ca_C=4,
            ca_N=256,
            ca_S=8,
            ca_T=16,
            ca_width=128,
            ca_heads=(4, 16, 128),
            ca_layers=4,
            ca_depths=(1, 2, 4),
            ca_steps=10_000,
            ca_tokens=16384,
            ca_seeds=(0, 1, 2),
            lr=1e-3,
            eval_every=100,
            lm_init=LINEAR_MAP_INIT,
        )

    def lm_task(self) -> LinearMapTask:
        return LinearMapTask(self.S, self.s, seed=self.map_seed, distinct=True)

    def ca_task(self) -> AutomatonTask:
        return AutomatonTask(C=self.ca_C, S=self.ca_S, T=self.ca_T, N=self.ca_N, seed=self.ca_seed)

    def runs(self) -> dict[tuple[str, int, int], GPTRunConfig]:
        """Every stacked run: ``("grid", H, d_head)``, ``("thin", H, layers)``, ``("depth", H, layers)``."""
        common = dict(lr=self.lr, eval_every=self.eval_every)
        out: dict[tuple[str, int, int], GPTRunConfig] = {}
        lm = tuple(Member(self.lm_task(), seed=k) for k in self.seeds)
        for dh in self.d_heads:
            for H in self.heads:
                out["grid", H, dh] = GPTRunConfig(
                    members=lm,
                    n_heads=H,
                    d_head=dh,
                    steps=self.lm_steps,
                    tokens_per_step=self.lm_tokens,
                    eval_tokens=self.lm_eval_tokens,
                    init=self.lm_init,
                    **common,
                )
        ca = tuple(Member(self.ca_task(), seed=k) for k in self.ca_seeds)
        ca_common = dict(steps=self.ca_steps, tokens_per_step=self.ca_tokens, eval_tokens=self.ca_eval_tokens, **common)
        for H in self.ca_heads:
            out["thin", H, self.ca_layers] = GPTRunConfig(
                members=ca, n_heads=H, d_head=self.ca_width // H, n_layers=self.ca_layers, **ca_common
            )
        H0 = self.ca_heads[0]
        for depth in self.ca_depths:
            if depth == self.ca_layers:  # the same run as the thin-heads point at H0
                continue
            out["depth", H0, depth] = GPTRunConfig(
                members=ca, n_heads=H0, d_head=self.ca_width // H0, n_layers=depth, **ca_common
            )
        return out


@dataclass
class Curves:
    """Held-out loss curves of one stacked run: ``steps`` ``(K,)``; ``loss``, ``pred_loss`` ``(K, seeds)``."""

    steps: np.ndarray
    loss: np.ndarray
    pred_loss: np.ndarray


@dataclass
class WidthStudy:
    """The study's curves, keyed like :meth:`WidthStudyConfig.runs`; see :meth:`grid`, :meth:`thin`, :meth:`depth`."""

    config: WidthStudyConfig
    curves: dict[tuple[str, int, int], Curves] = field(default_factory=dict)

    def grid(self, H: int, d_head: int) -> Curves:
        return self.curves["grid", H, d_head]

    def thin(self, H: int) -> Curves:
        return self.curves["thin", H, self.config.ca_layers]

    def depth(self, layers: int) -> Curves:
        H0 = self.config.ca_heads[0]
        return self.thin(H0) if layers == self.config.ca_layers else self.curves["depth", H0, layers]


@cached
def width_study(config: WidthStudyConfig) -> WidthStudy:
    """Run every stack of the study (long: see the module docstring) and keep the held-out loss curves."""
    if not isinstance(config, WidthStudyConfig):
        raise ValueError(f"config must be a WidthStudyConfig, got {type(config).__name__}")
    out = WidthStudy(config)
    for key, cfg in progress(config.runs().items(), desc="width study", unit="stack"):
        run = run_members(cfg)
        out.curves[key] = Curves(run.steps.copy(), run.loss.copy(), run.pred_loss.copy())
    assert set(out.curves) == set(config.runs())
    return out


def load_width_study(config: WidthStudyConfig | None = None, *, compute: bool = False, cache: Cache | None = None):
    """The committed study (verified against the code that made it), else computed if ``compute``.

    With the results cache off (``BOOK_CACHE=0``) the committed result is still read: it is committed data.
    Without a committed result for this config and code, and without ``compute``, a ``RuntimeError`` names the
    command that regenerates it.
    """
    return load_or_compute(
        width_study,
        config or WidthStudyConfig(),
        compute=compute,
        regenerate=REGENERATE,
        cost="about 19 CPU-minutes",
        cache=cache,
    )


def main(argv=None) -> None:
    publish_main(
        "lib.studies.width_study",
        "width_study",
        lambda m: m.WidthStudyConfig(),
        REGENERATE,
        "Run chapter 6's width and depth study and optionally commit it.",
        argv,
    )


if __name__ == "__main__":
    main()
