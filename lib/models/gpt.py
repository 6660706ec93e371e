r"""A small causal GPT, written once for an ensemble: ``E`` models with stacked parameters ``(E, ...)``.

Pre-LN blocks with learned absolute positions, ``H`` heads of size ``d_head``, a GELU MLP and an untied
unembedding. For member ``e``, block ``l`` and head ``h``, with :math:`\hat x = \mathrm{LN}(x)`:

.. math::
    s_{qk} = \frac{(\hat x_q W_Q^h)\cdot(\hat x_k W_K^h)}{\sqrt{d_\text{head}}} + c\,M_{qk}
    \;\;(k \le q), \qquad a_{qk} = \operatorname{softmax}_k(s_{qk}),

so the attention weights are always materialised: the scores (pre-softmax, causal entries :math:`-\infty`) pass
through the hook point ``blocks.{l}.attn.hook_attn_scores`` and the pattern through ``blocks.{l}.attn.hook_pattern``
(TransformerLens's names, as are the others: ``hook_q``, ``hook_k``, ``hook_v``, ``hook_z``, ``hook_resid_pre``,
``hook_attn_out``, ``hook_resid_mid``, ``hook_mlp_out``, ``hook_resid_post``; :func:`hook_names`).
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
through the hook point ``blocks.{l}.hook_mixer_out`` instead, and the bias ``c M`` is not defined for it. One
:func:`gpt_forward` runs every mixer: attention is the mixer the block runs itself.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..core.validate import check_choice, check_positive, check_size
from .hooks import HookPoint
from .mixers import get_mixer

__all__ = [
    "GPTConfig",
    "GPT",
    "init_gpt_params",
    "gpt_forward",
    "causal_bias",
    "PARAM_NAMES",
    "HOOK_NAMES",
    "hook_names",
]

#: Per-layer parameter names (prefixed ``b{l}_``) and the global ones.
LAYER_PARAMS = ("ln1_g", "ln1_b", "w_qkv", "w_o", "ln2_g", "ln2_b", "w_in", "b_in", "w_out", "b_out")
GLOBAL_PARAMS = ("tok", "pos", "lnf_g", "lnf_b", "w_u", "b_u")
PARAM_NAMES = GLOBAL_PARAMS + LAYER_PARAMS
#: Initialisation schemes (:class:`GPTConfig`).
INIT_SCHEMES = ("gpt2", "torch")
#: The bias that goes with each weight matrix (PyTorch's ``nn.Linear`` draws both from its weight's fan-in).
_BIAS_OF = {"b_in": "w_in", "b_out": "w_out", "b_u": "w_u"}


@dataclass(frozen=True)
class GPTConfig:
    r"""Architecture of one model (a frozen config).

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
        Standard deviation of the initial weights and embeddings (``init="gpt2"``).
    init : {"gpt2", "torch"}
        Initialisation scheme (:func:`init_gpt_params`): ``"gpt2"`` (our default) draws weights and embeddings
        from :math:`\mathcal N(0, \sigma^2)`, ``sigma = init_std``, with the residual out-projections scaled by
        :math:`1/\sqrt{2 n_\text{layers}}` and biases zero; ``"torch"`` is what ``nn.Linear`` / ``nn.Embedding``
        modules start from in PyTorch: weights and biases :math:`U(\pm 1/\sqrt{\text{fan-in}})`, embeddings
        :math:`\mathcal N(0, 1)` (``init_std`` unused). The token mixers' own parameters keep their own schemes.
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
    init: str = "gpt2"

    def __post_init__(self) -> None:
        get_mixer(self.mixer)
        check_choice("init", self.init, INIT_SCHEMES)
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
        check_positive("init_std", self.init_std)

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


