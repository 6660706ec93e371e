"""Input validation shared by the theory modules (private).

Every public theory function validates its arguments here, so the error messages are uniform: a ``ValueError``
that names the argument and the allowed range, or a ``TypeError`` for an argument of the wrong type.
"""

from __future__ import annotations

import numbers

import numpy as np
import torch

from ..tasks.copy import check_size
from ..models.copy_objective import CopyPrior

F64 = torch.float64

#: Reduced models of the theory (see :mod:`lib.theory.action`): softmax, the i.i.d. linear model V0
#: (``A = G``), the book's linear model V2 (``A = (G + beta J)/L``) and V2 with the spike+bulk treatment of G.
MODELS = ("softmax", "linear_v0", "linear_v2", "linear_v2_bulk")
#: ``"bayes"``: W integrated out, with the Occam log-det term; ``"map"``: W profiled out (no log-det term).
METHODS = ("bayes", "map")


def check_choice(name: str, value: object, allowed: tuple[str, ...]) -> str:
    """A string from ``allowed`` (``TypeError`` for a non-string, ``ValueError`` for an unknown string)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, one of {allowed}; got {type(value).__name__}")
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    return value


def check_method(method: object) -> str:
    return check_choice("method", method, METHODS)


def check_model(model: object, allowed: tuple[str, ...] = MODELS) -> str:
    return check_choice("model", model, allowed)


def check_prior(prior: object) -> CopyPrior:
    """A :class:`lib.train.CopyPrior` (its own constructor checks that every variance and T is > 0)."""
    if not isinstance(prior, CopyPrior):
        raise TypeError(f"prior must be a lib.train.CopyPrior, got {type(prior).__name__}")
    return prior


def make_prior(T: object, sigma_G2: object, sigma_W2: object, sigma_beta2: object = 1.0) -> CopyPrior:
    """Build a :class:`CopyPrior`; raises ``ValueError`` naming ``T``/``sigma_*2`` unless finite and > 0."""
    return CopyPrior(T=T, sigma_G2=sigma_G2, sigma_W2=sigma_W2, sigma_beta2=sigma_beta2)  # type: ignore[arg-type]


def check_sizes(V: object, L: object) -> tuple[torch.Tensor, torch.Tensor]:
    """Vocabulary size and sequence length: integers (or integer arrays) >= 2, returned as float64 tensors."""
    out = []
    for name, value in (("V", V), ("L", L)):
        if isinstance(value, (np.ndarray, torch.Tensor, list, tuple)):
            arr = np.asarray(value.cpu() if isinstance(value, torch.Tensor) else value)
            if arr.size == 0:
                raise ValueError(f"{name} must not be empty")
            if arr.dtype == bool or not np.issubdtype(arr.dtype, np.number):
                raise ValueError(f"{name} must hold integers >= 2, got dtype {arr.dtype}")
            if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
                raise ValueError(f"{name} must hold integers >= 2, got {arr.ravel()[:5]}")
            if arr.min() < 2:
                raise ValueError(f"{name} must be >= 2, got {arr.min()}")
            out.append(torch.as_tensor(arr, dtype=F64))
        else:
            out.append(torch.tensor(float(check_size(name, value, 2)), dtype=F64))
    return out[0], out[1]


def check_P(P: object, name: str = "P") -> torch.Tensor:
    """Training-set size(s): finite numbers > 0 (real-valued P is allowed in the large-P theory)."""
    if isinstance(P, bool):
        raise TypeError(f"{name} must be a number or an array of numbers, got bool")
    if isinstance(P, numbers.Real):
        arr = torch.tensor(float(P), dtype=F64)
    elif isinstance(P, (np.ndarray, torch.Tensor, list, tuple)):
        arr = torch.as_tensor(np.asarray(P.detach().cpu() if isinstance(P, torch.Tensor) else P, dtype=float), dtype=F64)
    else:
        raise TypeError(f"{name} must be a number or an array of numbers, got {type(P).__name__}")
    if arr.numel() == 0:
        raise ValueError(f"{name} must not be empty")
    if not bool(torch.isfinite(arr).all()) or not bool((arr > 0).all()):
        raise ValueError(f"{name} must be finite and > 0, got min {float(arr.min())}")
    return arr


def as_f64(x: object) -> torch.Tensor:
    """A float64 tensor view of ``x`` (keeps autograd history when ``x`` already is a float64 tensor)."""
    if isinstance(x, torch.Tensor):
        return x if x.dtype == F64 else x.to(F64)
    return torch.as_tensor(np.asarray(x, dtype=float), dtype=F64)


def scalar_or_array(x: np.ndarray, scalar: bool):
    """A Python float for scalar input, else the array (the public transition functions return either)."""
    return float(np.asarray(x).reshape(())) if scalar else x
