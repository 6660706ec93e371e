"""Suites: the tiny mini-suite built here, resumable builds, verified loading, clear errors, the hub failing fast,
and the analysis on the tiny suite (scan and bisection agree)."""

from __future__ import annotations

import json
import shutil
import time

import numpy as np
import pytest

from lib.lm import analysis, suite as suite_mod
from lib.lm.minisuite import TINY_SUITE, build_suite, checkpoint_schedule, train_run
from lib.lm.results import choose_pair, export_pair
from lib.lm.suite import HubUnreachable, LocalSuite, SuiteIndexError, hub_reachable, open_suite, pythia_steps


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    build_suite(TINY_SUITE, root)
    return LocalSuite(root)


def test_schedules_are_pythia_like():
    steps = pythia_steps()
    assert len(steps) == 154 and steps[:3] == (0, 1, 2) and steps[10] == 512 and steps[11] == 1000 and steps[-1] == 143000
    assert checkpoint_schedule(3000, 64, 50)[:9] == (0, 1, 2, 4, 8, 16, 32, 64, 100)
    assert checkpoint_schedule(40, 8, 8) == (0, 1, 2, 4, 8, 16, 24, 32, 40)


def test_tiny_suite_has_the_hub_layout(tiny):
    assert tiny.sizes == ("30k", "60k") and tiny.seeds == (0, 1) and tiny.steps[-1] == 40
    assert (tiny.root / "tiny-30k" / "step8" / "model.safetensors").is_file()  # seed 0: no suffix, as on the hub
    assert (tiny.root / "tiny-60k-seed1" / "step40" / "tokenizer.json").is_file()
    model = tiny.load_model("60k", 1, 40)
    assert model.config.num_hidden_layers == 2 and model.config._attn_implementation == "patchable"


@pytest.mark.parametrize("args, match", [
    (("90k", 0, 8), r"size '90k' is not in the suite; it has sizes \['30k', '60k'\]"),
    (("30k", 7, 8), r"seed 7 is not in the suite; it has seeds \[0, 1\]"),
    (("30k", 0, 9), r"step \(revision\) 9 is not in the suite; it has 9 steps: \[0, 1, 2, 4, 8"),
])
def test_unknown_size_seed_or_step_lists_what_the_suite_has(tiny, args, match):
    with pytest.raises(ValueError, match=match):
        tiny.load_model(*args)


def test_corrupt_or_missing_checkpoint_is_reported_by_path(tiny, tmp_path):
    root = tmp_path / "copy"
    shutil.copytree(tiny.root, root)
    weights = root / "tiny-30k" / "step16" / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-10] ^= 0xFF
    weights.write_bytes(bytes(data))
    s = LocalSuite(root)
    with pytest.raises(SuiteIndexError, match=r"tiny-30k/step16: file model.safetensors is corrupt"):
        s.load_model("30k", 0, 16)
    s.load_model("30k", 0, 8)  # the others still load
    (root / "tiny-30k" / "step4" / "config.json").unlink()
    with pytest.raises(SuiteIndexError, match=r"tiny-30k/step4: file config.json is missing"):
        s.load_model("30k", 0, 4)
    shutil.rmtree(root / "tiny-60k-seed1" / "step2")
    with pytest.raises(SuiteIndexError, match=r"checkpoint folder\(s\) missing.*tiny-60k-seed1/step2"):
        LocalSuite(root)
    with pytest.raises(SuiteIndexError, match="no suite index"):
        LocalSuite(tmp_path / "nowhere")


def test_a_killed_build_resumes_to_identical_checkpoints(tiny, tmp_path):
    assert train_run(TINY_SUITE, "30k", 1, tmp_path, stop_after=10) is None  # "killed" after the step-16 checkpoint
    run = tmp_path / "tiny-30k-seed1"
    assert (run / "_resume.pt").is_file() and (run / "step16").is_dir() and not (run / "step24").exists()
    summary = train_run(TINY_SUITE, "30k", 1, tmp_path)
    assert summary["files"] == tiny.files["tiny-30k-seed1"]
    assert not (run / "_resume.pt").exists()


