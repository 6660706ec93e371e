"""lib.tasks.dyck: balanced strings, the innermost-open-bracket target, the loss floor, training on them, bad inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from lib.tasks.dyck import DyckTask, dyck_batch, dyck_optimal_loss, dyck_top, is_balanced
from lib.train.gpt_train import GPTRunConfig, Member, run_members, task_parts


@pytest.mark.parametrize(
    "task", [DyckTask(), DyckTask(k=1, length=10), DyckTask(k=3, length=20, max_depth=2, p_open=0.8)]
)
def test_strings_are_balanced_and_seeded(task):
    x = dyck_batch(task, 500, torch.Generator().manual_seed(0))
    assert x.shape == (500, task.length) and x.dtype == torch.long
    assert int(x.min()) >= 0 and int(x.max()) < task.vocab
    assert bool(is_balanced(x, task.k).all())
    depth = torch.where(x < task.k, 1, -1).cumsum(1)
    assert int(depth.min()) >= 0 and int(depth.max()) <= task.depth_cap and bool((depth[:, -1] == 0).all())
    assert torch.equal(x, dyck_batch(task, 500, torch.Generator().manual_seed(0)))
    assert not torch.equal(x, dyck_batch(task, 500, torch.Generator().manual_seed(1)))


def test_both_moves_and_every_type_occur():
    x = dyck_batch(DyckTask(k=4, length=32), 2000, torch.Generator().manual_seed(0))
    counts = torch.bincount(x.flatten(), minlength=8)
    assert bool((counts > 0).all()) and counts[:4].sum() == counts[4:].sum()  # every open is closed
    assert 0.15 < counts[0] / counts[:4].sum() < 0.35  # types are uniform


def test_top_is_the_innermost_open_bracket():
    task = DyckTask(k=2, length=16)
    x = dyck_batch(task, 200, torch.Generator().manual_seed(3))
    top = dyck_top(x, 2)
    for i in range(len(x)):
        stack = []
        for t, tok in enumerate(x[i].tolist()):
            if tok < 2:
                stack.append(t)
            else:
                assert x[i, stack[-1]] == tok - 2  # the close matches its open
                stack.pop()
            assert top[i, t] == (stack[-1] if stack else -1)
    # a closing bracket's type is that of the innermost open bracket before it
    closes = (x[:, 1:] >= 2).nonzero()
    for i, t in closes.tolist():
        assert x[i, t + 1] == x[i, top[i, t]] + 2


def test_is_balanced_rejects_bad_strings():
    good = torch.tensor([[0, 1, 3, 2]])  # ( [ ] )
    bad = torch.tensor([[0, 1, 2, 3], [0, 0, 2, 0], [2, 0, 0, 2]])  # crossed, unclosed, close first
    assert is_balanced(good, 2).tolist() == [True] and is_balanced(bad, 2).tolist() == [False, False, False]


def test_optimal_loss():
    p = 0.5
    both = math.log(2) + p * math.log(4)  # open or close, then the open's type
    floor = dyck_optimal_loss(DyckTask(k=4, length=32))
    assert 0.3 * both < floor < both  # forced moves are cheaper, forced closes free
    assert dyck_optimal_loss(DyckTask(k=1, length=2)) == 0.0  # "()" : the close is forced
    assert dyck_optimal_loss(DyckTask(k=4, length=32)) == floor  # seeded


def test_trains_in_the_harness_with_nan_attention_statistics():
    task = DyckTask(k=2, length=12)
    parts = task_parts(task)
    assert not parts.has_mask and parts.queries.tolist() == list(range(11))
    run = run_members(
        GPTRunConfig(
            members=(Member(task, seed=0),),
            n_heads=2,
            d_head=4,
            tokens_per_step=96,
            steps=60,
            eval_every=20,
            eval_tokens=240,
            lr=1e-2,
        )
    )
    assert run.token_loss.shape == (4, 1, 11) and np.isnan(run.entropy).all()
    assert run.pred_loss[-1, 0] < run.pred_loss[0, 0] - 0.2  # learns something (the start is ln 4 = 1.39)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: DyckTask(k=0), "k"),
        (lambda: DyckTask(length=7), "length"),
        (lambda: DyckTask(length=0), "length"),
        (lambda: DyckTask(p_open=1.0), "p_open"),
        (lambda: DyckTask(max_depth=0), "max_depth"),
        (lambda: dyck_batch(DyckTask(), 0, torch.Generator()), "n"),
        (lambda: dyck_batch("dyck", 2, torch.Generator()), "task"),
        (lambda: dyck_top(torch.tensor([[2, 0]]), 2), "balanced"),
    ],
)
def test_bad_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()
