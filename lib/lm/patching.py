"""Attention-pattern patching in Hugging Face GPT-NeoX models, through transformers' ``AttentionInterface``.

``register_patchable()`` adds an attention implementation named ``"patchable"`` (load a model with
``attn_implementation="patchable"``, or call :func:`make_patchable`). It computes eager attention, applies the causal
mask itself (transformers passes no mask to custom implementations unless a mask function is registered too, which we
do), and passes the post-softmax weights ``(batch, head, query, key)`` through a per-module state that can *record*
them and *replace* some heads' patterns. Nothing else in the model changes: values, output projection, MLPs and
unembedding stay the model's own, as in paper B's patching.

Batching: :func:`patched_last_logits` runs ``G`` patch groups at once. The prompts ``(N, T)`` are repeated ``G``
times, and in layer ``l`` group ``g`` takes the donor pattern for every head ``h`` with ``masks[g, l, h]``; so all
``L·H`` single-head patches of a model are one forward of batch ``L·H·N`` (``benchmarks/patching.py``).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
import torch

__all__ = [
    "IMPLEMENTATION",
    "register_patchable",
    "make_patchable",
    "attention_modules",
    "patch_state",
    "record_patterns",
    "patched_last_logits",
    "all_single_head_logits",
    "single_head_masks",
    "topk_masks",
    "PatchResult",
    "patch_heads",
    "target_probs",
]

IMPLEMENTATION = "patchable"


class _State:
    """What the patchable attention does in one module during a forward: record and/or replace patterns."""

    def __init__(
        self, record: dict | None, masks: torch.Tensor | None, patterns: torch.Tensor | None, values: dict | None = None
    ):
        self.record = record  # layer -> (B, H, Q, K)
        self.values = values  # layer -> (B, H, K, d_head)
        self.masks = masks  # (G, L, H) bool
        self.patterns = patterns  # (L, N, H, Q, K)

    def apply(self, layer: int, w: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        if self.record is not None:
            self.record[layer] = w.detach().clone()
        if self.values is not None:
            self.values[layer] = value.detach()
        if self.masks is None:
            return w
        B, H, Q, K = w.shape
        G = self.masks.shape[0]
        if B % G:
            raise RuntimeError(f"batch {B} is not a multiple of the {G} patch groups")
        N = B // G
        donor = self.patterns[layer]  # (N, H, Q, K)
        if donor.shape != (N, H, Q, K):
            raise ValueError(
                f"donor patterns of layer {layer} have shape {tuple(donor.shape)}, the model's are {(N, H, Q, K)}"
            )
        m = self.masks[:, layer].to(w.device)[:, None, :, None, None]  # (G, 1, H, 1, 1)
        return torch.where(m, donor.to(w.dtype)[None], w.view(G, N, H, Q, K)).view(B, H, Q, K)


def _patchable_attention(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    """Eager attention with an explicit causal mask and a record/replace point on the softmax output."""
    w = torch.matmul(query, key.transpose(2, 3)) * scaling  # (B, H, Q, K)
    Q, K = w.shape[-2:]
    future = torch.ones(Q, K, dtype=torch.bool, device=w.device).triu(K - Q + 1)
    w = w.masked_fill(future, float("-inf"))
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:
            w = w.masked_fill(~attention_mask[..., :K], float("-inf"))
        else:
            w = w + attention_mask[..., :K]
    w = torch.softmax(w, dim=-1, dtype=torch.float32).to(query.dtype)
    state = getattr(module, "_attnbook_state", None)
    if state is not None:
        w = state.apply(module.layer_idx, w, value)
    if dropout and module.training:
        w = torch.nn.functional.dropout(w, p=dropout)
    out = torch.matmul(w, value).transpose(1, 2).contiguous()  # (B, Q, H, d)
    return out, w


def register_patchable() -> str:
    """Register the ``"patchable"`` attention (and its mask: eager's) with transformers; idempotent."""
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, eager_mask

    AttentionInterface.register(IMPLEMENTATION, _patchable_attention)
    ALL_MASK_ATTENTION_FUNCTIONS.register(IMPLEMENTATION, eager_mask)
    return IMPLEMENTATION


def make_patchable(model):
    """Switch a loaded model to the patchable attention (in place) and return it."""
    register_patchable()
    if model.config._attn_implementation != IMPLEMENTATION:
        model.set_attn_implementation(IMPLEMENTATION)
    return model


def attention_modules(model) -> list:
    """The model's attention modules in layer order (modules with a ``layer_idx`` and a ``query_key_value``)."""
    mods = [m for m in model.modules() if hasattr(m, "layer_idx") and hasattr(m, "query_key_value")]
    if not mods:
        raise ValueError(f"{type(model).__name__} has no GPT-NeoX attention modules")
    return sorted(mods, key=lambda m: m.layer_idx)


@contextmanager
def patch_state(
    model, *, record: dict | None = None, masks=None, patterns=None, values: dict | None = None
) -> Iterator[None]:
    """Attach record/replace state to every attention module for the forwards inside the block."""
    if model.config._attn_implementation != IMPLEMENTATION:
        raise ValueError(
            f"the model uses attention {model.config._attn_implementation!r}; load it with "
            f"attn_implementation='{IMPLEMENTATION}' or call make_patchable(model)"
        )
    mods = attention_modules(model)
    state = _State(record, masks, patterns, values)
    for m in mods:
        m._attnbook_state = state
    try:
        yield
    finally:
        for m in mods:
            m._attnbook_state = None


def _check_ids(input_ids) -> torch.Tensor:
    ids = torch.as_tensor(input_ids)
    if ids.ndim != 2 or ids.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"input_ids must be an integer array (N, T), got {tuple(ids.shape)} {ids.dtype}")
    return ids.long()


