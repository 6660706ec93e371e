"""lib.studies.plateau_calibration: the arms change exactly what they name, exits are read off the curves, resumable."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import lib
from lib.core.cache import Cache
from lib.studies.plateau_calibration import ARMS, PlateauCalibration, PlateauCalibrationConfig, plateau_calibration
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
    cfg = dataclasses.replace(
        PlateauCalibrationConfig.fast(), arms=("default", "torch_init"), steps=150, exit_below=0.69
    )
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


def test_the_cpu_scale_is_the_independent_runs_model_on_the_same_map():
    cpu, paper = PlateauCalibrationConfig.cpu(), PlateauCalibrationConfig.paper()
    run = cpu.run("default")
    assert (run.n_heads, run.d_head, run.d_mlp, run.tokens_per_step, run.lr) == (8, 8, 256, 2048, 3e-3)
    assert (cpu.S, cpu.s, cpu.map_seed, cpu.steps, cpu.exit_below) == (
        paper.S,
        paper.s,
        paper.map_seed,
        paper.steps,
        paper.exit_below,
    )
    check = PlateauCalibrationConfig.paper_check((20, 21))
    assert check.arms == ("torch_init",) and check.run("torch_init").init == "torch"
    assert dataclasses.replace(check, arms=paper.arms, seeds=paper.seeds) == paper  # otherwise the paper's setting


def _calibration(exits: dict, budget: int = 5000) -> PlateauCalibration:
    cfg = dataclasses.replace(PlateauCalibrationConfig.fast(), arms=tuple(exits), steps=budget)
    return PlateauCalibration(
        config=cfg, steps={}, pred_loss={}, exits={a: np.asarray(e, float) for a, e in exits.items()}
    )


def test_sensitivity_verdicts_follow_the_rule_fixed_in_advance():
    inf = np.inf
    out = lib.plateau_sensitivity(
        _calibration(
            {
                "default": [inf, inf, inf, 4000],
                "torch_init": [900, 2000, 1200, inf],  # 3 of 4 exit, median 1600 <= 5000 / 2: shortens
                "adamw": [900, 1000, inf, inf],  # median below half, but only 2 of 4 exit: no clear change
                "free_rows": [inf, inf, inf, inf],
            }
        )
    )
    assert out.exited == {"default": 1, "torch_init": 3, "adamw": 2, "free_rows": 0}
    assert out.median["default"] == 5000 and out.median["torch_init"] == 1600
    assert out.verdict == {
        "default": "no clear change",
        "torch_init": "shortens",
        "adamw": "no clear change",
        "free_rows": "no clear change",
    }
    assert out.deciding() == ("torch_init",)
    assert out.summary()["cal_torch_init_verdict"] == "shortens" and "never" in out.table()
    # with a default that exits, an arm twice as slow lengthens the plateau
    slow = lib.plateau_sensitivity(
        _calibration({"default": [500, 600, 700, 800], "init_std_0.1": [1300, 1400, inf, 2000]})
    )
    assert slow.verdict["init_std_0.1"] == "lengthens" and "cal_init_std_0p1_median" in slow.summary()
    with pytest.raises(ValueError, match="needs a 'default' arm"):
        lib.plateau_sensitivity(_calibration({"torch_init": [1, 2]}))


def test_paper_scale_linear_map_runs_start_from_the_calibrated_init_and_fast_ones_do_not_move():
    from lib.studies.paper_defaults import LINEAR_MAP_INIT

    assert LINEAR_MAP_INIT in ARMS["torch_init"].values()  # the default is the arm the calibration names
    paper = lib.EmergenceRunsConfig.paper().run_configs()
    fast = lib.EmergenceRunsConfig.fast().run_configs()
    for key, run in paper.items():
        linear_map = isinstance(run.members[0].task, lib.tasks.LinearMapTask)
        assert run.init == (LINEAR_MAP_INIT if linear_map else "gpt2"), key  # the automaton was not calibrated
    assert {run.init for run in fast.values()} == {"gpt2"}
    assert lib.SparsityStudyConfig.paper().run(16).init == LINEAR_MAP_INIT
    assert lib.SparsityStudyConfig.fast().run(16).init == "gpt2"
    width = lib.WidthStudyConfig.paper().runs()
    assert {r.init for k, r in width.items() if k[0] == "grid"} == {LINEAR_MAP_INIT}
    assert {r.init for k, r in width.items() if k[0] != "grid"} == {"gpt2"}
    assert {r.init for r in lib.WidthStudyConfig.fast().runs().values()} == {"gpt2"}


def test_the_paper_check_is_paper_bs_configuration_on_fresh_seeds_with_the_calibrated_default():
    from dataclasses import replace

    from lib.studies.paper_defaults import LINEAR_MAP_INIT
    from lib.studies.plateau_check import CHECK_ARMS, CHECK_SEEDS, paper_check_config

    cfg = paper_check_config()
    assert (
        replace(cfg, arms=PlateauCalibrationConfig().arms, seeds=PlateauCalibrationConfig().seeds)
        == PlateauCalibrationConfig.paper()
    )  # nothing but the arms and seeds differs from paper B's configuration
    assert not set(CHECK_SEEDS) & set(PlateauCalibrationConfig.cpu().seeds) and len(CHECK_SEEDS) == 4
    assert "default" in CHECK_ARMS and cfg.run("torch_init").init == LINEAR_MAP_INIT
    assert cfg.run("default").init == "gpt2" and cfg.run("default").d_model is None
    assert (cfg.S, cfg.s, cfg.n_heads * cfg.d_head, cfg.d_mlp, cfg.tokens_per_step, cfg.steps) == (
        16,
        3,
        128,
        512,
        8192,
        5000,
    )
