r"""Bayesian sampling of paper A's copy head: Langevin chains on :math:`(G, W[, \beta])` over a grid of P.

The target is the posterior :math:`p(G, W, \beta \mid D) \propto e^{-U}` with :math:`U` the MAP objective of
:mod:`lib.models.copy_objective` (likelihood at temperature :math:`T` plus Gaussian priors): its data term is computed from
the pair counts, so a step costs the same at every P, and all chains at all P run as one batched computation
(:func:`lib.train.sgld.langevin`). At each P there are chains from random initialisations and chains started near
the copy solution: near a first-order transition the two kinds stay on their own branch for the whole run
(metastability, hysteresis), which the split-:math:`\hat R` across all chains reports.

Recorded per sample: the attention matrix :math:`A` (for linear attention in the representative with
:math:`\mathrm{tr}\,W \ge 0`: the network is invariant under :math:`(G,\beta,W)\to-(G,\beta,W)`), the exact test
loss of the sampled network, and its target attention :math:`\langle A, S\rangle/L`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ..core.cache import cached
from ..models.copy_head import attention, init_copy_params
from ..core.validate import check_size
from ..models.copy_objective import CopyPrior, population_loss, target_attention
from .copy_problem import build_copy_problem, check_copy_grid, default_init_G, positive_trace
from .sgld import SGLDConfig, effective_sample_size, langevin, split_rhat

__all__ = ["CopySGLDConfig", "CopySGLDResult", "PosteriorSamplingPlan", "sample_copy_posterior", "plane_coefficients"]


def plane_coefficients(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Least-squares coefficients of :math:`A \approx \hat c_G S + (\hat c_1/L) J` (seed naming: copy, uniform).

    With :math:`R = \langle A, S\rangle` and :math:`R_1 = \mathbf 1^\top A \mathbf 1`:
    :math:`\hat c_G = (R - R_1/L)/(L-1)`, :math:`\hat c_1 = R_1/L - \hat c_G`. For a softmax row-stochastic A,
    :math:`\hat c_1 = 1 - \hat c_G`. Shapes: ``A`` ``(..., L, L)`` -> two arrays ``(...)``.
    """
    A = np.asarray(A, dtype=float)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2] or A.shape[-1] < 2:
        raise ValueError(f"A must have shape (..., L, L) with L >= 2, got {A.shape}")
    L = A.shape[-1]
    R = np.diagonal(np.roll(A, 1, axis=-1), axis1=-2, axis2=-1).sum(-1)  # sum_i A[i, i-1]
    R1 = A.sum((-1, -2))
    c_copy = (R - R1 / L) / (L - 1)
    return c_copy, R1 / L - c_copy


@dataclass(frozen=True)
class CopySGLDConfig:
    """Langevin sampling of the copy head's posterior over a grid of P (a frozen config: the cache key).

    Attributes
    ----------
    kind : {"softmax", "linear"}
    V, L : int
    P_grid : tuple of int
        Training-set sizes (nested data sets of one token stream, as in :class:`~lib.train.CopyMapConfig`).
    data_seed : int
    random_chains, copy_chains : int
        Chains per P started from a random initialisation / near the copy solution.
    chain_seed : int
        Seed of the initialisations (chain k uses ``chain_seed + k``).
    init_G, init_W : float
        Initial scales (``init_G`` None = 1.0 softmax, 0.1 linear).
    prior : CopyPrior
    sgld : SGLDConfig
    """

    kind: str
    V: int
    L: int
    P_grid: tuple[int, ...]
    data_seed: int = 0
    random_chains: int = 2
    copy_chains: int = 1
    chain_seed: int = 0
    init_G: float | None = None
    init_W: float = 0.1
    prior: CopyPrior = field(default_factory=CopyPrior)
    sgld: SGLDConfig = field(default_factory=lambda: SGLDConfig(step_size=2e-3, steps=10_000, burn_in=0.5, thin=100))

    def __post_init__(self) -> None:
        check_copy_grid(self.kind, self.V, self.L, self.P_grid, self.data_seed)
        check_size("random_chains", self.random_chains, 0)
        check_size("copy_chains", self.copy_chains, 0)
        check_size("chain_seed", self.chain_seed, 0)
        if self.random_chains + self.copy_chains < 1:
            raise ValueError("need at least one chain per P (random_chains + copy_chains >= 1)")
        if self.init_G is not None and not self.init_G >= 0:
            raise ValueError(f"init_G must be >= 0 or None, got {self.init_G!r}")
        if not self.init_W >= 0:
            raise ValueError(f"init_W must be >= 0, got {self.init_W!r}")
        if not isinstance(self.prior, CopyPrior) or not isinstance(self.sgld, SGLDConfig):
            raise TypeError("prior must be a CopyPrior and sgld an SGLDConfig")

    @property
    def chain_labels(self) -> tuple[str, ...]:
        return tuple(f"random {k}" for k in range(self.random_chains)) + tuple(
            f"copy {k}" for k in range(self.copy_chains)
        )


