r"""Chapter 2's numerical checks of the derivation, each run over all its cases in one call and summarised.

Two checks, each a set of calls to :mod:`lib.theory` that a chapter would otherwise loop over and tabulate by hand:

* :func:`marginal_checks` -- the closed-form W-marginal :math:`\ln\int dW\,p(W)e^{-E(G,W)}` against Monte Carlo
  (:func:`lib.theory.w_marginal_mc`) at several score matrices, with prior sampling (independent of the closed form)
  and importance sampling from the derived Gaussian W-posterior (zero variance exactly when the closed form holds);
* :func:`coverage_checks` -- the minimisers of the full action over all :math:`L^2` scores
  (:func:`lib.theory.minimise_full_action`), large-P and for one finite data set, and how much of each lies in the
  order-parameter plane :math:`\mathrm{span}\{S, J\}` (:func:`lib.theory.coverage`).

Both return the per-case results unchanged (for the figures) with a printable ``table()`` and a ``summary()`` of
the extremes over cases that the prose quotes and the claims measure.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..models.copy_objective import CopyPrior
from ..tasks import CopyTask, nested_pair_counts, sample_tokens

__all__ = ["MarginalChecks", "marginal_checks", "CoverageChecks", "coverage_checks"]


# ------------------------------------------------------------------------------------------------ the W-marginal
@dataclass(frozen=True)
class MarginalChecks:
    """The W-marginal checked at several score matrices (:func:`marginal_checks`).

    Attributes
    ----------
    prior_mc, posterior_is : dict ``{label: WMarginalMC}``
        Prior-sampling and posterior-importance-sampling estimates, one per case, in the order of the cases.
    """

    prior_mc: dict
    posterior_is: dict

    def w_mean_z(self) -> dict:
        """``{label: z}``: largest |MC posterior mean of W − closed-form mean| over the largest MC standard error."""
        return {
            k: float(np.abs(r.W_mean_mc - r.W_mean_closed).max() / r.W_mean_se.max()) for k, r in self.prior_mc.items()
        }

    def summary(self) -> dict:
        r"""Extremes over the cases.

        ``z``: largest :math:`|z|` of the prior-sampling estimate against the closed form; ``rel``: its largest
        relative error; ``se``: the largest final standard error; ``zmap``: smallest :math:`|z|` against the MAP
        profile (no Occam term: the power of the test); ``occam``: the smallest Occam term (MAP profile − closed
        form, nats); ``is_spread``: the largest spread of log importance weights; ``is_err``: the largest
        |importance-sampling estimate − closed form|; ``wz``: the largest :meth:`w_mean_z`; ``ridge``: the largest
        |closed-form posterior mean − MAP ridge readout|; ``grad``: the largest MAP gradient at the posterior mean.
        """
        mc, imp = self.prior_mc.values(), self.posterior_is.values()
        return {
            "z": max(abs(r.z) for r in mc),
            "rel": max(abs(r.log_mean[-1] - r.closed_form) / abs(r.closed_form) for r in mc),
            "se": max(float(r.se[-1]) for r in mc),
            "zmap": min(abs(r.z_map) for r in mc),
            "occam": min(r.map_profile - r.closed_form for r in mc),
            "is_spread": max(r.log_w_spread for r in imp),
            "is_err": max(abs(r.log_mean[-1] - r.closed_form) for r in imp),
            "wz": max(self.w_mean_z().values()),
            "ridge": max(float(np.abs(r.W_map - r.W_mean_closed).max()) for r in mc),
            "grad": max(r.map_grad for r in mc),
        }

    def table(self) -> str:
        """One row per case: closed form, MC estimate, its standard error, z against the closed form and against the
        MAP profile, the importance weights' log spread and the posterior-mean z (``$`` of LaTeX labels dropped)."""
        head = (
            f"{'case':38s} {'closed form':>11s} {'MC':>9s} {'± s.e.':>8s} {'z':>6s} {'z (MAP)':>8s} "
            f"{'IS spread':>9s} {'W-mean z':>8s}"
        )
        wz = self.w_mean_z()
        rows = [
            f"{k.replace('$', ''):38s} {r.closed_form:11.5f} {r.log_mean[-1]:9.5f} {r.se[-1]:8.1e} {r.z:6.2f} "
            f"{r.z_map:8.0f} {self.posterior_is[k].log_w_spread:9.1e} {wz[k]:8.2f}"
            for k, r in self.prior_mc.items()
        ]
        return "\n".join([head, *rows])


