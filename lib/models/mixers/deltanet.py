r"""Gated DeltaNet (Yang, Kautz & Hatamizadeh 2024): the gated delta rule, in torch (no Triton kernel).

Per head, with L2-normalised query and key, a decay :math:`\alpha_t \in (0, 1)` and a write strength
:math:`\beta_t \in (0, 1)` computed from the input, the state :math:`S_t \in \mathbb R^{d_v \times d_k}` follows

.. math::
    S_t = \alpha_t S_{t-1}\big(I - \beta_t k_t k_t^\top\big) + \beta_t v_t k_t^\top, \qquad o_t = S_t q_t,

:math:`\alpha_t = \exp(-e^{A_\log}\,\mathrm{softplus}(x_t w_\alpha + b_\alpha))`, :math:`\beta_t =
\sigma(x_t w_\beta)`. q, k, v pass through a short causal convolution and SiLU; the output is RMS-normalised per head
and gated by :math:`\mathrm{SiLU}(x_t W_g)` (as in the paper's block).

Forms. ``recurrent`` loops over positions. ``parallel`` solves the whole sequence as one chunk: writing
:math:`S_t = \sum_{s \le t} \Gamma_{ts} u_s k_s^\top` with :math:`\Gamma_{ts} = \prod_{r=s+1}^t \alpha_r`, the
pseudo-values satisfy the unit lower-triangular system
:math:`(I + \mathrm{tril}(\mathrm{diag}(\beta)(\Gamma \circ K K^\top), -1))\,U = \mathrm{diag}(\beta) V`, and
:math:`O = \mathrm{tril}(\Gamma \circ Q K^\top)\, U`.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .common import (
    CONV_WIDTH,
    MixerSpec,
    causal_conv,
    check_form,
    dense_init,
    head_norm,
    lin,
    merge_heads,
    split_heads,
    uniform,
)

__all__ = ["SPEC", "delta_rule"]


def _shapes(cfg):
    d, H, a = cfg.width, cfg.n_heads, cfg.n_heads * cfg.d_head
    return {
        "dn_qkv": (d, 3 * a),
        "dn_conv_w": (3 * a, CONV_WIDTH),
        "dn_ab": (d, 2 * H),
        "dn_A_log": (H,),
        "dn_dt_b": (H,),
        "dn_gate": (d, a),
        "dn_norm": (cfg.d_head,),
        "dn_out": (a, d),
    }


def _init(name, shape, cfg, layer, g):
    if name == "dn_conv_w":
        return uniform(shape, -(CONV_WIDTH**-0.5), CONV_WIDTH**-0.5, g)
    if name == "dn_A_log":  # A ~ U[1, 16], as in the reference implementation
        return torch.log(uniform(shape, 1.0, 16.0, g))
    if name == "dn_dt_b":
        dt = torch.exp(uniform(shape, math.log(1e-3), math.log(1e-1), g))
        return dt + torch.log(-torch.expm1(-dt))
    if name == "dn_norm":
        return torch.ones(shape, dtype=torch.float64)
    return dense_init(name, shape, cfg, g, outputs=("dn_out",))


def delta_rule(q, k, v, log_alpha, beta, mode: str = "parallel") -> torch.Tensor:
    """Outputs of the gated delta rule, ``(E, B, H, L, dv)``.

    ``q, k`` ``(E, B, H, L, dk)`` (normalised by the caller), ``v`` ``(E, B, H, L, dv)``, ``log_alpha, beta``
    ``(E, B, H, L)``; the state starts at zero.
    """
    check_form(mode, ("parallel", "recurrent"), "deltanet")
    L = q.shape[-2]
    if mode == "recurrent":
        S = q.new_zeros(*q.shape[:3], v.shape[-1], k.shape[-1])  # (E, B, H, dv, dk)
        out = []
        steps = zip(q.unbind(-2), k.unbind(-2), v.unbind(-2), log_alpha.exp().unbind(-1), beta.unbind(-1))
        for qt, kt, vt, at, bt in steps:
            S = S * at[..., None, None]
            S = S + bt[..., None, None] * (vt - (S @ kt[..., None])[..., 0])[..., None] * kt[..., None, :]
            out.append((S @ qt[..., None])[..., 0])
        return torch.stack(out, -2)
    cs = log_alpha.cumsum(-1)  # (E, B, H, L)
    causal = torch.ones(L, L, dtype=torch.bool, device=q.device).tril()
    diff = (cs[..., :, None] - cs[..., None, :]).masked_fill(~causal, float("-inf"))
    gamma = diff.exp()  # (E, B, H, L, L): prod_{r=s+1..t} alpha_r on and below the diagonal, 0 above
    kk = (gamma * (k @ k.transpose(-1, -2))).tril(-1) * beta[..., :, None]
    eye = torch.eye(L, dtype=q.dtype, device=q.device)
    U = torch.linalg.solve_triangular(eye + kk, beta[..., None] * v, upper=False, unitriangular=True)
    return (gamma * (q @ k.transpose(-1, -2))) @ U


def _forward(p, h, cfg, mode="parallel"):
    H, a = cfg.n_heads, cfg.n_heads * cfg.d_head
    qkv = F.silu(causal_conv(lin(h, p["dn_qkv"]), p["dn_conv_w"]))  # (E, B, L, 3a)
    q, k, v = (split_heads(t, H) for t in qkv.split(a, -1))  # (E, B, H, L, dh)
    q = F.normalize(q, dim=-1) * cfg.d_head**-0.5
    k = F.normalize(k, dim=-1)
    ab = lin(h, p["dn_ab"]).transpose(2, 3)  # (E, B, 2H, L)
    log_alpha = -p["dn_A_log"].exp()[:, None, :, None] * F.softplus(ab[:, :, :H] + p["dn_dt_b"][:, None, :, None])
    beta = torch.sigmoid(ab[:, :, H:])
    o = head_norm(delta_rule(q, k, v, log_alpha, beta, mode), p["dn_norm"])  # (E, B, H, L, dh)
    return lin(merge_heads(o) * F.silu(lin(h, p["dn_gate"])), p["dn_out"])


SPEC = MixerSpec(
    name="deltanet",
    summary="Gated DeltaNet: gated delta-rule fast weights, L2-normalised q and k",
    shapes=_shapes,
    init=_init,
    forward=_forward,
    forms=("parallel", "recurrent"),
)