@dataclass(frozen=True)
class PosteriorSamplingPlan:
    """Chapter 4's Langevin runs: the softmax head at ``L_soft`` and the linear head at ``L_lin`` over their grids of P.

    Half the softmax chains start from random scores and half near the copy solution (``random_chains``,
    ``copy_chains``), so both minima are visited where they coexist; the linear head has one minimum, so its run has
    one more random chain and a single copy-initialised one. Grids are denser where chapter 3 places the transitions.
    The step, chain lengths and starts are ours (paper A names SGLD, not its settings).
    """

    V: int = 8
    L_soft: int = 32
    L_lin: int = 16
    P_soft: tuple[int, ...] = (150, 250, 377, 500, 650, 800, 1000)
    P_lin: tuple[int, ...] = (10, 20, 40, 60, 80, 90, 100, 120, 160, 250, 500)
    sgld: SGLDConfig = field(default_factory=lambda: SGLDConfig(step_size=2e-3, steps=6000, burn_in=0.5, thin=50))
    random_chains: int = 2
    copy_chains: int = 2

    def __post_init__(self) -> None:
        self.softmax(), self.linear()  # validates both

    @classmethod
    def fast(cls) -> "PosteriorSamplingPlan":
        """Chapter 4 at FAST scale (the defaults): 6,000 steps, two random and two copy chains."""
        return cls()

    @classmethod
    def paper(cls) -> "PosteriorSamplingPlan":
        """Chapter 4 at paper scale: 40,000 steps thinned by 200, four random and four copy chains, finer grids."""
        return cls(
            P_soft=(150, 250, 330, 377, 450, 500, 575, 650, 725, 800, 900, 1000),
            P_lin=(10, 20, 30, 40, 60, 70, 80, 90, 100, 110, 120, 140, 160, 200, 250, 350, 500),
            sgld=SGLDConfig(step_size=2e-3, steps=40_000, burn_in=0.5, thin=200),
            random_chains=4,
            copy_chains=4,
        )

    def softmax(self) -> CopySGLDConfig:
        """The softmax head's run."""
        return CopySGLDConfig(
            "softmax",
            V=self.V,
            L=self.L_soft,
            P_grid=self.P_soft,
            sgld=self.sgld,
            random_chains=self.random_chains,
            copy_chains=self.copy_chains,
        )

    def linear(self) -> CopySGLDConfig:
        """The linear head's run: one more random chain, one copy-initialised chain."""
        return CopySGLDConfig(
            "linear",
            V=self.V,
            L=self.L_lin,
            P_grid=self.P_lin,
            sgld=self.sgld,
            random_chains=self.random_chains + 1,
            copy_chains=1,
        )


