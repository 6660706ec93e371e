"""Chapter 7's committed many-rule automaton runs: config validation, the stack layout, tiny end-to-end."""

import numpy as np
import pytest

from lib.core.cache import Cache
from lib.models.mixers import ARCHITECTURES
from lib.studies.mixer_study import MixerStudyConfig, load_mixer_study

TINY = dict(N=2, n_layers=1, steps=4, tokens=64, eval_every=2, lrs=(1e-3, 1e-2), seeds=(0,))


def test_stack_layout_rates_then_seeds_tuning_seed_first():
    cfg = MixerStudyConfig(arch="rwkv", lrs=(1e-3, 3e-3), tune_seed=7, seeds=(0, 1))
    run = cfg.run()
    assert [(m.lr, m.seed) for m in run.members] == [(1e-3, 7), (1e-3, 0), (1e-3, 1), (3e-3, 7), (3e-3, 0), (3e-3, 1)]
    assert run.mixer == "rwkv" and len({m.task for m in run.members}) == 1


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(arch="transformerx"), "mixer"),
        (dict(lrs=()), "lrs"),
        (dict(lrs=(0.0,)), "lrs"),
        (dict(seeds=(100,), tune_seed=100), "tune_seed"),
        (dict(seeds=()), "seeds"),
        (dict(C=1), "C"),
    ],
)
def test_bad_configs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MixerStudyConfig(**kwargs)


def test_tiny_study_and_its_curves(tmp_path):
    cache = Cache(tmp_path / "cache", data_dir=tmp_path / "data", enabled=True)
    cfg = MixerStudyConfig(arch="linear_rnn", **TINY)
    with pytest.raises(RuntimeError, match="linear_rnn"):
        load_mixer_study(cfg, cache=cache)
    cur = load_mixer_study(cfg, compute=True, cache=cache)
    assert cur.pred_loss.shape == (len(cur.steps), 2, 2)
    assert cur.tuning().shape == (len(cur.steps), 2) and cur.evaluation(1).shape == (len(cur.steps), 1)
    np.testing.assert_array_equal(cur.evaluation(0)[:, 0], cur.pred_loss[:, 0, 1])
    again = load_mixer_study(cfg, cache=cache)  # from the cache
    np.testing.assert_array_equal(again.pred_loss, cur.pred_loss)


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_the_committed_runs_load_for_the_current_code(arch):
    """The FAST chapter reads these; a change to the GPT or mixer code makes them stale (see the module docstring)."""
    cur = load_mixer_study(MixerStudyConfig(arch=arch), cache=Cache(enabled=False))
    assert cur.config.arch == arch and np.all(cur.pred_loss >= 0)
