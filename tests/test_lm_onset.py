"""Emergence on p(target): smoothing, the stable point, bisection with its bracket verified, absolute rise and null."""

import numpy as np
import pytest

from lib.lm.emergence import first_stable_solved
from lib.lm.onset import bisect_onset, max_rise, onset_agreement, ramp_rise, rise_null, smooth, stable_onset


def _steps(n):
    return np.arange(n) * 100.0


def test_smooth_identity_constants_and_ends():
    rng = np.random.default_rng(0)
    p = rng.random((5, 20))
    np.testing.assert_array_equal(smooth(p, 1), p)
    np.testing.assert_allclose(smooth(np.full((2, 9), 0.3), 5), 0.3)
    s = smooth(p, 5)
    np.testing.assert_array_equal(s[:, [0, -1]], p[:, [0, -1]])
    np.testing.assert_allclose(s[:, 5], p[:, 3:8].mean(1))
    np.testing.assert_allclose(s[:, 1], p[:, 0:3].mean(1))  # window shrinks to 3 next to the end
    ramp = np.linspace(0, 1, 12)[None]
    np.testing.assert_allclose(smooth(ramp, 3), ramp)  # a line is its own moving mean


def test_stable_onset_is_the_scan_of_thresholded_p():
    rng = np.random.default_rng(1)
    p = rng.random((200, 15))
    for theta in (0.3, 0.5, 0.8):
        want = [first_stable_solved(r >= theta) for r in p]
        np.testing.assert_array_equal(stable_onset(p, theta, window=1), want)


def test_stable_onset_ignores_one_checkpoint_dips_once_smoothed():
    p = np.array([[0.0, 0.1, 0.2, 0.9, 0.9, 0.2, 0.9, 0.9, 0.9, 0.9]])
    assert stable_onset(p, 0.5, window=1)[0] == 6  # the raw dip at index 5 resets the point
    assert stable_onset(p, 0.5, window=3)[0] == 3  # smoothed, the dip (mean 0.67) stays above theta
    assert stable_onset(np.array([[0.9, 0.9, 0.1]]), 0.5, window=3)[0] == 3  # last below: never


def _monotone(rng, P, n):
    return np.sort(rng.random((P, n)), axis=1)


def test_bisect_equals_scan_on_monotone_curves_and_loads_each_checkpoint_once():
    rng = np.random.default_rng(2)
    p = _monotone(rng, 64, 33)
    calls = []

    def evaluate(i):
        calls.append(i)
        return p[:, i]

    b = bisect_onset(evaluate, p.shape[1], 0.5, verify=2)
    np.testing.assert_array_equal(b.index, stable_onset(p, 0.5, window=1))
    assert b.verified.all()
    assert len(calls) == len(set(calls)) == b.n_evaluations < p.shape[1]
    agree = onset_agreement(p, 0.5, window=1)
    assert agree["agree"] == agree["verified_agree"] == agree["verified_frac"] == 1.0


def test_bisect_flags_a_bracket_that_is_not_monotone():
    # one spike above theta at index 8 of 17, the real rise at 13: bisection's first probe (8) lands on the spike
    p = np.zeros((1, 17))
    p[0, 8] = 0.9
    p[0, 13:] = 0.9
    b = bisect_onset(lambda i: p[:, i], 17, 0.5, verify=2)
    assert b.index[0] == 8 and not b.verified[0]
    assert stable_onset(p, 0.5, window=1)[0] == 13
    a = onset_agreement(p, 0.5, window=1)
    assert a["agree"] == 0.0 and np.isnan(a["verified_agree"])


def test_never_solvers_are_n_and_verified():
    p = np.full((3, 10), 0.2)
    b = bisect_onset(lambda i: p[:, i], 10)
    assert (b.index == 10).all() and b.verified.all()
    assert (stable_onset(p) == 10).all()


def test_max_rise_of_a_jump_a_ramp_and_noise():
    n, h = 41, 0.8
    st = _steps(n)
    jump = np.where(np.arange(n) >= 20, h, 0.0)[None]
    ramp = np.linspace(0, h, n)[None]
    assert max_rise(jump, st, width=100, window=1)[0] == pytest.approx(h)
    assert max_rise(jump, st, width=100, window=3)[0] == pytest.approx(h / 3)  # smoothing spreads a jump over 3
    assert max_rise(jump, st, width=300, window=3)[0] == pytest.approx(h)
    np.testing.assert_allclose(max_rise(ramp, st, width=400, window=1), ramp_rise(ramp, st, 400))
    assert max_rise(ramp[:, ::-1], st, width=400)[0] == 0.0  # a fall is no rise
    rng = np.random.default_rng(3)
    noise = 0.01 + 0.003 * rng.standard_normal((50, n))
    null = rise_null(noise, st, width=300)
    assert 0 < null < 0.02 < max_rise(jump, st, width=300)[0]
    assert null >= np.quantile(max_rise(noise, st, width=300), 0.5)


def test_max_rise_counts_steps_not_checkpoints():
    st = np.array([0, 1, 2, 4, 8, 16, 32, 100, 200, 300], dtype=float)
    p = np.array([[0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.7, 0.7]])
    # within 10 steps only the log-spaced start is reachable (0 -> 8: 0.4), not 32 -> 100
    assert max_rise(p, st, width=10, window=1)[0] == pytest.approx(0.4)


@pytest.mark.parametrize("bad", [dict(window=2), dict(window=0), dict(theta=1.0)])
def test_bad_arguments(bad):
    p = np.random.default_rng(0).random((2, 6))
    with pytest.raises(ValueError):
        if "theta" in bad:
            stable_onset(p, **bad)
        else:
            smooth(p, **bad)


def test_bad_tables_and_steps():
    with pytest.raises(ValueError, match="NaN"):
        smooth(np.array([[0.1, np.nan]]))
    with pytest.raises(ValueError, match="increasing"):
        max_rise(np.zeros((1, 3)), [0, 2, 1], width=1)
    with pytest.raises(ValueError, match="width"):
        max_rise(np.zeros((1, 3)), [0, 1, 2], width=0)
    with pytest.raises(ValueError, match="P,"):
        bisect_onset(lambda i: np.zeros((2, 2)), 4)
