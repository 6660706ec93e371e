"""Paper B's analysis of a suite: p(target) across checkpoints, points of emergence, and attention patching.

:func:`analyze_suite` (cached as :func:`lib.lm.results.analyze_suite`, keyed by :class:`AnalysisConfig`, which holds
the suite's digest) does, for every size and seed:

1. evaluate the tasks' prompts at the checkpoints: every checkpoint (``mode="scan"``, local suites) or only those the
   bisection visits plus every ``curve_every``-th for the curves (``mode="bisect"``, the hub: each checkpoint of a
   Pythia model is a download);
2. find each prompt's point of emergence by bisection (:mod:`lib.lm.emergence`) and, in scan mode, compare it with
   the linear scan to report non-monotone prompts;
3. patch attention patterns for the ``patch_task`` prompts that emerge after step 0: each prompt uses its own pair
   (old = the checkpoint before its emergence, new = the one at it); Δp per head, heads ranked by the run's mean Δp,
   then the top-k heads patched jointly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ..progress import progress
from .heads import head_scores
from .emergence import bisect_emergence, emergence_steps, monotonicity, seed_emergence
from .patching import patch_heads, patched_last_logits, record_patterns, target_probs, topk_masks
from .prompts import TASKS, make_prompts

#: Length of the repeated span in each task's prompts (for the head scores); IOI has none.
PERIODS = {"rep": 8, "icr": 10, "pat": 3}

__all__ = ["PERIODS", "AnalysisConfig", "RunPatch", "SuiteAnalysis", "analyze_suite", "evaluate_prompts"]


@dataclass(frozen=True)
class AnalysisConfig:
    """What :func:`analyze_suite` computes (the cache key; ``suite_digest`` ties it to one suite's index).

    Attributes
    ----------
    suite_digest : str
        sha256 of the local suite's ``suite.json`` (or the hub suite's id).
    tasks : tuple of str
    n_prompts, prompt_seed : int
        Prompts per task and their seed (:func:`lib.lm.prompts.make_prompts`).
    patch_task : str
        The task whose emergence is patched.
    ks : tuple of int
        Sizes of the joint top-k patches.
    mode : {"scan", "bisect"}
    curve_every : int
        Bisect mode: also evaluate every ``curve_every``-th checkpoint, for the p(target) curves.
    """

    suite_digest: str
    tasks: tuple[str, ...] = TASKS
    n_prompts: int = 32
    prompt_seed: int = 0
    patch_task: str = "rep"
    ks: tuple[int, ...] = (1, 2, 4, 8, 16)
    mode: str = "scan"
    curve_every: int = 10

    def __post_init__(self):
        if not self.tasks or any(t not in TASKS for t in self.tasks):
            raise ValueError(f"tasks must be a non-empty subset of {TASKS}, got {self.tasks}")
        if self.patch_task not in self.tasks:
            raise ValueError(f"patch_task {self.patch_task!r} must be one of tasks {self.tasks}")
        if self.mode not in ("scan", "bisect"):
            raise ValueError(f"mode must be 'scan' or 'bisect', got {self.mode!r}")
        if not isinstance(self.n_prompts, int) or self.n_prompts < 1:
            raise ValueError(f"n_prompts must be a positive int, got {self.n_prompts!r}")


@dataclass
class RunPatch:
    """Patching results of one run (size, seed) on the prompts of the patch task that emerge after step 0.

    ``prompts`` indexes the task's prompt set; ``pairs[i]`` is prompt i's (old step, new step); ``p_old``, ``p_new``
    ``(P',)``; ``p_head (L, H, P')``; ``order`` ranks heads by mean Δp (flat ``l·H + h``); ``p_topk (len(ks), P')``;
    ``prev``, ``induction`` ``(L, H)``: head scores of the new checkpoints' patterns (:func:`lib.lm.heads.head_scores`,
    averaged over the prompts; NaN for a task without a repeated span).
    """

    size: str
    seed: int
    prompts: np.ndarray
    pairs: np.ndarray
    p_old: np.ndarray
    p_new: np.ndarray
    p_head: np.ndarray
    order: list
    ks: tuple
    p_topk: np.ndarray
    prev: np.ndarray
    induction: np.ndarray

    @property
    def dp_head(self) -> np.ndarray:
        """Mean Δp per head, ``(L, H)``."""
        return (self.p_head - self.p_old).mean(-1)

    @property
    def fraction_recovered(self) -> np.ndarray:
        """Per k: (mean p_topk − mean p_old) / (mean p_new − mean p_old)."""
        gain = self.p_new.mean() - self.p_old.mean()
        return (self.p_topk.mean(-1) - self.p_old.mean()) / gain


@dataclass
class SuiteAnalysis:
    """Everything chapter 5 plots. Arrays are indexed (size, seed, task, prompt, checkpoint)."""

    config: AnalysisConfig
    source: str
    prefix: str
    description: str
    sizes: tuple
    seeds: tuple
    steps: tuple
    size_info: dict
    tasks: tuple
    prompts: dict  # task -> (prompts, targets)
    p_target: np.ndarray  # (S, R, T, P, C) float32, NaN where not evaluated
    solved: np.ndarray  # (S, R, T, P, C) int8: 1 solved, 0 not, -1 not evaluated
    index: np.ndarray  # (S, R, T, P) bisection's first solved checkpoint (C = never)
    verified: np.ndarray  # (S, R, T, P) the checkpoint after it is solved too
    linear_index: np.ndarray  # (S, R, T, P) linear scan (scan mode; -1 otherwise)
    n_evaluated: np.ndarray  # (S, R) checkpoints evaluated per run
    patches: dict = field(default_factory=dict)  # "size/seed" -> RunPatch
    losses: dict = field(default_factory=dict)  # "size/seed" -> training loss, 25-step means (local suites)

    def task_index(self, task: str) -> int:
        if task not in self.tasks:
            raise ValueError(f"task {task!r} was not analysed; tasks: {self.tasks}")
        return self.tasks.index(task)

    def prompt_steps(self, task: str) -> tuple[np.ndarray, np.ndarray]:
        """Steps to emergence per (size, seed, prompt), paper B's midpoint convention, and the never mask."""
        return emergence_steps(self.index[:, :, self.task_index(task)], self.steps)

    def seed_steps(self, task: str) -> tuple[np.ndarray, np.ndarray]:
        """Per (size, seed): the run's step (median over prompts, never = final step) and whether it never emerges."""
        st, nv = self.prompt_steps(task)
        out = np.zeros(st.shape[:2])
        never = np.zeros(st.shape[:2], dtype=bool)
        for i in range(st.shape[0]):
            for j in range(st.shape[1]):
                out[i, j], never[i, j] = seed_emergence(st[i, j], nv[i, j])
        return out, never


