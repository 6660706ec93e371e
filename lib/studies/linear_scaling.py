r"""Where the linear head's transitions lie, measured on posterior samples: onset and crossover against V and L.

Paper A says linear attention first learns uniform pooling at :math:`P_1 \propto V^2` (a second-order onset), then
crosses over smoothly to the copy pattern at :math:`P_\times \propto L^{3/2} V^{1/2}`. Chapter 3 derives both from
our saddle-point theory, and finds that its spike-plus-bulk refinement (the :math:`L^2`-dimensional fluctuations of
G) moves the crossover to :math:`P_\times \propto L^2`. This study lets *samples* decide: Langevin chains of the
linear head's posterior (:func:`lib.train.sgld.langevin` on the MAP objective of :mod:`lib.models.copy_objective`)
at every P of a wide grid, for several (V, L) and several independent data draws. Per sample it keeps two
numbers of the attention matrix: the uniform coefficient :math:`\hat c_1` (:func:`uniform_coefficient`) and the
copy share (:func:`copy_share`, the fraction of the non-uniform pattern along the copy matrix); their chain means
per (draw, P) are the result. The onset :math:`P_1`, the crossover :math:`P_\times` and their exponents are read
from them by :mod:`lib.train.scaling_fits` (kept apart, so that the analysis can change without invalidating the
committed samples).

The P grid of a cell runs from :math:`V^2/4` to :math:`8L^2` (wide around both predictions, so neither theory's
value sits at an edge). The data term's curvature grows like :math:`P/L`, so chains at large P take smaller steps,
:math:`\eta_P = \min(\eta, c L / P)` with ``stable_step`` :math:`c` (full-step runs diverge at
:math:`\eta P/L \approx 0.16` on this head; our choice of :math:`c = 0.08` keeps a factor 2).

This costs CPU-minutes, so it runs once and is committed under ``data/`` (:func:`lib.publish`); chapter 4 loads it.
Regenerate and commit::

    python -m lib.studies.linear_scaling --publish
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from ..core.cache import Cache, cached
from ._study import load_or_compute, publish_main
from ..models.copy_head import attention, init_copy_params
from ..core.progress import progress
from ..core.validate import check_size
from ..models.copy_objective import CopyPrior
from ..train.copy_problem import CopyProblem, build_copy_problem, positive_trace
from ..train.sgld import SGLDConfig, langevin, split_rhat

__all__ = [
    "LinearScalingConfig",
    "LinearScaling",
    "linear_scaling",
    "load_linear_scaling",
    "copy_share",
    "uniform_coefficient",
    "REGENERATE",
]

REGENERATE = "python -m lib.studies.linear_scaling --publish"


# --------------------------------------------------------------------------------------------- measures
def _overlaps(A: torch.Tensor):
    L = A.shape[-1]
    R = torch.diagonal(torch.roll(A, 1, dims=-1), dim1=-2, dim2=-1).sum(-1)  # sum_i A[i, i-1]: along S
    R1 = A.sum((-1, -2))  # along J
    return L, R, R1


def uniform_coefficient(A: torch.Tensor) -> torch.Tensor:
    r"""The uniform coefficient :math:`\hat c_1` of :math:`A \approx \hat c_G S + (\hat c_1/L) J`, shape ``(...)``.

    Least squares in the plane of the copy matrix S and the all-ones J (as :func:`lib.train.plane_coefficients`):
    :math:`\hat c_G = (R - R_1/L)/(L-1)`, :math:`\hat c_1 = R_1/L - \hat c_G` with :math:`R = \langle A, S\rangle`,
    :math:`R_1 = \mathbf 1^\top A\mathbf 1`. ``A``: ``(..., L, L)``.
    """
    L, R, R1 = _overlaps(A)
    return R1 / L - (R - R1 / L) / (L - 1)


def copy_share(A: torch.Tensor) -> torch.Tensor:
    r"""Share of the non-uniform attention pattern along the copy matrix, :math:`\cos^2(A_c, S_c) \in [0, 1]`.

    With the all-ones direction removed (:math:`A_c = A - \bar A J`, :math:`S_c = S - J/L`):

    .. math:: f = \frac{\langle A_c, S_c\rangle^2}{\lVert A_c\rVert^2 \lVert S_c\rVert^2}
              = \frac{(R - R_1/L)^2}{(L-1)\,(\lVert A\rVert^2 - R_1^2/L^2)}.

    1 for :math:`A = aS + bJ`; about :math:`1/L^2` for a pattern without structure. The sample version of the
    theory's centred explained fraction :math:`R^2/(L(Q+\varepsilon))`, whose :math:`\varepsilon` is the bulk of G
    that samples carry themselves. ``A``: ``(..., L, L)`` -> ``(...)``.
    """
    L, R, R1 = _overlaps(A)
    centred = (A * A).sum((-1, -2)) - R1**2 / L**2
    return (R - R1 / L) ** 2 / ((L - 1) * centred.clamp_min(torch.finfo(A.dtype).tiny))


# --------------------------------------------------------------------------------------------- study
@dataclass(frozen=True)
class LinearScalingConfig:
    """The study's settings (a frozen config: the cache key of the committed result).

    Attributes
    ----------
    cells : tuple of (V, L)
        Vocabulary and sequence length of each cell (``L > V``: the crossover separates from the onset).
    n_P : int
        Grid points per cell, geometric from ``max(2, V²/4)`` to ``8 L²``.
    data_seeds : tuple of int
        Independent training sets per cell (the bootstrap resamples them).
    chains, chain_seed : int
        Chains per (draw, P), started at random scores (chain k: seed ``chain_seed + k``).
    init_G, init_W : float
        Initial scales.
    stable_step : float
        :math:`c` of the step cap :math:`\\eta_P = \\min(\\eta, cL/P)`.
    prior : CopyPrior
    sgld : SGLDConfig
    """

    cells: tuple[tuple[int, int], ...] = ((4, 8), (4, 16), (8, 16), (4, 32), (8, 32))
    n_P: int = 18
    data_seeds: tuple[int, ...] = (0, 1, 2, 3)
    chains: int = 4
    chain_seed: int = 0
    init_G: float = 0.1
    init_W: float = 0.1
    stable_step: float = 0.08
    prior: CopyPrior = field(default_factory=CopyPrior)
    sgld: SGLDConfig = field(default_factory=lambda: SGLDConfig(step_size=2e-3, steps=12_000, burn_in=0.5, thin=50))

    def __post_init__(self) -> None:
        if not isinstance(self.cells, tuple) or not self.cells:
            raise ValueError(f"cells must be a non-empty tuple of (V, L), got {self.cells!r}")
        for cell in self.cells:
            if not (isinstance(cell, tuple) and len(cell) == 2):
                raise ValueError(f"each cell must be a (V, L) tuple, got {cell!r}")
            V, L = check_size("V", cell[0], 2), check_size("L", cell[1], 3)
            if L <= V:
                raise ValueError(f"cell {cell}: need L > V, else the crossover merges with the onset")
        if len(set(self.cells)) != len(self.cells):
            raise ValueError(f"cells repeat: {self.cells}")
        check_size("n_P", self.n_P, 6)
        if (
            not isinstance(self.data_seeds, tuple)
            or not self.data_seeds
            or len(set(self.data_seeds)) != len(self.data_seeds)
        ):
            raise ValueError(f"data_seeds must be a non-empty tuple of distinct ints, got {self.data_seeds!r}")
        for s in self.data_seeds:
            check_size("data seed", s, 0)
        check_size("chains", self.chains, 2)
        check_size("chain_seed", self.chain_seed, 0)
        for name in ("init_G", "init_W", "stable_step"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
        if not isinstance(self.prior, CopyPrior) or not isinstance(self.sgld, SGLDConfig):
            raise TypeError("prior must be a CopyPrior and sgld an SGLDConfig")

    def P_grid(self, V: int, L: int) -> tuple[int, ...]:
        """The cell's grid: ``n_P`` distinct integers, geometric from ``max(2, V²/4)`` to ``8 L²``."""
        lo, hi = max(2.0, V * V / 4), 8.0 * L * L
        grid = sorted({int(round(p)) for p in np.geomspace(lo, hi, self.n_P)})
        if len(grid) < self.n_P:
            raise ValueError(f"cell {(V, L)}: {self.n_P} grid points do not fit between {lo} and {hi}")
        return tuple(grid)


