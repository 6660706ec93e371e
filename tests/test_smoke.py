"""lib.core.smoke: the smoke run cuts steps, seeds and token budgets of paper-scale configs by a fixed factor, leaves
everything that decides which code runs, and judges no claim."""

from __future__ import annotations

import dataclasses

import numpy as np

import pytest

import lib
from lib.core.smoke import MIN_TOKENS, cut, pick, smoke_factor


@dataclasses.dataclass(frozen=True)
class Inner:
    steps: int = 3000
    thin: int = 50
    lr: float = 0.05


@dataclasses.dataclass(frozen=True)
class Study:
    sizes: tuple[int, ...] = (8, 16, 32)
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
    data_seeds: tuple[int, ...] = (1, 2, 3)
    steps: int = 10_000
    bias_steps: int = 300
    eval_every: int = 100
    tokens_per_step: int = 8192
    eval_tokens: int = 512
    n_heads: int = 8
    flag: bool = True
    inner: Inner = Inner()
    arms: tuple[Inner, ...] = (Inner(steps=100), Inner(steps=7))

    def __post_init__(self):
        if self.eval_every > self.steps:
            raise ValueError("eval_every > steps")


@dataclasses.dataclass(frozen=True)
class Strict:
    steps: int = 1000

    def __post_init__(self):
        if self.steps % 100:
            raise ValueError("steps must be whole hundreds")


def test_cut_divides_what_decides_how_long_and_keeps_what_decides_what_runs():
    c = cut(Study(), 50)
    assert (c.steps, c.bias_steps, c.eval_every) == (200, 6, 2)
    assert c.seeds == (0, 1, 2) and c.data_seeds == (1, 2, 3)  # at least 3 seeds: medians, intervals, subsets
    assert c.tokens_per_step == MIN_TOKENS and c.eval_tokens == 512  # not below 1,024, nor above the paper's own
    assert c.sizes == (8, 16, 32) and c.n_heads == 8 and c.flag is True  # sizes, widths, switches: as the paper
    assert c.inner == Inner(steps=60, thin=1) and [a.steps for a in c.arms] == [2, 2]  # nested, steps at least 2
    assert cut(Study(), 2).seeds == (0, 1, 2, 3, 4) and cut(Study(), 2).steps == 5000


def test_cut_is_the_identity_without_a_factor_and_validates_the_result():
    s = Study()
    assert cut(s, 0) is s and cut(s, 1) is s and cut(42, 50) == 42
    assert cut((s, s), 10) == (cut(s, 10), cut(s, 10))
    with pytest.raises(ValueError, match="whole hundreds"):  # rebuilt through the config's own validation
        cut(Strict(), 3)
    with pytest.raises(ValueError, match="non-negative"):
        cut(s, -1)


def test_pick_by_scale():
    assert pick(1, 2, fast_mode=True, factor=50) == 1
    assert pick(1, 2**23, fast_mode=False, factor=0) == 2**23  # the paper scale itself
    assert pick(1, 2**23, fast_mode=False, factor=50, count=True) == 2**23 // 50
    assert pick(1, 3, fast_mode=False, factor=50, count=True) == 2  # a count keeps two repetitions
    assert pick(1, 1, fast_mode=False, factor=50, count=True) == 1  # or the paper's one
    assert pick(1, 3, fast_mode=False, factor=50) == 3  # a plain value is not a count unless marked
    assert pick(Study(steps=200), Study(), fast_mode=False, factor=50) == cut(Study(), 50)
    with pytest.raises(ValueError, match="count"):
        pick(1, 2.5, fast_mode=False, factor=50, count=True)


@pytest.mark.parametrize("raw, value", [("", 0), ("0", 0), ("50", 50), (" 2 ", 2)])
def test_smoke_factor_from_the_environment(monkeypatch, raw, value):
    monkeypatch.setenv("BOOK_SMOKE", raw)
    assert smoke_factor() == value


@pytest.mark.parametrize("raw", ["1", "-3", "fast"])
def test_bad_smoke_factor(monkeypatch, raw):
    monkeypatch.setenv("BOOK_SMOKE", raw)
    with pytest.raises(ValueError, match="BOOK_SMOKE"):
        smoke_factor()


def test_a_smoke_run_needs_the_paper_scale_and_judges_no_claim(monkeypatch):
    monkeypatch.setenv("BOOK_SMOKE", "50")
    with pytest.raises(ValueError, match="BOOK_FAST=0"):
        lib.setup("01_copy_task", fast=True)
    ctx = lib.setup("01_copy_task", fast=False)
    assert ctx.smoke == 50 and ctx.scale == "smoke"
    assert ctx.pick(Study(steps=200), Study()) == cut(Study(), 50) == ctx.scaled(Study())
    rec = lib.claim("A-soft-order", 0.9, control=0.1, show=False, robustness=[])  # would be judged at other scales
    assert rec.status == "not run" and "smoke run" in rec.unmet[0] and rec.scale == "smoke"
    rec = lib.claim("A-soft-order", float("nan"), show=False, robustness=[])  # a cut run may measure nothing
    assert rec.measured is None and rec.status == "not run"
    lib.setup("06_sparse_patterns", fast=False)
    rec = lib.claim("B-staircase", None, samples=[], show=False, robustness=[])  # no seed qualified in a cut run
    assert rec.measured is None and rec.status == "not run"
    monkeypatch.setenv("BOOK_SMOKE", "0")
    ctx = lib.setup("01_copy_task", fast=False)
    assert ctx.scale == "full" and ctx.scaled(Study()) == Study()


