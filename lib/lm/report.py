r"""Chapter 5's readings of a suite analysis: the tables it prints and the values it glues into its prose.

Everything here reads a :class:`~lib.lm.analysis.SuiteAnalysis` (sizes × seeds × tasks × prompts × checkpoints) or a
live patch of one checkpoint pair; nothing trains. Each reading is a small result object with a printable table
(``str``) and ``summary()``, the dict of values the chapter glues under the same names.

The measures, all paper B's or ours as the chapter says:

* **point of emergence of a run** (:func:`emergence_summary`): per (size, seed) the median over prompts of the
  steps to emergence (midpoint convention; never-solvers at the last step), and the spread of a size's seeds,
  :math:`\max_k t_k / \max(\min_k t_k, 1)`;
* **abruptness** (:func:`jump_summary`): per emerging prompt, the largest rise of p(target) between neighbouring
  checkpoints over its total rise (:func:`lib.lm.abruptness`), against the same curves with shuffled checkpoints;
* **patching** (:func:`head_report`, :func:`patch_summary`, :func:`random_heads_recovery`): the fraction of the gain
  recovered, :math:`(\bar p_\text{patched} - \bar p_\text{old}) / (\bar p_\text{new} - \bar p_\text{old})`.

This module is not imported by :mod:`lib.lm` (whose code keys the committed analysis); ``lib`` exports its names.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..stats import halves_ratio
from .emergence import abruptness, emergence_steps
from .heads import head_scores
from .patching import patched_last_logits, record_patterns, target_probs
from .results import load_analysis
from .suite import HubUnreachable, open_suite

__all__ = ["open_lm_analysis", "suite_cpu_minutes", "size_table", "final_solved", "EmergenceSummary",
           "emergence_summary", "PromptTrace", "prompt_trace", "JumpSummary", "jump_summary", "HeadReport",
           "head_report", "PatchSummary", "patch_summary", "random_heads_recovery"]  # fmt: skip


def _check_analysis(res) -> None:
    for name in ("sizes", "seeds", "steps", "tasks", "index", "p_target"):
        if not hasattr(res, name):
            raise ValueError(f"expected a SuiteAnalysis, got {type(res).__name__} (no {name!r})")


def open_lm_analysis(fast: bool, *, timeout: float = 5.0):
    """The analysis the chapter reads, why, and the hub suite when it answered: ``(analysis, why, hub or None)``.

    At FAST scale the committed analysis of the mini-suite (verified against the code that made it). Otherwise the
    PolyPythias are asked for (``timeout`` seconds) and analysed by bisection; when the hub does not answer, its
    message is printed and the mini-suite's analysis is read instead.
    """
    from .analysis import AnalysisConfig
    from .results import analyze_suite

    if fast:
        return load_analysis(), "FAST scale: committed analysis of the offline mini-suite", None
    try:
        hub = open_suite("hub", timeout=timeout)
        res = analyze_suite(AnalysisConfig(hub.digest, mode="bisect"), hub)
        return res, "paper scale: PolyPythias from the hub", hub
    except HubUnreachable as err:
        print(err)
        return load_analysis(), "paper scale, hub unreachable: the offline mini-suite", None


def suite_cpu_minutes(index) -> float:
    """CPU-minutes the suite's build recorded in its index ``suite.json`` (``meta.cpu_seconds``, summed over models)."""
    path = Path(index)
    if not path.is_file():
        raise ValueError(f"no suite index at {path}")
    seconds = json.loads(path.read_text())["meta"].get("cpu_seconds", {})
    if not seconds:
        raise ValueError(f"the index {path} records no build time (meta.cpu_seconds)")
    return sum(seconds.values()) / 60


def size_table(res) -> str:
    """One line per size: layers, width, heads and parameters (``?`` where the suite does not say)."""
    _check_analysis(res)
    lines = []
    for size in res.sizes:
        i = res.size_info.get(size, {})
        lines.append(f"{size:>6}: {i.get('n_layer', '?')} layers, d_model {i.get('d_model', '?')}, "
                     f"{i.get('n_head', '?')} heads, {i.get('n_params', 0):,} parameters")  # fmt: skip
    return "\n".join(lines)


def final_solved(res) -> dict:
    """``{task: (sizes,)}`` fraction of prompts solved at the last checkpoint, mean over seeds and prompts (runs or
    prompts not evaluated there are left out)."""
    _check_analysis(res)
    solved = res.solved.astype(float)
    solved[res.solved < 0] = np.nan
    return {task: np.nanmean(solved[:, :, res.task_index(task), :, -1], axis=(1, 2)) for task in res.tasks}