@dataclass
class LinearScaling:
    """Posterior summaries per cell: ``c1`` and ``share`` ``(n_draw, n_P, n_chain)``, ``rhat`` ``(n_draw, n_P)``."""

    config: LinearScalingConfig
    P: dict = field(default_factory=dict)  # cell -> (n_P,)
    c1: dict = field(default_factory=dict)  # cell -> (n_draw, n_P, n_chain): chain means of the uniform coefficient
    share: dict = field(default_factory=dict)  # cell -> (n_draw, n_P, n_chain): chain means of the copy share
    rhat: dict = field(default_factory=dict)  # cell -> (n_draw, n_P): split-R-hat of the copy share
    diverged: dict = field(default_factory=dict)  # cell -> (n_draw, n_P, n_chain)
    seconds: dict = field(default_factory=dict)  # cell -> wall seconds of its sampling (one thread)


def _cell_problem(config: LinearScalingConfig, V: int, L: int):
    """One batched problem for all draws of a cell: draws stacked along the P axis, ``(n_draw * n_P)`` count sets."""
    P_grid = config.P_grid(V, L)
    inits = [
        init_copy_params(
            "linear", L, V, seed=config.chain_seed + k, init_G=config.init_G, init_W=config.init_W, copy_init=False
        )
        for k in range(config.chains)
    ]
    parts = [build_copy_problem("linear", V, L, P_grid, s, inits) for s in config.data_seeds]
    counts = torch.cat([pr.counts for pr, _ in parts])  # (n_draw * n_P, L, L, V, V)
    P = torch.cat([pr.P for pr, _ in parts])  # (n_draw * n_P, 1)
    params = {k: torch.cat([pa[k] for _, pa in parts]) for k in parts[0][1]}  # (E, ...), E = n_draw * n_P * chains
    problem = CopyProblem(kind="linear", counts=counts, P=P, n_P=counts.shape[0], n_I=config.chains)
    return problem, params, P_grid


