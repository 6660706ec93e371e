r"""Chapter 5's readings of the per-run analyses (:class:`lib.lm.study.RunResult`): one function per figure or claim.

* :func:`study_table` arranges a suite's results as sizes × seeds (a suite built in shards has holes: NaN).
* :func:`run_points`: each run's point of emergence on a task, the median prompt's (a run in which at least half the
  prompts never emerge is a **never-solver**, placed at the last step as paper B does), the seed spread per size
  and its within-run control (even against odd prompts).
* :func:`rise_summary`: paper B's "jump" as an absolute rise of p(target) within one checkpoint interval
  (:func:`lib.lm.onset.max_rise`, on the smoothed curve) for the prompts that emerge, beside two references where
  nothing is abrupt: the same measure on a task the same runs never learn (the null) and an even ramp of each
  prompt's own total rise.
* :func:`patch_summary`: per run, the held-out share of the gain recovered by the top-K heads (ranked on the other
  half of the prompts), the reverse direction, random K-sets, the in-sample ranking and the control pair.

Every array is built from the results; nothing here computes a model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .study import RunResult

__all__ = [
    "StudyTable",
    "study_table",
    "RunPoints",
    "run_points",
    "flip_lead",
    "RiseSummary",
    "rise_summary",
    "PatchSummary",
    "patch_summary",
]


@dataclass
class StudyTable:
    """The results of one suite as sizes × seeds. ``runs[(size, seed)]``; ``n_params[size]``; ``cpu_seconds`` the
    suite's training cost of these runs (from its index)."""

    sizes: tuple
    seeds: tuple
    steps: np.ndarray
    tasks: tuple
    runs: dict
    n_params: dict
    n_heads: dict
    cpu_seconds: float
    source: str

    def present(self, size: str) -> list[int]:
        """The seeds of ``size`` that have a result."""
        return [sd for sd in self.seeds if (size, sd) in self.runs]

    @property
    def n_runs(self) -> int:
        return len(self.runs)

    def __repr__(self) -> str:
        per = ", ".join(f"{sz} {len(self.present(sz))}" for sz in self.sizes)
        return (
            f"StudyTable({self.source}: {self.n_runs} runs (seeds per size: {per}), {len(self.steps)} checkpoints "
            f"to step {int(self.steps[-1])}, tasks {list(self.tasks)})"
        )

    def size_rows(self) -> str:
        """A text table: size, parameters, heads, runs."""
        lines = [f"{'size':>6} {'parameters':>11} {'heads':>6} {'runs':>5}"]
        for sz in self.sizes:
            n = self.n_params.get(sz)
            lines.append(
                f"{sz:>6} {n if n is not None else '-':>11} {self.n_heads.get(sz, '-'):>6} {len(self.present(sz)):>5}"
            )
        return "\n".join(lines)


def study_table(results: list[RunResult], suite, *, min_runs: int = 1) -> StudyTable:
    """``results`` (any order) of ``suite`` as a :class:`StudyTable`; sizes with fewer than ``min_runs`` results
    (chapter 5: 3, so that every size has a spread and an interval) are left out."""
    if not results:
        raise ValueError("no results to arrange")
    counts = {}
    for r in results:
        counts[r.key.size] = counts.get(r.key.size, 0) + 1
    results = [r for r in results if counts[r.key.size] >= min_runs]
    if not results:
        raise ValueError(f"no size has {min_runs} runs: {counts}")
    steps = results[0].steps
    tasks = results[0].tasks
    if any(r.steps != steps or r.tasks != tasks for r in results):
        raise ValueError("results of one table must share steps and tasks")
    runs = {(r.key.size, r.key.seed): r for r in results}
    sizes = tuple(sz for sz in suite.sizes if any(k[0] == sz for k in runs))
    seeds = tuple(sd for sd in suite.seeds if any(k[1] == sd for k in runs))
    n_params = {sz: next(r.n_params for k, r in runs.items() if k[0] == sz) for sz in sizes}
    n_heads = {sz: next(r.n_heads for k, r in runs.items() if k[0] == sz) for sz in sizes}
    cpu = getattr(suite, "meta", {}).get("cpu_seconds", {})
    names = {r.key.name for r in results}
    return StudyTable(
        sizes,
        seeds,
        np.asarray(steps, dtype=float),
        tasks,
        runs,
        n_params,
        n_heads,
        float(sum(v for n, v in cpu.items() if n in names)),
        results[0].key.source,
    )


