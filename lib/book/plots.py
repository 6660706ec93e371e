"""Plotting helpers: what chapters share, and every figure a chapter draws through a function (chapters hold no
function definitions; one-off plotting code stays in their hidden cells)."""

from __future__ import annotations

import math
from typing import Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.collections import PolyCollection

from ..train.copy_map import CopyMapResult
from ..models.copy_objective import CopyPrior

__all__ = [
    "attention_heatmap",
    "plot_sweep",
    "mark_interval",
    "legend_for_runs",
    "RUN_COLORS",
    "scan_figure",
    "filtered_at",
    "scan_state",
    "ternary_xy",
    "ternary_panel",
    "action_landscape",
    "action_landscape_figure",
]

RUN_COLORS = {"filtered": "k", "copy": "tab:red", "random": "tab:blue"}


def attention_heatmap(
    ax: plt.Axes,
    A: np.ndarray,
    title: str = "",
    *,
    vmin: float | None = None,
    vmax: float | None = None,
    colorbar: bool = True,
):
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
        ax.text(
            np.sqrt(lo * hi) if ax.get_xscale() == "log" else (lo + hi) / 2,
            0.98,
            text,
            transform=ax.get_xaxis_transform(),
            ha="center",
            va="top",
            fontsize="small",
            color=color,
        )


def relative_to(x, y, at) -> np.ndarray:
    """``y / y[x == at]`` over the finite entries of ``y``, for drawing curves relative to a common point.

    Parameters
    ----------
    x, y : array_like, shape (n,)
        Abscissae and values; entries of ``y`` that are not finite are dropped together with their ``x``.
    at : float
        The abscissa whose value becomes 1.

    Returns
    -------
    (x, y_rel) : tuple of ndarray
        The finite points, with ``y_rel = y / y(at)``; all NaN when ``y(at)`` is missing or not finite (e.g. a
        run cut to a few steps in which no plateau ended), so that the caller draws nothing rather than failing.
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"x and y must be 1-d of one shape, got {x.shape} and {y.shape}")
    ok = np.isfinite(y)
    ref = y[ok & (x == at)]
    if ref.size == 0 or ref[0] == 0:
        return x[ok], np.full(int(ok.sum()), np.nan)
    return x[ok], y[ok] / ref[0]


def legend_for_runs(ax: plt.Axes, extra: Sequence = ()):
    """A legend explaining the faint run markers of :func:`plot_sweep`."""
    from matplotlib.lines import Line2D

    handles = list(extra) + [
        Line2D([], [], color="k", marker="o", ms=3.5, label="filtered (lowest $U$)"),
        Line2D([], [], color=RUN_COLORS["random"], marker="o", lw=0, alpha=0.5, label="random inits"),
        Line2D([], [], color=RUN_COLORS["copy"], marker="o", lw=0, alpha=0.5, label="copy init"),
    ]
    ax.legend(handles=handles)


def scan_figure(scan, title: str) -> None:
    """A coarse-to-fine transition scan (``scan.coarse``, ``scan.fine``, ``scan.bracket``): target attention and test
    loss on the coarse grid (left, the bracket marked) and inside the bracket (right)."""
    fig, axes = plt.subplots(2, 2, figsize=(9, 5.6), sharex="col")
    lo, hi = scan.bracket
    for row, field, ylabel in (
        (0, "target", "target attention $\\langle A,S\\rangle/L$"),
        (1, "test_loss", "test loss (MSE per position)"),
    ):
        plot_sweep(axes[row, 0], scan.coarse, field)
        mark_interval(axes[row, 0], lo, hi, "fine grid" if row == 0 else None)
        plot_sweep(axes[row, 1], scan.fine, field, logx=False)
        axes[row, 0].set_ylabel(ylabel)
    for ax in axes[0]:
        ax.set_xlabel("")
    axes[0, 0].set_title("coarse grid")
    axes[0, 1].set_title(f"fine grid inside [{lo}, {hi}]")
    legend_for_runs(axes[1, 1])
    fig.suptitle(title)
    plt.show()


def jump_figure(soft, lin):
    """The book's opening figure: target attention of the best network (filtered to the lowest :math:`U`) against
    the number of training sequences, coarse and fine grids merged, for a softmax head (left: a jump) and a linear
    one (right: a gradual rise). Returns the figure without showing it (the landing page pastes it)."""
    fig, axes = plt.subplots(1, 2, figsize=(8.5, 3.0), sharey=False)
    for ax, scan, title, color in (
        (axes[0], soft, "softmax head: a jump", "tab:red"),
        (axes[1], lin, "linear head: a gradual rise", "tab:blue"),
    ):
        P = np.concatenate([scan.coarse.P, scan.fine.P])
        y = np.concatenate([scan.coarse.filtered("target"), scan.fine.filtered("target")])
        order = np.argsort(P, kind="stable")
        ax.plot(P[order], y[order], "-o", color=color, ms=2.5, lw=1.2)
        ax.set_xscale("log")
        ax.set_xlabel("training sequences $P$")
        ax.set_title(title)
    axes[0].set_ylabel("attention on the previous token")
    fig.tight_layout()
    plt.close(fig)
    return fig


def filtered_at(result: CopyMapResult, P: float, field: str = "A"):
    """``(P_i, value)``: the recorded size ``P_i`` nearest to ``P`` and ``field`` there, filtered to the lowest U."""
    i = int(np.argmin(np.abs(np.asarray(result.P) - P)))
    return result.P[i], result.filtered(field)[i]


def scan_state(scans: dict, kind: str, index: int) -> None:
    """The filtered attention matrix of ``scans[kind]``'s coarse grid at ``index`` (clipped to the grid), beside its
    target-attention curve with that size marked (chapter 1's slider)."""
    res = scans[kind].coarse
    index = min(index, len(res.P) - 1)
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(9, 3.4))
    attention_heatmap(ax0, res.filtered("A")[index], f"{kind}, $P={res.P[index]}$")
    ax1.plot(res.P, res.filtered("target"), "k-o", ms=3)
    ax1.plot(res.P[index], res.filtered("target")[index], "o", color="tab:orange", ms=9)
    ax1.set_xscale("log")
    ax1.set_xlabel("training sequences $P$")
    ax1.set_ylabel("target attention")
    plt.show()


