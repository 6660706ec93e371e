"""lib.measures.comparisons: seed-averaged curve times and their ratio, on curves whose crossing steps are known."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import lib
from lib.measures.comparisons import seed_spread


def _run(cross, steps=np.arange(0, 101, 10)):
    """Curves (K, groups*seeds) that drop from 1 to 0 at the given steps (inf: never)."""
    cols = [np.where(steps >= c, 0.0, 1.0) for c in cross]
    return SimpleNamespace(steps=steps, pred_loss=np.stack(cols, 1))


def test_mean_curve_time_averages_the_chosen_seeds():
    run = _run([20, 60])
    assert lib.mean_curve_time(run.steps, run.pred_loss, 0.4) == 60  # the mean is 0.5 until both dropped
    assert lib.mean_curve_time(run.steps, run.pred_loss, 0.6) == 20
    assert lib.mean_curve_time(run.steps, run.pred_loss, 0.4, seeds=[0, 0]) == 20  # a resample of seed 0 only
    assert lib.mean_curve_time(run.steps, run.pred_loss, -1.0) == np.inf
    with pytest.raises(ValueError, match="seeds"):
        lib.mean_curve_time(run.steps, run.pred_loss[:, 0], 0.5)


def test_curve_time_ratio_is_a_geometric_mean_with_censoring_at_the_budget():
    slow = _run([80, 80, np.inf, np.inf])  # two groups of two seeds; group 1 never leaves
    fast = _run([10, 10, 20, 20])
    r = lib.curve_time_ratio(slow, fast, 2, 0.5, 100)
    assert r == pytest.approx(np.sqrt((80 / 10) * (100 / 20)))  # group 1 counts at the budget
    assert lib.curve_time_ratio(fast, fast, 2, 0.5, 100) == pytest.approx(1.0)
    never = _run([np.inf] * 4)
    assert lib.curve_time_ratio(slow, never, 2, 0.5, 100) == 0.0  # no group where the fast one leaves
    iv = lib.group_bootstrap_interval(lambda i, j: lib.curve_time_ratio(slow, fast, 2, 0.5, 100, i, j), (2, 2))
    assert iv.lo == iv.hi == pytest.approx(r)  # identical seeds within each group: no spread
    with pytest.raises(ValueError, match="multiple"):
        lib.curve_time_ratio(_run([1, 2, 3]), fast, 2, 0.5, 100)


def test_heads_vs_head_size_counts_each_doubling_pair_once():
    heads, d_heads = (1, 2, 4), (2, 4)
    loss = np.zeros((2, 3, 2))  # (d_head, H, seeds)
    loss[1, 0] = 0.5  # (H=1, d=4) worse than (H=2, d=2): more heads win from (1, 2)
    loss[0, 2] = 0.5  # (H=4, d=2) worse than (H=2, d=4): bigger heads win from (2, 2)
    out = lib.heads_vs_head_size(loss, heads, d_heads, 0.01)
    assert (out["more"], out["bigger"], out["ties"], out["share"]) == (1, 1, 0, 0.5)
    assert lib.heads_vs_head_size(np.zeros((2, 3, 2)), heads, d_heads, 0.01)["share"] == 0.0  # all ties: no evidence
    loss[1, 0] = [0.5, -0.5]  # seed 1 alone reverses the first pair into a tie
    assert lib.heads_vs_head_size(loss, heads, d_heads, 0.01, seeds=[1, 1])["more"] == 0
    with pytest.raises(ValueError, match="final_loss"):
        lib.heads_vs_head_size(np.zeros((3, 3, 2)), heads, d_heads, 0.01)


def test_archs_beating_counts_lower_mean_losses_and_takes_resampled_seeds():
    losses = {"attention": np.full((3, 2), 0.5), "a": np.full((3, 2), 0.4), "b": np.array([[0.2, 0.9]] * 3)}
    assert lib.archs_beating(losses, "attention") == 1  # b's mean 0.55 is worse; a is better
    assert lib.archs_beating(losses, "attention", {"b": [0, 0]}) == 2  # b's good seed twice
    with pytest.raises(ValueError, match="ref"):
        lib.archs_beating(losses, "nope")


def test_seed_spread_is_the_smallest_ratio_over_sizes():
    steps = np.array([[100.0, 400.0], [50.0, 100.0]])
    assert seed_spread(steps) == 2.0
    assert seed_spread(steps, [[0, 0], [0, 1]]) == 1.0  # one seed twice: no spread
    assert seed_spread(np.array([[0.0, 5.0]])) == 5.0  # step 0 counts as 1
    with pytest.raises(ValueError, match="sizes"):
        seed_spread(np.ones(3))


def test_named_thresholds():
    import math

    assert lib.SOLVED == 0.1 * math.log(2) and 0.1 * math.log(2) < lib.LINEAR_MAP_EXIT < math.log(2)
    assert lib.automaton_exit(4) == 0.9 * math.log(4) and lib.automaton_exit(2, 0.5) == 0.5 * math.log(2)
    for bad in (dict(C=1), dict(C=2.0), dict(C=4, frac=1.0)):
        with pytest.raises(ValueError):
            lib.automaton_exit(**bad)


def test_input_bit_loss_recovers_the_input_part_of_the_mean_loss():
    S, rng = 8, np.random.default_rng(0)
    inputs, outputs = rng.uniform(0, 1, (5, 3, S - 1)), rng.uniform(0, 1, (5, 3, S))
    loss = np.concatenate([inputs, outputs], -1).mean(-1)  # over all 2S-1 predictions
    got = lib.input_bit_loss(loss, outputs.mean(-1), S)
    assert np.allclose(got, inputs.mean(-1))
    with pytest.raises(ValueError, match="S"):
        lib.input_bit_loss(loss, outputs.mean(-1), 1)


def test_relaxation_time_is_the_first_record_after_the_last_one_outside_the_band():
    steps = np.arange(0, 60, 10)  # (6,)
    target = np.array(
        [
            [0.0, 0.5, 0.9, 1.0, 1.02, 1.0],  # within 5 % of 1.0 from step 30 on
            [1.0, 1.0, 1.0, 1.0, 1.0, 1.0],  # never outside: relaxed at the first record
            [0.0, 0.0, 0.0, 0.0, 0.0, 0.3],
        ]
    )  # only the last record is inside
    assert lib.relaxation_times(steps, target).tolist() == [30, 0, 50]
    slow = np.array([[0.0, 0.2, 0.4, 0.6, 0.8, 1.0]])  # a slower approach relaxes later
    assert lib.relaxation_times(steps, slow)[0] > lib.relaxation_times(steps, target[:1])[0]
    with pytest.raises(ValueError, match="steps"):
        lib.relaxation_times(steps[:-1], target)


def test_fluctuation_is_the_late_variance_averaged_over_seeds():
    rng = np.random.default_rng(1)
    noise = rng.normal(size=(2, 50, 400)) * np.array([0.1, 1.0])[:, None, None]  # two P values, 50 seeds
    noise[..., :200] += 5.0  # a transient in the first half is left out
    mean, se = lib.fluctuation(noise)
    assert mean == pytest.approx([0.01, 1.0], rel=0.1) and np.all(se < 0.1 * mean)
    with pytest.raises(ValueError, match="seeds"):
        lib.fluctuation(noise[:, :1])


def test_slowing_factors_are_peak_and_p_star_over_far_below():
    P_lin, P_soft = np.array([1.0, 2.0, 4.0, 8.0]), np.array([10.0, 20.0, 30.0, 40.0])
    tau_lin = np.array([[10, 10], [20, 40], [300, 100], [50, 50]], dtype=float)  # (n_P, seeds); onset P1 = 4
    tau_soft = np.array([[5, 7], [6, 6], [12, 12], [30, 30]], dtype=float)  # P* = 30
    lin, soft = lib.slowing_factors(tau_lin, P_lin, 4.0, tau_soft, P_soft, 30.0)
    assert lin == pytest.approx(200 / 20)  # peak mean 200 over the mean of P <= 2 (10 and 30)
    assert soft == pytest.approx(12 / 6)  # the last size not above P* over the mean of P <= 18
    # invariant to the seeds' order, and to a common rescaling of time
    assert lib.slowing_factors(tau_lin[:, ::-1], P_lin, 4.0, 3 * tau_soft, P_soft, 30.0) == pytest.approx((lin, soft))
    with pytest.raises(ValueError, match="n_P"):
        lib.slowing_factors(tau_lin[:3], P_lin, 4.0, tau_soft, P_soft, 30.0)
    with pytest.raises(ValueError, match="far below"):
        lib.slowing_factors(tau_lin, P_lin, 1.0, tau_soft, P_soft, 30.0)
