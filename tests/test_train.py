"""lib.train: the sufficient-statistics objective, the ensemble trainer, MAP fitting, transition metrics."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from lib.models import attention
from lib.tasks import CopyTask, copy_batch, pair_counts, sample_tokens, shift_matrix
from lib.train import (
    AdamConfig,
    CopyMapConfig,
    CopyPrior,
    copy_objective,
    copy_sq_error,
    fit_copy_map,
    optimal_readout,
    population_loss,
    target_attention,
    train_ensemble,
)
from lib.measures.grids import count_minima, geometric_grid, jump_fraction, refine_grid, steepest_step

f64 = torch.float64


def direct_sq_error(A, W, tokens, V):
    X, Y = copy_batch(tokens, V)
    F = torch.einsum("ij,pjv,vc->pic", A, X, W)
    return ((Y - F) ** 2).sum()


@pytest.mark.parametrize("kind", ["softmax", "linear"])
def test_sufficient_statistics_equal_the_direct_loss(kind):
    L, V, P = 6, 4, 30
    tokens = sample_tokens(CopyTask(V=V, L=L, P=P, seed=2))
    gen = torch.Generator().manual_seed(0)
    G = torch.randn(L, L, generator=gen, dtype=f64)
    W = torch.randn(V, V, generator=gen, dtype=f64)
    A = attention(kind, G, torch.tensor(0.3, dtype=f64) if kind == "linear" else None)
    stat = copy_sq_error(A, W, pair_counts(tokens, V), float(P))
    assert torch.allclose(stat, direct_sq_error(A, W, tokens, V), rtol=1e-12)


def test_sufficient_statistics_with_member_axes():
    L, V = 5, 3
    tokens = sample_tokens(CopyTask(V=V, L=L, P=40, seed=1))
    grid = (10, 40)
    counts = torch.stack([pair_counts(tokens[:p], V) for p in grid])  # (2, L, L, V, V)
    A = torch.softmax(torch.randn(2, 3, L, L, dtype=f64), -1)  # (n_P=2, n_init=3, L, L)
    W = torch.randn(2, 3, V, V, dtype=f64)
    P_t = torch.tensor(grid, dtype=f64)[:, None]
    out = copy_sq_error(A, W, counts, P_t)
    assert out.shape == (2, 3)
    for i, p in enumerate(grid):
        for r in range(3):
            assert torch.allclose(out[i, r], direct_sq_error(A[i, r], W[i, r], tokens[:p], V))
    with pytest.raises(ValueError, match="line up"):
        copy_sq_error(A, W, counts[:1], P_t)


def test_objective_gradient_matches_finite_differences():
    L, V = 4, 3
    counts = pair_counts(sample_tokens(CopyTask(V=V, L=L, P=12)), V)
    prior = CopyPrior(T=0.7, sigma_G2=2.0, sigma_W2=0.5, sigma_beta2=1.5)

    def U(G, W, beta):
        return copy_objective("linear", {"G": G, "W": W, "beta": beta}, counts, torch.tensor(12.0, dtype=f64), prior)

    args = (
        torch.randn(L, L, dtype=f64, requires_grad=True),
        torch.randn(V, V, dtype=f64, requires_grad=True),
        torch.randn((), dtype=f64, requires_grad=True),
    )
    assert torch.autograd.gradcheck(U, args)
    Gs = torch.randn(L, L, dtype=f64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda G, W: copy_objective("softmax", {"G": G, "W": W}, counts, torch.tensor(12.0, dtype=f64), prior),
        (Gs, args[1]),
    )


def test_population_loss_is_the_expected_test_loss():
    L, V = 5, 3
    gen = torch.Generator().manual_seed(3)
    A = torch.softmax(torch.randn(L, L, generator=gen, dtype=f64), -1)
    W = torch.randn(V, V, generator=gen, dtype=f64)
    tokens = sample_tokens(CopyTask(V=V, L=L, P=50_000, seed=9))
    mc = direct_sq_error(A, W, tokens, V) / (50_000 * L)
    assert abs(float(population_loss(A, W)) - float(mc)) < 0.02 * float(mc)
    # the copy solution has zero loss; uniform attention with zero readout has loss 1
    assert float(population_loss(shift_matrix(L), torch.eye(V, dtype=f64))) < 1e-12
    assert math.isclose(float(population_loss(torch.full((L, L), 1 / L, dtype=f64), torch.zeros(V, V, dtype=f64))), 1.0)


def test_optimal_readout_is_a_stationary_point():
    L, V = 5, 3
    counts = pair_counts(sample_tokens(CopyTask(V=V, L=L, P=30)), V)
    A = torch.softmax(torch.randn(2, L, L, dtype=f64), -1)
    ridge = 0.4
    W = optimal_readout(A, counts, ridge).requires_grad_(True)
    obj = copy_sq_error(A, W, counts, 30.0) + ridge * (W**2).sum((-1, -2))
    (grad,) = torch.autograd.grad(obj.sum(), W)
    assert grad.abs().max() < 1e-9
    with pytest.raises(ValueError, match="ridge"):
        optimal_readout(A, counts, -1.0)


def test_target_attention_of_the_shift_is_one():
    assert float(target_attention(shift_matrix(7))) == 1.0
    assert math.isclose(float(target_attention(torch.full((7, 7), 1 / 7, dtype=f64))), 1 / 7)


# ------------------------------------------------------------------------------------------ ensemble trainer
def quadratic_members(E, dim, seed=0):
    gen = torch.Generator().manual_seed(seed)
    centers = torch.randn(E, dim, generator=gen, dtype=f64)
    scales = torch.rand(E, dim, generator=gen, dtype=f64) + 0.5
    return centers, scales


def test_batched_members_train_like_separate_runs():
    E, dim = 4, 3
    centers, scales = quadratic_members(E, dim)
    init = {"x": torch.zeros(E, dim, dtype=f64)}

    def loss_fn(p, _step, c=centers, s=scales):
        return (s * (p["x"] - c) ** 2).sum(-1) + (p["x"] ** 4).sum(-1)

    cfg = AdamConfig(lr=0.05, steps=200)
    batched = train_ensemble(init, loss_fn, cfg)
    for e in range(E):
        single = train_ensemble(
            {"x": torch.zeros(1, dim, dtype=f64)},
            lambda p, s, e=e: loss_fn(p, s, centers[e : e + 1], scales[e : e + 1]),
            cfg,
        )
        assert torch.allclose(batched.params["x"][e], single.params["x"][0], atol=1e-12)
    assert torch.equal(init["x"], torch.zeros(E, dim, dtype=f64))  # inputs untouched


def test_early_stopping_freezes_converged_members():
    centers, scales = quadratic_members(3, 2)

    def loss_fn(p, _step):
        return (scales * (p["x"] - centers) ** 2).sum(-1)

    run = train_ensemble(
        {"x": torch.zeros(3, 2, dtype=f64)}, loss_fn, AdamConfig(lr=0.1, steps=5000, tol=1e-10, check_every=20)
    )
    assert run.steps_run < 5000
    assert (run.stopped_at < 5000).all()
    assert torch.allclose(run.params["x"], centers, atol=1e-3)


def test_on_check_freezes_only_the_members_it_names():
    centers, scales = quadratic_members(3, 2)
    seen = []

    def loss_fn(p, _step):  # member 2's loss is the same number at every step (it depends on x only through 0 * x)
        loss = (scales * (p["x"] - centers) ** 2).sum(-1)
        return torch.cat([loss[:2], 0.5 + 0.0 * p["x"][2:].sum(-1)])

    def on_check(p, step):  # member 0 meets "its criterion" at step 30; nobody else ever does
        seen.append((step, p["x"].clone()))
        return torch.tensor([step >= 30, False, False])

    run = train_ensemble(
        {"x": torch.zeros(3, 2, dtype=f64)}, loss_fn, AdamConfig(lr=0.1, steps=100, check_every=10), on_check=on_check
    )
    assert [s for s, _ in seen] == list(range(0, 100, 10))  # called at every check point, before that step's loss
    assert run.steps_run == 100 and run.stopped_at.tolist() == [30, 100, 100]  # a repeating loss is no reason to stop
    assert torch.equal(run.params["x"][0], dict(seen)[30][0])  # frozen with the parameters the callback saw
    assert not torch.equal(run.params["x"][1], dict(seen)[30][1])
    everyone = train_ensemble(
        {"x": torch.zeros(3, 2, dtype=f64)},
        loss_fn,
        AdamConfig(lr=0.1, steps=100, check_every=10),
        on_check=lambda p, step: torch.full((3,), step >= 20),
    )
    assert everyone.steps_run == 20 and everyone.stopped_at.tolist() == [20, 20, 20]
    with pytest.raises(ValueError, match="on_check"):
        train_ensemble({"x": torch.zeros(3, 2)}, loss_fn, AdamConfig(steps=2), on_check=lambda p, s: torch.zeros(2))


def test_diverging_members_are_flagged_not_propagated():
    offset = torch.tensor([0.0, 10.0], dtype=f64)

    def loss_fn(p, _step):  # member 1 takes the square root of a negative number: NaN in its own loss only
        return (p["x"] ** 2).sum(-1) + torch.sqrt(p["x"][:, 0] + 5.0 - offset)

    run = train_ensemble({"x": torch.ones(2, 2, dtype=f64)}, loss_fn, AdamConfig(lr=0.1, steps=50))
    assert run.diverged.tolist() == [False, True]
    assert torch.isfinite(run.params["x"][0]).all()
    assert torch.equal(run.params["x"][1], torch.ones(2, dtype=f64))


def test_lr_decay_lets_adam_settle():
    """At a constant rate Adam keeps jittering around the copy head's minimum; the cosine decay lets it settle."""
    base = CopyMapConfig("softmax", V=4, L=6, P_grid=(5, 200), init_seeds=(0, 1), adam=AdamConfig(steps=1500))
    flat = fit_copy_map(base)
    decayed = fit_copy_map(dataclasses.replace(base, adam=AdamConfig(steps=1500, lr_final=1e-4)))
    assert flat.grad_norm.max() > 1e-3
    assert decayed.grad_norm.max() < 1e-6


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(lr=0.0), "lr"),
        (dict(lr=float("inf")), "lr"),
        (dict(steps=0), "steps"),
        (dict(steps=2.5), "steps"),
        (dict(check_every=0), "check_every"),
        (dict(betas=(0.9, 1.0)), "betas"),
        (dict(tol=-1.0), "tol"),
        (dict(lr=0.01, lr_final=0.1), "lr_final"),
    ],
)
def test_adam_config_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        AdamConfig(**kwargs)


