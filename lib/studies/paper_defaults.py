"""The trainer's choices at paper scale that paper B leaves open, as the plateau calibration set them (chapter 6).

Paper B states its linear map's architecture and budget but not its initialisation. At the CPU scale of independent
runs of the same map, :mod:`lib.studies.plateau_calibration` finds that the initialisation's scale decides whether
seeds leave the plateau within the budget (chapter 6 shows the exits per arm), and PyTorch's module defaults are
the initialisation both independent measurements of the map used. The linear map's paper-scale studies therefore
start from PyTorch's defaults. The automaton was not calibrated, so its runs keep the trainer's default; nothing
at FAST scale changes.
"""

from __future__ import annotations

__all__ = ["LINEAR_MAP_INIT"]

#: ``GPTRunConfig.init`` of every linear-map run at paper scale (``"torch"``: ``nn.Linear`` / ``nn.Embedding``'s own).
LINEAR_MAP_INIT = "torch"
