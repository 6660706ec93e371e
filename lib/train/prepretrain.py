r"""Pre-pretraining: start a run from the weights of an earlier run on another task (stage 1 -> stage 2).

Paper B reports preliminary gains from pre-pretraining on Dyck strings or cellular automata; its setup is in no
source we could read, so everything here is ours. A stage-2 member of :class:`lib.train.gpt_train.Member` takes
``init=Transfer(source, member, what)``: the stage-1 stack ``source`` (a :class:`~lib.train.gpt_train.GPTRunConfig`,
trained or loaded through the results cache) lends member ``member``'s final weights, and the rest of the model
keeps its fresh initialisation:

* ``what="full"``: every parameter except the token embedding and the unembedding (``tok``, ``w_u``, ``b_u``), which
  depend on the vocabulary (stage 1 may have another one) and are re-initialised;
* ``what="mixer"``: only the token-mixing sublayer of every block, its LayerNorm included (for the transformer: the
  attention weights ``w_qkv``, ``w_o`` and ``ln1``).

Both stages must share the architecture (width, heads, depth, token mixer); with ``"full"`` the positional embeddings
transfer too, so stage 1 needs at least stage 2's context (a longer one lends its first positions).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..core.validate import check_size

__all__ = ["Transfer", "TRANSFER_KINDS", "transferred_names", "apply_transfers"]

TRANSFER_KINDS = ("full", "mixer")
VOCAB_PARAMS = ("tok", "w_u", "b_u")


@dataclass(frozen=True)
class Transfer:
    """Initialise a member from member ``member`` of the trained stack ``source`` (a frozen config).

    Attributes
    ----------
    source : GPTRunConfig
        The stage-1 run.
    member : int
        Which of its members.
    what : {"full", "mixer"}
        What is transferred (module docstring).
    """

    source: Any
    member: int = 0
    what: str = "full"

    def __post_init__(self) -> None:
        if not (hasattr(self.source, "members") and hasattr(self.source, "model")):
            raise ValueError(f"source must be a GPTRunConfig, got {type(self.source).__name__}")
        check_size("member", self.member, 0)
        if self.member >= len(self.source.members):
            raise ValueError(f"member must be < {len(self.source.members)} (the source's members), got {self.member}")
        if self.what not in TRANSFER_KINDS:
            raise ValueError(f"what must be one of {TRANSFER_KINDS}, got {self.what!r}")


def transferred_names(cfg, what: str) -> tuple[str, ...]:
    """Names of the stacked parameters that ``what`` transfers, for the model config ``cfg``."""
    if what not in TRANSFER_KINDS:
        raise ValueError(f"what must be one of {TRANSFER_KINDS}, got {what!r}")
    if what == "full":
        return tuple(k for k in cfg.shapes() if k not in VOCAB_PARAMS)
    names = ("ln1_g", "ln1_b", *cfg.mixer_names())
    return tuple(f"b{layer}_{k}" for layer in range(cfg.n_layers) for k in names)


def apply_transfers(params: dict[str, torch.Tensor], cfg, transfers: dict[int, Transfer], sources: dict) -> None:
    """Overwrite, in place, the slices of the members in ``transfers`` (``{member index: Transfer}``).

    ``sources`` maps each ``Transfer.source`` to its trained run's parameters ``{name: (E_src, ...) array}``.
    """
    for e, tr in transfers.items():
        src = sources[tr.source]
        src_cfg = tr.source.model()
        if src_cfg.mixer != cfg.mixer:
            raise ValueError(f"source mixer {src_cfg.mixer!r} differs from the stage-2 mixer {cfg.mixer!r}")
        for name in transferred_names(cfg, tr.what):
            value = torch.as_tensor(np.asarray(src[name][tr.member])) if name in src else None
            if name == "pos" and value is not None and value.shape[0] >= params[name].shape[1]:
                value = value[: params[name].shape[1]]  # a longer stage-1 context: its first positions
            if value is None or tuple(value.shape) != tuple(params[name].shape[1:]):
                raise ValueError(
                    f"source parameter {name} does not fit the stage-2 model (the same architecture "
                    f"and at least its context are needed): {None if value is None else tuple(value.shape)} "
                    f"vs {tuple(params[name].shape[1:])}"
                )
            params[name][e] = value.to(dtype=params[name].dtype, device=params[name].device)
