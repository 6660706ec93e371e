r"""Measures that claims read off sets of training curves, written so a bootstrap can resample their seeds.

Paper B compares architectures by loss curves *averaged over seeds*: the step at which the seed-averaged held-out
loss of one configuration first falls below the plateau threshold. For two configurations (a slow one, a fast one)
on groups :math:`g` of runs (e.g. sparsities),

.. math:: r = \exp\Big(\frac{1}{|G|}\sum_{g\in G} \ln\frac{\min(t^\text{slow}_g, T)}{t^\text{fast}_g}\Big),

the geometric mean over the groups :math:`G` in which the fast configuration's averaged curve leaves the plateau
within the budget :math:`T` (a slow curve still on it counts at :math:`T`, so :math:`r` is then a lower bound).
Seed indices are arguments, so :func:`lib.stats.group_bootstrap_interval` can resample the seeds of each
configuration.
"""

from __future__ import annotations

import math

import numpy as np

from .train.pattern_metrics import first_below

__all__ = ["LINEAR_MAP_EXIT", "SOLVED", "automaton_exit", "mean_curve_time", "curve_time_ratio", "heads_vs_head_size", "archs_beating", "seed_spread",
           "input_bit_loss", "relaxation_times", "fluctuation"]


#: Linear map: the held-out output-bit loss below which a run has left the plateau (chance is ln 2 = 0.693; our
#: choice, between chance and the first solved output bits).
LINEAR_MAP_EXIT = 0.55

#: A binary output (a row of the linear map, a run on predictable tokens) counts as learned below a tenth of chance.
SOLVED = 0.1 * math.log(2)


def automaton_exit(C: int, frac: float = 0.9) -> float:
    r"""The automaton's plateau ends below :math:`0.9 \ln C` on the predictable cells (paper B's 1.3 at :math:`C = 4`
    is :math:`0.94 \ln C`)."""
    if isinstance(C, bool) or not isinstance(C, int) or C < 2:
        raise ValueError(f"C must be an int >= 2, got {C!r}")
    if not 0 < frac < 1:
        raise ValueError(f"frac must be in (0, 1), got {frac!r}")
    return frac * math.log(C)


def mean_curve_time(steps, pred_loss, threshold: float, seeds=None) -> float:
    """First step at which the mean over ``seeds`` (columns of ``pred_loss (K, n)``, default all) is below ``threshold``.

    ``inf`` where the averaged curve never gets there. Repeated seed indices (a bootstrap resample) count repeatedly.
    """
    loss = np.asarray(pred_loss, dtype=float)
    if loss.ndim != 2:
        raise ValueError(f"pred_loss must be (K, seeds), got shape {loss.shape}")
    idx = np.arange(loss.shape[1]) if seeds is None else np.asarray(seeds, dtype=int)
    return float(first_below(steps, loss[:, idx].mean(1), threshold))


def curve_time_ratio(slow, fast, n_groups: int, threshold: float, budget: float, slow_seeds=None, fast_seeds=None) -> float:
    r"""Geometric mean over groups of slow / fast steps to leave the plateau, seed-averaged (module docstring).

    Parameters
    ----------
    slow, fast : runs with ``steps (K,)`` and ``pred_loss (K, n_groups * seeds)``, group-major (the seeds of group
        ``g`` are columns ``g * seeds`` to ``(g + 1) * seeds - 1``).
    n_groups : int
    threshold, budget : float
        The plateau threshold and the training budget (a slow curve that never leaves counts at ``budget``).
    slow_seeds, fast_seeds : int arrays, optional
        Seed indices within a group (default all), e.g. a bootstrap resample.

    Returns 0.0 where the fast configuration leaves the plateau in no group (no speed-up shown).
    """
    if n_groups < 1 or not budget > 0:
        raise ValueError(f"need n_groups >= 1 and budget > 0, got {n_groups}, {budget}")
    logs = []
    for g in range(n_groups):
        curves = []
        for run, seeds in ((slow, slow_seeds), (fast, fast_seeds)):
            loss = np.asarray(run.pred_loss, dtype=float)
            if loss.shape[1] % n_groups:
                raise ValueError(f"pred_loss has {loss.shape[1]} columns, not a multiple of n_groups={n_groups}")
            k = loss.shape[1] // n_groups
            curves.append(mean_curve_time(run.steps, loss[:, g * k : (g + 1) * k], threshold, seeds))  # (K, seeds)
        t_slow, t_fast = curves
        if math.isfinite(t_fast):
            logs.append(math.log(min(t_slow, budget) / t_fast))
    return float(math.exp(np.mean(logs))) if logs else 0.0


