"""Attention-pattern patching: exactness of the hooked forward, own-pattern patches, batched = looped."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from lib.lm.minisuite import ModelSize
from lib.lm.patching import (
    all_single_head_logits,
    make_patchable,
    patch_heads,
    patched_last_logits,
    record_patterns,
    register_patchable,
    single_head_masks,
    topk_masks,
)


def _model(seed: int, attn: str = "patchable", parallel: bool = True):
    from transformers import GPTNeoXForCausalLM

    register_patchable()
    cfg = ModelSize("t", 3, 32, 2).hf_config(64)
    cfg.use_parallel_residual = parallel
    cfg._attn_implementation = attn
    torch.manual_seed(seed)
    return GPTNeoXForCausalLM(cfg).eval()


@pytest.fixture(scope="module")
def pair():
    return _model(0), _model(1)


@pytest.fixture(scope="module")
def ids():
    return torch.randint(3, 64, (4, 11), generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("reference", ["eager", "sdpa"])
def test_hooked_forward_equals_plain_hf_forward(pair, ids, reference):
    old, _ = pair
    plain = _model(0, reference)
    with torch.no_grad():
        a, b = old(input_ids=ids).logits, plain(input_ids=ids).logits
    assert torch.allclose(a, b, atol=1e-5, rtol=0), (a - b).abs().max()


def test_recorded_patterns_are_causal_distributions(pair, ids):
    _, pats = record_patterns(pair[0], ids)  # (L, N, H, T, T)
    assert pats.shape == (3, 4, 2, 11, 11)
    assert torch.allclose(pats.sum(-1), torch.ones(3, 4, 2, 11))
    assert (pats.triu(1) == 0).all()


def test_patching_a_head_with_its_own_pattern_changes_no_logit(pair, ids):
    old, _ = pair
    clean, own = record_patterns(old, ids)
    for mask in single_head_masks(3, 2):
        assert torch.equal(patched_last_logits(old, ids, own, mask[None])[0], clean)
    assert torch.equal(patched_last_logits(old, ids, own, torch.ones(1, 3, 2, dtype=torch.bool))[0], clean)
    fast = all_single_head_logits(old, ids, own)  # (L*H, N, V): every branch is the clean run
    assert torch.allclose(fast, clean.expand_as(fast), atol=1e-5, rtol=0)


def test_batched_patches_equal_a_loop_of_single_patches(pair, ids):
    old, new = pair
    _, donor = record_patterns(new, ids)
    masks = single_head_masks(3, 2)
    batched = patched_last_logits(old, ids, donor, masks)
    loop = torch.cat([patched_last_logits(old, ids, donor, m[None]) for m in masks])
    fast = all_single_head_logits(old, ids, donor)
    assert torch.allclose(batched, loop, atol=1e-5, rtol=0)
    assert torch.allclose(fast, loop, atol=1e-5, rtol=0)
    assert not torch.allclose(loop[0], loop[-1])  # the patches do something


def test_sequential_residual_models_fall_back_to_the_generic_path(ids):
    old, new = _model(0, parallel=False), _model(1, parallel=False)
    _, donor = record_patterns(new, ids)
    loop = torch.cat([patched_last_logits(old, ids, donor, m[None]) for m in single_head_masks(3, 2)])
    assert torch.allclose(all_single_head_logits(old, ids, donor), loop, atol=1e-5, rtol=0)


def test_patching_every_head_with_the_new_patterns_and_values_of_old(pair, ids):
    old, new = pair
    r = patch_heads(old, new, ids, ids[:, 0], ks=(1, 2, 6, 16))
    assert r.p_head.shape == (3, 2, 4) and r.p_topk.shape == (4, 4)
    assert np.allclose(r.p_topk[2], r.p_topk[3])  # k beyond L*H patches every head
    assert sorted(r.order) == list(range(6))
    looped = patch_heads(old, new, ids, ids[:, 0], ks=(1,), batched=False)
    assert np.allclose(looped.p_head, r.p_head, atol=1e-6)


def test_topk_masks_and_input_validation(pair, ids):
    m = topk_masks([5, 0, 3], 3, 2, (1, 2))
    assert m[0].flatten().tolist() == [False] * 5 + [True]
    assert m[1].flatten().nonzero().flatten().tolist() == [0, 5]
    with pytest.raises(ValueError, match="masks must be"):
        patched_last_logits(pair[0], ids, torch.zeros(3, 4, 2, 11, 11), torch.zeros(1, 2, 2, dtype=torch.bool))
    with pytest.raises(ValueError, match="input_ids must be"):
        record_patterns(pair[0], torch.zeros(11))
    plain = _model(0, "sdpa")
    with pytest.raises(ValueError, match="make_patchable"):
        record_patterns(plain, ids)
    assert record_patterns(make_patchable(plain), ids)[1].shape[0] == 3


def test_head_scores_recognise_previous_token_and_induction_patterns():
    from lib.lm.heads import head_scores

    T, period = 15, 8
    prev = torch.zeros(T, T)
    prev[0, 0] = 1
    prev[torch.arange(1, T), torch.arange(T - 1)] = 1
    ind = torch.eye(T)
    ind[torch.arange(period, T)] = 0
    ind[torch.arange(period, T), torch.arange(1, T - period + 1)] = 1
    pats = torch.stack([prev, ind])[None, None].expand(1, 3, 2, T, T)  # (L, N, H, T, T)
    s = head_scores(pats, period)
    assert np.allclose(s["prev"], [[1.0, 0.0]]) and np.allclose(s["induction"][0, 1], 1.0)
    with pytest.raises(ValueError, match="period"):
        head_scores(pats, 15)
