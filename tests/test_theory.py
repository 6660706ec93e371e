"""lib.theory: exact posterior, large-P and reduced actions, solvers, transitions (paper A, DERIVED theory)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

from lib.models import attention
from lib.tasks import CopyTask, nested_pair_counts, pair_counts, population_counts, sample_tokens, shift_matrix
from lib.theory import (
    GridSpec,
    critical_sample_size,
    crossover_sample_size,
    exact_test_loss,
    first_order_transition,
    fit_power_law,
    large_p_action,
    linear_action,
    minima,
    neg_log_posterior,
    onset_sample_size,
    order_parameter_attention,
    order_parameter_loss,
    order_parameters_vs_P,
    posterior_terms,
    readout_posterior,
    reduced_action,
    softmax_action,
    susceptibility,
)
from lib.train import CopyPrior, copy_objective, copy_sq_error, optimal_readout

f64 = torch.float64
PRIOR = CopyPrior(T=0.7, sigma_G2=1.3, sigma_W2=0.8, sigma_beta2=2.0)  # non-default, so no factor can hide


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _beta(model, n=()):
    return torch.randn(n, generator=_gen(5), dtype=f64) if model == "linear_v2" else None


# ------------------------------------------------------------------------------------------ exact posterior
@pytest.mark.parametrize("model", ["softmax", "linear_v2"])
def test_w_marginal_matches_monte_carlo(model):
    """exp(-data - Occam) = E_{W ~ prior} exp(-E(G, W)); W-posterior mean and covariance (importance sampling)."""
    L, V, P, N = 3, 2, 4, 400_000
    prior = CopyPrior(T=1.0, sigma_G2=1.0, sigma_W2=1.5)
    counts = pair_counts(sample_tokens(CopyTask(V=V, L=L, P=P, seed=11)), V)
    G = torch.randn(L, L, generator=_gen(1), dtype=f64)
    beta = _beta(model)
    A = attention("softmax" if model == "softmax" else "linear", G, beta)
    W = math.sqrt(prior.sigma_W2) * torch.randn(N, V, V, generator=_gen(2), dtype=f64)  # prior samples
    E = copy_sq_error(A.expand(N, L, L), W, counts, float(P)) / (2 * prior.T * L)  # (N,)
    w = torch.exp(-E)
    terms = posterior_terms(model, G, counts, beta=beta, prior=prior)
    se = float(w.std() / w.mean()) / math.sqrt(N)  # relative standard error of the estimate
    assert abs(float(torch.log(w.mean())) + float(terms.data + terms.occam)) < 5 * se + 1e-4
    mean, cov = readout_posterior(A, counts, prior=prior)
    wn = (w / w.sum())[:, None, None]
    mc_mean = (wn * W).sum(0)
    dev = W - mc_mean
    mc_cov = torch.einsum("n,nac,nbc->ab", wn[:, 0, 0], dev, dev) / V  # columns are i.i.d. given G
    assert torch.allclose(mc_mean, mean, atol=0.02)
    assert torch.allclose(mc_cov, cov, atol=0.03)


@pytest.mark.parametrize("model", ["softmax", "linear_v0", "linear_v2"])
@pytest.mark.parametrize("method", ["bayes", "map"])
def test_large_p_action_is_exact_posterior_with_expected_counts(model, method):
    L, V, P = 6, 3, 137.0
    G = torch.randn(4, L, L, generator=_gen(0), dtype=f64)
    exact = neg_log_posterior(model, G, P * population_counts(L, V), beta=_beta(model, 4), prior=PRIOR, method=method)
    large = large_p_action(model, G, P, V, beta=_beta(model, 4), prior=PRIOR, method=method)
    assert torch.allclose(exact, large, rtol=1e-12, atol=1e-10)


def test_exact_action_per_sample_approaches_large_p_action():
    """Exact vs self-averaged likelihood part: relative difference shrinks ~ 1/sqrt(P) (RMS over 8 data sets)."""
    L, V = 6, 3
    grid = (100, 1_000, 10_000, 100_000)
    counts = torch.stack(
        [nested_pair_counts(sample_tokens(CopyTask(V=V, L=L, P=grid[-1], seed=s)), V, grid) for s in range(8)]
    )  # (8, 4, L, L, V, V)
    G = 0.7 * torch.randn(L, L, generator=_gen(3), dtype=f64) + 2.0 * shift_matrix(L)
    P = torch.tensor(grid, dtype=f64)
    for method in ("bayes", "map"):
        exact = neg_log_posterior("softmax", G.expand(8, 4, L, L), counts, prior=PRIOR, method=method)  # (8, 4)
        large = large_p_action("softmax", G.expand(4, L, L), P, V, prior=PRIOR, method=method)  # (4,)
        likelihood = large - G.pow(2).sum() / (2 * PRIOR.sigma_G2)  # data (+ Occam): grows ~ P
        rms = ((exact - large) / likelihood).pow(2).mean(0).sqrt().numpy()
        assert np.all(np.diff(rms) < 0) and rms[0] / rms[-1] > 10 and rms[-1] < 3e-3, rms


@pytest.mark.parametrize("kind,model", [("softmax", "softmax"), ("linear", "linear_v2")])
def test_map_profile_is_min_over_readout(kind, model):
    L, V, P = 5, 3, 40
    counts = pair_counts(sample_tokens(CopyTask(V=V, L=L, P=P, seed=6)), V)
    G = torch.randn(L, L, generator=_gen(7), dtype=f64)
    beta = _beta(model)
    A = attention(kind, G, beta)
    params = {"G": G, "W": optimal_readout(A, counts, ridge=PRIOR.T * L / PRIOR.sigma_W2)}
    if beta is not None:
        params["beta"] = beta
    U_opt = copy_objective(kind, params, counts, torch.tensor(float(P), dtype=f64), PRIOR)
    profile = neg_log_posterior(model, G, counts, beta=beta, prior=PRIOR, method="map")
    assert torch.allclose(U_opt, profile, rtol=1e-12)
    params["W"] = params["W"] + 0.05 * torch.randn(V, V, generator=_gen(8), dtype=f64)
    assert copy_objective(kind, params, counts, torch.tensor(float(P), dtype=f64), PRIOR) > profile
    assert torch.allclose(
        readout_posterior(A, counts, prior=PRIOR)[0], optimal_readout(A, counts, PRIOR.T * L / PRIOR.sigma_W2)
    )


def test_gradients_match_finite_differences():
    L, V = 4, 3
    counts = pair_counts(sample_tokens(CopyTask(V=V, L=L, P=9, seed=1)), V)
    G = torch.randn(L, L, generator=_gen(9), dtype=f64, requires_grad=True)
    beta = torch.tensor(0.3, dtype=f64, requires_grad=True)
    for model in ("softmax", "linear_v0"):
        assert torch.autograd.gradcheck(lambda g: neg_log_posterior(model, g, counts, prior=PRIOR), (G,))
    assert torch.autograd.gradcheck(
        lambda g, b: neg_log_posterior("linear_v2", g, counts, beta=b, prior=PRIOR), (G, beta)
    )
    d = torch.tensor([0.3, 2.5], dtype=f64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda d: softmax_action(d, 300.0, 8, 32, prior=PRIOR), (d,))
    x = torch.tensor([[0.2, 0.05, 0.9]], dtype=f64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: reduced_action("linear_v2_bulk", x, 500.0, 8, 16, prior=PRIOR), (x,))


def test_softmax_is_invariant_to_row_constant_shifts():
    L, V = 6, 3
    counts = pair_counts(sample_tokens(CopyTask(V=V, L=L, P=30, seed=2)), V)
    G = torch.randn(L, L, generator=_gen(10), dtype=f64)
    G2 = G + torch.randn(L, 1, generator=_gen(11), dtype=f64) + 0.7  # row terms s_i and a global beta
    assert torch.allclose(attention("softmax", G), attention("softmax", G2), atol=1e-14)
    t1, t2 = posterior_terms("softmax", G, counts), posterior_terms("softmax", G2, counts)
    assert torch.allclose(t1.data + t1.occam, t2.data + t2.occam, rtol=1e-12)
    assert not torch.allclose(t1.prior, t2.prior)  # only the prior sees the shift: the optimum has zero-mean rows
    a = large_p_action("softmax", G, 100.0, V) - G.pow(2).sum() / 2
    b = large_p_action("softmax", G2, 100.0, V) - G2.pow(2).sum() / 2
    assert torch.allclose(a, b, rtol=1e-12)


def test_reduced_actions_equal_the_large_p_action_on_the_symmetric_subspace():
    L, V, P = 16, 8, 300.0
    S, J = shift_matrix(L), torch.ones(L, L, dtype=f64)
    d = torch.linspace(0, 5, 6, dtype=f64)
    Gs = (d * (L - 1) / L)[:, None, None] * S - (d / L)[:, None, None] * (J - S)
    assert torch.allclose(large_p_action("softmax", Gs, P, V, prior=PRIOR), softmax_action(d, P, V, L, prior=PRIOR))
    c1, cG = torch.tensor([0.3, -0.1], dtype=f64), torch.tensor([0.05, 0.2], dtype=f64)
    A = cG[:, None, None] * S + (c1 / L)[:, None, None] * J
    v0 = linear_action(c1, cG, P, V, L, model="linear_v0", prior=PRIOR)
    assert torch.allclose(large_p_action("linear_v0", A, P, V, prior=PRIOR), v0)
    # V2: the exactly profiled split of the row sum between G's J part and beta
    u = c1 + cG
    h = (u / PRIOR.sigma_beta2) / (L**2 / PRIOR.sigma_G2 + 1 / PRIOR.sigma_beta2)
    G = (L * cG)[:, None, None] * S + (h - cG)[:, None, None] * J
    v2 = large_p_action("linear_v2", G, P, V, beta=c1 - (h - cG), prior=PRIOR)
    assert torch.allclose(v2, linear_action(c1, cG, P, V, L, prior=PRIOR))


# ------------------------------------------------------------------------------------------ limits and symmetry
def test_limits():
    # P -> 0: the trivial minimum
    for model in ("softmax", "linear_v0", "linear_v2"):
        m = minima(model, 8, 16, 1e-3)
        assert int(m.n) == 1 and np.abs(m.global_x).max() < 1e-3
    # A = S: no data term at eps -> 0 (large P) and at lambda -> 0 (exact, sigma_W2 -> inf)
    L, V = 8, 4
    S = shift_matrix(L)
    data = large_p_action("linear_v0", S, 1e12, V, method="map") - S.pow(2).sum() / 2
    assert 0 < float(data) / 1e12 < 1e-11  # per sample (the ridge penalty lambda ||W||^2 stays O(V) in total)
    counts = pair_counts(sample_tokens(CopyTask(V=V, L=L, P=50, seed=0)), V)
    t = posterior_terms("linear_v0", S, counts, prior=CopyPrior(sigma_W2=1e12))
    assert float(t.data) < 1e-9
    x = torch.tensor([[0.0, 1.0]], dtype=f64)  # c1 = 0, cG = 1: A = S
    assert float(order_parameter_loss("linear_v0", x, 1e12, V, L).train) < 1e-9


def test_linear_actions_are_even():
    c = torch.randn(5, 2, generator=_gen(12), dtype=f64) * 0.3
    for model in ("linear_v0", "linear_v2"):
        assert torch.allclose(reduced_action(model, c, 700.0, 8, 16), reduced_action(model, -c, 700.0, 8, 16))
    xb = torch.cat([c, torch.rand(5, 1, generator=_gen(13), dtype=f64)], -1)
    xm = torch.cat([-c, xb[:, 2:]], -1)
    assert torch.allclose(
        reduced_action("linear_v2_bulk", xb, 700.0, 8, 16), reduced_action("linear_v2_bulk", xm, 700.0, 8, 16)
    )
    L, V = 5, 3
    counts = pair_counts(sample_tokens(CopyTask(V=V, L=L, P=20, seed=3)), V)
    G, b = torch.randn(L, L, generator=_gen(14), dtype=f64), torch.tensor(0.4, dtype=f64)
    assert torch.allclose(
        neg_log_posterior("linear_v2", G, counts, beta=b), neg_log_posterior("linear_v2", -G, counts, beta=-b)
    )
    W = torch.randn(V, V, generator=_gen(15), dtype=f64)
    u = [
        copy_objective("linear", {"G": s * G, "W": s * W, "beta": s * b}, counts, torch.tensor(20.0, dtype=f64), PRIOR)
        for s in (1, -1)
    ]
    assert torch.allclose(*u)


# ------------------------------------------------------------------------------------------ closed forms vs solver
def test_linear_onsets_closed_form_vs_numeric_hessian():
    V = np.array([4, 8, 16, 32])
    for model in ("linear_v0", "linear_v2"):
        for method in ("bayes", "map"):
            a = onset_sample_size(model, V, 32, method=method)
            b = onset_sample_size(model, V, 32, method=method, numeric=True)
            assert np.allclose(a, b, rtol=1e-8)


def test_v0_onset_scales_as_v_squared():
    """Bayes onset of V0: the exact threshold is about T V^2 (+ O(1/V)); paperA.md's T V^3/(V-1) holds only for large V."""
    V = np.array([4, 8, 16, 32])
    for T in (1.0, 2.0):
        P = onset_sample_size("linear_v0", V, 32, prior=CopyPrior(T=T))
        assert np.all(np.abs(P / (T * V**2) - 1) < [0.15, 0.07, 0.01, 0.002])
        assert abs(P[-1] / (T * 32**3 / 31) - 1) < 0.04  # paperA.md's formula, within a few % only at V = 32