@dataclass
class RunPoints:
    """Per run (sizes × seeds, NaN where a run is missing) the median prompt's emergence step on ``task``.

    ``seed_steps (S, R)`` with never-solvers at the last step, ``never (S, R)``, ``present (S, R)``;
    ``prompt_steps``/``prompt_never`` ``(S, R, P)``; ``mean_steps (S,)`` over present seeds; ``spread (S,)`` the latest
    over the earliest seed; ``within (S,)`` the control: the largest over a size's runs of the ratio between the
    median steps of its even and its odd prompts (latest over earliest), nothing but the prompt sample differing.
    """

    task: str
    sizes: tuple
    seeds: tuple
    last: float
    seed_steps: np.ndarray
    never: np.ndarray
    present: np.ndarray
    prompt_steps: np.ndarray
    prompt_never: np.ndarray
    mean_steps: np.ndarray = field(init=False)
    spread: np.ndarray = field(init=False)
    within: np.ndarray = field(init=False)

    def __post_init__(self):
        t = np.where(self.present, self.seed_steps, np.nan)
        self.mean_steps = np.nanmean(t, axis=1)
        self.spread = np.nanmax(t, axis=1) / np.maximum(np.nanmin(t, axis=1), 1.0)
        within = np.full(len(self.sizes), np.nan)
        for i in range(len(self.sizes)):
            r = []
            for j in np.flatnonzero(self.present[i]):
                a = _median_point(self.prompt_steps[i, j, 0::2], self.prompt_never[i, j, 0::2], self.last)
                b = _median_point(self.prompt_steps[i, j, 1::2], self.prompt_never[i, j, 1::2], self.last)
                r.append(max(a, b) / max(min(a, b), 1.0))
            within[i] = max(r) if r else np.nan
        self.within = within

    def steps_of(self, i: int) -> np.ndarray:
        """The present seeds' steps of size index ``i``."""
        return self.seed_steps[i, self.present[i]]

    @property
    def learning(self) -> np.ndarray:
        """``(S,)`` whether some present seed of each size solves the task (is not a never-solver). Where no seed
        does, every run sits at the last step: its spread is 1 and its never-solvers say nothing about seeds."""
        return (self.present & ~self.never).any(axis=1)

    def learning_sizes(self) -> list[int]:
        """Indices of the sizes at which some seed solves the task (:attr:`learning`); ``ValueError`` if none."""
        idx = [int(i) for i in np.flatnonzero(self.learning)]
        if not idx:
            raise ValueError(f"{self.task}: no size has a seed that solves the task")
        return idx

    def spread_interval(self, **kw):
        """B-random: the smallest, over the sizes at which some seed solves the task (:attr:`learning`), of the
        latest over the earliest seed, with a bootstrap interval that resamples each size's seeds
        (:func:`lib.core.stats.group_bootstrap_interval`)."""
        from ..core.stats import group_bootstrap_interval

        rows = [self.steps_of(i) for i in self.learning_sizes()]

        def stat(*idx):
            return min(r[j].max() / max(r[j].min(), 1.0) for r, j in zip(rows, idx))

        return group_bootstrap_interval(stat, [len(r) for r in rows], **kw)

    def never_count(self, sizes=None) -> int:
        """B-never: the never-solver runs at ``sizes`` (indices; default: the sizes where some seed solves)."""
        sizes = self.learning_sizes() if sizes is None else list(sizes)
        return int(sum((self.never[i] & self.present[i]).sum() for i in sizes))

    def never_interval(self, **kw):
        """B-never: the number of never-solver runs at the sizes where some seed solves the task (a size where none
        does says nothing about seeds), with a bootstrap interval that resamples each size's seeds
        (:func:`lib.core.stats.group_bootstrap_interval`; sizes with fewer than two runs are left out)."""
        from ..core.stats import group_bootstrap_interval

        rows = [self.never[i, self.present[i]] for i in self.learning_sizes() if self.present[i].sum() >= 2]
        if not rows:
            raise ValueError("no size has two runs to resample")

        def stat(*idx):
            return float(sum(r[j].sum() for r, j in zip(rows, idx)))

        return group_bootstrap_interval(stat, [len(r) for r in rows], **kw)

    def size_interval(self, **kw):
        """B-size: the mean step of the largest size over the smallest's, seeds resampled within each."""
        from ..core.stats import ratio_interval

        return ratio_interval(self.steps_of(-1), self.steps_of(0), np.mean, **kw)

    def halves_control(self) -> float:
        """B-size's control: the same ratio between the odd and the even seeds of the smallest size."""
        t = self.steps_of(0)
        return float(np.mean(t[1::2]) / max(np.mean(t[0::2]), 1.0))

    def summary(self) -> dict:
        """Glue values: runs, never-solvers, spreads, means, their ratio."""
        n = int(self.present.sum())
        return {
            "n_runs": n,
            "n_never_runs": int((self.never & self.present).sum()),
            "spread_min": float(np.nanmin(self.spread)),
            "spread_max": float(np.nanmax(self.spread)),
            "within_spread": float(np.nanmin(self.within)),
            "mean_small": float(self.mean_steps[0]),
            "n_learning_sizes": int(self.learning.sum()),
            "mean_large": float(self.mean_steps[-1]),
            "size_ratio": float(self.mean_steps[-1] / self.mean_steps[0]),
            "prompt_never_frac": float(100 * self.prompt_never[self.present].mean()),
        }

    def __repr__(self) -> str:
        rows = [f"{self.task}: the median prompt's point of emergence per run (never = {int(self.last)})"]
        for i, sz in enumerate(self.sizes):
            ok = self.present[i]
            pts = ", ".join(
                "never" if self.never[i, j] else f"{int(self.seed_steps[i, j])}" for j in np.flatnonzero(ok)
            )
            rows.append(
                f"  {sz:>5}: {pts}  (mean {self.mean_steps[i]:.0f}, spread {self.spread[i]:.2f}, "
                f"within-run {self.within[i]:.2f})"
            )
        return "\n".join(rows)


