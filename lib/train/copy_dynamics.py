r"""Training dynamics of paper A's copy head: minibatch optimisation from random starts, many seeds at once.

Chapters 1–4 look at where training ends (the filtered global minimum). Paper B looks at *when* a pattern appears in
a single training run. This module trains the copy model the way a practitioner would — random initialisation,
minibatches, no filtering — for many seeds and training-set sizes at once, and records the order parameter along the
way, so that the step at which the copy pattern appears can be read off per run.

Model: ``H`` heads summed, :math:`F(X) = \sum_h A(G_h)\,X\,W_h` (``H = 1`` is paper A's model). Objective: the
minibatch estimate of the MAP objective :math:`U` (the data term of a minibatch of ``B`` of the ``P`` training
sequences rescaled by ``P/B``, plus the priors), so its gradient is an unbiased estimate of :math:`\nabla U`.
The minibatch is drawn from the run's own training set (the first ``P`` sequences of one token stream) with the
run's own seed. ``batch_size=None`` trains full batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
import torch

from ..core.cache import cached
from ..models.copy_head import attention, init_copy_params
from ..tasks.copy import CopyTask, check_size, copy_batch, nested_pair_counts, sample_tokens
from ..models.copy_objective import CopyPrior, copy_objective, target_attention
from .copy_problem import check_copy_grid, default_init_G
from .ensemble import AdamConfig, train_ensemble

__all__ = ["CopyDynamicsConfig", "CopyDynamicsResult", "size_grid", "train_copy_dynamics", "train_copy_heads"]


def size_grid(reference: float, factors, minimum: int = 1) -> tuple[int, ...]:
    r"""Training-set sizes at fixed fractions of a reference size: the sorted distinct
    :math:`\max(\mathrm{round}(f\,P_\text{ref}), P_\text{min})` over ``factors`` :math:`f`.

    Parameters
    ----------
    reference : float
        The reference size :math:`P_\text{ref} > 0` (e.g. the theory's :math:`P^*` or onset :math:`P_1`).
    factors : sequence of float
        Positive fractions of ``reference``; factors that round to the same size give it once.
    minimum : int
        The smallest size returned (a training set has at least one sequence).

    Returns
    -------
    tuple of int
        Increasing sizes, as ``CopyDynamicsConfig.P_grid`` takes them.
    """
    factors = tuple(factors)
    if not (
        isinstance(reference, (int, float, np.floating, np.integer)) and math.isfinite(reference) and reference > 0
    ):
        raise ValueError(f"reference must be a finite number > 0, got {reference!r}")
    if not factors or not all(isinstance(f, (int, float)) and math.isfinite(f) and f > 0 for f in factors):
        raise ValueError(f"factors must be a non-empty sequence of finite numbers > 0, got {factors!r}")
    check_size("minimum", minimum, 1)
    return tuple(sorted({max(minimum, int(round(f * float(reference)))) for f in factors}))


@dataclass(frozen=True)
class CopyDynamicsConfig:
    """Many single training runs of the copy head (a frozen config: the cache key).

    Attributes
    ----------
    kind : {"softmax", "linear"}
    V, L : int
    P_grid : tuple of int
        Training-set sizes (nested data sets of one token stream, ``data_seed``).
    seeds : tuple of int
        One run per (P, seed): the seed fixes the initialisation and the minibatch order.
    heads : int
        Number of heads ``H`` summed in the output (1 = paper A's model).
    batch_size : int or None
        Minibatch size ``B`` (None = full batch).
    threshold : float
        The copy pattern has appeared once the largest per-head target attention reaches ``threshold``.
    record_every : int
        Steps between records of the order parameter.
    init_G, init_W : float
        Initial scales (``init_G`` None = 1.0 softmax, 0.1 linear).
    prior : CopyPrior
    adam : AdamConfig
        Optimiser; ``lr_final`` gives a cosine decay, ``tol`` is ignored here (runs never stop early).
    """

    kind: str
    V: int
    L: int
    P_grid: tuple[int, ...]
    seeds: tuple[int, ...] = tuple(range(16))
    heads: int = 1
    batch_size: int | None = 32
    threshold: float = 0.12
    record_every: int = 25
    data_seed: int = 0
    init_G: float | None = None
    init_W: float = 0.1
    prior: CopyPrior = field(default_factory=CopyPrior)
    adam: AdamConfig = field(default_factory=lambda: AdamConfig(lr=0.05, steps=3000))

    def __post_init__(self) -> None:
        check_copy_grid(self.kind, self.V, self.L, self.P_grid, self.data_seed)
        if not isinstance(self.seeds, tuple) or not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must be a non-empty tuple of distinct ints, got {self.seeds!r}")
        for s in self.seeds:
            check_size("seed", s, 0)
        check_size("heads", self.heads, 1)
        if self.batch_size is not None:
            check_size("batch_size", self.batch_size, 1)
        check_size("record_every", self.record_every, 1)
        if not (isinstance(self.threshold, (int, float)) and 0 < self.threshold < 1):
            raise ValueError(f"threshold must be in (0, 1), got {self.threshold!r}")
        if not isinstance(self.prior, CopyPrior) or not isinstance(self.adam, AdamConfig):
            raise TypeError("prior must be a CopyPrior and adam an AdamConfig")


@dataclass
class CopyDynamicsResult:
    """Trajectories ``(n_P, n_seed, n_records)`` of the largest per-head target attention, and emergence steps."""

    config: CopyDynamicsConfig
    P: np.ndarray  # (n_P,)
    seeds: np.ndarray  # (n_seed,)
    steps: np.ndarray  # (n_records,)
    target: np.ndarray  # (n_P, n_seed, n_records)
    loss: np.ndarray  # (n_P, n_seed, n_records) minibatch objective per sequence
    emergence: np.ndarray  # (n_P, n_seed) first recorded step with target >= threshold; NaN = not within the run
    final_target: np.ndarray  # (n_P, n_seed)

    @property
    def emerged(self) -> np.ndarray:
        """``(n_P, n_seed)`` bool: the run reached the copy pattern within its steps (the others are censored)."""
        return np.isfinite(self.emergence)

    @property
    def median_emergence(self) -> np.ndarray:
        """``(n_P,)`` median emergence step over the seeds that emerged at each size; NaN where none did."""
        return np.array([np.median(e[np.isfinite(e)]) if np.isfinite(e).any() else np.nan for e in self.emergence])

    def emergence_cv(self, across: str = "seeds") -> np.ndarray:
        r"""Coefficient of variation :math:`\sigma/\mu` (population :math:`\sigma`) of the emergence step.

        Over the runs that emerged: ``across="seeds"`` gives one value per training-set size, ``(n_P,)`` (how much
        the step varies from seed to seed at fixed data); ``across="sizes"`` one per seed, ``(n_seed,)`` (how much
        it varies with :math:`P` for a fixed seed). NaN where fewer than two runs emerged. Censored runs are left
        out, not put at the budget.
        """
        if across not in ("seeds", "sizes"):
            raise ValueError(f"across must be 'seeds' or 'sizes', got {across!r}")
        rows = self.emergence if across == "seeds" else self.emergence.T
        return np.array(
            [
                np.std(e[np.isfinite(e)]) / np.mean(e[np.isfinite(e)]) if np.isfinite(e).sum() > 1 else np.nan
                for e in rows
            ]
        )

    def censored_at_budget(self) -> np.ndarray:
        """``(n_P, n_seed)`` emergence steps with the runs that did not emerge put at the budget (the run's steps):
        finite, so ratios of medians are lower bounds where the slower configuration has censored runs."""
        return np.where(self.emerged, self.emergence, float(self.config.adam.steps))

    def emergence_table(self) -> str:
        """One line per training-set size: the share of seeds that emerged, their median step and its coefficient of
        variation across seeds."""
        share, med, cv = self.emerged.mean(1), self.median_emergence, self.emergence_cv("seeds")
        return "\n".join(
            f"P = {P:4d}: emerged {f:4.0%}, median step {m:6.0f}, coefficient of variation {c:.3f}"
            for P, f, m, c in zip(self.P, share, med, cv)
        )


def _emergence(target: np.ndarray, steps: np.ndarray, threshold: float) -> np.ndarray:
    hit = target >= threshold  # (..., n_records)
    first = np.argmax(hit, axis=-1)
    return np.where(hit.any(-1), steps[first], np.nan)


@cached
def train_copy_dynamics(
    cfg: CopyDynamicsConfig, *, device: torch.device | str | None = None, desc: str | None = None
) -> CopyDynamicsResult:
    """Train every (P, seed) run of ``cfg`` as one batched computation and record the copy order parameter."""
    if not isinstance(cfg, CopyDynamicsConfig):
        raise TypeError(f"cfg must be a CopyDynamicsConfig, got {type(cfg).__name__}")
    kind, V, L, H = cfg.kind, cfg.V, cfg.L, cfg.heads
    device = torch.device(device) if device is not None else torch.device("cpu")
    n_P, n_S = len(cfg.P_grid), len(cfg.seeds)
    E = n_P * n_S
    tokens = sample_tokens(CopyTask(V=V, L=L, P=max(cfg.P_grid), seed=cfg.data_seed)).to(device)  # (P_max, L)
    X_all, Y_all = copy_batch(tokens, V)  # (P_max, L, V) each
    P_e = torch.tensor(cfg.P_grid, device=device).repeat_interleave(n_S)  # (E,) training-set size of each run
    init_G = default_init_G(kind, cfg.init_G)
    inits = [
        [
            init_copy_params(kind, L, V, seed=1000 * s + h, init_G=init_G, init_W=cfg.init_W, copy_init=False)
            for h in range(H)
        ]
        for s in cfg.seeds
    ]
    G0 = torch.stack([torch.stack([g for g, _, _ in heads]) for heads in inits])  # (n_S, H, L, L)
    W0 = torch.stack([torch.stack([w for _, w, _ in heads]) for heads in inits])  # (n_S, H, V, V)
    params = {
        "G": G0.expand(n_P, n_S, H, L, L).reshape(E, H, L, L).to(device),  # (E, H, L, L)
        "W": W0.expand(n_P, n_S, H, V, V).reshape(E, H, V, V).to(device),  # (E, H, V, V)
    }
    if kind == "linear":
        params["beta"] = torch.zeros(E, H, dtype=torch.float64, device=device)  # (E, H)
    gen = torch.Generator(device=device).manual_seed(int(sum(cfg.seeds)) * 7919 + cfg.data_seed)
    B = cfg.batch_size
    prior = cfg.prior
    n_rec = math.ceil(cfg.adam.steps / cfg.record_every)
    rec_steps = np.arange(n_rec) * cfg.record_every
    rec_target = np.zeros((E, n_rec))
    rec_loss = np.zeros((E, n_rec))

    def model_attention(p):
        return attention(kind, p["G"], p.get("beta"))  # (E, H, L, L)

    use_counts = B is None and H == 1  # full batch, one head: the data term from pair counts (cost independent of P)
    if use_counts:
        counts = nested_pair_counts(tokens.cpu(), V, cfg.P_grid).to(device)  # (n_P, L, L, V, V)
        P_col = torch.tensor(cfg.P_grid, dtype=torch.float64, device=device)[:, None]  # (n_P, 1)

    def loss_fn(p, step):
        A = model_attention(p)  # (E, H, L, L)
        if use_counts:
            single = {k: v[:, 0].reshape(n_P, n_S, *v.shape[2:]) for k, v in p.items()}  # (n_P, n_S, ...)
            total = copy_objective(kind, single, counts, P_col, prior).reshape(-1)  # (E,): data + priors
            record(step, A, p, total)
            return total
        if B is None:
            X, Y, scale = X_all[None], Y_all[None], torch.ones(E, dtype=torch.float64, device=device)
            mask = (torch.arange(X_all.shape[0], device=device)[None] < P_e[:, None]).to(torch.float64)  # (E, P_max)
        else:
            idx = (torch.rand(E, B, generator=gen, device=device, dtype=torch.float64) * P_e[:, None]).long()  # (E, B)
            X, Y = X_all[idx], Y_all[idx]  # (E, B, L, V)
            scale, mask = P_e.to(torch.float64) / B, None
        F = torch.einsum("ehij,ebjv,ehvc->ebic", A, X.expand(E, *X.shape[1:]), p["W"])  # (E, B, L, V)
        err = (Y.expand_as(F) - F).pow(2).sum((-1, -2))  # (E, B)
        if mask is not None:
            err = err * mask
        data = scale * err.sum(-1) / (2 * prior.T * L)  # (E,)
        reg = p["G"].pow(2).sum((-1, -2, -3)) / (2 * prior.sigma_G2) + p["W"].pow(2).sum((-1, -2, -3)) / (
            2 * prior.sigma_W2
        )
        if kind == "linear":
            reg = reg + p["beta"].pow(2).sum(-1) / (2 * prior.sigma_beta2)
        record(step, A, p, data + reg)
        return data + reg

    def record(step, A, p, total):
        if step % cfg.record_every == 0:
            k = step // cfg.record_every
            with torch.no_grad():
                tgt = target_attention(A)  # (E, H)
                if kind == "linear":  # sign of each head's contribution: tr W_h
                    tgt = tgt * torch.sign(torch.diagonal(p["W"], dim1=-2, dim2=-1).sum(-1))
                rec_target[:, k] = tgt.max(-1).values.cpu().numpy()
                rec_loss[:, k] = (total / P_e).detach().cpu().numpy()

    adam = AdamConfig(
        lr=cfg.adam.lr,
        steps=cfg.adam.steps,
        betas=cfg.adam.betas,
        eps=cfg.adam.eps,
        check_every=cfg.adam.check_every,
        tol=0.0,
        lr_final=cfg.adam.lr_final,
        optimizer=cfg.adam.optimizer,
    )
    run = train_ensemble(params, loss_fn, adam, desc=desc or f"{kind} dynamics, {E} runs")
    with torch.no_grad():
        final = target_attention(model_attention(run.params)).max(-1).values.cpu().numpy()  # (E,)
    target = rec_target.reshape(n_P, n_S, n_rec)
    return CopyDynamicsResult(
        config=cfg,
        P=np.array(cfg.P_grid),
        seeds=np.array(cfg.seeds),
        steps=rec_steps,
        target=target,
        loss=rec_loss.reshape(n_P, n_S, n_rec),
        emergence=_emergence(target, rec_steps, cfg.threshold),
        final_target=final.reshape(n_P, n_S),
    )


def train_copy_heads(cfg: CopyDynamicsConfig, heads, *, device: torch.device | str | None = None) -> dict:
    """The runs of ``cfg`` repeated with ``H`` summed heads for each ``H`` in ``heads``: ``{H: CopyDynamicsResult}``.

    Each ``H`` is :func:`train_copy_dynamics` of ``cfg`` with ``heads=H`` (so cached per ``H``); everything else (the
    sizes, the seeds, hence the first head's initialisation and the minibatch order) is shared.
    """
    if not isinstance(cfg, CopyDynamicsConfig):
        raise TypeError(f"cfg must be a CopyDynamicsConfig, got {type(cfg).__name__}")
    heads = tuple(heads)
    if not heads or len(set(heads)) != len(heads):
        raise ValueError(f"heads must be a non-empty sequence of distinct ints >= 1, got {heads!r}")
    for H in heads:
        check_size("heads", H, 1)
    return {H: train_copy_dynamics(replace(cfg, heads=H), device=device) for H in heads}
