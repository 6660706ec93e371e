"""lib.readouts.derivation_checks: chapter 2's checks run over their cases in one call equal the loops they replace."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import lib
from lib import theory
from lib.readouts.derivation_checks import coverage_checks, marginal_checks

F64 = torch.float64


@pytest.fixture(scope="module")
def mc_setup():
    L, V = 3, 2
    counts = lib.pair_counts(lib.sample_tokens(lib.CopyTask(V=V, L=L, P=4, seed=0)), V)
    S = lib.shift_matrix(L)
    cases = {
        "softmax, copy": ("softmax", 2 * math.log(L) * S, None),
        "linear, uniform": ("linear_v2", torch.zeros(L, L, dtype=F64), torch.tensor(2.0, dtype=F64)),
    }
    return cases, counts, marginal_checks(cases, counts, n_samples=2**12, n_importance=256, seed=5)


def test_marginal_checks_equal_the_loop(mc_setup):
    cases, counts, mc = mc_setup
    for k, (label, (model, G, beta)) in enumerate(cases.items()):
        ref = theory.w_marginal_mc(model, G, counts, beta=beta, n_samples=2**12, seed=5 + k)
        ref_is = theory.w_marginal_mc(model, G, counts, beta=beta, n_samples=256, sampler="posterior", seed=5 + k)
        np.testing.assert_array_equal(mc.prior_mc[label].log_mean, ref.log_mean)
        np.testing.assert_array_equal(mc.posterior_is[label].log_mean, ref_is.log_mean)
    assert list(mc.prior_mc) == list(cases)


def test_marginal_summary_is_the_extremes_over_cases(mc_setup):
    _, _, mc = mc_setup
    s = mc.summary()
    assert s["z"] == max(abs(r.z) for r in mc.prior_mc.values())
    assert s["zmap"] == min(abs(r.z_map) for r in mc.prior_mc.values())
    # the closed form is exact: importance weights constant, posterior mean = ridge readout, Occam term positive
    assert s["is_spread"] < 1e-9 and s["is_err"] < 1e-9 and s["ridge"] < 1e-9 and s["grad"] < 1e-9
    assert s["occam"] > 0 and s["zmap"] > s["z"]
    table = mc.table().splitlines()
    assert len(table) == 1 + len(mc.prior_mc) and table[1].startswith("softmax, copy")


def test_marginal_checks_reject_bad_cases(mc_setup):
    _, counts, _ = mc_setup
    with pytest.raises(ValueError):
        marginal_checks({}, counts)
    with pytest.raises(ValueError):
        marginal_checks({"x": ("softmax", torch.zeros(3, 3, dtype=F64))}, counts)


@pytest.fixture(scope="module")
def cov_setup():
    V, L = 3, 4
    grids = {"softmax": (50, 400, 3000), "linear_v2": (50, 400, 3000)}
    return V, L, grids, coverage_checks(V, L, grids, below_model="linear_v2", below_P=5.0, n_random=2, seed=3)


def test_coverage_checks_equal_the_loop(cov_setup):
    V, L, grids, cov = cov_setup
    for model, grid in grids.items():
        ref = theory.minimise_full_action(model, V, L, grid, n_random=2, seed=3)
        counts = lib.tasks.nested_pair_counts(lib.sample_tokens(lib.CopyTask(V=V, L=L, P=max(grid), seed=3)), V, grid)
        ref_fin = theory.minimise_full_action(model, V, L, grid, counts=counts, n_random=2, seed=0)
        np.testing.assert_array_equal(cov.large_p[model].coverage, ref.coverage)
        np.testing.assert_array_equal(cov.finite[model].coverage, ref_fin.coverage)


def test_coverage_summary(cov_setup):
    _, _, grids, cov = cov_setup
    s = cov.summary(P_meta=500)
    assert s["n"] == sum(r.coverage.size for r in cov.large_p.values())
    assert s["off_max"] == pytest.approx(1 - s["cov_min"]) and 0 <= s["cov_min"] <= 1
    assert s["P_meta"] == 400 and isinstance(s["P_meta"], int)  # the grid's size nearest P_meta, as an int
    assert s["fin_P0"] == 50 and s["fin_Pmax"] == 3000
    fin = cov.finite_coverage()
    assert s["fin_s_lo"] == fin["softmax"][0] and s["fin_l_hi"] == fin["linear_v2"][-1]
    # fin_90: from there on every head's coverage stays >= 0.9
    P90 = s["fin_90"]
    assert all(np.all(fin[m][f.P >= P90] >= 0.9) for m, f in cov.finite.items())
    assert cov.stays_above(0.0) == 50
    assert len(cov.table().splitlines()) == sum(2 + len(g) for g in grids.values())


def test_coverage_checks_reject_bad_grids():
    with pytest.raises(ValueError):
        coverage_checks(3, 4, {"linear_v2": (10, 20)}, below_model="linear_v2", below_P=5.0)
