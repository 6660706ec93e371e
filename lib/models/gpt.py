r"""A small causal GPT, written once for an ensemble: ``E`` models with stacked parameters ``(E, ...)``.

Pre-LN blocks with learned absolute positions, ``H`` heads of size ``d_head``, a GELU MLP and an untied
unembedding. For member ``e``, block ``l`` and head ``h``, with :math:`\hat x = \mathrm{LN}(x)`:

.. math::
    s_{qk} = \frac{(\hat x_q W_Q^h)\cdot(\hat x_k W_K^h)}{\sqrt{d_\text{head}}} + c\,M_{qk}
    \;\;(k \le q), \qquad a_{qk} = \operatorname{softmax}_k(s_{qk}),

so the attention weights are always materialised: the scores (pre-softmax, causal entries :math:`-\infty`) pass
through the hook point ``blocks.{l}.attn.hook_scores`` and the pattern through ``blocks.{l}.attn.hook_pattern``.
The optional additive bias :math:`c\,M` (one ``(L, L)`` matrix per member, the same for every head and layer) is
paper B's intervention that steers attention towards the ground-truth support ``M``.

:func:`gpt_forward` is the functional form the ensemble trainer differentiates; :class:`GPT` wraps stacked
parameters in a module with hook points (for :func:`lib.models.capture`). Member ``e`` initialised with seed
``seeds[e]`` has the same parameters as a single model initialised with that seed, so a stack computes exactly
what a loop over its members would.

Initialisation (our choice, GPT-2 style): embeddings and weights :math:`\mathcal N(0, \sigma^2)` with
``sigma = init_std``, the residual outputs (attention and MLP out-projections) scaled by
:math:`1/\sqrt{2\,n_\text{layers}}`, biases zero, LayerNorm gains one.

Token mixers. ``GPTConfig(mixer=...)`` swaps the attention sublayer for another token mixer of
:mod:`lib.models.mixers` (MLP-Mixer, Mamba, Gated DeltaNet, RWKV, mLSTM, linear RNN), everything else in the block
unchanged (RWKV also replaces the MLP by its channel mix). Such a layer has no attention pattern: its output passes
through the hook point ``blocks.{l}.mixer.hook_out`` instead, and the bias ``c M`` is not defined for it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..tasks.copy import check_size
from .hooks import HookPoint
from .mixers import get_mixer

__all__ = ["GPTConfig", "GPT", "init_gpt_params", "gpt_forward", "causal_bias", "PARAM_NAMES"]

#: Per-layer parameter names (prefixed ``b{l}_``) and the global ones.
LAYER_PARAMS = ("ln1_g", "ln1_b", "w_qkv", "w_o", "ln2_g", "ln2_b", "w_in", "b_in", "w_out", "b_out")
GLOBAL_PARAMS = ("tok", "pos", "lnf_g", "lnf_b", "w_u", "b_u")
PARAM_NAMES = GLOBAL_PARAMS + LAYER_PARAMS


@dataclass(frozen=True)
class GPTConfig:
    """Architecture of one model (a frozen config).

    Attributes
    ----------
    vocab : int
        Vocabulary size (>= 2).
    n_ctx : int
        Longest input (learned positions).
    n_heads, d_head : int
        Heads per layer and their size.
    n_layers : int
        Transformer blocks (>= 1).
    d_model : int or None
        Residual width; ``None`` means ``n_heads * d_head``.
    d_mlp : int or None
        MLP hidden width; ``None`` means ``4 * d_model``.
    init_std : float
        Standard deviation of the initial weights and embeddings.
    mixer : str
        Token mixer of every block (:data:`lib.models.mixers.MIXERS`); ``"attention"`` is the transformer.
    d_state : int or None
        State size of the mixers that have one (Mamba: states per channel, default 16; linear RNN: complex modes,
        default ``d_model``); ignored by the others.
    """

    vocab: int
    n_ctx: int
    n_heads: int = 8
    d_head: int = 8
    n_layers: int = 1
    d_model: int | None = None
    d_mlp: int | None = None
    init_std: float = 0.02
    mixer: str = "attention"
    d_state: int | None = None

    def __post_init__(self) -> None:
        get_mixer(self.mixer)
        check_size("vocab", self.vocab, 2)
        check_size("n_ctx", self.n_ctx, 1)
        check_size("n_heads", self.n_heads, 1)
        check_size("d_head", self.d_head, 1)
        check_size("n_layers", self.n_layers, 1)
        if self.d_model is not None:
            check_size("d_model", self.d_model, 1)
            if self.d_model % self.n_heads:
                raise ValueError(f"d_model must be divisible by n_heads={self.n_heads}, got {self.d_model}")
        if self.d_state is not None:
            check_size("d_state", self.d_state, 1)
        if self.d_mlp is not None:
            check_size("d_mlp", self.d_mlp, 1)
        if not (isinstance(self.init_std, (int, float)) and math.isfinite(self.init_std) and self.init_std > 0):
            raise ValueError(f"init_std must be a finite number > 0, got {self.init_std!r}")

    @property
    def width(self) -> int:
        """Residual width ``d_model``."""
        return self.d_model if self.d_model is not None else self.n_heads * self.d_head

    @property
    def hidden(self) -> int:
        """MLP hidden width."""
        return self.d_mlp if self.d_mlp is not None else 4 * self.width

    def layer_shapes(self) -> dict[str, tuple[int, ...]]:
        """Shapes of one block's parameters (short names): LayerNorm, token mixer, LayerNorm, channel mixer."""
        d, m = self.width, self.hidden
        spec = get_mixer(self.mixer)
        per = {"ln1_g": (d,), "ln1_b": (d,), **spec.shapes(self), "ln2_g": (d,), "ln2_b": (d,)}
        if spec.channel is not None:
            per.update(spec.channel.shapes(self))
        else:
            per.update({"w_in": (d, m), "b_in": (m,), "w_out": (m, d), "b_out": (d,)})
        return per

    def shapes(self) -> dict[str, tuple[int, ...]]:
        """Shape of each parameter of one model (without the member axis)."""
        d, V = self.width, self.vocab
        out = {"tok": (V, d), "pos": (self.n_ctx, d), "lnf_g": (d,), "lnf_b": (d,), "w_u": (d, V), "b_u": (V,)}
        per = self.layer_shapes()
        for layer in range(self.n_layers):
            out.update({f"b{layer}_{k}": v for k, v in per.items()})
        return out

    def mixer_names(self) -> tuple[str, ...]:
        """Short names of the token mixer's parameters in each block (attention: ``w_qkv``, ``w_o``)."""
        return tuple(get_mixer(self.mixer).shapes(self))

    @property
    def n_params(self) -> int:
        """Parameters of one model."""
        return sum(math.prod(s) for s in self.shapes().values())


