r"""The staircase: does each output bit of the linear map drop when a head's attention lands on its keys?

Paper B's Fig. 3 shows the per-token losses of one run leaving the plateau one at a time, each when some head puts
its attention on that row's true keys. For a stack of :math:`E` seeds on one map with :math:`S` output bits, let
:math:`t^\text{learned}_{ei}` be the first evaluation at which bit :math:`i`'s held-out loss is below the *learned*
threshold, and :math:`t^\text{focus}_{ei}` the first at which some head puts at least ``focus`` (one half) of its
attention at that bit's query on the bit's true keys (``inf``: never, within the budget). The staircase is an order
*inside* a run, so the measure is the Spearman rank correlation of :math:`t^\text{learned}_{e\cdot}` and
:math:`t^\text{focus}_{e\cdot}` over the bits of seed :math:`e` where both are finite, for every seed with at least
three such bits. Pooled over seeds the same correlation mixes that order with the spread between runs (a late seed
is late in both). The control pairs each seed's learned steps with the focus steps of the *previous* seed
(:math:`e - 1`, cyclically): every marginal is kept, the link between a bit and its own head is gone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import spearmanr

from ..measures.curves import first_below

__all__ = ["Staircase", "staircase"]


@dataclass(frozen=True)
class Staircase:
    """The staircase measures of one seed stack (module docstring); steps are ``inf`` where never reached.

    Attributes
    ----------
    learned_at, focus_at, leave_at : (E, S)
        Per seed and output bit: first step below the learned threshold, first step with a focused head, first step
        below ``leave`` (the bit leaves :math:`\\ln 2`).
    pooled_rho : float
        Rank correlation of learned and focus steps over all seeds' bits where both are finite (``nan`` if < 3).
    within, shuffled : (n,) arrays
        Per seed with at least three such bits: the within-seed correlation, and the control (another seed's focus
        steps); finite values only.
    spread : (E,)
        Per seed, the range of its finite learned steps (0 with fewer than two).
    show : int
        The seed whose bits are learned most spread out in time.
    single : float
        That seed's median time for one bit from leaving :math:`\\ln 2` to learned, at least one evaluation interval.
    """

    learned_at: np.ndarray
    focus_at: np.ndarray
    leave_at: np.ndarray
    pooled_rho: float
    within: np.ndarray
    shuffled: np.ndarray
    spread: np.ndarray
    show: int
    single: float

    @property
    def n_learned(self) -> int:
        """Bits (over all seeds) that are learned within the budget."""
        return int(np.isfinite(self.learned_at).sum())

    @property
    def n_paired(self) -> int:
        """Learned bits for which a focused head appears (the pooled correlation's sample)."""
        return int((np.isfinite(self.learned_at) & np.isfinite(self.focus_at)).sum())

    def summary(self) -> dict:
        """The scalars the chapter reports, by name (for ``lib.glue_all`` and printing)."""
        return dict(
            n_seeds=len(self.learned_at),
            rho=self.pooled_rho,
            within_rho=float(np.median(self.within)),
            n_within=len(self.within),
            shuffled_rho=float(np.median(self.shuffled)),
            n_rows_learned=self.n_paired,
            n_learned=self.n_learned,
            show_seed=self.show,
            show_spread=float(self.spread[self.show]),
            show_single=self.single,
        )


def _rho(a, b) -> float:
    return float(spearmanr(a, b).statistic)


def staircase(run, *, learned: float, focus: float = 0.5, leave: float = 0.9 * math.log(2)) -> Staircase:
    """The staircase measures of a stack of seeds on one linear map (module docstring).

    Parameters
    ----------
    run : a recorded run with ``steps (K,)``, ``token_loss (K, E, S)``, ``mass (K, E, H, S)`` (attention on the true
        keys, per head and output query) and ``config.eval_every``.
    learned : float
        A bit counts as learned below this held-out loss.
    focus : float
        A head is focused on a bit when this share of its attention at the bit's query is on the bit's keys.
    leave : float
        A bit has left the plateau below this loss (default :math:`0.9 \\ln 2`); must exceed ``learned``.
    """
    token_loss, mass = np.asarray(run.token_loss, dtype=float), np.asarray(run.mass, dtype=float)
    if token_loss.ndim != 3 or mass.ndim != 4 or mass.shape[:2] + mass.shape[3:] != token_loss.shape:
        raise ValueError(f"need token_loss (K, E, S) and mass (K, E, H, S), got {token_loss.shape}, {mass.shape}")
    if not 0 < focus <= 1:
        raise ValueError(f"focus must be in (0, 1], got {focus!r}")
    if not leave > learned:
        raise ValueError(f"leave ({leave!r}) must exceed learned ({learned!r})")
    E = token_loss.shape[1]
    learned_at = first_below(run.steps, token_loss, learned)  # (E, S)
    focus_at = first_below(run.steps, -mass.max(2), -focus)  # (E, S): some head has >= focus on the keys
    leave_at = first_below(run.steps, token_loss, leave)
    ok = np.isfinite(learned_at) & np.isfinite(focus_at)
    pooled = _rho(learned_at[ok], focus_at[ok]) if ok.sum() > 2 else float("nan")
    within = np.array([_rho(learned_at[e, ok[e]], focus_at[e, ok[e]]) for e in range(E) if ok[e].sum() >= 3])
    other = np.roll(np.arange(E), 1)
    both = ok & ok[other]
    shuffled = np.array(
        [_rho(learned_at[e, both[e]], focus_at[other[e], both[e]]) for e in range(E) if both[e].sum() >= 3]
    )
    spread = np.array([np.ptp(r[np.isfinite(r)]) if np.isfinite(r).sum() > 1 else 0.0 for r in learned_at])
    show = int(np.argmax(spread))
    with np.errstate(invalid="ignore"):  # inf - inf for bits never learned
        duration = learned_at[show] - leave_at[show]
    finite = duration[np.isfinite(duration)]
    single = max(float(np.median(finite)) if finite.size else float("nan"), run.config.eval_every)
    return Staircase(
        learned_at=learned_at,
        focus_at=focus_at,
        leave_at=leave_at,
        pooled_rho=pooled,
        within=within[np.isfinite(within)],
        shuffled=shuffled[np.isfinite(shuffled)],
        spread=spread,
        show=show,
        single=single,
    )