@dataclass(frozen=True)
class EmergenceSummary:
    """Points of emergence of one task. ``seed_steps``, ``seed_never`` ``(S, R)``; ``prompt_steps``, ``prompt_never``
    ``(S, R, P)``; ``lin_steps`` ``(S, R)`` the per-run median with the linear scan's point instead of bisection's."""

    sizes: tuple
    seed_steps: np.ndarray
    seed_never: np.ndarray
    prompt_steps: np.ndarray
    prompt_never: np.ndarray
    lin_steps: np.ndarray

    @property
    def mean_steps(self) -> np.ndarray:
        """``(S,)`` mean over seeds, never-solvers counting as the final step (paper B's convention)."""
        return self.seed_steps.mean(1)

    @property
    def spread(self) -> np.ndarray:
        """``(S,)`` latest over earliest seed's step, :math:`\\max_k t_k / \\max(\\min_k t_k, 1)`."""
        return self.seed_steps.max(1) / np.maximum(self.seed_steps.min(1), 1)

    @property
    def lin_spread(self) -> np.ndarray:
        """``(S,)`` the same spread with the linear scan's point."""
        return self.lin_steps.max(1) / np.maximum(self.lin_steps.min(1), 1)

    def within_run_spread(self) -> float:
        """Control of the seed spread: each run against itself, the median step of its even against its odd prompts
        (:func:`lib.halves_ratio`); the largest over a size's runs, for the size where it is smallest."""
        within = np.array([[halves_ratio(np.maximum(ps, 1)) for ps in runs] for runs in self.prompt_steps])  # (S, R)
        return float(within.max(1).min())

    def summary(self) -> dict:
        mean, never = self.mean_steps, self.seed_never
        return dict(spread_min=self.spread.min(), spread_max=self.spread.max(), n_never_runs=int(never.sum()),
                    every_run="Every run" if int(never.sum()) == 0 else "Not every run", n_runs=never.size,
                    mean_small=mean[0], mean_large=mean[-1], size_ratio=mean[-1] / mean[0],
                    size_direction=("the direction of paper B's trend" if mean[-1] < mean[0] else
                                    "against the direction of paper B's trend"),
                    prompt_never_frac=100 * self.prompt_never.mean(), lin_spread_min=self.lin_spread.min(),
                    lin_spread_max=self.lin_spread.max())  # fmt: skip

    def __str__(self) -> str:
        return "\n".join(f"{size:>6}: per seed {self.seed_steps[i].astype(int).tolist()} (never: "
                         f"{int(self.seed_never[i].sum())}), mean {self.mean_steps[i]:.0f}, latest/earliest "
                         f"{self.spread[i]:.2f}" for i, size in enumerate(self.sizes))  # fmt: skip


def emergence_summary(res, task: str = "rep") -> EmergenceSummary:
    """Points of emergence of ``task`` per prompt and per run, by bisection and by the linear scan."""
    _check_analysis(res)
    seed_steps, seed_never = res.seed_steps(task)
    prompt_steps, prompt_never = res.prompt_steps(task)
    lin_steps = np.median(emergence_steps(res.linear_index[:, :, res.task_index(task)], res.steps)[0], axis=-1)
    return EmergenceSummary(tuple(res.sizes), seed_steps, seed_never, prompt_steps, prompt_never, lin_steps)


@dataclass(frozen=True)
class PromptTrace:
    """p(target) of one run's prompts across checkpoints, ``curves (P, C)`` (NaN: not evaluated), ``ok`` the
    checkpoints evaluated for prompt 0, ``idx0`` its first solved checkpoint (``C``: never), and its largest
    one-interval rise, from checkpoint ``prev_c`` to ``jump_at``."""

    steps: tuple
    curves: np.ndarray
    ok: np.ndarray
    idx0: int
    prev_c: int
    jump_at: int

    @property
    def emerges(self) -> bool:
        """Prompt 0 is solved at some checkpoint after the first."""
        return 0 < self.idx0 < len(self.steps)

    def summary(self) -> dict:
        out = {}
        if self.emerges:
            out.update(ex_before=self.curves[0, self.idx0 - 1], ex_after=self.curves[0, self.idx0],
                       ex_old=self.steps[self.idx0 - 1], ex_new=self.steps[self.idx0])  # fmt: skip
        out.update(ex_jump_old=self.steps[self.prev_c], ex_jump_new=self.steps[self.jump_at],
                   ex_jump_before=self.curves[0, self.prev_c], ex_jump_after=self.curves[0, self.jump_at])  # fmt: skip
        return out

    def __str__(self) -> str:
        lines = []
        s = self.summary()
        if self.emerges:
            lines.append(f"prompt 0 emerges between steps {s['ex_old']} and {s['ex_new']}: p {s['ex_before']:.2f} -> "
                         f"{s['ex_after']:.2f}")  # fmt: skip
        lines.append(f"its largest one-interval rise: steps {s['ex_jump_old']} -> {s['ex_jump_new']}, "
                     f"p {s['ex_jump_before']:.2f} -> {s['ex_jump_after']:.2f}")  # fmt: skip
        return "\n".join(lines)