def init_gpt_params(cfg: GPTConfig, seeds: Sequence[int], *, dtype: torch.dtype = torch.float32,
                    device: torch.device | str | None = None) -> dict[str, torch.Tensor]:  # fmt: skip
    """Stacked initial parameters ``{name: (E, ...)}``, member ``e`` drawn from ``torch.Generator(seeds[e])``."""
    if not isinstance(cfg, GPTConfig):
        raise ValueError(f"cfg must be a GPTConfig, got {type(cfg).__name__}")
    seeds = [check_size("seed", s, 0) for s in seeds]
    if not seeds:
        raise ValueError("seeds must name at least one member")
    shapes = cfg.shapes()
    resid = 1.0 / math.sqrt(2 * cfg.n_layers)
    spec = get_mixer(cfg.mixer)
    own = set(spec.shapes(cfg)) if spec.init is not None else set()  # initialised by the mixer's module
    channel = set(spec.channel.shapes(cfg)) if spec.channel is not None else set()
    members: list[dict[str, torch.Tensor]] = []
    for seed in seeds:
        g = torch.Generator().manual_seed(seed)
        p = {}
        for name, shape in shapes.items():
            short = name.split("_", 1)[1] if name.startswith("b") and name[1].isdigit() else name
            if short in own or short in channel:
                layer = int(name[1 : name.index("_")])
                init = spec.init if short in own else spec.channel.init
                p[name] = init(short, shape, cfg, layer, g).to(torch.float64)
            elif short.endswith("_g"):
                p[name] = torch.ones(shape, dtype=torch.float64)
            elif short.endswith("_b") or short in ("b_in", "b_out", "b_u"):
                p[name] = torch.zeros(shape, dtype=torch.float64)
            else:
                scale = cfg.init_std * (resid if short in ("w_o", "w_out") else 1.0)
                p[name] = torch.randn(shape, generator=g, dtype=torch.float64) * scale
        members.append(p)
    return {k: torch.stack([m[k] for m in members]).to(dtype=dtype, device=device) for k in shapes}


