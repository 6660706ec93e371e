"""Named hook points: identity modules that make intermediate tensors (scores, attention patterns) observable.

Every model in :mod:`lib.models` routes its attention scores through ``hook_attn_scores`` and its attention pattern
through ``hook_pattern`` (TransformerLens's names; the GPT has the others too, :func:`lib.models.gpt.hook_names`).
:func:`capture` records what passes through a module's hook points during a forward pass:

>>> with capture(model) as cache:          # doctest: +SKIP
...     model(x)
>>> cache["hook_pattern"].shape           # doctest: +SKIP
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import torch
from torch import nn

__all__ = ["HookPoint", "capture", "Recorder"]


class HookPoint(nn.Module):
    """Identity module marking a tensor worth observing; torch forward hooks attach to it."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


@contextmanager
def capture(model: nn.Module, names: tuple[str, ...] | None = None) -> Iterator[dict[str, torch.Tensor]]:
    """Record the outputs of ``model``'s hook points (all, or those whose name ends with one of ``names``).

    Yields a dict ``{module name: detached tensor}`` filled during the forward passes inside the block (a later
    pass overwrites an earlier one).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    available = {n: m for n, m in model.named_modules() if isinstance(m, HookPoint)}
    points = available
    if names is not None:
        points = {n: m for n, m in available.items() if any(n == k or n.endswith("." + k) for k in names)}
        if not points:
            raise ValueError(f"no hook point matches {names}; the model has {sorted(available) or 'none'}")
    cache: dict[str, torch.Tensor] = {}
    handles = []
    for name, module in points.items():

        def hook(_module, _inputs, output, name=name):
            cache[name] = output.detach()

        handles.append(module.register_forward_hook(hook))
    try:
        yield cache
    finally:
        for h in handles:
            h.remove()


class Recorder:
    """Hook functions for :func:`lib.models.gpt.gpt_forward` that keep what passes through the named points.

    ``rec = Recorder(names)``; ``gpt_forward(..., hooks=rec.hooks)``; then ``rec.seen[name]`` holds the tensor of
    the last pass (not detached: the caller decides). The record lives in the object, not in an enclosing scope.
    """

    def __init__(self, names):
        names = tuple(names)
        if not names or not all(isinstance(n, str) for n in names):
            raise ValueError(f"names must be a non-empty sequence of hook names, got {names!r}")
        self.seen: dict[str, torch.Tensor] = {}
        self.hooks = {name: _Keep(self.seen, name) for name in names}


class _Keep:
    def __init__(self, store: dict, name: str):
        self.store, self.name = store, name

    def __call__(self, t: torch.Tensor) -> torch.Tensor:
        self.store[self.name] = t
        return t
