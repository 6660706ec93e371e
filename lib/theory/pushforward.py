r"""Check (d) of chapter 2: the logistic-normal density of a softmax row of Gaussian scores, against samples.

On the 2-simplex (L = 3) the density is integrated over triangular bins and compared with a histogram of sampled rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ._validate import check_choice, check_positive, check_size

__all__ = [
    "logistic_normal_logpdf",
    "sample_softmax_rows",
    "ternary_bins",
    "ternary_bin_index",
    "ternary_bin_mass",
    "PushforwardCheck",
    "pushforward_check",
]


# ----------------------------------------------------------------------------------------------- (d) pushforward
def _simplex_points(a, name: str = "a") -> np.ndarray:
    a = np.asarray(a.detach().cpu() if isinstance(a, torch.Tensor) else a, dtype=float)
    if a.ndim < 1 or a.shape[-1] < 2:
        raise ValueError(f"{name} must have shape (..., L) with L >= 2, got {a.shape}")
    if not np.all(np.isfinite(a)) or np.any(a <= 0):
        raise ValueError(f"{name} must lie in the open simplex (all entries > 0)")
    if not np.allclose(a.sum(-1), 1.0, atol=1e-9):
        raise ValueError(f"{name} must sum to 1 along the last axis")
    return a


def logistic_normal_logpdf(a, sigma_G2: float = 1.0) -> np.ndarray:
    r"""Log density of a softmax row of i.i.d. Gaussian scores (the logistic-normal pushforward).

    If :math:`g \sim \mathcal N(0, \sigma_G^2 I_L)` and :math:`a = \mathrm{softmax}(g)`, then with respect to
    Lebesgue measure on the first :math:`L-1` coordinates of the simplex

    .. math:: p(a) = (2\pi\sigma_G^2)^{-(L-1)/2}\,L^{-1/2}\,\Big(\prod_{j=1}^L a_j\Big)^{-1}
        \exp\Big(-\frac{\lVert\mathrm{clr}(a)\rVert^2}{2\sigma_G^2}\Big),\qquad
        \mathrm{clr}(a)_j = \ln a_j - \frac1L\sum_k \ln a_k .

    Derivation (ours): softmax forgets the row mean :math:`\bar g`, so only :math:`h = g - \bar g\mathbf 1 = \mathrm{clr}(a)`
    matters; :math:`h` is isotropic Gaussian in the :math:`(L-1)`-dimensional plane :math:`\perp \mathbf 1` (the
    mean integrates out). In the coordinates :math:`x_j = \ln(a_j/a_L) = g_j - g_L`, :math:`j < L`, the scores give
    :math:`x \sim \mathcal N(0, \sigma_G^2(I + \mathbf 1\mathbf 1^\top))` (determinant :math:`\sigma_G^{2(L-1)}L`,
    and :math:`x^\top\Sigma^{-1}x = \lVert\mathrm{clr}(a)\rVert^2/\sigma_G^2`), and the Jacobian of
    :math:`a_{1..L-1} \mapsto x` is :math:`\prod_{j=1}^L a_j^{-1}`.

    Parameters
    ----------
    a : array ``(..., L)``
        Points of the open simplex.
    sigma_G2 : float
        Score variance (> 0).

    Returns
    -------
    ndarray ``(...)``
    """
    a = _simplex_points(a)
    s2 = check_positive("sigma_G2", sigma_G2)
    L = a.shape[-1]
    la = np.log(a)
    clr = la - la.mean(-1, keepdims=True)
    return -(L - 1) / 2 * math.log(2 * math.pi * s2) - 0.5 * math.log(L) - la.sum(-1) - (clr**2).sum(-1) / (2 * s2)


def sample_softmax_rows(n: int, L: int, sigma_G2: float = 1.0, *, seed: int = 0) -> np.ndarray:
    """``n`` rows ``softmax(g)``, :math:`g \\sim \\mathcal N(0, \\sigma_G^2 I_L)` i.i.d.; shape ``(n, L)``, float64."""
    n, L = check_size("n", n, 1), check_size("L", L, 2)
    s2 = check_positive("sigma_G2", sigma_G2)
    seed = check_size("seed", seed, 0)
    g = math.sqrt(s2) * np.random.default_rng(seed).standard_normal((n, L))  # (n, L)
    g -= g.max(-1, keepdims=True)
    e = np.exp(g)
    return e / e.sum(-1, keepdims=True)


def ternary_bins(n_side: int) -> np.ndarray:
    r"""The :math:`n^2` triangles of the 2-simplex cut ``n_side`` times along each side, as barycentric vertices.

    Returns
    -------
    ndarray ``(n_side**2, 3, 3)``: bin, vertex, barycentric coordinate :math:`(a_1, a_2, a_3)`. The
    :math:`n(n+1)/2` upward triangles come first, row-major in :math:`(i, j)` = :math:`(\lfloor n a_1\rfloor,
    \lfloor n a_2\rfloor)`, then the :math:`n(n-1)/2` downward ones. Every bin has area :math:`1/(2n^2)` in the
    :math:`(a_1, a_2)` coordinates.
    """
    n = check_size("n_side", n_side, 1)
    tri = []
    for i in range(n):
        for j in range(n - i):
            tri.append([(i, j), (i + 1, j), (i, j + 1)])
    for i in range(n):
        for j in range(n - 1 - i):
            tri.append([(i + 1, j), (i, j + 1), (i + 1, j + 1)])
    v = np.asarray(tri, dtype=float) / n  # (n^2, 3, 2): (a1, a2)
    return np.concatenate([v, 1 - v.sum(-1, keepdims=True)], -1)  # (n^2, 3, 3)


def _bin_lookup(n: int) -> tuple[np.ndarray, np.ndarray]:
    up, down = -np.ones((n, n), int), -np.ones((n, n), int)
    k = 0
    for i in range(n):
        for j in range(n - i):
            up[i, j] = k
            k += 1
    for i in range(n):
        for j in range(n - 1 - i):
            down[i, j] = k
            k += 1
    return up, down


def ternary_bin_index(a, n_side: int) -> np.ndarray:
    """Index into :func:`ternary_bins` of the bin holding each point ``a`` ``(N, 3)`` of the 2-simplex; ``(N,)``."""
    a = _simplex_points(a)
    if a.shape[-1] != 3 or a.ndim != 2:
        raise ValueError(f"a must have shape (N, 3), got {a.shape}")
    n = check_size("n_side", n_side, 1)
    x = np.clip(a[:, :2] * n, 0, n - 1e-12)  # (N, 2)
    ij = np.floor(x).astype(int)
    i, j = ij[:, 0], ij[:, 1]
    j = np.minimum(j, n - 1 - i)  # rounding at the outer edge
    f = x - ij
    is_up = (f.sum(-1) < 1) | (i + j >= n - 1)  # a downward triangle (i, j) exists only for i + j <= n - 2
    up, down = _bin_lookup(n)
    return np.where(is_up, up[i, j], down[i, j])


def ternary_bin_mass(logpdf, n_side: int, *, n_sub: int = 24) -> np.ndarray:
    r"""Integral of :math:`e^{\text{logpdf}}` over every bin of :func:`ternary_bins`, shape ``(n_side**2,)``.

    Each bin is cut into ``n_sub**2`` sub-triangles and the density is evaluated at their centroids (midpoint rule,
    error :math:`O((n\,n_\text{sub})^{-2})`). ``logpdf`` maps points ``(..., 3)`` to log densities ``(...)`` with
    respect to Lebesgue measure on :math:`(a_1, a_2)`.
    """
    if not callable(logpdf):
        raise TypeError(f"logpdf must be callable, got {type(logpdf).__name__}")
    n_sub = check_size("n_sub", n_sub, 1)
    bins = ternary_bins(n_side)  # (n^2, 3, 3)
    ref = ternary_bins(n_sub).mean(1)  # (n_sub^2, 3): centroids of the sub-triangles, barycentric in the bin
    pts = np.einsum("sv,bvc->bsc", ref, bins)  # (n^2, n_sub^2, 3)
    area = 0.5 / check_size("n_side", n_side, 1) ** 2
    return area * np.exp(np.asarray(logpdf(pts))).mean(-1)


@dataclass(frozen=True)
class PushforwardCheck:
    r"""Sampled softmax rows against the logistic-normal density, binned on the 2-simplex (:math:`L = 3`).

    Attributes
    ----------
    sigma_G2 : float
    density : str
        ``"logistic_normal"`` (the derived density) or ``"no_jacobian"`` (the same without :math:`(\prod a_j)^{-1}`,
        normalised numerically: a wrong density, to show that the test can fail).
    n_side, n_samples : int
    bins : ndarray ``(n_bins, 3, 3)``
        :func:`ternary_bins`.
    observed : ndarray ``(n_bins,)``
        Sample counts per bin.
    expected : ndarray ``(n_bins,)``
        Bin probabilities from the density (they sum to ``mass``, normalised to 1 here).
    mass : float
        Total integrated mass before normalisation (1 up to quadrature error for the derived density).
    tv : float
        Total variation distance :math:`\frac12\sum_b |\hat p_b - p_b|`.
    tv_null : tuple of float
        Mean and 99th percentile of the TV distance between ``n_samples`` multinomial draws from ``expected`` and
        ``expected`` itself (the sampling noise alone; 200 draws).
    chi2, dof, p_value : float
        Pearson :math:`\chi^2 = \sum_b (O_b - E_b)^2/E_b` over bins with :math:`E_b \ge 5` (the rest pooled into one),
        its degrees of freedom and upper-tail probability.
    """

    sigma_G2: float
    density: str
    n_side: int
    n_samples: int
    bins: np.ndarray
    observed: np.ndarray
    expected: np.ndarray
    mass: float
    tv: float
    tv_null: tuple[float, float]
    chi2: float
    dof: int
    p_value: float


def pushforward_check(
    sigma_G2: float = 1.0,
    *,
    n_samples: int = 200_000,
    n_side: int = 16,
    seed: int = 0,
    n_sub: int = 24,
    density: str = "logistic_normal",
) -> PushforwardCheck:
    r"""Histogram of softmax rows of :math:`\mathcal N(0,\sigma_G^2 I_3)` scores against a density, on the 2-simplex.

    Rows are binned into the ``n_side**2`` triangles of :func:`ternary_bins`; the density is integrated over the same
    bins (:func:`ternary_bin_mass`). Reported: total variation distance (with the level sampling noise alone gives)
    and Pearson's :math:`\chi^2` test (:class:`PushforwardCheck`).
    """
    from scipy.stats import chi2 as chi2_dist

    s2 = check_positive("sigma_G2", sigma_G2)
    n_samples = check_size("n_samples", n_samples, 100)
    n_side = check_size("n_side", n_side, 2)
    seed = check_size("seed", seed, 0)
    check_choice("density", density, ("logistic_normal", "no_jacobian"))

    a = sample_softmax_rows(n_samples, 3, s2, seed=seed)  # (N, 3)
    observed = np.bincount(ternary_bin_index(a, n_side), minlength=n_side**2).astype(float)
    if density == "logistic_normal":

        def logpdf(p):
            return logistic_normal_logpdf(p, s2)
    else:

        def logpdf(p):
            la = np.log(p)
            clr = la - la.mean(-1, keepdims=True)
            return -(clr**2).sum(-1) / (2 * s2)

    mass_b = ternary_bin_mass(logpdf, n_side, n_sub=n_sub)
    mass = float(mass_b.sum())
    expected = mass_b / mass

    tv = 0.5 * float(np.abs(observed / n_samples - expected).sum())
    rng = np.random.default_rng(seed + 1)
    draws = rng.multinomial(n_samples, expected, size=200) / n_samples  # (200, n_bins)
    tv_draws = 0.5 * np.abs(draws - expected).sum(-1)

    E = n_samples * expected
    big = E >= 5
    chi2 = float(((observed[big] - E[big]) ** 2 / E[big]).sum())
    k = int(big.sum())
    if (~big).any():
        Ep, Op = float(E[~big].sum()), float(observed[~big].sum())
        chi2 += (Op - Ep) ** 2 / max(Ep, 1e-300)
        k += 1
    dof = k - 1
    return PushforwardCheck(
        sigma_G2=s2,
        density=density,
        n_side=n_side,
        n_samples=n_samples,
        bins=ternary_bins(n_side),
        observed=observed,
        expected=expected,
        mass=mass,
        tv=tv,
        tv_null=(float(tv_draws.mean()), float(np.quantile(tv_draws, 0.99))),
        chi2=chi2,
        dof=dof,
        p_value=float(chi2_dist.sf(chi2, dof)),
    )
