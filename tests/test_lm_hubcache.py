"""The hub path, offline: a tiny suite written as a Hugging Face hub cache in Pythia's layout and file format, then
loaded and analysed through ``from_pretrained(repo_id, revision="step<N>")`` with ``HF_HUB_OFFLINE=1``, in a fresh
interpreter (huggingface_hub reads its cache variables when it is imported)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from lib.lm.hubcache import PYTHIA_CONFIG_KEYS, pythia_config, repo_folder, write_hub_cache
from lib.lm.minisuite import TINY_SUITE, build_suite
from lib.lm.suite import TRANSFORMERS_PIN, LocalSuite, check_transformers

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    build_suite(TINY_SUITE, root)
    return LocalSuite(root)


@pytest.fixture(scope="module")
def cache(tiny, tmp_path_factory):
    out = tmp_path_factory.mktemp("hubcache")
    write_hub_cache(tiny, out, org="attnbook")
    return out


def _offline(script: str, cache: Path) -> dict:
    """Run ``script`` (which prints one JSON line last) with the cache variables set and the hub forbidden."""
    env = {
        **os.environ,
        "HF_HUB_CACHE": str(cache),
        "HF_HUB_OFFLINE": "1",
        "HF_HOME": str(cache.parent / "hf_home"),
        "PYTHONPATH": str(ROOT),
    }
    env.pop("TRANSFORMERS_CACHE", None)
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_cache_has_the_hub_layout_and_pythia_files(tiny, cache):
    repo = cache / repo_folder("attnbook/tiny-60k-seed1")
    commit = (repo / "refs" / "step24").read_text()
    assert re.fullmatch(r"[0-9a-f]{40}", commit)  # no newline, as huggingface_hub writes refs
    snap = repo / "snapshots" / commit
    assert {p.name for p in snap.iterdir()} >= {"config.json", "pytorch_model.bin", "tokenizer.json"}
    assert all(p.is_symlink() and p.resolve().parent == (repo / "blobs").resolve() for p in snap.iterdir())
    config = json.loads((snap / "config.json").read_text())
    assert set(config) == set(PYTHIA_CONFIG_KEYS) and config["rotary_pct"] == 0.25 and "rope_parameters" not in config
    state = torch.load(snap / "pytorch_model.bin", weights_only=True)
    assert state["gpt_neox.layers.1.attention.bias"].shape == (1, 1, 128, 128)
    assert state["gpt_neox.layers.0.attention.rotary_emb.inv_freq"].shape == (2,)  # d_head 16 x 0.25 / 2
    assert "embed_out.weight" in state and state["embed_out.weight"].dtype == torch.float16
    # seed 0's main is its last checkpoint; a seed repo's main holds only .gitattributes (as PolyPythias' do)
    r0 = cache / repo_folder("attnbook/tiny-30k")
    assert (r0 / "refs" / "main").read_text() == (r0 / "refs" / "step40").read_text()
    main1 = repo / "snapshots" / (repo / "refs" / "main").read_text()
    assert [p.name for p in main1.iterdir()] == [".gitattributes"]
    # writing twice gives the same cache
    again = cache.parent / "again"
    write_hub_cache(tiny, again, org="attnbook", steps=(24,))
    assert (again / repo_folder("attnbook/tiny-60k-seed1") / "refs" / "step24").read_text() == commit
    # a selection (what a suite built in shards writes for discover): those repositories only
    some = cache.parent / "some"
    assert write_hub_cache(tiny, some, org="attnbook", steps=(24,), seeds=(1,)) == [
        "attnbook/tiny-30k-seed1",
        "attnbook/tiny-60k-seed1",
    ]
    assert sorted(p.name for p in some.iterdir()) == [
        repo_folder("attnbook/tiny-30k-seed1"),
        repo_folder("attnbook/tiny-60k-seed1"),
    ]
    with pytest.raises(ValueError, match="no built run"):
        write_hub_cache(tiny, some, sizes=("90k",))


def test_pythia_config_refuses_keys_it_cannot_express():
    base = json.loads(next((ROOT / "data" / "lm" / "bpepair").rglob("config.json")).read_text())
    assert pythia_config(base)["rotary_emb_base"] == 10000
    with pytest.raises(ValueError, match="attention_bias"):
        pythia_config({**base, "attention_bias": False})


_LOAD = """
import json, numpy as np, torch
from lib.lm.suite import HubSuite, LocalSuite
from lib.lm.study import StudyConfig, analyze_run, run_key
hub = HubSuite.discover("attnbook/tiny", seeds=(1,))   # seed 0 not selected: the tokenizer must still load
local = LocalSuite({root!r})
ids = torch.tensor([[5, 6, 7, 8, 5, 6, 7]])
same = [bool(torch.equal(hub.load_model(sz, 1, st)(input_ids=ids).logits, local.load_model(sz, 1, st)(input_ids=ids).logits))
        for sz in hub.sizes for st in (0, 24, 40)]
