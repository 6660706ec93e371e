"""lib.readouts.posterior and lib.measures.comparisons.peak_ratio: chapter 4's readouts equal the code they replace, and keep
their closed forms, controls and bad-input errors."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

import lib
from lib.measures.comparisons import growth_before, peak_ratio, spread_at_widest
from lib.readouts.posterior import (
    coverage_readouts,
    hysteresis,
    order_parameter_deviation,
    relative_deviation,
    sampled_efficiency,
    sampled_transition,
    scaling_diagnostics,
)
from lib.core.stats import Interval, group_bootstrap_interval
from lib.tasks import shift_matrix
from lib.train import CopySGLDConfig, SGLDConfig
from lib.train.copy_sgld import CopySGLDResult


def _samples(kind, target, random_chains, copy_chains, L=4, P=(10, 20, 40, 80)):
    """A CopySGLDResult with the given target attention ``(n_P, chains, samples)``; A is S-shaped, scaled by it."""
    sgld = SGLDConfig(step_size=1e-3, steps=10, burn_in=0.5, thin=1)
    cfg = CopySGLDConfig(kind, V=3, L=L, P_grid=P, random_chains=random_chains, copy_chains=copy_chains, sgld=sgld)
    target = np.asarray(target, dtype=float)
    n_P, n_C, n_S = target.shape
    rng = np.random.default_rng(0)
    A = target[..., None, None] * shift_matrix(L).numpy() + 0.01 * rng.standard_normal((n_P, n_C, n_S, L, L))
    return CopySGLDResult(
        config=cfg,
        P=np.array(P),
        chains=cfg.chain_labels,
        A=A,
        target=target,
        test_loss=np.zeros_like(target),
        rhat=np.linspace(1.0, 2.0, n_P),
        rhat_random=np.ones(n_P),
        ess=np.ones((n_P, n_C)),
        diverged=np.zeros((n_P, n_C), bool),
    )


def _branches(rng, n_S=5):
    """Softmax chains: two random-init near 0.03, two copy-init that hold 0.3 from the third size on."""
    rand = 0.03 + 0.005 * rng.standard_normal((4, 2, n_S))
    copy = np.stack([0.03, 0.05, 0.3, 0.35])[:, None, None] + 0.005 * rng.standard_normal((4, 2, n_S))
    rand[3] += 0.3  # the random chains find the copy branch at the largest size
    return np.concatenate([rand, copy], axis=1)


def test_hysteresis_equals_the_chapter_formula_and_its_control():
    rng = np.random.default_rng(1)
    soft = _samples("softmax", _branches(rng), 2, 2)
    lin_target = np.full((4, 3, 5), 0.2) + 0.001 * rng.standard_normal((4, 3, 5))
    lin = _samples("linear", lin_target, 2, 1)
    h = hysteresis(soft, lin)
    rand_s, copy_s = soft.branch_mean("target", False), soft.branch_mean("target", True)
    i = int(np.argmax(copy_s - rand_s))
    assert h["i"] == i == 2 and h["P"] == 40
    assert h["rand"] == rand_s[i] and h["copy"] == copy_s[i]
    assert np.array_equal(h["random_branch"], rand_s) and np.array_equal(h["copy_branch"], copy_s)
    assert h["rhat"] == soft.rhat[i]
    chain_rand, chain_copy = soft.target[:, :2].mean(2), soft.target[:, 2:].mean(2)
    want = group_bootstrap_interval(lambda a, b: (chain_copy[:, b].mean(1) - chain_rand[:, a].mean(1)).max(), (2, 2))
    assert h["interval"] == want
    assert h["interval"].value == pytest.approx((copy_s - rand_s).max())
    assert abs(h["gap_lin"]) < 0.01  # one minimum: the branches agree
    with pytest.raises(ValueError):
        hysteresis(lin, soft)


def test_sampled_transition_reads_the_branches_and_its_bootstrap():
    soft = _samples("softmax", _branches(np.random.default_rng(2)), 2, 2)
    t = sampled_transition(soft, P_ref=20.0)
    assert (t["lo"], t["hi"]) == (40.0, 80.0)
    assert t["interval"].value == pytest.approx(2.0) and t["interval"].lo == t["interval"].hi == pytest.approx(2.0)
    with pytest.raises(ValueError):
        sampled_transition(soft, P_ref=0.0)
    never = sampled_transition(soft, P_ref=20.0, threshold=0.9)  # no branch gets there: infinitely far, not an error
    assert never["lo"] == never["hi"] == np.inf and never["interval"].value == np.inf


def test_sampled_efficiency_closed_form_interval_and_control():
    iv = Interval(2.0, 1.5, 2.5, 0.9, 4)  # the softmax transition lo / P_ref with its bootstrap, P_ref = 100
    e = sampled_efficiency(np.array([800.0, 1000.0, 1200.0, 1000.0]), dict(lo=200.0, interval=iv), 100.0)
    assert e["value"] == pytest.approx(1000.0 / 200.0) and (e["linear"], e["softmax"]) == (1000.0, 200.0)
    assert e["control"] == pytest.approx(1200.0 / 800.0)  # latest over earliest linear crossover
    lo, hi = e["interval"].lo, e["interval"].hi  # the median's bootstrap (800..1200) over the softmax ends (150..250)
    assert 800.0 / 250.0 <= lo <= e["value"] <= hi <= 1200.0 / 150.0
    same = sampled_efficiency(np.full(4, 1000.0), dict(lo=200.0, interval=iv), 100.0)
    assert same["control"] == 1.0 and same["interval"].lo == pytest.approx(1000.0 / 250.0)
    nan = sampled_efficiency(np.array([1000.0, np.nan, 2000.0]), dict(lo=200.0, interval=iv), 100.0)
    assert nan["control"] == 2.0  # a draw without a crossover is left out
    for bad in (np.array([1000.0, np.nan]), np.ones((2, 2))):
        with pytest.raises(ValueError, match="crossovers"):
            sampled_efficiency(bad, dict(lo=200.0, interval=iv), 100.0)
    with pytest.raises(ValueError, match="softmax transition"):
        sampled_efficiency(np.ones(3), dict(lo=np.inf, interval=iv), 100.0)


def test_relative_deviation_closed_form_and_bootstrap_use():
    chains = np.array([[0.5, 0.7], [1.0, 1.2], [2.0, 2.0]])  # (n_P, chains)
    ref = np.array([0.5, 1.0, 2.5])
    where = np.array([False, True, True])
    assert relative_deviation(chains, ref, where) == pytest.approx(max(0.1 / 1.0, 0.5 / 2.5))
    assert relative_deviation(chains[:, [0, 0]], ref, where) == pytest.approx(0.2)  # a resample of chain 0 twice
    samples = np.random.default_rng(3).random((3, 2, 7))  # (n_P, chains, samples): the chapter's former formula
    old = (np.abs(samples.mean(2)[where].mean(1) - ref[where]) / ref[where]).max()
    assert relative_deviation(samples.mean(2), ref, where) == pytest.approx(old, rel=1e-15)
    for bad in ((chains[:, 0], ref, where), (chains, ref, np.zeros(3, bool)), (chains, -ref, where)):
        with pytest.raises(ValueError):
            relative_deviation(*bad)


def test_peak_ratio():
    v = np.array([1.0, 1.0, 1.0, 4.0, 1.0, 1.0, 2.0])
    assert peak_ratio(v, 3) == 4.0
    assert peak_ratio(np.ones(5), 2) == 1.0
    assert peak_ratio(v, -1) == v[-1] / np.median(v[-4:-1])  # the last point: its left neighbours only
    near = 1
    old = v[near] / np.median(np.r_[v[max(near - 3, 0) : near], v[near + 1 : near + 4]])
    assert peak_ratio(v, near) == old
    for bad in ((v, 7), (v, 1.0), (v[:1], 0), (v, 2, 0)):
        with pytest.raises(ValueError):
            peak_ratio(*bad)


def test_growth_before():
    P, v = np.array([100.0, 200, 400, 800, 1600]), np.array([1.0, 1.5, 3.0, 9.0, 0.5])
    assert growth_before(P, v, 800) == (3.0, 100.0, 400.0)  # the sizes below the jump only
    assert growth_before(P, v, np.inf) == (0.5, 100.0, 1600.0)  # no jump on the grid: the whole curve
    assert all(np.isnan(growth_before(P, v, 200)))  # one size before the jump: nothing to compare
    for bad in ((P, v[:-1], 800), (P[::-1], v, 800)):
        with pytest.raises(ValueError):
            growth_before(*bad)


def test_spread_at_widest():
    from lib.core.stats import bootstrap_interval, coefficient_of_variation

    e = np.array([[10.0, 11, 12, np.inf], [10, 40, 90, 20], [np.inf, np.inf, 5, np.inf]])
    cv = np.array([0.08, 0.9, np.nan])  # the last size: one seed emerged, no coefficient
    expected = bootstrap_interval(e[1], coefficient_of_variation)
    assert spread_at_widest(e, cv) == expected
    assert spread_at_widest(e, np.full(3, np.nan)) is None  # nothing emerged twice anywhere (a cut smoke run)
    with pytest.raises(ValueError):
        spread_at_widest(e, cv[:2])


def _fits(kind, L, A, P):
    return SimpleNamespace(config=SimpleNamespace(kind=kind, V=8, L=L), P=np.asarray(P), filtered=lambda name: A)


def test_coverage_readouts_plane_matrices_and_control():
    L, P = 32, (100, 200, 400, 800)
    S, J = shift_matrix(L).numpy(), np.ones((L, L)) / L
    in_plane = np.stack([0.5 * S + 0.5 * J] * len(P))  # (n_P, L, L): coverage 1
    adam_soft = _fits("softmax", L, in_plane, P)
    adam_lin = _fits("linear", 16, np.stack([shift_matrix(16).numpy()] * 3), (5, 50, 500))
    target = np.array([0.03, 0.04, 0.3, 0.35])[:, None, None] * np.ones((4, 4, 3))
    soft = _samples("softmax", target, 2, 2, L=L, P=P)
    lin = _samples("linear", np.full((3, 3, 3), 0.5), 2, 1, L=16, P=(5, 50, 500))
    cov = coverage_readouts(adam_soft, adam_lin, soft, lin, P_lo=400, P_hi=800, seed=0)
    assert np.allclose(cov.adam_soft, 1.0) and np.allclose(cov.adam_lin, 1.0)
    assert cov.summary["adam_min"] == pytest.approx(1.0)
    assert 0 < cov.summary["random"] < 0.05  # random patterns: about 1 / (L^2 - 1) each
    assert cov.summary["sample_below"] == cov.sample_soft[:2].max() and cov.summary["mean_deep"] == cov.mean_soft[3]
    assert cov.summary["sample_max"] >= cov.summary["sample_min"]
    scores = torch.randn(64, L, L, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert cov.summary["random"] == float(lib.theory.coverage(torch.softmax(scores, -1)).max())  # the former cell
    assert coverage_readouts(adam_soft, adam_lin, soft, lin, P_lo=400, P_hi=800, seed=0).summary == cov.summary
    with pytest.raises(ValueError):
        coverage_readouts(adam_soft, adam_lin, soft, lin, P_lo=800, P_hi=400, seed=0)
    with pytest.raises(ValueError):
        coverage_readouts(adam_lin, adam_soft, soft, lin, P_lo=400, P_hi=800, seed=0)


def test_scaling_diagnostics_equal_the_chapter_formulas():
    scaling = lib.load_linear_scaling(lib.LinearScalingConfig())  # committed
    d = scaling_diagnostics(scaling)
    crossings = lib.scaling_points(scaling, "crossover")
    assert d["rhat_max"] == max(float(np.nanmax(r)) for r in scaling.rhat.values())
    assert d["rhat_used"] == max(
        float(np.nanmax(scaling.rhat[c][:, scaling.P[c] <= 2 * np.nanmax(crossings[c])])) for c in crossings
    )
    assert d["rhat_used"] <= d["rhat_max"]
    assert d["n_diverged"] == int(sum(x.sum() for x in scaling.diverged.values())) <= d["n_chains"]
    assert d["scaling_cpu"] == pytest.approx(sum(scaling.seconds.values()) / 60)
    assert (d["where_diverged"] == "none") == (d["n_diverged"] == 0)


def test_order_parameter_deviation_takes_the_copy_coefficient_on_its_own_scale():
    where = np.array([False, True, True])
    c1_ref, cG_ref = np.array([0.5, 1.0, 2.0]), np.array([0.0, 0.02, 0.2])
    c1 = np.stack([c1_ref * 1.05, c1_ref * 1.05], axis=1)  # 5 % off everywhere
    cG = np.stack([cG_ref + 0.01, cG_ref + 0.01], axis=1)  # 0.01 off: 50 % of c_G at 0.02, 5 % of its scale 0.2
    assert relative_deviation(cG, cG_ref, where) == pytest.approx(0.5)  # the ill-posed reading near c_G = 0
    assert order_parameter_deviation(c1, c1_ref, cG, cG_ref, where) == pytest.approx(0.05)
    far = np.stack([cG_ref + 0.06, cG_ref + 0.06], axis=1)  # 0.06 off: 30 % of the scale, now the larger of the two
    assert order_parameter_deviation(c1, c1_ref, far, cG_ref, where) == pytest.approx(0.3)
    on = np.stack([c1_ref, c1_ref], axis=1), np.stack([cG_ref, cG_ref], axis=1)
    assert order_parameter_deviation(on[0], c1_ref, on[1], cG_ref, where) == 0.0  # samples on the theory
    assert order_parameter_deviation(c1[:, [0]], c1_ref, cG[:, [1]], cG_ref, where) == pytest.approx(0.05)  # resample
    for bad in (
        (c1, c1_ref, cG[:, 0], cG_ref, where),
        (c1, c1_ref, cG, cG_ref, np.zeros(3, bool)),
        (c1, c1_ref, cG, -cG_ref, where),
    ):
        with pytest.raises(ValueError):
            order_parameter_deviation(*bad)
