r"""Transition points of sampled curves and their scaling exponents (chapter 4's linear-scaling study).

Two points of a curve over the training-set size P, each defined once here:

* :func:`crossover_point` -- the first P at which a share reaches a level (1/2: the copy pattern carries half the
  non-uniform attention), log-linear interpolation between grid points; the sample version of the theory's
  ``criterion="half"`` (:func:`lib.theory.crossover_sample_size`);
* :func:`onset_point` -- the change point of a hinge fit :math:`c_1^2 = a + k\max(0, \ln P - \ln P_1)`. Chapter
  3's theory has :math:`\hat c_1^2` growing linearly in :math:`\ln(P/P_1)` above its onset (to within 30 % from
  :math:`P_1` to :math:`8P_1`), so the change point estimates :math:`P_1` without assuming its value; the floor
  :math:`a` absorbs the posterior's fluctuations below the onset.

:func:`scaling_exponents` fits :math:`\ln P = \ln k + b\ln L + c\ln V` (:func:`fit_exponents`) to the per-cell
means of :math:`\ln P` over data draws of a :class:`~lib.studies.linear_scaling.LinearScaling` study, with bootstrap
intervals that resample the draws within each cell; :func:`theory_exponents` makes the same fit on the theory's own
points at the same cells, so each theory's prediction *for this design* stands beside the samples.

Kept apart from the study's module so that a change here does not invalidate the committed samples.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = [
    "crossover_point",
    "onset_point",
    "fit_exponents",
    "fit_power_laws",
    "scaling_points",
    "scaling_exponents",
    "theory_points",
    "theory_exponents",
    "onset_calibration",
    "WHICH",
]

WHICH = ("onset", "crossover")


def _check_curve(P, y, name: str) -> tuple[np.ndarray, np.ndarray]:
    P, y = np.asarray(P, dtype=float), np.asarray(y, dtype=float)
    if P.ndim != 1 or P.shape != y.shape or P.size < 2:
        raise ValueError(f"P and {name} must be 1-D of one length >= 2, got {P.shape} and {y.shape}")
    if not (np.all(P > 0) and np.all(np.diff(P) > 0)):
        raise ValueError("P must be positive and increasing")
    return P, y


def crossover_point(P, share, level: float = 0.5) -> float:
    r"""First P at which ``share`` reaches ``level`` (log-linear interpolation); NaN if it never does.

    NaN also when ``share`` is already at ``level`` at the first grid point (no crossing inside the grid).
    """
    P, share = _check_curve(P, share, "share")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    above = np.flatnonzero(share >= level)
    if above.size == 0 or above[0] == 0 or not np.isfinite(share[: above[0] + 1]).all():
        return float("nan")
    j = above[0]
    x0, x1 = np.log(P[j - 1]), np.log(P[j])
    f0, f1 = share[j - 1], share[j]
    return float(np.exp(x0 + (level - f0) / (f1 - f0) * (x1 - x0)))


def onset_point(P, c1, share, *, max_share: float = 0.1, rise: float = 0.5, n_candidates: int = 400) -> float:
    r"""Change point :math:`P_1` of the hinge fit :math:`c_1^2 = a + k\max(0, \ln P - \ln P_1)`, :math:`k > 0`.

    Fitted by least squares on the grid points before the crossover (those before the first point with
    ``share >= max_share``; non-finite points, e.g. of diverged chains, left out) and on the lower part of the rise
    (:math:`c_1^2` at most ``rise`` times its largest value there: the linear-in-:math:`\ln P` form holds near the
    onset, not over decades), the change point searched on ``n_candidates`` values of :math:`\ln P_1` between the
    second and the second-to-last of those points (a change point needs points on both sides). NaN with fewer than 5
    such points or no increasing fit. Applied to the theory's own curves on the study's grids it recovers the
    theory's onset (:func:`onset_calibration`).
    """
    P, c1 = _check_curve(P, c1, "c1")
    _, share = _check_curve(P, share, "share")
    past = np.flatnonzero(share >= max_share)
    before = np.arange(P.size) < (past[0] if past.size else P.size)
    keep = before & np.isfinite(c1) & np.isfinite(share)
    if keep.sum() < 5:
        return float("nan")
    if not 0 < rise <= 1:
        raise ValueError(f"rise must lie in (0, 1], got {rise!r}")
    y_all = np.where(keep, c1**2, np.nan)
    keep &= y_all <= rise * np.nanmax(y_all)
    if keep.sum() < 5:
        return float("nan")
    x, y = np.log(P[keep]), c1[keep] ** 2
    t = np.linspace(x[1], x[-2], n_candidates)  # (n_c,) candidate ln P1
    h = np.maximum(0.0, x[None, :] - t[:, None])  # (n_c, n)
    hc = h - h.mean(1, keepdims=True)
    yc = y - y.mean()
    k = (hc * yc).sum(1) / np.maximum((hc * hc).sum(1), 1e-300)  # (n_c,) slope
    sse = ((yc[None, :] - k[:, None] * hc) ** 2).sum(1)
    sse = np.where(k > 0, sse, np.inf)
    if not np.isfinite(sse).any():
        return float("nan")
    return float(np.exp(t[np.argmin(sse)]))


def fit_exponents(values, V, L) -> dict[str, float]:
    r"""Least squares :math:`\ln y = \ln k + b\ln L + c\ln V`: ``{"L": b, "V": c, "prefactor": k}``.

    ``values``, ``V``, ``L``: one entry per cell (finite, > 0); with a single distinct V (or L) that exponent is
    not fitted (NaN).
    """
    y, V, L = (np.asarray(a, dtype=float) for a in (values, V, L))
    if not (y.shape == V.shape == L.shape and y.ndim == 1):
        raise ValueError("values, V and L must be 1-D of one length")
    if not (np.isfinite(y).all() and (y > 0).all()):
        return {"L": float("nan"), "V": float("nan"), "prefactor": float("nan")}
    cols, names = [np.ones_like(y)], ["prefactor"]
    for name, x in (("L", L), ("V", V)):
        if np.unique(x).size > 1:
            cols.append(np.log(x))
            names.append(name)
    X = np.stack(cols, 1)
    if X.shape[0] < X.shape[1]:
        raise ValueError(f"{X.shape[0]} cells cannot fit {X.shape[1]} parameters")
    coef, *_ = np.linalg.lstsq(X, np.log(y), rcond=None)
    out = {"L": float("nan"), "V": float("nan")} | dict(zip(names, coef.tolist()))
    out["prefactor"] = float(np.exp(out["prefactor"]))
    return out


def fit_power_laws(curves: dict, *, where=None, **variables) -> dict:
    r"""One power-law fit per curve: :math:`\ln y = \ln c + \sum_k \alpha_k \ln x_k` for every ``y`` in ``curves``.

    The same least squares as :func:`lib.theory.fit_power_law`, applied to a set of curves that share their
    variables (e.g. :math:`P^*` of the MAP and the Bayes theory against the same :math:`L`), in one call.

    Parameters
    ----------
    curves : dict ``{name: y}``
        The values to fit, each an array that the variables broadcast to.
    where : bool array, or dict ``{name: bool array}``, optional
        The points to fit: one mask for every curve, or one per curve (then for every name of ``curves``).
    **variables : array
        The :math:`x_k`, by name (the names of the exponents in the result).

    Returns
    -------
    dict ``{name: {"prefactor": c, variable: alpha, ...}}``, in the order of ``curves``.

    Raises
    ------
    ValueError
        No curves or variables, masks not matching the curves, or (from the fit) fewer points than parameters and
        values that are not finite and > 0.
    """
    from ..theory import fit_power_law  # imported here, as in theory_points: lib.theory imports lib

    if not isinstance(curves, dict) or not curves:
        raise ValueError("curves must be a non-empty dict {name: y}")
    if not variables:
        raise ValueError("give at least one variable, e.g. fit_power_laws(curves, L=Ls)")
    if isinstance(where, dict) and set(where) != set(curves):
        raise ValueError(f"where must have one mask per curve {sorted(curves)}, got {sorted(where)}")
    out = {}
    for name, y in curves.items():
        y = np.asarray(y, dtype=float)
        xs = {k: np.broadcast_to(np.asarray(v, dtype=float), y.shape) for k, v in variables.items()}
        mask = where.get(name) if isinstance(where, dict) else where
        if mask is not None:
            mask = np.broadcast_to(np.asarray(mask, dtype=bool), y.shape)
            y, xs = y[mask], {k: v[mask] for k, v in xs.items()}
        out[name] = fit_power_law(y, **xs)
    return out


def _check_which(which: str) -> str:
    if which not in WHICH:
        raise ValueError(f"which must be one of {WHICH}, got {which!r}")
    return which


def scaling_points(study, which: str) -> dict:
    """``{cell: (n_draw,)}``: :math:`P_1` (``"onset"``) or :math:`P_\\times` (``"crossover"``) per data draw.

    Each from the means over chains of one draw: :func:`onset_point` on the uniform coefficient (with the copy
    share marking the crossover), :func:`crossover_point` on the copy share. Chains that diverged (NaN) are left
    out of the means; a (draw, P) whose chains all diverged stays NaN.
    """
    _check_which(which)
    out = {}
    for cell in study.config.cells:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices stay NaN
            c1, share = np.nanmean(study.c1[cell], -1), np.nanmean(study.share[cell], -1)  # (n_draw, n_P)
        P = study.P[cell]
        if which == "onset":
            out[cell] = np.array([onset_point(P, c1[d], share[d]) for d in range(c1.shape[0])])
        else:
            out[cell] = np.array([crossover_point(P, share[d]) for d in range(share.shape[0])])
    return out


def _cells_VL(study):
    cells = study.config.cells
    return np.array([c[0] for c in cells], float), np.array([c[1] for c in cells], float)


def scaling_exponents(study, which: str, *, n_boot: int = 2000, seed: int = 0, level: float = 0.9) -> dict:
    r"""Exponents of ``which`` against L and V, each an :class:`~lib.core.stats.Interval` over data draws.

    Returns ``{"L": Interval, "V": Interval, "missing": n}``: the value is the fit of the per-cell means of
    :math:`\ln P` (draws without a point are left out and counted in ``missing``); the interval is the central
    ``level`` of the fits to cells whose draws were resampled with replacement, cell by cell. An exponent the design
    cannot fit (one distinct V or L), or a cell without any point, gives NaN throughout.
    """
    from ..core.stats import Interval

    pts = scaling_points(study, which)
    V, L = _cells_VL(study)
    logs = [np.log(v[np.isfinite(v)]) for v in pts.values()]
    missing = int(sum(np.isnan(v).sum() for v in pts.values()))
    n = int(sum(v.size for v in logs))
    nan = float("nan")
    if any(v.size == 0 for v in logs):
        return {"L": Interval(nan, nan, nan, level, n), "V": Interval(nan, nan, nan, level, n), "missing": missing}
    fit = fit_exponents(np.exp([v.mean() for v in logs]), V, L)
    rng = np.random.default_rng(seed)
    boots = {"L": [], "V": []}
    for _ in range(n_boot):
        f = fit_exponents(np.exp([rng.choice(v, v.size).mean() for v in logs]), V, L)
        boots["L"].append(f["L"])
        boots["V"].append(f["V"])
    out = {"missing": missing}
    for k, b in boots.items():
        lo, hi = np.quantile(b, [(1 - level) / 2, (1 + level) / 2]) if np.isfinite(b).all() else (nan, nan)
        out[k] = Interval(float(fit[k]), float(lo), float(hi), level, n)
    return out


def theory_points(study, which: str, model: str) -> np.ndarray:
    """The theory's :math:`P_1` or :math:`P_\\times` (``criterion="half"``) at each cell of ``study``, ``(n_cells,)``.

    ``model``: ``"saddle"`` (chapter 3's ``linear_v2``) or ``"bulk"`` (``linear_v2_bulk``).
    """
    from ..theory import crossover_sample_size, onset_sample_size

    _check_which(which)
    if model not in ("saddle", "bulk"):
        raise ValueError(f"model must be 'saddle' or 'bulk', got {model!r}")
    p = study.config.prior
    V, L = (np.array(x) for x in zip(*study.config.cells))  # (n_cells,) each: one vectorised solve per theory
    if which == "onset":
        return np.asarray(
            onset_sample_size("linear_v2_bulk" if model == "bulk" else "linear_v2", V, L, prior=p), dtype=float
        ).reshape(-1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(
            crossover_sample_size(
                V, L, T=p.T, sigma_G2=p.sigma_G2, sigma_W2=p.sigma_W2, criterion="half", bulk=model == "bulk"
            ),
            dtype=float,
        ).reshape(-1)


def theory_exponents(study, which: str, model: str, points=None) -> dict:
    """:func:`fit_exponents` of :func:`theory_points` over the same cells (``points``: those, if already computed)."""
    V, L = _cells_VL(study)
    return fit_exponents(theory_points(study, which, model) if points is None else points, V, L)


def onset_calibration(study) -> np.ndarray:
    """:func:`onset_point` applied to the spike+bulk theory's own curves on each cell's grid, over the theory's onset.

    ``(n_cells,)``; 1 means the estimator recovers the onset exactly on a curve whose onset is known, so the
    estimator's bias on this design is measured before it is applied to samples.
    """
    from ..theory import onset_sample_size, order_parameters_vs_P

    p = study.config.prior
    out = []
    for V, L in study.config.cells:
        P = np.asarray(study.P[V, L], dtype=float)
        t = order_parameters_vs_P("linear_v2_bulk", V, L, P, prior=p, method="bayes")
        out.append(onset_point(P, t.x[:, 0], t.explained) / float(onset_sample_size("linear_v2_bulk", V, L, prior=p)))
    return np.array(out)
