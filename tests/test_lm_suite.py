"""Suites: the tiny mini-suite built here, resumable builds, verified loading, clear errors, the hub failing fast,
the exported checkpoint pair, and the committed BPE-suite results read back without their checkpoints."""

from __future__ import annotations

import shutil
import time

import pytest

from lib.lm.minisuite import TINY_SUITE, build_suite, checkpoint_schedule, train_run
from lib.lm.results import export_pair
from lib.lm.suite import HubUnreachable, LocalSuite, SuiteIndexError, hub_reachable, open_suite, pythia_steps


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    build_suite(TINY_SUITE, root)
    return LocalSuite(root)


def test_schedules_are_pythia_like():
    steps = pythia_steps()
    assert (
        len(steps) == 154 and steps[:3] == (0, 1, 2) and steps[10] == 512 and steps[11] == 1000 and steps[-1] == 143000
    )
    assert checkpoint_schedule(3000, 64, 50)[:9] == (0, 1, 2, 4, 8, 16, 32, 64, 100)
    assert checkpoint_schedule(40, 8, 8) == (0, 1, 2, 4, 8, 16, 24, 32, 40)


def test_tiny_suite_has_the_hub_layout(tiny):
    assert tiny.sizes == ("30k", "60k") and tiny.seeds == (0, 1) and tiny.steps[-1] == 40
    assert (tiny.root / "tiny-30k" / "step8" / "model.safetensors").is_file()  # seed 0: no suffix, as on the hub
    assert (tiny.root / "tiny-60k-seed1" / "step40" / "tokenizer.json").is_file()
    model = tiny.load_model("60k", 1, 40)
    assert model.config.num_hidden_layers == 2 and model.config._attn_implementation == "patchable"


@pytest.mark.parametrize(
    "args, match",
    [
        (("90k", 0, 8), r"size '90k' is not in the suite; it has sizes \['30k', '60k'\]"),
        (("30k", 7, 8), r"seed 7 is not in the suite; it has seeds \[0, 1\]"),
        (("30k", 0, 9), r"step \(revision\) 9 is not in the suite; it has 9 steps: \[0, 1, 2, 4, 8"),
    ],
)
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


def test_pair_export_is_a_two_step_local_suite(tiny, tmp_path):
    files = export_pair(tiny, "60k", 1, 16, 24, out=tmp_path / "pair")
    pair = LocalSuite(tmp_path / "pair")
    assert pair.steps == (16, 24) and pair.seeds == (1,) and len(files) == 13
    assert pair.load_model("60k", 1, 24).config.hidden_size == 48


def test_committed_results_are_consistent(tmp_path):
    """Every published run's result is there and current (stale after a change to the analysis code: regenerate),
    read with the cache turned off, and the live pair is a run of the published index."""
    from lib.core.cache import Cache
    from lib.lm.study_results import BPE_DATA, BPE_PAIR, committed_runs

    if not (BPE_DATA / "suite.json").is_file():
        pytest.skip("no committed BPE-suite results")
    suite, results = committed_runs(cache=Cache(tmp_path / "cache", enabled=False))
    assert [(r.key.size, r.key.seed) for r in results] == suite.built and suite.built
    if (BPE_PAIR / "suite.json").is_file():
        pair = LocalSuite(BPE_PAIR)
        name = pair.name(pair.sizes[0], pair.seeds[0])
        assert pair.files[name] == {s: suite.files[name][s] for s in pair.files[name]}  # the same checkpoint files
        r = results[suite.built.index((pair.sizes[0], pair.seeds[0]))]
        assert r.patches["rep"] is not None and r.patches["rep"].pair == pair.steps