def test_v2_onset_matches_its_closed_form_and_is_second_order():
    V = np.array([8, 8, 8, 16, 16, 32])
    L = np.array([16, 32, 64, 32, 64, 64])
    P1 = onset_sample_size("linear_v2", V, L)
    assert np.all(np.abs(P1 / (V**2 * (1 + (V - 1) / L)) - 1) < 0.03)
    # continuous: c1^2 grows linearly from P1 (extrapolates to zero at P1), and c = 0 just below
    P1 = float(P1[1])
    ops = order_parameters_vs_P("linear_v2", 8, 32, P1 * np.array([0.99, 1.01, 1.02, 1.03]))
    assert np.abs(ops.x[0]).max() < 1e-6 and np.all(ops.n_minima == 1)
    c1sq = ops.x[1:, 0] ** 2
    slope, icpt = np.polyfit(ops.P[1:], c1sq, 1)
    assert abs(-icpt / slope / P1 - 1) < 0.002


def test_softmax_reference_numbers():
    tr = first_order_transition(8, 32, method="map")
    assert bool(tr.first_order) and abs(float(tr.P_star) / 330 - 1) < 0.02
    assert float(tr.target_low) < 0.05 and float(tr.target_high) > 0.19  # jump 0.04 -> 0.20
    bayes = critical_sample_size("softmax", 8, 32)
    assert abs(bayes / 377 - 1) < 0.03
    ops = order_parameters_vs_P("softmax", 8, 32, [340.0, 400.0, 600.0, 1000.0], method="map")
    assert np.allclose(ops.target, [0.212, 0.248, 0.306, 0.364], atol=1.5e-3)


