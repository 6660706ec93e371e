r"""Causal MLP-Mixer: a token-mixing MLP over positions, made causal by lower-triangular masks.

Paper B's MLP-Mixer is "a static learned matrix that mixes information across sequence positions" (as quoted by an
independent reproduction); the paper publishes no configuration. Ours (after ``reference/paperB.md`` §7, where it
worked on a CPU) is the token-mixing MLP of the original MLP-Mixer, shared by all channels, with both weight
matrices masked so that output ``q`` depends on positions ``<= q`` only. With :math:`X = \mathrm{LN}(x)` viewed per
channel as a vector over positions and ``X_e = EXPANSION`` hidden units per position,

.. math::
    Z_{(j,m)} = \mathrm{GELU}\Big(\sum_{i \le j} W^{(1)}_{(j,m),i} X_i + b^{(1)}_{(j,m)}\Big), \qquad
    Y_q = \sum_{j \le q,\,m} W^{(2)}_{q,(j,m)} Z_{(j,m)} + b^{(2)}_q .

Hidden unit ``(j, m)`` sees positions ``<= j`` and output ``q`` reads hidden units with ``j <= q``. The weights are
learned position-mixing matrices of size ``(X_e n_ctx, n_ctx)`` and ``(n_ctx, X_e n_ctx)`` per block, initialised
:math:`\mathcal N(0, 1/\text{fan-in})` over the unmasked entries. A shorter input uses their top-left corner.

``mlp_mixer_unmasked`` is the same without the masks: a control that reads the next token (the answer) from the
input, which is why the mask is needed for next-token prediction.
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

from .common import MixerSpec, check_form, normal

__all__ = ["SPEC", "UNMASKED", "EXPANSION", "mixer_masks"]

#: Hidden units per position of the token-mixing MLP (the original Mixer's expansion, ours here).
EXPANSION = 4


def _shapes(cfg) -> dict[str, tuple[int, ...]]:
    n, X = cfg.n_ctx, EXPANSION
    return {"tm_w1": (X * n, n), "tm_b1": (X * n,), "tm_w2": (n, X * n), "tm_b2": (n,)}


@functools.lru_cache(maxsize=32)
def mixer_masks(n: int, X: int = EXPANSION) -> tuple[torch.Tensor, torch.Tensor]:
    """The 0/1 masks ``(X n, n)`` and ``(n, X n)``: hidden unit ``u`` sits at position ``u // X``."""
    pos = torch.arange(X * n) // X  # position of each hidden unit
    m1 = (torch.arange(n)[None, :] <= pos[:, None]).double()  # (Xn, n): input i <= j
    m2 = (pos[None, :] <= torch.arange(n)[:, None]).double()  # (n, Xn): j <= output q
    return m1, m2


def _init(name, shape, cfg, layer, g, causal=True):
    if name in ("tm_b1", "tm_b2"):
        return torch.zeros(shape, dtype=torch.float64)
    m1, m2 = mixer_masks(cfg.n_ctx)
    mask = m1 if name == "tm_w1" else m2
    if not causal:
        mask = torch.ones_like(mask)
    fan_in = mask.sum(1, keepdim=True)  # unmasked inputs of each row
    return normal(shape, 1.0, g) / fan_in.sqrt() * mask


def _forward(p, h, cfg, mode="parallel", causal=True):
    check_form(mode, ("parallel",), "mlp_mixer")
    E, B, L, d = h.shape
    X = EXPANSION
    w1, w2 = p["tm_w1"][:, : X * L, :L], p["tm_w2"][:, :L, : X * L]
    if causal:
        m1, m2 = (m.to(h.dtype).to(h.device) for m in mixer_masks(cfg.n_ctx))
        w1 = w1 * m1[: X * L, :L]
        w2 = w2 * m2[:L, : X * L]
    x = h.permute(0, 2, 1, 3).reshape(E, L, B * d)  # (E, L, B*d): one column per (sequence, channel)
    z = F.gelu(torch.baddbmm(p["tm_b1"][:, : X * L, None], w1, x))  # (E, X*L, B*d)
    y = torch.baddbmm(p["tm_b2"][:, :L, None], w2, z)  # (E, L, B*d)
    return y.view(E, L, B, d).permute(0, 2, 1, 3)  # (E, B, L, d)


SPEC = MixerSpec(
    name="mlp_mixer",
    summary="token-mixing MLP over positions, lower-triangular masks",
    shapes=_shapes,
    init=_init,
    forward=_forward,
)

UNMASKED = MixerSpec(
    name="mlp_mixer_unmasked",
    summary="the same MLP without masks (a control that sees the future)",
    shapes=_shapes,
    init=functools.partial(_init, causal=False),
    forward=functools.partial(_forward, causal=False),
    causal=False,
)
