r"""Second-order onsets of the linear models: where the trivial minimum loses stability (DERIVED, ours).

The trivial minimum (no attention structure) loses stability where the smallest eigenvalue of the Hessian at
:math:`\hat c = 0` crosses zero. In :math:`(\hat c_1, \hat c_G)` (seed naming: uniform, copy) the Hessian is
:math:`H(P) = \Pi + P\,B - P^2 C` with the prior :math:`\Pi`, the Occam curvature
:math:`B = \frac{\sigma_W^2}{TL}[(V-1)M_Q + M_{Q_1}]` (0 for MAP) and the data curvature
:math:`C = \frac{\sigma_W^2}{V^2T^2L^2}[(V-1)M_R + M_{R_1}]`, where :math:`M_X` is the quadratic form of
:math:`X` (:math:`M_Q = \begin{pmatrix}1&1\\1&L\end{pmatrix}`, :math:`M_R = (1,L)^\top(1,L)`,
:math:`M_{Q_1} = L\,\mathbf 1\mathbf 1^\top`, :math:`M_{R_1} = L^2\,\mathbf 1\mathbf 1^\top`), and the priors
:math:`\Pi_{V0} = M_Q/\sigma_G^2`, :math:`\Pi_{V2} = \mathbf 1\mathbf 1^\top/\sigma_u^2 + \mathrm{diag}(0, L^2(L-1)/\sigma_G^2)`.
The onset is the smallest positive root of the quartic :math:`\det H(P)` (closed form; checked against the
numerical Hessian, ``numeric=True``). Along the uniform direction alone it reduces to :file:`paperA_linear.md` §2,
:math:`P^2\sigma_W^2(1+\frac{V-1}{L^2})/(T^2V^2) = P\sigma_W^2(1+\frac{V-1}L)/T + 1/\sigma_u^2`, i.e.
:math:`P_1 \approx TV^2(1+(V-1)/L)` for the book's model V2 when :math:`L \gg V`. For V0 the leading order is
:math:`P^* \approx TV^2` (the factors :math:`V-1` of the centred Occam and data curvatures cancel).
For the spike+bulk model the trivial state carries the optimal bulk :math:`b_0(P)` and only the numeric route applies.
"""

from __future__ import annotations

import numpy as np
import torch

from ..models.copy_objective import CopyPrior
from ._validate import F64, check_method, check_model, check_prior, check_sizes, scalar_or_array
from .grids import GridSpec, action_z, grid_axes
from .solvers import action_derivatives, newton_refine

__all__ = ["onset_sample_size"]

_DEFAULT = CopyPrior()


def _onset_matrices(model, V, L, prior, method):
    """Prior, Occam and data curvature at the zero state, each ``(n, 2, 2)`` (module docstring)."""
    one = torch.ones(V.shape + (2, 2), dtype=F64)
    L2 = L[..., None, None]
    MQ = torch.stack([torch.stack([L * 0 + 1, L * 0 + 1], -1), torch.stack([L * 0 + 1, L], -1)], -2)
    r = torch.stack([L * 0 + 1, L], -1)
    MR = r[..., :, None] * r[..., None, :]
    if model == "linear_v0":
        Pi = MQ / prior.sigma_G2
    else:
        Pi = one / (prior.sigma_beta2 + prior.sigma_G2 / L2**2)
        Pi[..., 1, 1] += L**2 * (L - 1) / prior.sigma_G2
    Vv = V[..., None, None]
    B = prior.sigma_W2 / (prior.T * L2) * ((Vv - 1) * MQ + L2 * one) * (method == "bayes")
    C = prior.sigma_W2 / (Vv**2 * prior.T**2 * L2**2) * ((Vv - 1) * MR + L2**2 * one)
    return Pi, B, C


