"""A Python loop over models vs one batched ensemble (lib.train.train_ensemble), for chapter 1's copy heads.

The same 48 MAP fits (12 training-set sizes x 4 initialisations, softmax, L = 32, V = 8, sufficient statistics),
run (a) one model at a time and (b) stacked along a member axis as one computation. Both give the same parameters
(checked); the ratio is time(a) / time(b). Each model's step is small (L^2 V^2 = 65k multiply-adds), so per-op
overhead dominates and batching pays; for FLOP-bound models on these two cores it need not (measure first).

    python benchmarks/ensemble_batching.py [--steps 300]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib.train import AdamConfig, CopyMapConfig, fit_copy_map, geometric_grid  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    torch.set_num_threads(1)
    cfg = CopyMapConfig("softmax", V=8, L=32, P_grid=geometric_grid(100, 1000, 12), adam=AdamConfig(steps=args.steps))

    t0 = time.perf_counter()
    batched = fit_copy_map(cfg, cache=False)
    t_batched = time.perf_counter() - t0

    t0 = time.perf_counter()
    looped_U = np.zeros_like(batched.U)
    for i, P in enumerate(cfg.P_grid):
        for k, seed in enumerate(cfg.init_seeds + ((None,) if cfg.copy_init else ())):
            single = dataclasses.replace(
                cfg,
                P_grid=(P,),
                init_seeds=() if seed is None else (seed,),
                copy_init=seed is None,
            )
            looped_U[i, k] = fit_copy_map(single, cache=False).U[0, 0]
    t_loop = time.perf_counter() - t0

    assert np.allclose(looped_U, batched.U, rtol=1e-9), "batched and looped fits disagree"
    n = batched.U.size
    print(f"  loop: {t_loop:.2f} s for {n} models ({args.steps} Adam steps each)")
    print(f"batched: {t_batched:.2f} s for the same {n} models")
    print(f"ratio={t_loop / t_batched:.1f}")


if __name__ == "__main__":
    main()