def prompt_trace(res, size: str, seed: int, task: str = "rep") -> PromptTrace:
    """The p(target) curves of run (``size``, ``seed``) on ``task``, and where its prompt 0 emerges and jumps."""
    _check_analysis(res)
    if size not in res.sizes or seed not in res.seeds:
        raise ValueError(f"no run ({size!r}, {seed!r}) in sizes {res.sizes}, seeds {res.seeds}")
    i_s, i_r, k = res.sizes.index(size), res.seeds.index(seed), res.task_index(task)
    curves = res.p_target[i_s, i_r, k]  # (P, C)
    ok = ~np.isnan(curves[0])
    c0 = np.where(ok)[0]
    if len(c0) < 2:
        raise ValueError("prompt 0 was evaluated at fewer than two checkpoints")
    jump_at = c0[np.argmax(np.diff(curves[0, c0])) + 1]  # the evaluated checkpoint after the largest one-interval rise
    prev_c = c0[np.searchsorted(c0, jump_at) - 1]
    return PromptTrace(tuple(res.steps), curves, ok, int(res.index[i_s, i_r, k, 0]), int(prev_c), int(jump_at))


@dataclass(frozen=True)
class JumpSummary:
    """Abruptness of every emerging prompt: ``abrupt`` ``{size: (n,)}``, ``null`` the largest size's curves with
    their checkpoints shuffled, ``p_first`` p(target) of the largest size's prompts when first solved, ``mono``
    ``(S, R, P)`` whether bisection's point equals the linear scan's."""

    steps: tuple
    abrupt: dict
    null: np.ndarray
    p_first: np.ndarray
    mono: np.ndarray
    on_hub: bool

    @property
    def largest(self) -> np.ndarray:
        """The largest size's abruptness, one value per emerging prompt (all seeds)."""
        return list(self.abrupt.values())[-1]

    def summary(self) -> dict:
        return dict(abrupt_median=np.median(self.largest), abrupt_uniform=1 / (len(self.steps) - 1),
                    ckpt_every=self.steps[-1] - self.steps[-2], p_first_median=np.median(self.p_first),
                    n_nonmono=int((~self.mono).sum()) if not self.on_hub else -1,
                    n_prompt_runs=self.mono.size)  # fmt: skip

    def __str__(self) -> str:
        return "median share of the rise in one checkpoint interval, per size: " + ", ".join(
            f"{s} {np.median(a):.2f} (n={a.size})" for s, a in self.abrupt.items())


def jump_summary(res, task: str = "rep", *, seed: int = 0) -> JumpSummary:
    """How abrupt the rise of p(target) is for every prompt that emerges after the first checkpoint (module
    docstring); the control permutes each curve's checkpoints with ``np.random.default_rng(seed)``."""
    _check_analysis(res)
    k = res.task_index(task)
    index = res.index[:, :, k]  # (S, R, P)
    emerging = (index > 0) & (index < len(res.steps))
    abrupt = {sz: abruptness(res.p_target[i, :, k][emerging[i]]) for i, sz in enumerate(res.sizes)}
    last = res.p_target[-1, :, k][emerging[-1]]  # (n, C) the largest size's emerging prompts
    null = abruptness(np.random.default_rng(seed).permuted(last, axis=-1))  # time order gone, values kept
    p_first = last[np.arange(len(last)), index[-1][emerging[-1]]]  # p(target) when first solved
    mono = res.linear_index[:, :, k] == index
    return JumpSummary(tuple(res.steps), abrupt, null, p_first, mono, res.source == "hub")


