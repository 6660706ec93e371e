r"""Chapter 1's transition scans repeated on independent data sets: the spread of each scan measure over data draws.

One scan (:func:`lib.train.scan.scan_transition`) trains on one stream of training sequences (``data_seed``), so its
jump fraction, its count of coexisting minima and its :math:`P^*` are one draw each. This study repeats every scan
of a chapter on the data streams ``data_seeds`` (the initialisation seeds stay the chapter's) and keeps, per scan
and data set, the summary of :func:`scan_summary`. With the chapter's own live scan (its ``data_seed``) these are
the samples whose bootstrap interval a claim needs: for a measure :math:`m` and data sets :math:`d = 0, \dots, D`,

.. math:: \hat m = \operatorname{median}_d\, m_d, \qquad \text{90 \% interval: percentile bootstrap over } d.

At FAST scale the four extra data sets cost about 6 CPU-minutes, more than chapter 1's budget, so at the default
seed they are committed (``python -m lib.studies.scan_replicas --publish``) and chapter 1 loads them; at other seed
offsets (``BOOK_SEED``, which moves ``data_seeds`` too) and at paper scale they are computed, so the robustness runs
check fresh data sets.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..core.cache import Cache, cached
from ..core.progress import progress
from ._study import load_or_compute, publish_main
from ..core.validate import check_size
from ..train.copy_map import CopyMapConfig
from ..train.ensemble import AdamConfig
from ..measures.grids import geometric_grid
from ..train.scan import TransitionScan, scan_transition

__all__ = [
    "SUMMARY_FIELDS",
    "ScanReplicasConfig",
    "ScanReplicas",
    "scan_summary",
    "scan_replicas",
    "load_scan_replicas",
    "REGENERATE",
]

REGENERATE = "python -m lib.studies.scan_replicas --publish"

#: What :func:`scan_summary` keeps of one scan.
SUMMARY_FIELDS = ("jump", "loss_jump", "P_star", "coexist", "n_fine")


def scan_summary(scan: TransitionScan) -> dict:
    """The measures the claims read off one scan.

    ``jump``: share of the filtered target attention's rise across the bracket in the largest fine step
    (:meth:`TransitionScan.jump_fraction`); ``loss_jump``: the same share for the test loss; ``P_star``: midpoint of
    the largest fine step; ``coexist``: fine-grid ``P`` with at least two distinct converged minima; ``n_fine``: the
    fine grid's length.
    """
    if not isinstance(scan, TransitionScan):
        raise TypeError(f"scan must be a TransitionScan, got {type(scan).__name__}")
    return dict(
        jump=float(scan.jump_fraction()),
        loss_jump=float(scan.jump_fraction("test_loss")),
        P_star=float(scan.P_star),
        coexist=int((scan.minima() >= 2).sum()),
        n_fine=int(len(scan.fine.P)),
    )


@dataclass(frozen=True)
class ScanReplicasConfig:
    """The scans to repeat and the data sets to repeat them on (the frozen config is the cache key).

    ``scans``: the chapter's scan configs (their own ``data_seed`` is replaced by each of ``data_seeds``);
    ``n_fine``: points of each fine grid, as in the chapter.
    """

    scans: tuple[CopyMapConfig, ...]
    data_seeds: tuple[int, ...] = (1, 2, 3, 4)
    n_fine: int = 21

    def __post_init__(self) -> None:
        if not self.scans or not all(isinstance(c, CopyMapConfig) for c in self.scans):
            raise ValueError("scans must be a non-empty tuple of CopyMapConfig")
        if not self.data_seeds or len(set(self.data_seeds)) != len(self.data_seeds):
            raise ValueError(f"data_seeds must be a non-empty tuple of distinct seeds, got {self.data_seeds!r}")
        for s in self.data_seeds:
            check_size("data seed", s, 0)
        if any(c.data_seed in self.data_seeds for c in self.scans):
            raise ValueError("a scan's own data_seed is among data_seeds: the replicas would repeat the chapter's data")
        check_size("n_fine", self.n_fine, 3)

    @classmethod
    def fast(cls) -> "ScanReplicasConfig":
        """Chapter 1's FAST scans and data sets (committed)."""
        return cls.chapter1(fast=True)

    @classmethod
    def paper(cls) -> "ScanReplicasConfig":
        """Chapter 1's paper-scale scans and data sets."""
        return cls.chapter1(fast=False)

    @classmethod
    def chapter1(cls, fast: bool = True) -> "ScanReplicasConfig":
        """Chapter 1's three scans (softmax L = 32, linear L = 16, softmax L = 16) at FAST or paper scale."""
        adam = AdamConfig(lr=0.05, steps=3000 if fast else 6000, lr_final=1e-4)
        seeds = (0, 1, 2) if fast else (0, 1, 2, 3, 4)
        scans = (
            CopyMapConfig(
                "softmax", V=8, L=32, P_grid=geometric_grid(100, 1000, 12 if fast else 24), init_seeds=seeds, adam=adam
            ),
            CopyMapConfig(
                "linear", V=8, L=16, P_grid=geometric_grid(5, 5000, 16 if fast else 32), init_seeds=seeds, adam=adam
            ),
            CopyMapConfig(
                "softmax", V=8, L=16, P_grid=geometric_grid(30, 1000, 12 if fast else 24), init_seeds=seeds, adam=adam
            ),
        )
        return cls(scans=scans, n_fine=21 if fast else 41)


