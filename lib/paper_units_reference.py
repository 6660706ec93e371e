r"""The units of the paper-scale studies that train on the reference trainer (:func:`lib.train.gpt_train.run_members`):
the token mixers other than attention, which the fast trainer does not carry, and the transformer beside them when
a comparison must train both the same way (``b-mixer-tuning``, ``b-mixer``).

A module of its own for the reason :mod:`lib.paper_units` gives: a unit is keyed by the code fingerprint of its
function, which covers this module and the training code it imports, so the *code* here stays as it is while
committed units depend on it (docstrings are not fingerprinted).
"""

from __future__ import annotations

from .train.gpt_train import GPTRunConfig, run_members

__all__ = ["reference_curves"]


def reference_curves(cfg: GPTRunConfig) -> dict:
    """Train ``cfg`` with the reference trainer (:func:`lib.train.gpt_train.run_members`, uncached: the study caches
    the unit); its held-out curves, in the layout of :func:`lib.paper_units.fast_curves`.

    Returns
    -------
    dict
        ``steps`` (the evaluation steps), ``loss`` (full-sequence loss, one list per evaluation holding one value per
        member), ``pred_loss`` (the loss on the predicting positions, same layout) and ``steps_run`` (fewer than
        ``cfg.steps`` when every member met ``stop_below``; a member frozen earlier repeats its last evaluation).
    """
    run = run_members(cfg)
    return {"steps": [int(s) for s in run.steps], "loss": run.loss.tolist(), "pred_loss": run.pred_loss.tolist(),
            "steps_run": int(run.steps_run)}  # fmt: skip