def heads_vs_head_size(final_loss, heads, d_heads, tie: float, seeds=None) -> dict:
    r"""More heads or bigger heads: from each cell :math:`(H, d)` of a grid, double :math:`H` or double :math:`d`.

    Both double :math:`d_\text{model} = H d`. With :math:`\bar\ell(H, d)` the final loss averaged over ``seeds``
    (indices into the last axis of ``final_loss (len(d_heads), len(heads), seeds)``, default all), a pair counts for
    *more heads* when :math:`\bar\ell(H, 2d) - \bar\ell(2H, d) > ` ``tie``, for *bigger heads* when it is below
    ``-tie``, and as a tie otherwise. Returns the counts and ``share`` = more / decisive (0.0 when no pair is decisive:
    no evidence that more heads win).
    """
    loss = np.asarray(final_loss, dtype=float)
    if loss.ndim != 3 or loss.shape[:2] != (len(d_heads), len(heads)):
        raise ValueError(f"final_loss must be (len(d_heads), len(heads), seeds), got shape {loss.shape}")
    idx = np.arange(loss.shape[2]) if seeds is None else np.asarray(seeds, dtype=int)
    mean = loss[:, :, idx].mean(2)  # (d_head, H)
    more = bigger = ties = 0
    for i in range(len(d_heads) - 1):
        for j in range(len(heads) - 1):
            if heads[j + 1] != 2 * heads[j] or d_heads[i + 1] != 2 * d_heads[i]:
                continue
            diff = mean[i + 1, j] - mean[i, j + 1]  # (H, 2d) minus (2H, d)
            more += diff > tie
            bigger += diff < -tie
            ties += abs(diff) <= tie
    decisive = more + bigger
    return dict(more=int(more), bigger=int(bigger), ties=int(ties), share=more / decisive if decisive else 0.0)


def archs_beating(losses: dict, ref: str, seeds: dict | None = None) -> int:
    r"""How many architectures reach a lower mean held-out loss than ``ref``.

    ``losses[a]`` is ``(K, seeds)``: the held-out loss of architecture ``a`` at each evaluation and seed; the score of
    an architecture is its mean over training and over ``seeds[a]`` (indices, default all; a bootstrap resample).
    """
    if ref not in losses:
        raise ValueError(f"ref {ref!r} is not among the architectures {sorted(losses)}")
    seeds = seeds or {}

    def score(a):
        loss = np.asarray(losses[a], dtype=float)
        if loss.ndim != 2:
            raise ValueError(f"losses[{a!r}] must be (K, seeds), got shape {loss.shape}")
        idx = seeds.get(a, np.arange(loss.shape[1]))
        return loss[:, np.asarray(idx, dtype=int)].mean()

    best = score(ref)
    return int(sum(score(a) < best for a in losses if a != ref))


def seed_spread(steps, seeds=None) -> float:
    r"""Smallest over rows (model sizes) of the latest over the earliest seed's step, :math:`\min_i \max_k t_{ik} /
    \max(\min_k t_{ik}, 1)`.

    ``steps`` is ``(sizes, seeds)``; ``seeds`` one index array per row (default all), e.g. a bootstrap resample of
    each size's seeds.
    """
    t = np.asarray(steps, dtype=float)
    if t.ndim != 2:
        raise ValueError(f"steps must be (sizes, seeds), got shape {t.shape}")
    rows = [t[i] if seeds is None else t[i, np.asarray(seeds[i], dtype=int)] for i in range(len(t))]
    return float(min(r.max() / max(r.min(), 1.0) for r in rows))


def input_bit_loss(loss, pred_loss, S: int) -> np.ndarray:
    r"""Linear map: the held-out loss on the :math:`S-1` predictions of *input* bits, from the loss over all
    :math:`2S-1` predictions and the loss over the :math:`S` output bits,

    .. math:: \ell_\text{in} = \frac{(2S-1)\,\ell - S\,\ell_\text{out}}{S-1}.

    The input bits are independent coin flips, so a causal model cannot do better than :math:`\ln 2` on them;
    a loss below it means the model sees them (the unmasked MLP-Mixer's leak). Arrays broadcast, e.g. ``(K, E)``.
    """
    if isinstance(S, bool) or not isinstance(S, int) or S < 2:
        raise ValueError(f"S must be an int >= 2, got {S!r}")
    return (np.asarray(loss) * (2 * S - 1) - np.asarray(pred_loss) * S) / (S - 1)


def relaxation_times(steps, target, tol: float = 0.05, floor: float = 0.01) -> np.ndarray:
    r"""Per run, the recorded step after which the order parameter stays within ``tol`` of its final value.

    ``target`` ``(..., K)`` is recorded at ``steps`` ``(K,)``; a run counts as relaxed from the first record
    :math:`k` with :math:`|x_j - x_K| \le \text{tol}\,\max(|x_K|, \text{floor})` for every :math:`j \ge k`
    (critical slowing down: near a continuous transition gradient descent relaxes ever more slowly).
    """
    steps, target = np.asarray(steps), np.asarray(target)
    if target.shape[-1:] != steps.shape or steps.ndim != 1:
        raise ValueError(f"target (..., K) must end with the K = {steps.shape} recorded steps, got {target.shape}")
    final = target[..., -1:]
    inside = np.abs(target - final) <= tol * np.maximum(np.abs(final), floor)
    last_out = np.where(~inside, np.arange(inside.shape[-1]), -1).max(-1)  # the last record outside the band
    return steps[np.minimum(last_out + 1, inside.shape[-1] - 1)]


def fluctuation(target) -> tuple[np.ndarray, np.ndarray]:
    """Variance in time of the order parameter over the second half of each run ``target`` ``(n_P, seeds, K)``:
    its mean over seeds and the standard error of that mean, each ``(n_P,)``."""
    target = np.asarray(target)
    if target.ndim != 3 or target.shape[1] < 2:
        raise ValueError(f"target must be (n_P, seeds >= 2, K), got {target.shape}")
    v = target[..., target.shape[-1] // 2 :].var(-1)  # (n_P, seeds)
    return v.mean(1), v.std(1, ddof=1) / np.sqrt(v.shape[1])
