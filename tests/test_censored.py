"""lib.core.intervals: a ratio over runs censored at the budget bounds something only while its denominator does not sit
at the budget."""

from __future__ import annotations

import numpy as np
import pytest

from lib import censored_ratio_interval
from lib.claims import at_least, at_most
from lib.core.stats import ratio_interval

BUDGET = 1000.0
EARLY = np.array([100.0, 110, 120, 130, 140, 150])
NEVER = np.full(6, BUDGET)


def test_nothing_censored_below_is_the_plain_bootstrap():
    rng = np.random.default_rng(0)
    a, b = rng.uniform(200, 900, 7), rng.uniform(50, 300, 5)
    assert censored_ratio_interval(a, b, BUDGET) == ratio_interval(a, b)  # same resamples, same value
    assert censored_ratio_interval(NEVER, EARLY, BUDGET) == ratio_interval(
        NEVER, EARLY
    )  # a censored numerator: a bound


def test_a_censored_denominator_gives_no_interval():
    both = censored_ratio_interval(NEVER, NEVER, BUDGET)  # "both never": the old measure's vacuous 1
    assert both.value == 1.0 and np.isnan(both.lo) and np.isnan(both.hi)
    assert not at_least(1.0).holds_on(both.lo, both.hi) and not at_most(1.0).holds_on(both.lo, both.hi)
    half = censored_ratio_interval(EARLY, np.r_[EARLY[:3], NEVER[:3]], BUDGET)  # some resamples' medians at the budget
    assert np.isfinite(half.value) and np.isnan(half.lo) and np.isnan(half.hi)


def test_bad_input():
    with pytest.raises(ValueError, match="exceed"):
        censored_ratio_interval(EARLY, np.r_[EARLY[:5], 2 * BUDGET], BUDGET)
    with pytest.raises(ValueError, match="positive and finite"):
        censored_ratio_interval(EARLY, EARLY, 0.0)
    with pytest.raises(ValueError, match="finite"):
        censored_ratio_interval(np.r_[EARLY, np.inf], EARLY, BUDGET)
    with pytest.raises(ValueError, match="at least 2"):
        censored_ratio_interval(EARLY[:1], EARLY, BUDGET)


def test_the_resamples_it_checks_are_those_of_lib_stats():
    """censored_ratio_interval re-draws lib.core.stats.ratio_interval's resamples (a's, then b's) to find censored
    denominators: the same draws give back lib.core.stats's interval exactly."""
    rng = np.random.default_rng(3)
    a, b = rng.uniform(200, 900, 7), rng.uniform(50, 300, 5)
    draw = np.random.default_rng(0)
    num = np.median(a[draw.integers(0, a.size, size=(4000, a.size))], axis=-1)
    den = np.median(b[draw.integers(0, b.size, size=(4000, b.size))], axis=-1)
    lo, hi = np.quantile(num / den, [0.05, 0.95])
    plain = ratio_interval(a, b)
    assert (plain.lo, plain.hi) == (pytest.approx(lo, rel=1e-12), pytest.approx(hi, rel=1e-12))