def _median_point(steps: np.ndarray, never: np.ndarray, last: float) -> float:
    """A run's point: the median prompt's step, or ``last`` when at least half its prompts never emerge."""
    if never.mean() >= 0.5:
        return float(last)
    return float(np.median(np.where(never, last, steps)))


def run_points(table: StudyTable, task: str) -> RunPoints:
    """Each run's point of emergence on ``task`` (the median prompt's; never-solvers at the last step)."""
    if task not in table.tasks:
        raise ValueError(f"task {task!r} was not analysed; tasks: {table.tasks}")
    S, R = len(table.sizes), len(table.seeds)
    P = next(iter(table.runs.values())).onset.shape[1]
    last = float(table.steps[-1])
    seed_steps, never, present = np.full((S, R), np.nan), np.zeros((S, R), bool), np.zeros((S, R), bool)
    prompt_steps, prompt_never = np.full((S, R, P), np.nan), np.zeros((S, R, P), bool)
    for i, sz in enumerate(table.sizes):
        for j, sd in enumerate(table.seeds):
            r = table.runs.get((sz, sd))
            if r is None:
                continue
            st, nv = r.onset_steps(task)
            present[i, j] = True
            prompt_steps[i, j], prompt_never[i, j] = st, nv
            never[i, j] = nv.mean() >= 0.5
            seed_steps[i, j] = _median_point(st, nv, last)
    return RunPoints(task, table.sizes, table.seeds, last, seed_steps, never, present, prompt_steps, prompt_never)


