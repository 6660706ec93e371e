"""Chapter 5's readings of per-run results (lib.lm.study_report) on hand-made results with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from lib.lm.study import RunKey, RunResult, StudyConfig
from lib.lm.study_report import flip_lead, patch_summary, rise_summary, run_points, study_table

STEPS = (0, 100, 200, 300, 400)
TASKS = ("rep", "icr_held")


class _Suite:
    sizes = ("s", "l")
    seeds = (0, 1, 2)
    meta = {"cpu_seconds": {"s-0": 10.0, "l-0": 30.0, "l-1": 31.0, "x": 99.0}}


def _result(size, seed, onset_rep, rise_rep):
    P, C = len(onset_rep), len(STEPS)
    onset = np.stack([np.asarray(onset_rep), np.full(P, C)])  # icr_held never emerges
    rise = np.stack([np.asarray(rise_rep, float), np.full(P, 0.01)])
    argmax = np.zeros((2, P, C), np.int8)
    key = RunKey(StudyConfig(), "local", f"{size}-{seed}", size, seed, STEPS, "d")
    return RunResult(
        key=key,
        tasks=TASKS,
        prompts={},
        steps=STEPS,
        n_params={"s": 10, "l": 100}[size],
        n_heads=4,
        p_target=np.zeros((2, P, C), np.float32),
        argmax=argmax,
        onset=onset,
        verified=np.ones((2, P), bool),
        bisect=onset,
        flip=onset,
        rise=rise,
        ramp=np.full((2, P), 0.05),
        width=100.0,
        agreement={},
        patches={"rep": None},
        notes={"rep": "too few"},
    )


def test_points_spread_and_never_solvers_follow_the_median_prompt_rule():
    res = [
        _result("s", 0, [1, 1, 2, 5], [0.3] * 4),  # median of 100,100,200,400(never) = 150
        _result("l", 0, [1, 1, 1, 1], [0.5, 0.6, 0.7, 0.8]),  # 100
        _result("l", 1, [3, 3, 3, 3], [0.1] * 4),  # 300
        _result("l", 2, [5, 5, 5, 1], [0.0] * 4),
    ]  # 3 of 4 never: a never-solver at the last step (400)
    table = study_table(res, _Suite())
    assert table.sizes == ("s", "l") and table.present("s") == [0] and table.present("l") == [0, 1, 2]
    assert table.cpu_seconds == 0 + 10.0 + 30.0 + 31.0  # the listed runs only
    pts = run_points(table, "rep")
    assert pts.seed_steps[0, 0] == 150 and np.isnan(pts.seed_steps[0, 1])
    assert list(pts.seed_steps[1]) == [100, 300, 400] and list(pts.never[1]) == [False, False, True]
    assert pts.spread[1] == pytest.approx(4.0) and pts.spread[0] == 1.0
    assert pts.mean_steps[1] == pytest.approx(800 / 3) and pts.summary()["n_never_runs"] == 1
    # the within-run control of run l-0: all prompts at 100 -> ratio 1; of s-0: evens (100, 200) vs odds (100, 400)
    assert pts.within[0] == pytest.approx(400 / 150)
    # B-never's interval resamples the seeds of sizes with two runs or more (here l: one never-solver of three)
    iv = pts.never_interval(resamples=400)
    assert iv.value == 1 and iv.lo == 0 and iv.hi >= 2 and iv.n == 3
    with pytest.raises(ValueError, match="two runs"):
        run_points(study_table(res[:1], _Suite()), "rep").never_interval()


def test_rises_are_the_emerging_prompts_beside_the_never_learned_null():
    res = [_result("l", 0, [0, 1, 2, 5], [0.9, 0.4, 0.6, 0.0]), _result("l", 1, [2, 2, 2, 2], [0.3] * 4)]
    rs = rise_summary(study_table(res, _Suite()), "rep")
    assert sorted(rs.rise.tolist()) == [0.3] * 4 + [0.4, 0.6]  # onset 0 (already solved) and never are left out
    assert rs.null.size == 8 and rs.summary()["null_median"] == pytest.approx(0.01) and rs.ramp.size == 6


def test_runs_without_a_patch_are_listed_as_skipped():
    ps = patch_summary(study_table([_result("l", 0, [1, 1, 1, 1], [0.5] * 4)], _Suite()), "rep")
    assert ps.names == [] and ps.skipped == {"l-0": "too few"} and np.isnan(ps.summary()["denoise_median"])


def test_flip_lead_is_the_stable_point_minus_the_first_flip_for_prompts_with_both():
    r = _result("l", 0, [2, 3, 5, 1], [0.5] * 4)
    r.flip = np.stack([np.array([1, 3, 2, 5]), np.full(4, 5)])  # prompt 2 never stable, prompt 3 never flips
    lead = flip_lead(study_table([r], _Suite()), "rep")
    assert sorted(lead.tolist()) == [0.0, 100.0]  # prompt 0: 200 - 100; prompt 1: 300 - 300


def test_the_time_reversed_control_sees_flicker_but_not_a_one_way_jump():
    from lib.lm.onset import max_rise

    r = _result("l", 0, [2, 1, 1, 1], [0.0] * 4)
    r.key = RunKey(StudyConfig(window=1), "local", "l-0", "l", 0, STEPS, "d")  # no smoothing: exact numbers
    r.p_target[0] = np.array([[0, 0, 1, 1, 1], [0, 1, 0, 1, 0], [0, 0.5, 0.5, 0.5, 0.5], [0, 0.9, 0.9, 0.1, 0.9]])
    r.rise[0] = max_rise(r.p_target[0].astype(float), STEPS, 100.0, 1)
    rs = rise_summary(study_table([r], _Suite()), "rep")
    assert rs.rise.tolist() == [1.0, 1.0, 0.5, pytest.approx(0.9)]
    assert rs.reversed.tolist() == [0.0, 1.0, 0.0, pytest.approx(0.8)]  # the jump and the step fall nowhere
