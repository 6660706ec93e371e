"""One batched ensemble of tiny GPTs (lib.train.train_gpt's stacked forward) vs a Python loop over the same models.

Chapter 6's seed experiment: ``E`` one-layer GPTs (d_model 32, 8 heads of size 4) on the same sparse linear map
(S = 8, s = 2), each with its own seed (initialisation and data stream), trained online with Adam. (a) one stacked
run of all ``E`` members; (b) ``E`` runs of one member each. Every member's recorded held-out losses must agree
between the two (checked); the ratio is time(b) / time(a), in process CPU time (the machine is shared).

Each member's step is a few hundred small matrix products: the stack saves the per-op Python and dispatch overhead
but not the arithmetic, so the gain is modest at the chapter's size and larger for smaller batches (``--tokens``).
Measured here (torch 2.13, one thread, shared 2-core machine): ratio 1.33 at 512 tokens/step, 2.41 at 128; the
stacked losses equal the looped ones exactly (each member's matrices are separate slices of the batched kernels).

    python benchmarks/gpt_ensemble.py [--members 8] [--steps 150] [--tokens 512]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("BOOK_PROGRESS", "0")
from lib.tasks import LinearMapTask
from lib.train import GPTRunConfig, Member, run_members


def measure(members: int = 8, steps: int = 150, tokens: int = 512) -> dict:
    """Time the stacked run and the loop of the same GPTs; check they agree. Returns times and the max difference."""
    torch.set_num_threads(1)
    task = LinearMapTask(8, 2, seed=9)

    def config(seeds):
        members_ = tuple(Member(task, seed=s) for s in seeds)
        return GPTRunConfig(
            members=members_, n_heads=8, d_head=4, tokens_per_step=tokens, steps=steps, eval_every=50, eval_tokens=1024
        )

    seeds = list(range(members))
    run_members(config(seeds[:1]))  # warm-up (allocator, lazy imports)

    t0 = time.process_time()
    stacked = run_members(config(seeds))
    t_stack = time.process_time() - t0

    t0 = time.process_time()
    looped = [run_members(config([s])) for s in seeds]
    t_loop = time.process_time() - t0

    loop_loss = np.stack([r.loss[:, 0] for r in looped], 1)  # (K, E)
    diff = float(np.abs(stacked.loss - loop_loss).max())
    assert np.allclose(stacked.loss, loop_loss, atol=1e-4), diff
    return {"stack": t_stack, "loop": t_loop, "diff": diff}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--members", type=int, default=8)
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--tokens", type=int, default=512)
    args = parser.parse_args()
    m = measure(args.members, args.steps, args.tokens)
    print(
        f"   loop: {m['loop']:.2f} s CPU for {args.members} GPTs ({args.steps} Adam steps, {args.tokens} tokens each)"
    )
    print(f"stacked: {m['stack']:.2f} s CPU for the same {args.members} GPTs")
    print(f"max |loss difference| between the two: {m['diff']:.1e}")
    print(f"ratio={m['loop'] / m['stack']:.2f}")


if __name__ == "__main__":
    main()