@dataclass
class CopySGLDResult:
    """Samples ``(n_P, n_chain, n_samples, ...)`` and per-P diagnostics of :func:`sample_copy_posterior`."""

    config: CopySGLDConfig
    P: np.ndarray  # (n_P,)
    chains: tuple[str, ...]
    A: np.ndarray  # (n_P, n_chain, n_samples, L, L)
    target: np.ndarray  # (n_P, n_chain, n_samples)
    test_loss: np.ndarray  # (n_P, n_chain, n_samples)
    rhat: np.ndarray  # (n_P,) split-R-hat of the target attention over all chains
    rhat_random: np.ndarray  # (n_P,) over the random-init chains only (NaN with fewer than 1)
    ess: np.ndarray  # (n_P, n_chain) effective sample size of the target attention
    diverged: np.ndarray  # (n_P, n_chain)

    @property
    def is_copy(self) -> np.ndarray:
        return np.array([c.startswith("copy") for c in self.chains])

    def branch_mean(self, name: str, copy: bool) -> np.ndarray:
        """Mean of ``name`` over the samples of the copy-init (or random-init) chains, per P: ``(n_P, ...)``."""
        values = getattr(self, name)
        sel = self.is_copy if copy else ~self.is_copy
        if not sel.any():
            raise ValueError(f"no {'copy' if copy else 'random'}-init chains in this run")
        return values[:, sel].mean(axis=(1, 2))


@cached
def sample_copy_posterior(
    cfg: CopySGLDConfig, *, device: torch.device | str | None = None, desc: str | None = None
) -> CopySGLDResult:
    """Run every (P, chain) of ``cfg`` as one batched Langevin computation (through the results cache)."""
    if not isinstance(cfg, CopySGLDConfig):
        raise TypeError(f"cfg must be a CopySGLDConfig, got {type(cfg).__name__}")
    kind, V, L = cfg.kind, cfg.V, cfg.L
    labels = cfg.chain_labels
    init_G = default_init_G(kind, cfg.init_G)
    inits = [
        init_copy_params(
            kind, L, V, seed=cfg.chain_seed + k, init_G=init_G, init_W=cfg.init_W, copy_init=label.startswith("copy")
        )
        for k, label in enumerate(labels)
    ]
    problem, params = build_copy_problem(kind, V, L, cfg.P_grid, cfg.data_seed, inits, device)
    n_P, n_C = problem.n_P, problem.n_I

    def observe(p):
        q = problem.shaped(p)  # (n_P, n_C, ...)
        G, W, beta = q["G"], q["W"], q.get("beta")
        if kind == "linear":
            G, W, beta = positive_trace(G, W, beta)
        A = attention(kind, G, beta)  # (n_P, n_C, L, L)
        return {"A": A, "test_loss": population_loss(A, W), "target": target_attention(A)}

    run = langevin(
        params,
        lambda p: problem.objective(p, cfg.prior),
        observe,
        cfg.sgld,
        desc=desc or f"{kind} SGLD, {n_P * n_C} chains",
    )
    target = np.moveaxis(run.samples["target"], 0, -1)  # (n_P, n_C, n_samples)
    A = np.moveaxis(run.samples["A"], 0, 2)  # (n_P, n_C, n_samples, L, L)
    loss = np.moveaxis(run.samples["test_loss"], 0, -1)  # (n_P, n_C, n_samples)
    is_copy = np.array([c.startswith("copy") for c in labels])
    rhat = np.array([split_rhat(target[i].T) for i in range(n_P)])
    rhat_random = np.array([split_rhat(target[i, ~is_copy].T) if (~is_copy).sum() >= 1 else np.nan for i in range(n_P)])
    ess = np.array([[effective_sample_size(target[i, c]) for c in range(n_C)] for i in range(n_P)])
    return CopySGLDResult(
        config=cfg,
        P=np.array(cfg.P_grid),
        chains=labels,
        A=A,
        target=target,
        test_loss=loss,
        rhat=rhat,
        rhat_random=rhat_random,
        ess=ess,
        diverged=run.diverged.reshape(n_P, n_C),
    )
