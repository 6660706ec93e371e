"""The BPE suite's prompts (one rule for every byte-level BPE), its corpus pool, and the per-run analysis
(:mod:`lib.lm.study`) on a tiny suite built here: emergence on p, abruptness, patching with its controls."""

from __future__ import annotations

import numpy as np
import pytest

from lib.lm.bpe import BPEConfig, train_bpe
from lib.lm.english import english_words, word_half
from lib.lm.minisuite import MiniSuiteConfig, ModelSize, TrainConfig, build_suite, checkpoint_schedule
from lib.lm.corpus import ProseCorpusConfig, ProseSampler, prose_stream, randrep_pool
from lib.lm.study import StudyConfig, analyze_run, control_pair, emergence_pair, run_key
from lib.lm.suite import LocalSuite
from lib.lm.tasks import TASKS, build_prompts, task_pools

VOCAB = BPEConfig(vocab_size=2048)  # the default prose: all ten digits are tokens
SUITE = MiniSuiteConfig(
    prefix="tinystudy",
    sizes=(ModelSize("30k", 2, 32, 2),),
    seeds=(0, 1),
    train=TrainConfig(steps=40, warmup=5),
    checkpoints=checkpoint_schedule(40, 8, 8),
    vocab=VOCAB,
    corpus=ProseCorpusConfig(n_words=20_000, randrep_pool="words"),
)


@pytest.fixture(scope="module")
def tok():
    return train_bpe(VOCAB)


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    root = tmp_path_factory.mktemp("tinystudy")
    build_suite(SUITE, root)
    return LocalSuite(root)


def test_every_task_builds_on_a_bpe_learned_on_english_with_leading_spaces_and_whole_words(tok):
    pools = task_pools(tok)
    english = set(english_words())
    vocab = tok.get_vocab()
    for task in TASKS:
        s = build_prompts(task, tok, 16)
        assert s.input_ids.shape[0] == 16 and all(
            p.startswith(" ") and t.startswith(" ") for p, t in zip(s.prompts, s.targets)
        )
        # every word of a prompt is one token: the token count is the word count (IOI's punctuation aside)
        if task != "ioi":
            assert s.input_ids.shape[1] == len(s.prompts[0].split())
    assert build_prompts("rep", tok, 2).prompts[0] == " 0 7 3 1 2 0 2 3 0 7 3 1 2 0 2"  # paper B's example
    corpus_ids = set(randrep_pool(tok)[0].tolist())
    seen = {w for p in build_prompts("icr", tok, 32).prompts for w in p.split()}
    held = {w for p in build_prompts("icr_held", tok, 32).prompts for w in p.split()}
    assert seen <= english and all(word_half(w) == "corpus" for w in seen)
    assert held <= english and all(word_half(w) == "prompts" for w in held)
    assert {vocab["Ġ" + w] for w in seen} <= corpus_ids  # icr: words the corpus repeats in its random spans
    assert not corpus_ids & {vocab["Ġ" + w] for w in held}  # icr_held: words it never repeats
    assert all("Ġ" + c in vocab for c in pools["capitals"]) and len(pools["digits"]) == 10
    assert len(pools["names"]) >= 2 and pools["places"] and pools["objects"]
    with pytest.raises(ValueError, match="task must be one of"):
        build_prompts("copy", tok)


def test_word_level_tokenizers_are_refused_with_a_pointer():
    from lib.lm.tokenizer import VocabConfig, build_tokenizer

    with pytest.raises(ValueError, match="byte-level BPE"):
        build_prompts("rep", build_tokenizer(VocabConfig()))


def test_the_words_pool_draws_repeated_spans_from_the_corpus_half_and_symbols_only(tok):
    cfg = ProseCorpusConfig(n_words=20_000, mix=(("randrep", 1.0),), randrep_pool="words", p_eos=0.0)
    stream = prose_stream(cfg, tok)
    words, symbols = randrep_pool(tok)
    rows = ProseSampler(cfg, stream, tok.eos_token_id, 3, (words, symbols)).batch(32)
    assert set(np.unique(rows)) <= set(words.tolist()) | set(symbols.tolist())
    share = np.isin(rows, words).mean()
    assert 0.6 < share < 0.8  # word_share = 0.7
    with pytest.raises(ValueError, match="exactly when"):
        ProseSampler(cfg, stream, tok.eos_token_id, 3)
    with pytest.raises(ValueError, match="randrep_pool"):
        ProseCorpusConfig(randrep_pool="zipf")


def test_the_emergence_pair_spans_the_window_and_the_control_pair_holds_no_emergence():
    onset = np.array([5, 6, 6, 7, 20, 20, 0, 6])  # n = 20: two never, one at the first checkpoint
    assert emergence_pair(onset, 20, 3) == (4, 7)  # median of the emerging 5,6,6,6,7 is 6: (6 - 2, 6 + 1)
    assert emergence_pair(np.array([20] * 7 + [3]), 20, 3) is None  # fewer than a quarter emerge
    old, new = control_pair(onset, 20, 3)
    assert new - old == 3 and not np.any((onset >= old) & (onset <= new + 1) & (onset < 20))  # never is no emergence
    assert control_pair(np.arange(10), 10, 2) is None


