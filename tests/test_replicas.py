"""lib.studies.scan_replicas and lib.studies.adam_replicas: the same measures on more data sets (configs, summaries,
replica == direct call, the committed FAST results)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import lib
from lib.studies.adam_replicas import AdamReplicasConfig, adam_measures, adam_replicas, bracket_measures
from lib.studies.scan_replicas import SUMMARY_FIELDS, ScanReplicasConfig, scan_replicas, scan_summary

ADAM = lib.AdamConfig(lr=0.05, steps=150, lr_final=1e-3)
TINY_SCAN = lib.train.CopyMapConfig("softmax", V=4, L=6, P_grid=(10, 40, 160), init_seeds=(0,), adam=ADAM)


def test_scan_replicas_repeat_each_scan_on_each_data_set_as_a_direct_scan_would():
    cfg = ScanReplicasConfig(scans=(TINY_SCAN,), data_seeds=(3, 5), n_fine=4)
    rep = scan_replicas(cfg, cache=False)
    direct = scan_summary(lib.scan_transition(dataclasses.replace(TINY_SCAN, data_seed=5), n_fine=4, cache=False))
    assert rep.summaries[0][1] == direct  # replica == the scan run by hand on that data set
    assert set(direct) == set(SUMMARY_FIELDS) and 0.0 <= direct["jump"] <= 1.0 + 1e-9
    assert direct["n_fine"] >= 3 and 0 <= direct["coexist"] <= direct["n_fine"]
    live = lib.scan_transition(TINY_SCAN, n_fine=4, cache=False)
    samples = rep.samples(0, "P_star", live)
    assert samples.shape == (3,) and samples[0] == live.P_star and samples[2] == direct["P_star"]
    with pytest.raises(ValueError, match="name"):
        rep.values(0, "nope")
    with pytest.raises(ValueError, match="data set"):
        rep.samples(0, "jump", lib.scan_transition(dataclasses.replace(TINY_SCAN, data_seed=3), n_fine=4, cache=False))


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(data_seeds=()), "data_seeds"),
        (dict(data_seeds=(1, 1)), "distinct"),
        (dict(data_seeds=(0,)), "own data_seed"),
        (dict(n_fine=2), "n_fine"),
    ],
)
def test_bad_scan_replicas_configs(kw, match):
    with pytest.raises(ValueError, match=match):
        ScanReplicasConfig(scans=(TINY_SCAN,), **kw)


def test_chapter_configs_and_reseed_move_every_data_set(monkeypatch):
    base, adam = ScanReplicasConfig.chapter1(), AdamReplicasConfig.fast()
    assert [c.kind for c in base.scans] == ["softmax", "linear", "softmax"] and {c.data_seed for c in base.scans} == {0}
    assert ScanReplicasConfig.chapter1(fast=False).n_fine > base.n_fine
    assert AdamReplicasConfig.paper().adam.steps > adam.adam.steps
    monkeypatch.setenv("BOOK_SEED", "1")
    moved, moved_adam = lib.reseed(base), lib.reseed(adam)
    assert moved.data_seeds == tuple(s + 100_000 for s in base.data_seeds)
    assert {c.data_seed for c in moved.scans} == {100_000} and moved_adam.data_seed == 100_000
    assert moved_adam.scan_init_seeds == (100_000,) and moved_adam.sweeps()[0].data_seed == 100_000
    with pytest.raises(ValueError, match="data_seed"):
        AdamReplicasConfig(data_seeds=(0, 1))


def test_adam_measures_and_brackets_on_tiny_fits():
    cfg = AdamReplicasConfig(
        V=4,
        L_soft=6,
        L_lin=6,
        P_soft=(20, 80, 320),
        P_lin=(5, 40, 320),
        init_seeds=(0,),
        L_scan=(6,),
        adam=ADAM,
        data_seeds=(1,),
    )
    soft, lin = (lib.train.fit_copy_map(c, cache=False) for c in cfg.sweeps())
    m = adam_measures(soft, lin)
    assert m["dev"] == max(m["dev_soft"], m["dev_lin"], m["loss_soft"], m["loss_lin"]) >= 0
    assert 0.0 <= m["coverage"] <= 1.0 + 1e-9
    with pytest.raises(ValueError, match="softmax and a linear"):
        adam_measures(lin, soft)
    fits = {L: lib.train.fit_copy_map(c, cache=False) for L, c in cfg.bracket_sweeps().items()}
    b = bracket_measures(fits)
    lo, hi = b["per_L"][6]["lo"], b["per_L"][6]["hi"]
    assert lo < hi and lo in fits[6].P and b["bracketed"] == int(lo < b["per_L"][6]["theory"] < hi)
    rep = adam_replicas(cfg, cache=False)
    soft1, lin1 = (lib.train.fit_copy_map(c, cache=False) for c in cfg.sweeps(1))
    assert rep.measures[0] == adam_measures(soft1, lin1)  # replica == the measures of a direct fit on data set 1
    assert rep.values("bracketed").shape == (1,)
    # the chapter's own data set: the same fits the chapter would run itself
    assert np.array_equal(rep.chapter["softmax"].A, soft.A) and np.array_equal(rep.chapter["linear"].target, lin.target)
    assert rep.chapter["brackets"].keys() == fits.keys() and np.array_equal(rep.chapter["brackets"][6].U, fits[6].U)


def test_the_committed_fast_replicas_are_current():
    scans = lib.load_scan_replicas(ScanReplicasConfig.chapter1())  # fails if stale against the code
    assert len(scans.summaries) == 3 and all(len(row) == 4 for row in scans.summaries)
    adam = lib.load_adam_replicas(AdamReplicasConfig.fast())
    assert adam.values("dev").shape == (4,)
    assert set(adam.chapter) == {"softmax", "linear", "brackets"} and set(adam.chapter["brackets"]) == {16, 32, 64}