def init_gpt_params(
    cfg: GPTConfig,
    seeds: Sequence[int],
    *,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> dict[str, torch.Tensor]:
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
            elif short.endswith("_b"):
                p[name] = torch.zeros(shape, dtype=torch.float64)
            elif cfg.init == "torch" and short in ("tok", "pos"):  # nn.Embedding: N(0, 1)
                p[name] = torch.randn(shape, generator=g, dtype=torch.float64)
            elif (
                cfg.init == "torch"
            ):  # nn.Linear: weight (fan_in, fan_out) and bias, U(-1/sqrt(fan_in), 1/sqrt(fan_in))
                fan_in = shapes[name.replace(short, _BIAS_OF[short])][0] if short in _BIAS_OF else shape[0]
                p[name] = (torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1) / math.sqrt(fan_in)
            elif short in ("b_in", "b_out", "b_u"):
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
    hooks: Mapping[str, Callable[[torch.Tensor], torch.Tensor]] | None = None,
    mode: str | None = None,
) -> torch.Tensor:
    """Logits of ``E`` stacked models, ``(E, B, L, vocab)``: one forward for attention and every other token mixer.

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
        ``{hook name: function}``: each named tensor passes through its function (which may record or replace it;
        names without a function pass unchanged). The names are TransformerLens's (:data:`HOOK_NAMES`), with
        the member axis ``E`` in front: ``hook_embed`` ``(E, B, L, d)`` (token embeddings), ``hook_pos_embed``
        ``(E, L, d)``; per block ``l``, ``blocks.{l}.hook_resid_pre``, ``hook_resid_mid``, ``hook_resid_post``,
        ``hook_attn_out`` (attention) or ``hook_mixer_out`` (another token mixer) and ``hook_mlp_out``, each
        ``(E, B, L, d)``; for attention ``blocks.{l}.attn.hook_q``, ``hook_k``, ``hook_v``, ``hook_z``
        ``(E, B, H, L, d_head)`` (head-major, unlike TransformerLens's position-major) and
        ``blocks.{l}.attn.hook_attn_scores``, ``hook_pattern`` ``(E, B, H, L, L)`` (scores with the causal
        ``-inf`` and the bias added, pattern after the softmax).
    mode : str, optional
        The form a token mixer runs in (``"parallel"`` or ``"recurrent"`` where the mixer has both); default: the
        mixer's faster form at this length (:meth:`lib.models.mixers.MixerSpec.default_form`). Attention has only
        ``"parallel"``.
    """
    E = params["tok"].shape[0]
    if tokens.dim() == 2:
        tokens = tokens.expand(E, *tokens.shape)
    if tokens.dim() != 3 or tokens.shape[0] != E:
        raise ValueError(f"tokens must be (E, B, L) with E={E} or (B, L), got {tuple(tokens.shape)}")
    _, B, L = tokens.shape
    if L > cfg.n_ctx:
        raise ValueError(f"tokens has length {L} > n_ctx={cfg.n_ctx}")
    d = cfg.width
    spec = get_mixer(cfg.mixer)
    is_attention = spec.forward is None
    mode = mode or spec.default_form(L)
    if mode not in spec.forms:
        raise ValueError(f"mode must be one of {spec.forms} for the {spec.name} mixer, got {mode!r}")
    if is_attention:
        additive = _additive_bias(bias, L, params["tok"].dtype, tokens.device)
    elif bias is not None and not bool(torch.isinf(bias).any()) and bool((bias != 0).any()):
        raise ValueError(f"bias (c M on attention scores) is not defined for the {spec.name} mixer")

    def tap(name: str, t: torch.Tensor) -> torch.Tensor:  # t through hooks[name], where one is given
        return t if hooks is None or name not in hooks else hooks[name](t)

    def tap_stream(name: str, t: torch.Tensor) -> torch.Tensor:  # a (E, B*L, d) stream, hooked as (E, B, L, d)
        return t if hooks is None or name not in hooks else hooks[name](t.view(E, B, L, d)).reshape(E, B * L, d)

    # embeddings: gather each member's rows, (E, B*L, d) -> (E, B, L, d), plus positions (E, 1, L, d)
    x = torch.gather(params["tok"], 1, tokens.reshape(E, B * L, 1).expand(E, B * L, d))
    x = tap("hook_embed", x.view(E, B, L, d)) + tap("hook_pos_embed", params["pos"][:, :L])[:, None]
    x = x.reshape(E, B * L, d)
    names = LAYER_PARAMS if is_attention else tuple(cfg.layer_shapes())
    for layer in range(cfg.n_layers):
        p = {k: params[f"b{layer}_{k}"] for k in names}
        block = f"blocks.{layer}."
        x = tap_stream(block + "hook_resid_pre", x)
        h = _layer_norm(x, p["ln1_g"], p["ln1_b"])  # (E, B*L, d)
        if is_attention:
            x = x + tap_stream(block + "hook_attn_out", _attention(p, h, cfg, (E, B, L), additive, tap, block))
        else:
            out = spec.forward(p, h.view(E, B, L, d), cfg, mode=mode)  # (E, B, L, d)
            x = x + tap_stream(block + "hook_mixer_out", out.reshape(E, B * L, d))
        x = tap_stream(block + "hook_resid_mid", x)
        h = _layer_norm(x, p["ln2_g"], p["ln2_b"])
        if spec.channel is not None:
            out = spec.channel.forward(p, h.view(E, B, L, d), cfg).reshape(E, B * L, d)
        else:
            out = torch.baddbmm(
                p["b_out"][:, None, :], F.gelu(torch.baddbmm(p["b_in"][:, None, :], h, p["w_in"])), p["w_out"]
            )
        x = tap_stream(block + "hook_resid_post", x + tap_stream(block + "hook_mlp_out", out))
    h = _layer_norm(x, params["lnf_g"], params["lnf_b"])
    logits = torch.baddbmm(params["b_u"][:, None, :], h, params["w_u"])  # (E, B*L, V)
    return logits.view(E, B, L, cfg.vocab)


