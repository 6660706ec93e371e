r"""Which open choice decides how long the linear map's plateau lasts (:mod:`lib.studies.plateau_calibration`).

Per arm of the calibration (one choice changed against the trainer's default, or the independent reproduction's
choices together), each seed's plateau exit :math:`t_e` is the first held-out evaluation whose output-bit loss is
below the exit threshold, censored at the step budget :math:`T` (``inf``: still on the plateau). The readout, fixed
before the study was run:

* per arm, how many of its seeds exit within :math:`T`, and the median of :math:`\min(t_e, T)` (a lower bound on the
  median exit when some seeds never exit);
* an arm **shortens** the plateau when at least three quarters of its seeds exit within :math:`T` (the issue's
  criterion for the paper-scale default: 3 of 4 seeds within 5,000 steps) *and* its censored median is at most half
  the default's (half the plateau: a change that decides what a run of the paper's length can show; a shorter median
  alone does not count, since exits at a fixed map spread threefold between seeds in paper B's reference);
* an arm **lengthens** it when the default meets the first condition and the arm's censored median is at least
  twice the default's.

The independent measurements the study is compared with are cited, not computed here
(paper B): at the CPU scale of :meth:`lib.studies.PlateauCalibrationConfig.cpu`, runs with
PyTorch's initialisation and Adam (0.9, 0.98) left the plateau at about 1,100, 2,800 and 900 steps (seeds 0, 1, 2);
at paper B's configuration an independent PyTorch reproduction (PyTorch's initialisation, AdamW with weight decay
0.01) reports plateaus of 800 to 4,200 steps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["INDEPENDENT_EXITS", "PlateauSensitivity", "plateau_sensitivity"]

#: Plateau exits measured independently of this book, per scale of the calibration (cited, not computed here).
INDEPENDENT_EXITS: dict[str, dict] = {
    "cpu": {
        "exits": (1100.0, 2800.0, 900.0),
        "source": "paper B reference, experiment A (d_model 64, 8 heads, MLP 256, 64 sequences/step, lr 3e-3)",
    },
    "paper": {
        "range": (800.0, 4200.0),
        "source": "independent PyTorch reproduction of paper B (d_model 128, 8 heads, AdamW, wd 0.01)",
    },
}


@dataclass(frozen=True)
class PlateauSensitivity:
    """Per arm: the exits per seed (``inf``: never), the count within the budget, the censored median and its
    ratio to the default's, and the verdict (``"shortens"``, ``"lengthens"`` or ``"no clear change"``; the
    module docstring gives the rule)."""

    arms: tuple[str, ...]
    budget: int
    exits: dict[str, np.ndarray]
    exited: dict[str, int]
    median: dict[str, float]
    ratio: dict[str, float]
    verdict: dict[str, str]

    def deciding(self) -> tuple[str, ...]:
        """The arms whose change shortens or lengthens the plateau."""
        return tuple(a for a in self.arms if self.verdict[a] != "no clear change")

    def table(self) -> str:
        """One line per arm: exits per seed, how many exited, the censored median, its ratio to the default's."""
        rows = [f"{'arm':<14} {'exits per seed':<28} {'exited':>6} {'median':>7} {'/ default':>9}  verdict"]
        for a in self.arms:
            ex = " ".join("never" if not np.isfinite(e) else f"{e:.0f}" for e in self.exits[a])
            n = len(self.exits[a])
            rows.append(
                f"{a:<14} {ex:<28} {self.exited[a]:>4}/{n} {self.median[a]:>7.0f} {self.ratio[a]:>9.2f}  "
                f"{self.verdict[a]}"
            )
        return "\n".join(rows)

    def summary(self, prefix: str = "cal") -> dict:
        """Glue values: ``<prefix>_<arm>_exited`` / ``_median`` / ``_verdict`` (dots in arm names become ``p``),
        the budget and the deciding arms."""
        out: dict = {f"{prefix}_budget": self.budget, f"{prefix}_deciding": ", ".join(self.deciding()) or "none"}
        for a in self.arms:
            key = f"{prefix}_{a.replace('.', 'p')}"
            out.update(
                {f"{key}_exited": self.exited[a], f"{key}_median": self.median[a], f"{key}_verdict": self.verdict[a]}
            )
        return out


def plateau_sensitivity(calibration) -> PlateauSensitivity:
    """Read the calibration's exits per arm and judge each arm against ``"default"`` (module docstring).

    Parameters
    ----------
    calibration : lib.studies.PlateauCalibration
        Its arms must include ``"default"``; its ``exited`` and ``median_exit`` (censored at the budget) are read.
    """
    arms = tuple(calibration.config.arms)
    if "default" not in arms:
        raise ValueError(f"the calibration needs a 'default' arm to compare with, got {arms!r}")
    budget = int(calibration.config.steps)
    exits = {a: np.asarray(calibration.exits[a], dtype=float) for a in arms}
    exited = {a: calibration.exited(a) for a in arms}
    median = {a: calibration.median_exit(a) for a in arms}
    ratio = {a: median[a] / median["default"] for a in arms}

    def most(a: str) -> bool:
        return exited[a] >= 0.75 * len(exits[a])

    verdict = {}
    for a in arms:
        if a != "default" and most(a) and ratio[a] <= 0.5:
            verdict[a] = "shortens"
        elif a != "default" and most("default") and ratio[a] >= 2.0:
            verdict[a] = "lengthens"
        else:
            verdict[a] = "no clear change"
    return PlateauSensitivity(
        arms=arms, budget=budget, exits=exits, exited=exited, median=median, ratio=ratio, verdict=verdict
    )
