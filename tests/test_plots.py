"""lib.book.plots: the figure helpers chapters call (their geometry and the values they draw)."""

from __future__ import annotations

from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import lib  # noqa: E402
from lib.book.plots import ternary_xy  # noqa: E402


def test_ternary_corners_and_centre_map_to_the_triangle():
    corners = ternary_xy(np.eye(3))
    assert np.allclose(corners, [[0, 0], [1, 0], [0.5, np.sqrt(3) / 2]])
    assert np.allclose(ternary_xy(np.full(3, 1 / 3)), corners.mean(0))  # the barycentre
    with pytest.raises(ValueError, match="barycentric"):
        ternary_xy(np.ones((4, 2)))


def test_ternary_panel_draws_one_polygon_per_bin():
    bins = np.array([np.eye(3), [[0.5, 0.5, 0], [0, 1, 0], [0, 0.5, 0.5]]])  # (2, 3, 3)
    fig, ax = plt.subplots()
    coll = lib.ternary_panel(ax, bins, [1.0, 2.0], "t", "viridis", 0, 2, "density")
    assert len(coll.get_paths()) == 2 and np.allclose(coll.get_array(), [1, 2])
    plt.close(fig)


def test_filtered_at_picks_the_nearest_recorded_size():
    A = np.arange(3 * 4).reshape(3, 2, 2).astype(float)
    result = SimpleNamespace(P=np.array([10, 100, 1000]), filtered=lambda field: {"A": A}[field])
    P, value = lib.filtered_at(result, 130)
    assert P == 100 and np.array_equal(value, A[1])


def test_action_landscape_plots_both_forms_shifted_to_a_zero_minimum(monkeypatch):
    monkeypatch.setattr(plt, "show", lambda: None)
    fig, ax = plt.subplots()
    lib.action_landscape(ax, 300.0, 32, 8)
    lines = ax.get_lines()
    assert [ln.get_label() for ln in lines] == ["map", "bayes"]
    for ln in lines:
        y = ln.get_ydata()
        assert np.isfinite(y).all() and y.min() == pytest.approx(0.0, abs=1e-12)
    plt.close(fig)
