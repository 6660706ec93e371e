r"""What every token mixer shares: the spec a mixer registers, stacked linear maps, causal convolution, token shift.

A token mixer maps the normalised residual stream ``h`` of ``E`` stacked models, shape ``(E, B, L, d)``, to its
update ``(E, B, L, d)``; output position ``t`` may depend on inputs ``<= t`` only. Its parameters are stacked along
the member axis like the transformer's: ``{short name: (E, ...)}``. A :class:`MixerSpec` tells
:mod:`lib.models.gpt` the shapes of one layer's parameters, how to initialise each of them, and how to run the
mixer, in one or more *forms* (``"parallel"``: all positions at once; ``"recurrent"``: a loop over positions, the
reference the parallel form is tested against).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

__all__ = [
    "MixerSpec",
    "ChannelSpec",
    "lin",
    "causal_conv",
    "token_shift",
    "normal",
    "uniform",
    "resid_scale",
    "check_form",
    "CONV_WIDTH",
    "SHORT",
]

#: Width of the short causal depthwise convolution used by Mamba, Gated DeltaNet and the mLSTM (as in their papers).
CONV_WIDTH = 4

Shapes = Callable[..., dict[str, tuple[int, ...]]]
Init = Callable[..., torch.Tensor]
Forward = Callable[..., torch.Tensor]


@dataclass(frozen=True)
class ChannelSpec:
    """A channel mixer that replaces the block's GELU MLP (RWKV's channel mix)."""

    shapes: Shapes  # shapes(cfg) -> {short name: shape}
    init: Init  # init(name, shape, cfg, layer, generator) -> float64 tensor
    forward: Forward  # forward(p, h (E, B, L, d), cfg) -> (E, B, L, d)


@dataclass(frozen=True)
class MixerSpec:
    """One token mixer.

    Attributes
    ----------
    name : str
        Registry name (``GPTConfig.mixer``).
    summary : str
        One line for tables.
    shapes : callable
        ``shapes(cfg) -> {short name: shape}``: the token mixer's parameters of one layer (without the member axis).
    init : callable
        ``init(name, shape, cfg, layer, generator) -> Tensor`` (float64), one parameter of one member.
    forward : callable or None
        ``forward(p, h, cfg, mode=...) -> (E, B, L, d)`` with ``p`` the layer's ``{short name: (E, ...)}``. ``None``
        for the transformer's attention, which :func:`lib.models.gpt.gpt_forward` runs itself.
    forms : tuple of str
        The forms ``forward`` accepts as ``mode`` (first = default).
    causal : bool
        False only for the deliberately unmasked control.
    channel : ChannelSpec or None
        Replaces the GELU MLP (RWKV).
    short_form : str or None
        The default form for short sequences (:meth:`default_form`).
    """

    name: str
    summary: str
    shapes: Shapes
    init: Init
    forward: Forward | None
    forms: tuple[str, ...] = ("parallel",)
    causal: bool = True
    channel: ChannelSpec | None = None
    short_form: str | None = None

    def default_form(self, L: int) -> str:
        """The form used when none is asked for: ``short_form`` for sequences of at most
        :data:`SHORT` positions (where a Python loop beats the parallel form on a CPU), else ``forms[0]``."""
        return self.short_form if self.short_form is not None and L <= SHORT else self.forms[0]


#: Longest sequence for which a mixer's ``short_form`` is its default.
SHORT = 64


def check_form(mode: str, forms: tuple[str, ...], name: str) -> None:
    if mode not in forms:
        raise ValueError(f"mode must be one of {forms} for the {name} mixer, got {mode!r}")


def lin(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Stacked linear map: ``x`` ``(E, ..., i)`` times ``w`` ``(E, i, o)`` -> ``(E, ..., o)``."""
    E, i = x.shape[0], x.shape[-1]
    out = torch.bmm(x.reshape(E, -1, i), w)  # (E, N, o)
    return out.view(*x.shape[:-1], w.shape[-1])


def causal_conv(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
    """Depthwise causal convolution along positions: ``y[t] = sum_k w[:, k] * x[t - K + 1 + k] (+ b)``.

    ``x`` ``(E, B, L, c)``, ``w`` ``(E, c, K)``, ``b`` ``(E, c)``; positions before 0 are zero.
    """
    E, B, L, c = x.shape
    K = w.shape[-1]
    xp = F.pad(x, (0, 0, K - 1, 0))  # (E, B, L+K-1, c)
    out = xp[:, :, 0:L] * w[:, None, None, :, 0]
    for k in range(1, K):
        out = out + xp[:, :, k : k + L] * w[:, None, None, :, k]
    return out if b is None else out + b[:, None, None, :]


def token_shift(x: torch.Tensor) -> torch.Tensor:
    """``x[t-1]`` at position ``t`` (zero at ``t = 0``), for ``x`` ``(E, B, L, c)``."""
    return F.pad(x, (0, 0, 1, 0))[:, :, :-1]


def normal(shape, std: float, g: torch.Generator) -> torch.Tensor:
    return torch.randn(shape, generator=g, dtype=torch.float64) * std


def uniform(shape, lo: float, hi: float, g: torch.Generator) -> torch.Tensor:
    return lo + (hi - lo) * torch.rand(shape, generator=g, dtype=torch.float64)


def resid_scale(cfg) -> float:
    """The transformer's scale of residual output projections, :math:`1/\\sqrt{2 n_\\text{layers}}`."""
    return 1.0 / math.sqrt(2 * cfg.n_layers)


def dense_init(name: str, shape, cfg, g: torch.Generator, outputs: tuple[str, ...]) -> torch.Tensor:
    """The transformer's convention for a dense matrix: :math:`\\mathcal N(0, \\sigma^2)`, residual outputs scaled."""
    scale = cfg.init_std * (resid_scale(cfg) if name in outputs else 1.0)
    return normal(shape, scale, g)


def split_heads(x: torch.Tensor, H: int) -> torch.Tensor:
    """``(E, B, L, H*dh)`` -> ``(E, B, H, L, dh)``."""
    E, B, L, a = x.shape
    return x.view(E, B, L, H, a // H).transpose(2, 3)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """``(E, B, H, L, dh)`` -> ``(E, B, L, H*dh)``."""
    E, B, H, L, dh = x.shape
    return x.transpose(2, 3).reshape(E, B, L, H * dh)


def head_norm(x: torch.Tensor, w: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """Per-head RMS normalisation with a gain shared by the heads: ``x`` ``(E, B, H, L, dh)``, ``w`` ``(E, dh)``."""
    x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return x * w[:, None, None, None, :]


__all__ += ["dense_init", "split_heads", "merge_heads", "head_norm"]
