r"""Paper B's sparsity sweep on the linear map (its Fig. 4, left): final loss against the number of ones per row.

Each output bit of the map is the parity of ``s`` of the ``S`` input bits, so a row has :math:`\binom{S}{s}`
candidate supports, most at :math:`s = S/2`. Paper B trains one model per ``(S, s)`` and seed and finds the final
loss highest at medium sparsity: at :math:`S = 16` about 0.67 at :math:`s = 8` against the solved 0.335 at
:math:`s = 1, 2` (0.357 at :math:`s = 15`); at :math:`S = 32` only :math:`s \le 2` and :math:`s \ge 31` are learned,
everything from :math:`s = 4` to 29 stays at :math:`\ln 2`.

The measure, per state size and seed, is the **gap**

.. math:: g = \ell(s_\text{mid}) - \max\big(\ell(1), \ell(S-1)\big),

the final full-sequence loss at the medium sparsity :math:`s_\text{mid} = S/2` above the worse of the two easy
ends. The dense end is :math:`s = S - 1`, not :math:`s = S`: at :math:`s = S` every output bit is the parity of all
inputs and the model can copy its previous output token (a shortcut that needs no sparse pattern), so
:math:`s = S` is shown but never counted. The gap is large only when *both* ends are learned and the middle is not.
In the paper :math:`g \approx 0.67 - 0.357 = 0.31` at :math:`S = 16` and :math:`0.693 - 0.352 = 0.34` at
:math:`S = 32`.

The same gap at step 0 (the first held-out evaluation, before any update) is the negative control: with nothing
learned the loss does not depend on ``s``, so a measure that finds a gap there finds one in noise.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..core.cache import cached
from ._study import publish_main
from ..tasks.linear_map import LinearMapTask
from ..train.gpt_train import GPTRunConfig, Member, train_gpt
from .paper_defaults import LINEAR_MAP_INIT

__all__ = ["SparsityStudyConfig", "SparsityStudy", "sparsity_study", "REGENERATE"]

#: Commits the FAST study at the default seeds (chapter 6 then loads it; other seed offsets and paper scale compute).
REGENERATE = "python -m lib.studies.sparsity_study --publish"


def _task(S: int, s: int, seed: int) -> LinearMapTask:
    from math import comb

    return LinearMapTask(S, s, seed=seed, distinct=comb(S, s) >= S)  # distinct rows where there are enough supports


@dataclass(frozen=True)
class SparsityStudyConfig:
    """One model per ``(S, s, seed)``, stacked per state size; ``grid`` maps each ``S`` to its ``s`` values.

    ``seeds`` vary the initialisation and data stream; the map of each ``(S, s)`` is fixed (``map_seed``), as in the
    paper. Architecture, optimiser and ``init`` fields are those of :class:`lib.train.GPTRunConfig` (``init`` at paper
    scale: :data:`lib.studies.paper_defaults.LINEAR_MAP_INIT`).
    """

    grid: tuple[tuple[int, tuple[int, ...]], ...]
    seeds: tuple[int, ...] = (0, 1, 2)
    steps: int = 600
    map_seed: int = 0
    n_heads: int = 8
    d_head: int = 4
    d_mlp: int | None = None
    tokens_per_step: int = 512
    lr: float = 3e-3
    eval_every: int = 25
    eval_tokens: int = 2048
    init: str = "gpt2"

    def __post_init__(self) -> None:
        if not self.grid or not all(isinstance(S, int) and S >= 4 and s_values for S, s_values in self.grid):
            raise ValueError(f"grid must be non-empty ((S >= 4, (s, ...)), ...) pairs, got {self.grid!r}")
        for S, s_values in self.grid:
            needed = {1, S // 2, S - 1}
            if not needed <= set(s_values) or not all(1 <= s <= S for s in s_values):
                raise ValueError(
                    f"S={S}: s values must lie in 1..S and include 1, S/2 and S-1 (the gap), got {s_values}"
                )
        if len(self.seeds) < 2 or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(
                f"seeds must hold at least two distinct seeds (an interval needs them), got {self.seeds!r}"
            )

    @classmethod
    def fast(cls, seed_offset: int = 0) -> "SparsityStudyConfig":
        """The FAST build: S = 16 and 32 at ``d_model`` 32, three seeds (the paper's number), 600 steps."""
        return cls(
            grid=((16, (1, 2, 8, 15, 16)), (32, (1, 2, 16, 31, 32))), seeds=tuple(seed_offset + k for k in range(3))
        )

    @classmethod
    def paper(cls, seed_offset: int = 0) -> "SparsityStudyConfig":
        """Paper B's sweep: S = 8, 16, 32, every s, three seeds, 10,000 steps, ``d_model`` 128, MLP 512."""
        return cls(
            grid=tuple((S, tuple(range(1, S + 1))) for S in (8, 16, 32)),
            seeds=tuple(seed_offset + k for k in range(3)),
            steps=10_000,
            d_head=16,
            d_mlp=512,
            tokens_per_step=8192,
            lr=1e-3,
            eval_every=100,
            eval_tokens=16384,
            init=LINEAR_MAP_INIT,
        )

    def run(self, S: int) -> GPTRunConfig:
        """The stack of state size ``S``: members ordered (s, seed)."""
        s_values = dict(self.grid)[S]
        members = tuple(Member(_task(S, s, self.map_seed), seed=k) for s in s_values for k in self.seeds)
        return GPTRunConfig(
            members=members,
            n_heads=self.n_heads,
            d_head=self.d_head,
            d_mlp=self.d_mlp,
            tokens_per_step=self.tokens_per_step,
            steps=self.steps,
            lr=self.lr,
            eval_every=self.eval_every,
            eval_tokens=self.eval_tokens,
            init=self.init,
        )


@dataclass
class SparsityStudy:
    """Held-out full-sequence loss per state size: ``final[S]`` and ``initial[S]``, each ``(len(s), len(seeds))``."""

    config: SparsityStudyConfig
    final: dict[int, np.ndarray] = field(default_factory=dict)
    initial: dict[int, np.ndarray] = field(default_factory=dict)

    def s_values(self, S: int) -> np.ndarray:
        return np.array(dict(self.config.grid)[S])

    def _gap(self, S: int, loss: np.ndarray) -> np.ndarray:
        s = list(self.s_values(S))
        ends = np.maximum(loss[s.index(1)], loss[s.index(S - 1)])
        return loss[s.index(S // 2)] - ends  # (seeds,)

    def gap(self, S: int) -> np.ndarray:
        """Per seed: final loss at s = S/2 minus the worse of s = 1 and s = S-1 (module docstring)."""
        return self._gap(S, self.final[S])

    def control_gap(self, S: int) -> np.ndarray:
        """The same gap at step 0, before training (the negative control)."""
        return self._gap(S, self.initial[S])


@cached
def sparsity_study(config: SparsityStudyConfig, *, device=None) -> SparsityStudy:
    """Train every stack of ``config`` (each through the results cache) and keep the first and last evaluations.

    The result goes through the results cache too, keyed by ``config``; at FAST scale and the default seeds it is
    committed under ``data/`` (:data:`REGENERATE`, about 1 CPU-minute), so chapter 6 reads it instead of training.
    """
    if not isinstance(config, SparsityStudyConfig):
        raise ValueError(f"config must be a SparsityStudyConfig, got {type(config).__name__}")
    out = SparsityStudy(config)
    n_seeds = len(config.seeds)
    for S, s_values in config.grid:
        run = train_gpt(config.run(S), device=device)
        out.final[S] = run.loss[-1].reshape(len(s_values), n_seeds)  # members are ordered (s, seed)
        out.initial[S] = run.loss[0].reshape(len(s_values), n_seeds)
    return out


if __name__ == "__main__":
    publish_main(
        "lib.studies.sparsity_study",
        "sparsity_study",
        lambda m: m.SparsityStudyConfig.fast(),
        REGENERATE,
        "Run chapter 6's FAST sparsity sweep and optionally commit it.",
    )