def ternary_xy(bary) -> np.ndarray:
    """Barycentric coordinates ``(..., 3)`` on the 2-simplex to the plane ``(..., 2)`` of an equilateral triangle
    with corners (0, 0), (1, 0), (1/2, sqrt(3)/2)."""
    bary = np.asarray(bary)
    if bary.shape[-1] != 3:
        raise ValueError(f"bary must end with 3 barycentric coordinates, got shape {bary.shape}")
    return np.stack([bary[..., 1] + bary[..., 2] / 2, bary[..., 2] * math.sqrt(3) / 2], -1)


def ternary_panel(ax: plt.Axes, bins, values, title: str, cmap: str, vmin: float, vmax: float, label: str):
    """Triangular bins ``(n, 3, 3)`` (corners in barycentric coordinates) coloured by ``values`` ``(n,)``."""
    coll = PolyCollection(ternary_xy(bins), array=np.asarray(values), cmap=cmap, edgecolors="face", linewidths=0.2)
    coll.set_clim(vmin, vmax)
    ax.add_collection(coll)
    ax.set_xlim(-0.03, 1.03)
    ax.set_ylim(-0.05, 0.92)
    ax.set_aspect("equal")
    ax.axis("off")
    for xy, name, ha in (
        ((0, -0.04), "$a_1 = 1$", "left"),
        ((1, -0.04), "$a_2 = 1$", "right"),
        ((0.5, 0.88), "$a_3 = 1$", "center"),
    ):
        ax.text(*xy, name, ha=ha, va="center", fontsize="small")
    ax.set_title(title)
    ax.figure.colorbar(coll, ax=ax, fraction=0.046, pad=0.02, label=label)
    return coll


def action_landscape(ax: plt.Axes, P: float, L: int, V: int, T: float = 1.0) -> None:
    """The reduced softmax action :math:`\\mathcal S(d) - \\min` over its variable ``d`` (in units of ln L),
    the MAP (solid) and Bayesian (dashed) forms, at temperature ``T``."""
    from ..theory.action import softmax_action  # here: lib.theory imports lib, which imports this module

    prior = CopyPrior(T=T)
    d = torch.linspace(-0.2, 1.1, 500, dtype=torch.float64) * np.log(L)
    top = 5.0
    for m, ls in (("map", "-"), ("bayes", "--")):
        S = softmax_action(d, P, V, L, prior=prior, method=m).numpy()
        ax.plot(d / np.log(L), S - S.min(), ls, label=m)
        top = max(top, float(np.percentile(S - S.min(), 45)))
    ax.set_ylim(-0.05 * top, top)
    ax.set_xlabel("$d$ / ln $L$")
    ax.set_title(f"$L={L}$, $V={V}$, $T={T:g}$, $P={P:.0f}$", fontsize="small")


def action_landscape_figure(P: float = 300.0, L: int = 32, V: int = 8, T: float = 1.0) -> None:
    """One :func:`action_landscape` panel as its own figure (chapter 3's sliders)."""
    fig, ax = plt.subplots(figsize=(6, 3.2))
    action_landscape(ax, P, L, V, T)
    ax.set_ylabel("$\\mathcal{S}(d) - \\min$")
    ax.legend()
    plt.show()
