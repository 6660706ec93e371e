"""Direct loss vs sufficient statistics for paper A's copy head (same MAP objective, same gradients).

One Adam step on the MAP objective of a softmax head at P = 1000, L = 32, V = 8, computed
(a) directly from the one-hot data, O(P L^2 V) per step, and
(b) from the pair counts N[j,k,a,b], O(L^2 V^2) per step, independent of P (lib.train.copy_map).
Both give the same loss and gradient (checked here); the ratio is time(a) / time(b).

    python benchmarks/copy_stats.py [--P 1000] [--steps 200]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib.models import attention  # noqa: E402
from lib.tasks import CopyTask, copy_batch, pair_counts, sample_tokens  # noqa: E402
from lib.train import CopyPrior, copy_objective  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--P", type=int, default=1000)
    parser.add_argument("--L", type=int, default=32)
    parser.add_argument("--V", type=int, default=8)
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    torch.set_num_threads(1)
    P, L, V = args.P, args.L, args.V
    tokens = sample_tokens(CopyTask(V=V, L=L, P=P, seed=0))
    X, Y = copy_batch(tokens, V)  # (P, L, V)
    counts = pair_counts(tokens, V)  # (L, L, V, V)
    prior = CopyPrior()
    gen = torch.Generator().manual_seed(1)
    G0 = torch.randn(L, L, generator=gen, dtype=torch.float64)
    W0 = 0.1 * torch.randn(V, V, generator=gen, dtype=torch.float64)

    def direct(G, W):
        A = attention("softmax", G)  # (L, L)
        F = torch.einsum("ij,pjv,vc->pic", A, X, W)  # (P, L, V)
        return ((Y - F) ** 2).sum() / (2 * prior.T * L) + (G**2).sum() / 2 + (W**2).sum() / 2

    def stats(G, W):
        return copy_objective("softmax", {"G": G, "W": W}, counts, torch.tensor(float(P), dtype=torch.float64), prior)

    # same objective, same gradient
    grads = []
    for fn in (direct, stats):
        G, W = G0.clone().requires_grad_(), W0.clone().requires_grad_()
        u = fn(G, W)
        u.backward()
        grads.append((u.detach(), G.grad, W.grad))
    assert torch.allclose(grads[0][0], grads[1][0], rtol=1e-10)
    assert torch.allclose(grads[0][1], grads[1][1], atol=1e-9) and torch.allclose(grads[0][2], grads[1][2], atol=1e-9)

    times = {}
    for name, fn in (("direct", direct), ("stats", stats)):
        G, W = G0.clone().requires_grad_(), W0.clone().requires_grad_()
        opt = torch.optim.Adam([G, W], lr=0.05)
        for _ in range(5):  # warm-up
            opt.zero_grad()
            fn(G, W).backward()
            opt.step()
        t0 = time.perf_counter()
        for _ in range(args.steps):
            opt.zero_grad()
            fn(G, W).backward()
            opt.step()
        times[name] = (time.perf_counter() - t0) / args.steps
        print(f"{name:>6}: {1e3 * times[name]:.3f} ms per Adam step (P={P}, L={L}, V={V})")
    print(f"ratio={times['direct'] / times['stats']:.1f}")


if __name__ == "__main__":
    main()
