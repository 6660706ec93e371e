r"""RWKV-4 (Peng et al. 2023): time mixing by the WKV recurrence, channel mixing by a gated squared-ReLU MLP.

Both sublayers first interpolate each channel between the current and the previous token ("token shift",
:math:`\mathrm{mix}_\mu(x)_t = \mu \odot x_t + (1-\mu) \odot x_{t-1}`). Time mixing, per channel ``c``, with a
decay :math:`w_c = e^{\text{decay}_c} > 0` and a bonus :math:`u_c` for the current token:

.. math::
    \mathrm{wkv}_t = \frac{\sum_{s<t} e^{-(t-1-s)w + k_s} v_s + e^{u + k_t} v_t}
                          {\sum_{s<t} e^{-(t-1-s)w + k_s} + e^{u + k_t}}, \qquad
    \text{out}_t = \big(\sigma(r_t) \odot \mathrm{wkv}_t\big) W_o,

with :math:`k, v, r` linear in the shifted inputs. ``parallel`` computes :math:`\mathrm{wkv}` as a per-channel
softmax over positions (an ``(L, L)`` matrix per channel); ``recurrent`` is the numerically stabilised loop of the
reference CUDA kernel (running numerator, denominator and exponent). Channel mixing replaces the block's GELU MLP:
:math:`\sigma(x_r W_r) \odot (\mathrm{ReLU}(x_k W_k)^2 W_v)`.

Initialisation of the decays, bonuses and shift weights as in RWKV-4 (layer-dependent ramps); dense projections as
the transformer's (ours).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .common import ChannelSpec, MixerSpec, check_form, dense_init, lin, token_shift

__all__ = ["SPEC", "wkv"]


def _ratios(cfg, layer):
    n = cfg.n_layers
    return layer / max(n - 1, 1), 1.0 - layer / n  # ratio_0_to_1, ratio_1_to_almost0


def _shapes(cfg):
    d = cfg.width
    return {
        "rw_mu_k": (d,),
        "rw_mu_v": (d,),
        "rw_mu_r": (d,),
        "rw_decay": (d,),
        "rw_first": (d,),
        "rw_k": (d, d),
        "rw_v": (d, d),
        "rw_r": (d, d),
        "rw_o": (d, d),
    }


def _init(name, shape, cfg, layer, g):
    d = cfg.width
    r01, r10 = _ratios(cfg, layer)
    i = torch.arange(d, dtype=torch.float64)
    if name == "rw_decay":
        return -5 + 8 * (i / max(d - 1, 1)) ** (0.7 + 1.3 * r01)
    if name == "rw_first":
        return math.log(0.3) + 0.5 * (((i + 1) % 3) - 1)
    if name == "rw_mu_k":
        return (i / d) ** r10
    if name == "rw_mu_v":
        return (i / d) ** r10 + 0.3 * r01
    if name == "rw_mu_r":
        return (i / d) ** (0.5 * r10)
    return dense_init(name, shape, cfg, g, outputs=("rw_o",))


def wkv(k: torch.Tensor, v: torch.Tensor, w: torch.Tensor, u: torch.Tensor, mode: str = "parallel") -> torch.Tensor:
    """The WKV average, ``(E, B, L, d)``, for ``k, v`` ``(E, B, L, d)`` and per-channel ``w > 0``, ``u`` ``(E, d)``."""
    check_form(mode, ("parallel", "recurrent"), "rwkv")
    E, B, L, d = k.shape
    w, u = w[:, None, :], u[:, None, :]  # (E, 1, d)
    if mode == "recurrent":
        num = torch.zeros_like(k[:, :, 0])
        den = torch.zeros_like(k[:, :, 0])
        p = torch.full_like(k[:, :, 0], float("-inf"))  # running exponent
        out = []
        for kt, vt in zip(k.unbind(2), v.unbind(2)):
            ww = u + kt
            q = torch.maximum(p, ww)
            e1, e2 = torch.exp(p - q), torch.exp(ww - q)
            out.append((e1 * num + e2 * vt) / (e1 * den + e2))
            ww = p - w
            q = torch.maximum(ww, kt)
            e1, e2 = torch.exp(ww - q), torch.exp(kt - q)
            num, den, p = e1 * num + e2 * vt, e1 * den + e2, q
        return torch.stack(out, 2)
    t = torch.arange(L, device=k.device, dtype=k.dtype)
    lag = t[:, None] - 1 - t[None, :]  # (L, L): t-1-s
    kc = k.permute(0, 1, 3, 2)  # (E, B, d, L)
    logits = -lag * w[..., None, None] + kc[..., None, :]  # (E, B, d, L, L)
    diag = torch.eye(L, dtype=torch.bool, device=k.device)
    logits = torch.where(diag, (u[..., None] + kc)[..., :, None], logits)
    logits = logits.masked_fill(torch.ones(L, L, dtype=torch.bool, device=k.device).triu(1), float("-inf"))
    out = torch.softmax(logits, -1) @ v.permute(0, 1, 3, 2)[..., None]  # (E, B, d, L, 1)
    return out[..., 0].permute(0, 1, 3, 2)


def _mix(x, prev, mu):
    return x * mu[:, None, None, :] + prev * (1 - mu[:, None, None, :])


def _forward(p, h, cfg, mode="parallel"):
    prev = token_shift(h)
    k = lin(_mix(h, prev, p["rw_mu_k"]), p["rw_k"])
    v = lin(_mix(h, prev, p["rw_mu_v"]), p["rw_v"])
    r = torch.sigmoid(lin(_mix(h, prev, p["rw_mu_r"]), p["rw_r"]))
    return lin(r * wkv(k, v, p["rw_decay"].exp(), p["rw_first"], mode), p["rw_o"])


def _channel_shapes(cfg):
    d, m = cfg.width, cfg.hidden
    return {"cm_mu_k": (d,), "cm_mu_r": (d,), "cm_k": (d, m), "cm_v": (m, d), "cm_r": (d, d)}


def _channel_init(name, shape, cfg, layer, g):
    _, r10 = _ratios(cfg, layer)
    if name in ("cm_mu_k", "cm_mu_r"):
        return (torch.arange(cfg.width, dtype=torch.float64) / cfg.width) ** r10
    return dense_init(name, shape, cfg, g, outputs=("cm_v",))


def _channel_forward(p, h, cfg):
    prev = token_shift(h)
    k = F.relu(lin(_mix(h, prev, p["cm_mu_k"]), p["cm_k"])).square()
    return torch.sigmoid(lin(_mix(h, prev, p["cm_mu_r"]), p["cm_r"])) * lin(k, p["cm_v"])


SPEC = MixerSpec(
    name="rwkv",
    summary="RWKV-4: per-channel decaying WKV average, token shift; its own channel mix",
    shapes=_shapes,
    init=_init,
    forward=_forward,
    forms=("parallel", "recurrent"),
    short_form="recurrent",
    channel=ChannelSpec(shapes=_channel_shapes, init=_channel_init, forward=_channel_forward),
)
