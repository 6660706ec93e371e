r"""Measures that claims read off sets of training curves, written so a bootstrap can resample their seeds.

Paper B compares architectures by loss curves *averaged over seeds*: the step at which the seed-averaged held-out
loss of one configuration first falls below the plateau threshold. For two configurations (a slow one, a fast one)
on groups :math:`g` of runs (e.g. sparsities),

.. math:: r = \exp\Big(\frac{1}{|G|}\sum_{g\in G} \ln\frac{\min(t^\text{slow}_g, T)}{t^\text{fast}_g}\Big),

the geometric mean over the groups :math:`G` in which the fast configuration's averaged curve leaves the plateau
within the budget :math:`T` (a slow curve still on it counts at :math:`T`, so :math:`r` is then a lower bound).
Seed indices are arguments, so :func:`lib.core.stats.group_bootstrap_interval` can resample the seeds of each
configuration.
"""

from __future__ import annotations

import math

import numpy as np

from .curves import first_below

__all__ = [
    "LINEAR_MAP_EXIT",
    "SOLVED",
    "automaton_exit",
    "mean_curve_time",
    "curve_time_ratio",
    "heads_vs_head_size",
    "archs_beating",
    "seed_spread",
    "input_bit_loss",
    "relaxation_times",
    "fluctuation",
    "group_time_ratios",
    "halves_time_ratio",
    "emergence_by_bias",
    "fixed_width_heads",
    "head_size_plateaus",
    "heads_halves_control",
    "sparsity_medians",
    "peak_ratio",
]


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


def curve_time_ratio(
    slow, fast, n_groups: int, threshold: float, budget: float, slow_seeds=None, fast_seeds=None
) -> float:
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


def slowing_factors(tau_lin, P_lin, P1: float, tau_soft, P_soft, P_star: float) -> tuple[float, float]:
    r"""Critical slowing down of the two heads: ``(linear factor at its peak, softmax factor at P*)``.

    ``tau_lin`` ``(n_P, seeds)`` are the linear runs' relaxation times (:func:`relaxation_times`) at the sizes
    ``P_lin``, ``tau_soft`` the softmax runs' at ``P_soft``. With :math:`\bar\tau(P)` the mean over seeds,

    .. math:: f_\text{lin} = \frac{\max_P \bar\tau_\text{lin}(P)}{\langle \bar\tau_\text{lin}(P)\rangle_{P \le P_1/2}},
              \qquad f_\text{soft} = \frac{\bar\tau_\text{soft}(P_\text{last} \le P^*)}
              {\langle \bar\tau_\text{soft}(P)\rangle_{P \le 0.6\,P^*}} .

    A continuous transition makes :math:`f_\text{lin}` large (the curvature vanishes at the onset); a first-order
    one gives no such peak at :math:`P^*`.
    """
    tau_lin, tau_soft = np.asarray(tau_lin, dtype=float), np.asarray(tau_soft, dtype=float)
    P_lin, P_soft = np.asarray(P_lin, dtype=float), np.asarray(P_soft, dtype=float)
    for name, tau, P in (("tau_lin", tau_lin, P_lin), ("tau_soft", tau_soft, P_soft)):
        if tau.ndim != 2 or P.shape != tau.shape[:1]:
            raise ValueError(f"{name} must be (n_P, seeds) with n_P = {P.size} sizes, got {tau.shape}")
    far_lin, far_soft, at = P_lin <= 0.5 * P1, P_soft <= 0.6 * P_star, P_soft <= P_star
    if not (far_lin.any() and far_soft.any()):
        raise ValueError("the grids need sizes far below the transitions (P <= P1/2 and P <= 0.6 P*)")
    lin, soft = tau_lin.mean(1), tau_soft.mean(1)  # (n_P,) mean over seeds
    return float(lin.max() / lin[far_lin].mean()), float(soft[at][-1] / soft[far_soft].mean())


