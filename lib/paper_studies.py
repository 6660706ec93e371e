r"""The registered paper-scale studies (:mod:`lib.paper_scale`): their units, and the summary each publishes.

``b-sparsity-s16``: paper B's sparsity sweep at state size :math:`S = 16` (every :math:`s = 1, \dots, 16`, three
seeds, 10,000 steps of 8,192 tokens, ``d_model`` 128, 8 heads, MLP 512, lr :math:`10^{-3}`, PyTorch's default
initialisation: :meth:`lib.SparsityStudyConfig.paper`), one unit per :math:`(s, \text{seed})`, trained by the float32
fast trainer (:func:`lib.train.fast_train.run_fast`, equal to the reference trainer to float32 rounding; bfloat16 is
not used until its plateau lengths are calibrated against float32). The summary is what chapter 6's B-sparsity reads
at FAST scale: per seed, the final held-out loss at :math:`s = S/2` minus the worse of :math:`s = 1` and
:math:`s = S - 1` (:meth:`lib.studies.sparsity_study.SparsityStudy.gap`), and the same gap at step 0 as the control.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .paper_scale import PaperStudy, unit
from .studies.sparsity_study import SparsityStudyConfig
from .train.fast_train import FastRunConfig, run_fast
from .train.gpt_train import GPTRunConfig

__all__ = ["STUDIES", "first_and_last_loss", "sparsity_summary", "b_sparsity_s16"]

SPARSITY_S = 16


def first_and_last_loss(cfg: FastRunConfig) -> dict:
    """Train ``cfg`` (:func:`lib.train.fast_train.run_fast`): held-out full-sequence loss at the first and the last
    evaluation, per member, and the steps run."""
    run = run_fast(cfg)
    return {"initial": [float(x) for x in run.loss[0]], "final": [float(x) for x in run.loss[-1]],
            "steps_run": int(run.steps_run)}  # fmt: skip


def _sparsity_units(config: SparsityStudyConfig, S: int):
    stack = config.run(S)  # members ordered (s, seed)
    s_values = dict(config.grid)[S]
    keys = [(s, k) for s in s_values for k in config.seeds]
    units = tuple(unit("lib.paper_studies:first_and_last_loss",
                       FastRunConfig(GPTRunConfig(**{**_fields(stack), "members": (m,)}), "fp32"))
                  for m in stack.members)  # fmt: skip
    return keys, units


def _fields(cfg: GPTRunConfig) -> dict:
    from dataclasses import fields

    return {f.name: getattr(cfg, f.name) for f in fields(cfg) if f.init}


def sparsity_summary(values) -> dict:
    """Per ``(s, seed)`` unit (``None``: not done) -> the published summary of ``b-sparsity-s16`` (module docstring):
    ``final[s]``, ``initial[s]`` (per seed, ``None`` where not done), and ``gap``, ``control_gap`` per seed where the
    three sparsities it needs are done."""
    config = SparsityStudyConfig.paper()
    keys, _ = _sparsity_units(config, SPARSITY_S)
    if len(values) != len(keys):
        raise ValueError(f"need {len(keys)} unit values, got {len(values)}")
    by = {key: v for key, v in zip(keys, values)}
    s_values = dict(config.grid)[SPARSITY_S]
    out = {"S": SPARSITY_S, "seeds": list(config.seeds), "final": {}, "initial": {}}
    for s in s_values:
        for field in ("final", "initial"):
            out[field][str(s)] = [None if by[s, k] is None else by[s, k][field][0] for k in config.seeds]
    for field, name in (("final", "gap"), ("initial", "control_gap")):
        gaps = []
        for k in config.seeds:
            need = [by[s, k] for s in (1, SPARSITY_S // 2, SPARSITY_S - 1)]
            if all(v is not None for v in need):
                low, mid, high = (v[field][0] for v in need)
                gaps.append(float(mid - max(low, high)))
        out[name] = gaps
    out["median_gap"] = float(np.median(out["gap"])) if out["gap"] else None
    return out


def b_sparsity_s16() -> PaperStudy:
    """Paper B's sparsity sweep at S = 16 (module docstring): 48 units."""
    config = SparsityStudyConfig.paper()
    _, units = _sparsity_units(config, SPARSITY_S)
    return PaperStudy("b-sparsity-s16", ("B-sparsity",),
                      "paper B's settings at S = 16 (every s, 3 seeds, 10,000 steps of 8,192 tokens, d_model 128, "
                      "8 heads, MLP 512, lr 1e-3), float32", units, "lib.paper_studies:sparsity_summary")  # fmt: skip


#: ``{name: function returning the PaperStudy}``.
STUDIES: dict[str, Callable[[], PaperStudy]] = {"b-sparsity-s16": b_sparsity_s16}
