"""lib.studies.emergence_runs: chapter 6's transformer runs outside the sweeps, as one committed study."""

from __future__ import annotations

import dataclasses

import pytest

import lib
from lib.studies.context_study import ContextStudyConfig
from lib.studies.emergence_runs import EmergenceRunsConfig, emergence_runs, load_emergence_runs

TINY_CONTEXT = ContextStudyConfig(
    sizes=(4, 6),
    biases=(0.0, 3.0),
    steps=20,
    biased_steps=10,
    seeds=(0, 1),
    n_layers=1,
    n_heads=2,
    d_head=4,
    tokens_per_step=128,
    eval_every=10,
    eval_tokens=256,
)
TINY = EmergenceRunsConfig(
    context=TINY_CONTEXT,
    S=4,
    s=2,
    steps=20,
    seeds=(0, 1, 2),
    n_few=2,
    n_width=2,
    n_heads=2,
    d_head=4,
    tokens_per_step=128,
    eval_every=10,
    eval_tokens=256,
    bias_steps=10,
    heads=(1, 2),
    ca_heads=(1, 2),
    many_N=2,
    many_S=4,
    many_steps=10,
)


def test_every_stack_is_laid_out_as_chapter_6_reads_it():
    cfg = EmergenceRunsConfig.fast()
    runs = cfg.run_configs()
    assert set(runs) == {"seeds", "bias", "depth", "many"} | {("heads", H) for H in cfg.heads if H != cfg.n_heads} | {
        ("thin", H) for H in cfg.ca_heads if H != cfg.context.n_heads
    }
    assert [m.seed for m in runs["seeds"].members] == list(cfg.seeds) and runs["seeds"].steps == cfg.steps
    bias = runs["bias"]  # c-major, the first n_few seeds
    assert [(m.bias, m.seed) for m in bias.members] == [
        (c, k) for c in cfg.context.biases[1:] for k in cfg.seeds[: cfg.n_few]
    ]
    assert bias.stop_below == cfg.solved and bias.steps == cfg.bias_steps
    for H in cfg.heads:
        if H != cfg.n_heads:  # fixed width
            assert runs["heads", H].n_heads * runs["heads", H].d_head == cfg.width
    thin = runs["thin", cfg.ca_heads[-1]]
    assert (
        thin.n_heads * thin.d_head == cfg.context.n_heads * cfg.context.d_head
        and thin.stop_below == cfg.context.threshold
    )
    assert [m.seed for m in thin.members] == list(cfg.context.seeds) and runs["depth"].n_layers == 2
    assert [m.bias for m in runs["many"].members] == [0.0, cfg.many_bias] and runs["many"].members[
        0
    ].task.N == cfg.many_N
    assert {r.eval_seed for k, r in runs.items() if k != "many" and not (isinstance(k, tuple) and k[0] == "thin")} == {
        cfg.eval_seed
    }
    paper = EmergenceRunsConfig.paper()
    assert paper.width == 128 and paper.run_configs()["seeds"].d_mlp == 512


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"seeds": (0,)}, "seeds"),
        ({"s": 9}, "s must"),
        ({"n_few": 17}, "n_few"),
        ({"heads": (1, 3, 8)}, "heads"),
        ({"ca_heads": (3, 32)}, "ca_heads"),
        ({"context": None}, "context"),
        ({"lr": 0.0}, "lr"),
    ],
)
def test_bad_configs(kw, match):
    with pytest.raises(ValueError, match=match):
        EmergenceRunsConfig(**kw)


def test_reseed_moves_the_seeds_and_the_nested_sweep(monkeypatch):
    monkeypatch.setenv("BOOK_SEED", "2")
    moved, base = lib.reseed(EmergenceRunsConfig.fast()), EmergenceRunsConfig.fast()
    assert moved.seeds == tuple(k + 200_000 for k in base.seeds) and moved.map_seed == base.map_seed + 200_000
    assert moved.context.rule_seed == base.context.rule_seed + 200_000


def test_a_tiny_study_keeps_the_seeds_stack_whole_and_slims_the_rest(tmp_path):
    res = emergence_runs(TINY, cache=False)
    assert set(res.runs) == set(TINY.run_configs())
    whole = res["seeds"]
    assert whole.entropy.shape[1] == len(TINY.seeds) and whole.params["tok"].shape[0] == len(TINY.seeds)
    for key, run in res.runs.items():
        assert run.pred_loss.shape == (len(run.steps), len(run.config.members)), key
        if key != "seeds":
            assert run.params is None and run.entropy is None and run.token_loss is None, key
    with pytest.raises(RuntimeError, match="emergence_runs --publish"):
        load_emergence_runs(dataclasses.replace(TINY, steps=30), cache=lib.core.cache.Cache(tmp_path))
    with pytest.raises(TypeError):
        load_emergence_runs(TINY_CONTEXT)


def test_the_committed_fast_runs_are_current():
    res = load_emergence_runs(EmergenceRunsConfig.fast())  # fails if stale against the code
    assert set(res.runs) == set(EmergenceRunsConfig.fast().run_configs())