def test_critical_points_scale_exactly_with_temperature():
    """The action depends on P only through P/T (eps = VTL/(sigma_W2 P)), so every critical P is proportional to T."""
    for kind in ("softmax", "linear"):
        for method in ("bayes", "map"):
            a = critical_sample_size(kind, 8, 32, method=method)
            b = critical_sample_size(kind, 8, 32, T=2.5, method=method)
            assert isinstance(a, float) and abs(b / (2.5 * a) - 1) < 1e-6


def test_two_minima_only_near_the_softmax_transition():
    P_star = critical_sample_size("softmax", 8, 32, method="map")
    m = minima("softmax", 8, 32, P_star * np.array([1 / 3, 1.0, 10.0]), method="map")
    assert m.n.tolist() == [1, 2, 1]
    assert np.isclose(m.action[1, 0], m.action[1, 1], rtol=1e-9)  # equal action at P*


@pytest.mark.parametrize("method", ["map", "bayes"])
def test_reduced_softmax_minimiser_equals_full_finite_p_minimiser(method):
    """Minimise the exact finite-P objective over the full 8x8 G (L-BFGS) and compare with the reduced d*."""
    L, V, P = 8, 4, 3000
    d = float(minima("softmax", V, L, float(P), method=method).global_x[0])
    p_red = 1 / (1 + (L - 1) * math.exp(-d))
    sampled = pair_counts(sample_tokens(CopyTask(V=V, L=L, P=P, seed=3)), V)
    for counts, tol in ((P * population_counts(L, V), 1e-6), (sampled, 2e-3)):
        G0 = order_parameter_attention("softmax", torch.tensor([d]), L)[0].log()
        G = (G0 - G0.mean(-1, keepdim=True) + 0.3 * torch.randn(L, L, generator=_gen(0), dtype=f64)).requires_grad_(
            True
        )
        opt = torch.optim.LBFGS(
            [G], max_iter=500, tolerance_grad=1e-12, tolerance_change=1e-15, line_search_fn="strong_wolfe"
        )

        def closure():
            opt.zero_grad()
            u = neg_log_posterior("softmax", G, counts, method=method)
            u.backward()
            return u

        opt.step(closure)
        p_full = float((torch.softmax(G.detach(), -1) * shift_matrix(L)).sum() / L)
        assert abs(p_full - p_red) < tol, (p_full, p_red)


