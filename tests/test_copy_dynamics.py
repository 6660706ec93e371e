"""lib.train.copy_dynamics: many single training runs of the copy head, recorded along the way."""

from __future__ import annotations

import numpy as np
import pytest

from lib.train import AdamConfig
from lib.train.copy_dynamics import CopyDynamicsConfig, _emergence, train_copy_dynamics


def small(**kw):
    base = dict(
        kind="softmax",
        V=4,
        L=6,
        P_grid=(5, 200),
        seeds=(0, 1, 2),
        batch_size=8,
        threshold=0.4,
        record_every=10,
        adam=AdamConfig(lr=0.05, steps=300),
    )
    base.update(kw)
    return CopyDynamicsConfig(**base)


def test_runs_are_seeded_shaped_and_learn_with_enough_data():
    a = train_copy_dynamics(small(), cache=False)
    b = train_copy_dynamics(small(), cache=False)
    assert np.array_equal(a.target, b.target)
    assert a.target.shape == (2, 3, 30) and a.emergence.shape == (2, 3) and a.steps[1] == 10
    assert not a.emerged[0].any() and a.emerged[1].all()  # P = 5: no copy; P = 200: copy
    assert (a.final_target[1] > 0.4).all()
    # emergence = first record at or above the threshold
    i = int(np.argmax(a.target[1, 0] >= 0.4))
    assert a.emergence[1, 0] == a.steps[i]


def test_full_batch_and_several_heads():
    res = train_copy_dynamics(small(batch_size=None, heads=3, P_grid=(200,), seeds=(0,)), cache=False)
    assert res.target.shape == (1, 1, 30) and res.emerged.all()


def test_full_batch_gradient_is_the_map_objective_gradient():
    """With batch_size=None and one head, the dynamics follow the same objective as lib.train.fit_copy_map."""
    from lib.train import CopyMapConfig, fit_copy_map

    cfg = small(batch_size=None, P_grid=(50,), seeds=(0,), adam=AdamConfig(lr=0.05, steps=200, lr_final=1e-4))
    dyn = train_copy_dynamics(cfg, cache=False)
    ref = fit_copy_map(
        CopyMapConfig(
            "softmax",
            V=4,
            L=6,
            P_grid=(50,),
            init_seeds=(0,),
            copy_init=False,
            adam=AdamConfig(lr=0.05, steps=200, lr_final=1e-4),
        ),
        cache=False,
    )
    # same initial parameters, same optimiser, same objective: the same trajectory
    assert abs(dyn.final_target[0, 0] - ref.filtered("target")[0]) < 1e-8


def test_emergence_helper_censors_runs_that_never_arrive():
    steps = np.array([0, 10, 20])
    got = _emergence(np.array([[0.1, 0.5, 0.6], [0.1, 0.2, 0.3]]), steps, 0.4)
    assert got[0] == 10 and np.isnan(got[1])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(seeds=()), "seeds"),
        (dict(seeds=(1, 1)), "seeds"),
        (dict(heads=0), "heads"),
        (dict(batch_size=0), "batch_size"),
        (dict(threshold=1.5), "threshold"),
        (dict(record_every=0), "record_every"),
        (dict(kind="gelu"), "kind"),
    ],
)
def test_config_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        small(**kwargs)


# ------------------------------------------------------------------ the measures chapter 8 reads off a set of runs
from lib.train.copy_dynamics import CopyDynamicsResult, size_grid, train_copy_heads  # noqa: E402


def test_size_grid_rounds_sorts_dedups_and_floors():
    assert size_grid(100.0, (1.2, 0.5, 1.0, 1.004)) == (50, 100, 120)  # 1.0 and 1.004 give one size
    assert size_grid(3.2, (0.1, 0.5, 1.0)) == (1, 2, 3)  # rounds to 0 -> the minimum
    assert size_grid(3.2, (0.1, 1.0), minimum=2) == (2, 3)
    # the expression chapter 8 used to type at each grid
    P1 = 7.3
    f = (0.25, 0.5, 0.75, 0.9, 1.0, 1.15, 1.3, 1.6, 2.0, 3.0, 4.0)
    assert size_grid(P1, f) == tuple(sorted({max(1, int(round(x * P1))) for x in f}))


@pytest.mark.parametrize("args", [(0.0, (1.0,)), (float("nan"), (1.0,)), (10.0, ()), (10.0, (0.0,)), (10.0, (-1.0,))])
def test_size_grid_rejects_bad_input(args):
    with pytest.raises(ValueError):
        size_grid(*args)


def _result(emergence, steps=100):
    emergence = np.asarray(emergence, dtype=float)
    n_P, n_S = emergence.shape
    cfg = small(P_grid=tuple(range(5, 5 + n_P)), seeds=tuple(range(n_S)), adam=AdamConfig(lr=0.05, steps=steps))
    return CopyDynamicsResult(
        config=cfg,
        P=np.array(cfg.P_grid),
        seeds=np.arange(n_S),
        steps=np.arange(10) * 10,
        target=np.zeros((n_P, n_S, 10)),
        loss=np.zeros((n_P, n_S, 10)),
        emergence=emergence,
        final_target=np.zeros((n_P, n_S)),
    )


def test_emergence_statistics_leave_censored_runs_out():
    nan = np.nan
    res = _result([[10, 20, 30, nan], [nan, nan, nan, nan], [40, nan, 40, 40]])
    assert np.allclose(res.median_emergence[[0, 2]], [20, 40]) and np.isnan(res.median_emergence[1])
    cv = res.emergence_cv("seeds")
    assert np.isclose(cv[0], np.std([10, 20, 30]) / 20) and np.isnan(cv[1]) and cv[2] == 0  # equal steps: no spread
    # across sizes, per seed: seed 0 has (10, 40), seed 1 only one run that emerged
    across = res.emergence_cv("sizes")
    assert np.isclose(across[0], np.std([10, 40]) / 25) and np.isnan(across[1])
    assert np.array_equal(res.censored_at_budget()[1], [100.0] * 4)
    assert np.array_equal(res.censored_at_budget()[0], [10, 20, 30, 100])
    lines = res.emergence_table().splitlines()
    assert len(lines) == 3 and "emerged  75%" in lines[0] and "median step     20" in lines[0]
    with pytest.raises(ValueError, match="across"):
        res.emergence_cv("steps")


def test_emergence_cv_is_scale_free():
    """Multiplying every step by a constant leaves the coefficient of variation unchanged."""
    e = np.array([[12.0, 30.0, 55.0], [5.0, np.nan, 9.0]])
    assert np.allclose(_result(e).emergence_cv(), _result(7 * e).emergence_cv(), equal_nan=True)


def test_train_copy_heads_equals_the_loop_it_replaces():
    from dataclasses import replace

    cfg = small(P_grid=(200,), seeds=(0, 1), adam=AdamConfig(lr=0.05, steps=60))
    got = train_copy_heads(cfg, (1, 2))
    for H in (1, 2):
        want = train_copy_dynamics(replace(cfg, heads=H), cache=False)
        assert got[H].config.heads == H and np.array_equal(got[H].target, want.target)
    with pytest.raises(ValueError, match="heads"):
        train_copy_heads(cfg, (1, 1))
    with pytest.raises(ValueError, match="heads"):
        train_copy_heads(cfg, (0,))
    with pytest.raises(TypeError):
        train_copy_heads("cfg", (1,))
