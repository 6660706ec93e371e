"""lib.studies.sparsity_study: the run plan, the gap and its control on known numbers, a tiny end-to-end run."""

from __future__ import annotations

import numpy as np
import pytest

from lib.studies.sparsity_study import SparsityStudy, SparsityStudyConfig, sparsity_study

TINY = dict(
    grid=((4, (1, 2, 3, 4)),),
    seeds=(0, 1),
    steps=4,
    n_heads=2,
    d_head=2,
    tokens_per_step=32,
    eval_every=2,
    eval_tokens=64,
)


def test_plan_members_ordered_s_then_seed_and_constructors():
    cfg = SparsityStudyConfig(**TINY)
    run = cfg.run(4)
    assert [(m.task.s, m.seed) for m in run.members] == [(s, k) for s in (1, 2, 3, 4) for k in (0, 1)]
    assert all(m.task.seed == cfg.map_seed for m in run.members)  # one map per (S, s), the seeds vary the rest
    assert SparsityStudyConfig.fast(seed_offset=5).seeds == (5, 6, 7)
    paper = SparsityStudyConfig.paper()
    assert dict(paper.grid)[32] == tuple(range(1, 33)) and paper.steps == 10_000 and len(paper.seeds) == 3


def test_gap_is_the_middle_above_the_worse_end():
    cfg = SparsityStudyConfig(**TINY)
    st = SparsityStudy(cfg)
    #                    s=1   s=2   s=3   s=4 (s=S: never counted)
    st.final[4] = np.array([[0.3, 0.35], [0.69, 0.6], [0.4, 0.3], [0.1, 0.1]])
    st.initial[4] = np.full((4, 2), 0.69)
    assert np.allclose(st.gap(4), [0.69 - 0.4, 0.6 - 0.35]) and np.allclose(st.control_gap(4), 0)


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(grid=((8, (1, 2, 8)),)), "include 1, S/2 and S-1"),
        (dict(grid=((4, (1, 2, 3, 5)),)), "1..S"),
        (dict(seeds=(0,)), "two"),
        (dict(grid=()), "grid"),
    ],
)
def test_bad_configs(kw, match):
    with pytest.raises(ValueError, match=match):
        SparsityStudyConfig(**{**TINY, **kw})


def test_tiny_end_to_end():
    st = sparsity_study(SparsityStudyConfig(**TINY))
    assert st.final[4].shape == st.initial[4].shape == (4, 2)
    assert np.isfinite(st.gap(4)).all() and np.abs(st.control_gap(4)).max() < 0.1  # untrained: no gap