def test_susceptibility_grows_toward_the_linear_onset():
    P1 = onset_sample_size("linear_v2", 8, 32)
    chi = susceptibility("linear_v2", 8, 32, P1 * np.array([0.5, 0.8, 0.95, 0.99]))
    assert np.all(np.diff(chi) > 0) and chi[-1] > 10 * chi[0]
    chi_above = susceptibility("linear_v2", 8, 32, P1 * np.array([1.01, 1.05, 1.3]))
    assert np.all(np.diff(chi_above) < 0)  # and decays again above it (c1 ~ sqrt(P - P1))


def test_losses_match_the_population_loss():
    L, V, P = 16, 8, 500.0
    for model, x in (
        ("softmax", [[0.5], [2.5]]),
        ("linear_v2", [[0.2, 0.01], [0.1, 0.1]]),
        ("linear_v0", [[0.1, 0.3]]),
    ):
        x = torch.tensor(x, dtype=f64)
        closed = order_parameter_loss(model, x, P, V, L).train
        assert torch.allclose(closed, exact_test_loss(model, x, P, V, L), rtol=1e-10)


def test_crossover_is_a_smooth_maximum_of_the_copy_slope():
    P1 = onset_sample_size("linear_v2", 8, 32)
    X = crossover_sample_size(8, 32)
    assert 3 * P1 < X < 100 * P1
    ops = order_parameters_vs_P("linear_v2", 8, 32, X * np.array([0.8, 0.95, 1.0, 1.05, 1.25]))
    slope = ops.dx_dlnP[:, 1]
    assert slope[2] >= slope.max() - 1e-3 * slope[2] and np.all(ops.n_minima >= 1)
    assert crossover_sample_size(8, 32, criterion="half") > X  # the loss midpoint comes after the steepest growth
    with pytest.warns(RuntimeWarning, match="no separate crossover"):
        assert math.isnan(crossover_sample_size(16, 8))


