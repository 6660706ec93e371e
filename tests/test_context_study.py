"""lib.studies.context_study: the run plan, the measures on known plateaus, a tiny end-to-end sweep, the committed one."""

from __future__ import annotations

import math

import numpy as np
import pytest

import lib
from lib.studies.context_study import (
    ContextStudyConfig,
    bias_ratio,
    context_study,
    growth_per_doubling,
    plateau_exponent,
)


def test_run_configs_stack_every_seed_at_one_width_and_bias():
    cfg = ContextStudyConfig.fast()
    run = cfg.run_config(16, 3.0)
    assert [m.seed for m in run.members] == list(cfg.seeds) and {m.bias for m in run.members} == {3.0}
    assert run.members[0].task.S == 16 and run.steps == cfg.biased_steps and cfg.run_config(8, 0.0).steps == cfg.steps
    assert run.stop_below == pytest.approx(0.9 * math.log(cfg.C)) == cfg.threshold
    assert "d_mlp" not in cfg.model() and ContextStudyConfig.paper().model()["d_mlp"] == 512
    with pytest.raises(ValueError, match="not in the sweep"):
        cfg.run_config(12, 0.0)


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(sizes=(8,)), "sizes"),
        (dict(sizes=(16, 8)), "sizes"),
        (dict(biases=(3.0,)), "biases"),
        (dict(seeds=(0,)), "seeds"),
        (dict(plateau_frac=1.0), "plateau_frac"),
    ],
)
def test_bad_configs(kw, match):
    with pytest.raises(ValueError, match=match):
        ContextStudyConfig(**kw)


def test_measures_on_known_plateaus():
    sizes = (8, 16, 32)
    p = np.array([[100.0, 120.0, 80.0], [200.0, 240.0, 160.0], [400.0, 480.0, 320.0]])  # doubles with S
    assert growth_per_doubling(p, sizes) == pytest.approx(2.0)
    assert plateau_exponent(p, sizes) == pytest.approx(1.0)
    assert bias_ratio(p / 10, p) == pytest.approx(0.1)
    flat = np.array([[100.0, 100.0], [90.0, 90.0], [300.0, 300.0]])  # not monotone: no growth
    assert growth_per_doubling(flat, sizes) == 0.0
    assert growth_per_doubling(p, sizes, seeds=[2, 2, 2]) == pytest.approx(2.0)  # resampled seeds
    assert math.isnan(plateau_exponent(np.full((3, 2), np.inf), sizes))  # nothing finite to fit
    with pytest.raises(ValueError, match="seeds"):
        growth_per_doubling(np.ones(3), sizes)


def test_a_tiny_sweep_end_to_end():
    cfg = ContextStudyConfig(
        sizes=(4, 8),
        biases=(0.0, 3.0),
        steps=30,
        biased_steps=30,
        seeds=(0, 1),
        eval_every=10,
        tokens_per_step=128,
        eval_tokens=256,
        n_heads=2,
        d_head=4,
    )
    st = context_study(cfg, cache=False)
    assert set(st.steps) == {(4, 0.0), (4, 3.0), (8, 0.0), (8, 3.0)}
    assert st.pred_loss[8, 0.0].shape[1] == 2 and st.plateaus(3.0).shape == (2, 2)
    direct = lib.train_gpt(cfg.run_config(8, 3.0), cache=False)
    assert np.allclose(st.pred_loss[8, 3.0], direct.pred_loss)  # the study's curves are the direct run's


def test_the_committed_fast_sweep_is_current():
    st = lib.load_context_study(ContextStudyConfig.fast())  # fails if stale against the code
    assert st.plateaus().shape == (3, 4)
