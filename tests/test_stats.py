"""lib.core.stats: bootstrap intervals cover what they should, shrink with n, and are deterministic."""

from __future__ import annotations

import numpy as np
import pytest

from lib.core.stats import bootstrap_interval


def test_interval_contains_the_statistic_and_lies_within_the_data():
    x = np.array([0.1, 0.4, 0.35, 0.2, 0.5])
    iv = bootstrap_interval(x)
    assert iv.value == np.median(x) and x.min() <= iv.lo <= iv.value <= iv.hi <= x.max()
    assert iv.above(0.05) and not iv.above(0.3) and iv.below(0.6) and not iv.below(0.3)


def test_constant_values_give_a_point_and_intervals_shrink_with_n():
    assert bootstrap_interval(np.full(4, 0.3)).lo == bootstrap_interval(np.full(4, 0.3)).hi == 0.3
    rng = np.random.default_rng(1)
    widths = [(lambda iv: iv.hi - iv.lo)(bootstrap_interval(rng.normal(size=n), np.mean)) for n in (10, 1000)]
    assert widths[1] < widths[0] / 5  # ~ 1/sqrt(n): a factor 10 expected


def test_coverage_of_the_mean_is_near_its_level():
    rng = np.random.default_rng(2)
    samples = [rng.normal(size=30) for _ in range(200)]
    hits = [
        (lambda iv: iv.lo < 0 < iv.hi)(bootstrap_interval(s, np.mean, resamples=500, seed=k))
        for k, s in enumerate(samples)
    ]
    assert 0.8 <= np.mean(hits) <= 0.97  # nominal 0.9


def test_deterministic_and_censored_values():
    x = [3.0, np.inf, 5.0, 4.0, np.inf]
    assert bootstrap_interval(x) == bootstrap_interval(x)
    assert bootstrap_interval(x).value == 5.0


@pytest.mark.parametrize(
    "values, kw, match",
    [
        ([1.0], {}, "at least 2"),
        ([1.0, np.nan], {}, "NaN"),
        ([1.0, 2.0], {"level": 1.0}, "level"),
        ([1.0, 2.0], {"resamples": 10}, "resamples"),
    ],
)
def test_bad_inputs(values, kw, match):
    with pytest.raises(ValueError, match=match):
        bootstrap_interval(values, **kw)


def test_halves_ratio_is_a_spread_of_the_two_halves():
    from lib import halves_ratio

    x = np.array([1.0, 4.0, 1.0, 4.0, 1.0, 4.0])  # even entries 1, odd entries 4
    assert halves_ratio(x) == pytest.approx(4.0) and halves_ratio(x[::-1]) == pytest.approx(4.0)  # both directions
    assert halves_ratio(np.full(5, 2.5)) == 1.0  # identical halves: no spread
    rng = np.random.default_rng(3)  # one distribution: the spread of medians of halves shrinks towards 1 with n
    assert halves_ratio(rng.lognormal(size=40_000)) < 1.05 < halves_ratio(np.array([1.0, 2.0, 1.5, 9.0]))  # 4 s.e.
    for bad, match in (([1.0], "at least 2"), ([1.0, np.inf], "finite"), ([0.0, 1.0], "positive")):
        with pytest.raises(ValueError, match=match):
            halves_ratio(bad)


def test_halves_difference_pairs_odd_with_even_and_drops_a_leftover():
    from lib.core.stats import halves_difference  # not exported: chapters use lib.halves_interval

    assert halves_difference([1.0, 3.0, 2.0, 7.0, 100.0]).tolist() == [2.0, 5.0]
    assert halves_difference(np.arange(6.0)).tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="at least 2"):
        halves_difference([1.0])


def test_coefficient_of_variation_reduces_along_an_axis_and_is_scale_free():
    from lib.core.stats import coefficient_of_variation

    x = np.array([[1.0, 3.0], [2.0, 2.0]])
    assert coefficient_of_variation(x).tolist() == [0.5, 0.0]
    rng = np.random.default_rng(4)
    y = rng.lognormal(size=50)
    assert coefficient_of_variation(7.0 * y) == pytest.approx(coefficient_of_variation(y))
    iv = bootstrap_interval(y, coefficient_of_variation)
    assert iv.lo <= iv.value <= iv.hi


def test_group_bootstrap_resamples_whole_units_within_each_group():
    from lib import group_bootstrap_interval

    rng = np.random.default_rng(5)
    a, b = rng.normal(1.0, 0.1, size=6), rng.normal(0.0, 0.1, size=4)  # two groups of units
    gap = lambda i, j: a[i].mean() - b[j].mean()  # noqa: E731
    iv = group_bootstrap_interval(gap, (6, 4))
    assert iv.value == pytest.approx(a.mean() - b.mean()) and iv.n == 10
    assert iv.lo <= iv.value <= iv.hi and 0.5 < iv.lo and iv.hi < 1.5  # within the range of unit differences
    assert group_bootstrap_interval(gap, (6, 4)) == iv  # seeded: deterministic
    const = group_bootstrap_interval(lambda i: np.full(5, 2.0)[i].mean(), 5)  # identical units: a point
    assert (const.lo, const.value, const.hi) == (2.0, 2.0, 2.0)
    # one group's mean: the same spread as the plain bootstrap of the values (within Monte Carlo error)
    x = rng.lognormal(size=30)
    plain, grouped = bootstrap_interval(x, np.mean), group_bootstrap_interval(lambda i: x[i].mean(), 30, resamples=4000)
    assert grouped.hi - grouped.lo == pytest.approx(plain.hi - plain.lo, rel=0.15)
    for sizes, match in (((1, 3), "at least 2"), ((), "at least 2")):
        with pytest.raises(ValueError, match=match):
            group_bootstrap_interval(gap, sizes)
    with pytest.raises(ValueError, match="NaN"):
        group_bootstrap_interval(lambda i: np.nan, 3)
