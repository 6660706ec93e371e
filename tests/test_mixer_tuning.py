"""lib.studies.mixer_tuning: the learning-rate grid of chapter 7 as a study (configs, scores, the committed result)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import lib
from lib.studies.mixer_tuning import MixerTuningConfig, mean_loss_over_budget, load_mixer_tuning, mixer_tuning


def test_run_configs_put_every_rate_of_every_sparsity_in_one_stack():
    cfg = MixerTuningConfig.fast()
    lm, ca = cfg.run_config("mamba", "linear map"), cfg.run_config("mamba", "automaton")
    assert len(lm.members) == len(cfg.lm_s) * len(cfg.lrs) and len(ca.members) == len(cfg.lrs)
    assert [m.lr for m in lm.members] == list(cfg.lrs) * len(cfg.lm_s)  # sparsity-major, rate-minor
    assert [m.task.s for m in lm.members[:: len(cfg.lrs)]] == list(cfg.lm_s)
    assert {m.seed for m in lm.members + ca.members} == {cfg.tune_seed} and lm.mixer == "mamba"
    assert lm.steps == cfg.lm_steps and ca.steps == cfg.ca_steps
    paper = MixerTuningConfig.paper().run_config("attention", "automaton")
    assert paper.n_layers == 4 and paper.d_mlp == 512


def test_reseed_moves_every_seed_of_the_study(monkeypatch):
    monkeypatch.setenv("BOOK_SEED", "2")
    moved = lib.reseed(MixerTuningConfig.fast())
    base = MixerTuningConfig.fast()
    for name in ("map_seed", "ca_seed", "tune_seed", "eval_seed"):
        assert getattr(moved, name) == getattr(base, name) + 2 * 100_000  # lib.core.seeds.SEED_STRIDE


def testmean_loss_over_budget_carries_the_last_value_of_a_stack_that_stopped_early():
    loss = np.array([[0.7, 0.6], [0.5, 0.2]])  # two evaluations (every 10 steps), two members; budget 30 -> 4 values
    assert mean_loss_over_budget(loss, 30, 10) == pytest.approx([(0.7 + 3 * 0.5) / 4, (0.6 + 3 * 0.2) / 4])
    assert mean_loss_over_budget(loss, 10, 10) == pytest.approx(loss.mean(0))


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"lrs": ()}, "lrs"),
        ({"lm_s": (9,)}, "lm_s"),
        ({"solved": 0.0}, "solved"),
        ({"d_mlp": 0}, "d_mlp"),
        ({"lm_steps": 0}, "lm_steps"),
    ],
)
def test_bad_configs(kw, match):
    with pytest.raises(ValueError, match=match):
        MixerTuningConfig(**kw)
    with pytest.raises(ValueError, match="task"):
        MixerTuningConfig().run_config("attention", "copy")


def test_a_tiny_tuning_scores_each_rate_and_picks_the_lowest(tmp_path):
    cfg = MixerTuningConfig(
        archs=("attention",),
        lrs=(1e-4, 1e-2),
        lm_S=4,
        lm_s=(2,),
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
    res = mixer_tuning(cfg, cache=False)
    assert set(res.scores) == {("linear map", "attention"), ("automaton", "attention")}
    for key, v in res.scores.items():
        assert v.shape == (2,) and np.all(np.isfinite(v)) and res.best_lr[key] == cfg.lrs[int(np.argmin(v))]
    with pytest.raises(RuntimeError, match="mixer_tuning --publish"):
        load_mixer_tuning(dataclasses.replace(cfg, lm_steps=30), cache=lib.core.cache.Cache(tmp_path))


def test_the_committed_fast_tuning_is_current():
    res = load_mixer_tuning(MixerTuningConfig.fast())  # fails if stale against the code
    assert set(res.best_lr.values()) <= set(MixerTuningConfig.fast().lrs)


def test_publish_main_computes_through_the_cache_without_publishing(tmp_path, monkeypatch):
    from lib.studies import publish_main

    monkeypatch.setenv("BOOK_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("BOOK_CACHE", "1")  # the tests run with the cache off (conftest)
    tiny = MixerTuningConfig(
        archs=("mlp_mixer",),
        lrs=(1e-2,),
        lm_S=4,
        lm_s=(2,),
        lm_steps=10,
        ca_S=4,
        ca_T=3,
        ca_steps=10,
        eval_every=10,
        tokens_per_step=64,
        eval_tokens=128,
        d_head=4,
        n_heads=2,
    )
    publish_main("lib.studies.mixer_tuning", "mixer_tuning", lambda m: tiny, "python -m test", "test", argv=[])
    hit, _ = lib.core.cache.Cache(tmp_path).load(mixer_tuning.__wrapped__, tiny)
    assert hit  # computed and stored in the results cache; nothing copied to data/ without --publish
    with pytest.raises(SystemExit):
        publish_main(
            "lib.studies.mixer_tuning", "mixer_tuning", lambda m: tiny, "python -m test", "test", argv=["--nope"]
        )
