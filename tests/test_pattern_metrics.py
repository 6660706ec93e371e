"""lib.train.pattern_metrics and lib.train.gpt_train: attention statistics, times with censoring, a tiny run."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from lib.tasks import AutomatonTask, LinearMapTask
from lib.train import (
    GPTRunConfig,
    Member,
    attention_stats,
    first_below,
    midpoint_step,
    row_drops,
    run_members,
    spread,
    success_rate,
)


def test_attention_stats_uniform_and_exact():
    L = 6
    mask = torch.zeros(L, L)
    mask[5, [1, 3]] = 1
    mask[4, [0, 2]] = 1
    uniform = torch.tril(torch.ones(L, L)) / torch.arange(1, L + 1)[:, None]  # (L, L)
    exact = mask.clone()
    exact[4] /= 2
    exact[5] /= 2
    pattern = torch.stack([uniform, exact])[:, None, None].expand(2, 3, 1, L, L)  # (E=2, B=3, H=1, L, L)
    stats = attention_stats(pattern, mask, torch.tensor([4, 5]))
    assert stats["entropy"].shape == (2, 1, 2)
    assert np.allclose(stats["entropy"][0, 0], [math.log(5), math.log(6)])
    assert np.allclose(stats["entropy"][1, 0], [math.log(2), math.log(2)])
    assert np.allclose(stats["mass"][0, 0], [2 / 5, 2 / 6]) and np.allclose(stats["mass"][1], 1.0)
    assert np.allclose(stats["iou"][1], 1.0)


def test_iou_of_a_half_right_head():
    L = 5
    mask = torch.zeros(L, L)
    mask[4, [0, 1]] = 1
    pattern = torch.zeros(1, 1, 1, L, L)
    pattern[..., 4, :] = torch.tensor([0.5, 0.0, 0.4, 0.1, 0.0])  # top-2 keys {0, 2}: one of two right
    pattern[..., :4, 0] = 1.0
    iou = attention_stats(pattern, mask, torch.tensor([4]))["iou"]
    assert float(iou) == pytest.approx(1 / 3)  # |{0}| / |{0, 1, 2}|


def test_first_below_marks_censored_runs_inf():
    steps = np.array([0, 10, 20, 30])
    curves = np.array([[0.7, 0.7, 0.7], [0.7, 0.5, 0.7], [0.4, 0.5, 0.7], [0.3, 0.6, 0.69]])  # (K, 3)
    assert first_below(steps, curves, 0.55).tolist() == [20.0, 10.0, math.inf]
    assert success_rate(first_below(steps, curves, 0.55), budget=30) == pytest.approx(2 / 3)  # inf is a failure
    assert spread([10.0, 40.0, math.inf]) == 4.0
    assert math.isnan(spread([10.0, math.inf]))


def test_midpoint_step_and_row_drops():
    steps = np.arange(0, 100, 10)
    loss = np.full((10, 2), 0.69)
    loss[4:, 0] = 0.0  # row 0 drops at step 40, row 1 never
    entropy = np.full((10, 3, 2), 2.0)
    entropy[3:, 2, 0] = 0.5  # head 2 focuses on row 0 at step 30
    entropy[6:, 1, 1] = 1.9  # a small wiggle elsewhere
    assert midpoint_step(steps, loss).tolist() == [40.0, math.inf]
    drops = row_drops(steps, loss, entropy, threshold=0.3)
    assert drops["loss_step"].tolist() == [40.0, math.inf]
    assert drops["head"][0] == 2 and drops["entropy_step"][0] == 30.0


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: first_below([0, 1], np.zeros(3), 0.5), "steps' length"),
        (lambda: first_below([1, 0], np.zeros(2), 0.5), "increasing"),
        (lambda: first_below([0, 1], np.zeros(2), float("nan")), "threshold"),
        (lambda: success_rate([], 1), "empty"),
        (lambda: success_rate([float("nan")], 1), "NaN"),
        (lambda: attention_stats(torch.zeros(2, 3, 3), torch.zeros(3, 3), torch.tensor([1])), "pattern"),
        (lambda: attention_stats(torch.zeros(1, 1, 1, 3, 3), torch.zeros(3, 3), torch.tensor([1])), "non-empty"),
        (lambda: Member(task="map"), "task"),
        (lambda: Member(LinearMapTask(4, 2), bias=-1.0), "bias"),
        (lambda: GPTRunConfig(members=()), "members"),
        (lambda: GPTRunConfig(members=(Member(LinearMapTask(4, 2)), Member(LinearMapTask(5, 2)))), "sequence length"),
        (lambda: GPTRunConfig(members=(Member(LinearMapTask(4, 2)),), tokens_per_step=4), "tokens_per_step"),
        (lambda: GPTRunConfig(members=(Member(LinearMapTask(4, 2)),), n_heads=0), "n_heads"),
    ],
)
def test_bad_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def tiny(members, **kw):
    base = {
        "n_heads": 2,
        "d_head": 4,
        "tokens_per_step": 64,
        "steps": 40,
        "eval_every": 10,
        "eval_tokens": 128,
        "lr": 3e-3,
    }
    base.update(kw)
    return GPTRunConfig(members=tuple(members), **base)


def test_run_records_every_curve_and_members_are_independent():
    a = Member(LinearMapTask(4, 2, seed=0), seed=0)
    b = Member(LinearMapTask(4, 1, seed=1), seed=5, bias=2.0)
    both = run_members(tiny([a, b]))
    assert both.steps.tolist() == [0, 10, 20, 30, 40]
    assert both.loss.shape == (5, 2) and both.token_loss.shape == (5, 2, 4)
    assert both.entropy.shape == (5, 2, 2, 4) and both.iou.shape == (5, 2, 2, 4)
    assert np.allclose(both.pred_loss, both.token_loss.mean(-1))
    assert both.masks.shape == (2, 7, 7) and both.params["tok"].shape == (2, 2, 8)
    alone = run_members(tiny([b]))  # a member's run does not depend on its stack-mates
    assert np.allclose(alone.loss[:, 0], both.loss[:, 1], atol=1e-4)


def test_automaton_run_and_stop_below():
    task = AutomatonTask(C=2, S=4, T=3, N=1, seed=0)
    run = run_members(tiny([Member(task, seed=0, bias=30.0)], steps=400, stop_below=0.5, n_layers=2))
    assert run.token_loss.shape[-1] == 8  # predictable queries S-1 .. ST-2
    assert run.steps_run < 400 and run.pred_loss[-1, 0] < 0.5  # stopped once below the threshold
    assert run.steps_run == run.steps[-1] and run.pred_loss[-2, 0] >= 0.5  # ... at the first evaluation below it


def test_stop_below_stops_on_the_held_out_loss_only(monkeypatch):
    """A member whose training loss repeats exactly (here: every step) trains to the end; a member whose held-out
    loss falls below ``stop_below`` is frozen at that evaluation, with its parameters and curves of that moment."""
    import lib.train.gpt_train as gt

    forward = gt.gpt_forward

    def repeating(params, tokens, cfg, **kw):  # member 0 predicts uniformly whatever its weights: constant loss
        logits = forward(params, tokens, cfg, **kw)
        return torch.cat([0.0 * logits[:1], logits[1:]])

    evaluate = gt._evaluate
    calls = []

    def held_out(params, *args, **kw):  # member 1's held-out loss reads as solved from the evaluation at step 20 on
        out = evaluate(params, *args, **kw)
        calls.append(out["pred_loss"].copy())
        if len(calls) >= 3:
            out["pred_loss"][1] = 0.01
        return out

    monkeypatch.setattr(gt, "gpt_forward", repeating)
    monkeypatch.setattr(gt, "_evaluate", held_out)
    a, b = Member(LinearMapTask(4, 2, seed=0), seed=0), Member(LinearMapTask(4, 2, seed=0), seed=1)
    run = run_members(tiny([a, b], steps=60, stop_below=0.05))
    assert np.unique(run.train_loss[:, 0]).size == 1  # the online loss of member 0 never changes ...
    assert run.steps_run == 60 and run.steps.tolist() == [0, 10, 20, 30, 40, 50, 60]  # ... and it trains to the end
    assert np.allclose(run.pred_loss[2:, 1], 0.01)  # member 1: frozen at step 20, its evaluation kept
    assert np.allclose(run.loss[2:, 1], run.loss[2, 1])
    monkeypatch.undo()
    alone = run_members(tiny([b], steps=20))  # member 1 on its own, trained for exactly the 20 steps before its stop
    for name, value in run.params.items():
        assert np.allclose(value[1], alone.params[name][0], atol=1e-5), name