@torch.no_grad()
def evaluate_prompts(model, prompt_sets) -> tuple[np.ndarray, np.ndarray]:
    """p(target) and solved (greedy = target) of one model on each prompt set: two ``(T, P)`` arrays."""
    ps, ok = [], []
    for s in prompt_sets:
        logits = model(input_ids=torch.as_tensor(s.input_ids)).logits[:, -1].float()  # (P, V)
        ps.append(target_probs(logits, s.target_ids))
        ok.append(logits.argmax(-1).numpy() == s.target_ids)
    return np.stack(ps), np.stack(ok)


def _patch_run(config, suite, size, seed, pset, index) -> RunPatch | None:
    C = len(suite.steps)
    chosen = np.flatnonzero((index > 0) & (index < C))
    if chosen.size == 0:
        return None
    groups = {int(c): chosen[index[chosen] == c] for c in np.unique(index[chosen])}
    p_old, p_new, p_head, where = [], [], [], []
    for c, members in groups.items():
        sub = pset.subset(members)
        old = suite.load_model(size, seed, suite.steps[c - 1])
        new = suite.load_model(size, seed, suite.steps[c])
        r = patch_heads(old, new, sub.input_ids, sub.target_ids, ks=())
        p_old.append(r.p_old), p_new.append(r.p_new), p_head.append(r.p_head), where.append(members)
    where = np.concatenate(where)
    p_old, p_new, p_head = np.concatenate(p_old), np.concatenate(p_new), np.concatenate(p_head, axis=-1)
    L, H = p_head.shape[:2]
    order = [int(i) for i in np.argsort(-(p_head - p_old).mean(-1).ravel(), kind="stable")]
    p_topk, scores = [], {"prev": np.zeros((L, H)), "induction": np.zeros((L, H))}
    period = PERIODS.get(pset.task)
    for c, members in groups.items():  # second pass: the run's ranking, joint top-k patches
        sub = pset.subset(members)
        old = suite.load_model(size, seed, suite.steps[c - 1])
        _, donor = record_patterns(suite.load_model(size, seed, suite.steps[c]), sub.input_ids)
        if config.ks:
            logits = patched_last_logits(old, sub.input_ids, donor, topk_masks(order, L, H, config.ks))
            p_topk.append(target_probs(logits, sub.target_ids))
        for name, value in (head_scores(donor, period) if period else {}).items():
            scores[name] += value * len(members) / where.size
    if not period:
        scores = {k: np.full((L, H), np.nan) for k in scores}
    pairs = np.array([(suite.steps[index[i] - 1], suite.steps[index[i]]) for i in where])
    return RunPatch(size=size, seed=seed, prompts=where, pairs=pairs, p_old=p_old, p_new=p_new, p_head=p_head,
                    order=order, ks=tuple(config.ks), p_topk=np.concatenate(p_topk, axis=-1) if config.ks else
                    np.zeros((0, where.size)), prev=scores["prev"], induction=scores["induction"])


