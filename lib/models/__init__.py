"""Models with explicit attention weights behind named hook points."""

from .copy_head import KINDS, CopyHead, attention, check_kind, init_copy_params
from .hooks import HookPoint, capture

__all__ = ["KINDS", "CopyHead", "HookPoint", "attention", "capture", "check_kind", "init_copy_params"]
