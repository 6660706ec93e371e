r"""Chapter 4's Adam-against-theory measures, and the same fits repeated on independent data sets.

Chapter 4 checks three things on filtered Adam (MAP) fits: how far their target attention lies from the MAP
theory's (:func:`adam_measures`), whether each softmax jump falls between the two grid points that bracket the
theory's :math:`P^*` (:func:`bracket_measures`), and how much of each minimiser above :math:`P^*` lies on the
order-parameter plane (coverage). Each is measured on one stream of training sequences; this study repeats every
fit on the data streams ``data_seeds`` (initialisations as in the chapter), so each measure gets the spread over
data sets that its claim's interval needs (median over data sets, percentile bootstrap).

The study also keeps the same fits on the chapter's own data set (``data_seed``: the sweeps against the theory and
the bracketing grids), so the chapter reads them instead of fitting them again. At FAST scale the five data sets cost
about 7 CPU-minutes, beyond chapter 4's budget, so at the default seed they are committed (``python -m
lib.studies.adam_replicas --publish``) and chapter 4 loads them; at other seed offsets (``BOOK_SEED`` moves
``data_seed`` and ``data_seeds``) and at paper scale they are computed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from ..theory import (
    coverage,
    exact_test_loss,
    first_order_transition,
    law_ratio,
    onset_sample_size,
    order_parameters_vs_P,
)
from ..core.cache import Cache, cached
from ..core.progress import progress
from ._study import load_or_compute, publish_main
from ..core.validate import check_size
from ..train.copy_map import CopyMapConfig, CopyMapResult, fit_copy_map
from ..train.ensemble import AdamConfig
from ..measures.grids import geometric_grid, half_rise_point, steepest_step
from ..train.copy_sgld import plane_coefficients

__all__ = [
    "AdamReplicasConfig",
    "AdamReplicas",
    "adam_measures",
    "bracket_measures",
    "theory_deviation",
    "jump_law_ratio",
    "adam_replicas",
    "load_adam_replicas",
    "REGENERATE",
]

REGENERATE = "python -m lib.studies.adam_replicas --publish"

#: The theory's P* is placed at these fractions of the bracketing grid (chapter 4).
FRACTIONS = (0.8, 0.9, 0.95, 0.98, 1.02, 1.05, 1.1, 1.25)


def _map_loss(model: str, V: int, res: CopyMapResult) -> np.ndarray:
    """Per size of the sweep ``res``, the exact test loss (:func:`lib.theory.exact_test_loss`) of the MAP theory's
    attention with its readout, at its order parameters (:func:`lib.theory.order_parameters_vs_P`)."""
    P = res.P.astype(float)
    x = torch.as_tensor(
        order_parameters_vs_P(model, V, res.config.L, P, method="map").x, dtype=torch.float64
    )  # (n_P, k)
    return np.array([float(exact_test_loss(model, x[i], p, V, res.config.L)) for i, p in enumerate(P)])


def adam_measures(soft: CopyMapResult, lin: CopyMapResult) -> dict:
    r"""Filtered Adam against the MAP theory, for a softmax and a linear sweep at the same ``V``.

    ``dev_soft``: :math:`\max_P |\bar a_\text{Adam}(P) - \bar a_\text{MAP}(P)|` of the target attention over the
    softmax grid; ``dev_lin``: the same for linear attention at :math:`P \ge 2 P_1^\text{MAP}` (the large-P theory
    needs a few samples per parameter); ``loss_soft``, ``loss_lin``: the same for the test loss, Adam's exact
    population loss against the MAP theory's (:func:`lib.theory.exact_test_loss` at the MAP order parameters: the
    same loss of the theory's attention with its readout), in units of the loss of a readout that predicts nothing;
    ``dev``: the largest of the four; ``dev_worst``: the same with the run of highest :math:`U` at each :math:`P` (the
    filter undone: the control); ``lin_first``: how many times larger the :math:`P` at which the filtered linear
    :math:`\hat c_G` reaches half its largest value is than the :math:`P` at which :math:`\hat c_1` does
    (:func:`lib.plane_coefficients`, :func:`lib.measures.grids.half_rise_point`: uniform pooling before copying when
    above 1; NaN when either never rises above 0); ``coverage``: the smallest coverage
    (:func:`lib.theory.coverage`) of the filtered softmax minimisers above the MAP :math:`P^*`; ``coverage_lin``: the
    same for the linear minimisers above the MAP onset :math:`P_1`; ``coverage_off``: the control, the largest
    coverage of the same minimisers (both heads) with every row's attention moved one key back (column :math:`j+1`
    to :math:`j`: copying the token two back, :math:`S \to S^2`), converged patterns with the same structure off the
    plane (a pattern of the plane, uniform or copy, would still pass: :math:`\mathrm{cov}(S^2) = 1/(L-1)^2`).
    """
    if soft.config.kind != "softmax" or lin.config.kind != "linear" or soft.config.V != lin.config.V:
        raise ValueError("need a softmax and a linear sweep at the same V")
    V = soft.config.V
    loss_th_soft, loss_th_lin = _map_loss("softmax", V, soft), _map_loss("linear_v2", V, lin)
    far = lin.P >= 2 * float(onset_sample_size("linear_v2", V, lin.config.L, method="map"))

    def deviations(pick) -> tuple[float, ...]:  # attention and loss, softmax then linear (for P >= 2 P_1)
        return (
            *_target_deviations(soft, lin, V, 1.0, pick),
            float(np.abs(pick(soft, "test_loss") - loss_th_soft).max()),
            float(np.abs(pick(lin, "test_loss") - loss_th_lin)[far].max()),
        )

    dev_soft, dev_lin, loss_soft, loss_lin = deviations(lambda r, name: r.filtered(name))
    worst = max(deviations(lambda r, name: r.worst(name)))
    above = soft.P > float(first_order_transition(V, soft.config.L, method="map").P_star)
    above_lin = lin.P > float(onset_sample_size("linear_v2", V, lin.config.L, method="map"))
    A_soft, A_lin = (torch.as_tensor(r.filtered("A"))[m] for r, m in ((soft, above), (lin, above_lin)))  # (n, L, L)
    off = max(float(coverage(torch.roll(A, shifts=-1, dims=-1)).max()) for A in (A_soft, A_lin))
    c_G, c_1 = plane_coefficients(lin.filtered("A"))  # (n_P,) each
    lin_P = lin.P.astype(float)
    return dict(
        lin_first=(
            half_rise_point(lin_P, c_G) / half_rise_point(lin_P, c_1) if min(c_G.max(), c_1.max()) > 0 else math.nan
        ),
        dev_soft=dev_soft,
        dev_lin=dev_lin,
        loss_soft=loss_soft,
        loss_lin=loss_lin,
        dev=max(dev_soft, dev_lin, loss_soft, loss_lin),
        dev_worst=worst,
        coverage=float(coverage(A_soft).min()),
        coverage_lin=float(coverage(A_lin).min()),
        coverage_off=off,
    )


def _target_deviations(soft: CopyMapResult, lin: CopyMapResult, V: int, shift: float, pick) -> tuple[float, float]:
    r"""``(softmax, linear)`` of :math:`\max_P |\bar a_\text{Adam}(P) - \bar a_\text{MAP}(P/\text{shift})|`, the
    target attention of ``pick(result, "target")`` against the MAP theory at vocabulary ``V`` (linear attention from
    twice its MAP onset at the sweep's own ``V``)."""
    far = lin.P >= 2 * float(onset_sample_size("linear_v2", lin.config.V, lin.config.L, method="map"))
    devs = []
    for res, model, keep in ((soft, "softmax", slice(None)), (lin, "linear_v2", far)):
        at = order_parameters_vs_P(model, V, res.config.L, res.P.astype(float) / shift, method="map").target
        devs.append(float(np.abs(pick(res, "target") - at)[keep].max()))
    return devs[0], devs[1]


def theory_deviation(soft: CopyMapResult, lin: CopyMapResult, V: int, shift: float = 1.0) -> float:
    r"""The largest :math:`|\bar a_\text{Adam}(P) - \bar a_\text{MAP}(P/\text{shift})|` of the filtered target
    attention over both heads, against the MAP theory at vocabulary ``V`` evaluated at every size divided by
    ``shift`` (linear attention from twice its MAP onset at the sweeps' own ``V``): :func:`adam_measures`'s attention
    deviation read against a theory at another ``V``, or placed a few per cent off in ``P``."""
    return max(_target_deviations(soft, lin, V, shift, lambda r, name: r.filtered(name)))


def jump_law_ratio(brackets: dict) -> float:
    r"""Paper A's :math:`L\ln^2L` against its rivals on one data set's softmax jumps (:func:`bracket_measures`'s
    result): :func:`lib.theory.law_ratio` of the geometric midpoints of the jump's grid step over :math:`L`."""
    Ls = sorted(brackets["per_L"])
    P = [np.sqrt(brackets["per_L"][L]["lo"] * brackets["per_L"][L]["hi"]) for L in Ls]
    return law_ratio(np.array(P), np.array(Ls, dtype=float))


def bracket_measures(fits: dict) -> dict:
    """``{L: softmax sweep on the bracketing grid}`` → where each jumps, and how many bracket the theory's ``P*``.

    Per ``L``: ``theory`` (the MAP ``P*``), ``lo``/``hi`` (the grid step with the largest change of the filtered
    target attention); ``bracketed``: how many ``L`` have ``lo < P* < hi``; ``shifted``: the same for a theory
    10 % off (the control).
    """
    per_L, inside, shifted = {}, 0, 0
    for L, res in fits.items():
        P_th = float(first_order_transition(res.config.V, L, method="map").P_star)
        k = steepest_step(res.filtered("target"))
        lo, hi = int(res.P[k]), int(res.P[k + 1])
        per_L[L] = dict(theory=P_th, lo=lo, hi=hi)
        inside += lo < P_th < hi
        shifted += lo < 1.1 * P_th < hi
    return dict(per_L=per_L, bracketed=int(inside), shifted=int(shifted))


@dataclass(frozen=True)
class AdamReplicasConfig:
    """Chapter 4's Adam fits (the frozen config is the cache key; :meth:`fast` and :meth:`paper` are the chapter's).

    ``V``; ``L_soft``, ``L_lin`` and grids ``P_soft``, ``P_lin`` of the two sweeps against the theory (``init_seeds``
    random initialisations plus one near the copy solution); ``L_scan`` the lengths of the bracketing grids
    (``scan_init_seeds``); ``data_seed`` the chapter's data set; ``data_seeds`` those of the replicas.
    """

    V: int = 8
    L_soft: int = 32
    L_lin: int = 16
    P_soft: tuple[int, ...] = geometric_grid(100, 1000, 12)
    P_lin: tuple[int, ...] = geometric_grid(5, 500, 10)
    init_seeds: tuple[int, ...] = (0, 1, 2)
    L_scan: tuple[int, ...] = (16, 32, 64)
    scan_init_seeds: tuple[int, ...] = (0,)
    adam: AdamConfig = field(default_factory=lambda: AdamConfig(lr=0.05, steps=3000, lr_final=1e-4))
    data_seed: int = 0
    data_seeds: tuple[int, ...] = (1, 2, 3, 4)

    def __post_init__(self) -> None:
        for name in ("V", "L_soft", "L_lin"):
            check_size(name, getattr(self, name), 2)
        if not self.L_scan or not self.data_seeds or len(set(self.data_seeds)) != len(self.data_seeds):
            raise ValueError("L_scan and data_seeds must be non-empty, data_seeds distinct")
        if self.data_seed in self.data_seeds:
            raise ValueError("the chapter's data_seed is among data_seeds: the replicas would repeat its data")

    @classmethod
    def fast(cls) -> "AdamReplicasConfig":
        """Chapter 4 at FAST scale (the defaults)."""
        return cls()

    @classmethod
    def paper(cls) -> "AdamReplicasConfig":
        """Chapter 4 at paper scale: finer grids, five initialisations, twice the steps."""
        return cls(
            P_soft=geometric_grid(100, 1000, 24),
            P_lin=geometric_grid(5, 500, 20),
            init_seeds=(0, 1, 2, 3, 4),
            adam=AdamConfig(lr=0.05, steps=6000, lr_final=1e-4),
        )

    def sweeps(self, data_seed: int | None = None) -> tuple[CopyMapConfig, CopyMapConfig]:
        """The softmax and linear sweeps on data set ``data_seed`` (default: the chapter's)."""
        d = self.data_seed if data_seed is None else data_seed
        make = lambda kind, L, grid: CopyMapConfig(
            kind,
            V=self.V,
            L=L,
            P_grid=grid,
            init_seeds=self.init_seeds,  # noqa: E731
            adam=self.adam,
            data_seed=d,
        )
        return make("softmax", self.L_soft, self.P_soft), make("linear", self.L_lin, self.P_lin)

    def bracket_sweeps(self, data_seed: int | None = None) -> dict:
        """``{L: softmax sweep on the grid at FRACTIONS of the theory's P*}`` on data set ``data_seed``."""
        d = self.data_seed if data_seed is None else data_seed
        out = {}
        for L in self.L_scan:
            P_th = float(first_order_transition(self.V, L, method="map").P_star)
            grid = tuple(sorted({int(round(f * P_th)) for f in FRACTIONS}))
            out[L] = CopyMapConfig(
                "softmax", V=self.V, L=L, P_grid=grid, init_seeds=self.scan_init_seeds, adam=self.adam, data_seed=d
            )
        return out


@dataclass(frozen=True)
class AdamReplicas:
    """Per data set of ``config.data_seeds``: :func:`adam_measures` and :func:`bracket_measures`; and the fits on the
    chapter's own data set (``config.data_seed``), which chapter 4 reads instead of refitting them:
    ``chapter = {"softmax": CopyMapResult, "linear": CopyMapResult, "brackets": {L: CopyMapResult}}``."""

    config: AdamReplicasConfig
    measures: tuple[dict, ...]
    brackets: tuple[dict, ...]
    chapter: dict

    def values(self, name: str) -> np.ndarray:
        """``(len(data_seeds),)`` values of one measure (a key of :func:`adam_measures`, or ``bracketed``/``shifted``)."""
        if name in ("bracketed", "shifted"):
            return np.array([b[name] for b in self.brackets], dtype=float)
        if name not in self.measures[0]:
            raise ValueError(f"unknown measure {name!r}")
        return np.array([m[name] for m in self.measures], dtype=float)


@cached
def adam_replicas(config: AdamReplicasConfig) -> AdamReplicas:
    """Fit every sweep of ``config`` on the chapter's data set and on each of ``config.data_seeds``, and measure the
    replicas (module docstring)."""
    soft, lin = (fit_copy_map(c) for c in config.sweeps())
    chapter = {
        "softmax": soft,
        "linear": lin,
        "brackets": {L: fit_copy_map(c) for L, c in config.bracket_sweeps().items()},
    }
    measures, brackets = [], []
    for d in progress(config.data_seeds, desc="Adam fits: data sets"):
        soft, lin = (fit_copy_map(c) for c in config.sweeps(d))
        measures.append(adam_measures(soft, lin))
        brackets.append(bracket_measures({L: fit_copy_map(c) for L, c in config.bracket_sweeps(d).items()}))
    return AdamReplicas(config=config, measures=tuple(measures), brackets=tuple(brackets), chapter=chapter)


def load_adam_replicas(
    config: AdamReplicasConfig, *, compute: bool = False, cache: Cache | None = None
) -> AdamReplicas:
    """The committed replicas for ``config`` (verified against the code that made them), else computed if ``compute``."""
    if not isinstance(config, AdamReplicasConfig):
        raise TypeError(f"config must be an AdamReplicasConfig, got {type(config).__name__}")
    return load_or_compute(
        adam_replicas, config, compute=compute, regenerate=REGENERATE, cost="about 7 CPU-minutes", cache=cache
    )


if __name__ == "__main__":
    publish_main(
        "lib.studies.adam_replicas",
        "adam_replicas",
        lambda m: m.AdamReplicasConfig.fast(),
        REGENERATE,
        "Repeat chapter 4's Adam fits on four more data sets and optionally commit them.",
    )
