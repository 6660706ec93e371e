r"""Search grids of the reduced actions (used by :func:`lib.theory.minima`; DERIVED bounds, ours).

Every term of the action except the prior is :math:`\ge 0` (the data terms by Cauchy–Schwarz,
:math:`R^2 \le LQ`, :math:`R_1^2\le LQ_1`; the Occam terms trivially), so a minimum obeys
:math:`\text{prior}(x^*) \le \mathcal S(\text{zero state})`, which bounds every coordinate:

* softmax, :math:`d\in[0, d_\text{hi}]` with :math:`(L-1)d_\text{hi}^2/(2\sigma_G^2)` = the centred data term at
  :math:`d=0` (no minimum has :math:`d<0`: there every term grows as :math:`d` decreases); uniform spacing;
* linear, internal coordinates :math:`(u, \hat c_G)` (:math:`u = \hat c_1 + \hat c_G`, the row sum, in which the
  priors are diagonal), each in :math:`[-x_\text{max}, x_\text{max}]` on a ``sinh`` grid (fine near 0, geometric
  far out); the bulk model adds :math:`\ln b` on a uniform grid (bounded by the bulk term alone).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ._validate import F64
from .action import bulk_dimension, epsilon, reduced_action, sector_action

__all__ = ["GridSpec", "z_to_x", "x_to_z", "action_z", "grid_axes", "grid_values", "discrete_minima"]


@dataclass(frozen=True)
class GridSpec:
    """Search-grid sizes: ``n_d`` (softmax), ``n_lin`` per linear axis (odd), ``n_b`` (bulk ``ln b``), ``sinh_a``."""

    n_d: int = 768
    n_lin: int = 41
    n_b: int = 32
    sinh_a: float = 9.0
    newton_iters: int = 30
    chunk: int = 1_500_000

    def __post_init__(self) -> None:
        for name, low in (("n_d", 16), ("n_lin", 7), ("n_b", 8), ("newton_iters", 1), ("chunk", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
        if self.n_lin % 2 == 0:
            raise ValueError(f"n_lin must be odd (the grid must contain 0), got {self.n_lin}")
        if not (isinstance(self.sinh_a, (int, float)) and 0 < self.sinh_a <= 30):
            raise ValueError(f"sinh_a must be in (0, 30], got {self.sinh_a!r}")


# ------------------------------------------------------------------------------------------ coordinates
def z_to_x(model: str, z: torch.Tensor) -> torch.Tensor:
    """Internal coordinates -> seed coordinates: ``(u, cG[, ln b]) -> (c1, cG[, b])``; softmax unchanged."""
    if model == "softmax":
        return z
    parts = [z[..., 0] - z[..., 1], z[..., 1]]
    if model == "linear_v2_bulk":
        parts.append(torch.exp(z[..., 2]))
    return torch.stack(parts, -1)


def x_to_z(model: str, x: torch.Tensor) -> torch.Tensor:
    """Seed coordinates -> internal coordinates (inverse of :func:`z_to_x`)."""
    if model == "softmax":
        return x
    parts = [x[..., 0] + x[..., 1], x[..., 1]]
    if model == "linear_v2_bulk":
        parts.append(torch.log(x[..., 2]))
    return torch.stack(parts, -1)


def action_z(model, z, P, V, L, prior, method):
    """The reduced action at internal coordinates ``z`` ``(..., k)``."""
    return reduced_action(model, z_to_x(model, z), P, V, L, prior=prior, method=method)


def grid_axes(model, V, L, P, prior, method, spec):
    """Grid axes per batch element, each ``(n, n_axis)``, containing every minimum (module docstring)."""
    n = P.shape[0]
    if model == "softmax":
        eps = epsilon(P, V, L, prior)
        data0 = P / (2 * prior.T) * (V - 1) / V * (1 - 1 / (L * (1 + eps)))
        d_hi = 1.05 * torch.sqrt(2 * prior.sigma_G2 * data0 / (L - 1))
        return [torch.linspace(0, 1, spec.n_d, dtype=F64)[None] * d_hi[:, None]]  # (n, n_d)
    S0 = P / (2 * prior.T)  # action of the zero state
    if model == "linear_v2_bulk":
        D = bulk_dimension(L)
        b0 = D * prior.sigma_G2 / L**2
        S0 = S0 + sector_action(b0, 0 * b0, b0, 0 * b0, P, V, L, prior=prior, method=method) - P / (2 * prior.T)
    if model == "linear_v0":
        u_max, g_max = torch.sqrt(2 * prior.sigma_G2 * S0), torch.sqrt(2 * prior.sigma_G2 * S0 / (L - 1))
    else:
        sigma_u2 = prior.sigma_beta2 + prior.sigma_G2 / L**2
        u_max, g_max = torch.sqrt(2 * sigma_u2 * S0), torch.sqrt(2 * prior.sigma_G2 * S0 / (L**2 * (L - 1)))
    t = torch.linspace(-1, 1, spec.n_lin, dtype=F64)
    shape = torch.sinh(spec.sinh_a * t) / np.sinh(spec.sinh_a)  # (n_lin,) odd, includes 0
    axes = [1.02 * u_max[:, None] * shape, 1.02 * g_max[:, None] * shape]
    if model == "linear_v2_bulk":
        r = 2 * S0 / D
        s_lo, s_hi = -(r + 1) - 0.5, torch.clamp(torch.log(2 * r.clamp_min(1e-300)) + np.log(2), min=2.0) + 0.5
        s = torch.linspace(0, 1, spec.n_b, dtype=F64)[None]
        axes.append(torch.log(b0)[:, None] + s_lo[:, None] + (s_hi - s_lo)[:, None] * s)  # (n, n_b)
    assert all(a.shape[0] == n for a in axes)
    return axes


def grid_values(model, axes, V, L, P, prior, method, spec):
    """Action on the tensor-product grid ``(n, n_1[, n_2[, n_3]])``, evaluated in chunks of the batch."""
    n, sizes = P.shape[0], [a.shape[1] for a in axes]
    per = int(np.prod(sizes))
    step = max(1, spec.chunk // per)
    out = []
    for lo in range(0, n, step):  # chunks of batch elements (memory bound), not a per-point loop
        sl = slice(lo, min(n, lo + step))
        m = sl.stop - sl.start
        grids = torch.meshgrid(*[torch.arange(s) for s in sizes], indexing="ij")
        z = torch.stack([axes[i][sl][:, grids[i]] for i in range(len(sizes))], -1)  # (m, *sizes, k)
        bshape = (m,) + (1,) * len(sizes)
        out.append(
            action_z(model, z, P[sl].reshape(bshape), V[sl].reshape(bshape), L[sl].reshape(bshape), prior, method)
        )  # (m, *sizes)
    return torch.cat(out)  # (n, *sizes)


def discrete_minima(S: torch.Tensor) -> torch.Tensor:
    """Mask of grid points ``<=`` all their neighbours (1-D or 2-D grids after the batch axis; +inf outside)."""
    S = torch.nan_to_num(S, nan=float("inf"))
    dims = S.dim() - 1
    pad = torch.nn.functional.pad(S, (1, 1) * dims, value=float("inf"))
    mask = torch.ones_like(S, dtype=torch.bool)
    offsets = (
        [(a,) for a in (-1, 1)] if dims == 1 else [(a, b) for a in (-1, 0, 1) for b in (-1, 0, 1) if (a, b) != (0, 0)]
    )
    for off in offsets:
        idx = (slice(None),) + tuple(slice(1 + o, 1 + o + S.shape[1 + i]) for i, o in enumerate(off))
        mask &= S <= pad[idx]
    return mask & torch.isfinite(S)
