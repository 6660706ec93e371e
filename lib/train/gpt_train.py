r"""Train an ensemble of small GPTs on paper B's synthetic tasks, online, as one batched computation.

A run is a stack of ``E`` members (:class:`Member`): each has its own task (a linear map or an automaton; all
members of a stack share the sequence length and vocabulary), its own seed (initialisation and data stream) and
its own attention-bias strength ``c`` (the additive :math:`c\,M` on the pre-softmax scores, ``M`` its task's
ground-truth mask). All members share one architecture, so their parameters stack along a leading axis and
:func:`lib.train.train_ensemble` runs them together (Adam, elementwise: members stay independent).

Training is online: every step draws fresh sequences per member, ``tokens_per_step // seq_len`` of them (a fixed
*token* batch, the paper's convention when the context grows). The loss is the mean next-token cross-entropy over
the whole sequence (the paper's plotted loss). Every ``eval_every`` steps each member is evaluated on a fixed
held-out batch (``eval_tokens // seq_len`` sequences from ``eval_seed``): the mean loss over all positions, the loss
at each *predicting* query (those whose target is determined by the task) and, per head and query, the attention entropy,
mass on the true support and top-s IoU (:func:`lib.train.attention_stats.attention_stats`).

``stop_below``: a member whose held-out predictable-position loss falls below it at an evaluation is frozen there
(the trainer's check-point callback, :class:`_HeldOut`), and the run ends when every member is frozen. Nothing else
stops a member before the step budget but divergence: in particular not a training loss that repeats, which on a
plateau (every output bit predicted at ≈ ½) happens to float precision. A frozen member's curves and parameters are
those of the evaluation that froze it. Plateau lengths need no more
than that; final-loss sweeps leave it ``None``.

Token mixers (chapter 7): ``GPTRunConfig.mixer`` swaps attention for another token mixer of
:mod:`lib.models.mixers`; such a model has no attention pattern, so its attention statistics are ``nan`` and its
members take no bias. Dyck strings (:class:`lib.tasks.dyck.DyckTask`) train like the other tasks; they have no fixed
ground-truth pattern (``nan`` statistics) and every position counts as predicting.

Per-member learning rates: ``Member.lr`` (default: the stack's ``lr``). Adam is invariant to rescaling a parameter
except through its ``eps``: training :math:`\phi = \theta / r` with the stack's Adam is exactly Adam on
:math:`\theta` with learning rate :math:`r \cdot` ``lr`` and ``eps / r``, so a learning-rate grid runs as one stack.
Members without their own rate are untouched (``r = 1``).

Pre-pretraining: ``Member.init = Transfer(...)`` (:mod:`lib.train.prepretrain`) starts a member from the weights
of a member of an earlier (cached) run.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from ..core.cache import cached
from ..models.gpt import GPTConfig, causal_bias, gpt_forward, init_gpt_params
from ..models.hooks import Recorder
from ..tasks.dyck import DyckTask, dyck_batch
from ..tasks.automaton import (
    AutomatonTask,
    automaton_batch,
    automaton_mask,
    predictable_queries,
    sample_rules,
)
from ..core.validate import check_size
from ..tasks.linear_map import (
    LinearMapTask,
    linear_map_mask,
    output_queries,
    sample_map,
)
from .ensemble import AdamConfig, train_ensemble
from .attention_stats import attention_stats
from .prepretrain import Transfer, apply_transfers

__all__ = ["Member", "GPTRunConfig", "GPTRun", "TaskParts", "task_parts", "train_gpt", "run_members"]

TASKS = (LinearMapTask, AutomatonTask, DyckTask)


@dataclass(frozen=True)
class Member:
    """One model of a stack: its task, its seed (initialisation and data stream) and its bias strength ``c``.

    ``lr``: the member's own learning rate (``None``: the stack's). ``init``: start from transferred weights
    (:class:`lib.train.prepretrain.Transfer`; ``None``: a fresh initialisation from ``seed``).
    """

    task: LinearMapTask | AutomatonTask | DyckTask
    seed: int = 0
    bias: float = 0.0
    lr: float | None = None
    init: Transfer | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.task, TASKS):
            raise ValueError(
                f"task must be a LinearMapTask, an AutomatonTask or a DyckTask, got {type(self.task).__name__}"
            )
        check_size("seed", self.seed, 0)
        if not (isinstance(self.bias, (int, float)) and math.isfinite(self.bias) and self.bias >= 0):
            raise ValueError(f"bias must be a finite number >= 0, got {self.bias!r}")
        if self.lr is not None and not (isinstance(self.lr, (int, float)) and math.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"lr must be a finite number > 0 or None, got {self.lr!r}")
        if self.init is not None and not isinstance(self.init, Transfer):
            raise ValueError(f"init must be a Transfer or None, got {type(self.init).__name__}")


@dataclass(frozen=True)
class GPTRunConfig:
    """One stacked training run (a frozen config: the cache key of :func:`train_gpt`).

    Architecture fields are those of :class:`lib.models.GPTConfig` (``init``: the initialisation scheme);
    optimiser: Adam with constant ``lr`` and ``betas``, no warm-up (our choice); ``weight_decay`` > 0 makes it
    AdamW (decoupled decay, PyTorch's ``torch.optim.AdamW``; default 0: none, our choice). Per-member learning rates
    and weight decay do not mix (the rescaling that gives a member its own rate would rescale its decay too).
    """

    members: tuple[Member, ...]
    n_heads: int = 8
    d_head: int = 4
    n_layers: int = 1
    d_model: int | None = None
    d_mlp: int | None = None
    init_std: float = 0.02
    tokens_per_step: int = 1024
    steps: int = 2000
    lr: float = 3e-3
    betas: tuple[float, float] = (0.9, 0.98)
    eval_every: int = 50
    eval_tokens: int = 8192
    eval_seed: int = 999
    stop_below: float | None = None
    mixer: str = "attention"
    d_state: int | None = None
    init: str = "gpt2"
    weight_decay: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.members, tuple) or not self.members:
            raise ValueError("members must be a non-empty tuple of Member")
        if not all(isinstance(m, Member) for m in self.members):
            raise ValueError("members must hold Member instances")
        kinds = {(type(m.task), m.task.seq_len, m.task.vocab) for m in self.members}
        if len(kinds) != 1:
            raise ValueError(f"members of one stack need one task type, sequence length and vocabulary, got {kinds}")
        for name in ("tokens_per_step", "steps", "eval_every", "eval_tokens", "eval_seed"):
            check_size(name, getattr(self, name), 0 if name == "eval_seed" else 1)
        for name in ("tokens_per_step", "eval_tokens"):
            if getattr(self, name) < self.seq_len:
                raise ValueError(f"{name} must hold one sequence ({self.seq_len} tokens), got {getattr(self, name)}")
        if self.stop_below is not None and not (isinstance(self.stop_below, (int, float)) and self.stop_below > 0):
            raise ValueError(f"stop_below must be a number > 0 or None, got {self.stop_below!r}")
        self.model()  # validates the architecture
        if (
            isinstance(self.weight_decay, bool)
            or not isinstance(self.weight_decay, (int, float))
            or not (math.isfinite(self.weight_decay) and self.weight_decay >= 0)
        ):
            raise ValueError(f"weight_decay must be a finite number >= 0, got {self.weight_decay!r}")
        if self.weight_decay > 0 and any(m.lr is not None for m in self.members):
            raise ValueError("per-member learning rates (Member.lr) need weight_decay=0")
        if self.mixer != "attention" and any(m.bias for m in self.members):
            raise ValueError(f"bias (c M on attention scores) needs mixer='attention', got mixer={self.mixer!r}")

    @property
    def seq_len(self) -> int:
        return self.members[0].task.seq_len

    @property
    def batch(self) -> int:
        """Sequences per member per step."""
        return self.tokens_per_step // self.seq_len

    @property
    def eval_size(self) -> int:
        """Held-out sequences per member."""
        return self.eval_tokens // self.seq_len

    def model(self) -> GPTConfig:
        return GPTConfig(
            vocab=self.members[0].task.vocab,
            n_ctx=self.seq_len - 1,
            n_heads=self.n_heads,
            d_head=self.d_head,
            n_layers=self.n_layers,
            d_model=self.d_model,
            d_mlp=self.d_mlp,
            init_std=self.init_std,
            mixer=self.mixer,
            d_state=self.d_state,
            init=self.init,
        )


@dataclass
class TaskParts:
    """What training needs from a task: a sampler ``(n, generator) -> (n, seq_len)``, the mask and queries."""

    sample: Callable[[int, torch.Generator], torch.Tensor]
    mask: torch.Tensor  # (L-1, L-1) ground-truth support of each query row
    queries: torch.Tensor  # (Q,) predicting queries
    has_mask: bool = True  # False: no fixed ground-truth pattern (Dyck); mask is zero


def task_parts(task: LinearMapTask | AutomatonTask) -> TaskParts:
    """The sampler, ground-truth mask and predicting queries of a task."""
    if isinstance(task, LinearMapTask):
        A = sample_map(task)

        def sample(n, g):
            x0 = torch.randint(0, 2, (n, task.S), generator=g)
            return torch.cat([x0, (x0 @ A.T) % 2], 1)  # (n, 2S)

        return TaskParts(sample, linear_map_mask(A), output_queries(task.S))
    if isinstance(task, AutomatonTask):
        rules = sample_rules(task)
        return TaskParts(
            lambda n, g: automaton_batch(rules, n, task.S, task.T, g),
            automaton_mask(task.S, task.T),
            predictable_queries(task.S, task.T),
        )
    if isinstance(task, DyckTask):
        L = task.seq_len - 1
        return TaskParts(lambda n, g: dyck_batch(task, n, g), torch.zeros(L, L), torch.arange(L), has_mask=False)
    raise ValueError(f"task must be a LinearMapTask, an AutomatonTask or a DyckTask, got {type(task).__name__}")


@dataclass
class GPTRun:
    """Recorded curves of one stacked run (numpy arrays; ``E`` members, ``K`` evaluations, ``Q`` queries).

    Attributes
    ----------
    config : GPTRunConfig
    steps : (K,)
        Steps of the evaluations.
    loss : (K, E)
        Held-out mean next-token loss over all positions (the paper's plotted loss).
    pred_loss : (K, E)
        Held-out loss over the predicting queries only.
    token_loss : (K, E, Q)
        Held-out loss at each predicting query.
    entropy, mass, iou : (K, E, n_layers * H, Q)
        Attention statistics of every head (layer-major) at each predicting query.
    train_loss : (K', E)
        Training-batch loss at the trainer's check points.
    masks : (E, L-1, L-1)
        Ground-truth masks.
    queries : (Q,)
    params : dict of (E, ...) arrays
        Final parameters (float32).
    steps_run : int
    """

    config: GPTRunConfig
    steps: np.ndarray
    loss: np.ndarray
    pred_loss: np.ndarray
    token_loss: np.ndarray
    entropy: np.ndarray
    mass: np.ndarray
    iou: np.ndarray
    train_loss: np.ndarray
    masks: np.ndarray
    queries: np.ndarray
    params: dict = field(repr=False)
    steps_run: int = 0


def _evaluate(params, cfg: GPTConfig, tokens, additive, masks, queries, chunk: int = 64, stats_on: bool = True):
    """Held-out losses and attention statistics of every member (no gradients), in batch chunks.

    Without attention (another token mixer) or without a ground-truth pattern (``stats_on`` False) the attention
    statistics are ``nan``.
    """
    E, n, _ = tokens.shape
    stats_on = stats_on and cfg.mixer == "attention"
    sums: dict[str, torch.Tensor] = {}
    for lo in range(0, n, chunk):
        part = tokens[:, lo : lo + chunk]  # (E, b, L)
        patterns = Recorder([f"blocks.{layer}.attn.hook_pattern" for layer in range(cfg.n_layers)])
        logits = gpt_forward(params, part[..., :-1], cfg, bias=additive, hooks=patterns.hooks if stats_on else None)
        ce = F.cross_entropy(logits.reshape(-1, cfg.vocab), part[..., 1:].reshape(-1), reduction="none")
        ce = ce.view(E, part.shape[1], -1).double()  # (E, b, L-1)
        w = part.shape[1]
        new = {"loss": ce.mean((1, 2)) * w, "token_loss": ce[:, :, queries].mean(1) * w}
        if stats_on:
            stats = [
                attention_stats(patterns.seen[f"blocks.{layer}.attn.hook_pattern"], masks, queries)
                for layer in range(cfg.n_layers)
            ]
        else:
            nan = torch.full((E, cfg.n_layers * cfg.n_heads, len(queries)), float("nan"), dtype=torch.float64)
            stats = [{"entropy": nan, "mass": nan, "iou": nan}]
        for key in ("entropy", "mass", "iou"):
            new[key] = torch.cat([s[key] for s in stats], 1).to(ce.device) * w  # (E, n_layers*H, Q)
        for k, v in new.items():
            sums[k] = sums[k] + v if k in sums else v
    out = {k: (v / n).cpu().numpy() for k, v in sums.items()}
    out["pred_loss"] = out["token_loss"].mean(-1)
    return out


_SOURCES: dict = {}  # stage-1 parameters already trained in this process (a few small models), by config


def _source_params(source: GPTRunConfig, device) -> dict:
    """Final parameters of a stage-1 run: from this process's memo, else through the cached :func:`train_gpt`."""
    if source not in _SOURCES:
        if len(_SOURCES) >= 8:
            _SOURCES.pop(next(iter(_SOURCES)))
        _SOURCES[source] = train_gpt(source, device=device).params
    return _SOURCES[source]


class _HeldOut:
    """The trainer's check-point callback: evaluate every member on the held-out batch, record it, and name the
    members whose predicting-query loss fell below ``stop_below`` (they are frozen at this evaluation; later records
    repeat the evaluation that froze them). Nothing but this criterion (and divergence) stops a member early."""

    def __init__(self, evaluate: Callable[[dict], dict], E: int, stop_below: float | None):
        self.evaluate, self.stop_below = evaluate, stop_below
        self.records: list[tuple[int, dict]] = []
        self.done = torch.zeros(E, dtype=torch.bool)

    def record(self, params, step: int) -> None:
        with torch.no_grad():
            rec = self.evaluate(params)
        if self.records and bool(self.done.any()):
            keep = self.done.numpy()
            for key, value in self.records[-1][1].items():
                rec[key][keep] = value[keep]
        self.records.append((step, rec))

    def __call__(self, params, step: int) -> torch.Tensor:
        self.record(params, step)
        if self.stop_below is not None:
            self.done |= torch.from_numpy(self.records[-1][1]["pred_loss"] < self.stop_below)
        return self.done.clone()


def run_members(cfg: GPTRunConfig, *, desc: str | None = None, device: torch.device | str | None = None) -> GPTRun:
    """Train the stack of ``cfg`` (uncached; :func:`train_gpt` is the cached entry point).

    Data are drawn on the CPU (seeded generators) and moved to ``device`` (default CPU) where the models train.
    """
    device = torch.device(device or "cpu")
    model = cfg.model()
    E, B = len(cfg.members), cfg.batch
    parts = {m.task: task_parts(m.task) for m in cfg.members}
    member_parts = [parts[m.task] for m in cfg.members]
    masks = torch.stack([p.mask for p in member_parts]).to(device)  # (E, L-1, L-1)
    queries = member_parts[0].queries.to(device)
    stats_on = all(p.has_mask for p in member_parts)
    c = torch.tensor([m.bias for m in cfg.members], dtype=torch.float32)
    additive = causal_bias(cfg.seq_len - 1, c.to(device)[:, None, None] * masks, device=device)  # (E, L-1, L-1)
    gens = [torch.Generator().manual_seed(10_007 * m.seed + 1) for m in cfg.members]
    eval_gen = [torch.Generator().manual_seed(cfg.eval_seed) for _ in member_parts]
    eval_tokens = torch.stack([p.sample(cfg.eval_size, g) for p, g in zip(member_parts, eval_gen)]).to(
        device
    )  # (E, n, L)
    params = init_gpt_params(model, [m.seed for m in cfg.members], device=device)
    transfers = {e: m.init for e, m in enumerate(cfg.members) if m.init is not None}
    if transfers:  # pre-pretraining: stage-1 weights from the (cached) stage-1 runs
        sources = {t.source: _source_params(t.source, device) for t in transfers.values()}
        apply_transfers(params, model, transfers, sources)
    # per-member learning rates: train phi = theta / r with the stack's Adam (module docstring)
    ratio = torch.tensor([(m.lr if m.lr is not None else cfg.lr) / cfg.lr for m in cfg.members], dtype=torch.float64)
    rescaled = bool((ratio != 1).any())
    r = {k: ratio.to(dtype=v.dtype, device=device).view(-1, *[1] * (v.dim() - 1)) for k, v in params.items()}

    def theta(p):
        return {k: v * r[k] for k, v in p.items()} if rescaled else p

    if rescaled:
        params = {k: v / r[k] for k, v in params.items()}

    def loss_fn(p, step):
        tokens = torch.stack([mp.sample(B, g) for mp, g in zip(member_parts, gens)]).to(device)  # (E, B, L)
        logits = gpt_forward(theta(p), tokens[..., :-1], model, bias=additive)
        ce = F.cross_entropy(logits.reshape(-1, model.vocab), tokens[..., 1:].reshape(-1), reduction="none")
        return ce.view(E, -1).mean(1)  # (E,)

    held_out = _HeldOut(
        lambda p: _evaluate(theta(p), model, eval_tokens, additive, masks, queries, stats_on=stats_on),
        E,
        cfg.stop_below,
    )
    adam = AdamConfig(
        lr=cfg.lr, steps=cfg.steps, betas=cfg.betas, check_every=cfg.eval_every, weight_decay=cfg.weight_decay
    )
    run = train_ensemble(params, loss_fn, adam, desc=desc, on_check=held_out)
    if not bool(held_out.done.all()):
        held_out.record(run.params, run.steps_run)
    # a frozen member's parameters are those it had when it was frozen (the trainer restores them every step)
    final = theta(run.params)
    records = held_out.records
    stack = {k: np.stack([r[k] for _, r in records]) for k in records[0][1]}
    return GPTRun(
        config=cfg,
        steps=np.array([s for s, _ in records]),
        loss=stack["loss"],
        pred_loss=stack["pred_loss"],
        token_loss=stack["token_loss"],
        entropy=stack["entropy"],
        mass=stack["mass"],
        iou=stack["iou"],
        train_loss=run.history.numpy(),
        masks=masks.cpu().numpy(),
        queries=queries.cpu().numpy(),
        params={k: v.cpu().numpy() for k, v in final.items()},
        steps_run=run.steps_run,
    )


@cached
def train_gpt(cfg: GPTRunConfig, *, desc: str | None = None, device: torch.device | str | None = None) -> GPTRun:
    """Train (or load from the results cache) the stacked run ``cfg``; see :func:`run_members`.

    ``desc`` and ``device`` do not enter the cache key (they do not change the result beyond float rounding).
    """
    return run_members(cfg, desc=desc, device=device)
