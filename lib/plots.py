"""Plotting helpers shared by several chapters (one-off plots stay in the chapters)."""

from __future__ import annotations

from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np

from .train.copy_map import CopyMapResult

__all__ = ["attention_heatmap", "plot_sweep", "mark_interval", "legend_for_runs", "RUN_COLORS"]

RUN_COLORS = {"filtered": "k", "copy": "tab:red", "random": "tab:blue"}


def attention_heatmap(ax: plt.Axes, A: np.ndarray, title: str = "", *, vmin: float | None = None, vmax: float | None = None, colorbar: bool = True):
    """Show an attention matrix ``A`` ``(L, L)``: rows = query position ``i``, columns = key position ``j``."""
    A = np.asarray(A)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be a square matrix, got shape {A.shape}")
    im = ax.imshow(A, cmap="magma", vmin=vmin, vmax=vmax, interpolation="nearest")
    ax.set_xlabel("key position $j$")
    ax.set_ylabel("query position $i$")
    ax.grid(False)
    if title:
        ax.set_title(title)
    if colorbar:
        ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="$A_{ij}$")
    return im


def plot_sweep(
    ax: plt.Axes,
    result: CopyMapResult,
    field: str,
    *,
    label: str | None = None,
    color: str = "k",
    show_runs: bool = True,
    logx: bool = True,
    marker: str = "o",
):
    """Plot ``field`` (e.g. ``"target"``, ``"test_loss"``) of a MAP sweep against ``P``.

    The filtered (lowest-U) run is a line; with ``show_runs`` every individual run is a faint marker, red for the
    copy-initialised one, so coexisting minima are visible as two rows of markers.
    """
    values = getattr(result, field)
    if values.shape[:2] != result.U.shape:
        raise ValueError(f"{field} is not a per-run field of the sweep")
    if show_runs:
        for k, lab in enumerate(result.inits):
            c = RUN_COLORS["copy"] if lab == "copy" else RUN_COLORS["random"]
            ax.scatter(result.P, values[:, k], s=14, color=c, alpha=0.35, lw=0, zorder=2)
    ax.plot(result.P, result.filtered(field), marker=marker, ms=3.5, color=color, lw=1.5, label=label, zorder=3)
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel("training sequences $P$")
    return ax


def mark_interval(ax: plt.Axes, lo: float, hi: float, text: str | None = None, color: str = "tab:orange"):
    """Shade the interval ``[lo, hi]`` on the x axis (e.g. the bracket of a transition)."""
    ax.axvspan(lo, hi, color=color, alpha=0.15, lw=0)
    if text:
        ax.text(np.sqrt(lo * hi) if ax.get_xscale() == "log" else (lo + hi) / 2, 0.98, text, transform=ax.get_xaxis_transform(),
                ha="center", va="top", fontsize="small", color=color)


def legend_for_runs(ax: plt.Axes, extra: Sequence = ()):
    """A legend explaining the faint run markers of :func:`plot_sweep`."""
    from matplotlib.lines import Line2D

    handles = list(extra) + [
        Line2D([], [], color="k", marker="o", ms=3.5, label="filtered (lowest $U$)"),
        Line2D([], [], color=RUN_COLORS["random"], marker="o", lw=0, alpha=0.5, label="random inits"),
        Line2D([], [], color=RUN_COLORS["copy"], marker="o", lw=0, alpha=0.5, label="copy init"),
    ]
    ax.legend(handles=handles)
