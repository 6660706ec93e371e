r"""Paper B's analysis of one run (a model size and seed of a suite), cached per run: p(target) over checkpoints, the
point of emergence on p, the abruptness of the rise against its references, and patching with its controls.

:func:`analyze_run` (cached as :func:`study_run`, keyed by :class:`RunKey`: the study's settings plus the run's
identity, so a disconnected hub session resumes at the next run and a suite built over several sessions is analysed
run by run) does:

1. **p(target)** of every prompt of :mod:`lib.lm.tasks` at the checkpoints: all of them (``mode="scan"``, local
   suites) or, on the hub where each checkpoint is a download, those a bisection visits plus every
   ``curve_every``-th (``mode="bisect"``); inputs go to the model's device.
2. **Emergence point** (:mod:`lib.lm.onset`): in scan mode the first checkpoint from which the smoothed p stays at or
   above :data:`lib.lm.onset.THETA`, with bisection on the same table and its agreement reported (what a hub run can
   trust); in bisect mode the bisection's point with its verified bracket. Paper B's own point (the first greedy
   flip found by bisection on the argmax) is kept beside it.
3. **Abruptness** (scan mode): per prompt the largest absolute rise of the smoothed p within ``rise_width``
   checkpoint intervals of the run's regular spacing (Pythia: 1,000 steps, the span of paper B's example), and the
   same number for an even ramp of the prompt's total rise (:func:`lib.lm.onset.ramp_rise`): the reference where
   nothing is abrupt.
4. **Patching** each of the ``patch_tasks`` (all of them by default: which task emerges in a run is not known
   before it) at one pair of checkpoints around the run's median emergence point (old = the
   checkpoint ``window // 2 + 1`` before it, new = ``window // 2`` after, so the pair spans the smoothing window):
   every single head, heads ranked on one half of the prompts (:func:`lib.lm.patch_stats.split_prompts`) and the
   top-K (K capped at the head count) patched jointly on the other half, in both directions (new patterns into the
   old model: the share of the gain recovered; old into new: the share taken away), with bootstrap intervals
   (:func:`lib.lm.patch_stats.recovery`). Controls: the same ranking evaluated in-sample (the optimistic estimate),
   random head sets of the same size, and a **control pair** with no emergence point between its checkpoints,
   patched with the same heads, where the shift in p must stay near zero.

Everything is on the prompts of :func:`lib.lm.tasks.build_prompts` (byte-level BPE tokenizers: Pythia and the BPE
suite). Arrays are indexed (task, prompt, checkpoint).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

import numpy as np

from ..core.progress import progress
from .emergence import bisect_emergence
from .heads import head_scores
from .onset import THETA, bisect_onset, max_rise, onset_agreement, ramp_rise, stable_onset
from .patch_stats import MIN_GAIN, Recovery, capped_ks, rank_heads, recovery, split_prompts
from .patching import all_single_head_logits, patched_last_logits, record_patterns, target_probs, topk_masks
from .tasks import PERIODS, TASKS, build_prompts

__all__ = [
    "StudyConfig",
    "RunKey",
    "run_key",
    "RunPatch",
    "RunResult",
    "analyze_run",
    "evaluate_prompts",
    "emergence_pair",
    "control_pair",
]


@dataclass(frozen=True)
class StudyConfig:
    """The settings of the per-run analysis (part of every :class:`RunKey`).

    Attributes
    ----------
    tasks : tuple of str
    n_prompts, prompt_seed : int
        Prompts per task and their seed (:func:`lib.lm.tasks.build_prompts`).
    theta : float
        The p a prompt keeps from its emergence point on (:data:`lib.lm.onset.THETA`).
    window : int
        Checkpoints of the centred moving mean before the threshold (odd).
    verify : int
        Checkpoints past a bisection's point that must hold for it to count as verified.
    rise_width : int
        The abruptness window, in regular checkpoint intervals of the run (the last spacing of its steps).
    patch_tasks : tuple of str
        The tasks whose emergence is patched (each where at least a quarter of its prompts emerge).
    ks : tuple of int
        Joint top-K patches (each capped at the model's head count).
    split_seed : int
        Seed of the ranking / held-out split of the patch task's prompts.
    random_draws : int
        Random head sets per K (the control of the ranking).
    mode : {"scan", "bisect"}
    curve_every : int
        Bisect mode: also evaluate every ``curve_every``-th checkpoint (for the curves).
    """

    tasks: tuple[str, ...] = TASKS
    n_prompts: int = 32
    prompt_seed: int = 0
    theta: float = THETA
    window: int = 3
    verify: int = 2
    rise_width: int = 1
    patch_tasks: tuple[str, ...] = TASKS
    ks: tuple[int, ...] = (1, 2, 4, 8, 16)
    split_seed: int = 0
    random_draws: int = 16
    mode: str = "scan"
    curve_every: int = 10

    def __post_init__(self):
        if not self.tasks or any(t not in TASKS for t in self.tasks) or len(set(self.tasks)) != len(self.tasks):
            raise ValueError(f"tasks must be distinct names among {TASKS}, got {self.tasks}")
        if not set(self.patch_tasks) <= set(self.tasks):
            raise ValueError(f"patch_tasks {self.patch_tasks} must be among tasks {self.tasks}")
        if self.mode not in ("scan", "bisect"):
            raise ValueError(f"mode must be 'scan' or 'bisect', got {self.mode!r}")
        for name in ("n_prompts", "rise_width", "random_draws", "curve_every"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if self.n_prompts < 8:
            raise ValueError(f"n_prompts must be >= 8 (the patch task is split in halves), got {self.n_prompts}")
        if not isinstance(self.window, int) or self.window < 1 or self.window % 2 == 0:
            raise ValueError(f"window must be a positive odd int, got {self.window!r}")
        if not 0 < self.theta < 1:
            raise ValueError(f"theta must be in (0, 1), got {self.theta}")
        capped_ks(self.ks, 10**6)  # positive ints


@dataclass(frozen=True)
class RunKey:
    """One run's analysis: the settings, and the run's identity (the cache key of :func:`study_run`).

    ``digest`` identifies the run's checkpoints: for a local suite the sha256 of its file hashes in the suite index
    (so a rebuilt run is a new key), for the hub its repository id.
    """

    study: StudyConfig
    source: str
    name: str
    size: str
    seed: int
    steps: tuple[int, ...]
    digest: str


def run_key(study: StudyConfig, suite, size: str, seed: int) -> RunKey:
    """The :class:`RunKey` of ``(size, seed)`` in ``suite`` (a :class:`lib.lm.suite.LocalSuite` or ``HubSuite``)."""
    name = suite.name(size, seed)
    if suite.source == "local":
        listed = suite.files.get(name)
        if not listed:
            raise ValueError(f"run {name} is not in the suite index")
        digest = hashlib.sha256(json.dumps(listed, sort_keys=True).encode()).hexdigest()
    else:
        digest = f"hub:{name}"
    return RunKey(study, suite.source, name, size, int(seed), tuple(int(s) for s in suite.steps), digest)


@dataclass
class RunPatch:
    """Patching of one run's ``task`` at its emergence pair (module docstring, step 4). Prompt arrays are ``(P,)``
    over all prompts of the task; ``rank``/``held`` index them.

    ``pair``, ``control`` : (old step, new step); ``control`` is None when no window without emergence exists.
    ``p_old``, ``p_new`` : p(target) at the pair; ``p_head (L, H, P)`` single-head patches (new into old);
    ``order`` heads ranked on ``rank`` (flat ``l·H + h``), ``order_in`` ranked on ``held`` itself;
    ``ks`` the capped K; ``p_topk``, ``p_topk_in``, ``p_noised`` ``(len(ks), P)``: top-K with ``order`` new→old,
    with ``order_in`` new→old, and with ``order`` old→new; ``p_random (len(ks), draws, P)`` random K-sets new→old;
    ``c_from``, ``c_to``, ``c_topk (len(ks), P)``: the control pair, patched with ``order``;
    ``prev``, ``induction`` ``(L, H)``: head scores of the new checkpoint's patterns.
    """

    task: str
    pair: tuple[int, int]
    control: tuple[int, int] | None
    rank: np.ndarray
    held: np.ndarray
    p_old: np.ndarray
    p_new: np.ndarray
    p_head: np.ndarray
    order: list
    order_in: list
    ks: tuple
    p_topk: np.ndarray
    p_topk_in: np.ndarray
    p_noised: np.ndarray
    p_random: np.ndarray
    c_from: np.ndarray | None
    c_to: np.ndarray | None
    c_topk: np.ndarray | None
    prev: np.ndarray
    induction: np.ndarray

    def k_index(self, k: int) -> int:
        k = min(int(k), self.p_head.shape[0] * self.p_head.shape[1])
        if k not in self.ks:
            raise ValueError(f"K={k} was not patched; ks: {self.ks}")
        return self.ks.index(k)

    def denoising(self, k: int, *, in_sample: bool = False, **kw) -> Recovery:
        """Share of the held-out gain that the top-``k`` heads' new patterns recover in the old model."""
        i, h = self.k_index(k), self.held
        return recovery(self.p_old[h], self.p_new[h], (self.p_topk_in if in_sample else self.p_topk)[i, h], **kw)

    def noising(self, k: int, **kw) -> Recovery:
        """Share of the held-out gain that the top-``k`` heads' old patterns take away from the new model."""
        i, h = self.k_index(k), self.held
        return recovery(self.p_new[h], self.p_old[h], self.p_noised[i, h], **kw)

    def random_share(self, k: int) -> float:
        """Median over random ``k``-head sets of the held-out recovered share (NaN without a gain)."""
        i, h = self.k_index(k), self.held
        gain = self.p_new[h].mean() - self.p_old[h].mean()
        if abs(gain) < MIN_GAIN:
            return float("nan")
        return float(np.median((self.p_random[i][:, h].mean(-1) - self.p_old[h].mean()) / gain))

    def control_shift(self, k: int) -> np.ndarray | None:
        """Per held-out prompt, ``p_patched - p_from`` at the control pair (top-``k`` heads), or None."""
        if self.c_topk is None:
            return None
        i, h = self.k_index(k), self.held
        return self.c_topk[i, h] - self.c_from[h]

    def shift(self, k: int) -> np.ndarray:
        """Per held-out prompt, ``p_patched - p_old`` at the emergence pair (top-``k`` heads)."""
        i, h = self.k_index(k), self.held
        return self.p_topk[i, h] - self.p_old[h]


@dataclass
class RunResult:
    """One run's analysis (module docstring). ``(T, P, C)`` / ``(T, P)`` arrays; ``steps`` the run's checkpoints."""

    key: RunKey
    tasks: tuple
    prompts: dict  # task -> (prompts, targets)
    steps: tuple
    n_params: int | None
    n_heads: int
    p_target: np.ndarray  # (T, P, C) float32, NaN where not evaluated
    argmax: np.ndarray  # (T, P, C) int8: 1 greedy = target, 0 not, -1 not evaluated
    onset: np.ndarray  # (T, P) emergence index on p (C = never)
    verified: np.ndarray  # (T, P) bisect mode: bracket verified (scan mode: True)
    bisect: np.ndarray  # (T, P) bisection on raw p (scan mode: the hub's way on the same table)
    flip: np.ndarray  # (T, P) paper B's point: bisection on the argmax (C = never)
    rise: np.ndarray  # (T, P) largest smoothed rise within rise_width intervals (NaN in bisect mode)
    ramp: np.ndarray  # (T, P) the same for an even ramp of the prompt's total rise
    width: float
    agreement: dict  # task -> onset_agreement summary (scan mode)
    patches: dict  # task -> RunPatch, or None where too few prompts emerge
    notes: dict = field(default_factory=dict)  # task -> why it was not patched
    losses: np.ndarray | None = None  # training loss, 25-step means (local suites)
    evaluated: int = 0
    meta: dict = field(default_factory=dict)

    def task_index(self, task: str) -> int:
        if task not in self.tasks:
            raise ValueError(f"task {task!r} was not analysed; tasks: {self.tasks}")
        return self.tasks.index(task)

    def onset_steps(self, task: str) -> tuple[np.ndarray, np.ndarray]:
        """Per prompt, the step of the emergence checkpoint and the never mask."""
        idx = self.onset[self.task_index(task)]
        st = np.asarray(self.steps, dtype=float)
        never = idx >= st.size
        return np.where(never, st[-1], st[np.minimum(idx, st.size - 1)]), never


def evaluate_prompts(model, prompt_sets) -> tuple[np.ndarray, np.ndarray]:
    """p(target) and greedy = target of ``model`` on each prompt set: two ``(T, P)`` arrays (inputs on the model's
    device, results on the CPU)."""
    import torch

    device = next(model.parameters()).device
    ps, ok = [], []
    with torch.no_grad():
        for s in prompt_sets:
            logits = model(input_ids=torch.as_tensor(s.input_ids, device=device)).logits[:, -1].float().cpu()  # (P, V)
            ps.append(target_probs(logits, s.target_ids))
            ok.append(logits.argmax(-1).numpy() == s.target_ids)
    return np.stack(ps), np.stack(ok)


def emergence_pair(onset: np.ndarray, n: int, window: int) -> tuple[int, int] | None:
    """Checkpoint indices ``(old, new)`` around the median emergence point of the prompts that emerge after the first
    checkpoint (``0 < onset < n``): ``old = c - window // 2 - 1``, ``new = c + window // 2``, clipped to the run.
    None when fewer than a quarter of the prompts emerge (too few to rank heads on half and test on the other)."""
    o = np.asarray(onset)
    e = o[(o > 0) & (o < n)]
    if e.size < max(2, o.size // 4):
        return None
    c = int(np.median(e))
    h = window // 2
    return max(0, c - h - 1), min(n - 1, c + h)


def control_pair(onset: np.ndarray, n: int, gap: int) -> tuple[int, int] | None:
    """The latest pair ``(old, old + gap)`` of checkpoint indices with no prompt's emergence point in
    ``(old - 1, old + gap + 1]`` (a margin of one checkpoint, for the smoothing), or None."""
    o = np.asarray(onset)
    for old in range(n - 1 - gap, -1, -1):
        if not np.any((o >= old) & (o <= min(n - 1, old + gap + 1))):
            return old, old + gap
    return None


def _patch(study: StudyConfig, suite, size, seed, pset, onset, steps) -> tuple[RunPatch | None, str]:
    import torch

    C = len(steps)
    pair = emergence_pair(onset, C, study.window)
    if pair is None:
        return None, f"fewer than a quarter of the {pset.task} prompts emerge after the first checkpoint"
    ctrl = control_pair(onset, C, pair[1] - pair[0])
    old = suite.load_model(size, seed, steps[pair[0]])
    new = suite.load_model(size, seed, steps[pair[1]])
    device = next(old.parameters()).device
    ids = torch.as_tensor(pset.input_ids, device=device)
    logits_old, patt_old = record_patterns(old, ids)
    logits_new, patt_new = record_patterns(new, ids)  # (L, P, H, T, T)
    L, P, H = patt_new.shape[:3]
    tgt = pset.target_ids
    p_old, p_new = target_probs(logits_old.cpu(), tgt), target_probs(logits_new.cpu(), tgt)
    p_head = target_probs(all_single_head_logits(old, ids, patt_new).cpu(), tgt).reshape(L, H, P)
    rank, held = split_prompts(P, study.split_seed)
    order = [int(i) for i in rank_heads(p_head[..., rank], p_old[rank])]
    order_in = [int(i) for i in rank_heads(p_head[..., held], p_old[held])]
    ks = capped_ks(study.ks, L * H)

    def joint(model, donor, order_):
        return target_probs(patched_last_logits(model, ids, donor, topk_masks(order_, L, H, ks)).cpu(), tgt)

    p_topk, p_topk_in, p_noised = (
        joint(old, patt_new, order),
        joint(old, patt_new, order_in),
        joint(new, patt_old, order),
    )
    rng = np.random.default_rng([study.split_seed, int(seed), 5, TASKS.index(pset.task)])
    # a random order's top K is a random K-set: one forward per draw gives every K
    p_random = np.stack(
        [joint(old, patt_new, [int(i) for i in rng.permutation(L * H)]) for _ in range(study.random_draws)], axis=1
    )  # (len(ks), draws, P)
    c_from = c_to = c_topk = None
    if ctrl is not None:
        c_old, c_new = suite.load_model(size, seed, steps[ctrl[0]]), suite.load_model(size, seed, steps[ctrl[1]])
        lo, _ = record_patterns(c_old, ids)
        ln, pc = record_patterns(c_new, ids)
        c_from, c_to = target_probs(lo.cpu(), tgt), target_probs(ln.cpu(), tgt)
        c_topk = joint(c_old, pc, order)
        for st in ctrl:
            suite.release(size, seed, steps[st])
    period = PERIODS.get(pset.task)
    scores = (
        head_scores(patt_new.cpu(), period)
        if period
        else {"prev": np.full((L, H), np.nan), "induction": np.full((L, H), np.nan)}
    )
    for st in pair:
        suite.release(size, seed, steps[st])
    return RunPatch(
        task=pset.task,
        pair=(int(steps[pair[0]]), int(steps[pair[1]])),
        control=None if ctrl is None else (int(steps[ctrl[0]]), int(steps[ctrl[1]])),
        rank=rank,
        held=held,
        p_old=p_old,
        p_new=p_new,
        p_head=p_head,
        order=order,
        order_in=order_in,
        ks=ks,
        p_topk=p_topk,
        p_topk_in=p_topk_in,
        p_noised=p_noised,
        p_random=p_random,
        c_from=c_from,
        c_to=c_to,
        c_topk=c_topk,
        prev=scores["prev"],
        induction=scores["induction"],
    ), ""


def analyze_run(key: RunKey, suite) -> RunResult:
    """Paper B's analysis of the run ``key`` names in ``suite`` (module docstring); uncached (:func:`study_run` in
    :mod:`lib.lm.study_results` is the same through the results cache)."""
    study = key.study
    if run_key(study, suite, key.size, key.seed) != key:
        raise ValueError(f"the key of {key.name} does not match the suite (another build or selection of steps)")
    tok = suite.load_tokenizer()
    psets = [build_prompts(t, tok, study.n_prompts, study.prompt_seed) for t in study.tasks]
    steps = key.steps
    T, P, C = len(psets), study.n_prompts, len(steps)
    p_target = np.full((T, P, C), np.nan, dtype=np.float32)
    argmax = np.full((T, P, C), -1, dtype=np.int8)
    n_params = None
    n_heads = 0

    def evaluate(c: int) -> np.ndarray:
        nonlocal n_params, n_heads
        if argmax[0, 0, c] < 0:
            model = suite.load_model(key.size, key.seed, steps[c])
            n_params = sum(p.numel() for p in model.parameters())
            n_heads = model.config.num_hidden_layers * model.config.num_attention_heads
            p, ok = evaluate_prompts(model, psets)
            p_target[:, :, c], argmax[:, :, c] = p, ok
            if study.mode == "bisect" and c not in (0, C - 1):
                suite.release(key.size, key.seed, steps[c])
        return p_target[:, :, c].ravel()

    curve = range(C) if study.mode == "scan" else sorted(set(range(0, C, study.curve_every)) | {0, C - 1})
    for c in progress(curve, desc=f"{key.name} checkpoints", leave=False):
        evaluate(c)
    bis = bisect_onset(evaluate, C, study.theta, study.verify)
    bisect_idx, verified = bis.index.reshape(T, P), bis.verified.reshape(T, P)
    flip = bisect_emergence(lambda c: (evaluate(c), argmax[:, :, c].ravel() == 1)[1], C).index.reshape(T, P)
    width = float(study.rise_width * (steps[-1] - steps[-2])) if C > 1 else 1.0
    agreement = {}
    if study.mode == "scan":
        flat = p_target.reshape(T * P, C).astype(float)
        onset = stable_onset(flat, study.theta, study.window).reshape(T, P)
        verified = np.ones((T, P), dtype=bool)
        rise = max_rise(flat, steps, width, study.window).reshape(T, P)
        ramp = ramp_rise(flat, steps, width).reshape(T, P)
        for i, t in enumerate(study.tasks):
            a = onset_agreement(p_target[i].astype(float), study.theta, study.window, study.verify)
            agreement[t] = {k: v for k, v in a.items() if not isinstance(v, np.ndarray)}
    else:
        onset = bisect_idx
        rise = np.full((T, P), np.nan)
        ramp = np.full((T, P), np.nan)
    patches, notes = {}, {}
    for t in study.patch_tasks:
        k = study.tasks.index(t)
        patches[t], note = _patch(study, suite, key.size, key.seed, psets[k], onset[k], steps)
        if note:
            notes[t] = note
    losses = None
    run_losses = getattr(suite, "run_losses", lambda *a: None)(key.size, key.seed)
    if run_losses is not None:
        n = len(run_losses) // 25 * 25
        losses = np.asarray(run_losses[:n], dtype=np.float32).reshape(-1, 25).mean(1)
    return RunResult(
        key=key,
        tasks=study.tasks,
        prompts={s.task: (s.prompts, s.targets) for s in psets},
        steps=steps,
        n_params=n_params,
        n_heads=n_heads,
        p_target=p_target,
        argmax=argmax,
        onset=onset,
        verified=verified,
        bisect=bisect_idx,
        flip=flip,
        rise=rise,
        ramp=ramp,
        width=width,
        agreement=agreement,
        patches=patches,
        notes=notes,
        losses=losses,
        evaluated=int((argmax[0, 0] >= 0).sum()),
    )