def test_the_run_analysis_patches_with_held_out_ranking_capped_k_and_a_control_pair(suite, tmp_path):
    # 40 steps solve nothing; a threshold between the rep prompts' p at step 0 and at the end (read off a first pass)
    # makes them "emerge", to exercise the patching path
    first = analyze_run(run_key(StudyConfig(n_prompts=8), suite, "30k", 1), suite)
    p = first.p_target[TASKS.index("rep")]  # (P, C)
    assert np.median(p[:, -1]) > p[:, 0].max()  # digits are frequent in the repeated spans: learned within 40 steps
    study = StudyConfig(
        n_prompts=8,
        theta=float(0.5 * (p[:, 0].max() + np.median(p[:, -1]))),
        ks=(1, 2, 16),
        random_draws=3,
        patch_tasks=("rep",),
    )
    key = run_key(study, suite, "30k", 1)
    r = analyze_run(key, suite)
    T, P, C = len(TASKS), 8, len(suite.steps)
    assert r.p_target.shape == (T, P, C) and not np.isnan(r.p_target).any() and r.evaluated == C
    assert r.onset.shape == (T, P) and r.onset.min() >= 0 and r.onset.max() <= C
    assert set(r.agreement) == set(TASKS) and 0 <= r.agreement["icr"]["agree"] <= 1
    assert np.all(r.rise >= 0) and np.all(r.ramp >= 0) and r.width == suite.steps[-1] - suite.steps[-2]
    assert set(r.patches) == {"rep"}
    patch = r.patches["rep"]
    assert patch is not None, r.notes
    assert patch.ks == (1, 2, 4)  # K = 16 capped at the model's 4 heads
    assert sorted(np.concatenate([patch.rank, patch.held]).tolist()) == list(range(P))
    assert not set(patch.rank) & set(patch.held)
    assert patch.p_head.shape == (2, 2, P) and patch.p_random.shape == (3, 3, P)
    # patching all four heads' patterns with any order is the same patch: the orders agree at K = 4
    assert np.allclose(patch.p_topk[-1], patch.p_topk_in[-1]) and np.allclose(patch.p_random[-1], patch.p_topk[-1])
    idx = {s: i for i, s in enumerate(suite.steps)}
    o = r.onset[TASKS.index("rep")]
    if patch.control is not None:
        a, b = idx[patch.control[0]], idx[patch.control[1]]
        assert not np.any((o >= a) & (o <= b + 1) & (o < C))
    assert patch.denoising(2).n == len(patch.held) and patch.noising(2).n == len(patch.held)
    # deterministic, and a key of another run is refused
    again = analyze_run(key, suite)
    assert np.array_equal(again.p_target, r.p_target, equal_nan=True) and np.array_equal(
        again.patches["rep"].p_topk, patch.p_topk
    )
    with pytest.raises(ValueError, match="does not match"):
        analyze_run(run_key(study, suite, "30k", 0).__class__(**{**key.__dict__, "digest": "x"}), suite)
    # the chapter's live pair: the two checkpoints exported, patched again from them, give the committed numbers
    from lib.lm.study_report import study_table
    from lib.lm.study_results import export_study_pair, live_patch, pair_run

    table = study_table([r], suite)
    assert pair_run(table) is r
    export_study_pair(suite, table, "make it", out=tmp_path / "pair", data_dir=tmp_path)
    pair = LocalSuite(tmp_path / "pair")
    assert pair.steps == patch.pair and (tmp_path / "manifest.json").is_file()
    live = live_patch(pair, r)
    assert np.allclose(live.p_topk, patch.p_topk, atol=1e-6) and np.allclose(live.p_head, patch.p_head, atol=1e-6)
    assert np.allclose(live.p_old, patch.p_old, atol=1e-6)


def test_bisect_mode_lands_where_the_scan_bisects_on_the_checkpoints_it_reads(suite):
    scan = analyze_run(run_key(StudyConfig(n_prompts=8, theta=4e-4), suite, "30k", 0), suite)
    bis = analyze_run(
        run_key(StudyConfig(n_prompts=8, theta=4e-4, mode="bisect", curve_every=4), suite, "30k", 0), suite
    )
    assert bis.evaluated < len(suite.steps) and np.isnan(bis.rise).all()
    assert np.array_equal(bis.onset, scan.bisect) and np.array_equal(bis.flip, scan.flip)
    seen = ~np.isnan(bis.p_target)
    assert np.allclose(bis.p_target[seen], scan.p_target[seen])


