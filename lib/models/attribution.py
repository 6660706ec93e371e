r"""Where a model looks, for any token mixer: how much each prediction depends on each input position.

Attention patterns exist only for attention. To compare the token mixers on the same footing, two measures per
query ``q`` (the position that predicts token ``q+1``) and input position ``k``:

* :func:`input_sensitivity`, the effect of changing the token at ``k``: the total-variation distance between the
  predicted next-token distributions at ``q`` before and after the token at ``k`` is replaced by another one,
  averaged over sequences. For a model that computes a bit's parity from a sparse set of keys it is 1 on those keys
  and 0 elsewhere, whatever the model's confidence; causal models give 0 for ``k > q``.
* :func:`input_attribution`, the size of the gradient of the log-probability of the true next token with respect
  to the input embedding (token plus position) at ``k``,
  :math:`g_{qk} = \mathbb E \| \partial \log p(x_{q+1} \mid x_{\le q}) / \partial e_k \|_2`, normalised over ``k``.
  It is defined for an untrained model too, but vanishes where the model is confident.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
import torch.nn.functional as F

from .gpt import GPTConfig, gpt_forward

__all__ = ["input_attribution", "input_sensitivity"]


class _Leaf:
    """A hook that makes the tensor passing through it a fresh leaf requiring gradients, kept as ``self.x``."""

    x: torch.Tensor | None = None

    def __call__(self, t: torch.Tensor) -> torch.Tensor:
        self.x = t.detach().requires_grad_(True)
        return self.x


def input_attribution(
    params: Mapping[str, torch.Tensor], cfg: GPTConfig, tokens: torch.Tensor, queries: torch.Tensor
) -> torch.Tensor:
    """Normalised gradient attribution ``(E, Q, L-1)`` of the predictions at ``queries`` to the input positions.

    Parameters
    ----------
    params : mapping
        Stacked parameters ``{name: (E, ...)}`` (tensors or arrays).
    cfg : GPTConfig
    tokens : Tensor, shape ``(B, L)`` or ``(E, B, L)``
        Whole sequences: the model reads ``tokens[..., :-1]`` and is scored on ``tokens[..., 1:]``.
    queries : Tensor, shape ``(Q,)``
        Query positions (indices into the ``L-1`` inputs).
    """
    if not isinstance(cfg, GPTConfig):
        raise ValueError(f"cfg must be a GPTConfig, got {type(cfg).__name__}")
    p = {k: torch.as_tensor(v).detach().float() for k, v in params.items()}
    E = p["tok"].shape[0]
    if tokens.dim() == 2:
        tokens = tokens.expand(E, *tokens.shape)
    queries = torch.as_tensor(queries, dtype=torch.long)
    if queries.dim() != 1 or len(queries) == 0 or int(queries.min()) < 0 or int(queries.max()) >= tokens.shape[-1] - 1:
        raise ValueError(f"queries must be a non-empty 1-d tensor of positions < {tokens.shape[-1] - 1}")
    _, B, L = tokens.shape
    inputs = _Leaf()  # the input embeddings (token plus position) of the first block, as a leaf of the graph
    logits = gpt_forward(p, tokens[..., :-1], cfg, hooks={"blocks.0.hook_resid_pre": inputs})  # (E, B, L-1, V)
    logp = F.log_softmax(logits, -1).gather(-1, tokens[..., 1:, None])[..., 0]  # (E, B, L-1)
    rows = []
    for i, q in enumerate(queries.tolist()):
        (g,) = torch.autograd.grad(logp[:, :, q].sum(), inputs.x, retain_graph=i < len(queries) - 1)
        size = g.view(E, B, L - 1, -1).norm(dim=-1).mean(1)  # (E, L-1)
        rows.append(size / size.sum(-1, keepdim=True).clamp_min(1e-30))
    return torch.stack(rows, 1)  # (E, Q, L-1)


@torch.no_grad()
def input_sensitivity(
    params: Mapping[str, torch.Tensor], cfg: GPTConfig, tokens: torch.Tensor, queries: torch.Tensor, *, seed: int = 0
) -> torch.Tensor:
    """Mean total-variation change of the predictions at ``queries`` when one input token changes, ``(E, Q, L-1)``.

    ``tokens`` ``(B, L)`` or ``(E, B, L)`` are whole sequences (the model reads ``tokens[..., :-1]``); the token at
    each input position ``k`` is replaced by a uniformly drawn different one (seeded by ``seed``), one position at a
    time.
    """
    if not isinstance(cfg, GPTConfig):
        raise ValueError(f"cfg must be a GPTConfig, got {type(cfg).__name__}")
    p = {k: torch.as_tensor(v).detach().float() for k, v in params.items()}
    E = p["tok"].shape[0]
    x = tokens[..., :-1]
    if x.dim() == 2:
        x = x.expand(E, *x.shape)
    L = x.shape[-1]
    queries = torch.as_tensor(queries, dtype=torch.long)
    if queries.dim() != 1 or len(queries) == 0 or int(queries.min()) < 0 or int(queries.max()) >= L:
        raise ValueError(f"queries must be a non-empty 1-d tensor of positions < {L}")
    gen = torch.Generator().manual_seed(seed)
    base = torch.softmax(gpt_forward(p, x, cfg), -1)[:, :, queries]  # (E, B, Q, V)
    out = torch.zeros(E, len(queries), L)
    for k in range(L):
        changed = x.clone()
        shift = torch.randint(1, cfg.vocab, changed[..., k].shape, generator=gen)
        changed[..., k] = (changed[..., k] + shift) % cfg.vocab  # another token
        new = torch.softmax(gpt_forward(p, changed, cfg), -1)[:, :, queries]
        out[:, :, k] = 0.5 * (new - base).abs().sum(-1).mean(1)  # (E, Q)
    return out
