r"""Mamba (Gu & Dao 2023): a selective state-space model, written in torch (no CUDA kernel).

Per block, with ``d_inner = EXPAND * d_model`` channels and ``N = d_state`` states per channel:

.. math::
    (u, z) = h W_\text{in}, \quad u \leftarrow \mathrm{SiLU}(\mathrm{conv}_4(u)), \quad
    \Delta_t = \mathrm{softplus}(u_t W_\Delta + b_\Delta), \quad B_t = u_t W_B, \; C_t = u_t W_C,

.. math::
    s_t = e^{\Delta_t A} \odot s_{t-1} + \Delta_t\, u_t \otimes B_t, \qquad
    y_t = s_t C_t + D \odot u_t, \qquad \text{out}_t = (y_t \odot \mathrm{SiLU}(z_t))\, W_\text{out},

with :math:`A = -e^{A_\log}` diagonal (``d_inner x N``). The recurrence is a first-order linear scan; ``parallel``
runs it as a Hillis-Steele scan (``ceil(log2 L)`` rounds over all positions), ``recurrent`` as a loop over positions.

Initialisation as in the reference implementation for the SSM parts (S4D-real :math:`A_n = n`,
:math:`\Delta` log-uniform in [1e-3, 1e-1], ``D = 1``); dense projections as the transformer's (ours).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .common import CONV_WIDTH, MixerSpec, causal_conv, check_form, dense_init, lin, uniform

__all__ = ["SPEC", "selective_scan", "EXPAND", "DEFAULT_STATE"]

EXPAND = 2
DEFAULT_STATE = 16


def _dims(cfg) -> tuple[int, int, int]:
    d = cfg.width
    return EXPAND * d, (cfg.d_state or DEFAULT_STATE), max(1, math.ceil(d / 16))


def _shapes(cfg):
    di, N, R = _dims(cfg)
    d = cfg.width
    return {
        "mb_in": (d, 2 * di),
        "mb_conv_w": (di, CONV_WIDTH),
        "mb_conv_b": (di,),
        "mb_x": (di, R + 2 * N),
        "mb_dt_w": (R, di),
        "mb_dt_b": (di,),
        "mb_A_log": (di, N),
        "mb_D": (di,),
        "mb_out": (di, d),
    }


def _init(name, shape, cfg, layer, g):
    di, N, R = _dims(cfg)
    if name == "mb_conv_w":
        return uniform(shape, -(CONV_WIDTH**-0.5), CONV_WIDTH**-0.5, g)
    if name == "mb_conv_b":
        return torch.zeros(shape, dtype=torch.float64)
    if name == "mb_dt_w":
        return uniform(shape, -(R**-0.5), R**-0.5, g)
    if name == "mb_dt_b":  # softplus^{-1} of dt ~ log-uniform [1e-3, 1e-1]
        dt = torch.exp(uniform(shape, math.log(1e-3), math.log(1e-1), g))
        return dt + torch.log(-torch.expm1(-dt))
    if name == "mb_A_log":
        return torch.log(torch.arange(1, N + 1, dtype=torch.float64)).expand(shape).clone()
    if name == "mb_D":
        return torch.ones(shape, dtype=torch.float64)
    return dense_init(name, shape, cfg, g, outputs=("mb_out",))


def selective_scan(a: torch.Tensor, b: torch.Tensor, mode: str = "parallel") -> torch.Tensor:
    """States of :math:`s_t = a_t s_{t-1} + b_t` (``s_{-1} = 0``) along axis 2, for ``a, b`` ``(E, B, L, ...)``."""
    check_form(mode, ("parallel", "recurrent"), "mamba")
    L = a.shape[2]
    if mode == "recurrent":  # unbind, not a[:, :, t]: each slice's backward would fill a full-size zero tensor
        s = torch.zeros_like(b[:, :, 0])
        out = []
        for a_t, b_t in zip(a.unbind(2), b.unbind(2)):
            s = a_t * s + b_t
            out.append(s)
        return torch.stack(out, 2)
    off = 1
    while off < L:  # combine (a_t, b_t) with (a_{t-off}, b_{t-off}): s = a_t (a' s + b') + b_t
        b = torch.cat([b[:, :, :off], a[:, :, off:] * b[:, :, :-off] + b[:, :, off:]], 2)
        a = torch.cat([a[:, :, :off], a[:, :, off:] * a[:, :, :-off]], 2)
        off *= 2
    return b


def _forward(p, h, cfg, mode="parallel"):
    check_form(mode, ("parallel", "recurrent"), "mamba")
    di, N, R = _dims(cfg)
    u, z = lin(h, p["mb_in"]).split(di, -1)  # (E, B, L, di) each
    u = F.silu(causal_conv(u, p["mb_conv_w"], p["mb_conv_b"]))
    dt, Bm, Cm = lin(u, p["mb_x"]).split([R, N, N], -1)
    delta = F.softplus(lin(dt, p["mb_dt_w"]) + p["mb_dt_b"][:, None, None, :])  # (E, B, L, di)
    A = -torch.exp(p["mb_A_log"])  # (E, di, N)
    dA = torch.exp(delta[..., None] * A[:, None, None])  # (E, B, L, di, N)
    dBu = (delta * u)[..., None] * Bm[..., None, :]  # (E, B, L, di, N)
    s = selective_scan(dA, dBu, mode)
    y = (s * Cm[..., None, :]).sum(-1) + p["mb_D"][:, None, None, :] * u  # (E, B, L, di)
    return lin(y * F.silu(z), p["mb_out"])


SPEC = MixerSpec(
    name="mamba",
    summary="selective state-space model (Mamba-1), input-dependent decay and read-out",
    shapes=_shapes,
    init=_init,
    forward=_forward,
    forms=("parallel", "recurrent"),
    short_form="recurrent",
)