def test_intervals_of_cut_data_are_nan_only_in_a_smoke_run(monkeypatch):
    bad = np.array([1.0, np.nan, 2.0])
    with pytest.raises(ValueError, match="NaN"):
        lib.bootstrap_interval(bad)
    with pytest.raises(ValueError, match="NaN"):
        lib.group_bootstrap_interval(lambda i: float("nan"), 3)
    with pytest.raises(ValueError, match="at least 2"):
        lib.censored_ratio_interval([3.0], [1.0, 2.0], 10.0)
    monkeypatch.setenv("BOOK_SMOKE", "1000")
    assert np.isnan(lib.censored_ratio_interval([3.0], [1.0, 2.0], 10.0).value)
    assert np.isnan(lib.bootstrap_interval(bad).value) and np.isnan(lib.bootstrap_interval([1.0]).lo)
    assert np.isnan(lib.group_bootstrap_interval(lambda i: float("nan"), 3).hi)
    lib.setup("06_sparse_patterns", fast=False)
    rec = lib.claim("B-bias", 0.5, interval=lib.bootstrap_interval(bad), show=False, robustness=[])
    assert rec.interval is None and rec.status == "not run"


def test_relative_to_divides_by_the_reference_and_survives_its_absence():
    x, y = lib.relative_to([8, 16, 32], [2.0, 4.0, np.nan], at=16)
    np.testing.assert_array_equal(x, [8, 16])
    np.testing.assert_allclose(y, [0.5, 1.0])
    x, y = lib.relative_to([8, 16, 32], [2.0, np.nan, 8.0], at=16)  # no value at the reference
    np.testing.assert_array_equal(x, [8, 32])
    assert np.isnan(y).all()
    with pytest.raises(ValueError):
        lib.relative_to([1, 2], [1.0], at=1)


def test_a_lower_token_floor_cuts_further_but_never_below_itself():
    cfg = lib.MixerComparisonConfig.paper()
    t = cut(cfg, 1000, min_tokens=256).tuning
    assert (t.tokens_per_step, t.eval_tokens) == (256, 256)
    assert cut(cfg, 1000).tuning.tokens_per_step == MIN_TOKENS
    assert t.run_config("mamba", "automaton").batch == 1  # one whole sequence of the automaton (256 tokens)
    with pytest.raises(ValueError, match="min_tokens"):
        cut(cfg, 1000, min_tokens=0)


def test_the_exported_intervals_are_lib_stats_own_outside_a_smoke_run(monkeypatch):
    import lib.core.stats as stats

    monkeypatch.delenv("BOOK_SMOKE", raising=False)
    x, y = np.arange(1.0, 9.0), np.arange(2.0, 7.0)
    assert lib.bootstrap_interval(x) == stats.bootstrap_interval(x)
    assert lib.censored_ratio_interval(x, y, 100.0) == stats.ratio_interval(x, y)
    f = lambda i: float(np.mean(x[i]))  # noqa: E731
    assert lib.group_bootstrap_interval(f, 8) == stats.group_bootstrap_interval(f, 8)
    with pytest.raises(ValueError, match="every group"):
        lib.group_bootstrap_interval(f, 1)  # a real misuse still raises, even in a smoke run
    monkeypatch.setenv("BOOK_SMOKE", "1000")
    with pytest.raises(ValueError, match="every group"):
        lib.group_bootstrap_interval(f, 1)


def test_the_chapter_the_smoke_run_keeps_for_last_exists():
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    after = re.search(r"^SMOKE_AFTER\s*:=\s*(\S+)", (root / "Makefile").read_text(), re.M).group(1)
    assert (root / "chapters" / f"{after}.md").exists()


def test_the_smoke_run_executes_every_chapter_once():
    """``make smoke-paper`` runs the chapters SMOKE_ORDER lists (in that order, on the workers) and then SMOKE_AFTER:
    together exactly the book's chapters, each once (a chapter missing from the list would never be smoke-run)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    text = (root / "Makefile").read_text().replace("\\\n", " ")
    order = re.search(r"^SMOKE_ORDER\s*:=(.*)$", text, re.M).group(1).split()
    after = re.search(r"^SMOKE_AFTER\s*:=\s*(\S+)", text, re.M).group(1)
    chapters = sorted(p.stem for p in (root / "chapters").glob("*.md"))
    assert len(order) == len(set(order)) and after not in order
    assert sorted(order + [after]) == chapters
