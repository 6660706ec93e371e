"""The MAP sweep behind chapter 4's softmax figure: the project's path against a straightforward per-model loop.

Work: softmax copy heads at L in {32, 64}, V = 8, P on a log grid up to 4000, four initialisations per P (three
random, one near the copy solution), Adam with a cosine learning-rate decay, the same number of steps for both paths.

* project path: `lib.fit_copy_map` -- the data enter through the pair counts N[j,k,a,b] (a step costs O(L^2 V^2)
  at any P), and all 4 x n_P models of one L train as one batched computation;
* straightforward path: one model at a time, Adam on the MSE computed from the raw (P, L, V) one-hot data.

Both start from identical parameters and follow the same optimiser; the script checks that every model reaches the
same final U (within 0.1 %) before it prints the ratio (straightforward time / project time) as its last line. Peak
memory (ru_maxrss) is printed too, and, without a target, the ensemble trainer's ratio against a loop for chapter 6's
tiny transformers (benchmarks/gpt_ensemble.py).

    python benchmarks/copy_sweep.py [--steps 500] [--n-P 8]

`--steps` is kept moderate by default because the straightforward path costs minutes per model at P = 4000, L = 64;
the ratio is a per-step ratio and does not depend much on it.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib.models.copy_head import attention, init_copy_params  # noqa: E402
from lib.tasks import CopyTask, copy_batch, sample_tokens  # noqa: E402
from lib.train import AdamConfig, CopyMapConfig, fit_copy_map, geometric_grid  # noqa: E402


def straightforward_fit(cfg: CopyMapConfig, P: int, init_index: int) -> float:
    """One model, raw data, plain Adam with the same schedule; returns its final U."""
    tokens = sample_tokens(CopyTask(V=cfg.V, L=cfg.L, P=max(cfg.P_grid), seed=cfg.data_seed))[:P]  # (P, L)
    X, Y = copy_batch(tokens, cfg.V)  # (P, L, V) each
    copy = init_index == len(cfg.init_seeds)
    seed = 10_000 if copy else cfg.init_seeds[init_index]
    G0, W0, _ = init_copy_params(
        "softmax",
        cfg.L,
        cfg.V,
        seed=seed,
        init_G=1.0 if cfg.init_G is None else cfg.init_G,
        init_W=cfg.init_W,
        copy_init=copy,
    )
    G, W = G0.clone().requires_grad_(True), W0.clone().requires_grad_(True)
    pr, ad = cfg.prior, cfg.adam
    opt = torch.optim.Adam([G, W], lr=ad.lr, betas=ad.betas, eps=ad.eps)
    sched = (
        torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=ad.steps, eta_min=ad.lr_final) if ad.lr_final else None
    )

    def U():
        A = attention("softmax", G)  # (L, L)
        F = torch.einsum("ij,pjv,vc->pic", A, X, W)  # (P, L, V)
        return (
            ((Y - F) ** 2).sum() / (2 * pr.T * cfg.L)
            + (G**2).sum() / (2 * pr.sigma_G2)
            + (W**2).sum() / (2 * pr.sigma_W2)
        )

    for _ in range(ad.steps):
        opt.zero_grad()
        U().backward()
        opt.step()
        if sched is not None:
            sched.step()
    with torch.no_grad():
        return float(U())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--n-P", type=int, default=8)
    parser.add_argument("--L", type=int, nargs="+", default=[32, 64])
    args = parser.parse_args()
    torch.set_num_threads(1)

    t_project = t_direct = 0.0
    worst = 0.0
    for L in args.L:
        cfg = CopyMapConfig(
            "softmax",
            V=8,
            L=L,
            P_grid=geometric_grid(100, 4000, args.n_P),
            init_seeds=(0, 1, 2),
            adam=AdamConfig(steps=args.steps, lr_final=1e-4),
        )
        t0 = time.perf_counter()
        res = fit_copy_map(cfg, cache=False)
        t_p = time.perf_counter() - t0
        t0 = time.perf_counter()
        U_direct = np.array([[straightforward_fit(cfg, P, k) for k in range(len(res.inits))] for P in cfg.P_grid])
        t_d = time.perf_counter() - t0
        rel = np.abs(U_direct - res.U) / np.abs(res.U)
        worst = max(worst, float(rel.max()))
        print(
            f"L={L}: {res.U.size} models, P = {cfg.P_grid}: project {t_p:.1f} s, straightforward {t_d:.1f} s "
            f"(x{t_d / t_p:.1f}); max relative difference of final U {rel.max():.1e}"
        )
        t_project += t_p
        t_direct += t_d
    assert worst < 1e-3, f"the two paths disagree: max relative difference of final U = {worst:.2e}"
    print(f"peak memory: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2:.2f} GiB")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from gpt_ensemble import measure  # noqa: E402  (chapter 6's tiny transformers; reported without a target)

    g = measure()
    print(
        f"tiny transformers (chapter 6, 8 GPTs, 150 steps): stacked {g['stack']:.1f} s, loop {g['loop']:.1f} s CPU, "
        f"ensemble/loop ratio {g['loop'] / g['stack']:.2f} (no target)"
    )
    print(f"project {t_project:.1f} s, straightforward {t_direct:.1f} s, {args.steps} Adam steps per model")
    print(f"ratio={t_direct / t_project:.1f}")


if __name__ == "__main__":
    main()
