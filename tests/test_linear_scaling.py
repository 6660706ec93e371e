"""The linear-scaling study's measures (copy share, uniform coefficient), its transition points and exponent fits,
and the per-chain step of the Langevin sampler it relies on."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from lib.train import SGLDConfig, langevin
from lib.train.copy_sgld import plane_coefficients
from lib.studies.linear_scaling import LinearScalingConfig, copy_share, uniform_coefficient
from lib.train.scaling_fits import crossover_point, fit_exponents, onset_point, scaling_exponents, scaling_points


def _shift(L):
    S = torch.zeros(L, L, dtype=torch.float64)
    S[torch.arange(L), (torch.arange(L) - 1) % L] = 1.0  # S[i, i-1]
    return S


# ------------------------------------------------------------------------------------------ measures
def test_copy_share_is_one_in_the_copy_plane_and_invariant_to_uniform_pooling():
    L = 12
    S, J = _shift(L), torch.ones(L, L, dtype=torch.float64)
    for a, b in ((1.0, 0.0), (0.3, 2.0), (-0.7, -0.1)):
        assert float(copy_share(a * S + b * J)) == pytest.approx(1.0, abs=1e-12)
    A = torch.randn(5, L, L, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert torch.allclose(copy_share(A), copy_share(A + 3.0 * J), atol=1e-12)


def test_copy_share_is_the_cosine_squared_with_the_centred_copy_matrix():
    L = 9
    S = _shift(L)
    A = torch.randn(7, L, L, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    Ac = A - A.mean((-1, -2), keepdim=True)
    Sc = S - 1.0 / L
    cos2 = (Ac * Sc).sum((-1, -2)) ** 2 / ((Ac**2).sum((-1, -2)) * (Sc**2).sum())
    assert torch.allclose(copy_share(A), cos2, atol=1e-12)
    # a pattern without structure has a share of order 1/L^2, far below the crossover's 1/2
    big = torch.randn(200, 32, 32, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    assert float(copy_share(big).mean()) < 5.0 / 32**2


def test_uniform_coefficient_matches_the_plane_fit():
    A = torch.randn(4, 3, 10, 10, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    _, c1 = plane_coefficients(A.numpy())
    assert np.allclose(uniform_coefficient(A).numpy(), c1, atol=1e-12)


# ------------------------------------------------------------------------------------------ points
def test_crossover_point_interpolates_in_log_P():
    P = np.array([10.0, 100.0, 1000.0, 10000.0])
    share = np.array([0.0, 0.2, 0.8, 0.9])
    assert crossover_point(P, share) == pytest.approx(10**2.5)  # halfway from 0.2 to 0.8 in ln P
    assert np.isnan(crossover_point(P, np.array([0.0, 0.1, 0.2, 0.3])))  # never reaches 1/2
    assert np.isnan(crossover_point(P, np.array([0.6, 0.7, 0.8, 0.9])))  # already above at the first point
    with pytest.raises(ValueError):
        crossover_point(P[::-1], share)
    with pytest.raises(ValueError):
        crossover_point(P, share, level=1.5)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_onset_point_recovers_the_change_point_of_a_noisy_hinge(seed):
    rng = np.random.default_rng(seed)
    P = np.geomspace(2, 2000, 18)
    P1 = 37.0
    c1 = np.sqrt(0.01 + 0.15 * np.maximum(0, np.log(P / P1)) + rng.normal(0, 0.005, P.size).clip(-0.009))
    share = np.where(P > 1000, 0.3, 0.01)  # the last points are "past the crossover": excluded
    est = onset_point(P, c1, share)
    assert est == pytest.approx(P1, rel=0.15)


def test_onset_point_needs_points_on_both_sides_and_a_rise():
    P = np.geomspace(1, 100, 8)
    assert np.isnan(onset_point(P, np.ones(8), np.full(8, 0.9)))  # nothing before the crossover
    assert np.isnan(onset_point(P, np.linspace(1, 0, 8), np.zeros(8)))  # falling: no increasing hinge


def test_fit_exponents_recovers_a_power_law():
    V = np.array([4, 4, 8, 4, 8.0])
    L = np.array([8, 16, 16, 32, 32.0])
    fit = fit_exponents(3.0 * L**1.5 * V**0.5, V, L)
    assert fit["L"] == pytest.approx(1.5) and fit["V"] == pytest.approx(0.5) and fit["prefactor"] == pytest.approx(3.0)
    one_V = fit_exponents(L**2, np.full(5, 4.0), L)
    assert one_V["L"] == pytest.approx(2.0) and np.isnan(one_V["V"])


def _fake_study(b=1.5, c=0.5, a=2.0, draws=5, noise=0.05, seed=0):
    """Curves with known points: P1 = V^a, P_x = 3 L^b V^c (times log-normal draw noise)."""
    rng = np.random.default_rng(seed)
    cells = ((4, 8), (4, 16), (8, 16), (4, 32), (8, 32))
    P_of, c1, share = {}, {}, {}
    for V, L in cells:
        P = np.geomspace(max(2, V * V / 4), 8 * L * L, 24)
        P_of[(V, L)] = P
        c1_d, sh_d = [], []
        for _ in range(draws):
            P1 = V**a * np.exp(rng.normal(0, noise))
            Px = 3 * L**b * V**c * np.exp(rng.normal(0, noise))
            sh = 1 / (1 + (Px / P) ** 2)  # reaches 1/2 at P = Px
            c1_d.append(np.sqrt(0.01 + 0.2 * np.maximum(0, np.log(P / P1)))[:, None].repeat(2, 1))
            sh_d.append(sh[:, None].repeat(2, 1))
        c1[(V, L)], share[(V, L)] = np.stack(c1_d), np.stack(sh_d)  # (draws, n_P, 2 chains)
    return SimpleNamespace(config=SimpleNamespace(cells=cells), P=P_of, c1=c1, share=share)


def test_scaling_exponents_recover_known_laws_with_intervals_that_cover_them():
    study = _fake_study()
    cross = scaling_exponents(study, "crossover", n_boot=300)
    assert cross["L"].value == pytest.approx(1.5, abs=0.1) and cross["V"].value == pytest.approx(0.5, abs=0.15)
    assert (
        cross["L"].lo <= cross["L"].value <= cross["L"].hi and cross["L"].lo < 1.5 + 0.1 and cross["L"].hi > 1.5 - 0.1
    )
    onset = scaling_exponents(study, "onset", n_boot=300)
    assert onset["V"].value == pytest.approx(2.0, abs=0.2) and abs(onset["L"].value) < 0.2
    assert cross["missing"] == onset["missing"] == 0
    # the fit tells the two crossover laws apart
    bulk = scaling_exponents(_fake_study(b=2.0, c=0.0), "crossover", n_boot=300)
    assert bulk["L"].lo > cross["L"].hi


def test_scaling_exponents_are_deterministic_and_count_missing_points():
    study = _fake_study()
    assert scaling_exponents(study, "crossover", n_boot=50, seed=4) == scaling_exponents(
        study, "crossover", n_boot=50, seed=4
    )
    study.share[(4, 8)][0] = 0.0  # one draw never crosses
    assert np.isnan(scaling_points(study, "crossover")[(4, 8)][0])
    assert scaling_exponents(study, "crossover", n_boot=50)["missing"] == 1
    with pytest.raises(ValueError):
        scaling_points(study, "plateau")


# ------------------------------------------------------------------------------------------ config
def test_config_rejects_cells_without_a_separate_crossover_and_builds_wide_grids():
    with pytest.raises(ValueError, match="L > V"):
        LinearScalingConfig(cells=((8, 8),))
    with pytest.raises(ValueError):
        LinearScalingConfig(data_seeds=(0, 0))
    cfg = LinearScalingConfig()
    grid = cfg.P_grid(4, 32)
    assert len(grid) == cfg.n_P and grid[0] == 4 and grid[-1] == 8 * 32 * 32


# ------------------------------------------------------------------------------------------ sampler
def _gauss_energy(p):
    return 0.5 * (p["x"] ** 2).sum(-1)


def test_step_scale_of_ones_is_the_plain_update_bit_for_bit():
    cfg = SGLDConfig(step_size=0.05, steps=200, burn_in=0.5, thin=10, seed=3)
    x0 = {"x": torch.zeros(6, 3, dtype=torch.float64)}
    obs = lambda p: {"x": p["x"]}  # noqa: E731
    plain = langevin(x0, _gauss_energy, obs, cfg)
    ones = langevin(x0, _gauss_energy, obs, cfg, step_scale=torch.ones(6, dtype=torch.float64))
    assert np.array_equal(plain.samples["x"], ones.samples["x"])
    with pytest.raises(ValueError):
        langevin(x0, _gauss_energy, obs, cfg, step_scale=torch.ones(5))
    with pytest.raises(ValueError):
        langevin(x0, _gauss_energy, obs, cfg, step_scale=torch.full((6,), 2.0))


def test_smaller_steps_target_the_same_distribution():
    cfg = SGLDConfig(step_size=0.05, steps=40_000, burn_in=0.1, thin=5, seed=0)
    scale = torch.tensor([1.0, 1.0, 0.25, 0.25], dtype=torch.float64)
    run = langevin(
        {"x": torch.zeros(4, 200, dtype=torch.float64)}, _gauss_energy, lambda p: {"x": p["x"]}, cfg, step_scale=scale
    )
    var = run.samples["x"].var(0).mean(-1)  # (4,) per chain, averaged over 200 independent coordinates
    # unit Gaussian: variance 1 up to the O(eta) bias 1/(1 - eta/2) and sampling error
    assert np.allclose(var, 1.0, atol=0.06), var


def test_ratio_interval_covers_the_ratio_and_rejects_censored_values():
    from lib.core.stats import ratio_interval

    rng = np.random.default_rng(0)
    a, b = rng.lognormal(np.log(300), 0.2, 8), rng.lognormal(np.log(100), 0.2, 8)
    iv = ratio_interval(a, b)
    assert iv.lo <= iv.value <= iv.hi and iv.value == pytest.approx(np.median(a) / np.median(b))
    assert iv.lo > 1.5  # three times slower, eight seeds each: the interval excludes "no effect"
    assert ratio_interval(a, b) == ratio_interval(a, b)  # seeded
    with pytest.raises(ValueError):
        ratio_interval(np.r_[a, np.inf], b)


def test_onset_ignores_points_past_the_crossover_and_diverged_chains():
    P = np.geomspace(2, 2000, 18)
    c1 = np.sqrt(0.01 + 0.15 * np.maximum(0, np.log(P / 37.0)))
    share = np.where(P > 1000, 0.6, 0.01)
    share[-1] = 0.0  # a collapsed chain after the crossover must not re-enter the fit
    c1_bad = c1.copy()
    c1_bad[-1] = 0.0
    assert onset_point(P, c1_bad, share) == pytest.approx(onset_point(P, c1, share))
    c1_nan = c1.copy()
    c1_nan[3] = np.nan  # a diverged point before the crossover is left out
    assert onset_point(P, c1_nan, share) == pytest.approx(37.0, rel=0.15)
    study = _fake_study()
    study.share[(4, 8)][0, :, 0] = np.nan  # one diverged chain: the draw keeps its point
    assert np.isfinite(scaling_points(study, "crossover")[(4, 8)]).all()
