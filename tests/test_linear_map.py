"""lib.tasks.linear_map: x1 = A x0 mod 2 with s ones per row, its ground-truth mask, bad inputs."""

from __future__ import annotations

import math

import pytest
import torch

from lib.tasks import (
    LinearMapTask,
    linear_map_batch,
    linear_map_mask,
    linear_map_step,
    output_queries,
    sample_map,
)
from lib.tasks.linear_map import copy_loss, solved_loss


def test_hand_worked_mod2():
    A = torch.tensor([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    x0 = torch.tensor([[1, 1, 0], [1, 1, 1], [0, 0, 1]])
    # row 0: x0+x1, row 1: x1+x2, row 2: x0+x2 (mod 2)
    expected = torch.tensor([[0, 1, 1], [0, 0, 0], [0, 1, 1]])
    assert torch.equal(linear_map_step(A, x0), expected)


@pytest.mark.parametrize("S, s", [(2, 1), (8, 3), (16, 7), (16, 16), (5, 5)])
def test_map_has_s_ones_per_row(S, s):
    A = sample_map(LinearMapTask(S, s, seed=3))
    assert A.shape == (S, S) and A.dtype == torch.long
    assert torch.equal(A.sum(1), torch.full((S,), s))
    assert torch.equal(sample_map(LinearMapTask(S, s, seed=3)), A)  # seeded


def test_maps_differ_across_seeds():
    assert not torch.equal(sample_map(LinearMapTask(16, 3, seed=0)), sample_map(LinearMapTask(16, 3, seed=1)))


def test_batch_is_x0_then_map():
    task = LinearMapTask(6, 2, seed=1)
    A = sample_map(task)
    tokens = linear_map_batch(A, 50, torch.Generator().manual_seed(0))
    assert tokens.shape == (50, 12) and set(tokens.unique().tolist()) <= {0, 1}
    x0, x1 = tokens[:, :6], tokens[:, 6:]
    for n in range(50):  # the map bit by bit
        for i in range(6):
            assert int(x1[n, i]) == int(sum(int(x0[n, j]) for j in range(6) if A[i, j])) % 2


def test_mask_rows_are_the_supports_at_the_predicting_queries():
    task = LinearMapTask(8, 3, seed=2)
    A = sample_map(task)
    M = linear_map_mask(A)
    assert M.shape == (15, 15)
    q = output_queries(8)
    assert q.tolist() == list(range(7, 15))
    assert torch.equal(M[q].sum(1), torch.full((8,), 3.0))  # s ones per predicting row
    assert torch.equal(M[q, :8], A.float())  # query S-1+i holds row i, keys are input bits
    assert M[:7].sum() == 0 and M[:, 8:].sum() == 0
    assert bool((M.triu(1) == 0).all())  # every needed key is visible to its causal query


def test_stacked_masks_keep_leading_axes():
    A = torch.stack([sample_map(LinearMapTask(4, s, seed=0)) for s in (1, 2, 4)])
    assert linear_map_mask(A).shape == (3, 7, 7)


def test_floors():
    assert solved_loss(16) == pytest.approx(15 / 31 * math.log(2))
    assert round(solved_loss(16), 3) == 0.335 and round(solved_loss(8), 3) == 0.323
    assert copy_loss(16) == pytest.approx(16 / 31 * math.log(2))


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: LinearMapTask(8, 9), "s must be <= S"),
        (lambda: LinearMapTask(8, 0), "s must be >= 1"),
        (lambda: LinearMapTask(1, 1), "S must be >= 2"),
        (lambda: LinearMapTask(8, 2.0), "s must be an integer"),
        (lambda: LinearMapTask(8, 2, seed=-1), "seed"),
        (lambda: sample_map("A"), "task"),
        (lambda: linear_map_step(torch.ones(3, 4), torch.ones(2, 4)), "A must be"),
        (lambda: linear_map_step(2 * torch.eye(3), torch.ones(2, 3)), "zeros and ones"),
        (lambda: linear_map_step(torch.eye(3), torch.ones(2, 4)), "x0 must end"),
        (lambda: linear_map_batch(torch.eye(3), 0, torch.Generator()), "n must be"),
        (lambda: output_queries(1), "S"),
    ],
)
def test_bad_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("S, s", [(8, 2), (8, 3), (8, 7), (16, 3)])
def test_distinct_rows(S, s):
    A = sample_map(LinearMapTask(S, s, seed=0, distinct=True))
    assert torch.unique(A, dim=0).shape[0] == S
    assert torch.equal(A.sum(1), torch.full((S,), s))


def test_distinct_needs_enough_supports():
    with pytest.raises(ValueError, match="distinct"):
        LinearMapTask(8, 8, distinct=True)
    with pytest.raises(ValueError, match="distinct must be a bool"):
        LinearMapTask(8, 2, distinct=1)
