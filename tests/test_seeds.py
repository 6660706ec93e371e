"""lib.core.seeds: BOOK_SEED moves every chapter seed, and nothing at the default."""

from __future__ import annotations

import pytest

import lib
from lib.core.seeds import SEED_STRIDE


def test_default_offset_changes_nothing(monkeypatch):
    monkeypatch.delenv("BOOK_SEED", raising=False)
    cfg = lib.train.CopyMapConfig("softmax", V=8, L=16, P_grid=(10, 20), init_seeds=(0, 1))
    assert lib.seed_offset() == 0 and lib.seed(3) == 3 and lib.core.seeds.seeds((0, 1)) == (0, 1)
    assert lib.reseed(cfg) is cfg  # the same object: the default build's cache keys are untouched


def test_offset_moves_every_seed_field_recursively(monkeypatch):
    monkeypatch.setenv("BOOK_SEED", "2")
    assert lib.seed(3) == 3 + 2 * SEED_STRIDE
    cfg = lib.train.CopyMapConfig("softmax", V=8, L=16, P_grid=(10, 20), init_seeds=(0, 1))
    moved = lib.reseed(cfg)
    assert moved.init_seeds == (2 * SEED_STRIDE, 2 * SEED_STRIDE + 1)
    assert moved.data_seed == cfg.data_seed + 2 * SEED_STRIDE and moved.P_grid == cfg.P_grid
    run = lib.GPTRunConfig(members=(lib.Member(lib.LinearMapTask(8, 2, seed=5), seed=1),))
    m = lib.reseed(run).members[0]
    assert (m.seed, m.task.seed) == (1 + 2 * SEED_STRIDE, 5 + 2 * SEED_STRIDE)  # initialisation and the task itself
    assert lib.reseed(run).eval_seed == run.eval_seed + 2 * SEED_STRIDE  # the held-out data too
    assert lib.reseed(run).members[0].task.S == 8  # nothing else changes


def test_offsets_never_collide_and_are_not_applied_twice(monkeypatch):
    monkeypatch.setenv("BOOK_SEED", "1")
    assert len({lib.seed(s) for s in range(50)} | {s for s in range(50)}) == 100
    with pytest.raises(ValueError, match="below"):
        lib.seed(lib.seed(0))  # applying the offset twice is refused
    cfg = lib.reseed(lib.train.CopyMapConfig("softmax", V=8, L=16, P_grid=(10,), init_seeds=(0,)))
    with pytest.raises(ValueError, match="below"):
        lib.reseed(cfg)


@pytest.mark.parametrize("raw", ["-1", "one", "1.5"])
def test_bad_offset(monkeypatch, raw):
    monkeypatch.setenv("BOOK_SEED", raw)
    with pytest.raises(ValueError, match="BOOK_SEED"):
        lib.seed_offset()


def test_setup_records_the_offset(monkeypatch):
    monkeypatch.setenv("BOOK_SEED", "3")
    ctx = lib.setup("01_copy_task", fast=True)
    assert ctx.seed_offset == 3 and ctx.seed == 3 * SEED_STRIDE
    rec = lib.claim("A-soft-order", 0.9, show=False, robustness=[])
    assert rec.extra["seed_offset"] == 3
    monkeypatch.delenv("BOOK_SEED")
    assert lib.setup("01_copy_task", fast=True).seed_offset == 0