def marginal_checks(
    cases: dict,
    counts,
    *,
    prior: CopyPrior = CopyPrior(),
    n_samples: int = 2**20,
    n_importance: int = 4096,
    seed: int = 0,
) -> MarginalChecks:
    """Check the closed-form W-marginal at every case with both estimators of :func:`lib.theory.w_marginal_mc`.

    Parameters
    ----------
    cases : dict ``{label: (model, G, beta)}``
        ``model`` one of the exact models (``"softmax"``, ``"linear_v2"``, ...), ``G`` ``(L, L)``, ``beta`` the
        uniform channel or None.
    counts : Tensor ``(L, L, V, V)``
        Pair counts of one data set (:func:`lib.tasks.pair_counts`).
    prior : CopyPrior
    n_samples : int
        Prior samples per case.
    n_importance : int
        Posterior importance samples per case (few suffice: their weights are constant if the closed form holds).
    seed : int
        Case ``k`` (in the order of ``cases``) uses seed ``seed + k`` for both estimators.

    Returns
    -------
    MarginalChecks
    """
    from ..theory import w_marginal_mc  # here: lib.theory imports lib, which imports this module

    if not isinstance(cases, dict) or not cases:
        raise ValueError("cases must be a non-empty dict {label: (model, G, beta)}")
    if any(not (isinstance(c, tuple) and len(c) == 3) for c in cases.values()):
        raise ValueError("every case must be a tuple (model, G, beta)")
    prior_mc, posterior_is = {}, {}
    for k, (label, (model, G, beta)) in enumerate(cases.items()):
        prior_mc[label] = w_marginal_mc(model, G, counts, beta=beta, prior=prior, n_samples=n_samples, seed=seed + k)
        posterior_is[label] = w_marginal_mc(
            model, G, counts, beta=beta, prior=prior, n_samples=n_importance, sampler="posterior", seed=seed + k
        )
    return MarginalChecks(prior_mc, posterior_is)


# ------------------------------------------------------------------------------------- the order-parameter plane
def _size(P) -> int | float:
    """A training-set size as an int when it is a whole number (so the prose prints 400, not 400.0)."""
    return int(P) if float(P).is_integer() else float(P)


