"""lib.lm.report: chapter 5's tables and glued values, on synthetic analyses with known answers, on two random
GPT-NeoX models, and against the loops the chapter used to run on the committed analysis."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import lib
from lib.lm.analysis import RunPatch, SuiteAnalysis
from lib.lm.minisuite import ModelSize
from lib.lm.patching import patch_heads, register_patchable

STEPS = (0, 10, 20, 40, 80)


def _analysis(index, p_target=None, linear_index=None, sizes=("s", "l"), source="local"):
    """A SuiteAnalysis with one task ("rep"): ``index (S, R, P)`` first solved checkpoints."""
    index = np.asarray(index)[:, :, None, :]  # (S, R, T=1, P)
    S, R, _, P = index.shape
    C = len(STEPS)
    if p_target is None:
        p_target = np.zeros((S, R, 1, P, C), dtype=np.float32)
    solved = (np.arange(C) >= index[..., None]).astype(np.int8)
    lin = index if linear_index is None else np.asarray(linear_index)[:, :, None, :]
    return SuiteAnalysis(config=None, source=source, prefix="t", description="", sizes=tuple(sizes),
                         seeds=tuple(range(R)), steps=STEPS, size_info={}, tasks=("rep",), prompts={},
                         p_target=p_target, solved=solved, index=index, verified=np.ones_like(index, dtype=bool),
                         linear_index=lin, n_evaluated=np.full((S, R), C))  # fmt: skip


def test_emergence_summary_reads_medians_spread_and_the_within_run_control():
    # size s: every prompt of seed 0 at checkpoint 1 (midpoint step 5), of seed 1 at checkpoint 3 (30)
    # size l: seed 0 at checkpoint 2 (15), seed 1 never (index C: counted at the last step, 80)
    res = _analysis([[[1, 1, 1, 1], [3, 3, 3, 3]], [[2, 2, 2, 2], [5, 5, 5, 5]]])
    em = lib.emergence_summary(res)
    np.testing.assert_array_equal(em.seed_steps, [[5, 30], [15, 80]])
    np.testing.assert_array_equal(em.seed_never, [[False, False], [False, True]])
    np.testing.assert_allclose(em.spread, [6.0, 80 / 15])
    np.testing.assert_array_equal(em.lin_steps, em.seed_steps)  # a monotone scan agrees with bisection
    assert em.within_run_spread() == 1.0  # even and odd prompts of a run emerge together
    s = em.summary()
    assert s["n_never_runs"] == 1 and s["every_run"] == "Not every run" and s["n_runs"] == 4
    assert s["size_ratio"] == pytest.approx((15 + 80) / 2 / ((5 + 30) / 2))
    assert s["size_direction"].startswith("against")
    assert s["prompt_never_frac"] == pytest.approx(25.0)
    assert len(str(em).splitlines()) == 2


def test_final_solved_leaves_out_what_was_not_evaluated():
    res = _analysis([[[1, 5], [5, 5]], [[0, 0], [0, 0]]])
    res.solved[0, 1, 0, 0, -1] = -1  # not evaluated: left out, not counted as unsolved
    acc = lib.final_solved(res)["rep"]
    np.testing.assert_allclose(acc, [1 / 3, 1.0])


def test_prompt_trace_finds_the_emergence_and_the_largest_rise():
    p = np.zeros((2, 1, 1, 2, len(STEPS)), dtype=np.float32)
    p[1, 0, 0, 0] = [0.0, 0.1, 0.2, 0.9, 1.0]  # the largest rise between checkpoints 2 and 3
    p[1, 0, 0, 0, 1] = np.nan  # checkpoint 1 not evaluated: neighbours are evaluated ones
    res = _analysis([[[5, 5]], [[2, 4]]], p_target=p)
    trace = lib.prompt_trace(res, "l", 0)
    assert trace.emerges and trace.idx0 == 2
    assert (trace.prev_c, trace.jump_at) == (2, 3)
    s = trace.summary()
    assert (s["ex_old"], s["ex_new"], s["ex_jump_old"], s["ex_jump_new"]) == (10, 20, 20, 40)
    assert s["ex_jump_after"] == pytest.approx(0.9)
    never = lib.prompt_trace(res, "s", 0)
    assert not never.emerges and "ex_old" not in never.summary()
    with pytest.raises(ValueError, match="no run"):
        lib.prompt_trace(res, "xl", 0)


def test_jump_summary_a_single_jump_scores_one_and_its_shuffled_control_is_seeded():
    p = np.zeros((2, 2, 1, 3, len(STEPS)), dtype=np.float32)
    p[1, :, 0, :] = [0.0, 0.0, 1.0, 1.0, 1.0]  # every prompt of the large size: one jump at checkpoint 2
    res = _analysis([[[5, 5, 5]] * 2, [[2, 2, 2]] * 2], p_target=p, linear_index=[[[5, 5, 5]] * 2, [[2, 2, 4]] * 2])
    jumps = lib.jump_summary(res)
    assert jumps.abrupt["s"].size == 0  # no prompt of the small size emerges
    np.testing.assert_allclose(jumps.largest, 1.0)
    np.testing.assert_allclose(jumps.p_first, 1.0)
    s = jumps.summary()
    assert s["abrupt_uniform"] == pytest.approx(1 / 4) and s["ckpt_every"] == 40
    assert (s["n_nonmono"], s["n_prompt_runs"]) == (2, 12)  # one prompt per large run: scan differs from bisection
    assert jumps.null.size == 6 and np.all(jumps.null <= 1.0)
    assert lib.jump_summary(res).null.tolist() == jumps.null.tolist()  # seeded
    assert lib.jump_summary(_analysis(res.index[:, :, 0], p, source="hub")).summary()["n_nonmono"] == -1


def _patch(size, seed, order, dp, prev, induction, ks=(1, 2, 4)):
    L, H = dp.shape
    return RunPatch(size=size, seed=seed, prompts=np.arange(2), pairs=np.zeros((2, 2)), p_old=np.zeros(2),
                    p_new=np.ones(2), p_head=np.repeat(dp[..., None], 2, -1), order=order, ks=ks,
                    p_topk=np.array([[0.3, 0.3], [0.6, 0.6], [0.9, 0.9]]), prev=prev, induction=induction)  # fmt: skip


def test_patch_summary_ranks_the_largest_size_and_its_heads():
    dp = np.array([[0.1, 0.5], [0.0, 0.2]])
    prev = np.array([[0.9, 0.1], [0.2, 0.3]])
    ind = np.array([[0.1, 0.8], [0.2, 0.3]])
    res = _analysis([[[1, 1]] * 2] * 2)
    res.config = lib.lm.AnalysisConfig("x", ks=(1, 2, 4))
    res.patches = {"s/0": _patch("s", 0, [1, 3, 0, 2], dp, prev, ind * 0.5),
                   "l/0": _patch("l", 0, [1, 3, 0, 2], dp, prev, ind),
                   "l/1": _patch("l", 1, [0, 1, 3, 2], dp, prev, ind)}  # fmt: skip
    ps = lib.patch_summary(res, fallback_heads=(2, 2))
    np.testing.assert_allclose(ps.large, [[0.3, 0.6, 0.9]] * 2)
    assert ps.k2 == 1 and ps.n_heads == {"s": 4, "l": 4} and ps.heads_range == (4, 4)  # the fallback
    assert ps.top_is_ind == 1  # run l/0's top head (flat 1) has the highest induction score, l/1's (0) has not
    np.testing.assert_allclose(ps.top_ind, [0.8, 0.1])
    np.testing.assert_allclose(ps.prev_dp, [0.1, 0.1])  # the strongest previous-token head is (0, 0)
    assert ps.small_ind == pytest.approx(0.4)
    s = ps.summary()
    assert s["frac2_median"] == pytest.approx(0.6) and s["n_large_runs"] == 2 and s["large_heads"] == 4
    with pytest.raises(ValueError, match="patched"):
        lib.patch_summary(_analysis([[[1]]], sizes=("s",)), fallback_heads=(1, 1))


def _model(seed: int):
    from transformers import GPTNeoXForCausalLM

    register_patchable()
    cfg = ModelSize("t", 2, 32, 2).hf_config(64)
    cfg._attn_implementation = "patchable"
    torch.manual_seed(seed)
    return GPTNeoXForCausalLM(cfg).eval()


@pytest.fixture(scope="module")
def live_pair():
    old, new = _model(0), _model(1)
    ids = torch.randint(3, 64, (4, 17), generator=torch.Generator().manual_seed(0))
    targets = torch.randint(3, 64, (4,), generator=torch.Generator().manual_seed(1))
    return old, new, ids, targets, patch_heads(old, new, ids, targets, ks=(1, 2, 4))


def test_head_report_ranks_heads_by_their_patch_and_scores_both_checkpoints(live_pair):
    old, new, ids, _, live = live_pair
    heads = lib.head_report(old, new, live, ids)
    dp = live.dp_head.mean(-1)
    assert heads.shape == dp.shape == (2, 2)
    assert dp[heads.top[0]] == dp.max() and dp[heads.top[1]] == np.sort(dp.ravel())[-2]
    assert heads.scores["prev"][heads.prev_head] == heads.scores["prev"].max()
    assert heads.pat_old.shape == heads.pat_new.shape == (2, 4, 2, 17, 17)
    assert not np.allclose(heads.scores["prev"], heads.scores_old["prev"])  # two different models
    assert set(heads.summary()) >= {"top_head", "top_dp", "prev_head", "pair_p_old", "pair_p_new"}


def test_random_heads_patching_every_head_recovers_what_the_full_patch_does(live_pair):
    old, new, ids, targets, live = live_pair
    heads = lib.head_report(old, new, live, ids)
    every = lib.random_heads_recovery(old, ids, targets, heads.pat_new, live, n_draws=2, n_heads=4)
    np.testing.assert_allclose(every, live.fraction_recovered[-1], rtol=1e-5)  # K = 4 patches all four heads
    few = lib.random_heads_recovery(old, ids, targets, heads.pat_new, live, n_draws=3, seed=1)
    assert few.shape == (3,)
    again = lib.random_heads_recovery(old, ids, targets, heads.pat_new, live, n_draws=3, seed=1)
    np.testing.assert_array_equal(few, again)  # seeded
    with pytest.raises(ValueError, match="n_heads"):
        lib.random_heads_recovery(old, ids, targets, heads.pat_new, live, n_heads=5)


def test_suite_cpu_minutes_reads_the_index(tmp_path):
    index = tmp_path / "suite.json"
    index.write_text('{"meta": {"cpu_seconds": {"a": 60, "b": 30}}}')
    assert lib.suite_cpu_minutes(index) == 1.5
    with pytest.raises(ValueError, match="no suite index"):
        lib.suite_cpu_minutes(tmp_path / "missing.json")
    index.write_text('{"meta": {}}')
    with pytest.raises(ValueError, match="build time"):
        lib.suite_cpu_minutes(index)


def test_size_table_and_bad_input():
    res = _analysis([[[1]], [[1]]])
    res.size_info = {"s": {"n_layer": 3, "d_model": 48, "n_head": 4, "n_params": 12345}}
    assert lib.size_table(res).splitlines() == ["     s: 3 layers, d_model 48, 4 heads, 12,345 parameters",
                                                "     l: ? layers, d_model ?, ? heads, 0 parameters"]  # fmt: skip
    with pytest.raises(ValueError, match="SuiteAnalysis"):
        lib.emergence_summary(object())