@dataclass(frozen=True)
class HeadReport:
    """Attention of one checkpoint pair: patterns ``(L, N, H, T, T)`` of the old and new model, head scores of each
    (``{"prev", "induction"}: (L, H)``), mean single-head Δp ``dp (L, H)``, the ``top`` two heads by Δp and the
    strongest previous-token head of the new model, ``prev_head``."""

    pat_old: object
    pat_new: object
    scores_old: dict
    scores: dict
    dp: np.ndarray
    top: list
    prev_head: tuple
    p_old: float
    p_new: float

    @property
    def shape(self) -> tuple[int, int]:
        """(layers, heads)."""
        return self.dp.shape

    @property
    def top_name(self) -> str:
        return f"L{self.top[0][0]}H{self.top[0][1]}"

    def summary(self) -> dict:
        t, ph, sc, so = self.top[0], self.prev_head, self.scores, self.scores_old
        return dict(pair_p_old=self.p_old, pair_p_new=self.p_new, top_head=self.top_name, top_dp=self.dp[t],
                    top_ind=sc["induction"][t], top_prev=sc["prev"][t], top_ind_old=so["induction"][t],
                    prev_head=f"L{ph[0]}H{ph[1]}", prev_old=so["prev"][ph], prev_new=sc["prev"][ph])  # fmt: skip

    def __str__(self) -> str:
        sc, so, ph, t = self.scores, self.scores_old, self.prev_head, self.top[0]
        lines = [f"p(target) {self.p_old:.3f} -> {self.p_new:.3f}"]
        lines += [f"  L{l}H{h}: Δp {self.dp[l, h]:+.3f}, previous-token score {sc['prev'][l, h]:.2f}, "
                  f"induction score {sc['induction'][l, h]:.2f}" for l, h in self.top]  # fmt: skip
        lines.append(f"  strongest previous-token head L{ph[0]}H{ph[1]}: score {so['prev'][ph]:.2f} (old) -> "
                     f"{sc['prev'][ph]:.2f} (new), Δp {self.dp[ph]:+.3f}; top head's induction score "
                     f"{so['induction'][t]:.2f} (old) -> {sc['induction'][t]:.2f} (new)")  # fmt: skip
        return "\n".join(lines)


def head_report(old, new, live, input_ids, *, period: int = 8) -> HeadReport:
    """Record both checkpoints' attention on ``input_ids``, score every head (:func:`lib.lm.head_scores`:
    previous-token and induction scores, repeats of length ``period``) and rank them by the live patch's Δp."""
    if live.p_head.ndim != 3:
        raise ValueError(f"live must be a PatchResult with p_head (L, H, N), got shape {live.p_head.shape}")
    _, pat_old = record_patterns(old, input_ids)  # (L, N, H, T, T)
    _, pat_new = record_patterns(new, input_ids)
    L, H = live.p_head.shape[:2]
    dp = live.dp_head.mean(-1)  # (L, H)
    top = [divmod(int(i), H) for i in np.argsort(-dp.ravel())[:2]]
    scores = head_scores(pat_new, period=period)
    prev_head = tuple(int(i) for i in np.unravel_index(np.argmax(scores["prev"]), (L, H)))
    return HeadReport(pat_old, pat_new, head_scores(pat_old, period=period), scores, dp, top, prev_head,
                      float(live.p_old.mean()), float(live.p_new.mean()))  # fmt: skip