def test_spike_bulk_keeps_the_onset_and_moves_the_crossover_to_about_L_squared():
    m = minima("linear_v2_bulk", 8, 16, 1e-4)  # P -> 0: the prior's bulk b0 = D sigma_G^2 / L^2, D = L^2 - 2
    assert np.allclose(m.global_x[:2], 0, atol=1e-8) and abs(m.global_x[2] / ((16**2 - 2) / 16**2) - 1) < 1e-6
    L = np.array([16, 32])
    P1 = onset_sample_size("linear_v2_bulk", 8, L)
    assert np.all(np.abs(P1 / onset_sample_size("linear_v2", 8, L) - 1) < 0.02)
    bulk = crossover_sample_size(8, L, bulk=True, n_grid=24)
    saddle = crossover_sample_size(8, L, n_grid=24)
    assert 1.75 < np.log2(bulk[1] / bulk[0]) < 2.1  # ~ L^2 with the bulk entropy
    assert 1.3 < np.log2(saddle[1] / saddle[0]) < 1.6  # ~ L^1.5 at the saddle point over G
    assert np.all(bulk > saddle)


def test_fit_power_law_recovers_exponents():
    L = np.array([8.0, 16, 32, 64] * 2)
    V = np.repeat([4.0, 16.0], 4)
    fit = fit_power_law(3.0 * L**1.5 * V**0.5, L=L, V=V)
    assert np.isclose(fit["L"], 1.5) and np.isclose(fit["V"], 0.5) and np.isclose(fit["prefactor"], 3.0)