def flip_lead(table: StudyTable, task: str = "rep") -> np.ndarray:
    """Per prompt that reaches both points (all runs), the steps by which paper B's point (the first greedy flip,
    found by bisection on the argmax) comes before the stable point on p(target) (negative: after)."""
    C = len(table.steps)
    out = []
    for r in table.runs.values():
        i = r.task_index(task)
        both = (r.onset[i] < C) & (r.flip[i] < C)
        out.append(table.steps[r.onset[i][both]] - table.steps[r.flip[i][both]])
    return np.concatenate(out) if out else np.zeros(0)


@dataclass
class RiseSummary:
    """The largest rise of smoothed p(target) within one checkpoint interval (``width`` steps) for ``task``'s prompts
    that emerge after the first checkpoint in the runs of ``size``, beside its references on the same runs:
    ``reversed`` the same measure on the same curves reversed in time (the largest *fall* within one interval: a
    curve that flickers rises and falls alike, a jump only rises, so this is where a one-way jump is absent by
    construction), ``null`` the same measure for every prompt of ``null_task`` (a task these runs never learn), and
    ``ramp`` an even ramp of each emerging prompt's own total rise."""

    task: str
    null_task: str
    size: str
    width: float
    rise: np.ndarray
    ramp: np.ndarray
    null: np.ndarray
    null_solved: float
    reversed: np.ndarray

    def summary(self) -> dict:
        nan = float("nan")
        return {
            "rise_median": float(np.median(self.rise)) if self.rise.size else nan,
            "rise_n": int(self.rise.size),
            "ramp_median": float(np.median(self.ramp)) if self.ramp.size else nan,
            "null_median": float(np.median(self.null)) if self.null.size else nan,
            "null_q95": float(np.quantile(self.null, 0.95)) if self.null.size else nan,
            "rise_width": self.width,
            "null_solved": self.null_solved,
            "reversed_median": float(np.median(self.reversed)) if self.reversed.size else nan,
        }

    def __repr__(self) -> str:
        s = self.summary()
        return (
            f"{self.task} at {self.size}: {s['rise_n']} emerging prompts, median rise {s['rise_median']:.2f} "
            f"within {self.width:.0f} steps; the same curves reversed in time {s['reversed_median']:.2f}; even ramp "
            f"{s['ramp_median']:.3f}; null ({self.null_task}, never "
            f"learned: {self.null_solved:.0%} of its prompts solved at the end) {s['null_median']:.3f} "
            f"(95th percentile {s['null_q95']:.3f})"
        )


def rise_summary(
    table: StudyTable, task: str = "rep", *, null_task: str = "icr_held", size: str | None = None
) -> RiseSummary:
    """Abruptness of ``task`` at ``size`` (default the largest) against its null and ramp (class docstring)."""
    size = size or table.sizes[-1]
    from .onset import max_rise

    rise, ramp, null, solved, back = [], [], [], [], []
    C = len(table.steps)
    for sd in table.present(size):
        r = table.runs[(size, sd)]
        i, k = r.task_index(task), r.task_index(null_task)
        em = (r.onset[i] > 0) & (r.onset[i] < C) & np.isfinite(r.rise[i])  # bisect mode (the hub) has no rises
        rise.append(r.rise[i, em])
        ramp.append(r.ramp[i, em])
        st = np.asarray(r.steps, dtype=float)
        back.append(
            max_rise(r.p_target[i, em, ::-1].astype(float), st[-1] - st[::-1], r.width, r.key.study.window)
            if em.any()
            else np.zeros(0)
        )
        null.append(r.rise[k][np.isfinite(r.rise[k])])
        solved.append(r.argmax[k, :, -1] == 1)
    width = next(iter(table.runs.values())).width
    return RiseSummary(
        task,
        null_task,
        size,
        width,
        np.concatenate(rise),
        np.concatenate(ramp),
        np.concatenate(null),
        float(np.mean(np.concatenate(solved))),
        np.concatenate(back),
    )