@torch.no_grad()
def record_patterns(model, input_ids) -> tuple[torch.Tensor, torch.Tensor]:
    """Run ``model`` on ``input_ids (N, T)``; return last-position logits ``(N, V)`` and patterns ``(L, N, H, T, T)``."""
    ids = _check_ids(input_ids)
    rec: dict[int, torch.Tensor] = {}
    with patch_state(model, record=rec):
        logits = model(input_ids=ids).logits[:, -1].float()  # (N, V)
    return logits, torch.stack([rec[i] for i in range(len(rec))])  # (L, N, H, T, T)


@torch.no_grad()
def patched_last_logits(
    model, input_ids, patterns: torch.Tensor, masks: torch.Tensor, *, chunk: int | None = None
) -> torch.Tensor:
    """Last-position logits ``(G, N, V)`` of ``model`` with, in group ``g``, head ``(l, h)`` replaced where ``masks[g, l, h]``.

    Parameters
    ----------
    input_ids : (N, T) int
    patterns : (L, N, H, T, T) float
        Donor patterns (e.g. the newer checkpoint's, from :func:`record_patterns`).
    masks : (G, L, H) bool
        Which heads each group patches (all False: the unpatched model).
    chunk : int, optional
        Groups per forward (default: all ``G`` in one batched forward).
    """
    ids = _check_ids(input_ids)
    masks = torch.as_tensor(masks, dtype=torch.bool)
    L = len(attention_modules(model))
    if masks.ndim != 3 or masks.shape[1] != L or patterns.shape[0] != L or patterns.shape[1] != ids.shape[0]:
        raise ValueError(
            f"masks must be (G, L={L}, H) and patterns (L, N={ids.shape[0]}, H, T, T); got "
            f"{tuple(masks.shape)} and {tuple(patterns.shape)}"
        )
    G, N = masks.shape[0], ids.shape[0]
    chunk = G if chunk is None else int(chunk)
    out = []
    for g0 in range(0, G, chunk):
        m = masks[g0 : g0 + chunk]
        with patch_state(model, masks=m, patterns=patterns):
            logits = model(input_ids=ids.repeat(m.shape[0], 1)).logits[:, -1].float()  # (g*N, V)
        out.append(logits.view(m.shape[0], N, -1))
    return torch.cat(out)  # (G, N, V)


@torch.no_grad()
def all_single_head_logits(model, input_ids, patterns: torch.Tensor) -> torch.Tensor:
    """Last-position logits ``(L·H, N, V)`` of every single-head patch, sharing all the work the patches share.

    Exactly :func:`patched_last_logits` with :func:`single_head_masks` (up to float rounding), for GPT-NeoX with a
    parallel residual (Pythia, the mini-suite). Patching head ``(l, h)`` leaves layers ``< l`` and, in layer ``l``,
    the other heads and the MLP (which reads the layer's input) unchanged, so its output there is the clean output plus
    ``W_O[:, h] ((A'_h − A_h) V_h)``; only layers ``> l`` are recomputed, for all branches in one batch. Work:
    ``L(L−1)/2`` layer passes per head and prompt instead of ``L²`` for a loop of full patched forwards.
    """
    ids = _check_ids(input_ids)
    base = model.gpt_neox
    if not model.config.use_parallel_residual:
        L, H = patterns.shape[0], patterns.shape[2]
        return patched_last_logits(model, ids, patterns, single_head_masks(L, H))
    N, T = ids.shape
    x = base.embed_in(ids)  # (N, T, d)
    pe = base.rotary_emb(x, position_ids=torch.arange(T, device=x.device)[None])
    branches = x.new_zeros((0, T, x.shape[-1]))  # (G*N, T, d), groups ordered l*H + h
    for layer in base.layers:
        if branches.shape[0]:
            with patch_state(model):
                branches = layer(branches, attention_mask=None, position_embeddings=pe)
        rec, vals = {}, {}
        with patch_state(model, record=rec, values=vals):
            x_next = layer(x, attention_mask=None, position_embeddings=pe)
        l = layer.attention.layer_idx
        A, V = rec[l], vals[l]  # (N, H, T, T), (N, H, T, dh)
        H, dh = A.shape[1], V.shape[-1]
        dO = (patterns[l].to(A.dtype) - A) @ V  # (N, H, T, dh)
        W = layer.attention.dense.weight.view(-1, H, dh)  # (d, H, dh)
        delta = torch.einsum("nhtk,dhk->hntd", dO, W)  # (H, N, T, d)
        branches = torch.cat([branches, (x_next[None] + delta).reshape(H * N, T, -1)])
        x = x_next
    logits = model.lm_head(base.final_layer_norm(branches[:, -1])).float()  # (L*H*N, V)
    return logits.view(-1, N, logits.shape[-1])  # (L*H, N, V)


