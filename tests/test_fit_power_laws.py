"""lib.fit_power_laws: a set of power-law fits in one call equals the loop of single fits it replaces."""

from __future__ import annotations

import numpy as np
import pytest

import lib
from lib import theory


def test_recovers_exact_power_laws():
    L = np.array([16.0, 32, 64, 128, 256])
    fits = lib.fit_power_laws({"a": 3 * L**1.5, "b": 0.5 * L**-1.0}, L=L)
    assert list(fits) == ["a", "b"]
    assert fits["a"]["L"] == pytest.approx(1.5) and fits["a"]["prefactor"] == pytest.approx(3)
    assert fits["b"]["L"] == pytest.approx(-1.0) and fits["b"]["prefactor"] == pytest.approx(0.5)


def test_equals_the_loop_with_masks():
    rng = np.random.default_rng(0)
    L = np.geomspace(16, 1024, 7)
    curves = {m: np.exp(rng.normal(size=L.size)) * L for m in ("map", "bayes")}
    where = {"map": L >= 32, "bayes": (L >= 32) & (L <= 512)}
    fits = lib.fit_power_laws(curves, where=where, L=L)
    for m, y in curves.items():
        assert fits[m] == theory.fit_power_law(y[where[m]], L=L[where[m]])
    one = lib.fit_power_laws(curves, where=L >= 64, L=L)  # one mask for every curve
    assert one["bayes"] == theory.fit_power_law(curves["bayes"][L >= 64], L=L[L >= 64])


def test_two_variables_broadcast():
    VV, LL = np.meshgrid([4.0, 8, 16], [8.0, 16, 32, 64], indexing="ij")
    fit = lib.fit_power_laws({"x": 2 * LL**1.5 * VV**0.5}, L=LL, V=VV)["x"]
    assert fit["L"] == pytest.approx(1.5) and fit["V"] == pytest.approx(0.5)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(curves={}, L=[1, 2]),
        dict(curves={"a": [1.0, 2.0]}),
        dict(curves={"a": [1.0, 2.0, 4.0]}, where={"b": [True] * 3}, L=[1, 2, 3]),
        dict(curves={"a": [1.0, -2.0, 4.0]}, L=[1, 2, 3]),
    ],
)
def test_rejects_bad_input(kwargs):
    curves = kwargs.pop("curves")
    with pytest.raises(ValueError):
        lib.fit_power_laws(curves, **kwargs)
