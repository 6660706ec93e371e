"""Points of emergence: bisection against the linear scan, monotonicity reports, paper B's plotting conventions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lib.lm.emergence import (
    abruptness,
    bisect_emergence,
    bisect_first_solved,
    emergence_steps,
    first_stable_solved,
    monotonicity,
    seed_emergence,
)

monotone = st.tuples(st.integers(1, 160), st.integers(0, 160)).map(lambda t: np.arange(t[0]) >= min(t[1], t[0]))


@settings(max_examples=200, deadline=None)
@given(monotone)
def test_bisection_equals_linear_scan_on_monotone_sequences(solved):
    calls = []

    def is_solved(i):
        calls.append(i)
        return bool(solved[i])

    assert bisect_first_solved(is_solved, solved.size) == first_stable_solved(solved)
    assert len(set(calls)) <= 2 + int(np.ceil(np.log2(solved.size))) + 1  # log-many checkpoint loads


@settings(max_examples=100, deadline=None)
@given(st.lists(st.booleans(), min_size=2, max_size=60))
def test_monotonicity_report_flags_exactly_the_non_monotone_sequences(row):
    s = np.array([row])
    report = monotonicity(s)
    is_monotone = bool(np.all(np.diff(s[0].astype(int)) >= 0))
    assert bool(report["monotone"][0]) == is_monotone
    if is_monotone:
        assert report["agree"][0] and report["bisect"][0] == report["linear"][0]


def test_non_monotone_sequence_is_reported_and_bisection_can_differ():
    solved = np.array([[0, 0, 1, 1, 1, 1, 0, 1, 1, 1]], dtype=bool)  # solved early, forgotten once, solved again
    rep = monotonicity(solved)
    assert rep["flips"][0] == 1 and not rep["monotone"][0]
    assert rep["linear"][0] == 7
    assert rep["bisect"][0] != rep["linear"][0]  # bisection lands on the early solve: the report is what tells


def test_never_solved_and_solved_from_the_start():
    assert first_stable_solved([False] * 5) == 5
    assert bisect_first_solved(lambda i: False, 5) == 5
    assert first_stable_solved([True] * 5) == 0
    assert bisect_first_solved(lambda i: True, 5) == 0
    assert first_stable_solved([True, True, False]) == 3  # the final checkpoint fails: never (paper B's grey X)


def test_shared_memo_loads_each_checkpoint_once():
    rng = np.random.default_rng(0)
    points = rng.integers(0, 41, size=32)  # (P,) first solved index, 40 = never
    table = np.arange(40)[None, :] >= points[:, None]  # (P, n)
    loads = []

    def evaluate(c):
        loads.append(c)
        return table[:, c]

    res = bisect_emergence(evaluate, 40)
    assert np.array_equal(res.index, np.minimum(points, 40))
    assert len(loads) == len(set(loads)) == res.n_evaluations < 40
    assert res.verified.all()


def test_verification_flags_a_dip_after_the_point_found():
    table = np.array([[0, 0, 0, 1, 0, 1, 1, 1]], dtype=bool)
    res = bisect_emergence(lambda c: table[:, c], 8)
    if res.index[0] == 3:
        assert not res.verified[0]


def test_emergence_steps_use_bracket_midpoints_and_final_step_for_never():
    steps = (0, 1, 2, 4, 512, 1000, 2000, 143000)
    st_, never = emergence_steps(np.array([5, 6, 8, 0]), steps)
    assert list(st_) == [756.0, 1500.0, 143000.0, 0.0]
    assert list(never) == [False, False, True, False]
    with pytest.raises(ValueError, match="index must lie"):
        emergence_steps(np.array([9]), steps)


def test_seed_emergence_is_median_with_never_at_final_step():
    assert seed_emergence([100, 200, 300], [False, False, False]) == (200.0, False)
    step, never = seed_emergence([100, 3000, 3000, 3000], [False, True, True, True])
    assert never and step == 3000.0


def test_abruptness_separates_a_jump_from_a_ramp():
    jump = np.r_[np.zeros(10), np.ones(10)]
    ramp = np.linspace(0, 1, 20)
    a = abruptness(np.stack([jump, ramp]))
    assert a[0] == pytest.approx(1.0) and a[1] == pytest.approx(1 / 19)


def test_abruptness_skips_unevaluated_checkpoints():
    row = np.array([[0.0, np.nan, 0.1, np.nan, 0.9, 1.0]])
    assert abruptness(row)[0] == pytest.approx(0.8)
