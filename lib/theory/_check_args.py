"""Argument checks shared by the numerical checks of chapter 2 (private)."""

from __future__ import annotations

import math
import numbers

import numpy as np
import torch

from ..tasks.copy import check_size
from ..models.copy_objective import CopyPrior
from ._validate import F64, MODELS, as_f64

_DEFAULT = CopyPrior()
_EXACT_MODELS = MODELS[:3]  # softmax, linear_v0, linear_v2


# ----------------------------------------------------------------------------------------------- validation
def _count(name: str, value: object, minimum: int) -> int:
    return check_size(name, value, minimum)


def _positive(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value)) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def _square(name: str, M: object, *, batch: bool = True) -> torch.Tensor:
    if not isinstance(M, (torch.Tensor, np.ndarray)):
        raise TypeError(f"{name} must be a torch.Tensor or numpy array, got {type(M).__name__}")
    M = as_f64(M)
    if M.dim() < 2 or M.shape[-1] != M.shape[-2] or M.shape[-1] < 2 or (not batch and M.dim() != 2):
        want = "(..., L, L)" if batch else "(L, L)"
        raise ValueError(f"{name} must have shape {want} with L >= 2, got {tuple(M.shape)}")
    if not bool(torch.isfinite(M).all()):
        raise ValueError(f"{name} must be finite")
    return M


def _check_counts(counts: object, L: int, lead: int) -> torch.Tensor:
    if not isinstance(counts, torch.Tensor):
        raise TypeError(f"counts must be a torch.Tensor, got {type(counts).__name__}")
    if counts.dim() != 4 + lead or tuple(counts.shape[lead:lead + 2]) != (L, L) or counts.shape[-1] != counts.shape[-2]:
        want = "(n_P, L, L, V, V)" if lead else "(L, L, V, V)"
        raise ValueError(f"counts must have shape {want} with L = {L}, got {tuple(counts.shape)}")
    if counts.shape[-1] < 2 or bool((counts < 0).any()):
        raise ValueError("counts must be non-negative pair counts with V >= 2")
    return counts.to(F64)


def _beta_arg(model: str, beta) -> torch.Tensor | None:
    if beta is None:
        return None
    if model != "linear_v2":
        raise ValueError(f"beta is only used by model='linear_v2', got model={model!r}")
    return as_f64(beta)