def _closed_onset(model, V, L, prior, method):
    Pi, B, C = (m.numpy() for m in _onset_matrices(model, V, L, prior, method))
    h = np.stack([Pi, B, -C], -1)  # (n, 2, 2, 3): polynomial coefficients in P, increasing order

    def mul(p, q):
        out = np.zeros(p.shape[:-1] + (5,))
        for i in range(3):
            out[..., i : i + 3] += p[..., i, None] * q
        return out

    det = mul(h[..., 0, 0, :], h[..., 1, 1, :]) - mul(h[..., 0, 1, :], h[..., 1, 0, :])  # (n, 5)
    comp = np.zeros(det.shape[:-1] + (4, 4))  # companion matrices of the monic quartic
    comp[..., 1:, :-1] = np.eye(3)
    comp[..., :, -1] = -det[..., :4] / det[..., 4:5]
    roots = np.linalg.eigvals(comp)  # (n, 4)
    real = (np.abs(roots.imag) <= 1e-9 * np.abs(roots)) & (roots.real > 0)
    P = np.where(real, roots.real, np.inf).min(-1)
    assert np.all(np.isfinite(P)), "det H(P) has a positive root (the data curvature grows as P^2)"
    for _ in range(3):  # polish the root: Newton on the quartic
        val = sum(det[..., i] * P**i for i in range(5))
        der = sum(i * det[..., i] * P ** (i - 1) for i in range(1, 5))
        P = P - val / der
    return P


def _zero_state(model, V, L, P, prior, method):
    """Seed coordinates of the trivial state ``(n, k)``: c = 0 (and the optimal bulk b0(P) for the bulk model)."""
    n = P.shape[0]
    if model != "linear_v2_bulk":
        return torch.zeros(n, 2, dtype=F64)
    t = grid_axes(model, V, L, P, prior, method, GridSpec())[2]  # (n, n_b)
    z = torch.stack([torch.zeros_like(t), torch.zeros_like(t), t], -1)  # (n, n_b, 3)
    S = action_z(model, z, P[:, None], V[:, None], L[:, None], prior, method)
    z0 = z[torch.arange(n), S.argmin(-1)]  # (n, 3); the gradient along c vanishes at c = 0, so Newton stays there
    z0 = newton_refine(model, z0, P, V, L, prior=prior, method=method, iters=20)
    return torch.stack([z0[:, 0] * 0, z0[:, 1] * 0, torch.exp(z0[:, 2])], -1)


def _lam_min(model, V, L, P, prior, method):
    x = _zero_state(model, V, L, P, prior, method)
    H = action_derivatives(model, x, P, V, L, prior, method, seed_coords=True)[2][:, :2, :2]
    return torch.linalg.eigvalsh(H)[:, 0]


def _numeric_onset(model, V, L, prior, method, iters=48):
    n = V.shape[0]
    grid = torch.logspace(-3, 8, 111, dtype=F64) * prior.T  # (n_g,)
    lam = _lam_min(model, V.repeat_interleave(111), L.repeat_interleave(111), grid.repeat(n), prior, method)
    lam = lam.reshape(n, 111)  # (n, n_grid)
    neg = lam < 0
    if not bool(neg.any(1).all()):
        raise RuntimeError("no instability of the trivial state found for P up to 1e8 T")
    k = neg.float().argmax(1)
    assert bool((k > 0).all()), "the trivial state is stable at small P"
    lo, hi = grid[k - 1], grid[k]
    for _ in range(iters):  # vectorised bisection in ln P
        mid = torch.sqrt(lo * hi)
        below = _lam_min(model, V, L, mid, prior, method) >= 0
        lo, hi = torch.where(below, mid, lo), torch.where(below, hi, mid)
    return torch.sqrt(lo * hi).numpy()


def onset_sample_size(model: str, V, L, *, prior: CopyPrior = _DEFAULT, method: str = "bayes", numeric: bool = False):
    """P where the trivial minimum of a linear model loses stability (second-order onset), broadcast over ``V``, ``L``.

    ``model`` in ``("linear_v0", "linear_v2", "linear_v2_bulk")``. Closed form (root of the quartic ``det H(P)``,
    module docstring) for V0/V2; ``numeric=True`` (always for the bulk model) bisects the smallest Hessian
    eigenvalue at the trivial state instead. Returns a float for scalar input, else an array.
    """
    check_model(model, ("linear_v0", "linear_v2", "linear_v2_bulk"))
    check_method(method)
    check_prior(prior)
    V, L = check_sizes(V, L)
    scalar = V.dim() == 0 and L.dim() == 0
    V, L = torch.broadcast_tensors(V, L)
    shape = V.shape
    V, L = V.reshape(-1), L.reshape(-1)  # (n,)
    if numeric or model == "linear_v2_bulk":
        out = _numeric_onset(model, V, L, prior, method)
    else:
        out = _closed_onset(model, V, L, prior, method)
    return scalar_or_array(np.asarray(out).reshape(shape), scalar)
