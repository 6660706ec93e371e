"""Models with explicit attention weights behind named hook points."""

from .copy_head import KINDS, CopyHead, attention, check_kind, init_copy_params
from .hooks import HookPoint, capture

__all__ = ["KINDS", "CopyHead", "HookPoint", "attention", "capture", "check_kind", "init_copy_params"]
from .gpt import GPT, GPTConfig, causal_bias, gpt_forward, init_gpt_params

__all__ += ["GPT", "GPTConfig", "causal_bias", "gpt_forward", "init_gpt_params"]
from .mixers import ARCHITECTURES, LABELS, MIXERS, MixerSpec, get_mixer
from .attribution import input_attribution

__all__ += ["ARCHITECTURES", "LABELS", "MIXERS", "MixerSpec", "get_mixer", "input_attribution"]
from .attribution import input_sensitivity

__all__ += ["input_sensitivity"]
from .gpt_fast import PRECISIONS, train_logits

__all__ += ["PRECISIONS", "train_logits"]
