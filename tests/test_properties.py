"""Property-based checks (hypothesis) of input validation and invariants across lib."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import lib
from lib.core.cache import config_key
from lib.models import attention
from lib.tasks import CopyTask
from lib.train import AdamConfig, CopyMapConfig, copy_objective, population_loss, target_attention
from lib.measures.grids import jump_fraction

ints = st.integers(min_value=-5, max_value=40)


@settings(max_examples=60, deadline=None)
@given(V=ints, L=ints, P=ints)
def test_copy_task_accepts_exactly_the_valid_sizes(V, L, P):
    valid = V >= 2 and L >= 2 and P >= 1
    if valid:
        task = CopyTask(V=V, L=L, P=P)
        assert lib.sample_tokens(task).shape == (P, L)
    else:
        name = "V" if V < 2 else "L" if L < 2 else "P"
        with pytest.raises(ValueError, match=f"{name} must be >= "):
            CopyTask(V=V, L=L, P=P)


@settings(max_examples=30, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e3, max_value=1e3).filter(lambda x: x != int(x)))
def test_non_integer_sizes_are_rejected(x):
    with pytest.raises(ValueError, match="integer"):
        CopyTask(V=x, L=8, P=4)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(min_value=-10, max_value=10, allow_nan=False), min_size=2, max_size=30))
def test_jump_fraction_is_a_fraction(values):
    y = np.asarray(values)
    if np.all(np.diff(y) == 0):
        with pytest.raises(ValueError, match="constant"):
            jump_fraction(y)
    else:
        f = jump_fraction(y)
        assert 1 / (len(y) - 1) - 1e-12 <= f <= 1.0


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 12), st.floats(-30, 30))
def test_softmax_rows_sum_to_one_and_are_shift_invariant(L, shift):
    G = torch.randn(L, L, dtype=torch.float64, generator=torch.Generator().manual_seed(L))
    A = attention("softmax", G)
    assert torch.allclose(A.sum(-1), torch.ones(L, dtype=torch.float64))
    assert torch.allclose(attention("softmax", G + shift), A)


@settings(max_examples=25, deadline=None)
@given(st.floats(0.1, 5.0), st.floats(1e-3, 0.5), st.integers(1, 5000), st.integers(0, 99))
def test_cache_keys_are_stable_and_discriminating(T, lr, steps, seed):
    cfg = CopyMapConfig(
        "softmax",
        V=4,
        L=6,
        P_grid=(10, 20),
        data_seed=seed,
        prior=lib.CopyPrior(T=T),
        adam=AdamConfig(lr=lr, steps=steps),
    )
    same = dataclasses.replace(cfg)
    assert config_key(cfg) == config_key(same)
    assert config_key(cfg) != config_key(dataclasses.replace(cfg, data_seed=seed + 1))


@settings(max_examples=30, deadline=None)
@given(st.floats(-5, 5), st.floats(-5, 5))
def test_linear_objective_is_even_under_a_joint_sign_flip(g, w):
    counts = lib.pair_counts(lib.sample_tokens(CopyTask(V=3, L=4, P=6)), 3)
    gen = torch.Generator().manual_seed(0)
    p = {
        "G": g * torch.randn(4, 4, generator=gen, dtype=torch.float64),
        "W": w * torch.randn(3, 3, generator=gen, dtype=torch.float64),
        "beta": torch.tensor(0.3 * g, dtype=torch.float64),
    }
    flipped = {k: -v for k, v in p.items()}
    P = torch.tensor(6.0, dtype=torch.float64)
    assert torch.allclose(
        copy_objective("linear", p, counts, P, lib.CopyPrior()),
        copy_objective("linear", flipped, counts, P, lib.CopyPrior()),
    )


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: copy_objective("cubic", {}, None, None, lib.CopyPrior()), ValueError, "kind"),
        (lambda: copy_objective("softmax", {"G": torch.zeros(2, 2)}, None, None, lib.CopyPrior()), ValueError, "lacks"),
        (lambda: copy_objective("softmax", {}, None, None, {"T": 1}), TypeError, "CopyPrior"),
        (lambda: population_loss(torch.zeros(3, 4), torch.zeros(2, 2)), ValueError, "A must have shape"),
        (lambda: population_loss(torch.zeros(3, 3), torch.zeros(2, 3)), ValueError, "W must have shape"),
        (lambda: population_loss(np.zeros((3, 3)), torch.zeros(2, 2)), TypeError, "A must be a torch.Tensor"),
        (lambda: target_attention(torch.zeros(5)), ValueError, "A must have shape"),
    ],
)
def test_bad_inputs_to_objectives(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