tok = hub.load_tokenizer()
study = StudyConfig(tasks=("rep",), patch_tasks=(), n_prompts=8, mode="bisect", curve_every=3)
try:
    analyze_run(run_key(study, hub, "30k", 1), hub)
    word_level = ""
except ValueError as err:  # the word-level tiny suite: the study's prompts are for byte-level BPEs
    word_level = str(err)
try:
    hub.load_model("30k", 1, 3)
    unknown = "loaded"
except ValueError as err:
    unknown = str(err)
print(json.dumps(dict(sizes=hub.sizes, seeds=hub.seeds, steps=hub.steps, same=same, source=hub.source,
                      vocab=len(tok), word_level=word_level, unknown=unknown)))
"""


def test_the_hub_branch_runs_offline_through_from_pretrained(tiny, cache):
    out = _offline(_LOAD.format(root=str(tiny.root)), cache)
    assert out["sizes"] == ["30k", "60k"] and out["seeds"] == [1] and out["steps"] == list(tiny.steps)
    assert all(out["same"])  # the Pythia-format files load as the very same models
    assert out["source"] == "hub" and out["vocab"] == len(tiny.load_tokenizer())
    assert "byte-level BPE" in out["word_level"]  # the analysis through the hub: tests/test_lm_study.py (a BPE suite)
    assert "step (revision) 3 is not in the suite" in out["unknown"]


_EVICT = """
import json
from lib.lm.suite import HubSuite, HubUnreachable
hub = HubSuite.discover("attnbook/tiny")
hub.evict = True   # offline suites never evict by default; switched on here on a copy of the cache
before = hub.cached("60k", 1, 16)
deleted = hub.release("60k", 1, 16)
try:
    HubSuite(("60k",), (0,), (0, 41), prefix="attnbook/tiny")
    missing = ""
except HubUnreachable as err:
    missing = str(err)
print(json.dumps(dict(before=before, deleted=deleted, after=hub.cached("60k", 1, 16), other=hub.cached("60k", 1, 24),
                      missing=missing)))
"""


def test_release_evicts_a_used_checkpoint_and_a_missing_one_is_named(cache, tmp_path):
    import shutil

    copy = tmp_path / "cache"
    shutil.copytree(cache, copy, symlinks=True)
    out = _offline(_EVICT, copy)
    assert out["before"] and out["deleted"] and not out["after"] and out["other"]
    assert "lacks 1 checkpoint(s)" in out["missing"] and "attnbook/tiny-60k@step41" in out["missing"]


def test_transformers_version_is_checked_with_the_pin_in_the_message():
    req = (ROOT / "requirements.txt").read_text()
    assert f"transformers=={TRANSFORMERS_PIN}" in req
    assert check_transformers() == TRANSFORMERS_PIN or check_transformers().startswith("5.")
    with pytest.raises(RuntimeError, match=rf"pip install transformers=={re.escape(TRANSFORMERS_PIN)}"):
        check_transformers("4.46.3")
    assert check_transformers("5.30.1") == "5.30.1"
