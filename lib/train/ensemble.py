r"""Batched ensemble training: many independent small models as one computation.

Parameters of ``E`` models are stacked along a leading member axis. The loss function returns one loss per member,
``(E,)``; the trainer minimises their sum. Because member ``e``'s loss depends only on member ``e``'s slice, the
gradient of the sum with respect to that slice is the gradient of its own loss, and Adam (elementwise) then runs
``E`` independent optimisations: the same trajectories as ``E`` separate runs, at the per-op cost of one.

Per-member early stopping, at check points (every ``check_every`` steps) only, by one of three rules:

- a stopping callback (``on_check``) names the members that met its criterion, e.g. a held-out loss below a
  threshold (:mod:`lib.train.gpt_train`);
- with ``tol > 0``, a member whose training loss changed by at most ``tol * max(1, |loss|)`` since the previous
  check point (for deterministic objectives, where a loss that stops changing means a converged fit; never for an
  online loss, whose consecutive values can coincide to float precision on a plateau);
- a member whose loss is non-finite is frozen and flagged as diverged.

A frozen member's parameters are restored after each optimiser step, so it ends with the parameters it had when it
was frozen; training ends when every member is frozen. Parameters stay on the device they come on (CPU or CUDA);
per-member bookkeeping is done on the CPU at check points only.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

import torch

from ..core.progress import progress

__all__ = [
    "AdamConfig",
    "Checkpoint",
    "EnsembleRun",
    "train_ensemble",
    "train_ensemble_resumable",
    "member_grad_norm",
    "CheckFn",
]

LossFn = Callable[[Mapping[str, torch.Tensor], int], torch.Tensor]
#: ``on_check(params, step) -> Tensor (E,) of bool or None``: the members to freeze at this check point.
CheckFn = Callable[[Mapping[str, torch.Tensor], int], "torch.Tensor | None"]


@dataclass(frozen=True)
class AdamConfig:
    """Adam on stacked parameters (a frozen config: part of a cache key).

    Attributes
    ----------
    lr : float
        Learning rate.
    steps : int
        Maximum number of optimiser steps.
    betas : tuple of float
        Adam's moment decay rates.
    eps : float
        Adam's denominator offset.
    check_every : int
        Steps between convergence checks and loss-history records.
    tol : float
        Relative change of the training loss between check points below which a member counts as converged
        (0 disables this rule). Only for deterministic objectives: an online loss can repeat to float precision
        on a plateau.
    optimizer : {"adam", "sgd"}
        Adam (default), or plain gradient descent without momentum (``"sgd"``: its dynamics are gradient flow, so
        relaxation times follow the curvature of the objective; ``betas`` and ``eps`` are then unused).
    weight_decay : float
        Decoupled weight decay (AdamW, ``torch.optim.AdamW``) when > 0; default 0: plain Adam. Adam only.
    lr_final : float or None
        If given, the learning rate follows a cosine from ``lr`` down to ``lr_final`` over ``steps`` (Adam at a
        constant rate keeps jittering around a minimum; the decay lets it settle, so the final gradient is small).
    """

    lr: float = 0.05
    steps: int = 2000
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    check_every: int = 50
    tol: float = 0.0
    lr_final: float | None = None
    optimizer: str = "adam"
    weight_decay: float = 0.0

    def __post_init__(self) -> None:
        if not (isinstance(self.lr, (int, float)) and math.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"lr must be a finite number > 0, got {self.lr!r}")
        if isinstance(self.steps, bool) or not isinstance(self.steps, int) or self.steps < 1:
            raise ValueError(f"steps must be an int >= 1, got {self.steps!r}")
        if isinstance(self.check_every, bool) or not isinstance(self.check_every, int) or self.check_every < 1:
            raise ValueError(f"check_every must be an int >= 1, got {self.check_every!r}")
        if len(self.betas) != 2 or not all(0 <= b < 1 for b in self.betas):
            raise ValueError(f"betas must be two numbers in [0, 1), got {self.betas!r}")
        if not (self.eps > 0):
            raise ValueError(f"eps must be > 0, got {self.eps!r}")
        if not (isinstance(self.tol, (int, float)) and self.tol >= 0):
            raise ValueError(f"tol must be a number >= 0, got {self.tol!r}")
        if self.optimizer not in ("adam", "sgd"):
            raise ValueError(f"optimizer must be 'adam' or 'sgd', got {self.optimizer!r}")
        if (
            isinstance(self.weight_decay, bool)
            or not isinstance(self.weight_decay, (int, float))
            or not (math.isfinite(self.weight_decay) and self.weight_decay >= 0)
        ):
            raise ValueError(f"weight_decay must be a finite number >= 0, got {self.weight_decay!r}")
        if self.weight_decay > 0 and self.optimizer != "adam":
            raise ValueError(f"weight_decay needs optimizer='adam', got {self.optimizer!r}")
        if self.lr_final is not None and not (0 < self.lr_final <= self.lr):
            raise ValueError(f"lr_final must be in (0, lr] or None, got {self.lr_final!r}")


@dataclass
class EnsembleRun:
    """Outcome of :func:`train_ensemble`.

    Attributes
    ----------
    params : dict of Tensor
        Final parameters, detached, each ``(E, ...)``, on the device they were trained on.
    loss : Tensor, shape ``(E,)``
        Final loss per member.
    grad_norm : Tensor, shape ``(E,)``
        Euclidean norm of each member's gradient at the final parameters (a convergence diagnostic).
    history_steps : Tensor, shape ``(K,)``
        Steps at which the loss was recorded.
    history : Tensor, shape ``(K, E)``
        Loss per member at those steps.
    stopped_at : Tensor, shape ``(E,)``
        Step at which each member was frozen (``steps`` if never): the number of optimiser steps its parameters
        received.
    diverged : Tensor, shape ``(E,)``, bool
        Members whose loss became non-finite.
    steps_run : int
        Optimiser steps actually taken (``steps`` unless every member was frozen earlier).
    """

    params: dict[str, torch.Tensor]
    loss: torch.Tensor
    grad_norm: torch.Tensor
    history_steps: torch.Tensor
    history: torch.Tensor
    stopped_at: torch.Tensor
    diverged: torch.Tensor
    steps_run: int


def member_grad_norm(grads: Mapping[str, torch.Tensor], E: int) -> torch.Tensor:
    """Per-member gradient norm from stacked gradients ``(E, ...)``, shape ``(E,)``."""
    total = torch.zeros(E, dtype=torch.float64)
    for g in grads.values():
        total += g.detach().reshape(E, -1).double().pow(2).sum(1).cpu()
    return total.sqrt()


def _check_params(params: Mapping[str, torch.Tensor]) -> int:
    if not isinstance(params, Mapping) or not params:
        raise ValueError("params must be a non-empty mapping of name -> tensor with a leading member axis")
    sizes = {name: (t.shape[0] if t.dim() > 0 else None) for name, t in params.items()}
    if None in sizes.values() or len(set(sizes.values())) != 1:
        raise ValueError(f"every parameter needs the same leading member axis, got sizes {sizes}")
    E = next(iter(sizes.values()))
    if E < 1:
        raise ValueError("the ensemble is empty: the leading member axis has size 0")
    return E


def train_ensemble(
    params: Mapping[str, torch.Tensor],
    loss_fn: LossFn,
    cfg: AdamConfig,
    *,
    desc: str | None = None,
    on_check: CheckFn | None = None,
) -> EnsembleRun:
    """Minimise ``E`` independent per-member losses with Adam, batched.

    Parameters
    ----------
    params : mapping of str to Tensor
        Initial parameters, each with leading member axis ``E`` (copied; the inputs are not modified).
    loss_fn : callable
        ``loss_fn(params, step) -> Tensor (E,)``: member ``e``'s loss may depend only on member ``e``'s slices
        (``step`` lets online tasks draw fresh data).
    cfg : AdamConfig
    desc : str, optional
        Progress-bar label.
    on_check : callable, optional
        ``on_check(params, step) -> Tensor (E,) of bool or None``, called at every check point before that step's
        loss, with the current parameters (read them under ``torch.no_grad``; do not modify them). Members it marks
        ``True`` are frozen now, with the parameters it saw; ``None`` or an all-``False`` mask freezes none.
    """
    if not isinstance(cfg, AdamConfig):
        raise TypeError(f"cfg must be an AdamConfig, got {type(cfg).__name__}")
    E = _check_params(params)
    p = {k: v.detach().clone().requires_grad_(True) for k, v in params.items()}
    if cfg.optimizer == "sgd":
        opt = torch.optim.SGD(list(p.values()), lr=cfg.lr)
    elif cfg.weight_decay > 0:
        opt = torch.optim.AdamW(
            list(p.values()), lr=cfg.lr, betas=cfg.betas, eps=cfg.eps, weight_decay=cfg.weight_decay
        )
    else:
        opt = torch.optim.Adam(list(p.values()), lr=cfg.lr, betas=cfg.betas, eps=cfg.eps)
    sched = (
        torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=cfg.steps, eta_min=cfg.lr_final)
        if cfg.lr_final is not None
        else None
    )
    device = next(iter(p.values())).device
    # bookkeeping lives on the CPU and is updated at check points only (no device sync in between)
    frozen = torch.zeros(E, dtype=torch.bool)
    diverged = torch.zeros(E, dtype=torch.bool)
    stopped_at = torch.full((E,), cfg.steps, dtype=torch.long)
    frozen_dev = frozen.to(device)
    hist_steps: list[int] = []
    hist: list[torch.Tensor] = []
    last_check: torch.Tensor | None = None

    def evaluate(step: int) -> torch.Tensor:
        loss = loss_fn(p, step)
        if loss.shape != (E,):
            raise ValueError(f"loss_fn must return shape ({E},), got {tuple(loss.shape)}")
        return loss

    def requested(step: int) -> torch.Tensor:
        with torch.no_grad():
            stop = on_check({k: v.detach() for k, v in p.items()}, step)
        if stop is None:
            return torch.zeros(E, dtype=torch.bool)
        stop = torch.as_tensor(stop).cpu()
        if stop.shape != (E,) or stop.dtype != torch.bool:
            raise ValueError(
                f"on_check must return a bool tensor of shape ({E},) or None, got {stop.dtype} {tuple(stop.shape)}"
            )
        return stop

    step, taken = 0, 0
    bar = progress(total=cfg.steps, desc=desc)
    for step in range(cfg.steps):
        opt.zero_grad(set_to_none=True)
        if on_check is not None and step % cfg.check_every == 0:
            stop = requested(step) & ~frozen
            stopped_at[stop] = step
            frozen |= stop
            frozen_dev = frozen.to(device)
            if bool(frozen.all()):
                break
        loss = evaluate(step)  # (E,)
        if step % cfg.check_every == 0:
            current = loss.detach().double().cpu()
            hist_steps.append(step)
            hist.append(current)
            bad = ~torch.isfinite(current) & ~diverged
            stopped_at[bad & ~frozen] = step
            diverged |= bad
            frozen |= bad
            if cfg.tol > 0 and last_check is not None:
                change = (current - last_check).abs()
                done = (change <= cfg.tol * current.abs().clamp_min(1.0)) & ~frozen
                stopped_at[done] = step
                frozen |= done
            last_check = current
            frozen_dev = frozen.to(device)
            if bool(frozen.all()):
                break
        # a non-finite member contributes nothing to the others' gradients (their losses are independent)
        torch.where(torch.isfinite(loss), loss, torch.zeros_like(loss)).sum().backward()
        if bool(frozen.any()):
            before = {k: v.detach()[frozen_dev].clone() for k, v in p.items()}
            opt.step()
            with torch.no_grad():
                for k, v in p.items():
                    v[frozen_dev] = before[k]
        else:
            opt.step()
        if sched is not None:
            sched.step()
        taken += 1
        bar.update(1)
    bar.close()

    # final loss and gradient (convergence diagnostic)
    opt.zero_grad(set_to_none=True)
    final = evaluate(step)
    torch.where(torch.isfinite(final), final, torch.zeros_like(final)).sum().backward()
    grads = {k: (v.grad if v.grad is not None else torch.zeros_like(v)) for k, v in p.items()}
    gnorm = member_grad_norm(grads, E)
    diverged |= ~torch.isfinite(final.detach().double().cpu())
    gnorm[diverged] = float("nan")
    return EnsembleRun(
        params={k: v.detach() for k, v in p.items()},
        loss=final.detach().cpu(),
        grad_norm=gnorm,
        history_steps=torch.tensor(hist_steps, dtype=torch.long),
        history=torch.stack(hist) if hist else torch.empty(0, E),
        stopped_at=stopped_at,
        diverged=diverged,
        steps_run=taken,
    )


@dataclass(frozen=True)
class Checkpoint:
    """Where and how often :func:`train_ensemble_resumable` saves its state, and the caller's own state beside it.

    Attributes
    ----------
    path : Path
        The checkpoint file: resumed from when it exists; written through a temporary file and a rename, so a process
        killed while writing leaves the previous checkpoint whole.
    every : int
        Optimiser steps between checkpoints (saved before step ``k * every``'s check point, ``k >= 1``).
    state : callable, optional
        ``state() -> object``: what the caller must restore besides the trainer (its data streams' generators, its
        ``on_check`` records), pickled into the checkpoint.
    restore : callable, optional
        ``restore(object)``: put back what ``state`` returned.
    """

    path: Path
    every: int = 500
    state: Callable[[], object] | None = None
    restore: Callable[[object], None] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.every, bool) or not isinstance(self.every, int) or self.every < 1:
            raise ValueError(f"Checkpoint.every must be an int >= 1, got {self.every!r}")
        if (self.state is None) != (self.restore is None):
            raise ValueError("Checkpoint needs both state and restore, or neither")


def _save_checkpoint(ck: Checkpoint, state: dict) -> None:
    import os

    path = Path(ck.path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def _load_checkpoint(ck: Checkpoint, identity: dict) -> dict | None:
    path = Path(ck.path)
    if not path.exists():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=False)  # the trainer's own file
    except Exception as err:  # noqa: BLE001  (an unreadable checkpoint is recomputed, never trusted)
        warnings.warn(f"checkpoint {path} is unreadable ({err}); the run starts over", stacklevel=3)
        return None
    if not isinstance(state, dict) or state.get("identity") != identity:
        raise ValueError(
            f"checkpoint {path} belongs to another run (its optimiser, member count or parameter shapes differ); "
            "remove it to start over"
        )
    return state


def train_ensemble_resumable(
    params: Mapping[str, torch.Tensor],
    loss_fn: LossFn,
    cfg: AdamConfig,
    *,
    desc: str | None = None,
    on_check: CheckFn | None = None,
    checkpoint: Checkpoint | None = None,
) -> EnsembleRun:
    """:func:`train_ensemble`, resumable: every ``checkpoint.every`` steps the whole state of the run (parameters,
    optimiser and schedule state, per-member bookkeeping, loss history, torch's global generator and the caller's
    ``checkpoint.state()``) is saved, and a run that finds a checkpoint continues from it. A run killed at any point
    and started again ends with the numbers of the run never interrupted, to the bit on one machine (tested).

    Without a checkpoint it is :func:`train_ensemble` step for step (tested bit for bit); ``train_ensemble`` stays
    as it is because the committed FAST results are keyed by its code.
    """
    if not isinstance(cfg, AdamConfig):
        raise TypeError(f"cfg must be an AdamConfig, got {type(cfg).__name__}")
    if checkpoint is not None and not isinstance(checkpoint, Checkpoint):
        raise ValueError(f"checkpoint must be a Checkpoint or None, got {type(checkpoint).__name__}")
    E = _check_params(params)
    p = {k: v.detach().clone().requires_grad_(True) for k, v in params.items()}
    if cfg.optimizer == "sgd":
        opt = torch.optim.SGD(list(p.values()), lr=cfg.lr)
    elif cfg.weight_decay > 0:
        opt = torch.optim.AdamW(
            list(p.values()), lr=cfg.lr, betas=cfg.betas, eps=cfg.eps, weight_decay=cfg.weight_decay
        )
    else:
        opt = torch.optim.Adam(list(p.values()), lr=cfg.lr, betas=cfg.betas, eps=cfg.eps)
    sched = (
        torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=cfg.steps, eta_min=cfg.lr_final)
        if cfg.lr_final is not None
        else None
    )
    device = next(iter(p.values())).device
    frozen = torch.zeros(E, dtype=torch.bool)
    diverged = torch.zeros(E, dtype=torch.bool)
    stopped_at = torch.full((E,), cfg.steps, dtype=torch.long)
    hist_steps: list[int] = []
    hist: list[torch.Tensor] = []
    last_check: torch.Tensor | None = None
    start, taken = 0, 0
    identity = {"adam": repr(cfg), "shapes": {k: tuple(v.shape) for k, v in p.items()}}
    saved = _load_checkpoint(checkpoint, identity) if checkpoint is not None else None
    if saved is not None:
        with torch.no_grad():
            for k, v in p.items():
                v.copy_(saved["params"][k])
        opt.load_state_dict(saved["opt"])
        if sched is not None:
            sched.load_state_dict(saved["sched"])
        frozen, diverged, stopped_at = saved["frozen"], saved["diverged"], saved["stopped_at"]
        hist_steps, hist, last_check = saved["hist_steps"], saved["hist"], saved["last_check"]
        start, taken = saved["step"], saved["taken"]
        torch.set_rng_state(saved["rng"])
        if checkpoint.restore is not None:
            checkpoint.restore(saved["caller"])
    frozen_dev = frozen.to(device)

    def evaluate(step: int) -> torch.Tensor:
        loss = loss_fn(p, step)
        if loss.shape != (E,):
            raise ValueError(f"loss_fn must return shape ({E},), got {tuple(loss.shape)}")
        return loss

    def requested(step: int) -> torch.Tensor:
        with torch.no_grad():
            stop = on_check({k: v.detach() for k, v in p.items()}, step)
        if stop is None:
            return torch.zeros(E, dtype=torch.bool)
        stop = torch.as_tensor(stop).cpu()
        if stop.shape != (E,) or stop.dtype != torch.bool:
            raise ValueError(
                f"on_check must return a bool tensor of shape ({E},) or None, got {stop.dtype} {tuple(stop.shape)}"
            )
        return stop

    step = start
    bar = progress(total=cfg.steps, desc=desc, initial=start)
    for step in range(start, cfg.steps):
        if checkpoint is not None and step > start and step % checkpoint.every == 0:
            _save_checkpoint(
                checkpoint,
                {
                    "identity": identity,
                    "step": step,
                    "taken": taken,
                    "params": {k: v.detach().cpu().clone() for k, v in p.items()},
                    "opt": opt.state_dict(),
                    "sched": sched.state_dict() if sched is not None else None,
                    "frozen": frozen.clone(),
                    "diverged": diverged.clone(),
                    "stopped_at": stopped_at.clone(),
                    "hist_steps": list(hist_steps),
                    "hist": list(hist),
                    "last_check": last_check,
                    "rng": torch.get_rng_state(),
                    "caller": checkpoint.state() if checkpoint.state is not None else None,
                },
            )
        opt.zero_grad(set_to_none=True)
        if on_check is not None and step % cfg.check_every == 0:
            stop = requested(step) & ~frozen
            stopped_at[stop] = step
            frozen |= stop
            frozen_dev = frozen.to(device)
            if bool(frozen.all()):
                break
        loss = evaluate(step)  # (E,)
        if step % cfg.check_every == 0:
            current = loss.detach().double().cpu()
            hist_steps.append(step)
            hist.append(current)
            bad = ~torch.isfinite(current) & ~diverged
            stopped_at[bad & ~frozen] = step
            diverged |= bad
            frozen |= bad
            if cfg.tol > 0 and last_check is not None:
                change = (current - last_check).abs()
                done = (change <= cfg.tol * current.abs().clamp_min(1.0)) & ~frozen
                stopped_at[done] = step
                frozen |= done
            last_check = current
            frozen_dev = frozen.to(device)
            if bool(frozen.all()):
                break
        torch.where(torch.isfinite(loss), loss, torch.zeros_like(loss)).sum().backward()
        if bool(frozen.any()):
            before = {k: v.detach()[frozen_dev].clone() for k, v in p.items()}
            opt.step()
            with torch.no_grad():
                for k, v in p.items():
                    v[frozen_dev] = before[k]
        else:
            opt.step()
        if sched is not None:
            sched.step()
        taken += 1
        bar.update(1)
    bar.close()

    opt.zero_grad(set_to_none=True)
    final = evaluate(step)
    torch.where(torch.isfinite(final), final, torch.zeros_like(final)).sum().backward()
    grads = {k: (v.grad if v.grad is not None else torch.zeros_like(v)) for k, v in p.items()}
    gnorm = member_grad_norm(grads, E)
    diverged |= ~torch.isfinite(final.detach().double().cpu())
    gnorm[diverged] = float("nan")
    return EnsembleRun(
        params={k: v.detach() for k, v in p.items()},
        loss=final.detach().cpu(),
        grad_norm=gnorm,
        history_steps=torch.tensor(hist_steps, dtype=torch.long),
        history=torch.stack(hist) if hist else torch.empty(0, E),
        stopped_at=stopped_at,
        diverged=diverged,
        steps_run=taken,
    )
