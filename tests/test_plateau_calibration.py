"""lib.studies.plateau_calibration: the arms change exactly what they name, exits are read off the curves, resumable."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import lib
from lib.cache import Cache
from lib.studies.plateau_calibration import ARMS, PlateauCalibrationConfig, plateau_calibration
from lib.train import GPTRunConfig


def test_each_arm_changes_only_what_it_names():
    cfg = PlateauCalibrationConfig.paper()
    base = cfg.run("default")
    assert base.members[0].task.distinct and base.init == "gpt2" and base.weight_decay == 0.0
    assert (base.n_heads * base.d_head, base.d_mlp, base.tokens_per_step, base.lr) == (128, 512, 8192, 1e-3)
    assert base.stop_below == cfg.exit_below == lib.LINEAR_MAP_EXIT  # one definition of the exit
    default_fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(GPTRunConfig) if f.name != "members"}
    for arm, change in ARMS.items():
        run = cfg.run(arm)
        changed = {k for k, v in default_fields.items() if getattr(run, k) != v}
        assert changed == set(change) - {"distinct"}, arm
        assert run.members[0].task.distinct == change.get("distinct", True)
        assert [m.seed for m in run.members] == list(cfg.seeds)


def test_bad_configs_are_refused():
    with pytest.raises(ValueError, match="arms must be distinct names"):
        PlateauCalibrationConfig(arms=("default", "nope"))
    with pytest.raises(ValueError, match="seeds must hold at least two"):
        PlateauCalibrationConfig(seeds=(0,))


def test_a_tiny_calibration_reads_each_exit_off_its_curve(tmp_path):
    cfg = dataclasses.replace(PlateauCalibrationConfig.fast(), arms=("default", "torch_init"), steps=150,
                              exit_below=0.69)  # fmt: skip
    cache = Cache(tmp_path)
    out = plateau_calibration(cfg, max_workers=1, cache=cache)
    for arm in cfg.arms:
        steps, loss, exits = out.steps[arm], out.pred_loss[arm], out.exits[arm]
        assert loss.shape == (len(steps), len(cfg.seeds)) and exits.shape == (len(cfg.seeds),)
        for e, x in enumerate(exits):
            below = np.flatnonzero(loss[:, e] < cfg.exit_below)
            assert (x == steps[below[0]]) if below.size else np.isinf(x)
        assert out.exited(arm) == int(np.isfinite(exits).sum())
    assert "torch_init" in out.table() and len(out.table().splitlines()) == 3
    again = plateau_calibration(cfg, max_workers=1, cache=cache)  # from the cache
    assert all(np.array_equal(again.exits[a], out.exits[a]) for a in cfg.arms)
