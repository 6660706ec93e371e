r"""Paper-scale GPT training: :func:`lib.train.run_members` with the matrix products in bfloat16 (or float32).

:func:`lib.train.train_gpt` is the reference trainer: every committed FAST study was trained with it. This module trains the same stacked run (same initialisation, same batches, same Adam, the same
held-out evaluations and early stop) with the forward of :mod:`lib.models.gpt_fast`, whose ``precision`` sets the
precision of the weight products:

- ``FastRunConfig(run, "fp32")`` follows ``train_gpt(run)`` to float32 rounding (tested over a run, early stop
  included): the equivalence that lets the second stand in for the first;
- ``FastRunConfig(run, "bf16")`` is mixed precision (float32 parameters, Adam state, residual stream, attention
  weights and loss; bfloat16 inputs to the matrix products). It follows the float32 run to within bfloat16's
  rounding, and is the paper-scale trainer on hardware with bfloat16 dot products
  (``benchmarks/trainer_paper_scale.py`` measures the gain against a plain PyTorch loop).

Every measurement (the held-out losses and attention statistics) is taken in float32 with the reference forward, so
a run's readouts do not depend on its training precision beyond the weights it reached. Attention models only, with
the stack's learning rate and a fresh initialisation (per-member rates and transferred weights: :func:`train_gpt`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from ..core.cache import cached
from ..models.gpt import causal_bias, init_gpt_params
from ..models.gpt_fast import PRECISIONS, train_logits
from ..core.validate import check_choice
from .ensemble import AdamConfig, Checkpoint, train_ensemble_resumable
from .gpt_train import GPTRun, GPTRunConfig, _evaluate, _HeldOut, task_parts

__all__ = ["FastRunConfig", "run_fast", "train_fast"]


@dataclass(frozen=True)
class FastRunConfig:
    """A stacked GPT run and the precision of its weight products (a frozen config: the cache key of :func:`train_fast`).

    Attributes
    ----------
    run : GPTRunConfig
        The run (attention mixer; no ``Member.lr``, no ``Member.init``).
    precision : {"fp32", "bf16"}
        :data:`lib.models.gpt_fast.PRECISIONS`.
    """

    run: GPTRunConfig
    precision: str = "bf16"

    def __post_init__(self) -> None:
        if not isinstance(self.run, GPTRunConfig):
            raise ValueError(f"run must be a GPTRunConfig, got {type(self.run).__name__}")
        check_choice("precision", self.precision, PRECISIONS)
        if self.run.mixer != "attention":
            raise ValueError(
                f"the fast trainer runs attention models only, got mixer={self.run.mixer!r} (use train_gpt)"
            )
        if any(m.lr is not None or m.init is not None for m in self.run.members):
            raise ValueError("per-member learning rates and transferred weights need train_gpt")


def run_fast(
    cfg: FastRunConfig,
    *,
    desc: str | None = None,
    device: torch.device | str | None = None,
    checkpoint: Path | str | None = None,
    checkpoint_every: int = 500,
) -> GPTRun:
    """Train ``cfg.run`` with :func:`lib.models.gpt_fast.train_logits` at ``cfg.precision`` (uncached; see
    :func:`train_fast`). The data streams, evaluation batch and initial weights are :func:`lib.train.run_members`'s.

    With ``checkpoint`` (a file), the run saves its state there every ``checkpoint_every`` steps (the trainer's, the
    data streams' generators and the held-out records) and resumes from it when the file exists: a run killed and
    started again ends with the numbers of one never interrupted (:func:`lib.train.train_ensemble_resumable`). The
    caller removes the file when the run is done."""
    if not isinstance(cfg, FastRunConfig):
        raise ValueError(f"cfg must be a FastRunConfig, got {type(cfg).__name__}")
    run, device = cfg.run, torch.device(device or "cpu")
    model, E, B = run.model(), len(run.members), run.batch
    parts = {m.task: task_parts(m.task) for m in run.members}
    member_parts = [parts[m.task] for m in run.members]
    masks = torch.stack([p.mask for p in member_parts]).to(device)  # (E, L-1, L-1)
    queries = member_parts[0].queries.to(device)
    c = torch.tensor([m.bias for m in run.members], dtype=torch.float32, device=device)
    additive = causal_bias(run.seq_len - 1, c[:, None, None] * masks, device=device)  # (E, L-1, L-1)
    gens = [torch.Generator().manual_seed(10_007 * m.seed + 1) for m in run.members]  # run_members's streams
    eval_tokens = torch.stack(
        [p.sample(run.eval_size, torch.Generator().manual_seed(run.eval_seed)) for p in member_parts]
    ).to(device)  # (E, n, L)

    def loss_fn(p, step):
        tokens = torch.stack([mp.sample(B, g) for mp, g in zip(member_parts, gens)]).to(device)  # (E, B, L)
        logits = train_logits(p, tokens[..., :-1], model, bias=additive, precision=cfg.precision)  # (E, B, L-1, V)
        ce = F.cross_entropy(logits.reshape(-1, model.vocab), tokens[..., 1:].reshape(-1), reduction="none")
        return ce.view(E, -1).mean(1)  # (E,)

    stats_on = all(p.has_mask for p in member_parts)
    held_out = _HeldOut(
        lambda p: _evaluate(p, model, eval_tokens, additive, masks, queries, stats_on=stats_on), E, run.stop_below
    )
    adam = AdamConfig(
        lr=run.lr, steps=run.steps, betas=run.betas, check_every=run.eval_every, weight_decay=run.weight_decay
    )
    params = init_gpt_params(model, [m.seed for m in run.members], device=device)

    def restore(saved):
        for g, state in zip(gens, saved["gens"]):
            g.set_state(state)
        held_out.records[:], held_out.done = saved["records"], saved["done"]

    ck = (
        None
        if checkpoint is None
        else Checkpoint(
            Path(checkpoint),
            checkpoint_every,
            state=lambda: {
                "gens": [g.get_state() for g in gens],
                "records": list(held_out.records),
                "done": held_out.done.clone(),
            },
            restore=restore,
        )
    )
    out = train_ensemble_resumable(params, loss_fn, adam, desc=desc, on_check=held_out, checkpoint=ck)
    if not bool(held_out.done.all()):
        held_out.record(out.params, out.steps_run)
    rec = {k: np.stack([r[k] for _, r in held_out.records]) for k in held_out.records[0][1]}
    return GPTRun(
        config=run,
        steps=np.array([s for s, _ in held_out.records]),
        loss=rec["loss"],
        pred_loss=rec["pred_loss"],
        token_loss=rec["token_loss"],
        entropy=rec["entropy"],
        mass=rec["mass"],
        iou=rec["iou"],
        train_loss=out.history.numpy(),
        masks=masks.cpu().numpy(),
        queries=queries.cpu().numpy(),
        params={k: v.cpu().numpy() for k, v in out.params.items()},
        steps_run=out.steps_run,
    )


@cached
def train_fast(cfg: FastRunConfig, *, desc: str | None = None, device: torch.device | str | None = None) -> GPTRun:
    """Train (or load from the results cache) the run of ``cfg``; see :func:`run_fast`. ``desc`` and ``device`` do
    not enter the cache key."""
    return run_fast(cfg, desc=desc, device=device)
