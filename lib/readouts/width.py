r"""What the width study (:func:`lib.load_width_study`) says, read off its held-out loss curves.

Three parts, each a table over seeds:

* the linear map's grid of head counts :math:`H` by head sizes :math:`d_\text{head}`: the final output-bit loss of
  every seed, its mean over seeds, and how many seeds *emerge* (first evaluation below the linear map's exit);
* the many-rule automaton at a fixed width, thin against thick heads, and at a fixed head count, 1 to 4 layers: per
  configuration the plateau of every seed (first evaluation below the automaton's exit, ``inf`` if never), its median
  and the mean final loss.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..measures.curves import first_below

__all__ = ["WidthSummary", "width_summary"]


@dataclass(frozen=True)
class WidthSummary:
    """The width study's tables (module docstring); automaton dicts are keyed by head count or by depth.

    Attributes
    ----------
    heads, d_heads : tuples
        The grid's axes.
    grid_final : (len(d_heads), len(heads), seeds)
        Final output-bit loss of every seed.
    grid_emerged : (len(d_heads), len(heads)) int
        Seeds that emerge within the budget.
    thin_exits, depth_exits : {H: (seeds,)}, {layers: (seeds,)}
        The automaton's plateau ends.
    thin_last, depth_last : {H: (seeds,)}, {layers: (seeds,)}
        The automaton's final loss on the predictable cells.
    """

    heads: tuple
    d_heads: tuple
    grid_final: np.ndarray
    grid_emerged: np.ndarray
    thin_exits: dict
    thin_last: dict
    depth_exits: dict
    depth_last: dict

    @property
    def grid_loss(self) -> np.ndarray:
        """``(len(d_heads), len(heads))``: the final loss averaged over seeds."""
        return self.grid_final.mean(2)

    @property
    def n_seeds(self) -> int:
        return self.grid_final.shape[2]

    def plateau(self, part: str) -> dict:
        """Median plateau over seeds per configuration of ``part`` (``"thin"`` or ``"depth"``)."""
        return {k: float(np.median(v)) for k, v in self._part(part)[0].items()}

    def final(self, part: str) -> dict:
        """Mean final loss over seeds per configuration of ``part`` (``"thin"`` or ``"depth"``)."""
        return {k: float(np.mean(v)) for k, v in self._part(part)[1].items()}

    def _part(self, part: str) -> tuple[dict, dict]:
        if part not in ("thin", "depth"):
            raise ValueError(f"part must be 'thin' or 'depth', got {part!r}")
        return (self.thin_exits, self.thin_last) if part == "thin" else (self.depth_exits, self.depth_last)

    def delay(self, shallow: int, deep: int) -> np.ndarray:
        """Per seed, the deep model's plateau end minus the shallow one's; 0 where neither leaves the plateau."""
        a, b = self.depth_exits[shallow], self.depth_exits[deep]
        both = np.isinf(a) & np.isinf(b)
        with np.errstate(invalid="ignore"):
            return np.where(both, 0.0, b - a)

    def __str__(self) -> str:
        rows = [
            "linear map, output-bit loss at the end, mean over seeds (emerged/seeds); rows d_head, columns H:",
            "        " + "".join(f"H={H:<7d}" for H in self.heads),
        ]
        for i, dh in enumerate(self.d_heads):
            rows.append(
                f"d={dh:<4d}  "
                + "".join(
                    f"{self.grid_loss[i, j]:.3f}({self.grid_emerged[i, j]}/{self.n_seeds}) "
                    for j in range(len(self.heads))
                )
            )
        for part, label in (("thin", "automaton, heads at a fixed width"), ("depth", "automaton, layers")):
            plateau, final = self.plateau(part), self.final(part)
            rows.append(
                f"{label} (median plateau, mean final loss): "
                + ", ".join(f"{k}: ({plateau[k]:g}, {final[k]:.3f})" for k in plateau)
            )
        return "\n".join(rows)


def width_summary(study, lm_exit: float, ca_exit: float) -> WidthSummary:
    """Read the width ``study`` (a :class:`lib.studies.width_study.WidthStudy`) at the two tasks' exits."""
    sc = study.config
    if not (np.isfinite(lm_exit) and np.isfinite(ca_exit)):
        raise ValueError(f"the exits must be finite, got {lm_exit!r}, {ca_exit!r}")
    final = np.array([[study.grid(H, dh).pred_loss[-1] for H in sc.heads] for dh in sc.d_heads])
    exits = [
        [first_below(study.grid(H, dh).steps, study.grid(H, dh).pred_loss, lm_exit) for H in sc.heads]
        for dh in sc.d_heads
    ]
    emerged = np.isfinite(np.array(exits)).sum(2)  # (d_head, H)
    thin = {H: study.thin(H) for H in sc.ca_heads}
    depth = {n: study.depth(n) for n in sc.ca_depths}
    return WidthSummary(
        heads=tuple(sc.heads),
        d_heads=tuple(sc.d_heads),
        grid_final=final,
        grid_emerged=emerged,
        thin_exits={H: first_below(c.steps, c.pred_loss, ca_exit) for H, c in thin.items()},
        thin_last={H: np.asarray(c.pred_loss[-1]) for H, c in thin.items()},
        depth_exits={n: first_below(c.steps, c.pred_loss, ca_exit) for n, c in depth.items()},
        depth_last={n: np.asarray(c.pred_loss[-1]) for n, c in depth.items()},
    )
