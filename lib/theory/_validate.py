"""Input validation shared by the theory modules (private; the generic checks are :mod:`lib.core.validate`).

Every public theory function validates its arguments here, so the error messages are uniform: a ``ValueError``
that names the argument and the allowed range, or a ``TypeError`` for an argument of the wrong type.
"""

from __future__ import annotations

import numbers

import numpy as np
import torch

from ..core.validate import check_choice, check_positive, check_size  # noqa: F401 (re-exported to the theory)
from ..models.copy_objective import CopyPrior

F64 = torch.float64

#: Reduced models of the theory (see :mod:`lib.theory.action`): softmax, the i.i.d. linear model V0
#: (``A = G``), the book's linear model V2 (``A = (G + beta J)/L``) and V2 with the spike+bulk treatment of G.
MODELS = ("softmax", "linear_v0", "linear_v2", "linear_v2_bulk")
#: ``"bayes"``: W integrated out, with the Occam log-det term; ``"map"``: W profiled out (no log-det term).
METHODS = ("bayes", "map")


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
        arr = torch.as_tensor(
            np.asarray(P.detach().cpu() if isinstance(P, torch.Tensor) else P, dtype=float), dtype=F64
        )
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


# the numerical checks of chapter 2
_DEFAULT = CopyPrior()
_EXACT_MODELS = MODELS[:3]  # softmax, linear_v0, linear_v2


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
    if (
        counts.dim() != 4 + lead
        or tuple(counts.shape[lead : lead + 2]) != (L, L)
        or counts.shape[-1] != counts.shape[-2]
    ):
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
