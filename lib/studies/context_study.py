r"""Paper B's context sweep on the cellular automaton (chapter 6, read again by chapter 8), as one study.

Paper B trains at a fixed token batch: when the automaton's width :math:`S` doubles, the sequences double and the
batch halves. The plateau of a run is the first evaluation at which the held-out loss on the predictable cells
(states :math:`t \ge 1`) falls below :math:`0.9 \ln C` (``inf``: not within the budget). Each width trains with the
attention bias :math:`c\,M` toward the true pattern at every strength of ``biases`` (:math:`c = 0`: standard training),
one stack per ``(S, c)`` that stops once all its seeds are past the plateau.

The measures, each a function of the plateaus ``(n_S, seeds)`` (seed indices as arguments, so that
:func:`lib.core.stats.group_bootstrap_interval` can resample whole seeds, a seed's runs at every width together):

- :func:`growth_per_doubling`: with :math:`m_S` the median plateau over seeds,
  :math:`g = (m_{S_\text{max}}/m_{S_\text{min}})^{1/\log_2(S_\text{max}/S_\text{min})}`, and 0 unless :math:`m_S`
  rises with every doubling (paper B: :math:`\approx 1.9`);
- :func:`plateau_exponent`: the least-squares slope of :math:`\ln m_S` against :math:`\ln S` over the finite medians;
- :func:`bias_ratio`: :math:`\max_S m^{(c)}_S / m^{(0)}_S`, the biased plateau over the unbiased one at its worst.

At FAST scale four seeds cost a few CPU-minutes, more than a chapter may spend, so at the default seed the study is
committed (``python -m lib.studies.context_study --publish``) and chapters 6 and 8 load it; at other seed offsets
(``BOOK_SEED`` moves the seeds, the rule table and the held-out data) and at paper scale it is computed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..core.cache import Cache, cached
from ..core.progress import progress
from ._study import load_or_compute, publish_main
from ..tasks.automaton import AutomatonTask
from ..core.validate import check_size
from ..train.gpt_train import GPTRunConfig, Member, train_gpt
from ..measures.curves import first_below

__all__ = [
    "ContextStudyConfig",
    "ContextStudy",
    "context_study",
    "load_context_study",
    "growth_per_doubling",
    "plateau_exponent",
    "bias_ratio",
    "REGENERATE",
]

REGENERATE = "python -m lib.studies.context_study --publish"


@dataclass(frozen=True)
class ContextStudyConfig:
    """Settings of the sweep (the frozen config is the cache key; :meth:`fast` and :meth:`paper` are chapter 6's).

    Automaton: ``C`` colours, ``N`` rule tables (``rule_seed``), ``T`` states, widths ``sizes``. Training: ``steps``
    for unbiased stacks, ``biased_steps`` for biased ones, ``seeds`` (initialisation and data stream), held-out data
    from ``eval_seed``. Model: ``n_layers``, ``n_heads``, ``d_head``, ``d_mlp`` (``None``: the model's default),
    ``tokens_per_step``, ``lr``, ``eval_every``, ``eval_tokens``. The plateau ends below ``plateau_frac * ln C``.
    Biased stacks are evaluated every ``biased_eval_every`` steps: they leave the plateau within a few evaluations, and
    at ``eval_every`` every one of them would sit on the first evaluation, so that a spread or a growth of their
    plateaus measured the grid, not the runs (claims-review-2 §7.2).
    """

    C: int = 2
    N: int = 1
    T: int = 4
    sizes: tuple[int, ...] = (8, 16, 32)
    biases: tuple[float, ...] = (0.0, 1.0, 3.0, 10.0)
    steps: int = 2500
    biased_steps: int = 600
    seeds: tuple[int, ...] = (0, 1, 2, 3)
    rule_seed: int = 1234
    eval_seed: int = 999
    n_layers: int = 2
    n_heads: int = 4
    d_head: int = 8
    d_mlp: int | None = None
    tokens_per_step: int = 1024
    lr: float = 3e-3
    eval_every: int = 25
    eval_tokens: int = 4096
    plateau_frac: float = 0.9
    biased_eval_every: int = 5

    def __post_init__(self) -> None:
        if len(self.sizes) < 2 or list(self.sizes) != sorted(set(self.sizes)):
            raise ValueError(f"sizes must be at least 2 increasing widths, got {self.sizes!r}")
        if not self.biases or self.biases[0] != 0.0 or any(not (c >= 0) for c in self.biases):
            raise ValueError(f"biases must start with 0.0 (standard training) and be >= 0, got {self.biases!r}")
        if len(self.seeds) < 2 or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must be at least 2 distinct seeds, got {self.seeds!r}")
        for name in (
            "C",
            "N",
            "T",
            "steps",
            "biased_steps",
            "n_layers",
            "n_heads",
            "d_head",
            "tokens_per_step",
            "eval_every",
            "eval_tokens",
            "biased_eval_every",
        ):
            check_size(name, getattr(self, name), 1)
        if not (0 < self.plateau_frac < 1):
            raise ValueError(f"plateau_frac must be in (0, 1), got {self.plateau_frac!r}")

    @classmethod
    def fast(cls) -> "ContextStudyConfig":
        """Chapter 6 at FAST scale (the defaults): one rule table, so no in-context rule inference."""
        return cls()

    @classmethod
    def paper(cls) -> "ContextStudyConfig":
        """Chapter 6 at paper scale: C = 4, N = 256 tables, T = 16, S up to 64, width 128, 4 layers, three seeds."""
        return cls(
            C=4,
            N=256,
            T=16,
            sizes=(8, 16, 32, 64),
            steps=10_000,
            seeds=(0, 1, 2),
            n_layers=4,
            n_heads=8,
            d_head=16,
            d_mlp=512,
            tokens_per_step=16384,
            lr=1e-3,
            eval_every=100,
            eval_tokens=16384,
            biased_eval_every=10,
        )

    @property
    def threshold(self) -> float:
        """The plateau threshold ``plateau_frac * ln C`` (nats)."""
        return self.plateau_frac * math.log(self.C)

    def task(self, S: int, N: int | None = None) -> AutomatonTask:
        """The automaton of width ``S`` (``N`` rule tables, default the study's)."""
        return AutomatonTask(C=self.C, S=S, T=self.T, N=self.N if N is None else N, seed=self.rule_seed)

    def model(self) -> dict:
        """The model and optimiser fields of a :class:`GPTRunConfig` (for other automaton runs at these settings)."""
        model = dict(
            n_layers=self.n_layers,
            n_heads=self.n_heads,
            d_head=self.d_head,
            tokens_per_step=self.tokens_per_step,
            lr=self.lr,
            eval_every=self.eval_every,
            eval_tokens=self.eval_tokens,
        )
        if self.d_mlp is not None:
            model["d_mlp"] = self.d_mlp
        return model

    def run_config(self, S: int, c: float) -> GPTRunConfig:
        """The stack of all seeds at width ``S`` and bias strength ``c``."""
        if S not in self.sizes or c not in self.biases:
            raise ValueError(f"(S, c) = ({S}, {c}) is not in the sweep")
        model = self.model() if c == 0 else {**self.model(), "eval_every": self.biased_eval_every}
        return GPTRunConfig(
            members=tuple(Member(self.task(S), seed=k, bias=c) for k in self.seeds),
            eval_seed=self.eval_seed,
            steps=self.steps if c == 0 else self.biased_steps,
            stop_below=self.threshold,
            **model,
        )


@dataclass(frozen=True)
class ContextStudy:
    """Held-out curves per ``(S, c)``: ``steps[S, c]`` ``(K,)`` and ``pred_loss[S, c]`` ``(K, seeds)``."""

    config: ContextStudyConfig
    steps: dict
    pred_loss: dict

    def plateau(self, S: int, c: float) -> np.ndarray:
        """``(seeds,)`` plateau ends at width ``S`` and bias ``c`` (``inf``: not within the budget)."""
        return first_below(self.steps[S, c], self.pred_loss[S, c], self.config.threshold)

    def plateaus(self, c: float = 0.0) -> np.ndarray:
        """``(n_S, seeds)`` plateau ends at bias ``c``, widths in the order of ``config.sizes``."""
        return np.stack([self.plateau(S, c) for S in self.config.sizes])


def _medians(plateaus, seeds) -> np.ndarray:
    p = np.asarray(plateaus, dtype=float)
    if p.ndim != 2:
        raise ValueError(f"plateaus must be (n_S, seeds), got shape {p.shape}")
    idx = np.arange(p.shape[1]) if seeds is None else np.asarray(seeds, dtype=int)
    return np.median(p[:, idx], axis=1)  # (n_S,)


def growth_per_doubling(plateaus, sizes, seeds=None) -> float:
    """Growth of the median plateau per doubling of ``S`` (module docstring); 0 unless it rises at every width."""
    m, S = _medians(plateaus, seeds), np.asarray(sizes, dtype=float)
    if len(S) != len(m) or len(S) < 2:
        raise ValueError("need one row of plateaus per size, at least two sizes")
    if not np.all(np.diff(m) > 0):
        return 0.0
    return float((m[-1] / m[0]) ** (1 / math.log2(S[-1] / S[0])))


def plateau_exponent(plateaus, sizes, seeds=None) -> float:
    """Least-squares slope of ln(median plateau) against ln S over the widths with a finite median (nan if < 2)."""
    m, S = _medians(plateaus, seeds), np.asarray(sizes, dtype=float)
    ok = np.isfinite(m) & (m > 0)
    if ok.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(S[ok]), np.log(m[ok]), 1)[0])


def bias_ratio(biased, unbiased, seeds=None) -> float:
    """Largest ratio over ``S`` of the median biased plateau to the median unbiased one (both ``(n_S, seeds)``)."""
    return float(np.max(_medians(biased, seeds) / _medians(unbiased, seeds)))


@cached
def context_study(config: ContextStudyConfig) -> ContextStudy:
    """Train every ``(S, c)`` stack of ``config`` (module docstring)."""
    steps, pred_loss = {}, {}
    for S in progress(config.sizes, desc="context sweep: widths"):
        for c in config.biases:
            run = train_gpt(config.run_config(S, c))
            steps[S, c], pred_loss[S, c] = np.asarray(run.steps), np.asarray(run.pred_loss)  # (K,), (K, seeds)
    return ContextStudy(config=config, steps=steps, pred_loss=pred_loss)


def load_context_study(
    config: ContextStudyConfig, *, compute: bool = False, cache: Cache | None = None
) -> ContextStudy:
    """The committed sweep for ``config`` (verified against the code that made it), else computed if ``compute``."""
    if not isinstance(config, ContextStudyConfig):
        raise TypeError(f"config must be a ContextStudyConfig, got {type(config).__name__}")
    return load_or_compute(
        context_study, config, compute=compute, regenerate=REGENERATE, cost="a few CPU-minutes", cache=cache
    )


if __name__ == "__main__":
    publish_main(
        "lib.studies.context_study",
        "context_study",
        lambda m: m.ContextStudyConfig.fast(),
        REGENERATE,
        "Run chapter 6's context sweep of the automaton and optionally commit it.",
    )