def test_train_ensemble_validation():
    with pytest.raises(ValueError, match="leading member axis"):
        train_ensemble({"a": torch.zeros(2, 3), "b": torch.zeros(3, 3)}, lambda p, s: p["a"].sum(-1), AdamConfig())
    with pytest.raises(ValueError, match="shape"):
        train_ensemble({"a": torch.zeros(2, 3)}, lambda p, s: p["a"].sum(), AdamConfig(steps=2))
    with pytest.raises(TypeError):
        train_ensemble({"a": torch.zeros(2, 3)}, lambda p, s: p["a"].sum(-1), {"lr": 0.1})


# ------------------------------------------------------------------------------------------ MAP fitting
@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(kind="tanh"), "kind"),
        (dict(V=1), "V"),
        (dict(L=1), "L"),
        (dict(P_grid=()), "P_grid"),
        (dict(P_grid=[10, 20]), "P_grid"),
        (dict(P_grid=(10, 0)), "P_grid"),
        (dict(P_grid=(10, 10)), "repeated"),
        (dict(init_seeds=(), copy_init=False), "initialisation"),
        (dict(init_G=-1.0), "init_G"),
    ],
)
def test_copy_map_config_validation(kwargs, match):
    base = dict(kind="softmax", V=4, L=6, P_grid=(10, 20))
    with pytest.raises(ValueError, match=match):
        CopyMapConfig(**{**base, **kwargs})