def fluctuation(target) -> tuple[np.ndarray, np.ndarray]:
    """Variance in time of the order parameter over the second half of each run ``target`` ``(n_P, seeds, K)``:
    its mean over seeds and the standard error of that mean, each ``(n_P,)``."""
    target = np.asarray(target)
    if target.ndim != 3 or target.shape[1] < 2:
        raise ValueError(f"target must be (n_P, seeds >= 2, K), got {target.shape}")
    v = target[..., target.shape[-1] // 2 :].var(-1)  # (n_P, seeds)
    return v.mean(1), v.std(1, ddof=1) / np.sqrt(v.shape[1])


def group_time_ratios(slow, fast, n_groups: int, threshold: float, budget: float) -> list[tuple[int, float, bool]]:
    r"""The terms of :func:`curve_time_ratio`, one per group: ``(g, ratio, bound)``.

    For each group ``g`` in which the fast configuration's seed-averaged curve leaves the plateau within the budget,
    :math:`\min(t^\text{slow}_g, T) / t^\text{fast}_g` and whether it is a lower bound (the slow curve never left,
    so it counts at the budget :math:`T`). Groups where the fast curve stays on the plateau are left out, so the
    geometric mean of the ratios is :func:`curve_time_ratio` (arguments as there).
    """
    if n_groups < 1 or not budget > 0:
        raise ValueError(f"need n_groups >= 1 and budget > 0, got {n_groups}, {budget}")
    out = []
    for g in range(n_groups):
        t_slow, t_fast = (
            mean_curve_time(run.steps, _group(run.pred_loss, n_groups, g), threshold) for run in (slow, fast)
        )
        if math.isfinite(t_fast):
            out.append((g, min(t_slow, budget) / t_fast, not math.isfinite(t_slow)))
    return out


def halves_time_ratio(run, n_groups: int, threshold: float, budget: float) -> float:
    r"""One configuration against itself: the seeds of each group split into even and odd positions, and

    .. math:: r_\text{halves} = \exp\Big|\frac{1}{|G|}\sum_{g} \ln\frac{\min(t^\text{even}_g, T)}{\min(t^\text{odd}_g, T)}\Big|,

    with :math:`t^\text{even}_g` the step at which the curve averaged over the even seeds of group :math:`g` first
    falls below ``threshold`` (a curve that never does counts at the budget :math:`T`). The larger direction is
    reported, so :math:`r_\text{halves} \ge 1`: the ratio that seed noise alone produces, the negative control of
    :func:`curve_time_ratio`. ``run`` has ``steps (K,)`` and group-major ``pred_loss (K, n_groups * seeds)`` with at
    least two seeds per group.
    """
    if n_groups < 1 or not budget > 0:
        raise ValueError(f"need n_groups >= 1 and budget > 0, got {n_groups}, {budget}")
    logs = []
    for g in range(n_groups):
        loss = _group(run.pred_loss, n_groups, g)  # (K, seeds)
        if loss.shape[1] < 2:
            raise ValueError(f"need at least two seeds per group to split, got {loss.shape[1]}")
        even, odd = (
            min(mean_curve_time(run.steps, loss, threshold, np.arange(k, loss.shape[1], 2)), budget) for k in (0, 1)
        )
        logs.append(math.log(even / odd))
    return float(math.exp(abs(np.mean(logs))))


def _group(pred_loss, n_groups: int, g: int) -> np.ndarray:
    """Columns of group ``g`` of a group-major ``pred_loss (K, n_groups * seeds)``."""
    loss = np.asarray(pred_loss, dtype=float)
    if loss.ndim != 2 or loss.shape[1] % n_groups:
        raise ValueError(f"pred_loss must be (K, n_groups * seeds) with n_groups={n_groups}, got shape {loss.shape}")
    k = loss.shape[1] // n_groups
    return loss[:, g * k : (g + 1) * k]


def emergence_by_bias(base, biased, biases, threshold: float) -> dict:
    r"""Per bias strength :math:`c`, the emergence step of every seed: first evaluation below ``threshold``.

    ``base`` is the unbiased stack (``biases[0]`` must be 0; all its members count); ``biased`` stacks the nonzero
    strengths ``biases[1:]`` c-major, in equal blocks of seeds. Each is a run with ``steps (K,)`` and
    ``pred_loss (K, members)``. Returns ``{c: (seeds,)}`` with ``inf`` where a seed does not emerge.
    """
    biases = [float(c) for c in biases]
    if len(biases) < 2 or biases[0] != 0.0:
        raise ValueError(f"biases must start with 0 and hold a nonzero strength, got {biases}")
    loss = np.asarray(biased.pred_loss, dtype=float)
    if loss.ndim != 2 or loss.shape[1] % (len(biases) - 1):
        raise ValueError(f"biased.pred_loss must be (K, {len(biases) - 1} * seeds), got {loss.shape}")
    few = loss.shape[1] // (len(biases) - 1)
    out = {0.0: first_below(base.steps, base.pred_loss, threshold)}
    for j, c in enumerate(biases[1:]):
        out[c] = first_below(biased.steps, loss[:, j * few : (j + 1) * few], threshold)
    return out


def fixed_width_heads(runs, threshold: float) -> tuple[dict, dict]:
    r"""Linear map at a fixed width :math:`H d_\text{head}`: per head count :math:`H`, the final held-out loss of
    each seed and how many seeds emerge (output-bit loss below ``threshold``).

    ``runs`` are the emergence runs (:func:`lib.load_emergence_runs`): the ``("heads", H)`` stacks, and for the
    default head count the first ``config.n_width`` seeds of the ``"seeds"`` stack. Returns ``(loss, emerged)``:
    ``{H: (seeds,)}`` and ``{H: int}``.
    """
    cfg = runs.config
    if cfg.n_width > len(cfg.seeds):
        raise ValueError(f"n_width {cfg.n_width} exceeds the {len(cfg.seeds)} seeds")
    loss, emerged = {}, {}
    for H in cfg.heads:
        run, members = (runs["seeds"], slice(0, cfg.n_width)) if H == cfg.n_heads else (runs["heads", H], slice(None))
        loss[H] = np.asarray(run.loss)[-1, members]
        emerged[H] = int(np.isfinite(first_below(run.steps, np.asarray(run.pred_loss)[:, members], threshold)).sum())
    return loss, emerged


def head_size_plateaus(runs, context, threshold: float) -> dict:
    r"""Single-rule automaton at a fixed width: per head count :math:`H`, the median plateau over seeds.

    The default head count is the context sweep's run at its smallest state size (``context``, without bias); the
    others are the emergence runs' ``("thin", H)`` stacks. The plateau of a seed is its first evaluation below
    ``threshold`` (``inf`` if never, which the median keeps). Returns ``{H: median plateau}``.
    """
    S0, default = context.config.sizes[0], context.config.model()["n_heads"]
    out = {}
    for H in runs.config.ca_heads:
        if H == default:
            out[H] = float(np.median(context.plateau(S0, 0.0)))
        else:
            run = runs["thin", H]
            out[H] = float(np.median(first_below(run.steps, run.pred_loss, threshold)))
    return out


def heads_halves_control(final_loss, tie: float) -> float:
    r"""Negative control for :func:`heads_vs_head_size`: even against odd seeds of the *same* grid cell.

    Per cell of ``final_loss (len(d_heads), len(heads), seeds)`` the difference :math:`\Delta` of the even seeds'
    mean final loss minus the odd seeds'; returns the share of decisive cells (:math:`|\Delta| >` ``tie``) won by
    the even seeds (:math:`\Delta < -` ``tie``), 0.0 when no cell is decisive. Nothing but the seeds differs, so
    this share should be far from a clear majority.
    """
    loss = np.asarray(final_loss, dtype=float)
    if loss.ndim != 3 or loss.shape[2] < 2:
        raise ValueError(f"final_loss must be (d_heads, heads, seeds >= 2), got shape {loss.shape}")
    diff = loss[..., 0::2].mean(2) - loss[..., 1::2].mean(2)  # (d_head, H)
    return float((diff < -tie).sum() / max((np.abs(diff) > tie).sum(), 1))


def sparsity_medians(study) -> dict:
    r"""The sparsity sweep's table: ``{S: {s: median over seeds of the final loss}}`` (``study.final[S]`` is
    ``(len(s), seeds)``, the ``s`` of ``study.s_values(S)``)."""
    out = {}
    for S, final in study.final.items():
        final = np.asarray(final, dtype=float)
        s_values = study.s_values(S)
        if final.ndim != 2 or final.shape[0] != len(s_values):
            raise ValueError(f"final[{S}] must be ({len(s_values)}, seeds), got shape {final.shape}")
        out[S] = {int(s): float(np.median(f)) for s, f in zip(s_values, final)}
    return out


def peak_ratio(values, at: int, width: int = 3) -> float:
    r"""How far ``values[at]`` stands out of its neighbours: :math:`v_k / \mathrm{median}\{v_j : 0 < |j - k| \le w\}`.

    ``values`` ``(n,)`` is a curve along a grid (e.g. a variance against :math:`P`), ``at`` an index (negative
    counts from the end), ``width`` :math:`w` the neighbours taken on each side (fewer at the ends of the grid: at
    the last point only the :math:`w` before it). A peak of a fluctuation at a transition gives a ratio well above
    1; a smooth curve about 1.
    """
    v = np.asarray(values, dtype=float)
    if v.ndim != 1 or v.size < 2:
        raise ValueError(f"values must be 1-d with at least 2 entries, got shape {v.shape}")
    if isinstance(at, bool) or not isinstance(at, (int, np.integer)) or not -v.size <= at < v.size:
        raise ValueError(f"at must be an index into {v.size} values, got {at!r}")
    if isinstance(width, bool) or not isinstance(width, int) or width < 1:
        raise ValueError(f"width must be an int >= 1, got {width!r}")
    k = int(at) % v.size
    return float(v[k] / np.median(np.r_[v[max(k - width, 0) : k], v[k + 1 : k + 1 + width]]))


def growth_before(P, values, P_jump: float) -> tuple[float, float, float]:
    r"""How much a curve grows on the grid before a jump: :math:`v(P_\text{last}) / v(P_\text{first})` over the sizes
    :math:`P < P_\text{jump}`, with :math:`P_\text{first}, P_\text{last}` the first and last of them.

    ``P`` ``(n,)`` is an increasing grid, ``values`` ``(n,)`` the curve on it (e.g. a variance on the uniform branch).
    Returns ``(growth, P_first, P_last)``; all three NaN with fewer than two sizes before the jump (a jump at the
    start of the grid leaves nothing to compare).
    """
    P, v = np.asarray(P, dtype=float), np.asarray(values, dtype=float)
    if P.ndim != 1 or v.shape != P.shape:
        raise ValueError(f"P and values must be 1-d of the same length, got shapes {P.shape}, {v.shape}")
    if P.size > 1 and not np.all(np.diff(P) > 0):
        raise ValueError("P must be increasing")
    pre = P < P_jump
    if pre.sum() < 2:
        return float("nan"), float("nan"), float("nan")
    return float(v[pre][-1] / v[pre][0]), float(P[pre][0]), float(P[pre][-1])


def spread_at_widest(emergence, cv):
    r"""The bootstrap interval, over seeds, of the coefficient of variation of the emergence step at the size where
    it is largest (chapter 8's S-random).

    ``emergence`` ``(n_P, seeds)`` holds each seed's emergence step (``inf``: not within the budget), ``cv`` ``(n_P,)``
    the coefficient of each size (NaN where fewer than two seeds emerged). The interval resamples the seeds that
    emerged at the widest size (:func:`lib.core.stats.bootstrap_interval` of
    :func:`lib.core.stats.coefficient_of_variation`); ``None`` where no size has a coefficient (no seed emerged twice).
    """
    from ..core.intervals import bootstrap_interval  # NaN on cut data in a smoke run
    from ..core.stats import coefficient_of_variation

    e, cv = np.asarray(emergence, dtype=float), np.asarray(cv, dtype=float)
    if e.ndim != 2 or cv.shape != e.shape[:1]:
        raise ValueError(f"need emergence (n_P, seeds) and cv (n_P,), got shapes {e.shape}, {cv.shape}")
    if not np.isfinite(cv).any():
        return None
    widest = e[int(np.nanargmax(cv))]
    return bootstrap_interval(widest[np.isfinite(widest)], coefficient_of_variation)