@dataclass
class PatchSummary:
    """Patching of ``task`` at ``k`` heads over the runs of ``size`` that have a patch (held-out prompts).

    Per run (``names``): ``denoise`` (top-K new patterns into the old model: share of the gain recovered),
    ``in_sample`` (the same with heads ranked on the evaluated prompts themselves), ``noise`` (top-K old patterns
    into the new model: share of the gain taken away), ``random`` (median over random K-sets), ``control`` (median
    shift of p at the control pair, with the same heads), ``gain`` (mean p_new − p_old), their Recovery objects in
    ``recoveries``; ``ks``/``curves`` the held-out denoising share for every K."""

    task: str
    size: str
    k: int
    names: list
    denoise: np.ndarray
    in_sample: np.ndarray
    noise: np.ndarray
    random: np.ndarray
    control: np.ndarray
    gain: np.ndarray
    recoveries: list
    ks: tuple
    curves: np.ndarray
    n_heads: int
    skipped: dict

    def summary(self) -> dict:
        def med(a):
            a = a[np.isfinite(a)]
            return float(np.median(a)) if a.size else float("nan")

        return {
            "patch_runs": int(np.isfinite(self.denoise).sum()),
            "patch_listed": len(self.names),
            "patch_k": self.k,
            "denoise_median": med(self.denoise),
            "in_sample_median": med(self.in_sample),
            "noise_median": med(self.noise),
            "random_median": med(self.random),
            "control_shift": med(self.control),
            "gain_median": med(self.gain),
            "denoise_min": float(np.nanmin(self.denoise)) if len(self.names) else float("nan"),
            "denoise_max": float(np.nanmax(self.denoise)) if len(self.names) else float("nan"),
            "patch_heads": self.n_heads,
        }

    def __repr__(self) -> str:
        rows = [f"{self.task} at {self.size}, top-{self.k} of {self.n_heads} heads, held-out prompts:"]
        for n, rec, no, ra, c in zip(self.names, self.recoveries, self.noise, self.random, self.control):
            rows.append(f"  {n}: recovered {rec}  reverse {no:.2f}  random {ra:.2f}  control-pair shift {c:+.3f}")
        for n, why in self.skipped.items():
            rows.append(f"  {n}: not patched ({why})")
        return "\n".join(rows)


def patch_summary(table: StudyTable, task: str = "rep", k: int = 2, *, size: str | None = None) -> PatchSummary:
    """Patching summary of ``task`` with the top-``k`` heads over the runs of ``size`` (default the largest)."""
    size = size or table.sizes[-1]
    names, d, ins, no, ra, co, ga, recs, curves, skipped = [], [], [], [], [], [], [], [], [], {}
    ks = None
    for sd in table.present(size):
        r = table.runs[(size, sd)]
        pt = r.patches.get(task)
        if pt is None:
            skipped[r.key.name] = r.notes.get(task, "not patched")
            continue
        ks = pt.ks
        rec = pt.denoising(k)
        names.append(r.key.name)
        recs.append(rec)
        d.append(rec.value)
        ins.append(pt.denoising(k, in_sample=True).value)
        no.append(pt.noising(k).value)
        ra.append(pt.random_share(k))
        cs = pt.control_shift(k)
        co.append(float(np.median(cs)) if cs is not None else np.nan)
        h = pt.held
        ga.append(float(pt.p_new[h].mean() - pt.p_old[h].mean()))
        curves.append([pt.denoising(kk).value for kk in pt.ks])
    arr = lambda x: np.asarray(x, dtype=float)  # noqa: E731
    return PatchSummary(
        task,
        size,
        k,
        names,
        arr(d),
        arr(ins),
        arr(no),
        arr(ra),
        arr(co),
        arr(ga),
        recs,
        ks or (),
        arr(curves).reshape(len(names), len(ks or ())),
        table.n_heads.get(size, 0),
        skipped,
    )
