r"""MAP fitting of paper A's copy head with Adam, over a grid of training-set sizes, filtered to the global minimum.

Objective (paper A's MAP): with temperature :math:`T` and Gaussian priors,

.. math::
    U(G, W, \beta) = \frac{1}{2TL}\sum_{\mu=1}^P \sum_{i=1}^L \lVert y^\mu_i - f_i(X^\mu)\rVert^2
      + \frac{\lVert G\rVert_F^2}{2\sigma_G^2} + \frac{\lVert W\rVert_F^2}{2\sigma_W^2}
      \;\Big[+ \frac{\beta^2}{2\sigma_\beta^2}\ \text{(linear)}\Big].

The data term needs only the pair counts :math:`N_{jkab}` (:func:`lib.tasks.pair_counts`): with :math:`y_i = x_{i-1}`,

.. math::
    \sum_{\mu,i}\lVert y_i - f_i\rVert^2 = PL - 2\sum_{ij} A_{ij}\sum_{ab} N_{j,i-1,ab} W_{ab}
      + \sum_{i,j,k} A_{ij}A_{ik}\sum_{ab} N_{jkab}(WW^\top)_{ab},

so one Adam step costs :math:`O(L^2V^2)` whatever :math:`P` is (the direct form costs :math:`O(PL^2V)`;
``benchmarks/copy_stats.py`` measures the ratio). With the expected counts of fresh data the same formula
gives the exact test loss.

Filtering (paper A: "Adam filtered to the global minimum"): for every :math:`P` we run several random
initialisations plus one copy-initialised run and keep the lowest :math:`U`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ..cache import cached
from ..models.copy_head import attention, check_kind, init_copy_params
from ..tasks.copy import CopyTask, check_size, nested_pair_counts, population_counts, sample_tokens, shift_matrix
from .ensemble import AdamConfig, train_ensemble

__all__ = [
    "CopyPrior",
    "CopyMapConfig",
    "CopyMapResult",
    "copy_sq_error",
    "copy_objective",
    "population_loss",
    "target_attention",
    "optimal_readout",
    "readout_moments",
    "fit_copy_map",
]


def _check_square(name: str, M: torch.Tensor) -> None:
    if not torch.is_tensor(M):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(M).__name__}")
    if M.dim() < 2 or M.shape[-1] != M.shape[-2] or M.shape[-1] < 2:
        raise ValueError(f"{name} must have shape (..., n, n) with n >= 2, got {tuple(M.shape)}")


def _positive(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")


@dataclass(frozen=True)
class CopyPrior:
    """Likelihood temperature and prior variances of the copy head (paper A's defaults: all 1)."""

    T: float = 1.0
    sigma_G2: float = 1.0
    sigma_W2: float = 1.0
    sigma_beta2: float = 1.0

    def __post_init__(self) -> None:
        for name in ("T", "sigma_G2", "sigma_W2", "sigma_beta2"):
            _positive(name, getattr(self, name))


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
        check_kind(self.kind)
        check_size("V", self.V, 2)
        check_size("L", self.L, 2)
        if not isinstance(self.P_grid, tuple) or len(self.P_grid) == 0:
            raise ValueError(f"P_grid must be a non-empty tuple of ints, got {self.P_grid!r}")
        for p in self.P_grid:
            check_size("P_grid entry", p, 1)
        if len(set(self.P_grid)) != len(self.P_grid):
            raise ValueError(f"P_grid has repeated entries: {self.P_grid}")
        check_size("data_seed", self.data_seed, 0)
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
def copy_sq_error(A: torch.Tensor, W: torch.Tensor, counts: torch.Tensor, n_seq: torch.Tensor | float) -> torch.Tensor:
    r"""Summed squared error :math:`\sum_{\mu,i}\lVert y_i - f_i\rVert^2` from pair counts.

    Parameters
    ----------
    A : Tensor ``(..., L, L)``
        Attention matrices (any leading member shape ``M``).
    W : Tensor ``(..., V, V)``
        Readouts, same leading shape as ``A``.
    counts : Tensor ``(C..., L, L, V, V)``
        Pair counts; ``C`` is a prefix of the member shape (e.g. one count tensor per ``P`` shared by all
        initialisations at that ``P``), or empty (one count tensor for all members).
    n_seq : Tensor or float
        Number of sequences behind the counts, broadcastable to the member shape.

    Returns
    -------
    Tensor of the member shape.
    """
    L = A.shape[-1]
    V = W.shape[-1]
    if counts.shape[-4:] != (L, L, V, V):
        raise ValueError(f"counts must end in (L, L, V, V) = {(L, L, V, V)}, got {tuple(counts.shape)}")
    member = A.shape[:-2]
    c = counts.dim() - 4  # number of leading count dims
    if W.shape[:-2] != member or tuple(counts.shape[:c]) != tuple(member[:c]):
        raise ValueError(f"shapes do not line up: A {tuple(A.shape)}, W {tuple(W.shape)}, counts {tuple(counts.shape)}")
    Cn = int(np.prod(member[:c])) if c else 1
    A_ = A.reshape(Cn, -1, L, L)  # (C, R, L, L), R = members sharing one count tensor
    W_ = W.reshape(Cn, -1, V * V)  # (C, R, V*V)
    N = counts.reshape(Cn, L, L, V * V)  # (C, j, k, ab)
    WW = (W.reshape(Cn, -1, V, V) @ W.reshape(Cn, -1, V, V).transpose(-1, -2)).reshape(Cn, -1, V * V)  # (C, R, V*V)
    B = torch.einsum("cjkz,crz->crjk", N, W_)  # (C, R, L, L): sum_ab N[j,k,ab] W_ab
    B = torch.roll(B, shifts=1, dims=-1)  # (C, R, j, i) = B[j, i-1]: the target of query i is key i-1
    M = torch.einsum("cjkz,crz->crjk", N, WW)  # (C, R, L, L): sum_ab N[j,k,ab] (WW^T)_ab
    lin = torch.einsum("crij,crji->cr", A_, B)  # (C, R)
    quad = torch.einsum("crij,crjk,crik->cr", A_, M, A_)  # (C, R)
    out = (quad - 2 * lin).reshape(member)
    return out + torch.as_tensor(n_seq, dtype=A.dtype) * L


def copy_objective(
    kind: str,
    params: dict[str, torch.Tensor],
    counts: torch.Tensor,
    P: torch.Tensor,
    prior: CopyPrior,
) -> torch.Tensor:
    """MAP objective :math:`U` per member (see the module docstring), shape = member shape of ``params["G"]``."""
    check_kind(kind)
    if not isinstance(prior, CopyPrior):
        raise TypeError(f"prior must be a CopyPrior, got {type(prior).__name__}")
    missing = {"G", "W"} - set(params)
    if missing:
        raise ValueError(f"params lacks {sorted(missing)}")
    G, W = params["G"], params["W"]  # (..., L, L), (..., V, V)
    beta = params.get("beta") if kind == "linear" else None
    A = attention(kind, G, beta)  # (..., L, L)
    L = G.shape[-1]
    data = copy_sq_error(A, W, counts, P) / (2 * prior.T * L)
    reg = G.pow(2).sum((-1, -2)) / (2 * prior.sigma_G2) + W.pow(2).sum((-1, -2)) / (2 * prior.sigma_W2)
    if beta is not None:
        reg = reg + beta.pow(2) / (2 * prior.sigma_beta2)
    return data + reg


def population_loss(A: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """Exact test loss (mean squared error per position on fresh i.i.d. sequences), member shape of ``A``."""
    _check_square("A", A)
    _check_square("W", W)
    L, V = A.shape[-1], W.shape[-1]
    counts = population_counts(L, V, dtype=A.dtype, device=A.device)  # (L, L, V, V)
    return copy_sq_error(A, W, counts, 1.0) / L


def readout_moments(A: torch.Tensor, counts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The two moment matrices of the readout regression, :math:`\Phi^\top\Phi` and :math:`\Phi^\top Y`, from pair counts.

    With :math:`\phi_i = \sum_j A_{ij} x_j` stacked over sequences and positions into :math:`\Phi`,
    :math:`(\Phi^\top\Phi)_{ab} = \sum_{ijk} A_{ij}A_{ik}N_{jkab}` and
    :math:`(\Phi^\top Y)_{ab} = \sum_{ij} A_{ij}N_{j,i-1,ab}` (the target of query :math:`i` is key :math:`i-1`).

    Parameters
    ----------
    A : Tensor ``(..., L, L)``
    counts : Tensor ``(..., L, L, V, V)``
        Pair counts; leading dimensions broadcast against those of ``A``.

    Returns
    -------
    gram, cross : Tensor ``(..., V, V)`` each
    """
    gram = torch.einsum("...ij,...ik,...jkab->...ab", A, A, counts)  # (..., V, V)
    cross = torch.einsum("...ij,...jiab->...ab", A, torch.roll(counts, shifts=1, dims=-3))  # (..., V, V): N[j, i-1]
    return gram, cross


def optimal_readout(A: torch.Tensor, counts: torch.Tensor, ridge: float = 0.0) -> torch.Tensor:
    r"""The readout minimising squared error plus ``ridge * ||W||^2`` for fixed attention, from pair counts.

    With :math:`\phi_i = \sum_j A_{ij} x_j` stacked into :math:`\Phi`:
    :math:`(\Phi^\top\Phi)_{ab} = \sum_{ijk} A_{ij}A_{ik}N_{jkab}`, :math:`(\Phi^\top Y)_{ab} = \sum_{ij} A_{ij}N_{j,i-1,ab}`
    and :math:`W^* = (\Phi^\top\Phi + \lambda I)^{-1}\Phi^\top Y`. For MAP at fixed ``A`` use
    ``ridge = T L / sigma_W2``; ``ridge = 0`` with population counts gives the best readout on fresh data.

    Parameters
    ----------
    A : Tensor ``(..., L, L)``
    counts : Tensor ``(L, L, V, V)``
        One count tensor shared by all members.
    ridge : float
        :math:`\lambda \ge 0`.

    Returns
    -------
    Tensor ``(..., V, V)``
    """
    if counts.dim() != 4:
        raise ValueError(f"counts must have shape (L, L, V, V), got {tuple(counts.shape)}")
    if not ridge >= 0:
        raise ValueError(f"ridge must be >= 0, got {ridge!r}")
    L, V = counts.shape[0], counts.shape[-1]
    if A.shape[-2:] != (L, L):
        raise ValueError(f"A must end in ({L}, {L}), got {tuple(A.shape)}")
    gram, cross = readout_moments(A, counts)  # (..., V, V) each
    eye = torch.eye(V, dtype=A.dtype, device=A.device)
    return torch.linalg.solve(gram + ridge * eye, cross)  # (..., V, V)


def target_attention(A: torch.Tensor) -> torch.Tensor:
    r"""Mean attention on the target key, :math:`\langle A, S\rangle / L = \frac1L\sum_i A_{i,i-1}`, member shape."""
    _check_square("A", A)
    L = A.shape[-1]
    S = shift_matrix(L, dtype=A.dtype, device=A.device)
    return (A * S).sum((-1, -2)) / L


# ------------------------------------------------------------------------------------------ fitting
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


@cached
def fit_copy_map(cfg: CopyMapConfig, *, device: torch.device | str | None = None, desc: str | None = None) -> CopyMapResult:
    """Train every (P, initialisation) pair of ``cfg`` as one batched Adam run and filter to the lowest U.

    ``device`` (default CPU) is where the batch is trained; it is not part of the config (results do not depend
    on it beyond floating-point rounding). Results come back as NumPy arrays. Calls go through the results cache
    (:mod:`lib.cache`; ``cache=False`` to bypass it, ``BOOK_CACHE=0`` to disable it).
    """
    if not isinstance(cfg, CopyMapConfig):
        raise TypeError(f"cfg must be a CopyMapConfig, got {type(cfg).__name__}")
    kind, L, V = cfg.kind, cfg.L, cfg.V
    P_max = max(cfg.P_grid)
    tokens = sample_tokens(CopyTask(V=V, L=L, P=P_max, seed=cfg.data_seed))  # (P_max, L)
    device = torch.device(device) if device is not None else torch.device("cpu")
    counts = nested_pair_counts(tokens, V, cfg.P_grid).to(device)  # (n_P, L, L, V, V)
    n_P, labels = len(cfg.P_grid), cfg.init_labels
    n_I = len(labels)
    init_G = cfg.init_G if cfg.init_G is not None else (1.0 if kind == "softmax" else 0.1)

    inits = []
    for s in cfg.init_seeds:
        inits.append(init_copy_params(kind, L, V, seed=s, init_G=init_G, init_W=cfg.init_W, copy_init=False))
    if cfg.copy_init:
        inits.append(init_copy_params(kind, L, V, seed=10_000, init_G=init_G, init_W=cfg.init_W, copy_init=True))
    G0 = torch.stack([g for g, _, _ in inits])  # (n_I, L, L)
    W0 = torch.stack([w for _, w, _ in inits])  # (n_I, V, V)
    params = {
        "G": G0.expand(n_P, n_I, L, L).reshape(n_P * n_I, L, L).to(device),  # (E, L, L), E = n_P * n_I
        "W": W0.expand(n_P, n_I, V, V).reshape(n_P * n_I, V, V).to(device),  # (E, V, V)
    }
    if kind == "linear":
        params["beta"] = torch.zeros(n_P * n_I, dtype=torch.float64, device=device)  # (E,)
    P_t = torch.tensor(cfg.P_grid, dtype=torch.float64, device=device)[:, None]  # (n_P, 1)

    def loss_fn(p, _step):
        shaped = {k: v.reshape(n_P, n_I, *v.shape[1:]) for k, v in p.items()}  # (n_P, n_I, ...)
        return copy_objective(kind, shaped, counts, P_t, cfg.prior).reshape(-1)  # (E,)

    run = train_ensemble(params, loss_fn, cfg.adam, desc=desc or f"{kind} MAP, {n_P * n_I} models")

    G = run.params["G"].reshape(n_P, n_I, L, L)
    W = run.params["W"].reshape(n_P, n_I, V, V)
    beta = run.params["beta"].reshape(n_P, n_I) if kind == "linear" else torch.zeros(n_P, n_I, dtype=torch.float64, device=device)
    if kind == "linear":  # canonical sign: tr W >= 0 (the network is invariant under a joint sign flip)
        sign = torch.where(torch.diagonal(W, dim1=-2, dim2=-1).sum(-1) < 0, -1.0, 1.0).to(W.dtype)  # (n_P, n_I)
        G, W, beta = G * sign[..., None, None], W * sign[..., None, None], beta * sign
    with torch.no_grad():
        A = attention(kind, G, beta if kind == "linear" else None)  # (n_P, n_I, L, L)
        U = run.loss.reshape(n_P, n_I)
        train = copy_sq_error(A, W, counts, P_t) / (P_t * L)
        test = population_loss(A, W)
        tgt = target_attention(A)
    U_np = U.cpu().numpy()
    best = np.nanargmin(np.where(np.isfinite(U_np), U_np, np.inf), axis=1)
    return CopyMapResult(
        config=cfg,
        P=np.array(cfg.P_grid),
        inits=labels,
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