# ------------------------------------------------------------------------------------------ bad input
BAD = [
    (lambda: critical_sample_size("linear", 1, 8), ValueError, "V"),
    (lambda: critical_sample_size("linear", 8, 1), ValueError, "L"),
    (lambda: critical_sample_size("linear", 2.5, 8), ValueError, "V"),
    (lambda: critical_sample_size("linear", 8, 16.0), ValueError, "L"),
    (lambda: critical_sample_size("linear", 8, 16, T=0.0), ValueError, "T"),
    (lambda: critical_sample_size("linear", 8, 16, sigma_G2=-1.0), ValueError, "sigma_G2"),
    (lambda: critical_sample_size("softmax", 8, 16, sigma_W2=0.0), ValueError, "sigma_W2"),
    (lambda: critical_sample_size("relu", 8, 16), ValueError, "kind"),
    (lambda: critical_sample_size(3, 8, 16), TypeError, "kind"),
    (lambda: critical_sample_size("linear", 8, 16, method="mle"), ValueError, "method"),
    (lambda: crossover_sample_size(8, 32, criterion="fastest"), ValueError, "criterion"),
    (lambda: crossover_sample_size(8, 32, T=float("nan")), ValueError, "T"),
    (lambda: minima("softmax", 8, 16, -5.0), ValueError, "P"),
    (lambda: minima("gelu", 8, 16, 5.0), ValueError, "model"),
    (lambda: minima("softmax", 8, 16, 5.0, prior={"T": 1}), TypeError, "prior"),
    (lambda: reduced_action("linear_v2", torch.zeros(3), 5.0, 8, 16), ValueError, "x"),
    (lambda: linear_action(0.1, 0.1, 5.0, 8, 16, model="linear_v2_bulk"), ValueError, "b"),
    (lambda: neg_log_posterior("softmax", torch.zeros(4, 4, dtype=f64), torch.zeros(3, 3, 2, 2)), ValueError, "counts"),
    (lambda: onset_sample_size("softmax", 8, 16), ValueError, "model"),
    (lambda: fit_power_law([1.0, -2.0, 3.0], L=[1.0, 2.0, 3.0]), ValueError, "y"),
    (lambda: GridSpec(n_lin=40), ValueError, "n_lin"),
    (lambda: crossover_sample_size(8, 32, bulk="yes"), TypeError, "bulk"),
    (lambda: order_parameters_vs_P("softmax", [8, 16], 32, [100.0]), ValueError, "V and L"),
]


@pytest.mark.parametrize("call,error,name", BAD, ids=[f"{i}-{b[2]}" for i, b in enumerate(BAD)])
def test_bad_input_is_rejected_with_the_argument_named(call, error, name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(error, match=name):
            call()


def test_compare_scaling_laws_picks_the_generating_law():
    from lib.theory import SCALING_LAWS, compare_scaling_laws

    L = np.array([32.0, 64, 128, 256, 512, 1024])
    for name, f in SCALING_LAWS.items():
        rms = compare_scaling_laws(7.0 * f(L), L)
        assert rms[name] < 1e-12 and min(v for k, v in rms.items() if k != name) > 0.01, name  # exact, others off
    noisy = 7.0 * SCALING_LAWS["L ln²L"](L) * np.exp(0.01 * np.sin(np.arange(L.size)))
    assert min(compare_scaling_laws(noisy, L), key=compare_scaling_laws(noisy, L).get) == "L ln²L"
    with pytest.raises(ValueError, match="same length"):
        compare_scaling_laws([1.0, 2.0], [2.0, 3.0])
    with pytest.raises(ValueError, match="> 0"):
        compare_scaling_laws([1.0, -2.0, 3.0], [2.0, 3.0, 4.0])


def test_law_ratio_is_the_best_rivals_residual_over_the_laws():
    from lib.theory import SCALING_LAWS, compare_scaling_laws, law_ratio

    L = np.array([16.0, 32, 64])
    noisy = 3.0 * SCALING_LAWS["L ln²L"](L) * np.exp(0.01 * np.sin(np.arange(L.size)))
    rms = compare_scaling_laws(noisy, L)
    assert law_ratio(noisy, L) == min(v for k, v in rms.items() if k != "L ln²L") / rms["L ln²L"] > 2
    assert law_ratio(2.0 * L**1.5, L) < 0.5  # a rival's own law: L ln²L fits worse than it
    assert law_ratio(2.0 * L**1.5, L, law="L^1.5") > 2
    with pytest.raises(ValueError, match="law must be one of"):
        law_ratio(noisy, L, law="L^2")
