"""A set of MAP fits of the copy head in one call: one :func:`lib.train.copy_map.fit_copy_map` per named config.

Chapter 4 fits the same model at three sequence lengths, each on its own grid of :math:`P` placed around that
length's theoretical :math:`P^*`; the grids differ, so the fits cannot share one batched config. This module runs them
as one study keyed like its input (each fit cached on its own, so a repeated call reads them back).
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from .copy_map import CopyMapConfig, CopyMapResult, fit_copy_map

__all__ = ["fit_copy_maps"]


def fit_copy_maps(configs: Mapping, *, device: torch.device | str | None = None) -> dict:
    """:func:`fit_copy_map` of every config in ``configs``, returned under the same keys and in the same order.

    Parameters
    ----------
    configs : mapping of key to CopyMapConfig
        E.g. ``AdamReplicasConfig.bracket_sweeps()``, keyed by sequence length.
    device : torch device, optional

    Returns
    -------
    dict of key to CopyMapResult
    """
    if not isinstance(configs, Mapping) or not configs:
        raise ValueError(f"configs must be a non-empty mapping of CopyMapConfig, got {configs!r}")
    bad = [k for k, c in configs.items() if not isinstance(c, CopyMapConfig)]
    if bad:
        raise ValueError(f"configs must map to CopyMapConfig; not at keys {bad}")
    results: dict[object, CopyMapResult] = {k: fit_copy_map(c, device=device) for k, c in configs.items()}
    return results
