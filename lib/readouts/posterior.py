r"""Chapter 4's readouts of Langevin samples (and of the MAP minimisers beside them), against the theory.

Each function turns a sampled (or fitted) result into the few numbers a claim of chapter 4 reads, exactly as the
chapter computed them before they moved here:

* :func:`hysteresis`: the largest gap over :math:`P` between the target attention of copy-initialised and of
  random-initialised softmax chains (two branches that do not mix: the first-order signature), with its bootstrap
  over chains, and the same gap for linear attention (one minimum: the control);
* :func:`sampled_transition`: where each branch holds the copy pattern, and the bootstrap of the copy branch's
  onset in units of a theory's :math:`P^*`;
* :func:`sampled_efficiency`: how many times more samples the linear head needs than the softmax head to copy,
  both read off posterior samples at one :math:`(V, L)`, with the spread between two linear training sets as its
  control;
* :func:`order_parameter_deviation`: :math:`\hat c_1`'s relative deviation and :math:`\hat c_G`'s on its own scale;
* :func:`relative_deviation`: the largest relative deviation of a chain-averaged order parameter from a theory's
  curve (a statistic of chain indices, so :func:`lib.core.stats.group_bootstrap_interval` can resample whole chains);
* :func:`coverage_readouts`: the coverage (:func:`lib.theory.coverage`) of Adam minimisers, single posterior
  samples and posterior means, with a control of random softmax patterns;
* :func:`scaling_diagnostics`: the convergence record of the committed linear scaling study (split
  :math:`\hat R`, diverged chains, cost).

Chains are the independent units of a sampler (samples within a chain are correlated), so every interval here
resamples chains, never samples.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..core.intervals import group_bootstrap_interval  # NaN on cut data in a smoke run
from ..core.stats import Interval
from ..theory import coverage, first_order_transition
from ..train.scaling_fits import scaling_points

__all__ = [
    "hysteresis",
    "sampled_transition",
    "relative_deviation",
    "order_parameter_deviation",
    "CoverageReadouts",
    "coverage_readouts",
    "scaling_diagnostics",
]

#: Mean target attention at or above which a softmax branch counts as holding the copy pattern (chapter 4's choice:
#: the uniform branch sits near 1/L = 0.03 at L = 32, the copy branch of the MAP theory jumps to about 0.2).
ON_COPY = 0.15


def _chain_means(result, copy: bool) -> np.ndarray:
    """``(n_P, chains)``: per-chain means of the target attention over the copy- (or random-) initialised chains."""
    sel = result.is_copy if copy else ~result.is_copy
    if sel.sum() < 2:
        raise ValueError(f"need at least two {'copy' if copy else 'random'}-init chains, got {int(sel.sum())}")
    return result.target[:, sel].mean(2)


def hysteresis(soft, lin) -> dict:
    r"""The hysteresis of the sampled softmax posterior, and its control in the linear one.

    With :math:`\bar a_\text{copy}(P)` and :math:`\bar a_\text{rand}(P)` the mean target attention of the copy- and
    the random-initialised chains (over chains and samples), the statistic is
    :math:`\max_P [\bar a_\text{copy}(P) - \bar a_\text{rand}(P)]`; its interval resamples the chains within each
    branch (90 %, :func:`lib.core.stats.group_bootstrap_interval` with its default seed).

    Parameters
    ----------
    soft, lin : CopySGLDResult
        Softmax and linear samples (:func:`lib.sample_copy_posterior`), each with chains of both initialisations
        (``soft`` at least two of each).

    Returns
    -------
    dict
        ``random_branch``, ``copy_branch`` ``(n_P,)``: the two branches' means; ``i``: the index of the largest
        gap, and at it ``P``, ``rand``, ``copy`` (the two means) and ``rhat`` (split :math:`\hat R` over all
        chains); ``interval``: a :class:`lib.core.stats.Interval` of the gap; ``gap_lin``: the same largest gap for
        ``lin`` (no bootstrap).
    """
    if soft.config.kind != "softmax" or lin.config.kind != "linear":
        raise ValueError("need softmax samples first and linear samples second")
    rand, copy = soft.branch_mean("target", False), soft.branch_mean("target", True)
    i = int(np.argmax(copy - rand))
    gap_lin = lin.branch_mean("target", True) - lin.branch_mean("target", False)
    chain_rand, chain_copy = _chain_means(soft, False), _chain_means(soft, True)
    interval = group_bootstrap_interval(  # resample the chains within each branch
        lambda r, c: (chain_copy[:, c].mean(1) - chain_rand[:, r].mean(1)).max(),
        (chain_rand.shape[1], chain_copy.shape[1]),
    )
    return dict(
        random_branch=rand,
        copy_branch=copy,
        i=i,
        P=int(soft.P[i]),
        rand=float(rand[i]),
        copy=float(copy[i]),
        rhat=float(soft.rhat[i]),
        interval=interval,
        gap_lin=float(gap_lin.max()),
    )


def sampled_transition(soft, P_ref: float, threshold: float = ON_COPY) -> dict:
    r"""Where the sampled softmax posterior holds the copy pattern, in absolute terms and in units of ``P_ref``.

    ``lo``: the smallest :math:`P` of the grid at which the copy-initialised chains' mean target attention is at
    least ``threshold`` (they stay on the copy branch); ``hi``: the same for the random-initialised chains (they
    find it); :math:`\infty` for a branch that never reaches ``threshold`` on the grid (chains too short, or a grid
    that stops too early: a result, judged as such). ``interval``: the bootstrap over copy-initialised chains of
    ``lo / P_ref`` (a resample whose mean never reaches ``threshold`` counts as :math:`\infty` too).

    Raises
    ------
    ValueError
        ``P_ref`` not finite and > 0.
    """
    if not (np.isfinite(P_ref) and P_ref > 0):
        raise ValueError(f"P_ref must be finite and > 0, got {P_ref!r}")
    held = {copy: np.append(soft.P[soft.branch_mean("target", copy) >= threshold], np.inf) for copy in (True, False)}
    chain_copy = _chain_means(soft, True)
    interval = group_bootstrap_interval(
        lambda j: np.append(soft.P[chain_copy[:, j].mean(1) >= threshold], np.inf).min() / P_ref, chain_copy.shape[1]
    )
    return dict(lo=float(held[True].min()), hi=float(held[False].min()), interval=interval)


def sampled_efficiency(crossovers, transition: dict, P_ref: float) -> dict:
    r"""How many times more training sequences the sampled linear head needs to copy than the sampled softmax head.

    .. math:: r = \frac{\operatorname{median}_d P_\times^{(d)}}{P^*_\text{held}},

    with :math:`P_\times^{(d)}` the linear head's crossover on training set :math:`d` (``crossovers``, ``(n_draw,)``:
    :func:`lib.scaling_points`, the first :math:`P` at which the copy share reaches one half) and
    :math:`P^*_\text{held}` the smallest :math:`P` at which the softmax head's copy-initialised chains hold the copy
    branch (``transition``: :func:`sampled_transition` computed with ``P_ref``), at the same :math:`(V, L)`.

    Returns ``value`` :math:`r`; ``interval``: the bootstrap over training sets of the median crossover divided by the
    ends of the softmax transition's bootstrap over chains, the low end by the high end and the reverse (the two
    intervals combined at their extremes); ``control``: the same ratio between two linear training sets, the latest
    crossover over the earliest (one head on both sides: the effect, a difference between heads, is absent);
    ``linear``, ``softmax``: numerator and denominator.

    Raises
    ------
    ValueError
        Fewer than two finite crossovers, or a softmax transition that is not finite and > 0.
    """
    P_x = np.asarray(crossovers, dtype=float)
    if P_x.ndim != 1 or np.isfinite(P_x).sum() < 2:
        raise ValueError(f"crossovers must be a 1-d array with at least two finite values, got {P_x!r}")
    P_x = P_x[np.isfinite(P_x)]
    soft = float(transition["lo"])
    if not (np.isfinite(soft) and soft > 0):
        raise ValueError(f"the softmax transition must be finite and > 0, got {soft!r}")
    lin = group_bootstrap_interval(lambda j: float(np.median(P_x[j])), P_x.size)
    iv = transition["interval"]
    value = float(np.median(P_x)) / soft
    interval = Interval(value, lin.lo / (iv.hi * P_ref), lin.hi / (iv.lo * P_ref), lin.level, lin.n)
    return dict(
        value=value, interval=interval, control=float(P_x.max() / P_x.min()), linear=float(np.median(P_x)), softmax=soft
    )


def relative_deviation(chain_means, reference, where) -> float:
    r"""Largest relative deviation of a chain-averaged order parameter from a reference curve,

    .. math:: \max_{P \in \text{where}} \frac{|\bar c(P) - c_\text{ref}(P)|}{c_\text{ref}(P)},\qquad
        \bar c(P) = \frac{1}{n}\sum_{k=1}^{n} c_k(P),

    over the :math:`n` chains (columns) of ``chain_means`` ``(n_P, n)``; ``reference`` ``(n_P,)`` must be positive
    where ``where`` ``(n_P,)`` is true. Pass ``chain_means[:, idx]`` for a resample of the chains.
    """
    c = np.asarray(chain_means, dtype=float)
    ref, where = np.asarray(reference, dtype=float), np.asarray(where, dtype=bool)
    if c.ndim != 2 or ref.shape != c.shape[:1] or where.shape != ref.shape:
        raise ValueError(
            f"need chain_means (n_P, n) with reference and where (n_P,), got {c.shape}, {ref.shape}, {where.shape}"
        )
    if not where.any() or not (ref[where] > 0).all():
        raise ValueError("where must select at least one P, and the reference must be > 0 there")
    return float((np.abs(c.mean(1) - ref)[where] / ref[where]).max())


def order_parameter_deviation(c1_chains, c1_reference, cG_chains, cG_reference, where) -> float:
    r"""How far sampled linear order parameters lie from a theory: the larger of :math:`\hat c_1`'s largest relative
    deviation (:func:`relative_deviation`) and :math:`\hat c_G`'s largest deviation *on the scale of*
    :math:`\hat c_G`,

    .. math:: \max\Big(\max_{P} \frac{|\bar c_1(P) - c_1^\text{ref}(P)|}{c_1^\text{ref}(P)},\;
        \frac{\max_{P} |\bar c_G(P) - c_G^\text{ref}(P)|}{\max_{P} c_G^\text{ref}(P)}\Big),

    maxima over :math:`P` where ``where`` is true, :math:`\bar c` the mean over the chains (columns of the
    ``(n_P, n)`` arrays). The copy coefficient starts at zero at the onset, where a relative deviation is ill-posed
    (a gap of 0.01 at :math:`c_G = 0.02` reads as 50 %); measured against its largest value in the range it reads as
    what it is. Pass column subsets of both arrays for a resample of the chains.
    """
    cG, ref = np.asarray(cG_chains, dtype=float), np.asarray(cG_reference, dtype=float)
    where = np.asarray(where, dtype=bool)
    if cG.ndim != 2 or ref.shape != cG.shape[:1] or where.shape != ref.shape:
        raise ValueError(
            f"need cG_chains (n_P, n) with cG_reference and where (n_P,), got {cG.shape}, {ref.shape}, {where.shape}"
        )
    if not where.any() or not ref[where].max() > 0:
        raise ValueError("where must select at least one P, and cG_reference must be > 0 somewhere there")
    scaled = float(np.abs(cG.mean(1) - ref)[where].max() / ref[where].max())
    return max(relative_deviation(c1_chains, c1_reference, where), scaled)


@dataclass(frozen=True)
class CoverageReadouts:
    """Coverage per :math:`P` of the filtered Adam minimisers, single posterior samples and posterior means.

    ``adam_soft``, ``adam_lin``: the filtered minimisers; ``sample_soft``, ``sample_lin``: mean coverage of single
    samples (over chains and samples); ``mean_soft``: of the posterior-mean matrix (over all chains and samples);
    ``mean_lin``: of each chain's mean matrix, averaged over chains; ``above``: the softmax sizes above the MAP
    :math:`P^*`. ``summary`` holds the scalars chapter 4 glues (prefix ``cov_``).
    """

    adam_soft: np.ndarray
    adam_lin: np.ndarray
    sample_soft: np.ndarray
    mean_soft: np.ndarray
    sample_lin: np.ndarray
    mean_lin: np.ndarray
    above: np.ndarray
    summary: dict


def _coverage(A) -> np.ndarray:
    return np.asarray(coverage(torch.as_tensor(A)))  # (..., L, L) -> (...)


def coverage_readouts(
    adam_soft, adam_lin, sgld_soft, sgld_lin, *, P_lo: float, P_hi: float, seed: int, n_random: int = 64
) -> CoverageReadouts:
    r"""The coverage readouts of chapter 4 and their control.

    Parameters
    ----------
    adam_soft, adam_lin : CopyMapResult
        Filtered Adam fits (softmax, linear).
    sgld_soft, sgld_lin : CopySGLDResult
        Posterior samples at the same :math:`V` and lengths.
    P_lo, P_hi : float
        The sampled transition (:func:`sampled_transition`): the summary's ``sample_below`` is the largest
        single-sample coverage at :math:`P <` ``P_lo``, ``mean_deep`` the smallest posterior-mean coverage at
        :math:`P \ge` ``P_hi`` (NaN where the grid has no such :math:`P`, e.g. a branch that never reached the
        pattern: :math:`P_\text{hi} = \infty`).
    seed : int
        Seed of the control: ``n_random`` softmax patterns of i.i.d. :math:`N(0, 1)` scores (the initial scale),
        whose largest coverage is ``random``.

    Returns
    -------
    CoverageReadouts
        ``summary``: ``adam_min`` (smallest over the softmax minimisers above the MAP :math:`P^*`), ``sample_min``,
        ``sample_max`` (over both heads' single samples), ``sample_below``, ``mean_deep``, ``random``.
    """
    soft_kinds = (adam_soft.config.kind, sgld_soft.config.kind)
    if soft_kinds != ("softmax", "softmax") or adam_soft.config.L != sgld_soft.config.L:
        raise ValueError("adam_soft and sgld_soft must be softmax at the same L")
    if not (P_lo <= P_hi):
        raise ValueError(f"need P_lo <= P_hi, got {P_lo}, {P_hi}")
    if isinstance(n_random, bool) or not isinstance(n_random, int) or n_random < 1:
        raise ValueError(f"n_random must be an int >= 1, got {n_random!r}")
    V, L = adam_soft.config.V, adam_soft.config.L
    c = dict(
        adam_soft=_coverage(adam_soft.filtered("A")),
        adam_lin=_coverage(adam_lin.filtered("A")),
        sample_soft=_coverage(sgld_soft.A).mean(axis=(1, 2)),  # mean over chains and samples
        mean_soft=_coverage(sgld_soft.A.mean(axis=(1, 2))),  # of the posterior-mean matrix
        sample_lin=_coverage(sgld_lin.A).mean(axis=(1, 2)),
        mean_lin=_coverage(sgld_lin.A.mean(axis=2)).mean(1),
    )  # of each chain's mean, averaged
    above = adam_soft.P > float(first_order_transition(V, L, method="map").P_star)
    scores = torch.randn(n_random, L, L, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    summary = dict(
        adam_min=float(c["adam_soft"][above].min()),
        sample_min=float(min(c["sample_soft"].min(), c["sample_lin"].min())),
        sample_max=float(max(c["sample_soft"].max(), c["sample_lin"].max())),
        sample_below=_extreme(np.max, c["sample_soft"][sgld_soft.P < P_lo]),
        mean_deep=_extreme(np.min, c["mean_soft"][sgld_soft.P >= P_hi]),
        random=float(_coverage(torch.softmax(scores, -1)).max()),
    )
    return CoverageReadouts(above=above, summary=summary, **c)


def _extreme(f, x) -> float:
    """``f(x)`` as a float, NaN for an empty selection."""
    return float(f(x)) if np.size(x) else float("nan")


def scaling_diagnostics(scaling) -> dict:
    r"""The convergence record of the linear scaling study (:func:`lib.load_linear_scaling`).

    Returns
    -------
    dict
        ``rhat_max``: the largest split :math:`\hat R` of the copy share over every cell, draw and :math:`P`;
        ``rhat_used``: the same up to twice each cell's largest sampled crossover (where the exponents are read);
        ``n_diverged`` of ``n_chains`` chains diverged, ``where_diverged`` (text: the cells and sizes, or
        ``"none"``); ``scaling_cpu``: the study's cost in CPU-minutes (one thread).
    """
    crossings = scaling_points(scaling, "crossover")  # {cell: (n_draw,)}
    rhat_used = max(
        float(np.nanmax(scaling.rhat[c][:, scaling.P[c] <= 2 * np.nanmax(crossings[c])])) for c in crossings
    )
    where = "; ".join(
        f"V={V}, L={L}: P = {', '.join(str(int(p)) for p in scaling.P[V, L][d.any(axis=(0, 2))])}"
        for (V, L), d in scaling.diverged.items()
        if d.any()
    )
    return dict(
        rhat_max=max(float(np.nanmax(r)) for r in scaling.rhat.values()),
        rhat_used=rhat_used,
        n_diverged=int(sum(d.sum() for d in scaling.diverged.values())),
        n_chains=int(sum(d.size for d in scaling.diverged.values())),
        where_diverged=where or "none",
        scaling_cpu=sum(scaling.seconds.values()) / 60,
    )
