r"""Speed-ups from pre-pretraining, paired by seed.

Stage 2 of a pre-pretraining experiment trains every starting point (from scratch, and from each stage-1 corpus
with each kind of transfer) with the same seeds, so seed :math:`k` of every variant sees the same stage-2 data from
the same fresh parameters. With :math:`t_{vk}` the step at which variant :math:`v`'s run :math:`k` leaves the
plateau, capped at the budget :math:`T` (a run still on it counts at :math:`T`), the paired ratio and its geometric
mean over the :math:`n` seeds are

.. math:: \rho_{vk} = \frac{\min(t_{0k}, T)}{\min(t_{vk}, T)}, \qquad
   \bar\rho_v = \exp\Big(\frac1n \sum_k \ln \rho_{vk}\Big),

with variant 0 the scratch baseline; :math:`\bar\rho_v > 1` means variant :math:`v` leaves the plateau sooner.

**Seed null.** The same ratio between two runs from scratch that differ only in their seed,
:math:`\rho^{(d)}_k = \min(t_{0k}, T) / \min(t_{0,k+d}, T)` (seeds taken cyclically, :math:`d = 1 \dots n-1`), is
what seed noise alone gives a paired ratio: no pre-pretraining by construction, and it passes a speed-up criterion
whenever seeds alone differ that much (:func:`seed_nulls`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["PrePretrainSpeedups", "prepretrain_speedups", "seed_nulls"]


@dataclass(frozen=True)
class PrePretrainSpeedups:
    """The speed-ups of :func:`prepretrain_speedups`.

    ``speedup``: ``{(task, variant): geometric mean over seeds}`` for every variant but scratch, task-major;
    ``paired``: ``{(task, variant): (seeds,) paired ratios}`` for the same keys less the positive controls;
    ``null``: ``{task: (seeds,) paired ratios}`` of the negative control (the last row of the times).
    """

    speedup: dict
    paired: dict
    null: dict

    def best(self) -> tuple[tuple[str, str], float]:
        """The (task, variant) with the largest geometric-mean speed-up, and that speed-up."""
        key = max(self.speedup, key=self.speedup.get)
        return key, self.speedup[key]

    def best_from(self, task: str, corpus: str) -> float:
        """The larger speed-up on ``task`` of the two transfers (full model, attention only) from ``corpus``."""
        return max(self.speedup[task, f"{corpus}, {what}"] for what in ("full", "attention"))

    def attention_wins(self, corpora=("Dyck", "automaton")) -> tuple[int, int]:
        """In how many (task, corpus) pairs transferring the attention alone beats the full model, of how many."""
        pairs = [(t, c) for t in dict.fromkeys(t for t, _ in self.speedup) for c in corpora]
        wins = sum(self.speedup[t, f"{c}, attention"] > self.speedup[t, f"{c}, full"] for t, c in pairs)
        return int(wins), len(pairs)

    def count(self, factor: float = 1.2) -> tuple[int, int]:
        """How many speed-ups are at least ``factor`` and how many at most ``1 / factor`` (that much slower)."""
        if not factor > 1:
            raise ValueError(f"factor must be > 1, got {factor!r}")
        values = list(self.speedup.values())
        return sum(v >= factor for v in values), sum(v <= 1 / factor for v in values)

    def __str__(self) -> str:
        return "\n".join(f"{task:10s} {name:22s} speed-up {value:.2f}" for (task, name), value in self.speedup.items())


def prepretrain_speedups(
    times: dict, budgets: dict, variants, positive=("automaton", "automaton")
) -> PrePretrainSpeedups:
    """Paired speed-ups over scratch of every pre-pretraining variant (module docstring).

    Parameters
    ----------
    times : dict
        ``{task: (len(variants) + 1, seeds)}`` steps at which each stage-2 run leaves the plateau (``inf``: never),
        rows in the order of ``variants`` (scratch first), then the negative control.
    budgets : dict
        ``{task: budget}``: the stage-2 steps; a time beyond it counts at it.
    variants : sequence of ``(name, corpus, transfer)``
        :data:`lib.PRE_VARIANTS`; the first is the scratch baseline.
    positive : (corpus, task)
        The positive control, left out of ``paired``: a corpus that shares the task's pattern by construction.
    """
    variants = tuple(variants)
    if len(variants) < 2 or variants[0][1] is not None:
        raise ValueError("variants must start with the scratch baseline (corpus None) and hold at least one other")
    speedup, paired, null = {}, {}, {}
    for task, t in times.items():
        t = np.asarray(t, dtype=float)
        if t.ndim != 2 or t.shape[0] != len(variants) + 1:
            raise ValueError(
                f"times[{task!r}] must be (variants + control = {len(variants) + 1}, seeds), got {t.shape}"
            )
        if task not in budgets or not budgets[task] > 0:
            raise ValueError(f"budgets needs a positive budget for {task!r}")
        capped = np.minimum(t, budgets[task])
        ratios = capped[0] / capped  # (variants + control, seeds): scratch over each row
        for v, (name, corpus, _) in enumerate(variants[1:], start=1):
            speedup[task, name] = float(np.exp(np.mean(np.log(ratios[v]))))
            if (corpus, task) != tuple(positive):
                paired[task, name] = ratios[v]
        null[task] = ratios[-1]
    return PrePretrainSpeedups(speedup=speedup, paired=paired, null=null)


def seed_nulls(times: dict, budgets: dict) -> dict:
    r"""``{(task, "scratch, seed +d"): (seeds,) ratios}``: scratch run :math:`k` over scratch run :math:`k + d`
    (cyclically, :math:`d = 1 \dots n - 1`), the seed null of the module docstring.

    ``times`` and ``budgets`` as in :func:`prepretrain_speedups` (row 0 of each task's times is scratch).
    """
    out = {}
    for task, t in times.items():
        t = np.asarray(t, dtype=float)
        if t.ndim != 2 or t.shape[1] < 2:
            raise ValueError(f"times[{task!r}] must be (rows, seeds >= 2), got {t.shape}")
        if task not in budgets or not budgets[task] > 0:
            raise ValueError(f"budgets needs a positive budget for {task!r}")
        scratch = np.minimum(t[0], budgets[task])  # (seeds,)
        for d in range(1, len(scratch)):
            out[task, f"scratch, seed +{d}"] = scratch / np.roll(scratch, -d)
    return out
