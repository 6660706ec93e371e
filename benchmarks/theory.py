"""Full phase diagram of the reduced theory: vectorised solver vs a naive per-point scipy.optimize loop.

Grid: 200 values of P (geometric, 5..2e4) x 8 values of L (8..128) at V = 8, for softmax and the book's linear model
(V2), each with the Bayesian (Occam) and the MAP action: 4 x 1600 points. Ours: one call of
:func:`lib.theory.minima` per (kind, method) finds every local minimum (grid + batched Newton). Naive: for each point,
``scipy.optimize.minimize`` (L-BFGS-B, numerical gradients) from a fixed set of starts on a NumPy copy of the same
action. The naive loop is timed on every ``--stride``-th P value and scaled up (said in the output). Before the
ratio is printed the benchmark checks, on the subset, that both give the same global minimum (action and
location) and that every minimum the naive loop finds is one of ours, except shallow pockets (the action rises by
less than 1 nat on the segment to one of our minima: an upper bound on their barrier), which it counts.
The last line is ``ratio=<naive/ours>``.

    python benchmarks/theory.py [--stride 10] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402
import torch  # noqa: E402
from scipy.optimize import minimize  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib.theory import minima, reduced_action  # noqa: E402

V = 8
LS = np.array([8, 12, 16, 24, 32, 48, 64, 128])
PS = np.geomspace(5, 2e4, 200)
CASES = [("softmax", "map"), ("softmax", "bayes"), ("linear_v2", "map"), ("linear_v2", "bayes")]


def np_action(x: np.ndarray, model: str, P: float, L: float, method: str) -> float:
    """The reduced action in plain NumPy (T = sigma = 1), as a naive user would write it (checked against lib)."""
    eps = V * L / P
    if model == "softmax":
        d = x[0]
        p = 1 / (1 + (L - 1) * np.exp(-d))
        Q, R, Q1, R1 = L * (p**2 + (1 - p) ** 2 / (L - 1)), L * p, L, L
        prior = (L - 1) * d**2 / 2
    else:
        c1, cG = x
        u = c1 + cG
        Q, R, Q1, R1 = L * cG**2 + 2 * cG * c1 + c1**2, L * cG + c1, L * u**2, L * u
        prior = L**2 * (L - 1) * cG**2 / 2 + u**2 / (2 * (1 + 1 / L**2))
    data = P / 2 * ((V - 1) / V * (1 - R**2 / (L * (Q + eps))) + (1 - R1**2 / (L * (Q1 + eps))) / V)
    occam = V * (V - 1) / 2 * np.log1p(Q / eps) + V / 2 * np.log1p(Q1 / eps) if method == "bayes" else 0.0
    return float(prior + data + occam)


def _is_minimum(x: np.ndarray, model: str, P: float, L: float, method: str) -> bool:
    """Finite-difference Hessian at ``x`` is positive semi-definite (relative tolerance)."""
    k, h = x.size, 1e-5 * (1 + np.abs(x))
    H = np.zeros((k, k))
    for i in range(k):
        for j in range(k):
            ei, ej = np.eye(k)[i] * h[i], np.eye(k)[j] * h[j]
            f = [np_action(x + a * ei + b * ej, model, P, L, method) for a, b in ((1, 1), (1, -1), (-1, 1), (-1, -1))]
            H[i, j] = (f[0] - f[1] - f[2] + f[3]) / (4 * h[i] * h[j])
    lam = np.linalg.eigvalsh(0.5 * (H + H.T))
    return bool(lam[0] >= -1e-9 * np.abs(lam).max() - 1e-6)


def naive_point(model: str, P: float, L: float, method: str) -> tuple[np.ndarray, np.ndarray]:
    """All minima found by multi-start L-BFGS-B at one point: (x (m, k), action (m,)), canonical sign, deduplicated."""
    if model == "softmax":
        starts = [np.array([d]) for d in np.linspace(0.0, 3 * np.log(L) + 2, 10)]
    else:
        mags = (0.0, 0.03, 0.1, 0.3)
        starts = [np.array([a, b]) for a in mags for b in (0.0, 0.003, 0.03, 0.1)] + [np.array([-0.3, 0.1])]
    found = []
    for x0 in starts:
        res = minimize(
            np_action, x0, args=(model, P, L, method), method="L-BFGS-B", options={"ftol": 1e-15, "gtol": 1e-10}
        )
        x = res.x
        if np.abs(res.jac).max() > 1e-4 * (1 + abs(res.fun)) or not _is_minimum(x, model, P, L, method):
            continue  # stopped early, or a saddle (e.g. the start c = 0 above the onset): not a minimum
        if model != "softmax":
            Q, R, u = L * x[1] ** 2 + 2 * x[1] * x[0] + x[0] ** 2, L * x[1] + x[0], x[0] + x[1]
            eps = V * L / P
            if (V - 1) * R / (Q + eps) + L * u / (L * u**2 + eps) < 0:
                x = -x
        if not any(np.allclose(x, y, atol=1e-4) for y, _ in found):
            found.append((x, res.fun))
    return np.array([f[0] for f in found]), np.array([f[1] for f in found])


def barrier(x: np.ndarray, ours_x: np.ndarray, case, P: float, L: float) -> float:
    """Upper bound on the barrier around a minimum ``x``: highest action on the segment to the nearest of ours."""
    y = ours_x[np.argmin(np.abs(ours_x - x).sum(-1))]
    path = [np_action(x + s * (y - x), case[0], P, L, case[1]) for s in np.linspace(0, 1, 201)]
    return float(max(path) - path[0])


def ours(repeats: int):
    """Time the vectorised phase diagram (best of ``repeats``); returns (seconds, results per case)."""
    LL, PP = np.meshgrid(LS, PS, indexing="ij")  # (n_L, n_P)
    best, out = np.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = {case: minima(case[0], V, LL, PP, method=case[1]) for case in CASES}
        best = min(best, time.perf_counter() - t0)
        out = res
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stride", type=int, default=10, help="time the naive loop on every stride-th P value")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)

    # the NumPy action equals lib's (same minima problem)
    rng = np.random.default_rng(0)
    for model, method in CASES:
        for _ in range(5):
            x = rng.normal(size=1 if model == "softmax" else 2) * 0.3
            P, L = float(rng.uniform(5, 2e4)), float(rng.choice(LS))
            lib_val = float(reduced_action(model, torch.tensor(x), P, V, L, method=method))
            assert np.isclose(np_action(x, model, P, L, method), lib_val, rtol=1e-12), (model, method)

    t_ours, res = ours(args.repeats)
    n_points = len(CASES) * LS.size * PS.size
    print(
        f"ours : {t_ours:.3f} s for the full diagram ({n_points} points: {PS.size} P x {LS.size} L x 2 kinds x 2 methods)"
    )

    sub = np.arange(0, PS.size, args.stride)
    t0 = time.perf_counter()
    naive = {case: [[naive_point(case[0], PS[j], float(L), case[1]) for j in sub] for L in LS] for case in CASES}
    t_sub = time.perf_counter() - t0
    t_naive = t_sub * PS.size / sub.size
    print(
        f"naive: {t_sub:.2f} s on every {args.stride}-th P ({len(CASES) * LS.size * sub.size} points, incl. a "
        f"finite-difference saddle check per end point), scaled to the full grid: {t_naive:.1f} s"
    )

    n_cmp, missing = 0, []
    for case in CASES:
        mins = res[case]
        for i in range(LS.size):
            for jj, j in enumerate(sub):
                xs, Ss = naive[case][i][jj]
                assert len(Ss), (case, LS[i], PS[j], "the naive loop found no minimum")
                k = int(np.argmin(Ss))
                gx, gS = mins.global_x[i, j], mins.global_action[i, j]
                assert np.isclose(Ss[k], gS, rtol=1e-8, atol=1e-8), (case, LS[i], PS[j], Ss[k], gS)
                assert np.allclose(xs[k], gx, rtol=1e-3, atol=1e-4), (case, LS[i], PS[j], xs[k], gx)
                ours_x = mins.x[i, j][: mins.n[i, j]]
                for x in xs:  # every naive minimum (converged L-BFGS-B end point) is one of ours
                    n_cmp += 1
                    if not np.any(np.all(np.isclose(ours_x, x, rtol=1e-3, atol=1e-4), -1)):
                        missing.append(barrier(x, ours_x, case, PS[j], float(LS[i])))
    shallow = [b for b in missing if b < 1.0]
    assert len(shallow) == len(missing), f"naive minima with barriers {sorted(missing)} nats are not among ours"
    print(
        f"check: same global minimum at all {len(CASES) * LS.size * sub.size} compared points; "
        f"{n_cmp - len(missing)} of {n_cmp} naive minima are among ours, the other {len(missing)} are shallow pockets "
        f"(barrier to one of ours < 1 nat: max {max(missing, default=0):.2f})"
    )
    print(f"ratio={t_naive / t_ours:.1f}")


if __name__ == "__main__":
    main()