@dataclass(frozen=True)
class PatchSummary:
    """Joint top-K patches over all runs: ``frac`` ``{"size/seed": (len(ks),)}`` fractions of the gain recovered,
    ``large`` ``(runs, len(ks))`` those of the largest size, and which heads carry them (module docstring)."""

    sizes: tuple
    seeds: tuple
    ks: np.ndarray
    frac: dict
    n_heads: dict
    heads_range: tuple
    top_is_ind: int
    top_ind: np.ndarray
    prev_best: np.ndarray
    prev_dp: np.ndarray
    small_ind: float

    @property
    def large(self) -> np.ndarray:
        return self.rows(self.sizes[-1])

    @property
    def k2(self) -> int:
        """The index of K = 2 in ``ks``."""
        return list(self.ks).index(2)

    def rows(self, size: str) -> np.ndarray:
        """``(runs, len(ks))`` the fractions of the runs of ``size``."""
        return np.array([self.frac[f"{size}/{s}"] for s in self.seeds if f"{size}/{s}" in self.frac])

    def summary(self) -> dict:
        large, k2 = self.large, self.k2
        return dict(heads_min=self.heads_range[0], heads_max=self.heads_range[1], frac2_median=np.median(large[:, k2]),
                    frac2_min=large[:, k2].min(), frac2_max=large[:, k2].max(), frac1_median=np.median(large[:, 0]),
                    frac_all_median=np.median(large[:, -1]), n_top_induction=int(self.top_is_ind),
                    n_large_runs=len(self.top_ind), top_ind_min=self.top_ind.min(), top_ind_max=self.top_ind.max(),
                    prev_best_min=self.prev_best.min(), prev_best_max=self.prev_best.max(),
                    prev_dp_max=self.prev_dp.max(), small_ind=self.small_ind,
                    large_heads=self.n_heads[self.sizes[-1]])  # fmt: skip

    def __str__(self) -> str:
        lines = []
        for sz in self.sizes:
            rows = self.rows(sz)
            if rows.size:
                lines.append(f"{sz:>6} ({self.n_heads[sz]} heads, {len(rows)} runs): median fraction recovered, K = "
                             + ", ".join(f"{k}: {v:.2f}" for k, v in zip(self.ks, np.median(rows, 0))))
        lines.append(f"{self.sizes[-1]}: top head = the head with the highest induction score in {self.top_is_ind} of "
                     f"{len(self.top_ind)} runs (its score {self.top_ind.min():.2f}-{self.top_ind.max():.2f}); "
                     f"strongest previous-token head: score {self.prev_best.min():.2f}-{self.prev_best.max():.2f}, "
                     f"Δp {self.prev_dp.min():+.3f} to {self.prev_dp.max():+.3f}")  # fmt: skip
        lines.append(f"smaller sizes: highest induction score of any head {self.small_ind:.2f}")
        return "\n".join(lines)


def patch_summary(res, fallback_heads: tuple[int, int]) -> PatchSummary:
    """The committed joint patches of every run, and which heads carry the largest size's gain.

    ``fallback_heads`` ``(L, H)`` stands in for a size whose layers and heads the suite does not record.
    """
    _check_analysis(res)
    if not res.patches:
        raise ValueError("the analysis has no patched runs")
    L, H = fallback_heads
    frac = {key: p.fraction_recovered for key, p in res.patches.items()}
    heads_all = [i.get("n_layer", 0) * i.get("n_head", 0) for i in res.size_info.values()] or [L * H]
    n_heads = {sz: res.size_info.get(sz, {}).get("n_layer", L) * res.size_info.get(sz, {}).get("n_head", H)
               for sz in res.sizes}  # fmt: skip
    large = [res.patches[f"{res.sizes[-1]}/{s}"] for s in res.seeds if f"{res.sizes[-1]}/{s}" in res.patches]
    small = [p for k, p in res.patches.items() if not k.startswith(res.sizes[-1] + "/")]
    return PatchSummary(
        sizes=tuple(res.sizes), seeds=tuple(res.seeds), ks=np.array(res.config.ks), frac=frac, n_heads=n_heads,
        heads_range=(min(heads_all), max(heads_all)),
        top_is_ind=sum(p.order[0] == int(np.nanargmax(p.induction)) for p in large),
        top_ind=np.array([p.induction.ravel()[p.order[0]] for p in large]),
        prev_best=np.array([np.nanmax(p.prev) for p in large]),
        prev_dp=np.array([p.dp_head.ravel()[int(np.nanargmax(p.prev))] for p in large]),
        small_ind=max(np.nanmax(p.induction) for p in small) if small else float("nan"))  # fmt: skip


def random_heads_recovery(old, input_ids, target_ids, patterns, live, *, n_draws: int = 16, n_heads: int = 2,
                          seed: int = 0) -> np.ndarray:  # fmt: skip
    """Control of the top-K patch: ``n_draws`` sets of ``n_heads`` heads drawn uniformly without replacement,
    each patched jointly from ``patterns (L, N, H, T, T)`` into ``old``; the fraction of the live pair's gain each set
    recovers, ``(n_draws,)``."""
    L, H = live.p_head.shape[:2]
    if not 1 <= n_heads <= L * H or n_draws < 1:
        raise ValueError(f"need n_draws >= 1 and 1 <= n_heads <= {L * H}, got {n_draws}, {n_heads}")
    drawn = np.argsort(np.random.default_rng(seed).random((n_draws, L * H)), axis=1)[:, :n_heads]  # flat heads
    masks = np.zeros((n_draws, L * H), dtype=bool)
    np.put_along_axis(masks, drawn, True, axis=1)
    logits = patched_last_logits(old, input_ids, patterns, masks.reshape(n_draws, L, H))
    p_random = target_probs(logits, target_ids)  # (draws, N)
    return (p_random.mean(1) - live.p_old.mean()) / (live.p_new.mean() - live.p_old.mean())
