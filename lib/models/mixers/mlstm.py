r"""An xLSTM-style mLSTM (Beck et al. 2024): a matrix memory with exponential input and sigmoid forget gates.

Per head, with query, key (scaled by :math:`1/\sqrt{d_\text{head}}`) and value, scalar gates
:math:`\tilde\imath_t, \tilde f_t` and an output gate :math:`o_t = \sigma(x_t W_o)`:

.. math::
    C_t = f_t C_{t-1} + i_t v_t k_t^\top, \quad n_t = f_t n_{t-1} + i_t k_t, \quad
    \tilde h_t = \frac{C_t q_t}{\max(|n_t^\top q_t|, 1)}, \quad h_t = o_t \odot \mathrm{norm}(\tilde h_t),

with :math:`i_t = e^{\tilde\imath_t}` and :math:`f_t = \sigma(\tilde f_t)`, kept finite by the stabiliser
:math:`m_t = \max(\log f_t + m_{t-1}, \tilde\imath_t)` (the max is then :math:`\max(|\cdot|, e^{-m_t})`).
``recurrent`` runs this loop; ``parallel`` is the paper's equivalent form
:math:`\tilde h = \big((QK^\top) \circ D / n\big) V` with :math:`D_{ts} = \exp(\sum_{r=s+1}^t \log f_r +
\tilde\imath_s - m_t)` for :math:`s \le t`. Both give the same outputs (the stabiliser cancels).

Ours: q and k are read from a short causal convolution (+SiLU) of the input, v from the input, as in the xLSTM
mLSTM block; the block's up-projection is left out (the GELU MLP that follows every mixer plays its part).
"""

from __future__ import annotations

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
    normal,
    split_heads,
    uniform,
)

__all__ = ["SPEC", "mlstm_cell"]


def _shapes(cfg):
    d, H, a = cfg.width, cfg.n_heads, cfg.n_heads * cfg.d_head
    return {
        "ml_conv_w": (d, CONV_WIDTH),
        "ml_conv_b": (d,),
        "ml_qk": (d, 2 * a),
        "ml_v": (d, a),
        "ml_if": (d, 2 * H),
        "ml_i_b": (H,),
        "ml_f_b": (H,),
        "ml_og": (d, a),
        "ml_norm": (cfg.d_head,),
        "ml_out": (a, d),
    }


def _init(name, shape, cfg, layer, g):
    if name == "ml_conv_w":
        return uniform(shape, -(CONV_WIDTH**-0.5), CONV_WIDTH**-0.5, g)
    if name == "ml_conv_b":
        return torch.zeros(shape, dtype=torch.float64)
    if name == "ml_i_b":  # as in xLSTM: input-gate bias N(0, 0.1^2), forget-gate bias linspace(3, 6)
        return normal(shape, 0.1, g)
    if name == "ml_f_b":
        return torch.linspace(3.0, 6.0, shape[0], dtype=torch.float64)
    if name == "ml_norm":
        return torch.ones(shape, dtype=torch.float64)
    return dense_init(name, shape, cfg, g, outputs=("ml_out",))


def mlstm_cell(q, k, v, i_pre, f_pre, mode: str = "parallel") -> torch.Tensor:
    """Normalised mLSTM outputs :math:`\\tilde h`, ``(E, B, H, L, dv)``.

    ``q, k`` ``(E, B, H, L, dk)`` (``k`` already scaled), ``v`` ``(E, B, H, L, dv)``, gate pre-activations
    ``i_pre, f_pre`` ``(E, B, H, L)``; the memory starts empty.
    """
    check_form(mode, ("parallel", "recurrent"), "mlstm")
    L = q.shape[-2]
    log_f = F.logsigmoid(f_pre)
    if mode == "recurrent":
        C = q.new_zeros(*q.shape[:3], v.shape[-1], k.shape[-1])  # (E, B, H, dv, dk)
        n = q.new_zeros(*k.shape[:3], k.shape[-1])  # (E, B, H, dk)
        m = q.new_full(q.shape[:3], float("-inf"))  # (E, B, H)
        out = []
        for qt, kt, vt, lf, ip in zip(q.unbind(-2), k.unbind(-2), v.unbind(-2), log_f.unbind(-1), i_pre.unbind(-1)):
            m_new = torch.maximum(lf + m, ip)
            f_s, i_s = torch.exp(lf + m - m_new), torch.exp(ip - m_new)  # (E, B, H)
            C = f_s[..., None, None] * C + i_s[..., None, None] * vt[..., :, None] * kt[..., None, :]
            n = f_s[..., None] * n + i_s[..., None] * kt
            den = torch.maximum((n * qt).sum(-1).abs(), torch.exp(-m_new))  # (E, B, H)
            out.append((C @ qt[..., None])[..., 0] / den[..., None])
            m = m_new
        return torch.stack(out, -2)
    F_cum = log_f.cumsum(-1)  # (E, B, H, L)
    causal = torch.ones(L, L, dtype=torch.bool, device=q.device).tril()
    log_d = (F_cum[..., :, None] - F_cum[..., None, :] + i_pre[..., None, :]).masked_fill(~causal, float("-inf"))
    m = log_d.amax(-1, keepdim=True)  # (E, B, H, L, 1)
    scores = (q @ k.transpose(-1, -2)) * torch.exp(log_d - m)  # (E, B, H, L, L)
    den = torch.maximum(scores.sum(-1, keepdim=True).abs(), torch.exp(-m))
    return (scores / den) @ v


def _forward(p, h, cfg, mode="parallel"):
    H, a = cfg.n_heads, cfg.n_heads * cfg.d_head
    c = F.silu(causal_conv(h, p["ml_conv_w"], p["ml_conv_b"]))  # (E, B, L, d)
    q, k = (split_heads(t, H) for t in lin(c, p["ml_qk"]).split(a, -1))  # (E, B, H, L, dh)
    v = split_heads(lin(h, p["ml_v"]), H)
    gates = lin(h, p["ml_if"]).transpose(2, 3)  # (E, B, 2H, L)
    i_pre = gates[:, :, :H] + p["ml_i_b"][:, None, :, None]
    f_pre = gates[:, :, H:] + p["ml_f_b"][:, None, :, None]
    hid = head_norm(mlstm_cell(q, k * cfg.d_head**-0.5, v, i_pre, f_pre, mode), p["ml_norm"])
    return lin(torch.sigmoid(lin(h, p["ml_og"])) * merge_heads(hid), p["ml_out"])


SPEC = MixerSpec(
    name="mlstm",
    summary="xLSTM-style mLSTM: matrix memory, exponential input gate, sigmoid forget gate",
    shapes=_shapes,
    init=_init,
    forward=_forward,
    forms=("parallel", "recurrent"),
)