def test_hub_fails_fast_and_auto_falls_back_to_the_local_suite(tiny, monkeypatch):
    t0 = time.perf_counter()
    ok, why = hub_reachable(timeout=0.5, host="10.255.255.1")  # unroutable
    assert not ok and "did not answer" in why and time.perf_counter() - t0 < 3
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(HubUnreachable, match="local mini-suite"):
        open_suite("hub")
    s = open_suite("auto", root=tiny.root)
    assert s.source == "local" and s.prefix == "tiny"
    with pytest.raises(ValueError, match="root"):
        open_suite("auto")


def test_analysis_scan_and_bisection_agree_on_the_tiny_suite(tiny):
    scan = analysis.analyze_suite(analysis.AnalysisConfig(tiny.digest, n_prompts=6), tiny)
    bis = analysis.analyze_suite(analysis.AnalysisConfig(tiny.digest, n_prompts=6, mode="bisect", curve_every=100), tiny)
    assert scan.p_target.shape == (2, 2, 4, 6, 9) and not np.isnan(scan.p_target).any()
    assert np.array_equal(scan.index, bis.index)
    assert (bis.n_evaluated < scan.n_evaluated).all()
    mono = scan.linear_index == scan.index
    assert mono.mean() > 0.5
    steps, never = scan.seed_steps("rep")
    assert steps.shape == (2, 2) and never.dtype == bool
    assert set(scan.losses) == {"30k/0", "60k/0", "30k/1", "60k/1"}
    with pytest.raises(ValueError, match="suite_digest"):
        analysis.analyze_suite(analysis.AnalysisConfig("0" * 64, n_prompts=2), tiny)


def test_pair_export_is_a_two_step_local_suite(tiny, tmp_path):
    files = export_pair(tiny, "60k", 1, 16, 24, out=tmp_path / "pair")
    pair = LocalSuite(tmp_path / "pair")
    assert pair.steps == (16, 24) and pair.seeds == (1,) and len(files) == 13
    assert pair.load_model("60k", 1, 24).config.hidden_size == 48


def test_missing_or_stale_results_fail_with_the_regenerating_command(tmp_path):
    from lib.cache import Cache
    from lib.lm import results

    cache = Cache(tmp_path / "cache", data_dir=tmp_path, enabled=True)
    with pytest.raises(RuntimeError, match="regenerate with `python -m lib.lm.minisuite build"):
        results.load_analysis(analysis.AnalysisConfig("f" * 64), root=tmp_path, cache=cache)


def test_committed_results_are_consistent(tmp_path):
    from lib.cache import Cache
    from lib.lm import results

    if not results.COMMITTED_INDEX.is_file():
        pytest.skip("no committed mini-suite results")
    index = json.loads(results.COMMITTED_INDEX.read_text())
    assert index["format"] == suite_mod.INDEX_FORMAT
    pair = LocalSuite(results.PAIR_DIR)
    # the committed analysis only (no local cache, no local suite): stale after a change to lib/lm -> regenerate
    res = results.load_analysis(root=tmp_path, cache=Cache(tmp_path / "cache", enabled=True))
    size, seed, old, new = choose_pair(res)
    assert (pair.sizes, pair.seeds, pair.steps) == ((size,), (seed,), (old, new))
    assert pair.files == {k: {s: index["files"][k][s] for s in pair.files[k]} for k in pair.files}


def test_committed_analysis_is_read_with_the_cache_turned_off(tmp_path):
    from lib.cache import Cache
    from lib.lm import results

    if not results.COMMITTED_INDEX.is_file():
        pytest.skip("no committed mini-suite results")
    res = results.load_analysis(root=tmp_path, cache=Cache(tmp_path / "cache", enabled=False))
    assert res.source == "local" and res.p_target.shape[:2] == (3, 5)
