"""lib.train.sgld: Langevin sampling of Gaussian targets, diagnostics, validation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lib.train.sgld import SGLDConfig, effective_sample_size, langevin, split_rhat

f64 = torch.float64


def test_langevin_recovers_gaussian_mean_and_variance():
    """4 chains of one 2-D Gaussian (mean m, variances s2): sample moments within a few standard errors."""
    m = torch.tensor([1.0, -2.0], dtype=f64)
    s2 = torch.tensor([0.5, 2.0], dtype=f64)
    cfg = SGLDConfig(step_size=0.02, steps=30_000, burn_in=0.1, thin=5, seed=3)
    run = langevin(
        {"x": torch.zeros(4, 2, dtype=f64)},
        lambda p: ((p["x"] - m) ** 2 / (2 * s2)).sum(-1),
        lambda p: {"x": p["x"]},
        cfg,
    )
    x = run.samples["x"]  # (n, 4, 2)
    assert x.shape == (cfg.n_samples, 4, 2)
    pooled = x.reshape(-1, 2)
    ess = np.array([sum(effective_sample_size(x[:, c, k]) for c in range(4)) for k in range(2)])
    se = np.sqrt(s2.numpy() / ess)
    assert np.all(np.abs(pooled.mean(0) - m.numpy()) < 5 * se)
    # the O(step) bias of unadjusted Langevin inflates the variance by about step/2 relative: allow 15 %
    assert np.allclose(pooled.var(0), s2.numpy(), rtol=0.15)
    assert split_rhat(x[:, :, 0]) < 1.05
    assert not run.diverged.any()


def test_chains_are_independent_and_seeded():
    energy = lambda p: (p["x"] ** 2).sum(-1) / 2  # noqa: E731
    cfg = SGLDConfig(step_size=0.05, steps=200, burn_in=0.5, thin=10, seed=7)
    a = langevin({"x": torch.zeros(3, 2, dtype=f64)}, energy, lambda p: {"x": p["x"]}, cfg)
    b = langevin({"x": torch.zeros(3, 2, dtype=f64)}, energy, lambda p: {"x": p["x"]}, cfg)
    assert np.array_equal(a.samples["x"], b.samples["x"])
    assert not np.allclose(a.samples["x"][:, 0], a.samples["x"][:, 1])  # each chain its own noise


def test_rhat_flags_chains_stuck_in_different_modes():
    rng = np.random.default_rng(0)
    mixed = rng.normal(size=(400, 4))
    stuck = mixed + np.array([0.0, 0.0, 3.0, 3.0])
    assert split_rhat(mixed) < 1.02
    assert split_rhat(stuck) > 1.5


def test_effective_sample_size_of_independent_and_correlated_draws():
    rng = np.random.default_rng(1)
    iid = rng.normal(size=4000)
    assert 3000 < effective_sample_size(iid) <= 4000 * 1.2
    ar = np.zeros(4000)
    for t in range(1, 4000):
        ar[t] = 0.9 * ar[t - 1] + rng.normal()
    # AR(1) with rho = 0.9: ESS ~ n (1 - rho) / (1 + rho) = 211
    assert 120 < effective_sample_size(ar) < 350


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(step_size=-1e-3), "step_size"),
        (dict(step_size=0.0), "step_size"),
        (dict(steps=1), "steps"),
        (dict(burn_in=1.0), "burn_in"),
        (dict(thin=0), "thin"),
        (dict(seed=-1), "seed"),
        (dict(steps=10, burn_in=0.5, thin=10), "sample"),
    ],
)
def test_sgld_config_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SGLDConfig(**kwargs)


def test_langevin_validation():
    obs = lambda p: {}  # noqa: E731
    with pytest.raises(ValueError, match="non-empty"):
        langevin({}, lambda p: None, obs, SGLDConfig(steps=10, thin=1))
    with pytest.raises(ValueError, match="chain"):
        langevin({"x": torch.zeros(0, 2)}, lambda p: p["x"].sum(-1), obs, SGLDConfig(steps=10, thin=1))
    with pytest.raises(TypeError):
        langevin({"x": torch.zeros(2, 2)}, lambda p: p["x"].sum(-1), obs, {"steps": 10})
    with pytest.raises(ValueError, match="shape"):
        langevin({"x": torch.zeros(2, 2)}, lambda p: p["x"].sum(), obs, SGLDConfig(steps=10, thin=1))
    with pytest.raises(ValueError, match="draws"):
        split_rhat(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="draws"):
        effective_sample_size(np.zeros((5, 2)))
