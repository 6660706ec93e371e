"""lib.train.copy_sgld: Langevin sampling of the copy head's posterior."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lib.tasks import shift_matrix
from lib.train import AdamConfig, CopySGLDConfig, SGLDConfig, plane_coefficients, sample_copy_posterior, train_ensemble


def test_plane_coefficients_recover_the_plane():
    L = 7
    S = shift_matrix(L).numpy()
    J = np.ones((L, L))
    for cG, c1 in [(0.3, 0.5), (0.0, 1.0), (1.0, 0.0), (-0.2, 0.1)]:
        got = plane_coefficients(cG * S + c1 / L * J)
        assert np.allclose(got, (cG, c1))
    # softmax rows: uniform + copy coefficients sum to one
    A = torch.softmax(torch.randn(3, L, L, dtype=torch.float64), -1).numpy()
    cG, c1 = plane_coefficients(A)
    assert np.allclose(cG + c1, 1.0)
    with pytest.raises(ValueError, match="shape"):
        plane_coefficients(np.zeros((3, 4)))


def small(kind, **kw):
    sgld = SGLDConfig(step_size=2e-3, steps=400, burn_in=0.5, thin=20, seed=3)
    return CopySGLDConfig(kind, V=4, L=6, P_grid=(10, 200), random_chains=2, copy_chains=1, sgld=sgld, **kw)


@pytest.mark.parametrize("kind", ["softmax", "linear"])
def test_sampling_is_seeded_and_shaped(kind):
    a = sample_copy_posterior(small(kind), cache=False)
    b = sample_copy_posterior(small(kind), cache=False)
    assert np.array_equal(a.target, b.target)
    n_s = small(kind).sgld.n_samples
    assert a.A.shape == (2, 3, n_s, 6, 6) and a.target.shape == (2, 3, n_s) and a.rhat.shape == (2,)
    assert a.chains == ("random 0", "random 1", "copy 0") and list(a.is_copy) == [False, False, True]
    assert np.allclose(a.target, np.mean(np.diagonal(np.roll(a.A, 1, axis=-1), axis1=-2, axis2=-1), -1))
    assert not a.diverged.any()
    if kind == "softmax":
        assert np.allclose(a.A.sum(-1), 1.0)


def test_more_data_concentrates_on_copying():
    res = sample_copy_posterior(small("softmax"), cache=False)
    assert res.branch_mean("target", True)[1] > res.branch_mean("target", True)[0]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(kind="relu"), "kind"),
        (dict(P_grid=()), "P_grid"),
        (dict(P_grid=(5, 5)), "repeated"),
        (dict(random_chains=0, copy_chains=0), "at least one chain"),
        (dict(random_chains=-1), "random_chains"),
        (dict(init_W=-1.0), "init_W"),
    ],
)
def test_copy_sgld_config_validation(kwargs, match):
    base = dict(kind="softmax", V=4, L=6, P_grid=(10, 20))
    with pytest.raises(ValueError, match=match):
        CopySGLDConfig(**{**base, **kwargs})


def test_empty_ensemble_is_rejected():
    with pytest.raises(ValueError, match="empty"):
        train_ensemble({"x": torch.zeros(0, 3)}, lambda p, s: p["x"].sum(-1), AdamConfig(steps=2))


def test_the_sampling_plan_builds_chapter_4s_runs():
    from lib.train import CopySGLDConfig, PosteriorSamplingPlan, SGLDConfig

    fast = PosteriorSamplingPlan.fast()
    sgld = SGLDConfig(step_size=2e-3, steps=6000, burn_in=0.5, thin=50)
    assert fast.softmax() == CopySGLDConfig(
        "softmax", V=8, L=32, P_grid=(150, 250, 377, 500, 650, 800, 1000), sgld=sgld, random_chains=2, copy_chains=2
    )
    assert fast.linear() == CopySGLDConfig(
        "linear",
        V=8,
        L=16,
        P_grid=(10, 20, 40, 60, 80, 90, 100, 120, 160, 250, 500),
        sgld=sgld,
        random_chains=3,
        copy_chains=1,
    )
    paper = PosteriorSamplingPlan.paper()
    assert paper.sgld.steps > fast.sgld.steps and set(fast.P_soft) < set(paper.P_soft) and paper.copy_chains == 4
    with pytest.raises(ValueError):
        PosteriorSamplingPlan(P_lin=())
