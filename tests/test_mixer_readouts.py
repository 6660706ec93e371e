"""Chapter 7's readouts: the causality probe, the key share, per-group time ratios, the halves control and the
pre-pretraining speed-ups, each checked against its closed form or the loop it replaces."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import lib


def _run(cross, steps=np.arange(0, 101, 10)):
    """Curves (K, groups*seeds) that drop from 1 to 0 at the given steps (inf: never)."""
    cols = [np.where(steps >= c, 0.0, 1.0) for c in cross]
    return SimpleNamespace(steps=steps, pred_loss=np.stack(cols, 1))


def _probe(mixer):
    cfg = lib.GPTConfig(vocab=2, n_ctx=7, n_heads=2, d_head=4, mixer=mixer, d_state=4, init_std=0.3)
    tokens = torch.randint(0, 2, (4, 7), generator=torch.Generator().manual_seed(0))
    return lib.models.init_gpt_params(cfg, (0, 1)), cfg, tokens


@pytest.mark.parametrize("mixer", ["attention", "mlp_mixer", "mamba", "linear_rnn"])
def test_a_causal_mixer_does_not_leak(mixer):
    assert lib.future_token_leak(*_probe(mixer)) < 1e-5


def test_the_unmasked_mixer_leaks_and_the_probe_is_the_flip_it_describes():
    params, cfg, tokens = _probe("mlp_mixer_unmasked")
    leak = lib.future_token_leak(params, cfg, tokens)
    flipped = tokens.clone()
    flipped[:, -1] ^= 1
    direct = (lib.models.gpt_forward(params, flipped, cfg) - lib.models.gpt_forward(params, tokens, cfg))[:, :, :-1]
    assert leak > 1e-3
    assert leak == pytest.approx(float(direct.abs().max()))


def test_future_token_leak_rejects_bad_input():
    params, cfg, tokens = _probe("attention")
    with pytest.raises(ValueError, match="binary"):
        lib.future_token_leak(params, lib.GPTConfig(vocab=3, n_ctx=7, n_heads=2, d_head=4), tokens)
    with pytest.raises(ValueError, match="tokens"):
        lib.future_token_leak(params, cfg, tokens[:, :1])
    with pytest.raises(ValueError, match="tokens"):
        lib.future_token_leak(params, cfg, torch.zeros(4, 9, dtype=torch.long))


def test_key_share_is_one_on_the_support_and_the_key_fraction_when_uniform():
    A = np.array([[1, 1, 0], [0, 1, 0], [1, 0, 1]])
    exact = np.concatenate([A, np.zeros((3, 2))], 1)  # (S, 2S-1): nothing on the earlier output bits
    assert lib.key_share(exact, A) == pytest.approx(1.0)
    uniform = np.ones((3, 5))
    assert lib.key_share(uniform, A) == pytest.approx(np.mean(A.sum(1) / 5))
    assert lib.key_share(np.zeros((3, 5)), A) == 0.0  # a model that reads nothing
    with pytest.raises(ValueError, match="support"):
        lib.key_share(uniform, A[:2])
    with pytest.raises(ValueError, match="non-negative"):
        lib.key_share(-uniform, A)


def test_group_time_ratios_are_the_terms_of_curve_time_ratio():
    slow = _run([80, 80, np.inf, np.inf, 40, 60])  # three groups of two seeds; group 1 never leaves
    fast = _run([20, 20, 10, 10, np.inf, np.inf])  # group 2 never leaves: no term
    terms = lib.group_time_ratios(slow, fast, 3, 0.5, 100)
    assert terms == [(0, 4.0, False), (1, 10.0, True)]  # the slow curve of group 1 counts at the budget
    geo = math.exp(np.mean([math.log(r) for _, r, _ in terms]))
    assert geo == pytest.approx(lib.curve_time_ratio(slow, fast, 3, 0.5, 100))
    assert lib.group_time_ratios(slow, _run([np.inf] * 6), 3, 0.5, 100) == []
    with pytest.raises(ValueError, match="n_groups"):
        lib.group_time_ratios(slow, fast, 4, 0.5, 100)


def test_halves_time_ratio_is_the_even_against_odd_loop():
    rng = np.random.default_rng(1)
    cross = rng.choice([10, 20, 30, 50, 70, np.inf], size=(3, 4))  # three groups of four seeds
    run = _run(cross.ravel())
    budget, logs = 100, []
    for g in range(3):
        loss = run.pred_loss[:, 4 * g : 4 * g + 4]
        halves = [min(float(lib.first_below(run.steps, loss[:, k::2].mean(1), 0.4)), budget) for k in (0, 1)]
        logs.append(math.log(halves[0] / halves[1]))
    value = lib.halves_time_ratio(run, 3, 0.4, budget)
    assert value == pytest.approx(math.exp(abs(np.mean(logs))))
    assert value >= 1.0
    assert lib.halves_time_ratio(_run([30, 30, 60, 60]), 2, 0.5, budget) == 1.0  # identical halves
    with pytest.raises(ValueError, match="two seeds"):
        lib.halves_time_ratio(_run([30, 40]), 2, 0.5, budget)


def _times(rng, n_seeds=3):
    values = rng.choice([50.0, 100.0, 200.0, 400.0, np.inf], size=(len(lib.PRE_VARIANTS) + 1, n_seeds))
    values[0, 0] = np.inf  # a scratch run that never leaves counts at the budget
    return values


def test_prepretrain_speedups_equal_the_paired_loop():
    rng = np.random.default_rng(0)
    times = {"linear map": _times(rng), "automaton": _times(rng)}
    budgets = {"linear map": 300, "automaton": 250}
    pre = lib.prepretrain_speedups(times, budgets, lib.PRE_VARIANTS)
    expect, paired = {}, {}
    for task, t in times.items():
        cap = budgets[task]
        base = np.minimum(t[0], cap)
        for v, (name, corpus, _) in enumerate(lib.PRE_VARIANTS[1:], start=1):
            expect[task, name] = float(np.exp(np.mean(np.log(base / np.minimum(t[v], cap)))))
            if not (corpus == "automaton" and task == "automaton"):
                paired[task, name] = base / np.minimum(t[v], cap)
        np.testing.assert_array_equal(pre.null[task], base / np.minimum(t[-1], cap))
    assert pre.speedup == expect and list(pre.speedup) == list(expect)  # same values, same order
    assert list(pre.paired) == list(paired)
    for key in paired:
        np.testing.assert_array_equal(pre.paired[key], paired[key])
    key = max(expect, key=expect.get)
    assert pre.best() == (key, expect[key])
    assert pre.best_from("linear map", "Dyck") == max(
        expect["linear map", "Dyck, full"], expect["linear map", "Dyck, attention"]
    )
    pairs = [(t, c) for t in times for c in ("Dyck", "automaton")]
    wins = sum(expect[t, f"{c}, attention"] > expect[t, f"{c}, full"] for t, c in pairs)
    assert pre.attention_wins() == (wins, len(pairs))
    assert pre.count(1.2) == (sum(v >= 1.2 for v in expect.values()), sum(v <= 1 / 1.2 for v in expect.values()))
    assert str(pre).count("\n") == len(expect) - 1


def test_a_variant_identical_to_scratch_has_no_speedup():
    t = np.tile(np.array([[100.0, 150.0, np.inf]]), (len(lib.PRE_VARIANTS) + 1, 1))
    pre = lib.prepretrain_speedups({"linear map": t}, {"linear map": 200}, lib.PRE_VARIANTS)
    assert all(v == 1.0 for v in pre.speedup.values())
    assert pre.count(1.2) == (0, 0)


def test_prepretrain_speedups_reject_bad_input():
    t = np.ones((len(lib.PRE_VARIANTS) + 1, 3))
    with pytest.raises(ValueError, match="variants"):
        lib.prepretrain_speedups({"linear map": t[1:]}, {"linear map": 10}, lib.PRE_VARIANTS)
    with pytest.raises(ValueError, match="budget"):
        lib.prepretrain_speedups({"linear map": t}, {}, lib.PRE_VARIANTS)
    with pytest.raises(ValueError, match="scratch"):
        lib.prepretrain_speedups({"linear map": t}, {"linear map": 10}, lib.PRE_VARIANTS[1:])
    pre = lib.prepretrain_speedups({"linear map": t}, {"linear map": 10}, lib.PRE_VARIANTS)
    with pytest.raises(ValueError, match="factor"):
        pre.count(1.0)