@pytest.mark.parametrize("name", ["T", "sigma_G2", "sigma_W2", "sigma_beta2"])
@pytest.mark.parametrize("value", [0.0, -1.0, float("nan")])
def test_copy_prior_validation(name, value):
    with pytest.raises(ValueError, match=name):
        CopyPrior(**{name: value})


def small_cfg(kind, **kw):
    return CopyMapConfig(
        kind, V=4, L=6, P_grid=(5, 200), init_seeds=(0, 1), adam=AdamConfig(steps=400, lr_final=1e-4), **kw
    )


def test_fit_is_deterministic_and_filters_the_lowest_U():
    a = fit_copy_map(small_cfg("softmax"))
    b = fit_copy_map(small_cfg("softmax"), device="cpu")
    assert np.array_equal(a.U, b.U) and np.array_equal(a.A, b.A)
    assert np.array_equal(a.best, np.argmin(a.U, axis=1))
    assert a.filtered("target").shape == (2,)
    assert np.allclose(a.A.sum(-1), 1.0)


def test_fit_learns_the_copy_pattern_with_enough_data():
    res = fit_copy_map(small_cfg("softmax"))
    # few samples: near-uniform attention; many samples: clearly on the target
    assert res.filtered("target")[0] < 0.3 < res.filtered("target")[1]
    assert res.filtered("test_loss")[1] < res.filtered("test_loss")[0]


