r"""The training forward of the attention GPT: :func:`lib.models.gpt_forward`'s maths without hook points, with the
matrix products in float32 or in bfloat16.

Training needs the logits only; analysis needs the hook points. This module is the first: the same model as
:func:`lib.models.gpt.gpt_forward` (same parameters, same operations in the same order), with one switch, the
precision of the matrix products:

- ``"fp32"``: every operation in float32: the logits and gradients of :func:`~lib.models.gpt.gpt_forward` to
  float32 rounding (tested; the products are grouped differently, so equality is not bitwise in general), so a
  run trained with it follows the reference run.
- ``"bf16"`` (mixed precision): the matrix products of every block take bfloat16 inputs (8 significant bits) and
  accumulate in float32 inside the kernel: the four weight products (QKV, output projection, the MLP's two), the
  attention scores :math:`qk^\top` (rounded to bfloat16 on output) and the mixing :math:`a v`. The residual
  stream, the LayerNorms, the softmax and so the attention weights :math:`a_{qk}` (explicit, float32), the
  unembedding and the loss stay float32. The parameters stay float32 (the optimiser's master copy); each step
  casts the four weight matrices of a block once. On a CPU with bfloat16 dot products (AVX-512 BF16, AMX) a
  bfloat16 product runs about twice as fast as a float32 one (``benchmarks/trainer_paper_scale.py`` prints both
  rates); without them it is slower, so ``"bf16"`` is a choice, never a default.

Only the attention mixer: the other token mixers train through :func:`~lib.models.gpt.gpt_forward`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import torch
import torch.nn.functional as F

from ..core.validate import check_choice
from .gpt import GPTConfig, _additive_bias, _layer_norm, softmax

__all__ = ["PRECISIONS", "train_logits"]

#: Precisions of the matrix products (:func:`train_logits`).
PRECISIONS = ("fp32", "bf16")
_DTYPE = {"fp32": torch.float32, "bf16": torch.bfloat16}


class _SplitHeads(torch.autograd.Function):
    """``(E, B, L, 3, H, dh)`` -> contiguous ``q, k, v`` ``(E, B, H, L, dh)``, each in one pass; the backward writes the three gradients straight into the layout of the input (one pass each),
    where autograd's unbind-and-permute would stack them and copy the stack again."""

    @staticmethod
    def forward(ctx, qkv):
        ctx.dtype = qkv.dtype
        return tuple(_dense(qkv[:, :, :, i].transpose(2, 3), qkv.dtype) for i in range(3))

    @staticmethod
    def backward(ctx, *grads):
        E, B, H, L, dh = next(g for g in grads if g is not None).shape
        out = torch.empty(E, B, L, 3, H, dh, dtype=ctx.dtype, device=grads[0].device if grads[0] is not None else None)
        for i, g in enumerate(grads):
            if g is None:
                out[:, :, :, i].zero_()
            else:
                out[:, :, :, i].copy_(g.transpose(2, 3))
        return out


def _dense(t: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``t`` as a contiguous tensor of ``dtype``, in one copy (a cast and a transposition together)."""
    return t.to(dtype, memory_format=torch.contiguous_format).contiguous()  # .to keeps a same-dtype view as it is


def train_logits(
    params: Mapping[str, torch.Tensor],
    tokens: torch.Tensor,
    cfg: GPTConfig,
    *,
    bias: torch.Tensor | None = None,
    precision: str = "fp32",
) -> torch.Tensor:
    """Logits ``(E, B, L, vocab)`` (float32) of ``E`` stacked attention GPTs for tokens ``(E, B, L)``.

    Parameters and ``bias`` as in :func:`lib.models.gpt.gpt_forward` (a prebuilt :func:`~lib.models.gpt.causal_bias`
    term passes through); ``precision`` one of :data:`PRECISIONS`.
    """
    check_choice("precision", precision, PRECISIONS)
    if cfg.mixer != "attention":
        raise ValueError(f"train_logits runs the attention mixer only, got mixer={cfg.mixer!r} (use gpt_forward)")
    E = params["tok"].shape[0]
    if tokens.dim() != 3 or tokens.shape[0] != E:
        raise ValueError(f"tokens must be (E, B, L) with E={E}, got {tuple(tokens.shape)}")
    _, B, L = tokens.shape
    if L > cfg.n_ctx:
        raise ValueError(f"tokens has length {L} > n_ctx={cfg.n_ctx}")
    d, H, dh = cfg.width, cfg.n_heads, cfg.d_head
    low = _DTYPE[precision]
    additive = _additive_bias(bias, L, params["tok"].dtype, tokens.device)  # (L, L) or (E, 1, 1, L, L), float32

    def mm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:  # (E, N, i) @ (E, i, o)
        x, w = x.to(low), w.to(low)
        return torch.bmm(x, w) if b is None else torch.baddbmm(b[:, None, :].to(low), x, w)

    x = torch.gather(params["tok"], 1, tokens.reshape(E, B * L, 1).expand(E, B * L, d))  # (E, B*L, d)
    x = (x.view(E, B, L, d) + params["pos"][:, :L][:, None]).reshape(E, B * L, d)
    for layer in range(cfg.n_layers):
        p = {
            k: params[f"b{layer}_{k}"]
            for k in ("ln1_g", "ln1_b", "w_qkv", "w_o", "ln2_g", "ln2_b", "w_in", "b_in", "w_out", "b_out")
        }
        h = _layer_norm(x, p["ln1_g"], p["ln1_b"])  # (E, B*L, d)
        qkv = mm(h, p["w_qkv"]).view(E, B, L, 3, H, dh)  # (E, B, L, 3, H, dh)
        q, k, v = _SplitHeads.apply(qkv)  # 3 x (E, B, H, L, dh), contiguous
        scores = torch.add(
            additive, torch.matmul(q, k.transpose(-1, -2)), alpha=1.0 / math.sqrt(dh)
        )  # (E, B, H, L, L), float32
        pattern = softmax(scores)  # the attention weights, float32
        z = torch.matmul(pattern.to(low), v).transpose(2, 3)  # (E, B, L, H, dh), a view
        z = _dense(z, low).view(E, B * L, H * dh)
        x = x + mm(z, p["w_o"])  # float32 residual
        h = _layer_norm(x, p["ln2_g"], p["ln2_b"])
        x = x + mm(F.gelu(mm(h, p["w_in"], p["b_in"])), p["w_out"], p["b_out"])
    h = _layer_norm(x, params["lnf_g"], params["lnf_b"])
    logits = torch.baddbmm(params["b_u"][:, None, :], h, params["w_u"])  # (E, B*L, V), float32
    return logits.view(E, B, L, cfg.vocab)