def causal_bias(L: int, bias: torch.Tensor | None = None, *, dtype=torch.float32, device=None) -> torch.Tensor:
    """Additive pre-softmax term: ``-inf`` above the diagonal plus the optional bias ``(L, L)`` or ``(E, L, L)``."""
    L = check_size("L", L, 1)
    mask = torch.full((L, L), float("-inf"), dtype=dtype, device=device).triu(1)
    if bias is None:
        return mask
    if bias.shape[-2:] != (L, L) or bias.dim() not in (2, 3):
        raise ValueError(f"bias must have shape (L, L) or (E, L, L) with L={L}, got {tuple(bias.shape)}")
    return mask + bias.to(dtype=dtype, device=device)


class _ShortSoftmax(torch.autograd.Function):
    r"""Softmax over the last axis, :math:`e^{s-\max s}/\sum e^{s-\max s}`, with its analytic backward.

    The same function as ``torch.softmax``; used for rows shorter than 16 keys, where torch's CPU kernel takes a slow
    path (2-5x slower here, measured with torch 2.13).
    """

    @staticmethod
    def forward(ctx, s):
        e = (s - s.amax(-1, keepdim=True)).exp_()
        y = e.div_(e.sum(-1, keepdim=True))
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return y * (g - (g * y).sum(-1, keepdim=True))


def softmax(scores: torch.Tensor) -> torch.Tensor:
    """Softmax over the last axis (keys)."""
    return _ShortSoftmax.apply(scores) if scores.shape[-1] < 16 else torch.softmax(scores, dim=-1)


