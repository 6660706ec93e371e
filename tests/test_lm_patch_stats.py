"""Patching statistics: the split, the ranking, capped K, recovery with its guard and interval, held-out vs in-sample."""

import numpy as np
import pytest

from lib.lm.patch_stats import capped_ks, rank_heads, recovery, split_prompts


def test_split_is_a_seeded_partition():
    r, h = split_prompts(31, seed=4)
    assert len(r) == 15 and len(h) == 16
    np.testing.assert_array_equal(np.sort(np.concatenate([r, h])), np.arange(31))
    r2, h2 = split_prompts(31, seed=4)
    np.testing.assert_array_equal(r, r2)
    assert not np.array_equal(r, split_prompts(31, seed=5)[0])
    with pytest.raises(ValueError):
        split_prompts(1)


def test_rank_heads_orders_by_mean_gain_with_stable_ties():
    p_old = np.array([0.1, 0.2])
    gains = np.array([[0.0, 0.3, 0.1], [0.3, -0.1, 0.2]])  # (L=2, H=3)
    p_head = p_old + gains[..., None]
    np.testing.assert_array_equal(rank_heads(p_head, p_old), [1, 3, 5, 2, 0, 4])
    with pytest.raises(ValueError):
        rank_heads(p_head, np.zeros(3))


def test_capped_ks():
    assert capped_ks((1, 2, 4, 8, 16), 12) == (1, 2, 4, 8, 12)
    assert capped_ks((16, 1), 9) == (1, 9)
    for bad in ((), (0, 2)):
        with pytest.raises(ValueError):
            capped_ks(bad, 4)
    with pytest.raises(ValueError):
        capped_ks((1,), 0)


def test_recovery_limits_and_exact_fractions():
    rng = np.random.default_rng(0)
    a = rng.uniform(0.0, 0.2, 40)
    b = rng.uniform(0.5, 0.9, 40)
    full, none = recovery(a, b, b), recovery(a, b, a)
    assert (full.value, full.lo, full.hi) == pytest.approx((1, 1, 1))
    assert (none.value, none.lo, none.hi) == pytest.approx((0, 0, 0))
    part = recovery(a, b, a + 0.3 * (b - a))  # every prompt goes 30 % of its way: the ratio of means is 0.3 exactly
    assert part.value == pytest.approx(0.3) and part.lo == pytest.approx(0.3) and part.hi == pytest.approx(0.3)
    noised = recovery(b, a, b - 0.4 * (b - a))  # the reverse direction: 40 % of the gain taken away
    assert noised.value == pytest.approx(0.4) and noised.ok
    noisy = recovery(a, b, a + 0.5 * (b - a) + rng.normal(0, 0.1, 40))
    assert noisy.lo < noisy.value < noisy.hi and noisy.hi - noisy.lo < 0.3


def test_recovery_guard_on_no_gain():
    a = np.full(20, 0.3)
    r = recovery(a, a + 0.01, a + 0.01)
    assert np.isnan(r.value) and not r.ok and "no change" in str(r)
    loss = recovery(a, a - 0.2, a - 0.1)  # a fall is a change too: half of it
    assert loss.ok and loss.value == pytest.approx(0.5)
    # a gain just above the guard, carried by few prompts: resamples lose it
    b = a.copy()
    b[:2] += 0.6
    shaky = recovery(a, b, b)
    assert shaky.change >= 0.05 and np.isnan(shaky.lo) and "resamples" in shaky.reason and shaky.dropped > 0.05
    with pytest.raises(ValueError):
        recovery(a, a[:3], a)
    with pytest.raises(ValueError):
        recovery(a, a + 1, np.full(20, np.nan))


def test_held_out_ranking_removes_the_selection_bias_of_in_sample_ranking():
    """Heads with no effect at all (single-head gains are pure noise): ranked and scored on the same prompts the top
    head 'recovers' a clearly positive fraction; scored on held-out prompts it recovers about nothing."""
    rng = np.random.default_rng(2)
    L, H, P = 2, 6, 40
    same, held = [], []
    for trial in range(200):
        p_old, p_new = np.full(P, 0.1), np.full(P, 0.6)
        p_head = p_old + rng.normal(0, 0.05, (L, H, P))
        r, h = split_prompts(P, seed=trial)
        top_in = rank_heads(p_head, p_old)[0]
        top_out = rank_heads(p_head[..., r], p_old[r])[0]
        same.append(recovery(p_old, p_new, p_head.reshape(L * H, P)[top_in]).value)
        held.append(recovery(p_old[h], p_new[h], p_head.reshape(L * H, P)[top_out][h]).value)
    assert np.mean(same) > 0.02 and abs(np.mean(held)) < np.mean(same) / 4
