r"""Chapter 3's readouts of the reduced theory: what its curves against P show, and how its critical sizes scale.

Each function makes the set of :mod:`lib.theory` calls a chapter would otherwise write out (or loop over), and
returns the results unchanged, for the figures, with a printable ``table()`` and a ``summary()`` of the numbers the
prose quotes:

* :func:`linear_curve_readouts` -- on the global minimum of a linear action along a grid of P: where uniform
  pooling :math:`\hat c_1` and copying :math:`\hat c_G` first reach half their largest value, the drops of the Bayes
  test loss (:func:`lib.loss_drops`), and the largest change of :math:`\hat c_G` between neighbouring grid points
  (a jump would put a finite share of :math:`\hat c_G` into one step);
* :func:`softmax_scaling` -- the first-order :math:`P^*(L)` of several theories (MAP, Bayes), the power-law fit
  :math:`P^* = c\,(L\ln^2L)^{\alpha}` over two ranges of L, and the comparison of paper A's law :math:`L\ln^2L` with
  its rivals at one free prefactor each (:func:`lib.theory.compare_scaling_laws`);
* :func:`onset_scaling` -- the second-order onset :math:`P_1(V)` of linear models at one L, and its exponent in V;
* :func:`crossover_scaling` -- the linear crossover :math:`P_\times(V, L)` of the book's model (at the saddle point
  and with the bulk of G) and of the i.i.d. model, with the fits :math:`P_\times = c\,L^{a}V^{b}`;
* :func:`sample_efficiency` -- the linear crossover :math:`P_\times` over the Bayes softmax :math:`P^*`, on one grid
  of L.

All of it is DERIVED (ours), from the reduced actions of :mod:`lib.theory`; the fits are least squares in log space
(:func:`lib.theory.fit_power_law`, :func:`lib.fit_power_laws`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ..measures.grids import LossDrops, loss_drops
from ..train.scaling_fits import fit_power_laws

__all__ = [
    "LAW",
    "LinearCurveReadouts",
    "linear_curve_readouts",
    "SoftmaxScaling",
    "softmax_scaling",
    "OnsetScaling",
    "onset_scaling",
    "CrossoverScaling",
    "crossover_scaling",
    "SampleEfficiency",
    "sample_efficiency",
]

#: Paper A's law for the softmax :math:`P^*`, as named in :data:`lib.theory.SCALING_LAWS`.
LAW = "L ln²L"


def _sizes(name: str, x, *, least: int = 2) -> np.ndarray:
    """A 1-D, strictly increasing grid of integer sizes >= ``least`` (ValueError otherwise)."""
    a = np.asarray(x)
    if a.ndim != 1 or a.size == 0 or not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"{name} must be a non-empty 1-D array of integers, got {x!r}")
    if a.min() < least or np.any(np.diff(a) <= 0):
        raise ValueError(f"{name} must be strictly increasing and >= {least}, got {a.tolist()}")
    return a


def _size(name: str, x, *, least: int = 2) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < least:
        raise ValueError(f"{name} must be an int >= {least}, got {x!r}")
    return int(x)


def _half_point(P: np.ndarray, y: np.ndarray) -> float:
    """The first grid P at which ``y`` reaches half its largest value on the grid."""
    return float(P[np.argmax(y >= 0.5 * y.max())])


# --------------------------------------------------------------------------------------- linear curves against P
@dataclass(frozen=True)
class LinearCurveReadouts:
    r"""What the global minimum of a linear action shows along a grid of P (:func:`linear_curve_readouts`).

    Attributes
    ----------
    c1_half, cG_half : float
        The first grid P at which uniform pooling :math:`\hat c_1` (copying :math:`\hat c_G`) reaches half its
        largest value on the grid.
    drops : LossDrops
        The drops of the Bayes test loss (:func:`lib.loss_drops`).
    max_step : float
        :math:`\max_k |\hat c_G(P_{k+1}) - \hat c_G(P_k)|`, the largest change of the copy coefficient between
        neighbouring grid points.
    cG_max : float
        The largest :math:`\hat c_G` on the grid.
    step_share : float
        ``max_step`` as a share of the range of :math:`\hat c_G` on the grid (max minus min): what claim A-lin-order
        measures (a jump puts a finite share of the range in one grid step).
    grid_ratio : float
        :math:`P_1/P_0` of the grid (its constant ratio when geometric).
    """

    c1_half: float
    cG_half: float
    drops: LossDrops
    max_step: float
    cG_max: float
    grid_ratio: float
    step_share: float

    def summary(self) -> dict:
        """``c1_half``, ``cG_half``, ``drop1`` and ``drop2`` (the first and last drop's P, NaN without a drop),
        ``n_drops``, ``plateau_ratio`` (:attr:`LossDrops.plateau_ratio`), ``max_step``, ``cG_max``, ``grid_ratio``."""
        P = self.drops.P_peaks
        nan = float("nan")
        return {
            "c1_half": self.c1_half,
            "cG_half": self.cG_half,
            "drop1": float(P[0]) if P.size else nan,
            "drop2": float(P[-1]) if P.size else nan,
            "n_drops": int(P.size),
            "plateau_ratio": self.drops.plateau_ratio,
            "max_step": self.max_step,
            "cG_max": self.cG_max,
            "grid_ratio": self.grid_ratio,
            "step_share": self.step_share,
        }

    def table(self) -> str:
        s = self.summary()
        return "\n".join(
            [
                f"c_1 reaches half its maximum at P = {s['c1_half']:.0f}, c_G at P = {s['cG_half']:.0f}",
                f"loss drops at P = {np.round(self.drops.P_peaks, 0)}, plateau ratio {s['plateau_ratio']:.2f}",
                f"largest change of c_G between neighbouring P (grid ratio {s['grid_ratio']:.3f}): {s['max_step']:.4f} "
                f"(of {s['cG_max']:.3f})",
            ]
        )


def linear_curve_readouts(curve) -> LinearCurveReadouts:
    r"""Read the order of events off the global minimum of a linear action along P.

    Parameters
    ----------
    curve : OrderParameters
        :func:`lib.theory.order_parameters_vs_P` of a linear model (order parameters :math:`(\hat c_1, \hat c_G)`),
        on an increasing grid of at least 5 sizes.

    Returns
    -------
    LinearCurveReadouts
        With :math:`\hat c_1 = ` ``curve.x[:, 0]``, :math:`\hat c_G = ` ``curve.x[:, 1]`` and the drops of
        ``curve.bayes_test_loss``.
    """
    if not str(getattr(curve, "model", "")).startswith("linear"):
        got = getattr(curve, "model", curve)
        raise ValueError(f"curve must be the order parameters of a linear model, got {got!r}")
    P, x = np.asarray(curve.P, dtype=float), np.asarray(curve.x, dtype=float)
    if x.ndim != 2 or x.shape != (P.size, 2) or P.size < 5:
        raise ValueError(f"curve must have (c_1, c_G) at >= 5 sizes, got x of shape {x.shape} for {P.size} sizes")
    return LinearCurveReadouts(
        c1_half=_half_point(P, x[:, 0]),
        cG_half=_half_point(P, x[:, 1]),
        drops=loss_drops(P, curve.bayes_test_loss),
        max_step=float(np.abs(np.diff(x[:, 1])).max()),
        cG_max=float(x[:, 1].max()),
        grid_ratio=float(P[1] / P[0]),
        step_share=float(np.abs(np.diff(x[:, 1])).max() / (x[:, 1].max() - x[:, 1].min())),
    )


# ------------------------------------------------------------------------------------------- softmax P*(L)
@dataclass(frozen=True)
class SoftmaxScaling:
    r"""The softmax :math:`P^*` on a grid of L and its scaling (:func:`softmax_scaling`).

    Attributes
    ----------
    V : int
    L : ndarray ``(n_L,)``
    LlnL : ndarray ``(n_L,)``
        :math:`L\ln^2L`, the variable of the fits.
    scan : dict ``{method: SoftmaxTransition}``
        :func:`lib.theory.first_order_transition` on the whole grid.
    fitted : dict ``{method: bool (n_L,)}``
        The sizes fitted: first order (two coexisting minima) and :math:`L \ge` ``fit_from``.
    fits, fits_top : dict ``{method: {"prefactor": c, "LlnL": alpha}}``
        :math:`P^* = c\,(L\ln^2L)^{\alpha}` over the fitted sizes, and over those with :math:`L \ge` ``top_from``.
    laws : dict ``{method: {law: rms}}``
        RMS log-residual of each law of :data:`lib.theory.SCALING_LAWS` (one free prefactor) over the fitted sizes.
    fit_from, top_from : int
    """

    V: int
    L: np.ndarray
    LlnL: np.ndarray
    scan: dict
    fitted: dict
    fits: dict
    fits_top: dict
    laws: dict
    fit_from: int
    top_from: int

    @property
    def best_law(self) -> dict:
        """``{method: name}`` of the law with the smallest residual."""
        return {m: min(r, key=r.get) for m, r in self.laws.items()}

    @property
    def law_ratio(self) -> dict:
        r"""``{method: ratio}``: the best rival's residual over that of :data:`LAW`; above 1, paper A's law fits better
        than every rival."""
        return {m: min(v for k, v in r.items() if k != LAW) / r[LAW] for m, r in self.laws.items()}

    def P_star(self, method: str, L: int) -> float:
        """:math:`P^*` of ``method`` at the grid size ``L``."""
        if method not in self.scan or L not in self.L:
            raise ValueError(
                f"method must be one of {list(self.scan)} and L one of {self.L.tolist()}, got {method!r}, {L!r}"
            )
        return float(self.scan[method].P_star[self.L == L][0])

    def summary(self) -> dict:
        """Per method ``m``: ``exp_m`` and ``exp_top_m`` (the fitted exponents), ``best_m`` (name of the best law),
        ``ratio_m`` (:attr:`law_ratio`), ``res_law_m`` (the residual of :data:`LAW`) and ``res_best_m`` (the
        smallest residual); ``L_max``, the largest L of the grid."""
        out = {"L_max": int(self.L.max())}
        for m in self.scan:
            out |= {
                f"exp_{m}": self.fits[m]["LlnL"],
                f"exp_top_{m}": self.fits_top[m]["LlnL"],
                f"best_{m}": self.best_law[m],
                f"ratio_{m}": self.law_ratio[m],
                f"res_law_{m}": self.laws[m][LAW],
                f"res_best_{m}": min(self.laws[m].values()),
            }
        return out

    def table(self) -> str:
        """Per method: :math:`P^*` on the grid, where it is first order, the two fitted exponents and the prefactor
        :math:`P^*/(L\\ln^2L)`."""
        lines = []
        for m, tr in self.scan.items():
            lines += [
                f"{m}: P* = {np.round(tr.P_star, 0)}; first order: {tr.first_order}",
                f"   exponent of L ln^2 L: {self.fits[m]['LlnL']:.3f} (L >= {self.fit_from}), "
                f"{self.fits_top[m]['LlnL']:.3f} (L >= {self.top_from})",
                f"   P*/(L ln^2 L) = {np.round(tr.P_star / self.LlnL, 3)}",
            ]
        return "\n".join(lines)

    def law_table(self) -> str:
        """Per method: the RMS log-residual of every law."""
        return "\n".join(
            f"{m}: RMS log-residual per law: " + ", ".join(f"{k} {v:.3f}" for k, v in r.items())
            for m, r in self.laws.items()
        )


def softmax_scaling(V: int, L, *, methods=("map", "bayes"), fit_from: int = 32, top_from: int = 128) -> SoftmaxScaling:
    r"""Locate the softmax :math:`P^*` on a grid of L for each method, fit its growth and compare scaling laws.

    For each method, :math:`P^*(L)` is the equal-action point of the two minima of the reduced action
    (:func:`lib.theory.first_order_transition`). Over the sizes where the transition is first order and
    :math:`L \ge` ``fit_from`` it fits :math:`\ln P^* = \ln c + \alpha\ln(L\ln^2L)`, again over :math:`L \ge`
    ``top_from`` alone (a drift of :math:`\alpha` between the two is what a slowly varying prefactor looks like), and
    computes each law's RMS log-residual with one free prefactor (:func:`lib.theory.compare_scaling_laws`).

    Parameters
    ----------
    V : int
        Vocabulary size, >= 2.
    L : int array ``(n_L,)``
        Strictly increasing sequence lengths >= 2.
    methods : tuple of {"map", "bayes"}
    fit_from, top_from : int
        The smallest L of the two fits (``fit_from <= top_from``).

    Returns
    -------
    SoftmaxScaling
    """
    from ..theory import compare_scaling_laws, first_order_transition  # here: lib.theory imports lib

    V, L = _size("V", V), _sizes("L", L)
    if not methods or any(m not in ("map", "bayes") for m in methods) or len(set(methods)) != len(methods):
        raise ValueError(f"methods must be distinct values of ('map', 'bayes'), got {methods!r}")
    if not 2 <= fit_from <= top_from:
        raise ValueError(f"need 2 <= fit_from <= top_from, got {fit_from}, {top_from}")
    LlnL = L * np.log(L) ** 2
    scan = {m: first_order_transition(V, L, method=m) for m in methods}
    fitted = {m: tr.first_order & (L >= fit_from) for m, tr in scan.items()}
    P_star = {m: tr.P_star for m, tr in scan.items()}
    fits = fit_power_laws(P_star, where=fitted, LlnL=LlnL)
    fits_top = fit_power_laws(P_star, where={m: w & (L >= top_from) for m, w in fitted.items()}, LlnL=LlnL)
    laws = {m: compare_scaling_laws(tr.P_star[fitted[m]], L[fitted[m]]) for m, tr in scan.items()}
    return SoftmaxScaling(V, L, LlnL, scan, fitted, fits, fits_top, laws, fit_from, top_from)


# --------------------------------------------------------------------------------------------- linear onset P1(V)
@dataclass(frozen=True)
class OnsetScaling:
    r"""The second-order onset :math:`P_1` of linear models against V at one L (:func:`onset_scaling`).

    Attributes
    ----------
    V : ndarray ``(n_V,)``
    L : int
    onsets : dict ``{model: (n_V,)}``
        :func:`lib.theory.onset_sample_size` (Bayes).
    exponents : dict ``{model: alpha}``
        The fitted exponent of :math:`P_1 = c\,V^{\alpha}`.
    """

    V: np.ndarray
    L: int
    onsets: dict
    exponents: dict

    def table(self) -> str:
        return "\n".join(
            f"{m}: onset P1 (L = {self.L}) = {np.round(p, 0)}, exponent of V {self.exponents[m]:.3f}"
            for m, p in self.onsets.items()
        )


def onset_scaling(V, L: int, models=("linear_v2", "linear_v0")) -> OnsetScaling:
    r"""The Bayes onset :math:`P_1(V)` of each linear model at one L, and the exponent of :math:`P_1 = c\,V^{\alpha}`.

    The onset is where the trivial minimum of the action loses its stability (:func:`lib.theory.onset_sample_size`);
    for the book's model it is close to :math:`TV^2(1 + (V-1)/L)`, so at :math:`L \gg V` the exponent tends to 2.

    Parameters
    ----------
    V : int array ``(n_V,)``
        At least two strictly increasing vocabulary sizes >= 2.
    L : int
    models : tuple of str
        Linear models of :mod:`lib.theory` (``"linear_v2"``, ``"linear_v0"``, ``"linear_v2_bulk"``).

    Returns
    -------
    OnsetScaling
    """
    from ..theory import onset_sample_size  # here: lib.theory imports lib

    V, L = _sizes("V", V), _size("L", L)
    if V.size < 2:
        raise ValueError("V needs at least two sizes to fit an exponent")
    if not models or any(not str(m).startswith("linear") for m in models):
        raise ValueError(f"models must be linear models, got {models!r}")
    onsets = {m: np.asarray(onset_sample_size(m, V, L, method="bayes")) for m in models}
    exponents = {m: fit["V"] for m, fit in fit_power_laws(onsets, V=V).items()}
    return OnsetScaling(V, L, onsets, exponents)


# ------------------------------------------------------------------------------------- linear crossover Px(V, L)
@dataclass(frozen=True)
class CrossoverScaling:
    r"""The linear crossover on grids of (V, L) and its fits (:func:`crossover_scaling`).

    Attributes
    ----------
    V, L : ndarray ``(n_V, n_L)``
        The grid (``np.meshgrid(..., indexing="ij")``: V along rows).
    separate : bool ndarray ``(n_V, n_L)``
        The cells fitted, :math:`L \ge` ``separation`` :math:`\cdot V`, where the two linear scales separate.
    saddle : ndarray ``(n_V, n_L)``
        :math:`P_\times` of the book's model at the saddle point (NaN where no crossover separates from the onset).
    iid, iid_onset : ndarray ``(n_V, n_L)``
        :math:`P_\times` (NaN where the copy response has no maximum of its own) and :math:`P_1` of the i.i.d. model.
    bulk_V, bulk_L, bulk : ndarray ``(n_Vb, n_Lb)``
        The grid of the spike+bulk action and its :math:`P_\times`.
    fit, bulk_fit : dict ``{"prefactor": c, "L": a, "V": b}``
        :math:`P_\times = c\,L^{a}V^{b}` over the separated cells (saddle point) and over the whole bulk grid.
    """

    V: np.ndarray
    L: np.ndarray
    separate: np.ndarray
    saddle: np.ndarray
    iid: np.ndarray
    iid_onset: np.ndarray
    bulk_V: np.ndarray
    bulk_L: np.ndarray
    bulk: np.ndarray
    fit: dict
    bulk_fit: dict

    def summary(self) -> dict:
        """``L``, ``V`` (the saddle-point exponents), ``bulk_L``, ``n_separate`` (cells fitted), ``iid_separate``
        (how many of them give the i.i.d. model a crossover of its own) and ``iid_gap`` (the largest
        :math:`P_\\times/P_1` of the i.i.d. model there, NaN if none)."""
        sep = self.separate
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN: no crossover of its own anywhere
            gap = float(np.nanmax(self.iid[sep] / self.iid_onset[sep]))
        return {
            "L": self.fit["L"],
            "V": self.fit["V"],
            "bulk_L": self.bulk_fit["L"],
            "n_separate": int(sep.sum()),
            "iid_separate": int(np.isfinite(self.iid[sep]).sum()),
            "iid_gap": gap,
        }

    def table(self) -> str:
        s = self.summary()
        return "\n".join(
            [
                f"crossover, book's model (V in rows, L in columns):\n{np.round(self.saddle, 0)}",
                f"fit over L >= 2V: L^{self.fit['L']:.3f} V^{self.fit['V']:.3f}",
                f"crossover with bulk:\n{np.round(self.bulk, 0)}",
                f"fit: L^{self.bulk_fit['L']:.3f} V^{self.bulk_fit['V']:.3f}",
                f"i.i.d. model: a separate maximum of the copy response at {s['iid_separate']} of {s['n_separate']} "
                f"fitted (V, L), at most {s['iid_gap']:.2f} x its onset",
            ]
        )


def crossover_scaling(V, L, *, bulk_V, bulk_L, separation: float = 2.0) -> CrossoverScaling:
    r"""The crossover :math:`P_\times` of the linear models on grids of (V, L), with its power-law fits.

    :math:`P_\times` is the P of the steepest response :math:`d\hat c_G/d\ln P` of the copy coefficient beyond the
    onset (:func:`lib.theory.crossover_sample_size`), computed for the book's model at the saddle point and for the
    i.i.d. model :math:`A = G` on the grid ``V`` :math:`\times` ``L``, and for the book's model with the bulk of G on
    the (costlier) grid ``bulk_V`` :math:`\times` ``bulk_L``. The saddle-point fit
    :math:`\ln P_\times = \ln c + a\ln L + b\ln V` uses the cells with :math:`L \ge` ``separation`` :math:`\cdot V`;
    the bulk fit uses every cell of its grid.

    Parameters
    ----------
    V, L, bulk_V, bulk_L : int arrays
        Strictly increasing sizes >= 2.
    separation : float
        > 1: the cells fitted have :math:`L/V` at least this.

    Returns
    -------
    CrossoverScaling

    Raises
    ------
    ValueError
        Bad sizes or ``separation``; or (from the fit) a fitted cell without a crossover.
    """
    from ..theory import crossover_sample_size, fit_power_law, onset_sample_size  # here: lib.theory imports lib

    V, L, bulk_V, bulk_L = (_sizes(n, x) for n, x in (("V", V), ("L", L), ("bulk_V", bulk_V), ("bulk_L", bulk_L)))
    if not separation > 1:
        raise ValueError(f"separation must be > 1, got {separation!r}")
    VV, LL = np.meshgrid(V, L, indexing="ij")
    VVb, LLb = np.meshgrid(bulk_V, bulk_L, indexing="ij")
    sep = LL >= separation * VV
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NaN (with a warning) where no crossover separates
        saddle = np.asarray(crossover_sample_size(VV, LL))
        iid = np.asarray(crossover_sample_size(VV, LL, model="linear_v0"))
        bulk = np.asarray(crossover_sample_size(VVb, LLb, bulk=True))
    iid_onset = np.asarray(onset_sample_size("linear_v0", VV, LL, method="bayes"))
    fit = fit_power_law(saddle[sep], L=LL[sep], V=VV[sep])
    bulk_fit = fit_power_law(bulk, L=LLb, V=VVb)
    return CrossoverScaling(VV, LL, sep, saddle, iid, iid_onset, VVb, LLb, bulk, fit, bulk_fit)


# ----------------------------------------------------------------------------------- which head needs less data
@dataclass(frozen=True)
class SampleEfficiency:
    r"""The linear crossover against the softmax jump on one grid of L (:func:`sample_efficiency`).

    Attributes
    ----------
    V : int
    L : ndarray ``(n_L,)``
    linear : ndarray ``(n_L,)``
        :math:`P_\times` of the book's linear model (NaN where it does not separate from the onset).
    softmax : ndarray ``(n_L,)``
        The Bayes softmax :math:`P^*`.
    ratio : ndarray ``(n_L,)``
        ``linear / softmax``: above 1, softmax needs fewer samples for the copy pattern.
    """

    V: int
    L: np.ndarray
    linear: np.ndarray
    softmax: np.ndarray
    ratio: np.ndarray

    @property
    def finite(self) -> np.ndarray:
        """Where the ratio is defined (the linear crossover exists)."""
        return np.isfinite(self.ratio)

    def summary(self) -> dict:
        """``ratio_small`` at ``L_small`` (the shortest L with a ratio) and ``ratio_big`` at ``L_big`` (the longest)."""
        f = self.finite
        return {
            "ratio_small": float(self.ratio[f][0]),
            "L_small": int(self.L[f][0]),
            "ratio_big": float(self.ratio[-1]),
            "L_big": int(self.L[-1]),
        }

    def table(self) -> str:
        return (
            f"L: {self.L}\nlinear crossover: {np.round(self.linear, 0)}\nsoftmax P*: {np.round(self.softmax, 0)}"
            f"\nratio: {np.round(self.ratio, 2)}"
        )


def sample_efficiency(V: int, L) -> SampleEfficiency:
    r"""The linear crossover :math:`P_\times` (:func:`lib.theory.crossover_sample_size`) over the Bayes softmax
    :math:`P^*` (:func:`lib.theory.first_order_transition`) at each L of a grid.

    Both are the sizes at which each head's copy pattern appears, with the Occam term of the readout kept. Paper A's
    scalings, :math:`L^{3/2}V^{1/2}` against :math:`L\ln^2L`, make the ratio grow like
    :math:`L^{1/2}V^{1/2}/\ln^2L`: slowly, and eventually without bound.

    Parameters
    ----------
    V : int
        >= 2.
    L : int array ``(n_L,)``
        Strictly increasing sequence lengths, at least one of them with a crossover (:math:`L` above :math:`V`).

    Returns
    -------
    SampleEfficiency
    """
    from ..theory import crossover_sample_size, first_order_transition  # here: lib.theory imports lib

    V, L = _size("V", V), _sizes("L", L)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NaN (with a warning) where no crossover separates
        linear = np.asarray(crossover_sample_size(V, L), dtype=float)
    if not np.isfinite(linear).any():
        raise ValueError(f"no L of {L.tolist()} has a linear crossover at V = {V}")
    softmax = np.asarray(first_order_transition(V, L, method="bayes").P_star, dtype=float)
    return SampleEfficiency(V, L, linear, softmax, linear / softmax)
