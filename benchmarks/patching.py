"""All single-head attention patches of one model: one batched forward (lib.lm.all_single_head_logits) vs a loop.

Paper B's patching measures Δp(l, h) for one prompt at a time: for every prompt and every head, run the old
checkpoint with that head's attention pattern taken from the new checkpoint. The loop below does exactly that, one
patched forward per (head, prompt) pair, through the same patchable attention. The batched path computes all
L·H·N patches in one call: it runs the clean model once, branches each head's patch off where it happens (the
patched layer's output is the clean output plus that head's correction; earlier layers are shared) and carries all
branches through the later layers as one batch. Both give the same logits (checked).

Model: the chapter's committed checkpoint pair (the mini-suite's largest size, 3 layers × 4 heads) when present,
otherwise two randomly initialised models of that architecture; prompts: the 32 string-repetition prompts.

    python benchmarks/patching.py [--repeats 3]

The second-to-last line also reports the ratio against a loop of per-head forwards batched over the prompts.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib.lm import (  # noqa: E402
    BPE_PAIR,
    MINISUITE,
    LocalSuite,
    all_single_head_logits,
    build_prompts,
    build_tokenizer,
    patched_last_logits,
    record_patterns,
    register_patchable,
    single_head_masks,
)


def models():
    """``(old, new, prompts, what)``: the committed BPE checkpoint pair and its string-repetition prompts, or two
    random-init word-level models and the word-level prompts."""
    if (BPE_PAIR / "suite.json").is_file():
        pair = LocalSuite(BPE_PAIR)
        size, seed = pair.sizes[0], pair.seeds[0]
        old, new = (pair.load_model(size, seed, s) for s in pair.steps)
        prompts = build_prompts("rep", pair.load_tokenizer(), n=32, seed=0)
        return old, new, prompts, f"committed pair {pair.name(size, seed)} steps {pair.steps}"
    from lib.lm.prompts import make_prompts
    from transformers import GPTNeoXForCausalLM

    register_patchable()
    tok = build_tokenizer(MINISUITE.vocab)
    cfg = MINISUITE.sizes[-1].hf_config(len(tok.get_vocab()))
    cfg._attn_implementation = "patchable"
    out = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        out.append(GPTNeoXForCausalLM(cfg).eval())
    size = MINISUITE.sizes[-1]
    return (
        out[0],
        out[1],
        make_prompts("rep", tok, n=32, seed=0),
        f"random-init {size.name} ({size.n_layer}L/{size.d_model}/{size.n_head}H)",
    )


def best_of(fn, repeats):
    best, value = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t0)
    return best, value


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    old, new, ps, what = models()
    ids = torch.as_tensor(ps.input_ids)  # (N, T)
    _, donor = record_patterns(new, ids)  # (L, N, H, T, T)
    L, N, H = donor.shape[:3]
    masks = single_head_masks(L, H)  # (L*H, L, H)

    def loop_per_pair():
        return torch.stack(
            [
                torch.cat([patched_last_logits(old, ids[n : n + 1], donor[:, n : n + 1], m[None])[0] for n in range(N)])
                for m in masks
            ]
        )  # (L*H, N, V)

    def loop_per_head():
        return torch.cat([patched_last_logits(old, ids, donor, m[None]) for m in masks])  # (L*H, N, V)

    t_batched, batched = best_of(lambda: all_single_head_logits(old, ids, donor), args.repeats)
    t_pair, looped = best_of(loop_per_pair, args.repeats)
    t_head, looped_head = best_of(loop_per_head, args.repeats)
    err = max((batched - looped).abs().max().item(), (looped_head - looped).abs().max().item())
    assert err < 1e-4, f"batched and looped patches disagree by {err:.2e}"
    print(f"model: {what}; {L} layers x {H} heads, {N} prompts of {ids.shape[1]} tokens; max |Δlogit| {err:.1e}")
    print(f"  loop, one forward per (head, prompt): {t_pair * 1e3:8.1f} ms for {L * H * N} patches")
    print(f"  loop, one forward per head (prompts batched): {t_head * 1e3:8.1f} ms")
    print(f"  batched, all patches in one call: {t_batched * 1e3:8.1f} ms")
    print(f"ratio against the per-head loop: {t_head / t_batched:.1f}")
    print(f"ratio={t_pair / t_batched:.1f}")


if __name__ == "__main__":
    main()
