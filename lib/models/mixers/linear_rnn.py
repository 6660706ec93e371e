r"""A linear recurrent unit (after Orvieto et al. 2023, LRU): a diagonal complex linear recurrence.

With ``N = d_state`` complex modes :math:`\lambda_n = \exp(-e^{\nu_n} + i\,e^{\theta_n})` (:math:`|\lambda_n| < 1`):

.. math::
    s_t = \lambda \odot s_{t-1} + \gamma \odot (x_t B), \qquad y_t = \mathrm{Re}(s_t C) + D \odot x_t,

with :math:`\gamma_n = \sqrt{1 - |\lambda_n|^2}` (the LRU's normalisation, here fixed by :math:`\lambda`).
The recurrence does not depend on the input, so ``parallel`` computes it as a causal convolution with the kernel
:math:`\lambda^{t-s}` (an ``(N, L, L)`` matrix); ``recurrent`` loops. Complex numbers are carried as real and
imaginary parts.

Initialisation as in the LRU paper, with radii in [0.5, 0.99] and phases in [0, π] (ours: the sequences here are
short, at most a few hundred tokens), :math:`B, C` complex Gaussian with variances :math:`1/(2d)` and :math:`1/N`,
:math:`D \sim \mathcal N(0, 1)`.
"""

from __future__ import annotations

import math

import torch

from .common import MixerSpec, check_form, lin, normal, uniform

__all__ = ["SPEC", "R_MIN", "R_MAX", "MAX_PHASE", "lru_states"]

R_MIN, R_MAX, MAX_PHASE = 0.5, 0.99, math.pi


def _n(cfg) -> int:
    return cfg.d_state or cfg.width


def _shapes(cfg):
    d, N = cfg.width, _n(cfg)
    return {
        "lr_nu": (N,),
        "lr_theta": (N,),
        "lr_B_re": (d, N),
        "lr_B_im": (d, N),
        "lr_C_re": (N, d),
        "lr_C_im": (N, d),
        "lr_D": (d,),
    }


def _init(name, shape, cfg, layer, g):
    d, N = cfg.width, _n(cfg)
    if name == "lr_nu":  # |lambda|^2 uniform in [R_MIN^2, R_MAX^2]
        r2 = uniform(shape, R_MIN**2, R_MAX**2, g)
        return torch.log(-0.5 * torch.log(r2))
    if name == "lr_theta":
        return torch.log(uniform(shape, 1e-3, MAX_PHASE, g))
    if name in ("lr_B_re", "lr_B_im"):
        return normal(shape, (2 * d) ** -0.5, g)
    if name in ("lr_C_re", "lr_C_im"):
        return normal(shape, N**-0.5, g)
    return normal(shape, 1.0, g)  # lr_D


def lru_states(u_re, u_im, nu, theta, mode: str = "parallel"):
    """States ``(E, B, L, N)`` (real, imaginary) of :math:`s_t = \\lambda s_{t-1} + u_t` for ``u`` ``(E, B, L, N)``."""
    check_form(mode, ("parallel", "recurrent"), "linear_rnn")
    L = u_re.shape[2]
    rho, phi = torch.exp(-nu.exp()), theta.exp()  # (E, N): modulus and phase of lambda
    if mode == "recurrent":
        a, b = rho * torch.cos(phi), rho * torch.sin(phi)  # (E, N)
        s_re, s_im = torch.zeros_like(u_re[:, :, 0]), torch.zeros_like(u_im[:, :, 0])
        out_re, out_im = [], []
        for ur_t, ui_t in zip(u_re.unbind(2), u_im.unbind(2)):
            s_re, s_im = a[:, None] * s_re - b[:, None] * s_im + ur_t, b[:, None] * s_re + a[:, None] * s_im + ui_t
            out_re.append(s_re)
            out_im.append(s_im)
        return torch.stack(out_re, 2), torch.stack(out_im, 2)
    t = torch.arange(L, device=u_re.device, dtype=u_re.dtype)
    lag = (t[:, None] - t[None, :]).clamp_min(0)  # (L, L)
    causal = (t[:, None] >= t[None, :]).to(u_re.dtype)
    mod = torch.exp(-nu.exp()[:, :, None, None] * lag) * causal  # (E, N, L, L): |lambda|^(t-s)
    ang = phi[:, :, None, None] * lag
    k_re, k_im = mod * torch.cos(ang), mod * torch.sin(ang)
    ur, ui = u_re.permute(0, 3, 2, 1), u_im.permute(0, 3, 2, 1)  # (E, N, L, B)
    s_re = k_re @ ur - k_im @ ui  # (E, N, L, B)
    s_im = k_re @ ui + k_im @ ur
    return s_re.permute(0, 3, 2, 1), s_im.permute(0, 3, 2, 1)


def _forward(p, h, cfg, mode="parallel"):
    gamma = torch.sqrt(1 - torch.exp(-2 * p["lr_nu"].exp()))[:, None, None, :]  # (E, 1, 1, N)
    s_re, s_im = lru_states(lin(h, p["lr_B_re"]) * gamma, lin(h, p["lr_B_im"]) * gamma, p["lr_nu"], p["lr_theta"], mode)
    return lin(s_re, p["lr_C_re"]) - lin(s_im, p["lr_C_im"]) + p["lr_D"][:, None, None, :] * h


SPEC = MixerSpec(
    name="linear_rnn",
    summary="diagonal complex linear recurrence (LRU), input-independent decay",
    shapes=_shapes,
    init=_init,
    forward=_forward,
    forms=("parallel", "recurrent"),
)
