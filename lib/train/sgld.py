r"""Langevin sampling of many posteriors at once, and its convergence diagnostics.

Unadjusted Langevin dynamics (full-batch SGLD) on stacked parameters :math:`\theta` of ``E`` independent chains,
targeting :math:`p(\theta) \propto e^{-U(\theta)}` for each chain's own energy :math:`U` (the negative log
posterior; a likelihood temperature is part of :math:`U`):

.. math:: \theta_{t+1} = \theta_t - \eta\,\nabla U(\theta_t) + \sqrt{2\eta}\,\xi_t, \qquad \xi_t \sim \mathcal N(0, I).

The discretisation bias is :math:`O(\eta)` (no Metropolis correction); :func:`langevin` records observables every
``thin`` steps after a burn-in. Diagnostics: :func:`split_rhat` (Gelman–Rubin on half-chains; values well above 1
mean the chains have not mixed, e.g. two metastable branches of a first-order transition) and
:func:`effective_sample_size` (Geyer's initial monotone sequence).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np
import torch

from ..core.progress import progress

__all__ = ["SGLDConfig", "LangevinRun", "langevin", "split_rhat", "effective_sample_size"]


@dataclass(frozen=True)
class SGLDConfig:
    """Langevin sampler settings (a frozen config: part of a cache key).

    Attributes
    ----------
    step_size : float
        :math:`\\eta > 0`.
    steps : int
        Total number of steps (burn-in included).
    burn_in : float
        Fraction of the steps discarded, in ``[0, 1)``.
    thin : int
        Record every ``thin``-th step after burn-in.
    seed : int
        Seed of the injected noise.
    """

    step_size: float = 2e-3
    steps: int = 10_000
    burn_in: float = 0.5
    thin: int = 100
    seed: int = 0

    def __post_init__(self) -> None:
        if (
            isinstance(self.step_size, bool)
            or not isinstance(self.step_size, (int, float))
            or not (math.isfinite(self.step_size) and self.step_size > 0)
        ):
            raise ValueError(f"step_size must be a finite number > 0, got {self.step_size!r}")
        for name, minimum in (("steps", 2), ("thin", 1), ("seed", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
        if not (isinstance(self.burn_in, (int, float)) and 0 <= self.burn_in < 1):
            raise ValueError(f"burn_in must be a fraction in [0, 1), got {self.burn_in!r}")
        if self.n_samples < 2:
            raise ValueError(
                f"steps={self.steps}, burn_in={self.burn_in}, thin={self.thin} record {self.n_samples} sample(s); need >= 2"
            )

    @property
    def first_recorded(self) -> int:
        return int(math.ceil(self.burn_in * self.steps))

    @property
    def n_samples(self) -> int:
        return len(range(int(math.ceil(self.burn_in * self.steps)), self.steps, self.thin))


@dataclass
class LangevinRun:
    """Recorded observables ``(n_samples, E, ...)`` per name, the steps they were taken at, and the final state."""

    samples: dict[str, np.ndarray]
    steps: np.ndarray
    final: dict[str, torch.Tensor]
    diverged: np.ndarray  # (E,) bool: the energy became non-finite

    def mean(self, name: str) -> np.ndarray:
        return self.samples[name].mean(0)

    def var(self, name: str) -> np.ndarray:
        return self.samples[name].var(0, ddof=1)


EnergyFn = Callable[[Mapping[str, torch.Tensor]], torch.Tensor]
ObserveFn = Callable[[Mapping[str, torch.Tensor]], Mapping[str, torch.Tensor]]


def langevin(
    params: Mapping[str, torch.Tensor],
    energy: EnergyFn,
    observe: ObserveFn,
    cfg: SGLDConfig,
    *,
    desc: str | None = None,
    step_scale: torch.Tensor | None = None,
) -> LangevinRun:
    r"""Run ``E`` Langevin chains at once.

    Parameters
    ----------
    params : mapping of str to Tensor
        Initial states, each with leading chain axis ``E`` (copied).
    energy : callable
        ``energy(params) -> Tensor (E,)``: chain ``e``'s energy may depend only on chain ``e``'s slices.
    observe : callable
        ``observe(params) -> {name: Tensor (E, ...)}``, evaluated (without gradients) at recorded steps.
    cfg : SGLDConfig
    step_scale : Tensor ``(E,)``, optional
        Per-chain factors :math:`s_e \in (0, 1]` of the step: chain ``e`` uses :math:`\eta_e = s_e\,\eta` in both the
        drift and the noise, so it targets the same :math:`e^{-U}` (chains are independent); use it where the
        energy's curvature differs between chains (e.g. grows with the data set size), since a step must stay below
        about :math:`2/\lambda_\max` to be stable. None = 1 for every chain (bit for bit the plain update).
    """
    if not isinstance(cfg, SGLDConfig):
        raise TypeError(f"cfg must be an SGLDConfig, got {type(cfg).__name__}")
    if not isinstance(params, Mapping) or not params:
        raise ValueError("params must be a non-empty mapping of name -> tensor with a leading chain axis")
    sizes = {t.shape[0] if t.dim() else None for t in params.values()}
    if len(sizes) != 1 or None in sizes:
        raise ValueError("every parameter needs the same leading chain axis")
    E = sizes.pop()
    if E < 1:
        raise ValueError("need at least one chain")
    p = {k: v.detach().clone().requires_grad_(True) for k, v in params.items()}
    device = next(iter(p.values())).device
    scale = None
    if step_scale is not None:
        scale = torch.as_tensor(step_scale, dtype=torch.float64, device=device)
        if scale.shape != (E,):
            raise ValueError(f"step_scale must have shape ({E},), got {tuple(scale.shape)}")
        if not bool(((scale > 0) & (scale <= 1)).all()):
            raise ValueError("step_scale entries must lie in (0, 1]")
    gen = torch.Generator(device=device).manual_seed(cfg.seed)
    noise_scale = math.sqrt(2 * cfg.step_size)
    recorded: dict[str, list[np.ndarray]] = {}
    rec_steps: list[int] = []
    bad = torch.zeros(E, dtype=torch.bool, device=device)
    bar = progress(total=cfg.steps, desc=desc)
    for step in range(cfg.steps):
        u = energy(p)
        if u.shape != (E,):
            raise ValueError(f"energy must return shape ({E},), got {tuple(u.shape)}")
        finite = torch.isfinite(u.detach())
        bad |= ~finite
        grads = torch.autograd.grad(torch.where(finite, u, torch.zeros_like(u)).sum(), list(p.values()))
        with torch.no_grad():
            for (k, v), g in zip(p.items(), grads):
                xi = torch.randn(v.shape, generator=gen, device=device, dtype=v.dtype)
                if scale is None:
                    v.add_(-cfg.step_size * g + noise_scale * xi)
                else:
                    s_e = scale.to(v.dtype).reshape((E,) + (1,) * (v.dim() - 1))  # (E, 1, ...)
                    v.add_(-cfg.step_size * s_e * g + noise_scale * s_e.sqrt() * xi)
        if step >= cfg.first_recorded and (step - cfg.first_recorded) % cfg.thin == 0:
            with torch.no_grad():
                for name, value in observe(p).items():
                    recorded.setdefault(name, []).append(value.detach().cpu().numpy().copy())
            rec_steps.append(step)
        bar.update(1)
    bar.close()
    return LangevinRun(
        samples={k: np.stack(v) for k, v in recorded.items()},
        steps=np.array(rec_steps),
        final={k: v.detach() for k, v in p.items()},
        diverged=bad.cpu().numpy(),
    )


def split_rhat(draws) -> float:
    """Split-:math:`\\hat R` of draws ``(n_samples, n_chains)`` (Gelman et al.): each chain is cut in half.

    Near 1 when the chains sample one distribution; well above 1 (say > 1.1) when they disagree.
    """
    x = np.asarray(draws, dtype=float)
    if x.ndim != 2 or x.shape[0] < 4 or x.shape[1] < 1:
        raise ValueError(f"draws must have shape (n_samples >= 4, n_chains >= 1), got {x.shape}")
    half = x.shape[0] // 2
    chains = np.concatenate([x[:half], x[half : 2 * half]], axis=1)  # (half, 2 * n_chains)
    n = chains.shape[0]
    means = chains.mean(0)
    W = chains.var(0, ddof=1).mean()
    B = n * means.var(ddof=1)
    if W == 0:
        return 1.0 if B == 0 else float("inf")
    var_plus = (n - 1) / n * W + B / n
    return float(np.sqrt(var_plus / W))


def effective_sample_size(draws) -> float:
    """Effective sample size of one chain ``(n_samples,)`` from its autocorrelations (Geyer's monotone sequence)."""
    x = np.asarray(draws, dtype=float)
    if x.ndim != 1 or x.size < 4:
        raise ValueError(f"draws must be 1-D with at least 4 samples, got shape {x.shape}")
    n = x.size
    x = x - x.mean()
    var = x.var()
    if var == 0:
        return float(n)
    f = np.fft.rfft(x, 2 * n)
    acf = np.fft.irfft(f * np.conj(f))[:n] / (var * n)  # (n,)
    pairs = acf[: (n // 2) * 2].reshape(-1, 2).sum(1)  # Gamma_k = rho_{2k} + rho_{2k+1}
    tau = -1.0
    running = np.inf
    for g in pairs:
        if g <= 0:
            break
        running = min(running, g)  # initial monotone sequence
        tau += 2 * running
    return float(n / max(tau, 1e-12))