def test_linear_results_use_the_positive_trace_representative():
    res = fit_copy_map(small_cfg("linear"))
    assert (np.trace(res.W, axis1=-2, axis2=-1) >= 0).all()
    assert res.filtered("target")[1] > 0


def test_fit_matches_the_reduced_theory_at_large_P():
    """Softmax, L=32, V=8, P=1000: the reduced MAP theory (the saddle point over d = a_1 - a_G, chapter 3) gives 0.364."""
    cfg = CopyMapConfig(
        "softmax", V=8, L=32, P_grid=(1000,), init_seeds=(0,), adam=AdamConfig(steps=2500, lr_final=1e-4)
    )
    res = fit_copy_map(cfg)
    d = np.linspace(0, 8, 80001)
    L, V, P = 32, 8, 1000
    p = 1 / (1 + (L - 1) * np.exp(-d))
    Q = L * (p**2 + (1 - p) ** 2 / (L - 1))
    eps = V * L / P
    S = (L - 1) * d**2 / 2 + P / 2 * (V - 1) / V * (1 - L * p**2 / (Q + eps))
    assert abs(res.filtered("target")[0] - p[np.argmin(S)]) < 0.01


# ------------------------------------------------------------------------------------------ metrics
def test_half_rise_point_interpolates_in_log_P():
    from lib.measures.grids import half_rise_point

    P = np.geomspace(1.0, 1000.0, 13)
    exact = P**0.5 / (P**0.5 + 10.0)  # reaches 1/2 of 1 at P = 100; the grid's largest value is 0.76
    y_max = exact.max()
    fine = np.geomspace(1.0, 1000.0, 100_001)
    truth = fine[np.argmax(fine**0.5 / (fine**0.5 + 10.0) >= y_max / 2)]
    assert abs(np.log(half_rise_point(P, exact) / truth)) < 0.1  # within 10 % on a grid of ratio 1.78
    assert half_rise_point(P, np.ones(13)) == P[0]  # already at half at the first point
    line = np.arange(1.0, 5.0)  # 1, 2, 3, 4 at P = 1, 2, 4, 8: half of 4 is reached exactly at the 2nd point
    assert half_rise_point([1.0, 2.0, 4.0, 8.0], line) == 2.0
    with pytest.raises(ValueError, match="increasing"):
        half_rise_point([1.0, 1.0, 2.0], [0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match="rise above 0"):
        half_rise_point([1.0, 2.0, 3.0], [0.0, -1.0, -2.0])


def test_jump_fraction_separates_jumps_from_ramps():
    step = np.r_[np.zeros(10), np.ones(10)]
    ramp = np.linspace(0, 1, 20)
    assert jump_fraction(step) == 1.0
    assert math.isclose(jump_fraction(ramp), 1 / 19)
    assert steepest_step(step) == 9
    with pytest.raises(ValueError, match="constant"):
        jump_fraction(np.ones(5))
    with pytest.raises(ValueError, match="non-finite"):
        jump_fraction([0.0, np.nan, 1.0])
    with pytest.raises(ValueError, match="1-D"):
        jump_fraction([1.0])


def test_grids():
    g = geometric_grid(5, 5000, 16)
    assert g[0] == 5 and g[-1] == 5000 and list(g) == sorted(set(g))
    assert refine_grid(10, 14, 21) == (10, 11, 12, 13, 14)
    for bad in [(0, 10, 5), (10, 10, 5), (10, 5, 5), (1, 10, 1), (1.5, 10, 4)]:
        with pytest.raises(ValueError):
            refine_grid(*bad)
        with pytest.raises(ValueError):
            geometric_grid(*bad)


def test_count_minima():
    values = np.array([0.04, 0.041, 0.2, 0.9])
    grads = np.array([1e-6, 1e-6, 1e-6, 1.0])  # the last run has not converged
    assert count_minima(values, grads, atol=0.02) == 2
    assert count_minima(values, np.ones(4), atol=0.02) == 0
    with pytest.raises(ValueError, match="atol"):
        count_minima(values, grads, atol=0.0)


# ------------------------------------------------------------------------------------------ transition scans
def test_scan_transition_resolves_the_softmax_jump():
    """Softmax, L=16, V=4: the coarse steepest step is refined, and the fine grid keeps the jump in one step."""
    from lib.train import scan_transition

    cfg = CopyMapConfig(
        "softmax",
        V=4,
        L=16,
        P_grid=(20, 60, 120, 240, 480),
        init_seeds=(0,),
        adam=AdamConfig(steps=1500, lr_final=1e-4),
    )
    scan = scan_transition(cfg, n_fine=9)
    lo, hi = scan.bracket
    assert lo < hi and set(scan.fine.P) <= set(range(lo, hi + 1))
    assert scan.fine.P[0] == lo and scan.fine.P[-1] == hi
    flo, fhi = scan.step()
    assert lo <= flo < fhi <= hi and lo <= scan.P_star <= hi
    assert 0 < scan.jump_fraction() <= 1 and scan.jump() > 0
    assert scan.minima().shape == scan.fine.P.shape


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(n_fine=2), ValueError, "n_fine"),
        (dict(field="entropy"), ValueError, "field"),
        (dict(atol=0.0), ValueError, "atol"),
    ],
)
def test_scan_transition_validation(kwargs, exc, match):
    from lib.train import scan_transition

    cfg = CopyMapConfig("softmax", V=4, L=6, P_grid=(10, 20))
    with pytest.raises(exc, match=match):
        scan_transition(cfg, **kwargs)
    with pytest.raises(TypeError):
        scan_transition("not a config")
    with pytest.raises(ValueError, match="at least 2"):
        scan_transition(CopyMapConfig("softmax", V=4, L=6, P_grid=(10,)))


