"""lib.studies.mixer_comparison: chapter 7's seven-mixer comparison and pre-pretraining as one committed study."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

import lib
from lib.models import init_gpt_params
from lib.studies.mixer_comparison import (
    PRE_CONTROL,
    PRE_VARIANTS,
    MixerComparisonConfig,
    load_mixer_comparison,
    mixer_comparison,
)
from lib.studies.mixer_tuning import MixerTuningConfig

TINY_TUNING = MixerTuningConfig(
    archs=("attention", "mlp_mixer"),
    lrs=(1e-3, 1e-2),
    lm_S=4,
    lm_s=(1, 2),
    lm_steps=20,
    ca_S=4,
    ca_T=3,
    ca_steps=20,
    eval_every=10,
    tokens_per_step=128,
    eval_tokens=256,
    d_head=4,
    n_heads=2,
)
TINY = MixerComparisonConfig(
    tuning=TINY_TUNING, seeds=(0, 1), lm_steps=30, ca_steps=20, pre_steps=20, dyck_k=2, pre_seeds=(0, 1), pre_s=1
)


def test_evaluation_stacks_hold_every_sparsity_and_seed_at_the_chosen_rate():
    cfg = MixerComparisonConfig.fast()
    lm = cfg.run_config("mamba", "linear map", 3e-3)
    assert [(m.task.s, m.seed) for m in lm.members] == [(s, k) for s in cfg.tuning.lm_s for k in cfg.seeds]
    assert {m.lr for m in lm.members} == {3e-3} and lm.steps == cfg.lm_steps and lm.mixer == "mamba"
    ca = cfg.run_config("rwkv", "automaton", 1e-2)
    assert [m.seed for m in ca.members] == list(cfg.seeds) and ca.steps == cfg.ca_steps
    assert {m.task for m in ca.members} == {cfg.tuning.ca_task()}  # the tuning's rule table
    assert lm.stop_below == cfg.tuning.solved and lm.eval_seed == cfg.tuning.eval_seed
    paper = MixerComparisonConfig.paper().run_config("attention", "automaton", 1e-3)
    assert paper.n_layers == 4 and paper.d_mlp == 512 and paper.steps == 10_000
    with pytest.raises(ValueError, match="task"):
        cfg.run_config("attention", "copy", 1e-3)


def test_stage2_stack_is_variant_major_with_the_control_last():
    cfg = MixerComparisonConfig.fast()
    stage1 = cfg.stage1_configs(3e-3)
    assert set(stage1) == {(c, t) for c in ("Dyck", "automaton", "untrained") for t in ("linear map", "automaton")}
    assert stage1["untrained", "automaton"].steps == 1 and stage1["untrained", "automaton"].lr == 1e-30
    run = cfg.stage2_config("linear map", 1e-2, stage1)
    n = len(cfg.pre_seeds)
    assert len(run.members) == (len(PRE_VARIANTS) + 1) * n
    assert all(m.init is None for m in run.members[:n])  # scratch first
    control = run.members[-n:]
    assert {m.init.source for m in control} == {stage1[PRE_CONTROL[1], "linear map"]}
    assert {m.task.s for m in run.members} == {cfg.pre_s} and run.mixer == "attention"


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"seeds": ()}, "seeds"),
        ({"pre_seeds": (1, 1)}, "pre_seeds"),
        ({"lm_steps": 0}, "lm_steps"),
        ({"pre_s": 99}, "pre_s"),
        ({"tuning": MixerTuningConfig(archs=("mamba",))}, "attention"),
    ],
)
def test_bad_configs(kw, match):
    with pytest.raises(ValueError, match=match):
        MixerComparisonConfig(**kw)


def test_reseed_moves_the_nested_tuning_and_the_evaluation_seeds(monkeypatch):
    monkeypatch.setenv("BOOK_SEED", "1")
    moved, base = lib.reseed(MixerComparisonConfig.fast()), MixerComparisonConfig.fast()
    assert moved.seeds == tuple(k + 100_000 for k in base.seeds)
    assert moved.tuning.eval_seed == base.tuning.eval_seed + 100_000 and moved.source_seed == base.source_seed + 100_000


def test_a_tiny_comparison_has_every_run_and_an_untrained_control(tmp_path):
    res = mixer_comparison(TINY, cache=False)
    assert set(res.lm) == set(res.ca) == set(TINY_TUNING.archs) and set(res.pre) == {"linear map", "automaton"}
    times = res.lm_times("attention", 0.55)
    assert times.shape == (len(TINY_TUNING.lm_s), len(TINY.seeds))
    assert res.lm_curves("mlp_mixer", 1).shape == (len(res.lm["mlp_mixer"].steps), len(TINY.seeds))
    assert res.pre_times("automaton", 0.6).shape == (len(PRE_VARIANTS) + 1, len(TINY.pre_seeds))
    for key, rate in res.best_lr.items():
        assert rate in TINY_TUNING.lrs
        if key[0] == "linear map":
            assert {m.lr for m in res.lm[key[1]].config.members} == {rate}
    # the control's "stage 1" moved no weight: every nonzero parameter is its initialisation to the bit, and the
    # zero-initialised ones (biases, LayerNorm shifts) are within one step of the rate, 1e-30
    cfg = res.stage1["untrained", "linear map"].config
    assert res.stage1["untrained", "linear map"].params is None and res.ca["attention"].entropy is None  # slim copies
    assert {k: v.shape[0] for k, v in res.lm["attention"].params.items()} == dict.fromkeys(
        res.lm["attention"].params, 1
    )
    init = init_gpt_params(cfg.model(), [m.seed for m in cfg.members])
    for name, value in lib.train_gpt(cfg).params.items():
        value, start = np.asarray(value), init[name].detach().numpy()
        assert np.array_equal(value[start != 0], start[start != 0]), name
        assert np.abs(value - start).max() <= 2e-30, name
    with pytest.raises(RuntimeError, match="mixer_comparison --publish"):
        load_mixer_comparison(dataclasses.replace(TINY, lm_steps=40), cache=lib.core.cache.Cache(tmp_path))
    with pytest.raises(TypeError):
        load_mixer_comparison(TINY_TUNING)


def test_the_committed_fast_comparison_is_current():
    res = load_mixer_comparison(MixerComparisonConfig.fast())  # fails if stale against the code
    assert set(res.lm) == set(MixerComparisonConfig.fast().tuning.archs)
    assert res.best_lr == lib.load_mixer_tuning(MixerComparisonConfig.fast().tuning).best_lr
    assert torch.isfinite(torch.as_tensor(res.lm["attention"].pred_loss)).all()