_HUB = """
import json, numpy as np
from lib.lm.suite import HubSuite, LocalSuite
from lib.lm.study import StudyConfig, analyze_run, run_key
hub = HubSuite.discover("attnbook/tinystudy", seeds=(1,))   # seed 0 not selected: the tokenizer must still load
local = LocalSuite({root!r})
study = StudyConfig(n_prompts=8, mode="bisect", curve_every=4)
a = analyze_run(run_key(study, hub, "30k", 1), hub)
b = analyze_run(run_key(study, local, "30k", 1), local)
print(json.dumps(dict(source=a.key.source, onset=bool(np.array_equal(a.onset, b.onset)),
                      p=bool(np.allclose(a.p_target, b.p_target, equal_nan=True)), evaluated=a.evaluated,
                      prompt=a.prompts["rep"][0][0])))
"""


def test_the_study_runs_offline_on_the_hub_cache_through_from_pretrained(suite, tmp_path):
    """The hub branch of the new analysis (bug 1: prompts on a byte-level BPE; bug 2: bisect-mode results; bug 3:
    the tokenizer without seed 0) through ``from_pretrained(repo, revision="step<N>")`` with the hub forbidden."""
    import os
    import subprocess
    import sys
    import json
    from pathlib import Path

    from lib.lm.hubcache import write_hub_cache

    cache = tmp_path / "hubcache"
    write_hub_cache(suite, cache, org="attnbook")
    env = {
        **os.environ,
        "HF_HUB_CACHE": str(cache),
        "HF_HUB_OFFLINE": "1",
        "HF_HOME": str(tmp_path / "hf_home"),
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
    }
    env.pop("TRANSFORMERS_CACHE", None)
    out = subprocess.run(
        [sys.executable, "-c", _HUB.format(root=str(suite.root))], env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["source"] == "hub" and res["onset"] and res["p"] and res["evaluated"] < len(suite.steps)
    assert res["prompt"] == " 0 7 3 1 2 0 2 3 0 7 3 1 2 0 2"


def test_each_run_is_one_cache_entry_and_a_second_pass_reads_them(suite, tmp_path):
    from lib.core.cache import Cache
    from lib.lm.study_results import study_suite

    cache = Cache(tmp_path / "cache", data_dir=None, enabled=True)
    study = StudyConfig(n_prompts=8)
    first = study_suite(study, suite, cache=cache)
    assert [r.key.seed for r in first] == [0, 1]
    assert len(list((tmp_path / "cache").rglob("*.pkl"))) == 2
    again = study_suite(study, suite, cache=cache, seeds=(1,))
    assert np.array_equal(again[0].p_target, first[1].p_target)


def test_a_suite_built_in_shards_is_published_run_by_run_and_read_back_without_its_checkpoints(tmp_path):
    from lib.core.cache import Cache
    from lib.lm.study_results import committed_runs, publish_runs, study_run

    root, data = tmp_path / "suite", tmp_path / "data"
    cache = Cache(tmp_path / "cache", data_dir=data, enabled=True)
    study = StudyConfig(n_prompts=8, ks=(1,), random_draws=2)
    build_suite(SUITE, root, seeds=(1,))  # a first session's shard
    part = LocalSuite(root)
    assert part.built == [("30k", 1)] and not part.complete and part.files.keys() == {"tinystudy-30k-seed1"}
    with pytest.raises(ValueError, match="not in the suite index"):
        run_key(study, part, "30k", 0)
    publish_runs(study, part, "make it", data_dir=data, cache=cache)
    assert LocalSuite(data / "lm" / "tinystudysuite", verify=False).built == [("30k", 1)]
    build_suite(SUITE, root, seeds=(0,))  # the next session's
    whole = LocalSuite(root)
    assert whole.complete and whole.built == [("30k", 0), ("30k", 1)]
    publish_runs(study, whole, "make it", seeds=(0,), data_dir=data, cache=cache)
    committed, results = committed_runs(
        study, root=data / "lm" / "tinystudysuite", cache=Cache(tmp_path / "empty", data_dir=data, enabled=True)
    )
    assert committed.built == [("30k", 0), ("30k", 1)] and [r.key.seed for r in results] == [0, 1]
    assert committed.meta["complete"] and set(committed.meta["cpu_seconds"]) == set(whole.files)
    fresh = study_run(run_key(study, whole, "30k", 1), whole, cache=False)
    assert np.array_equal(fresh.p_target, results[1].p_target)  # the committed entry is what the run computes
    with pytest.raises(FileNotFoundError, match="regenerate"):
        committed_runs(
            StudyConfig(n_prompts=9),
            root=data / "lm" / "tinystudysuite",
            cache=Cache(tmp_path / "empty", data_dir=data, enabled=True),
        )


def test_the_bpe_suite_spans_ten_times_in_parameters_with_ten_seeds():
    import torch
    from transformers import GPTNeoXForCausalLM

    from lib.lm.minisuite import BPE_SUITE

    torch.manual_seed(0)
    n = [
        sum(p.numel() for p in GPTNeoXForCausalLM(s.hf_config(BPE_SUITE.vocab.vocab_size)).parameters())
        for s in BPE_SUITE.sizes
    ]
    assert n == sorted(n) and n[-1] / n[0] >= 10 and len(BPE_SUITE.sizes) >= 4 and len(BPE_SUITE.seeds) == 10
    assert BPE_SUITE.corpus.randrep_pool == "words"
