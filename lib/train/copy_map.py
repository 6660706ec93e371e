r"""MAP fitting of paper A's copy head with Adam, over a grid of training-set sizes, filtered to the global minimum.

The objective is :func:`lib.models.copy_objective.copy_objective` (data through pair counts: a step costs the same at
any P). Filtering (paper A: "Adam filtered to the global minimum"): for every :math:`P` we run several random
initialisations plus one copy-initialised run, all as one batched computation, and keep the lowest :math:`U`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ..core.cache import cached
from ..models.copy_head import attention, init_copy_params
from ..core.validate import check_size
from ..models.copy_objective import CopyPrior, copy_sq_error, population_loss, target_attention
from .copy_problem import build_copy_problem, check_copy_grid, default_init_G, positive_trace
from .ensemble import AdamConfig, train_ensemble

__all__ = ["CopyMapConfig", "CopyMapResult", "fit_copy_map"]


@dataclass(frozen=True)
class CopyMapConfig:
    """One MAP sweep over training-set sizes (a frozen config: the cache key of its result).

    Attributes
    ----------
    kind : {"softmax", "linear"}
    V, L : int
        Vocabulary size and sequence length.
    P_grid : tuple of int
        Training-set sizes; data sets are nested prefixes of one token stream (``data_seed``).
    data_seed : int
    init_seeds : tuple of int
        Seeds of the random initialisations (the same initial parameters at every ``P``).
    copy_init : bool
        Add one run started near the copy solution (needed to find the copy branch where it is metastable).
    init_G : float or None
        Std of the random ``G`` init; None = 1.0 for softmax, 0.1 for linear (our choice).
    init_W : float
        Std of the random ``W`` init.
    prior : CopyPrior
    adam : AdamConfig
    """

    kind: str
    V: int
    L: int
    P_grid: tuple[int, ...]
    data_seed: int = 0
    init_seeds: tuple[int, ...] = (0, 1, 2)
    copy_init: bool = True
    init_G: float | None = None
    init_W: float = 0.1
    prior: CopyPrior = field(default_factory=CopyPrior)
    adam: AdamConfig = field(default_factory=AdamConfig)

    def __post_init__(self) -> None:
        check_copy_grid(self.kind, self.V, self.L, self.P_grid, self.data_seed)
        if not isinstance(self.init_seeds, tuple):
            raise ValueError(f"init_seeds must be a tuple of ints, got {self.init_seeds!r}")
        for s in self.init_seeds:
            check_size("init seed", s, 0)
        if not self.init_seeds and not self.copy_init:
            raise ValueError("need at least one initialisation: give init_seeds or set copy_init=True")
        if self.init_G is not None and not (self.init_G >= 0):
            raise ValueError(f"init_G must be >= 0 or None, got {self.init_G!r}")
        if not self.init_W >= 0:
            raise ValueError(f"init_W must be >= 0, got {self.init_W!r}")
        if not isinstance(self.prior, CopyPrior) or not isinstance(self.adam, AdamConfig):
            raise TypeError("prior must be a CopyPrior and adam an AdamConfig")

    @property
    def init_labels(self) -> tuple[str, ...]:
        return tuple(f"seed {s}" for s in self.init_seeds) + (("copy",) if self.copy_init else ())


# ------------------------------------------------------------------------------------------ objective


@dataclass
class CopyMapResult:
    """All runs of a :class:`CopyMapConfig` sweep. Arrays are ``(n_P, n_init, ...)``; ``best`` picks the filtered run.

    For linear attention the network is invariant under ``(G, beta, W) -> -(G, beta, W)``; results are reported in
    the representative with ``tr W >= 0`` (our choice), so the target attention has a definite sign.
    """

    config: CopyMapConfig
    P: np.ndarray  # (n_P,)
    inits: tuple[str, ...]
    U: np.ndarray  # (n_P, n_init)
    train_loss: np.ndarray  # (n_P, n_init) mean squared error per position on the training set
    test_loss: np.ndarray  # (n_P, n_init) exact population loss
    target: np.ndarray  # (n_P, n_init) <A,S>/L
    grad_norm: np.ndarray  # (n_P, n_init)
    A: np.ndarray  # (n_P, n_init, L, L)
    W: np.ndarray  # (n_P, n_init, V, V)
    beta: np.ndarray  # (n_P, n_init)
    best: np.ndarray  # (n_P,) index of the lowest U
    steps_run: int

    def filtered(self, name: str) -> np.ndarray:
        """The field ``name`` of the filtered (lowest-U) run at each ``P``: shape ``(n_P, ...)``."""
        values = getattr(self, name)
        return values[np.arange(len(self.P)), self.best]

    def worst(self, name: str) -> np.ndarray:
        """The field ``name`` of the run with the highest U at each ``P`` (the filter undone: a control), ``(n_P, ...)``."""
        values = getattr(self, name)
        return values[np.arange(len(self.P)), np.nanargmax(self.U, axis=1)]


@cached
def fit_copy_map(
    cfg: CopyMapConfig, *, device: torch.device | str | None = None, desc: str | None = None
) -> CopyMapResult:
    """Train every (P, initialisation) pair of ``cfg`` as one batched Adam run and filter to the lowest U.

    ``device`` (default CPU) is where the batch is trained; it is not part of the config (results do not depend
    on it beyond floating-point rounding). Results come back as NumPy arrays. Calls go through the results cache
    (:mod:`lib.core.cache`; ``cache=False`` to bypass it, ``BOOK_CACHE=0`` to disable it).
    """
    if not isinstance(cfg, CopyMapConfig):
        raise TypeError(f"cfg must be a CopyMapConfig, got {type(cfg).__name__}")
    kind, L, V = cfg.kind, cfg.L, cfg.V
    init_G = default_init_G(kind, cfg.init_G)
    inits = [
        init_copy_params(kind, L, V, seed=s, init_G=init_G, init_W=cfg.init_W, copy_init=False) for s in cfg.init_seeds
    ]
    if cfg.copy_init:
        inits.append(init_copy_params(kind, L, V, seed=10_000, init_G=init_G, init_W=cfg.init_W, copy_init=True))
    problem, params = build_copy_problem(kind, V, L, cfg.P_grid, cfg.data_seed, inits, device)
    n_P, n_I = problem.n_P, problem.n_I

    run = train_ensemble(
        params,
        lambda p, _step: problem.objective(p, cfg.prior),
        cfg.adam,
        desc=desc or f"{kind} MAP, {n_P * n_I} models",
    )

    final = problem.shaped(run.params)  # (n_P, n_I, ...)
    G, W, beta = final["G"], final["W"], final.get("beta")
    if kind == "linear":
        G, W, beta = positive_trace(G, W, beta)
    with torch.no_grad():
        A = attention(kind, G, beta)  # (n_P, n_I, L, L)
        U = run.loss.reshape(n_P, n_I)
        train = copy_sq_error(A, W, problem.counts, problem.P) / (problem.P * L)
        test = population_loss(A, W)
        tgt = target_attention(A)
    if beta is None:
        beta = torch.zeros(n_P, n_I, dtype=torch.float64)
    U_np = U.cpu().numpy()
    best = np.nanargmin(np.where(np.isfinite(U_np), U_np, np.inf), axis=1)
    return CopyMapResult(
        config=cfg,
        P=np.array(cfg.P_grid),
        inits=cfg.init_labels,
        U=U_np,
        train_loss=train.cpu().numpy(),
        test_loss=test.cpu().numpy(),
        target=tgt.cpu().numpy(),
        grad_norm=run.grad_norm.reshape(n_P, n_I).numpy(),
        A=A.cpu().numpy(),
        W=W.cpu().numpy(),
        beta=beta.cpu().numpy(),
        best=best,
        steps_run=run.steps_run,
    )
