"""lib.tasks.automaton: rule lookup with wrap-around, balanced tables, the 3-key mask, bad inputs."""

from __future__ import annotations

import pytest
import torch

from lib.tasks import (
    AutomatonTask,
    automaton_batch,
    automaton_mask,
    automaton_step,
    predictable_queries,
    sample_rules,
)


def rule_table(number: int) -> torch.Tensor:
    """Wolfram's elementary rule ``number`` as a C = 2 table indexed by 4 l + 2 c + r."""
    return torch.tensor([(number >> k) & 1 for k in range(8)])


def test_rule_90_by_hand_with_wrap_around():
    # rule 90: new cell = left XOR right; cell 0's left neighbour is cell S-1 (periodic)
    x = torch.tensor([[1, 0, 0, 0, 0]])
    nxt = automaton_step(x, rule_table(90)[None], 2)
    assert nxt.tolist() == [[0, 1, 0, 0, 1]]
    x = torch.tensor([[0, 0, 0, 0, 1]])
    assert automaton_step(x, rule_table(90)[None], 2).tolist() == [[1, 0, 0, 1, 0]]


def test_window_order_is_left_centre_right():
    # a table that returns the left cell: index 4l + 2c + r -> l
    left = torch.tensor([(k >> 2) & 1 for k in range(8)])
    x = torch.tensor([[1, 1, 0, 1, 0, 0]])
    assert automaton_step(x, left[None], 2).tolist() == [x.roll(1, -1).tolist()[0]]
    # three colours: a table returning the right cell
    right = torch.tensor([k % 3 for k in range(27)])
    y = torch.tensor([[2, 0, 1, 1]])
    assert automaton_step(y, right[None], 3).tolist() == [[0, 1, 1, 2]]


@pytest.mark.parametrize("C, N", [(2, 1), (2, 16), (4, 3)])
def test_balanced_tables(C, N):
    rules = sample_rules(AutomatonTask(C=C, S=5, T=2, N=N, seed=7))
    assert rules.shape == (N, C**3)
    for table in rules:
        assert torch.equal(torch.bincount(table, minlength=C), torch.full((C,), C * C))


def test_unbalanced_tables_are_in_range():
    rules = sample_rules(AutomatonTask(C=3, S=5, T=2, N=4, seed=1, balanced=False))
    assert rules.min() >= 0 and rules.max() <= 2


def test_batch_follows_its_rule():
    task = AutomatonTask(C=2, S=6, T=5, N=4, seed=3)
    rules = sample_rules(task)
    tokens, which = automaton_batch(rules, 20, 6, 5, torch.Generator().manual_seed(0), return_rules=True)
    assert tokens.shape == (20, 30) and which.shape == (20,)
    states = tokens.view(20, 5, 6)  # (n, T, S)
    for t in range(4):
        assert torch.equal(states[:, t + 1], automaton_step(states[:, t], rules[which], 2))


def test_mask_has_three_keys_one_state_back():
    S, T = 5, 3
    M = automaton_mask(S, T)
    assert M.shape == (14, 14)
    q = predictable_queries(S, T)
    assert q.tolist() == list(range(4, 14))
    assert torch.equal(M[q].sum(1), torch.full((10,), 3.0))
    assert M[:4].sum() == 0
    # query p-1 predicts cell p = (t, i): keys (t-1, i-1), (t-1, i), (t-1, i+1), wrapping inside state t-1
    p = 5  # cell (1, 0)
    assert torch.nonzero(M[p - 1]).flatten().tolist() == [0, 1, 4]
    p = 14  # cell (2, 4)
    assert torch.nonzero(M[p - 1]).flatten().tolist() == [5, 8, 9]
    assert bool((M.triu(1) == 0).all())  # causal


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: AutomatonTask(C=1), "C must be >= 2"),
        (lambda: AutomatonTask(T=1), "T must be >= 2"),
        (lambda: AutomatonTask(S=2), "S must be >= 3"),
        (lambda: AutomatonTask(N=0), "N must be >= 1"),
        (lambda: AutomatonTask(balanced=1), "balanced"),
        (lambda: sample_rules(None), "task"),
        (
            lambda: automaton_step(torch.zeros(1, 4, dtype=torch.long), torch.zeros(1, 9, dtype=torch.long), 2),
            "C\\*\\*3",
        ),
        (
            lambda: automaton_step(torch.zeros(2, 4, dtype=torch.long), torch.zeros(1, 8, dtype=torch.long), 2),
            "leading",
        ),
        (lambda: automaton_batch(torch.zeros(2, 9, dtype=torch.long), 3, 4, 2, torch.Generator()), "C\\*\\*3"),
        (lambda: automaton_batch(torch.zeros(2, 8, dtype=torch.long), 3, 4, 1, torch.Generator()), "T"),
        (lambda: automaton_mask(3, 1), "T"),
    ],
)
def test_bad_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()