@dataclass(frozen=True)
class CoverageChecks:
    """Full-action minimisers and their coverage by the order-parameter plane (:func:`coverage_checks`).

    Attributes
    ----------
    large_p, finite : dict ``{model: FullActionMinima}``
        Minimisers of the large-P action and of the exact posterior of one nested data set, on each model's grid.
    below : FullActionMinima
        The large-P minimiser of ``below_model`` at the single size ``below_P`` (below its onset: ``A* = 0``).
    below_P : float
    """

    large_p: dict
    finite: dict
    below: object
    below_P: float

    def finite_coverage(self) -> dict:
        """``{model: (n_P,)}``: coverage of the exact-posterior minimiser that reached the lowest action, per P."""
        return {m: f.coverage[np.arange(len(f.P)), f.best] for m, f in self.finite.items()}

    def stays_above(self, level: float = 0.9) -> int:
        """The smallest grid size from which on every model's finite-data coverage stays at or above ``level``."""
        cov = self.finite_coverage()
        return int(min(P for m, f in self.finite.items() for P in f.P if np.all(cov[m][f.P >= P] >= level)))

    def summary(self, P_meta: float = 400.0, level: float = 0.9) -> dict:
        r"""The extremes the prose quotes.

        Over every large-P minimiser (all models, sizes, starts): ``n`` minimisers, smallest coverage ``cov_min``
        and ``off_max`` :math:`= 1 -` ``cov_min``, the largest coverage of a random start ``start_max``, the largest
        distance ``gap`` of a minimiser's target attention to a reduced-action minimum and the largest remaining
        gradient entry ``grad``. ``below_norm``: the largest :math:`\lVert A^*\rVert_F` below the onset (at
        ``below_P``). At the softmax grid's size nearest ``P_meta`` (``P_meta``): the largest target attention of a
        random start (``meta_lo``) and that of the copy start (``meta_hi``). The finite-data coverage of softmax and
        linear at the first (``fin_s_lo``, ``fin_l_lo``, at ``fin_P0``) and last (``fin_s_hi``, ``fin_l_hi``, at
        ``fin_Pmax``) size, and ``fin_90`` (:meth:`stays_above` ``level``).
        """
        cov_all = np.concatenate([r.coverage.ravel() for r in self.large_p.values()])
        soft, fin = self.large_p["softmax"], self.finite_coverage()
        k = int(np.argmin(np.abs(soft.P - P_meta)))
        lin = next(m for m in self.finite if m != "softmax")
        return {
            "n": int(cov_all.size),
            "cov_min": float(cov_all.min()),
            "off_max": float(1 - cov_all.min()),
            "start_max": max(float(r.coverage_start[:-1].max()) for r in self.large_p.values()),
            "gap": max(float(r.reduced_gap.max()) for r in self.large_p.values()),
            "grad": max(float(r.grad.max()) for r in self.large_p.values()),
            "below_norm": float(np.linalg.norm(self.below.A, axis=(-1, -2)).max()),
            "below_P": self.below_P,
            "P_meta": _size(soft.P[k]),
            "meta_lo": float(soft.target[k, :-1].max()),
            "meta_hi": float(soft.target[k, -1]),
            "fin_P0": _size(self.finite["softmax"].P[0]),
            "fin_s_lo": float(fin["softmax"][0]),
            "fin_l_lo": float(fin[lin][0]),
            "fin_Pmax": _size(self.finite["softmax"].P[-1]),
            "fin_s_hi": float(fin["softmax"][-1]),
            "fin_l_hi": float(fin[lin][-1]),
            "fin_90": self.stays_above(level),
        }

    def table(self) -> str:
        """Per model: the number of large-P minimisers, their smallest coverage, largest gradient and the random
        starts' largest coverage; then the target attention of every start (columns) at every P (rows)."""
        lines = []
        for model, r in self.large_p.items():
            lines.append(
                f"{model}: {r.coverage.size} minimisers; min coverage {r.coverage.min():.12f}; "
                f"largest |grad| {r.grad.max():.1e}; random starts' coverage <= "
                f"{r.coverage_start[:-1].max():.4f}"
            )
            lines.append("  target attention per P (starts in columns):")
            lines += [f"    P = {P:6.0f}: " + " ".join(f"{x:+.3f}" for x in t) for P, t in zip(r.P, r.target)]
        return "\n".join(lines)


def coverage_checks(
    V: int,
    L: int,
    grids: dict,
    *,
    below_model: str,
    below_P: float,
    n_random: int = 4,
    seed: int = 0,
    finite_seed: int = 0,
    prior: CopyPrior = CopyPrior(),
) -> CoverageChecks:
    """Minimise the full action of every model on its grid, large-P and for one finite data set.

    Parameters
    ----------
    V, L : int
    grids : dict ``{model: sizes P}``
        Must contain ``"softmax"`` and one linear model.
    below_model : str
        The model minimised once more, large-P, at the single size ``below_P`` (below its onset).
    below_P : float
    n_random : int
        Random starts besides the copy start (:func:`lib.theory.minimise_full_action`).
    seed : int
        Seed of the large-P random starts and of the data set: one stream of ``max(grid)`` sequences per model,
        whose first ``P`` make the data set at each ``P`` (nested).
    finite_seed : int
        Seed of the random starts of the finite-data minimisations and of the ``below_P`` one.
    prior : CopyPrior

    Returns
    -------
    CoverageChecks
    """
    from ..theory import minimise_full_action  # here: lib.theory imports lib, which imports this module

    if not isinstance(grids, dict) or "softmax" not in grids or len(grids) != 2:
        raise ValueError(f"grids must map 'softmax' and one linear model to their sizes, got {grids!r}")
    large_p, finite = {}, {}
    for model, grid in grids.items():
        large_p[model] = minimise_full_action(model, V, L, grid, n_random=n_random, seed=seed, prior=prior)
        tokens = sample_tokens(CopyTask(V=V, L=L, P=max(grid), seed=seed))  # (P_max, L): one stream
        counts = nested_pair_counts(tokens, V, grid)  # (n_P, L, L, V, V): one data set, nested
        finite[model] = minimise_full_action(
            model, V, L, grid, counts=counts, n_random=n_random, seed=finite_seed, prior=prior
        )
    below = minimise_full_action(below_model, V, L, [below_P], n_random=n_random, seed=finite_seed, prior=prior)
    return CoverageChecks(large_p, finite, below, float(below_P))
