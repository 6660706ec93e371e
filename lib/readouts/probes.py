r"""Probes of how a model's predictions depend on its inputs: is it causal, and does it look at the right keys?

Two readings that chapter 7 takes of every token mixer, whatever its mechanism:

* **causality** (:func:`future_token_leak`): a language model's output at position :math:`t` may depend only on the
  tokens :math:`x_{\le t}`. Changing the last input token and recording the largest change of any earlier logit,

  .. math:: \lambda = \max_{b,\, t < L-1,\, v} \big| f(x')_{b t v} - f(x)_{b t v} \big|,
     \qquad x'_{b,L-1} = 1 - x_{b,L-1},

  gives :math:`\lambda = 0` (up to rounding) for a causal model and :math:`\lambda > 0` for one that leaks.
* **keys** (:func:`key_share`): given a sensitivity map :math:`m_{ik}` of output bit :math:`i` to input position
  :math:`k` (:func:`lib.models.input_sensitivity`) and the linear map's support :math:`A_{ik} \in \{0, 1\}`, the mean
  over output bits of the share of the sensitivity that lies on the true keys,

  .. math:: \sigma = \frac{1}{S}\sum_i \frac{\sum_{k < S} m_{ik} A_{ik}}{\sum_k m_{ik}},

  which is 1 for a model that reads exactly the support and about :math:`s / (2S-1)` for one that reads everything
  alike.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

from ..models.gpt import GPTConfig, gpt_forward

__all__ = ["future_token_leak", "key_share"]


def future_token_leak(params: Mapping[str, torch.Tensor], cfg: GPTConfig, tokens: torch.Tensor) -> float:
    """Largest change of an earlier output when the last input token of every sequence flips (module docstring).

    Parameters
    ----------
    params : mapping
        Stacked parameters ``{name: (E, ...)}`` of ``cfg`` (e.g. :func:`lib.models.init_gpt_params`).
    cfg : GPTConfig
        A model over a binary vocabulary.
    tokens : Tensor, shape ``(B, L)``
        Input tokens, ``2 <= L <= cfg.n_ctx``.

    Returns
    -------
    float
        :math:`\\lambda`, the largest absolute change of a logit at positions ``0..L-2`` over members and batch.
    """
    if not isinstance(cfg, GPTConfig):
        raise ValueError(f"cfg must be a GPTConfig, got {type(cfg).__name__}")
    if cfg.vocab != 2:
        raise ValueError(f"the flip needs a binary vocabulary, got vocab={cfg.vocab}")
    if tokens.dim() != 2 or not 2 <= tokens.shape[1] <= cfg.n_ctx:
        raise ValueError(f"tokens must be (B, L) with 2 <= L <= n_ctx={cfg.n_ctx}, got shape {tuple(tokens.shape)}")
    base = gpt_forward(params, tokens, cfg)  # (E, B, L, 2)
    changed = tokens.clone()
    changed[:, -1] = 1 - changed[:, -1]  # the last token only
    return float((gpt_forward(params, changed, cfg) - base)[:, :, :-1].abs().max())


def key_share(sensitivity, support) -> float:
    """Mean over output bits of the share of each bit's sensitivity on its true keys, :math:`\\sigma` above.

    Parameters
    ----------
    sensitivity : array, shape ``(S, P)``
        Output bit ``i``'s sensitivity to each of ``P >= S`` changed positions, the first ``S`` the input bits.
    support : array, shape ``(S, S)``
        The map's 0/1 support, row ``i`` the keys of output bit ``i``.
    """
    m = torch.as_tensor(np.asarray(sensitivity), dtype=torch.float64)
    A = torch.as_tensor(np.asarray(support), dtype=torch.float64)
    if A.dim() != 2 or A.shape[0] != A.shape[1] or m.dim() != 2 or m.shape[0] != A.shape[0] or m.shape[1] < A.shape[0]:
        raise ValueError(f"need sensitivity (S, P >= S) and support (S, S), got {tuple(m.shape)} and {tuple(A.shape)}")
    if (m < 0).any():
        raise ValueError("sensitivity must be non-negative")
    S = A.shape[0]
    on_keys = (m[:, :S] * A).sum(1)  # (S,)
    return float((on_keys / m.sum(1).clamp_min(1e-12)).mean())
