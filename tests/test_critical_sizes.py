"""lib.readouts.critical_sizes: chapter 3's readouts of the reduced theory equal the calls they replace, and have the theory's
limits (the onset's V² law, no crossover where L does not exceed V, a ratio that is P× over P*)."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pytest

import lib
from lib import theory as th
from lib.readouts.critical_sizes import LAW


# ------------------------------------------------------------------------------------------ linear curve readouts
def _curve(P, c1, cG, loss, model="linear_v2"):
    return SimpleNamespace(model=model, P=np.asarray(P, float), x=np.stack([c1, cG], 1), bayes_test_loss=loss)


def test_readouts_of_a_known_curve():
    P = np.geomspace(10, 1e4, 61)
    lnP = np.log(P)
    c1 = 1 / (1 + np.exp(-(lnP - np.log(100)) * 4))  # half its maximum at P = 100
    cG = 0.1 / (1 + np.exp(-(lnP - np.log(2000)) * 4))  # at P = 2000
    loss = 1 - 0.3 * c1 - 0.5 * cG / 0.1  # two drops, under the two rises
    r = lib.linear_curve_readouts(_curve(P, c1, cG, loss))
    grid = P[1] / P[0]
    assert 100 <= r.c1_half <= 100 * grid and 2000 <= r.cG_half <= 2000 * grid  # the first grid point at or above
    assert r.c1_half == P[np.argmax(c1 >= 0.5 * c1.max())]
    assert r.max_step == pytest.approx(np.abs(np.diff(cG)).max()) and r.cG_max == pytest.approx(cG.max())
    assert r.step_share == pytest.approx(r.max_step / (cG.max() - cG.min())) and 0 < r.step_share <= 1
    assert r.grid_ratio == pytest.approx(grid)
    assert r.drops.P_peaks.tolist() == lib.loss_drops(P, loss).P_peaks.tolist() and len(r.drops.P_peaks) == 2
    s = r.summary()
    assert (s["drop1"], s["drop2"], s["n_drops"]) == (r.drops.P_peaks[0], r.drops.P_peaks[-1], 2)
    assert "plateau ratio" in r.table()


def test_readouts_equal_the_chapter_cell_on_the_theory():
    P = np.geomspace(15, 20000, 120)
    lc = th.order_parameters_vs_P("linear_v2", 8, 32, P, method="bayes")
    r = lib.linear_curve_readouts(lc)
    drops = lib.loss_drops(lc.P, lc.bayes_test_loss)
    assert r.c1_half == lc.P[np.argmax(lc.x[:, 0] >= 0.5 * lc.x[:, 0].max())]
    assert r.cG_half == lc.P[np.argmax(lc.x[:, 1] >= 0.5 * lc.x[:, 1].max())]
    assert r.max_step == float(np.abs(np.diff(lc.x[:, 1])).max())
    assert r.drops.plateau_ratio == drops.plateau_ratio
    assert r.c1_half < r.cG_half  # uniform pooling first


@pytest.mark.parametrize(
    "curve",
    [
        _curve(np.arange(1, 8), np.ones(7), np.ones(7), np.ones(7), model="softmax"),
        _curve(np.arange(1, 4), np.ones(3), np.ones(3), np.ones(3)),
        SimpleNamespace(model="linear_v2", P=np.arange(1, 8), x=np.ones((7, 3)), bayes_test_loss=np.ones(7)),
    ],
)
def test_readouts_reject_bad_curves(curve):
    with pytest.raises(ValueError):
        lib.linear_curve_readouts(curve)


# ----------------------------------------------------------------------------------------------- softmax P*(L)
@pytest.fixture(scope="module")
def soft():
    return lib.softmax_scaling(8, np.array([16, 32, 64, 128, 256]), fit_from=32, top_from=64)


def test_softmax_scaling_equals_the_loop(soft):
    L = soft.L
    x = L * np.log(L) ** 2
    for m in ("map", "bayes"):
        tr = th.first_order_transition(8, L, method=m)
        np.testing.assert_array_equal(soft.scan[m].P_star, tr.P_star)
        ok = tr.first_order & (L >= 32)
        np.testing.assert_array_equal(soft.fitted[m], ok)
        assert soft.fits[m] == th.fit_power_law(tr.P_star[ok], LlnL=x[ok])
        top = ok & (L >= 64)
        assert soft.fits_top[m] == th.fit_power_law(tr.P_star[top], LlnL=x[top])
        assert soft.laws[m] == th.compare_scaling_laws(tr.P_star[ok], L[ok])
        assert soft.P_star(m, 32) == float(tr.P_star[1])


def test_softmax_law_ratio_and_summary(soft):
    for m, r in soft.laws.items():
        rival = min(v for k, v in r.items() if k != LAW)
        assert soft.law_ratio[m] == pytest.approx(rival / r[LAW])
        assert soft.best_law[m] == min(r, key=r.get)
    s = soft.summary()
    assert s["L_max"] == 256 and s["exp_map"] == soft.fits["map"]["LlnL"]
    assert s["ratio_bayes"] == soft.law_ratio["bayes"]
    assert 0.5 < s["exp_map"] < 1.2  # P* grows about as L ln²L
    assert "exponent of L ln^2 L" in soft.table() and LAW in soft.law_table()


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(V=8, L=np.array([32, 16])),
        dict(V=8, L=[16.0, 32.0]),
        dict(V=1, L=[16, 32]),
        dict(V=8, L=[16, 32], methods=("mle",)),
        dict(V=8, L=[16, 32], fit_from=64, top_from=32),
    ],
)
def test_softmax_scaling_rejects_bad_input(kwargs):
    with pytest.raises(ValueError):
        lib.softmax_scaling(**kwargs)


def test_P_star_rejects_a_size_off_the_grid(soft):
    with pytest.raises(ValueError):
        soft.P_star("map", 48)


# ------------------------------------------------------------------------------------------------ onset P1(V)
def test_onset_scaling_has_the_V2_law():
    V = np.array([4, 8, 16, 32])
    o = lib.onset_scaling(V, 256)
    assert o.exponents["linear_v2"] == pytest.approx(2.0, abs=0.1)
    closed = V**2 * (1 + (V - 1) / 256)  # P1 ≈ T V² (1 + (V-1)/L), T = 1
    np.testing.assert_allclose(o.onsets["linear_v2"], closed, rtol=0.1)
    for m, p in o.onsets.items():
        np.testing.assert_array_equal(p, np.asarray(th.onset_sample_size(m, V, 256, method="bayes")))
        assert o.exponents[m] == th.fit_power_law(p, V=V)["V"]
    assert "exponent of V" in o.table()


@pytest.mark.parametrize("args", [([8], 256), ([4, 8], 1), ([4, 8], 256, ("softmax",)), ([8, 4], 256)])
def test_onset_scaling_rejects_bad_input(args):
    V, *rest = args
    with pytest.raises(ValueError):
        lib.onset_scaling(np.array(V), *rest)


# ----------------------------------------------------------------------------------------- crossover Px(V, L)
@pytest.fixture(scope="module")
def cross():
    return lib.crossover_scaling([4, 8], [8, 16, 32], bulk_V=[4, 8], bulk_L=[16, 32])


def test_crossover_scaling_equals_the_calls(cross):
    VV, LL = np.meshgrid([4, 8], [8, 16, 32], indexing="ij")
    np.testing.assert_array_equal(cross.V, VV)
    np.testing.assert_array_equal(cross.separate, LL >= 2 * VV)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        np.testing.assert_array_equal(cross.saddle, th.crossover_sample_size(VV, LL))
        np.testing.assert_array_equal(cross.iid, th.crossover_sample_size(VV, LL, model="linear_v0"))
    sep = cross.separate
    assert cross.fit == th.fit_power_law(cross.saddle[sep], L=LL[sep], V=VV[sep])
    s = cross.summary()
    assert s["n_separate"] == int(sep.sum()) and s["L"] == cross.fit["L"] and s["bulk_L"] == cross.bulk_fit["L"]
    assert s["iid_separate"] == int(np.isfinite(cross.iid[sep]).sum())
    assert "fit over L >= 2V" in cross.table()


def test_no_crossover_where_L_does_not_exceed_V(cross):
    assert np.isnan(cross.saddle[cross.L <= cross.V]).all()  # the copy pattern grows from the onset itself
    assert np.isfinite(cross.saddle[cross.separate]).all()
    assert (cross.saddle[cross.separate] > cross.iid_onset[cross.separate]).all()  # the crossover follows an onset


@pytest.mark.parametrize("kwargs", [dict(separation=1.0), dict(bulk_L=[16.5]), dict(bulk_V=[])])
def test_crossover_scaling_rejects_bad_input(kwargs):
    args = dict(V=[4, 8], L=[16, 32], bulk_V=[4], bulk_L=[16]) | kwargs
    with pytest.raises(ValueError):
        lib.crossover_scaling(**args)


# ---------------------------------------------------------------------------------------------- sample efficiency
def test_sample_efficiency_is_the_ratio_of_the_two_sizes():
    L = np.array([8, 16, 32])
    eff = lib.sample_efficiency(8, L)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        np.testing.assert_array_equal(eff.linear, th.crossover_sample_size(8, L))
    np.testing.assert_array_equal(eff.softmax, th.first_order_transition(8, L, method="bayes").P_star)
    np.testing.assert_array_equal(eff.ratio, eff.linear / eff.softmax)
    assert eff.finite.tolist() == [False, True, True]  # L = V: no crossover of its own
    s = eff.summary()
    assert (s["L_small"], s["L_big"]) == (16, 32) and s["ratio_small"] == eff.ratio[1]
    assert s["ratio_big"] > 1  # softmax needs fewer samples


@pytest.mark.parametrize("args", [(8, np.array([4, 8])), (1, np.array([16])), (8, np.array([16, 16]))])
def test_sample_efficiency_rejects_bad_input(args):
    with pytest.raises(ValueError):
        lib.sample_efficiency(*args)
