"""lib.train.copy_map_set: a set of MAP fits in one call equals the loop it replaces."""

from __future__ import annotations

import numpy as np
import pytest

from lib.train import AdamConfig, CopyMapConfig, fit_copy_map
from lib.train.copy_map_set import fit_copy_maps


def _cfg(L, P_grid):
    return CopyMapConfig("softmax", V=4, L=L, P_grid=P_grid, init_seeds=(0,), adam=AdamConfig(lr=0.05, steps=40))


def test_equals_the_loop_and_keeps_keys_and_order():
    configs = {8: _cfg(8, (20, 60)), 6: _cfg(6, (10, 30, 90))}
    got = fit_copy_maps(configs)
    assert list(got) == [8, 6]
    for k, c in configs.items():
        want = fit_copy_map(c, cache=False)
        assert np.array_equal(got[k].P, want.P)
        assert np.allclose(got[k].filtered("target"), want.filtered("target"))


@pytest.mark.parametrize("bad", [{}, [1, 2], {1: "not a config"}])
def test_rejects_bad_input(bad):
    with pytest.raises(ValueError):
        fit_copy_maps(bad)
