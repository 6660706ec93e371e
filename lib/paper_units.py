r"""The units of the paper-scale studies (:mod:`lib.paper_studies`): one training run each, reduced to what a study
publishes.

Kept apart from the study definitions and their summaries: a unit is keyed by the code fingerprint of its function
(:mod:`lib.study_unit`), which covers this module and the training code it imports, so adding a study or changing a
summary leaves the units already computed valid. For the same reason the *code* of this module stays as it is while
committed units depend on it (docstrings are not fingerprinted): a new kind of unit goes in a module of its own.
"""

from __future__ import annotations

from .train.fast_train import FastRunConfig, run_fast

__all__ = ["fast_curves"]


def fast_curves(cfg: FastRunConfig) -> dict:
    """Train ``cfg`` with :func:`lib.train.fast_train.run_fast`; its held-out curves.

    Returns
    -------
    dict
        ``steps`` (the evaluation steps), ``loss`` (full-sequence loss, one list per evaluation holding one value per
        member) and ``pred_loss`` (the loss on the predicting positions, same layout), and ``steps_run`` (fewer than
        ``cfg.run.steps`` when every member met ``stop_below``; a member frozen earlier repeats its last
        evaluation). Floats, so that the result is JSON as it is.
    """
    run = run_fast(cfg)
    return {"steps": [int(s) for s in run.steps], "loss": run.loss.tolist(), "pred_loss": run.pred_loss.tolist(),
            "steps_run": int(run.steps_run)}  # fmt: skip