@cached
def linear_scaling(config: LinearScalingConfig) -> LinearScaling:
    """Sample every cell of the study (CPU-minutes: see the module docstring) and keep the posterior summaries."""
    if not isinstance(config, LinearScalingConfig):
        raise ValueError(f"config must be a LinearScalingConfig, got {type(config).__name__}")
    out = LinearScaling(config)
    n_d, n_C = len(config.data_seeds), config.chains
    for V, L in progress(config.cells, desc="linear scaling", unit="cell"):
        start = time.perf_counter()
        problem, params, P_grid = _cell_problem(config, V, L)
        n_P = len(P_grid)
        P_chain = problem.P.expand(-1, n_C).reshape(-1)  # (E,)
        scale = torch.clamp(config.stable_step * L / (config.sgld.step_size * P_chain), max=1.0)  # (E,)

        def observe(p):
            q = problem.shaped(p)  # (n_d * n_P, n_C, ...)
            G, W, beta = positive_trace(q["G"], q["W"], q["beta"])
            A = attention("linear", G, beta)  # (n_d * n_P, n_C, L, L)
            return {"c1": uniform_coefficient(A).reshape(-1), "share": copy_share(A).reshape(-1)}  # (E,)

        run = langevin(
            params,
            lambda p: problem.objective(p, config.prior),
            observe,
            config.sgld,
            desc=f"V={V}, L={L}: {problem.n_P * n_C} chains",
            step_scale=scale,
        )
        c1 = run.samples["c1"].reshape(-1, n_d, n_P, n_C)  # (n_samples, n_d, n_P, n_C)
        share = run.samples["share"].reshape(-1, n_d, n_P, n_C)
        out.P[(V, L)] = np.array(P_grid, dtype=float)
        out.c1[(V, L)] = c1.mean(0)
        out.share[(V, L)] = share.mean(0)
        out.rhat[(V, L)] = np.array([[split_rhat(share[:, d, i]) for i in range(n_P)] for d in range(n_d)])
        out.diverged[(V, L)] = run.diverged.reshape(n_d, n_P, n_C)
        out.seconds[(V, L)] = time.perf_counter() - start
    return out


def load_linear_scaling(
    config: LinearScalingConfig | None = None, *, compute: bool = False, cache: Cache | None = None
):
    """The committed study (verified against the code that made it), else computed if ``compute``.

    Without a committed result for this config and code, and without ``compute``, a ``RuntimeError`` names the
    command that regenerates it.
    """
    return load_or_compute(
        linear_scaling,
        config or LinearScalingConfig(),
        compute=compute,
        regenerate=REGENERATE,
        cost="about 25 CPU-minutes",
        cache=cache,
    )


def main(argv=None) -> None:
    publish_main(
        "lib.studies.linear_scaling",
        "linear_scaling",
        lambda m: m.LinearScalingConfig(),
        REGENERATE,
        "Run chapter 4's linear-scaling study and optionally commit it.",
        argv,
    )


if __name__ == "__main__":
    main()
