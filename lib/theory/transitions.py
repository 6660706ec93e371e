r"""Where the transitions are: second-order onsets, the softmax first-order point, the linear crossover (DERIVED).

* **Second order (linear models)**: :mod:`lib.theory.onsets`.
* **First order (softmax).** Two minima of :math:`\mathcal S(d)` coexist; :math:`P^*` is where their actions are
  equal: bracketed on a P grid, then bisected with both branches continued by Newton steps.
* **Crossover (V2).** ``"steepest"``: the P of maximal :math:`d\hat c_G/d\ln P` (implicit-function slope of the global
  minimum) beyond the onset; ``"half"``: the P where the centred explained fraction :math:`R^2/(L(Q+\varepsilon))`
  reaches 1/2 (midpoint of the second loss drop; :file:`paperA_linear.md` §3, X2 and X3).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import torch

from ..models.copy_objective import CopyPrior
from ._validate import F64, check_choice, check_method, check_prior, check_sizes, make_prior, scalar_or_array
from .action import epsilon, reduced_overlaps
from .grids import GridSpec
from .onsets import onset_sample_size
from .solvers import action_derivatives, local_response, minima, newton_refine

__all__ = [
    "SoftmaxTransition",
    "first_order_transition",
    "critical_sample_size",
    "crossover_sample_size",
    "fit_power_law",
    "SCALING_LAWS",
    "compare_scaling_laws",
]

_DEFAULT = CopyPrior()


# ------------------------------------------------------------------------------------------ first order (softmax)
@dataclass(frozen=True)
class SoftmaxTransition:
    r"""The softmax transition for a batch of ``(V, L)`` (arrays of the broadcast shape).

    Attributes
    ----------
    first_order : ndarray of bool
        Two minima coexist and exchange stability. Where False the rise is continuous (e.g. L = 16 with the Occam
        term) and ``P_star`` is the P of steepest growth of the target attention :math:`p` (max :math:`dp/d\ln P`).
    P_star : ndarray
        Equal-action point (first order) or steepest-growth point (continuous).
    d_low, d_high : ndarray
        The two coexisting minima at ``P_star`` (equal where continuous).
    target_low, target_high : ndarray
        Attention on the target key at those minima (the jump of the order parameter).
    coexistence : ndarray ``(..., 2)``
        First and last P of the search grids with two minima (grid resolution; NaN where none).
    """

    first_order: np.ndarray
    P_star: np.ndarray
    d_low: np.ndarray
    d_high: np.ndarray
    target_low: np.ndarray
    target_high: np.ndarray
    coexistence: np.ndarray


def _softmax_branches(z, P, V, L, prior, method):
    return newton_refine("softmax", z, P, V, L, prior=prior, method=method, iters=12)


def first_order_transition(
    V,
    L,
    *,
    prior: CopyPrior = _DEFAULT,
    method: str = "bayes",
    n_coarse: int = 96,
    n_fine: int = 64,
    iters: int = 45,
    spec: GridSpec = GridSpec(),
) -> SoftmaxTransition:
    r"""Locate the softmax transition for every ``(V, L)`` of a broadcast batch (module docstring).

    A coarse geometric grid from :math:`0.05\,TL\ln^2L/\sigma_G^2` to :math:`20\,(TL\ln^2L/\sigma_G^2 + TV^2\ln L)`
    (``n_coarse`` points) brackets the steepest rise of the target attention; a fine grid (``n_fine``) inside that
    step finds two coexisting minima whose action difference changes sign; ``iters`` bisection steps then locate
    the equal-action point. ``coexistence`` is read off both grids (their resolution).
    """
    for name, value, low in (("n_coarse", n_coarse, 8), ("n_fine", n_fine, 4), ("iters", iters, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    check_method(method)
    check_prior(prior)
    V, L = check_sizes(V, L)
    V, L = torch.broadcast_tensors(V, L)
    shape = V.shape
    V, L = V.reshape(-1), L.reshape(-1)  # (n,)
    n = V.shape[0]
    scale = prior.T * L * torch.log(L) ** 2 / prior.sigma_G2
    hi = 20 * (scale + prior.T * V**2 * torch.log(L))
    u = torch.linspace(0, 1, n_coarse, dtype=F64)
    Pc = torch.exp(torch.log(0.05 * scale)[:, None] + torch.log(hi / (0.05 * scale))[:, None] * u)  # (n, n_c)
    Vc, Lc = V[:, None].expand_as(Pc), L[:, None].expand_as(Pc)
    coarse = minima("softmax", Vc, Lc, Pc, prior=prior, method=method, spec=spec)
    p_c = 1 / (1 + (L.numpy()[:, None] - 1) * np.exp(-coarse.global_x[..., 0]))  # (n, n_c) target attention
    k = np.argmax(np.diff(p_c, axis=1), axis=1)  # steepest step of the global minimum
    if np.any((k == 0) | (k == n_coarse - 2)):
        raise RuntimeError("the steepest rise of the softmax target attention is at the edge of the search grid")
    Pn = Pc.numpy()

    # fine grid inside the steepest coarse step
    a, b = Pn[np.arange(n), k], Pn[np.arange(n), k + 1]
    Pf = torch.as_tensor(np.exp(np.log(a)[:, None] + np.log(b / a)[:, None] * np.linspace(0, 1, n_fine)))  # (n, n_f)
    fine = minima(
        "softmax", V[:, None].expand_as(Pf), L[:, None].expand_as(Pf), Pf, prior=prior, method=method, spec=spec
    )
    nf = fine.n
    two = np.concatenate([coarse.n, nf], 1) >= 2  # (n, n_c + n_f)
    Pall = np.concatenate([Pn, Pf.numpy()], 1)
    co = np.stack(
        [
            np.where(two.any(1), np.where(two, Pall, np.inf).min(1), np.nan),
            np.where(two.any(1), np.where(two, Pall, -np.inf).max(1), np.nan),
        ],
        -1,
    )  # (n, 2)
    lo_x = fine.x[..., 0, 0]  # lowest-d minimum (sorted by d)
    hi_x = np.take_along_axis(fine.x[..., 0], (nf - 1)[..., None], -1)[..., 0]  # highest-d minimum
    lo_S = fine.action[..., 0]
    hi_S = np.take_along_axis(fine.action, (nf - 1)[..., None], -1)[..., 0]
    dS = hi_S - lo_S  # (n, n_f): > 0 while the low-d branch is global
    change = (nf[:, :-1] >= 2) & (nf[:, 1:] >= 2) & (dS[:, :-1] > 0) & (dS[:, 1:] <= 0)
    first = change.any(1)
    j = np.argmax(change, 1)
    rows = np.arange(n)
    Pa, Pb = Pf.numpy()[rows, j], Pf.numpy()[rows, j + 1]
    za = torch.as_tensor(lo_x[rows, j])[:, None]
    zb = torch.as_tensor(hi_x[rows, j + 1])[:, None]
    Pa_t, Pb_t = torch.as_tensor(Pa), torch.as_tensor(Pb)
    for _ in range(iters):  # vectorised bisection on S_high - S_low, both branches continued by Newton
        Pm = torch.sqrt(Pa_t * Pb_t)
        zl, zh = _softmax_branches(za, Pm, V, L, prior, method), _softmax_branches(zb, Pm, V, L, prior, method)
        Sl = action_derivatives("softmax", zl, Pm, V, L, prior, method)[0]
        Sh = action_derivatives("softmax", zh, Pm, V, L, prior, method)[0]
        up = Sh > Sl
        Pa_t, Pb_t = torch.where(up, Pm, Pa_t), torch.where(up, Pb_t, Pm)
        za, zb = torch.where(up[:, None], zl, za), torch.where(up[:, None], zb, zh)
    P_first = torch.sqrt(Pa_t * Pb_t).numpy()
    d_lo, d_hi = za[:, 0].numpy(), zb[:, 0].numpy()
    if np.any(first & (d_hi - d_lo < 1e-3)):
        raise RuntimeError("the two softmax branches merged during the bisection")

    # continuous case: steepest growth of p on the fine grid (implicit slope), parabolic refinement in ln P
    resp = local_response(
        "softmax",
        torch.as_tensor(fine.global_x.reshape(-1, 1)),
        Pf.reshape(-1),
        V.repeat_interleave(n_fine),
        L.repeat_interleave(n_fine),
        prior=prior,
        method=method,
    )
    p_f = 1 / (1 + (L.numpy()[:, None] - 1) * np.exp(-fine.global_x[..., 0]))  # (n, n_fine)
    slope = p_f * (1 - p_f) * resp["dx_dlnP"][:, 0].numpy().reshape(n, n_fine)  # dp/dlnP, (n, n_fine)
    m = np.clip(np.argmax(slope, 1), 1, n_fine - 2)
    lnP = np.log(Pf.numpy())
    y0, y1, y2 = (slope[rows, m + o] for o in (-1, 0, 1))
    h = lnP[rows, m + 1] - lnP[rows, m]
    shift = np.clip(0.5 * h * (y0 - y2) / np.where(y0 - 2 * y1 + y2 == 0, -1e-300, y0 - 2 * y1 + y2), -h, h)
    P_cont = np.exp(lnP[rows, m] + shift)
    d_cont = fine.global_x[rows, m, 0]

    P_star = np.where(first, P_first, P_cont)
    d_low, d_high = np.where(first, d_lo, d_cont), np.where(first, d_hi, d_cont)
    p = lambda d: 1 / (1 + (L.numpy() - 1) * np.exp(-d))  # noqa: E731
    return SoftmaxTransition(
        first_order=first.reshape(shape),
        P_star=P_star.reshape(shape),
        d_low=d_low.reshape(shape),
        d_high=d_high.reshape(shape),
        target_low=p(d_low).reshape(shape),
        target_high=p(d_high).reshape(shape),
        coexistence=co.reshape(shape + (2,)),
    )


# ------------------------------------------------------------------------------------------ public API
def critical_sample_size(
    kind: str, V: int, L: int, *, T: float = 1.0, sigma_G2: float = 1.0, sigma_W2: float = 1.0, method: str = "bayes"
) -> float:
    r"""The first transition in the training-set size P (DERIVED theory, :mod:`lib.theory`).

    Parameters
    ----------
    kind : {"linear", "softmax"}
        ``"linear"``: the continuous (second-order) onset of uniform pooling :math:`\hat c_1` in the book's linear
        model V2, :math:`A = (G+\beta J)/L` (:math:`\approx TV^2(1+(V-1)/L)` for :math:`L\gg V`, Bayes).
        ``"softmax"``: the first-order jump of the copy pattern (equal action of the two coexisting minima);
        if the minima never coexist (the rise is continuous, e.g. L = 16 with the Occam term) the P of steepest
        growth of the target attention is returned and a ``RuntimeWarning`` says so.
    V, L : int
        Vocabulary size and sequence length (integers >= 2; integer arrays give an array).
    T, sigma_G2, sigma_W2 : float
        Temperature and prior variances (> 0); :math:`\sigma_\beta^2 = 1`.
    method : {"bayes", "map"}
        With the Occam term (W integrated out) or without (W profiled, MAP).

    Returns
    -------
    float
    """
    check_choice("kind", kind, ("linear", "softmax"))
    check_method(method)
    prior = make_prior(T, sigma_G2, sigma_W2)
    Vt, Lt = check_sizes(V, L)
    if kind == "linear":
        return onset_sample_size("linear_v2", V, L, prior=prior, method=method)
    tr = first_order_transition(V, L, prior=prior, method=method)
    if not np.all(tr.first_order):
        warnings.warn(
            "softmax: the two minima never coexist here (continuous rise); returning the P of steepest "
            "growth of the target attention",
            RuntimeWarning,
            stacklevel=2,
        )
    return scalar_or_array(tr.P_star, Vt.dim() == 0 and Lt.dim() == 0)


def _global_path(model, V, L, P, prior, method, spec):
    """Global minimum, its slope and the centred explained fraction on a batch of P grids ``(n, n_g)``."""
    n, m = P.shape
    Vb, Lb = V[:, None].expand_as(P), L[:, None].expand_as(P)
    mins = minima(model, Vb, Lb, P, prior=prior, method=method, spec=spec)
    x = torch.as_tensor(mins.global_x.reshape(n * m, -1))  # (n * n_g, k)
    resp = local_response(model, x, P.reshape(-1), Vb.reshape(-1), Lb.reshape(-1), prior=prior, method=method)
    Q, R, _, _ = reduced_overlaps(model, x, Lb.reshape(-1))
    f = R**2 / (Lb.reshape(-1) * (Q + epsilon(P.reshape(-1), Vb.reshape(-1), Lb.reshape(-1), prior)))
    return x.reshape(n, m, -1), resp["dx_dlnP"][:, 1].reshape(n, m).numpy(), f.reshape(n, m).numpy()  # (n, n_g, ...)


def _log_grid(lo, hi, m):
    u = np.linspace(0, 1, m)
    return torch.as_tensor(np.exp(np.log(lo)[:, None] + np.log(hi / lo)[:, None] * u))  # (n, m)


def crossover_sample_size(
    V: int,
    L: int,
    *,
    T: float = 1.0,
    sigma_G2: float = 1.0,
    sigma_W2: float = 1.0,
    criterion: str = "steepest",
    bulk: bool = False,
    n_grid: int = 96,
    model: str | None = None,
):
    r"""The smooth crossover of a linear model to the copy pattern (DERIVED, ours); by default the book's model V2.

    Parameters
    ----------
    V, L : int
        Integers >= 2 (integer arrays broadcast and give an array).
    T, sigma_G2, sigma_W2 : float
        Temperature and prior variances (> 0); :math:`\sigma_\beta^2 = 1`.
    criterion : {"steepest", "half"}
        ``"steepest"``: P of maximal :math:`d\hat c_G/d\ln P` at the global minimum, beyond :math:`1.02 P_1` (the
        slope also has an integrable spike right at the onset :math:`P_1`, where :math:`\hat c_1 \propto
        \sqrt{P-P_1}` drags :math:`\hat c_G` along linearly; it is excluded). ``"half"``: P where the centred
        explained fraction :math:`R^2/(L(Q+\varepsilon))` first reaches 1/2.
    bulk : bool
        Use the spike+bulk action (``linear_v2_bulk``) instead of the saddle point over G.
    model : {"linear_v2", "linear_v2_bulk", "linear_v0"}, optional
        The linear model (overrides ``bulk``); ``"linear_v0"`` is the i.i.d. model A = G, for comparison.
    n_grid : int
        Points of the coarse log grid (then a fine grid of 64 points around the coarse estimate).

    Returns
    -------
    float
        NaN (with a ``RuntimeWarning``) where no crossover separates from the onset (``L`` not above ``V``).
        Bayesian (with Occam term) crossover point; :file:`paperA_linear.md` quotes
        :math:`\approx TL^{3/2}V^{1/2}` for V2 (our fits are in the report) and :math:`\approx L^2` with the bulk.
    """
    check_choice("criterion", criterion, ("steepest", "half"))
    if isinstance(n_grid, bool) or not isinstance(n_grid, int) or n_grid < 8:
        raise ValueError(f"n_grid must be an int >= 8, got {n_grid!r}")
    if not isinstance(bulk, bool):
        raise TypeError(f"bulk must be a bool, got {type(bulk).__name__}")
    prior = make_prior(T, sigma_G2, sigma_W2)
    Vt, Lt = check_sizes(V, L)
    scalar = Vt.dim() == 0 and Lt.dim() == 0
    Vt, Lt = torch.broadcast_tensors(Vt, Lt)
    shape = Vt.shape
    Vt, Lt = Vt.reshape(-1), Lt.reshape(-1)  # (n,)
    if model is None:
        model = "linear_v2_bulk" if bulk else "linear_v2"
    check_choice("model", model, ("linear_v2", "linear_v2_bulk", "linear_v0"))
    rows = np.arange(Vt.shape[0])
    P1 = np.asarray(onset_sample_size(model, Vt, Lt, prior=prior)).reshape(-1)  # (n,)
    est = (T * (Vt**2 + Lt**1.5 * Vt**0.5 + Lt**2) / np.sqrt(sigma_G2 * sigma_W2)).numpy()
    Pc = _log_grid(1.02 * P1, 50 * np.maximum(est, P1), n_grid)  # (n, n_grid)
    x, slope, f = _global_path(model, Vt, Lt, Pc, prior, "bayes", GridSpec())
    Pn = Pc.numpy()
    if criterion == "steepest":
        peak = np.zeros_like(slope, dtype=bool)
        peak[:, 1:-1] = (slope[:, 1:-1] > slope[:, :-2]) & (slope[:, 1:-1] >= slope[:, 2:])  # interior local maxima
        merged = ~peak.any(1)
        k = np.clip(np.argmax(np.where(peak, slope, -np.inf), 1), 1, n_grid - 2)
        Pf = _log_grid(Pn[rows, k - 1], Pn[rows, k + 1], 64)
        _, sf, _ = _global_path(model, Vt, Lt, Pf, prior, "bayes", GridSpec())
        m = np.clip(np.argmax(sf, 1), 1, 62)
        lnP = np.log(Pf.numpy())
        y0, y1, y2 = (sf[rows, m + o] for o in (-1, 0, 1))
        h = lnP[rows, m + 1] - lnP[rows, m]
        curv = y0 - 2 * y1 + y2
        shift = np.clip(0.5 * h * (y0 - y2) / np.where(curv == 0, -1e-300, curv), -h, h)
        out = np.exp(lnP[rows, m] + shift)
    else:
        above = f >= 0.5
        if not above.any(1).all():
            raise RuntimeError("the centred explained fraction does not reach 1/2 inside the search grid")
        merged = above[:, 0]
        k = np.clip(np.argmax(above, 1), 1, n_grid - 1)
        Pf = _log_grid(Pn[rows, k - 1], Pn[rows, k], 64)
        _, _, ff = _global_path(model, Vt, Lt, Pf, prior, "bayes", GridSpec())
        j = np.clip(np.argmax(ff >= 0.5, 1), 1, 63)
        lnP = np.log(Pf.numpy())
        f0, f1 = ff[rows, j - 1], ff[rows, j]
        out = np.exp(lnP[rows, j - 1] + (0.5 - f0) / (f1 - f0) * (lnP[rows, j] - lnP[rows, j - 1]))
    if merged.any():
        warnings.warn(
            f"no separate crossover for (V, L) = {list(zip(Vt[merged].tolist(), Lt[merged].tolist()))}: "
            "the copy pattern grows from the onset itself (L <~ V); returning NaN there",
            RuntimeWarning,
            stacklevel=2,
        )
        out = np.where(merged, np.nan, out)
    return scalar_or_array(out.reshape(shape), scalar)


def fit_power_law(y, **variables) -> dict:
    r"""Least-squares fit of :math:`\ln y = \ln c + \sum_k \alpha_k \ln x_k`; returns ``{"prefactor": c, name: alpha}``.

    Example: ``fit_power_law(P, L=Ls, V=Vs)`` gives the exponents of L and V (all inputs > 0, same length).
    """
    if not variables:
        raise ValueError("give at least one variable, e.g. fit_power_law(P, L=Ls)")
    try:
        arrays = np.broadcast_arrays(
            np.asarray(y, dtype=float), *(np.asarray(v, dtype=float) for v in variables.values())
        )
    except ValueError as err:
        raise ValueError(f"y and the variables {tuple(variables)} must broadcast to one shape") from err
    y, cols = arrays[0].ravel(), [a.ravel() for a in arrays[1:]]
    if y.size < len(cols) + 1:
        raise ValueError(f"need at least {len(cols) + 1} points to fit {len(cols)} exponents, got {y.size}")
    if np.any(y <= 0) or any(np.any(c <= 0) for c in cols) or not np.all(np.isfinite(y)):
        raise ValueError("y and all variables must be finite and > 0")
    X = np.stack([np.ones_like(y)] + [np.log(c) for c in cols], 1)
    coef, *_ = np.linalg.lstsq(X, np.log(y), rcond=None)
    return {"prefactor": float(np.exp(coef[0])), **{k: float(a) for k, a in zip(variables, coef[1:])}}


#: Candidate laws for the softmax P*(L) (paper A's L ln²L and the competitors the claims review names).
SCALING_LAWS = {
    "L ln²L": lambda L: L * np.log(L) ** 2,
    "L ln L": lambda L: L * np.log(L),
    "L^1.25": lambda L: L**1.25,
    "L^1.5": lambda L: L**1.5,
}


def compare_scaling_laws(P, L, laws: dict | None = None) -> dict:
    r"""How well each law :math:`P = c\,f(L)` (one free prefactor, no free exponent) describes ``P`` over ``L``.

    For each law the prefactor is fitted in log space, :math:`\ln c = \overline{\ln P - \ln f(L)}`, and the
    root-mean-square residual :math:`\big(\overline{(\ln P - \ln c - \ln f(L))^2}\big)^{1/2}` is returned: 0 is an
    exact description; a law that is right only asymptotically shows a residual from the drift of the prefactor.
    Returns ``{name: rms}`` (``laws`` default: :data:`SCALING_LAWS`).
    """
    laws = SCALING_LAWS if laws is None else laws
    P, L = np.asarray(P, dtype=float).ravel(), np.asarray(L, dtype=float).ravel()
    if P.shape != L.shape or P.size < 3:
        raise ValueError(f"P and L must have the same length >= 3, got {P.size} and {L.size}")
    if not (np.all(np.isfinite(P)) and np.all(P > 0) and np.all(L > 1)):
        raise ValueError("P must be finite and > 0, L > 1")
    out = {}
    for name, f in laws.items():
        r = np.log(P) - np.log(f(L))
        out[name] = float(np.sqrt(np.mean((r - r.mean()) ** 2)))
    return out


def law_ratio(P, L, law: str = "L ln²L", laws: dict | None = None) -> float:
    r"""The best rival's RMS log-residual over that of ``law`` (:func:`compare_scaling_laws`, one prefactor each):
    above 1 ``law`` describes ``P`` over ``L`` better than every other law of ``laws`` (default
    :data:`SCALING_LAWS`), below 1 some rival does better. ``inf`` when ``law`` is exact and no rival is."""
    laws = SCALING_LAWS if laws is None else laws
    if law not in laws or len(laws) < 2:
        raise ValueError(f"law must be one of {list(laws)} and have at least one rival, got {law!r}")
    res = compare_scaling_laws(P, L, laws)
    rival = min(v for k, v in res.items() if k != law)
    if res[law] == 0.0:
        return math.inf if rival > 0 else 1.0
    return rival / res[law]