def _layer_norm(x: torch.Tensor, g: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    # x (E, N, d); g, b (E, d)
    return torch.addcmul(b[:, None, :], F.layer_norm(x, x.shape[-1:]), g[:, None, :])


def gpt_forward(
    params: Mapping[str, torch.Tensor],
    tokens: torch.Tensor,
    cfg: GPTConfig,
    *,
    bias: torch.Tensor | None = None,
    hooks: Mapping[str, nn.Module] | None = None,
    mode: str | None = None,
) -> torch.Tensor:
    """Logits of ``E`` stacked models, ``(E, B, L, vocab)``.

    Parameters
    ----------
    params : mapping
        Stacked parameters ``{name: (E, ...)}`` (:func:`init_gpt_params`).
    tokens : Tensor, shape ``(E, B, L)`` or ``(B, L)``
        Input tokens, one batch per member (or one batch shared by all members).
    cfg : GPTConfig
    bias : Tensor, shape ``(L, L)`` or ``(E, L, L)``, optional
        Additive pre-softmax attention bias (e.g. ``c * M``), the same for every head and layer. Or an additive term
        built by :func:`causal_bias` beforehand (detected by its ``-inf`` entries; saves rebuilding it every step).
    hooks : mapping, optional
        ``{"blocks.{l}.attn.hook_scores": module, "blocks.{l}.attn.hook_pattern": module}`` applied to the
        scores ``(E, B, H, L, L)`` and the pattern ``(E, B, H, L, L)``; for another token mixer
        ``{"blocks.{l}.mixer.hook_out": module}`` applied to its output ``(E, B, L, d)``. An optional
        ``"hook_embed"`` is applied to the input embeddings ``(E, B*L, d)`` (token plus position).
    mode : str, optional
        The form a token mixer runs in (``"parallel"`` or ``"recurrent"`` where the mixer has both); default: the
        mixer's faster form at this length (:meth:`lib.models.mixers.MixerSpec.default_form`).
    """
    E = params["tok"].shape[0]
    if tokens.dim() == 2:
        tokens = tokens.expand(E, *tokens.shape)
    if tokens.dim() != 3 or tokens.shape[0] != E:
        raise ValueError(f"tokens must be (E, B, L) with E={E} or (B, L), got {tuple(tokens.shape)}")
    _, B, L = tokens.shape
    if L > cfg.n_ctx:
        raise ValueError(f"tokens has length {L} > n_ctx={cfg.n_ctx}")
    H, dh, d = cfg.n_heads, cfg.d_head, cfg.width
    dtype = params["tok"].dtype
    spec = get_mixer(cfg.mixer)
    if spec.forward is not None:
        return _mixer_forward(params, tokens, cfg, spec, bias=bias, hooks=hooks, mode=mode or spec.default_form(L))
    if mode not in (None, "parallel"):
        raise ValueError(f"mode must be 'parallel' for attention, got {mode!r}")
    if bias is not None and bool(torch.isinf(bias).any()):
        additive = bias
    else:
        additive = causal_bias(L, bias, dtype=dtype, device=tokens.device)
    if additive.dim() == 3:
        additive = additive[:, None, None]  # (E, 1, 1, L, L)

    # embeddings: gather each member's rows, (E, B, L, d) -> (E, B*L, d)
    x = torch.gather(params["tok"], 1, tokens.reshape(E, B * L, 1).expand(E, B * L, d))
    x = (x.view(E, B, L, d) + params["pos"][:, None, :L]).reshape(E, B * L, d)
    if hooks is not None and "hook_embed" in hooks:  # optional: the input embeddings (E, B*L, d), e.g. for attribution
        x = hooks["hook_embed"](x)
    scale = 1.0 / math.sqrt(dh)
    for layer in range(cfg.n_layers):
        p = {k: params[f"b{layer}_{k}"] for k in LAYER_PARAMS}.__getitem__
        h = _layer_norm(x, p("ln1_g"), p("ln1_b"))
        qkv = torch.bmm(h, p("w_qkv")).view(E, B, L, 3, H, dh).permute(3, 0, 1, 4, 2, 5)  # (3, E, B, H, L, dh)
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = torch.matmul(q, k.transpose(-1, -2)).mul_(scale) + additive  # (E, B, H, L, L)
        if hooks is not None:
            scores = hooks[f"blocks.{layer}.attn.hook_scores"](scores)
        pattern = softmax(scores)
        if hooks is not None:
            pattern = hooks[f"blocks.{layer}.attn.hook_pattern"](pattern)
        z = torch.matmul(pattern, v).permute(0, 1, 3, 2, 4).reshape(E, B * L, H * dh)  # (E, B*L, H*dh)
        x = x + torch.bmm(z, p("w_o"))
        h = _layer_norm(x, p("ln2_g"), p("ln2_b"))
        h = F.gelu(torch.baddbmm(p("b_in")[:, None, :], h, p("w_in")))
        x = x + torch.baddbmm(p("b_out")[:, None, :], h, p("w_out"))
    h = _layer_norm(x, params["lnf_g"], params["lnf_b"])
    logits = torch.baddbmm(params["b_u"][:, None, :], h, params["w_u"])  # (E, B*L, V)
    return logits.view(E, B, L, cfg.vocab)


def _mixer_forward(params, tokens, cfg: GPTConfig, spec, *, bias=None, hooks=None, mode="parallel") -> torch.Tensor:
    """:func:`gpt_forward` for a block whose token mixer is not attention (the same residual structure)."""
    if mode not in spec.forms:
        raise ValueError(f"mode must be one of {spec.forms} for the {spec.name} mixer, got {mode!r}")
    if bias is not None and not bool(torch.isinf(bias).any()) and bool((bias != 0).any()):
        raise ValueError(f"bias (c M on attention scores) is not defined for the {spec.name} mixer")
    E, B, L = tokens.shape
    d = cfg.width
    names = tuple(cfg.layer_shapes())
    x = torch.gather(params["tok"], 1, tokens.reshape(E, B * L, 1).expand(E, B * L, d))
    x = (x.view(E, B, L, d) + params["pos"][:, None, :L]).reshape(E, B * L, d)
    if hooks is not None and "hook_embed" in hooks:
        x = hooks["hook_embed"](x)
    for layer in range(cfg.n_layers):
        p = {k: params[f"b{layer}_{k}"] for k in names}
        h = _layer_norm(x, p["ln1_g"], p["ln1_b"]).view(E, B, L, d)
        out = spec.forward(p, h, cfg, mode=mode)  # (E, B, L, d)
        if hooks is not None:
            out = hooks[f"blocks.{layer}.mixer.hook_out"](out)
        x = x + out.reshape(E, B * L, d)
        h = _layer_norm(x, p["ln2_g"], p["ln2_b"])
        if spec.channel is not None:
            x = x + spec.channel.forward(p, h.view(E, B, L, d), cfg).reshape(E, B * L, d)
        else:
            h = F.gelu(torch.baddbmm(p["b_in"][:, None, :], h, p["w_in"]))
            x = x + torch.baddbmm(p["b_out"][:, None, :], h, p["w_out"])
    h = _layer_norm(x, params["lnf_g"], params["lnf_b"])
    logits = torch.baddbmm(params["b_u"][:, None, :], h, params["w_u"])  # (E, B*L, V)
    return logits.view(E, B, L, cfg.vocab)


class GPT(nn.Module):
    """``E`` stacked GPTs as one module, with hook points ``blocks.{l}.attn.hook_scores`` / ``hook_pattern``.

    Parameters
    ----------
    cfg : GPTConfig
    seeds : sequence of int, optional
        One initialisation seed per member (default ``(0,)``); ignored when ``params`` is given.
    params : mapping, optional
        Stacked parameters to wrap (tensors or arrays, e.g. a trained run's ``GPTRun.params``).
    """

    def __init__(self, cfg: GPTConfig, seeds: Sequence[int] = (0,), *, params: Mapping | None = None):
        super().__init__()
        if not isinstance(cfg, GPTConfig):
            raise ValueError(f"cfg must be a GPTConfig, got {type(cfg).__name__}")
        self.cfg = cfg
        if params is None:
            params = init_gpt_params(cfg, seeds)
        missing = set(cfg.shapes()) - set(params)
        if missing:
            raise ValueError(f"params lacks {sorted(missing)}")
        stacked = {k: torch.as_tensor(v).detach().clone() for k, v in params.items()}
        self.params = nn.ParameterDict({k: nn.Parameter(v) for k, v in stacked.items()})
        if cfg.mixer == "attention":
            block = lambda: nn.ModuleDict({"attn": nn.ModuleDict({"hook_scores": HookPoint(), "hook_pattern": HookPoint()})})  # noqa: E731
        else:
            block = lambda: nn.ModuleDict({"mixer": nn.ModuleDict({"hook_out": HookPoint()})})  # noqa: E731
        self.blocks = nn.ModuleList(block() for _ in range(cfg.n_layers))

    @property
    def n_members(self) -> int:
        return self.params["tok"].shape[0]

    def hook_points(self) -> dict[str, nn.Module]:
        """``{"blocks.{l}.attn.hook_scores": HookPoint, ...}`` (``blocks.{l}.mixer.hook_out`` for other mixers)."""
        return {f"blocks.{i}.{part}.{k}": m for i, b in enumerate(self.blocks) for part in b for k, m in b[part].items()}

    def forward(self, tokens: torch.Tensor, bias: torch.Tensor | None = None, mode: str | None = None) -> torch.Tensor:
        """Logits ``(E, B, L, vocab)`` for tokens ``(E, B, L)`` or ``(B, L)``; ``bias``, ``mode`` as in :func:`gpt_forward`."""
        return gpt_forward(dict(self.params), tokens, self.cfg, bias=bias, hooks=self.hook_points(), mode=mode)
