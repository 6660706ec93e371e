"""Coarse-to-fine scan of a MAP sweep: locate the steepest change on a coarse grid, then resolve it on a fine one.

The fine grid tells a jump from a steep but continuous rise: a discontinuity keeps nearly all of the change in one
fine step (:func:`lib.measures.grids.jump_fraction` near 1), a continuous rise spreads it (about ``1/n_fine``).
Nothing about where the transition is expected is given to the scan: the bracket comes from the coarse data.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .copy_map import CopyMapConfig, CopyMapResult, fit_copy_map
from ..measures.grids import count_minima, jump_fraction, refine_grid, steepest_step

__all__ = ["TransitionScan", "scan_transition"]


@dataclass
class TransitionScan:
    """A coarse sweep, and a fine sweep inside its steepest step of ``field``.

    Attributes
    ----------
    coarse, fine : CopyMapResult
    field : str
        The per-run field that located the bracket (``"target"`` by default).
    atol, gtol : float
        Tolerances of :meth:`minima` (order-parameter distance, gradient norm of a converged run).
    """

    coarse: CopyMapResult
    fine: CopyMapResult
    field: str
    atol: float
    gtol: float

    @property
    def bracket(self) -> tuple[int, int]:
        """The coarse step with the largest change of ``field`` (the fine grid spans it)."""
        k = steepest_step(self.coarse.filtered(self.field))
        return int(self.coarse.P[k]), int(self.coarse.P[k + 1])

    def step(self, field: str | None = None) -> tuple[int, int]:
        """The fine step with the largest change of ``field`` (default: the scan's field)."""
        k = steepest_step(self.fine.filtered(field or self.field))
        return int(self.fine.P[k]), int(self.fine.P[k + 1])

    def jump_fraction(self, field: str | None = None) -> float:
        """Fraction of the change of the filtered ``field`` across the bracket that happens in one fine step."""
        return jump_fraction(self.fine.filtered(field or self.field))

    def jump(self, field: str | None = None) -> float:
        """Size of the largest single fine step of the filtered ``field``."""
        return float(np.abs(np.diff(self.fine.filtered(field or self.field))).max())

    @property
    def P_star(self) -> float:
        """Midpoint of the fine step with the largest change: the measured transition point."""
        lo, hi = self.step()
        return 0.5 * (lo + hi)

    def minima(self) -> np.ndarray:
        """Number of distinct converged minima (clustered on ``field``) at each fine-grid ``P``."""
        values = getattr(self.fine, self.field)
        return np.array(
            [
                count_minima(values[i], self.fine.grad_norm[i], atol=self.atol, gtol=self.gtol)
                for i in range(len(self.fine.P))
            ]
        )


def scan_transition(
    cfg: CopyMapConfig,
    *,
    n_fine: int = 21,
    field: str = "target",
    atol: float = 0.02,
    gtol: float = 1e-3,
    device=None,
    cache=None,
) -> TransitionScan:
    """Fit ``cfg`` on its (coarse) grid, then on ``n_fine`` integers inside the steepest coarse step of ``field``.

    ``device`` and ``cache`` are passed to :func:`fit_copy_map` (CPU and the default cache unless given; chapters
    pass ``ctx.device``).
    """
    if not isinstance(cfg, CopyMapConfig):
        raise TypeError(f"cfg must be a CopyMapConfig, got {type(cfg).__name__}")
    if len(cfg.P_grid) < 2:
        raise ValueError("the coarse grid needs at least 2 values of P")
    if field not in ("target", "test_loss", "train_loss", "U"):
        raise ValueError(f"field must be one of target, test_loss, train_loss, U; got {field!r}")
    if isinstance(n_fine, bool) or not isinstance(n_fine, int) or n_fine < 3:
        raise ValueError(f"n_fine must be an int >= 3, got {n_fine!r}")
    if not (atol > 0 and gtol > 0):
        raise ValueError(f"atol and gtol must be > 0, got {atol}, {gtol}")
    grid = tuple(sorted(cfg.P_grid))
    coarse = fit_copy_map(
        dataclasses.replace(cfg, P_grid=grid), cache=cache, device=device, desc=f"{cfg.kind}: coarse grid"
    )
    k = steepest_step(coarse.filtered(field))
    fine_grid = refine_grid(int(coarse.P[k]), int(coarse.P[k + 1]), n_fine)
    if len(fine_grid) < 3:
        raise ValueError(f"the steepest coarse step [{coarse.P[k]}, {coarse.P[k + 1]}] is too narrow to refine")
    fine = fit_copy_map(
        dataclasses.replace(cfg, P_grid=fine_grid), cache=cache, device=device, desc=f"{cfg.kind}: fine grid"
    )
    return TransitionScan(coarse=coarse, fine=fine, field=field, atol=atol, gtol=gtol)
