"""lib.tasks: the copy task's data, shift matrix and sufficient statistics."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lib.tasks import (
    CopyTask,
    copy_batch,
    encode,
    nested_pair_counts,
    pair_counts,
    population_counts,
    sample_tokens,
    shift_matrix,
)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(V=1, L=8, P=4), "V"),
        (dict(V=0, L=8, P=4), "V"),
        (dict(V=4, L=1, P=4), "L"),
        (dict(V=4, L=8, P=0), "P"),
        (dict(V=4, L=8, P=-3), "P"),
        (dict(V=4.0, L=8, P=4), "V"),
        (dict(V=4, L=8.5, P=4), "L"),
        (dict(V=4, L=8, P="10"), "P"),
        (dict(V=True, L=8, P=4), "V"),
        (dict(V=4, L=8, P=4, seed=-1), "seed"),
    ],
)
def test_copy_task_rejects_bad_sizes(kwargs, name):
    with pytest.raises(ValueError, match=name):
        CopyTask(**kwargs)


def test_copy_task_accepts_numpy_ints():
    task = CopyTask(V=np.int64(4), L=np.int32(8), P=np.int64(3))
    assert sample_tokens(task).shape == (3, 8)


def test_shift_matrix_is_a_cyclic_permutation():
    S = shift_matrix(6)
    assert torch.equal(S.sum(0), torch.ones(6, dtype=S.dtype)) and torch.equal(S.sum(1), torch.ones(6, dtype=S.dtype))
    for i in range(6):
        assert S[i, (i - 1) % 6] == 1
    assert torch.equal(torch.linalg.matrix_power(S, 6), torch.eye(6, dtype=S.dtype))


def test_targets_are_the_previous_token():
    tokens = sample_tokens(CopyTask(V=5, L=7, P=4, seed=1))
    X, Y = copy_batch(tokens, 5)
    assert X.shape == Y.shape == (4, 7, 5)
    assert torch.equal(Y.argmax(-1), torch.roll(tokens, 1, dims=1))
    assert torch.equal(Y, torch.einsum("ij,pjv->piv", shift_matrix(7), X))  # Y = S X


def test_tokens_are_seeded_and_nested():
    a = sample_tokens(CopyTask(V=6, L=9, P=50, seed=3))
    b = sample_tokens(CopyTask(V=6, L=9, P=20, seed=3))
    c = sample_tokens(CopyTask(V=6, L=9, P=20, seed=4))
    assert torch.equal(a[:20], b)
    assert not torch.equal(b, c)
    assert int(a.min()) >= 0 and int(a.max()) < 6


def test_encode_rejects_out_of_range_tokens():
    with pytest.raises(ValueError, match="token ids"):
        encode(torch.tensor([[0, 5]]), 5)
    with pytest.raises(ValueError, match="integer"):
        encode(torch.tensor([[0.0, 1.0]]), 5)


def test_pair_counts_match_brute_force():
    tokens = sample_tokens(CopyTask(V=3, L=4, P=25, seed=0))
    N = pair_counts(tokens, 3)
    brute = torch.zeros(4, 4, 3, 3, dtype=torch.float64)
    for seq in tokens:
        for j in range(4):
            for k in range(4):
                brute[j, k, seq[j], seq[k]] += 1
    assert torch.equal(N, brute)
    # every (j, k) slice counts every sequence once; diagonal slices are diagonal matrices
    assert torch.equal(N.sum((-1, -2)), torch.full((4, 4), 25.0, dtype=torch.float64))
    for j in range(4):
        assert torch.equal(N[j, j], torch.diag(torch.diagonal(N[j, j])))


def test_nested_pair_counts_are_prefix_counts():
    tokens = sample_tokens(CopyTask(V=4, L=5, P=40, seed=2))
    grid = (40, 3, 17)
    stacked = nested_pair_counts(tokens, 4, grid)
    for i, p in enumerate(grid):
        assert torch.equal(stacked[i], pair_counts(tokens[:p], 4))
    with pytest.raises(ValueError, match="asks for"):
        nested_pair_counts(tokens, 4, (41,))
    with pytest.raises(ValueError, match="empty"):
        nested_pair_counts(tokens, 4, ())


def test_population_counts_are_the_expected_counts():
    L, V, P = 4, 3, 60_000
    tokens = sample_tokens(CopyTask(V=V, L=L, P=P, seed=5))
    empirical = pair_counts(tokens, V) / P
    expected = population_counts(L, V)
    assert torch.allclose(empirical, expected, atol=0.01)
    assert torch.allclose(expected.sum((-1, -2)), torch.ones(L, L, dtype=torch.float64))
