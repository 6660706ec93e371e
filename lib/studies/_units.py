r"""The units of the paper-scale studies (:mod:`lib.studies.paper`): one training run each, reduced to what a study
publishes (JSON as it is).

:func:`fast_curves` trains on the fast trainer (:func:`lib.train.fast_train.run_fast`, fp32 or bf16, attention only);
:func:`reference_curves` on the reference trainer (:func:`lib.train.gpt_train.run_members`): the token mixers other
than attention, and the transformer beside them when a comparison must train both the same way (``b-mixer-tuning``,
``b-mixer``).
"""

from __future__ import annotations

from ..core.unit_context import current_unit
from ..train.fast_train import FastRunConfig, run_fast
from ..train.gpt_train import GPTRunConfig, run_members

__all__ = ["fast_curves", "reference_curves"]


def fast_curves(cfg: FastRunConfig) -> dict:
    """Train ``cfg`` with :func:`lib.train.fast_train.run_fast`; its held-out curves. It trains on the engine's
    device and resumes from the unit's checkpoint (:func:`lib.core.unit_context.current_unit`).

    Returns
    -------
    dict
        ``steps`` (the evaluation steps), ``loss`` (full-sequence loss, one list per evaluation holding one value per
        member) and ``pred_loss`` (the loss on the predicting positions, same layout), and ``steps_run`` (fewer than
        ``cfg.run.steps`` when every member met ``stop_below``; a member frozen earlier repeats its last
        evaluation). Floats, so that the result is JSON as it is.
    """
    ctx = current_unit()  # the engine's device and checkpoint file for this unit (neither changes its numbers)
    run = run_fast(cfg, device=ctx.device, checkpoint=ctx.checkpoint, checkpoint_every=ctx.every)
    return {
        "steps": [int(s) for s in run.steps],
        "loss": run.loss.tolist(),
        "pred_loss": run.pred_loss.tolist(),
        "steps_run": int(run.steps_run),
    }


def reference_curves(cfg: GPTRunConfig) -> dict:
    """Train ``cfg`` with the reference trainer (:func:`lib.train.gpt_train.run_members`, uncached: the study caches
    the unit) on the engine's device; its held-out curves, in the layout of :func:`fast_curves`. Its units do not
    checkpoint: the reference trainer is :func:`lib.train.train_ensemble`, whose code keys the committed FAST results.

    Returns
    -------
    dict
        ``steps`` (the evaluation steps), ``loss`` (full-sequence loss, one list per evaluation holding one value per
        member), ``pred_loss`` (the loss on the predicting positions, same layout) and ``steps_run`` (fewer than
        ``cfg.steps`` when every member met ``stop_below``; a member frozen earlier repeats its last evaluation).
    """
    run = run_members(cfg, device=current_unit().device)  # the engine's device (no checkpoints: see the docstring)
    return {
        "steps": [int(s) for s in run.steps],
        "loss": run.loss.tolist(),
        "pred_loss": run.pred_loss.tolist(),
        "steps_run": int(run.steps_run),
    }