def single_head_masks(n_layer: int, n_head: int) -> torch.Tensor:
    """``(L·H, L, H)``: group ``l·H + h`` patches head ``(l, h)`` only."""
    return torch.eye(n_layer * n_head, dtype=torch.bool).view(n_layer * n_head, n_layer, n_head)


def topk_masks(order: Sequence[int], n_layer: int, n_head: int, ks: Sequence[int]) -> torch.Tensor:
    """``(len(ks), L, H)``: group ``i`` patches the first ``min(k_i, L·H)`` heads of ``order`` (flat ``l·H + h``)."""
    masks = torch.zeros(len(ks), n_layer * n_head, dtype=torch.bool)
    for i, k in enumerate(ks):
        masks[i, list(order)[: min(int(k), n_layer * n_head)]] = True
    return masks.view(len(ks), n_layer, n_head)


def target_probs(logits: torch.Tensor, target_ids) -> np.ndarray:
    """p(target) from logits ``(..., N, V)`` and targets ``(N,)``: shape ``(..., N)``."""
    t = torch.as_tensor(target_ids).long()
    p = torch.softmax(logits.double(), dim=-1)
    return p.gather(-1, t.expand(*p.shape[:-1]).unsqueeze(-1)).squeeze(-1).numpy()


@dataclass
class PatchResult:
    """Patching the newer checkpoint's patterns into the older one, on N prompts.

    Attributes
    ----------
    p_old, p_new : (N,)
        p(target) of the old and new checkpoints.
    p_head : (L, H, N)
        p(target) of the old checkpoint with head (l, h) patched.
    ks : tuple of int
    p_topk : (len(ks), N)
        p(target) with the top-k heads (by mean single-head Δp, or the given order) patched jointly.
    order : list of int
        Heads ranked by mean Δp, flat index ``l·H + h``.
    """

    p_old: np.ndarray
    p_new: np.ndarray
    p_head: np.ndarray
    ks: tuple[int, ...]
    p_topk: np.ndarray
    order: list[int]

    @property
    def dp_head(self) -> np.ndarray:
        """Δp per head and prompt, ``(L, H, N)``."""
        return self.p_head - self.p_old

    @property
    def fraction_recovered(self) -> np.ndarray:
        """``(mean p_topk − mean p_old) / (mean p_new − mean p_old)`` per k (ratio of means over prompts)."""
        gain = self.p_new.mean() - self.p_old.mean()
        return (self.p_topk.mean(-1) - self.p_old.mean()) / gain if gain != 0 else np.full(len(self.ks), np.nan)


def patch_heads(
    old,
    new,
    input_ids,
    target_ids,
    *,
    ks: Sequence[int] = (1, 2, 4, 8, 16),
    order: Sequence[int] | None = None,
    batched: bool = True,
) -> PatchResult:
    """Paper B's patching: every single head, then the top-k heads jointly, from ``new`` into ``old``.

    ``order`` fixes the ranking for the joint patches (default: by this call's mean single-head Δp).
    ``batched=False`` runs one forward per patch (the reference the benchmark compares against).
    """
    ids = _check_ids(input_ids)
    logits_old, _ = record_patterns(old, ids)
    logits_new, donor = record_patterns(new, ids)  # donor (L, N, H, T, T)
    L, N, H = donor.shape[:3]
    p_old, p_new = target_probs(logits_old, target_ids), target_probs(logits_new, target_ids)
    if batched:
        logits = all_single_head_logits(old, ids, donor)  # (L*H, N, V)
    else:
        logits = patched_last_logits(old, ids, donor, single_head_masks(L, H), chunk=1)  # (L*H, N, V)
    p_head = target_probs(logits, target_ids).reshape(L, H, N)
    if order is None:
        order = [int(i) for i in np.argsort(-(p_head - p_old).mean(-1).ravel(), kind="stable")]
    if len(ks):
        p_topk = target_probs(patched_last_logits(old, ids, donor, topk_masks(order, L, H, ks)), target_ids)
    else:
        p_topk = np.zeros((0, N))
    return PatchResult(
        p_old=p_old, p_new=p_new, p_head=p_head, ks=tuple(int(k) for k in ks), p_topk=p_topk, order=list(order)
    )
