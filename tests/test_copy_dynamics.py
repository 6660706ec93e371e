"""lib.train.copy_dynamics: many single training runs of the copy head, recorded along the way."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lib.train import AdamConfig
from lib.train.copy_dynamics import CopyDynamicsConfig, _emergence, train_copy_dynamics


def small(**kw):
    base = dict(kind="softmax", V=4, L=6, P_grid=(5, 200), seeds=(0, 1, 2), batch_size=8, threshold=0.4,
                record_every=10, adam=AdamConfig(lr=0.05, steps=300))
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
    ref = fit_copy_map(CopyMapConfig("softmax", V=4, L=6, P_grid=(50,), init_seeds=(0,), copy_init=False,
                                     adam=AdamConfig(lr=0.05, steps=200, lr_final=1e-4)), cache=False)
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