def analyze_suite(config: AnalysisConfig, suite) -> SuiteAnalysis:
    """Run paper B's analysis on ``suite`` (a :class:`lib.lm.suite.Suite` whose digest matches ``config``).

    Uncached; :func:`lib.lm.results.analyze_suite` is the same function through the results cache (kept apart so
    that the cache's code fingerprint of this module covers only the analysis code, not the cache's own).
    """
    if suite.digest != config.suite_digest:
        raise ValueError(f"config.suite_digest {config.suite_digest[:16]}… does not match the suite's {suite.digest[:16]}…")
    tok = suite.load_tokenizer()
    psets = [make_prompts(t, tok, config.n_prompts, config.prompt_seed) for t in config.tasks]
    S, R, T, P, C = len(suite.sizes), len(suite.seeds), len(config.tasks), config.n_prompts, len(suite.steps)
    p_target = np.full((S, R, T, P, C), np.nan, dtype=np.float32)
    solved = np.full((S, R, T, P, C), -1, dtype=np.int8)
    index = np.zeros((S, R, T, P), dtype=np.int64)
    verified = np.zeros((S, R, T, P), dtype=bool)
    linear = np.full((S, R, T, P), -1, dtype=np.int64)
    n_eval = np.zeros((S, R), dtype=np.int64)
    patches, losses = {}, {}
    runs = [(i, j) for j in range(R) for i in range(S)]
    for i, j in progress(runs, desc=f"analysis {suite.prefix}"):
        size, seed = suite.sizes[i], suite.seeds[j]

        def evaluate(c: int) -> np.ndarray:
            if solved[i, j, 0, 0, c] < 0:
                p, ok = evaluate_prompts(suite.load_model(size, seed, suite.steps[c]), psets)
                p_target[i, j, :, :, c], solved[i, j, :, :, c] = p, ok
            return solved[i, j, :, :, c].ravel() == 1

        extra = range(C) if config.mode == "scan" else sorted(set(range(0, C, config.curve_every)) | {C - 1})
        for c in extra:
            evaluate(c)
        found = bisect_emergence(evaluate, C)
        index[i, j] = found.index.reshape(T, P)
        verified[i, j] = found.verified.reshape(T, P)
        n_eval[i, j] = int((solved[i, j, 0, 0] >= 0).sum())
        if config.mode == "scan":
            linear[i, j] = monotonicity(solved[i, j].reshape(T * P, C) == 1)["linear"].reshape(T, P)
        k = config.tasks.index(config.patch_task)
        patch = _patch_run(config, suite, size, seed, psets[k], index[i, j, k])
        if patch is not None:
            patches[f"{size}/{seed}"] = patch
        run_losses = getattr(suite, "run_losses", lambda *a: None)(size, seed)
        if run_losses is not None:
            n = len(run_losses) // 25 * 25
            losses[f"{size}/{seed}"] = np.asarray(run_losses[:n], dtype=np.float32).reshape(-1, 25).mean(1)
    return SuiteAnalysis(
        config=config, source=suite.source, prefix=suite.prefix, description=suite.description, sizes=suite.sizes,
        seeds=suite.seeds, steps=suite.steps, size_info=dict(getattr(suite, "size_info", {})), tasks=config.tasks,
        prompts={s.task: (s.prompts, s.targets) for s in psets}, p_target=p_target, solved=solved, index=index,
        verified=verified, linear_index=linear, n_evaluated=n_eval, patches=patches, losses=losses)