@dataclass(frozen=True)
class ScanReplicas:
    """``summaries[i][j]``: :func:`scan_summary` of scan ``i`` on data set ``data_seeds[j]``."""

    config: ScanReplicasConfig
    summaries: tuple[tuple[dict, ...], ...]

    def values(self, scan: int, name: str) -> np.ndarray:
        """``(len(data_seeds),)`` values of the summary field ``name`` for scan number ``scan``."""
        if name not in SUMMARY_FIELDS:
            raise ValueError(f"name must be one of {SUMMARY_FIELDS}, got {name!r}")
        if not 0 <= scan < len(self.summaries):
            raise ValueError(f"scan must be in [0, {len(self.summaries)}), got {scan!r}")
        return np.array([s[name] for s in self.summaries[scan]], dtype=float)

    def samples(self, scan: int, name: str, live: TransitionScan) -> np.ndarray:
        """The chapter's ``live`` scan's value first, then the replicas': the samples of a claim's interval."""
        if live.coarse.config.data_seed in self.config.data_seeds:
            raise ValueError("the live scan's data set is one of the replicas'")
        return np.concatenate([[scan_summary(live)[name]], self.values(scan, name)])


@cached
def scan_replicas(config: ScanReplicasConfig) -> ScanReplicas:
    """Run every scan of ``config`` on every data set of ``config.data_seeds`` (module docstring)."""
    summaries = []
    for i, cfg in enumerate(config.scans):
        row = []
        for d in progress(config.data_seeds, desc=f"scan {i + 1} of {len(config.scans)}: data sets"):
            scan = scan_transition(dataclasses.replace(cfg, data_seed=d), n_fine=config.n_fine)
            row.append(scan_summary(scan))
        summaries.append(tuple(row))
    return ScanReplicas(config=config, summaries=tuple(summaries))


def load_scan_replicas(
    config: ScanReplicasConfig, *, compute: bool = False, cache: Cache | None = None
) -> ScanReplicas:
    """The committed replicas for ``config`` (verified against the code that made them), else computed if ``compute``."""
    if not isinstance(config, ScanReplicasConfig):
        raise TypeError(f"config must be a ScanReplicasConfig, got {type(config).__name__}")
    return load_or_compute(
        scan_replicas, config, compute=compute, regenerate=REGENERATE, cost="about 6 CPU-minutes", cache=cache
    )


if __name__ == "__main__":
    publish_main(
        "lib.studies.scan_replicas",
        "scan_replicas",
        lambda m: m.ScanReplicasConfig.fast(),
        REGENERATE,
        "Repeat chapter 1's transition scans on four more data sets and optionally commit them.",
    )
