"""Chapter 6's readouts: the staircase, the width study's tables, the emergence runs' comparisons, equal to the loops
they replace and checked on curves whose answers are known."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.stats import spearmanr

import lib
import lib.book
from lib.core.stats import Interval

STEPS = np.arange(0, 401, 25, dtype=float)  # (K,) = 17 evaluations


def _drop(at, high=math.log(2), low=0.0):
    """A curve (K,) that sits at ``high`` and is ``low`` from step ``at`` on (inf: never)."""
    return np.where(STEPS >= at, low, high)


def _stack(learned, focus, H=2):
    """A seed stack whose bit i of seed e is learned at learned[e][i] and focused (head 0) at focus[e][i]."""
    learned, focus = np.asarray(learned, float), np.asarray(focus, float)
    E, S = learned.shape
    token_loss = np.stack([np.stack([_drop(learned[e, i]) for i in range(S)], 1) for e in range(E)], 1)  # (K, E, S)
    mass = np.full((len(STEPS), E, H, S), 0.1)
    mass[:, :, 0, :] = np.stack([np.stack([_drop(focus[e, i], 0.1, 0.9) for i in range(S)], 1) for e in range(E)], 1)
    return SimpleNamespace(steps=STEPS, token_loss=token_loss, mass=mass, config=SimpleNamespace(eval_every=25))


def test_staircase_of_runs_whose_drops_follow_their_heads_correlates_perfectly():
    learned = [[100, 200, 300, 350], [50, 150, 250, 400]]
    focus = [[75, 150, 275, 300], [25, 100, 200, 375]]
    st = lib.staircase(_stack(learned, focus), learned=lib.SOLVED)
    np.testing.assert_array_equal(st.learned_at, learned)
    np.testing.assert_array_equal(st.focus_at, focus)
    np.testing.assert_allclose(st.within, [1.0, 1.0])
    assert st.pooled_rho > 0.9 and st.n_learned == 8 and st.n_paired == 8
    assert st.show == 1 and st.spread[1] == 350  # seed 1's bits are learned furthest apart
    assert st.single == 25  # each bit drops within one evaluation: the resolution is the floor
    summary = st.summary()
    assert summary["n_seeds"] == 2 and summary["within_rho"] == 1.0 and summary["show_spread"] == 350


def test_staircase_control_pairs_each_seed_with_the_previous_seeds_heads():
    learned = [[100, 200, 300], [300, 200, 100]]
    focus = [[100, 200, 300], [300, 200, 100]]
    st = lib.staircase(_stack(learned, focus), learned=lib.SOLVED)
    np.testing.assert_allclose(st.within, [1.0, 1.0])
    np.testing.assert_allclose(st.shuffled, [-1.0, -1.0])  # the other seed's order is the reverse


def test_staircase_equals_the_loop_it_replaces():
    rng = np.random.default_rng(0)
    E, S, H = 5, 6, 3
    run = SimpleNamespace(
        steps=STEPS,
        token_loss=rng.uniform(0, 0.8, (len(STEPS), E, S)),
        mass=rng.uniform(0, 0.6, (len(STEPS), E, H, S)),
        config=SimpleNamespace(eval_every=25),
    )
    st = lib.staircase(run, learned=0.05)
    learned = np.stack([lib.first_below(STEPS, run.token_loss[:, e], 0.05) for e in range(E)])
    focus = np.stack([lib.first_below(STEPS, -run.mass[:, e].max(1), -0.5) for e in range(E)])
    ok = np.isfinite(learned) & np.isfinite(focus)
    within = [spearmanr(learned[e, ok[e]], focus[e, ok[e]]).statistic for e in range(E) if ok[e].sum() >= 3]
    np.testing.assert_array_equal(st.learned_at, learned)
    np.testing.assert_array_equal(st.focus_at, focus)
    np.testing.assert_allclose(st.within, [r for r in within if np.isfinite(r)])
    assert st.pooled_rho == pytest.approx(spearmanr(learned[ok], focus[ok]).statistic)


def test_staircase_rejects_bad_input():
    run = _stack([[100, 200, 300]], [[100, 200, 300]])
    with pytest.raises(ValueError, match="token_loss"):
        lib.staircase(SimpleNamespace(**{**vars(run), "mass": run.mass[..., :2]}), learned=0.05)
    with pytest.raises(ValueError, match="focus"):
        lib.staircase(run, learned=0.05, focus=0.0)
    with pytest.raises(ValueError, match="leave"):
        lib.staircase(run, learned=0.7)


def _runs(cross, steps=STEPS):
    """A run whose member j drops from 1 to 0 at cross[j]; loss is 2 * pred_loss."""
    pred = np.stack([np.where(steps >= c, 0.0, 1.0) for c in cross], 1)
    return SimpleNamespace(steps=steps, pred_loss=pred, loss=2 * pred)


def test_emergence_by_bias_splits_the_biased_stack_c_major():
    base, biased = _runs([100, np.inf, 300]), _runs([50, 75, 25, 25])
    out = lib.emergence_by_bias(base, biased, (0.0, 1.0, 3.0), 0.5)
    assert list(out) == [0.0, 1.0, 3.0]
    np.testing.assert_array_equal(out[0.0], [100, np.inf, 300])
    np.testing.assert_array_equal(out[1.0], [50, 75])
    np.testing.assert_array_equal(out[3.0], [25, 25])
    with pytest.raises(ValueError, match="start with 0"):
        lib.emergence_by_bias(base, biased, (1.0, 3.0), 0.5)
    with pytest.raises(ValueError, match="seeds"):
        lib.emergence_by_bias(base, _runs([50, 75, 25]), (0.0, 1.0, 3.0), 0.5)


def test_fixed_width_heads_reads_the_default_head_count_from_the_seed_stack():
    cfg = SimpleNamespace(heads=(1, 2), n_heads=2, n_width=2, seeds=(0, 1, 2))
    stacks = {"seeds": _runs([100, np.inf, 50]), ("heads", 1): _runs([np.inf, 200])}
    runs = type("R", (), {"config": cfg, "__getitem__": lambda self, k: stacks[k]})()
    loss, emerged = lib.fixed_width_heads(runs, 0.5)
    np.testing.assert_array_equal(loss[2], [0.0, 2.0])  # the first n_width seeds only
    assert emerged == {1: 1, 2: 1}
    cfg.n_width = 4
    with pytest.raises(ValueError, match="n_width"):
        lib.fixed_width_heads(runs, 0.5)


def test_head_size_plateaus_takes_the_default_from_the_context_sweep():
    context = SimpleNamespace(
        config=SimpleNamespace(sizes=(8, 16), model=lambda: {"n_heads": 4}),
        plateau=lambda S, c: np.array([100.0, 200.0]) if (S, c) == (8, 0.0) else None,
    )
    stacks = {("thin", 32): _runs([50, 150, np.inf])}
    runs = type("R", (), {"config": SimpleNamespace(ca_heads=(4, 32)), "__getitem__": lambda self, k: stacks[k]})()
    assert lib.head_size_plateaus(runs, context, 0.5) == {4: 150.0, 32: 150.0}


def test_heads_halves_control_equals_the_loop_it_replaces():
    rng = np.random.default_rng(1)
    final = rng.uniform(0, 0.7, (3, 5, 4))
    diff = np.array([[final[i, j, 0::2].mean() - final[i, j, 1::2].mean() for j in range(5)] for i in range(3)])
    want = (diff < -0.01).sum() / max((np.abs(diff) > 0.01).sum(), 1)
    assert lib.heads_halves_control(final, 0.01) == pytest.approx(want)
    assert lib.heads_halves_control(np.zeros((2, 2, 2)), 0.01) == 0.0  # no decisive cell
    with pytest.raises(ValueError, match="seeds"):
        lib.heads_halves_control(final[..., :1], 0.01)


def test_sparsity_medians_is_the_median_over_seeds_per_s():
    study = SimpleNamespace(
        final={4: np.array([[0.1, 0.3, 0.2], [0.7, 0.6, 0.5]])}, s_values=lambda S: np.array([1, 2])
    )
    assert lib.sparsity_medians(study) == {4: {1: 0.2, 2: 0.6}}
    study.s_values = lambda S: np.array([1, 2, 3])
    with pytest.raises(ValueError, match="final"):
        lib.sparsity_medians(study)


def _width_study():
    curves = {}
    cfg = SimpleNamespace(heads=(1, 2), d_heads=(4, 8), ca_heads=(4, 32), ca_depths=(1, 4), ca_layers=4)
    for k, (H, dh) in enumerate([(1, 4), (2, 4), (1, 8), (2, 8)]):
        curves["grid", H, dh] = _runs([np.inf, 100 * (k + 1)])
    curves["thin", 4, 4] = _runs([200, np.inf])
    curves["thin", 32, 4] = _runs([100, 300])
    curves["depth", 4, 1] = _runs([np.inf, np.inf])
    return SimpleNamespace(
        config=cfg,
        grid=lambda H, dh: curves["grid", H, dh],
        thin=lambda H: curves["thin", H, 4],
        depth=lambda n: curves["thin", 4, 4] if n == 4 else curves["depth", 4, n],
    )


def test_width_summary_reads_the_grid_and_the_automaton():
    ws = lib.width_summary(_width_study(), 0.5, 0.5)
    assert ws.grid_final.shape == (2, 2, 2) and ws.n_seeds == 2
    np.testing.assert_array_equal(ws.grid_emerged, [[1, 1], [1, 1]])
    np.testing.assert_allclose(ws.grid_loss, 0.5)  # in every cell seed 0 stays on the plateau, seed 1 solves it
    assert ws.plateau("thin") == {4: np.inf, 32: 200.0}
    assert ws.final("depth") == {1: 1.0, 4: 0.5}
    np.testing.assert_array_equal(ws.delay(1, 4), [-np.inf, 0.0])  # seed 1 never leaves at either depth: no delay
    assert "d=4" in str(ws) and "layers" in str(ws)
    with pytest.raises(ValueError, match="part"):
        ws.plateau("grid")
    with pytest.raises(ValueError, match="finite"):
        lib.width_summary(_width_study(), np.inf, 0.5)


def _iv(lo, hi):
    return Interval(0.5 * (lo + hi), lo, hi, 0.9, 4)


def test_interval_score_counts_halves_above_and_is_minus_one_on_a_contradiction():
    assert lib.interval_score([_iv(0.1, 0.2), _iv(-0.1, 0.2)]) == 1
    assert lib.interval_score([_iv(0.1, 0.2), _iv(0.3, 0.4)]) == 2
    assert lib.interval_score([_iv(0.1, 0.2), _iv(-0.3, -0.1)]) == -1
    assert lib.interval_score([_iv(0.1, 0.2)], threshold=0.15) == 0
    with pytest.raises(ValueError, match="Interval"):
        lib.interval_score([])


def test_halves_interval_pools_the_halves_differences():
    a, b = np.array([1.0, 2.0, 3.0, 5.0]), np.array([0.0, 0.0, 1.0, 1.0, 9.0])
    iv = lib.halves_interval(a, b)
    pooled = np.concatenate([lib.core.stats.halves_difference(a), lib.core.stats.halves_difference(b)])
    assert iv == lib.bootstrap_interval(pooled) and iv.n == 4
    with pytest.raises(ValueError, match="group"):
        lib.halves_interval()


def test_solved_loss_is_the_coin_flip_share_of_ln2():
    assert lib.solved_loss(8) == pytest.approx(7 / 15 * math.log(2))


def test_glue_all_glues_every_entry_under_its_prefixed_name(monkeypatch):
    seen = {}
    monkeypatch.setattr(lib.book, "glue", lambda name, value: seen.__setitem__(name, value))
    values = {1: 0.2, 16: 0.6}
    assert lib.glue_all(values, prefix="S16_s") is values
    assert seen == {"S16_s1": 0.2, "S16_s16": 0.6}
    with pytest.raises(ValueError, match="identifier"):
        lib.glue_all({"a b": 1})
    with pytest.raises(ValueError, match="non-empty"):
        lib.glue_all({})