def test_loss_drops_finds_two_drops_and_the_plateau():
    from lib.measures.grids import loss_drops

    P = np.geomspace(1, 1e4, 400)
    lnP = np.log(P)
    two = 1 - 0.1 / (1 + np.exp(-(lnP - np.log(30)) * 4)) - 0.8 / (1 + np.exp(-(lnP - np.log(3000)) * 4))
    d = loss_drops(P, two)
    assert len(d.P_peaks) == 2
    assert abs(np.log(d.P_peaks[0] / 30)) < 0.1 and abs(np.log(d.P_peaks[1] / 3000)) < 0.1
    assert d.plateau_ratio < 0.1
    one = 1 - 0.9 / (1 + np.exp(-(lnP - np.log(100))))
    assert len(loss_drops(P, one).P_peaks) == 1 and np.isnan(loss_drops(P, one).plateau_ratio)
    with pytest.raises(ValueError, match="increasing"):
        loss_drops(P[::-1], two)
    with pytest.raises(ValueError, match="min_rate"):
        loss_drops(P, two, min_rate=0)


def test_sgd_option_is_plain_gradient_descent():
    """optimizer='sgd': one step moves x by -lr * grad exactly."""
    x0 = torch.tensor([[1.0, -2.0]], dtype=f64)
    run = train_ensemble({"x": x0}, lambda p, s: (p["x"] ** 2).sum(-1), AdamConfig(lr=0.1, steps=1, optimizer="sgd"))
    assert torch.allclose(run.params["x"], x0 - 0.1 * 2 * x0)
    with pytest.raises(ValueError, match="optimizer"):
        AdamConfig(optimizer="rmsprop")


def test_weight_decay_is_decoupled_and_per_member():
    """AdamW on a loss that ignores the weights shrinks each one by exactly (1 - lr wd) per step, and wd = 0 is Adam."""
    params = {"w": torch.tensor([[1.0, -2.0], [0.5, 3.0]], dtype=torch.float64)}  # two members
    flat = lambda p, step: (p["w"] * 0.0).sum(1)  # noqa: E731  (zero gradient: only the decay moves w)
    run = train_ensemble(params, flat, AdamConfig(lr=0.1, steps=10, weight_decay=0.5))
    assert torch.allclose(run.params["w"], params["w"] * (1 - 0.1 * 0.5) ** 10)
    plain = train_ensemble(params, flat, AdamConfig(lr=0.1, steps=10))
    assert torch.equal(plain.params["w"], params["w"])
    with pytest.raises(ValueError, match="weight_decay"):
        AdamConfig(weight_decay=-1.0)
    with pytest.raises(ValueError, match="weight_decay needs optimizer='adam'"):
        AdamConfig(weight_decay=0.1, optimizer="sgd")