def _additive_bias(bias, L: int, dtype, device) -> torch.Tensor:
    """The causal ``-inf`` plus ``bias`` as ``(L, L)`` or ``(E, 1, 1, L, L)`` (a prebuilt one passes through)."""
    additive = (
        bias if bias is not None and bool(torch.isinf(bias).any()) else causal_bias(L, bias, dtype=dtype, device=device)
    )
    return additive[:, None, None] if additive.dim() == 3 else additive


def _attention(
    p, h: torch.Tensor, cfg: GPTConfig, size: tuple[int, int, int], additive, tap, block: str
) -> torch.Tensor:
    """Multi-head softmax attention of one block: ``h`` ``(E, B*L, d)`` -> ``z W_O`` ``(E, B*L, d)``."""
    E, B, L = size
    H, dh = cfg.n_heads, cfg.d_head
    qkv = torch.bmm(h, p["w_qkv"]).view(E, B, L, 3, H, dh).permute(3, 0, 1, 4, 2, 5)  # (3, E, B, H, L, dh)
    q = tap(block + "attn.hook_q", qkv[0])
    k = tap(block + "attn.hook_k", qkv[1])
    v = tap(block + "attn.hook_v", qkv[2])
    scores = tap(
        block + "attn.hook_attn_scores", torch.matmul(q, k.transpose(-1, -2)).mul_(1.0 / math.sqrt(dh)) + additive
    )
    pattern = tap(block + "attn.hook_pattern", softmax(scores))  # (E, B, H, L, L)
    z = tap(block + "attn.hook_z", torch.matmul(pattern, v))  # (E, B, H, L, dh)
    return torch.bmm(z.permute(0, 1, 3, 2, 4).reshape(E, B * L, H * dh), p["w_o"])  # (E, B*L, H*dh) @ (E, H*dh, d)


#: Hook names per block (TransformerLens's), for attention and for another token mixer; plus the two embeddings.
HOOK_NAMES = {
    "attention": (
        "hook_resid_pre",
        "attn.hook_q",
        "attn.hook_k",
        "attn.hook_v",
        "attn.hook_attn_scores",
        "attn.hook_pattern",
        "attn.hook_z",
        "hook_attn_out",
        "hook_resid_mid",
        "hook_mlp_out",
        "hook_resid_post",
    ),
    "mixer": ("hook_resid_pre", "hook_mixer_out", "hook_resid_mid", "hook_mlp_out", "hook_resid_post"),
    "embed": ("hook_embed", "hook_pos_embed"),
}


def hook_names(cfg: GPTConfig) -> tuple[str, ...]:
    """Every hook name of a model with this config, in the order of the forward pass."""
    per_block = HOOK_NAMES["attention" if cfg.mixer == "attention" else "mixer"]
    return HOOK_NAMES["embed"] + tuple(f"blocks.{layer}.{n}" for layer in range(cfg.n_layers) for n in per_block)


def _hook_tree(names: Sequence[str]) -> nn.ModuleDict:
    """Nested modules whose ``named_modules`` names are ``names`` (``"attn.hook_q"`` -> ``attn`` / ``hook_q``)."""
    tree = nn.ModuleDict()
    for name in names:
        *parents, leaf = name.split(".")
        node = tree
        for part in parents:
            if part not in node:
                node[part] = nn.ModuleDict()
            node = node[part]
        node[leaf] = HookPoint()
    return tree


class GPT(nn.Module):
    """``E`` stacked GPTs as one module, with a :class:`HookPoint` at every name of :func:`hook_names`.

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
        self.hook_embed, self.hook_pos_embed = HookPoint(), HookPoint()
        self.blocks = nn.ModuleList(
            _hook_tree(HOOK_NAMES["attention" if cfg.mixer == "attention" else "mixer"]) for _ in range(cfg.n_layers)
        )

    @property
    def n_members(self) -> int:
        return self.params["tok"].shape[0]

    def hook_points(self) -> dict[str, nn.Module]:
        """``{hook name: HookPoint}``, e.g. ``"blocks.0.attn.hook_pattern"`` (:func:`hook_names`)."""
        return {name: m for name, m in self.named_modules() if isinstance(m, HookPoint)}

    def forward(self, tokens: torch.Tensor, bias: torch.Tensor | None = None, mode: str | None = None) -> torch.Tensor:
        """Logits ``(E, B, L, vocab)`` for tokens ``(E, B, L)`` or ``(B, L)``; ``bias``, ``mode`` as in :func:`gpt_forward`."""
        return gpt_forward(dict(self.params), tokens, self.cfg, bias=bias, hooks=self.hook_points(), mode=mode)
