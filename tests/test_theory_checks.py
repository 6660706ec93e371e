"""lib.theory.{marginal_mc, self_averaging, coverage, pushforward}: the numerical checks of chapter 2 (W-marginal MC, self-averaging, coverage, pushforward)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import integrate
from scipy.stats import multivariate_normal

from lib.tasks import CopyTask, pair_counts, sample_tokens, shift_matrix
from lib.theory import (
    coverage,
    large_p_action,
    logistic_normal_logpdf,
    minimise_full_action,
    plane_projection,
    posterior_terms,
    pushforward_check,
    sample_softmax_rows,
    self_averaging_gap,
    ternary_bin_index,
    ternary_bin_mass,
    ternary_bins,
    w_marginal_mc,
)
from lib.train import CopyPrior

f64 = torch.float64
PRIOR = CopyPrior(T=0.8, sigma_G2=1.2, sigma_W2=1.5, sigma_beta2=2.0)  # non-default, so no factor can hide


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# ------------------------------------------------------------------------------------------ (a) W-marginal MC
def test_prior_mc_is_unbiased_for_the_closed_form_marginal():
    """The mean of exp(-E) over prior samples is unbiased for Z: averaged over 16 independent seeds it hits e^{-data-Occam}."""
    L, V, P = 2, 2, 1
    counts = pair_counts(sample_tokens(CopyTask(V=V, L=L, P=P, seed=4)), V)
    G = torch.randn(L, L, generator=_gen(0), dtype=f64)
    terms = posterior_terms("softmax", G, counts, prior=PRIOR)
    Z = math.exp(-float(terms.data + terms.occam))
    est = np.array(
        [
            math.exp(
                w_marginal_mc("softmax", G, counts, prior=PRIOR, n_samples=4000, seed=s, n_checkpoints=2).log_mean[-1]
            )
            for s in range(16)
        ]
    )
    # each estimate is a sample mean (unbiased for Z); their average has standard error sd/4
    assert abs(est.mean() - Z) < 4 * est.std(ddof=1) / 4 + 1e-12, (est.mean(), Z)


@pytest.mark.parametrize("model,beta", [("softmax", None), ("linear_v2", 0.7), ("linear_v0", None)])
def test_mc_agrees_with_closed_form_and_posterior_mean_is_map(model, beta):
    L, V, P = 3, 2, 4
    counts = pair_counts(sample_tokens(CopyTask(V=V, L=L, P=P, seed=11)), V)
    G = torch.randn(L, L, generator=_gen(1), dtype=f64)
    r = w_marginal_mc(model, G, counts, beta=beta, prior=PRIOR, n_samples=2**17, seed=2)
    assert abs(r.z) < 5
    assert abs(r.z_map) > 20  # the Occam term is resolved: dropping it is detected
    assert np.all(np.diff(r.n) > 0) and r.n[-1] == 2**17 and np.all(np.diff(r.se[2:]) < 0)
    assert np.all(np.abs(r.W_mean_mc - r.W_mean_closed) < 5 * r.W_mean_se)
    assert np.allclose(r.W_map, r.W_mean_closed, atol=1e-12) and r.map_grad < 1e-10
    q = w_marginal_mc(model, G, counts, beta=beta, prior=PRIOR, n_samples=1000, sampler="posterior", seed=2)
    assert q.log_w_spread < 1e-9  # importance weights from the exact posterior are constant ...
    assert abs(q.log_mean[-1] - q.closed_form) < 1e-9  # ... and equal to Z


# ------------------------------------------------------------------------------------------ (b) self-averaging
def test_self_averaging_gap_shrinks_like_inverse_sqrt_p():
    L, V = 5, 3
    G = torch.stack([torch.randn(L, L, generator=_gen(3), dtype=f64), torch.zeros(L, L, dtype=f64)])  # (2, L, L)
    grid = (100, 1000, 10_000, 100_000)
    r = self_averaging_gap("softmax", G, V, grid, n_datasets=8, prior=PRIOR)
    assert r.exact.shape == (2, 8, 4) and r.large.shape == (2, 4) and r.per_sample_rms.shape == (2, 4)
    assert np.all(np.diff(r.per_sample_rms, axis=-1) < 0)
    assert np.all(np.abs(r.slope + 0.5) < 0.2), r.slope
    assert np.allclose(
        r.large,
        large_p_action("softmax", G[:, None], torch.tensor(grid, dtype=f64), V, prior=PRIOR).numpy(),
        rtol=1e-12,
    )
    assert np.allclose(r.per_sample_rms**2, r.bias**2 + r.fluctuation**2 * 7 / 8, rtol=1e-9)


# ------------------------------------------------------------------------------------------ (c) coverage
def test_coverage_is_one_in_the_plane_and_small_for_random_matrices():
    L = 7
    S, J = shift_matrix(L), torch.ones(L, L, dtype=f64)
    ab = torch.randn(10, 2, generator=_gen(0), dtype=f64)
    plane = ab[:, 0, None, None] * S + ab[:, 1, None, None] * J  # (10, L, L)
    assert torch.allclose(coverage(plane), torch.ones(10, dtype=f64), atol=1e-12)
    assert torch.allclose(plane_projection(plane), plane, atol=1e-12)
    assert float(coverage(3.0 * J)) == 1.0  # exactly uniform: in the plane
    R = torch.randn(4000, L, L, generator=_gen(1), dtype=f64)
    c = coverage(R)
    assert abs(float(c.mean()) * (L * L - 1) - 1) < 0.1  # E cos^2 = 1/(dim) for an isotropic direction
    # invariances: scale, adding J; and the residual is orthogonal to S and J
    assert torch.allclose(coverage(2.5 * R[:5] + 0.3 * J), c[:5], atol=1e-12)
    res = R - plane_projection(R)
    assert torch.allclose((res * S).sum((-1, -2)), torch.zeros(4000, dtype=f64), atol=1e-10)
    assert torch.allclose(res.sum((-1, -2)), torch.zeros(4000, dtype=f64), atol=1e-10)
    # the projection is the average over the symmetry group (mean target entry, mean off-target entry)
    M = R[0]
    P = plane_projection(M)
    assert torch.allclose(P[S.bool()], (M * S).sum() / L * torch.ones(L, dtype=f64))
    assert torch.allclose(P[~S.bool()], (M * (1 - S)).sum() / (L * L - L) * torch.ones(L * L - L, dtype=f64))
    # row gauge: row-constant matrices carry no structure for softmax scores
    rows = torch.randn(L, 1, generator=_gen(2), dtype=f64) * J
    assert torch.allclose(coverage(plane[0] + rows, row_gauge=True), torch.tensor(1.0, dtype=f64))


@pytest.mark.parametrize("model", ["softmax", "linear_v2"])
def test_full_action_minimisers_lie_in_the_plane_and_match_the_reduced_minima(model):
    V, L = 4, 8
    P = (400.0, 3000.0)
    r = minimise_full_action(model, V, L, P, n_random=2, seed=0, prior=PRIOR)
    assert r.A.shape == (2, 3, L, L) and r.labels == ("seed 0", "seed 1", "copy")
    assert np.all(r.grad < 1e-5)  # L-BFGS stalls near 1e-6 on actions of order 1e3 (float64)
    assert np.all(r.coverage_start[:2] < 0.2)  # random starts are far from the plane ...
    assert np.all(r.coverage > 1 - 1e-8)  # ... their minimisers are in it
    assert np.all(r.reduced_gap < 1e-5)
    assert (r.beta is None) == (model == "softmax")


# ------------------------------------------------------------------------------------------ (d) pushforward
def test_logistic_normal_density_integrates_to_one_and_matches_the_alr_gaussian():
    for s2 in (0.5, 1.0):
        total = integrate.quad(lambda t: math.exp(float(logistic_normal_logpdf(np.array([t, 1 - t]), s2))), 0, 1)[0]
        assert abs(total - 1) < 1e-8  # L = 2
        mass = ternary_bin_mass(lambda p: logistic_normal_logpdf(p, s2), 8, n_sub=32)  # L = 3
        assert abs(mass.sum() - 1) < 1e-4
    # L = 4: change of variables from x = ln(a_j / a_L) ~ N(0, s2 (I + 11^T)), Jacobian prod_j 1/a_j
    s2, L = 1.7, 4
    a = sample_softmax_rows(50, L, 2.0, seed=1)
    x = np.log(a[:, :-1] / a[:, -1:])
    ref = multivariate_normal(np.zeros(L - 1), s2 * (np.eye(L - 1) + 1)).logpdf(x) - np.log(a).sum(-1)
    assert np.allclose(logistic_normal_logpdf(a, s2), ref, rtol=1e-12, atol=1e-10)


def test_ternary_bins_partition_the_simplex():
    n = 5
    bins = ternary_bins(n)
    assert bins.shape == (n * n, 3, 3) and np.allclose(bins.sum(-1), 1)
    a = sample_softmax_rows(3000, 3, 1.0, seed=3)
    idx = ternary_bin_index(a, n)
    T = bins[idx]  # (N, 3 vertices, 3)
    lam = np.linalg.solve(np.transpose(T, (0, 2, 1)), a[..., None])[..., 0]  # barycentric coords in the bin
    assert np.all(lam > -1e-12)
    assert np.allclose(ternary_bin_mass(lambda p: np.zeros(p.shape[:-1]), n, n_sub=2), 0.5 / n**2)


def test_pushforward_check_accepts_the_derived_density_and_rejects_a_wrong_one():
    good = pushforward_check(1.0, n_samples=40_000, n_side=8, seed=0)
    assert good.p_value > 1e-3 and good.tv <= good.tv_null[1] * 1.2 and abs(good.mass - 1) < 1e-4
    assert good.observed.sum() == 40_000 and abs(good.expected.sum() - 1) < 1e-12
    bad = pushforward_check(1.0, n_samples=40_000, n_side=8, seed=0, density="no_jacobian")
    assert bad.p_value < 1e-10 and bad.tv > 5 * bad.tv_null[1]


# ------------------------------------------------------------------------------------------ validation
_C = pair_counts(sample_tokens(CopyTask(V=2, L=3, P=2, seed=0)), 2)
_G3 = torch.zeros(3, 3, dtype=f64)


@pytest.mark.parametrize(
    "call,error,name",
    [
        (lambda: w_marginal_mc("softmax", torch.zeros(3, 4), _C), ValueError, "G"),
        (lambda: w_marginal_mc("softmax", _G3, _C, n_samples=10), ValueError, "n_samples"),
        (lambda: w_marginal_mc("softmax", _G3, _C, sampler="nuts"), ValueError, "sampler"),
        (lambda: w_marginal_mc("softmax", _G3, _C, beta=1.0), ValueError, "beta"),
        (lambda: w_marginal_mc("softmax", _G3, _C[:2]), ValueError, "counts"),
        (lambda: w_marginal_mc("relu", _G3, _C), ValueError, "model"),
        (lambda: self_averaging_gap("softmax", _G3, 2, (10, 5)), ValueError, "P_grid"),
        (lambda: self_averaging_gap("softmax", _G3, 2, (10, 20), fit_from=30), ValueError, "fit_from"),
        (lambda: self_averaging_gap("softmax", _G3, 2, (10, 20), n_datasets=1), ValueError, "n_datasets"),
        (lambda: coverage(torch.zeros(3, 4)), ValueError, "M"),
        (lambda: coverage(torch.full((3, 3), float("nan"))), ValueError, "M"),
        (lambda: minimise_full_action("softmax", 2, 3, [-1.0]), ValueError, "P"),
        (lambda: minimise_full_action("softmax", 2, 3, [2.0], init_scale=0.0), ValueError, "init_scale"),
        (lambda: minimise_full_action("softmax", 2, 3, [5.0], counts=_C[None]), ValueError, "counts"),
        (lambda: minimise_full_action("softmax", 2, 3, [2.0], n_random=0, copy_start=False), ValueError, "start"),
        (lambda: logistic_normal_logpdf(np.array([0.5, 0.6])), ValueError, "a"),
        (lambda: logistic_normal_logpdf(np.array([0.5, 0.5]), sigma_G2=0.0), ValueError, "sigma_G2"),
        (lambda: ternary_bin_index(np.array([[0.5, 0.5]]), 4), ValueError, "a"),
        (lambda: ternary_bins(0), ValueError, "n_side"),
        (lambda: pushforward_check(1.0, density="flat"), ValueError, "density"),
        (lambda: ternary_bin_mass(3, 4), TypeError, "logpdf"),
    ],
)
def test_bad_input_is_rejected_with_the_argument_named(call, error, name):
    with pytest.raises(error, match=name):
        call()
