"""Token mixers for the stacked GPT of :mod:`lib.models.gpt`: the transformer's attention and six alternatives.

Paper B compares the transformer with an MLP-Mixer, Mamba, Gated DeltaNet, RWKV, an xLSTM and a linear RNN. Each
is a module here (pure torch, CPU), registered under a name that ``GPTConfig(mixer=...)`` takes. Every one replaces
only the token-mixing sublayer of the same pre-LN residual block (RWKV also brings its own channel mix), so one
harness trains them all.
"""

from __future__ import annotations

from . import deltanet, linear_rnn, mamba, mlp_mixer, mlstm, rwkv
from .common import ChannelSpec, MixerSpec

__all__ = ["MixerSpec", "ChannelSpec", "MIXERS", "ARCHITECTURES", "LABELS", "get_mixer", "ATTENTION"]


def _attention_shapes(cfg):
    d, a = cfg.width, cfg.n_heads * cfg.d_head
    return {"w_qkv": (d, 3 * a), "w_o": (a, d)}


#: The transformer's softmax attention (run and initialised by :mod:`lib.models.gpt` itself).
ATTENTION = MixerSpec(
    name="attention", summary="softmax attention (the transformer)", shapes=_attention_shapes, init=None, forward=None
)

MIXERS: dict[str, MixerSpec] = {
    spec.name: spec
    for spec in (
        ATTENTION,
        mlp_mixer.SPEC,
        mamba.SPEC,
        deltanet.SPEC,
        rwkv.SPEC,
        mlstm.SPEC,
        linear_rnn.SPEC,
        mlp_mixer.UNMASKED,
    )
}

#: The seven architectures of paper B's comparison (the unmasked mixer is a control, not one of them).
ARCHITECTURES = ("attention", "mlp_mixer", "mamba", "deltanet", "rwkv", "mlstm", "linear_rnn")

#: Display names.
LABELS = {
    "attention": "Transformer",
    "mlp_mixer": "MLP-Mixer",
    "mamba": "Mamba",
    "deltanet": "Gated DeltaNet",
    "rwkv": "RWKV",
    "mlstm": "mLSTM (xLSTM)",
    "linear_rnn": "linear RNN (LRU)",
    "mlp_mixer_unmasked": "unmasked MLP-Mixer",
}


def get_mixer(name: str) -> MixerSpec:
    """The registered mixer ``name``; a ``ValueError`` naming ``mixer`` for an unknown one."""
    if not isinstance(name, str) or name not in MIXERS:
        raise ValueError(f"mixer must be one of {sorted(MIXERS)}, got {name!r}")
    return MIXERS[name]
