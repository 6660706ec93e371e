"""lib.studies._paper_scale: a study's units through the sweep engine, resumed, published with their cost; the same published
result from the local process pool and from a dask LocalCluster scheduler."""

from __future__ import annotations


import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from lib.core.cache import Cache
from lib.readouts import paper as readouts_paper
from lib.studies.paper import mixers as bmx, sparsity as bsp
from lib.studies.paper_defaults import LINEAR_MAP_INIT
from lib.studies.__main__ import main
from lib.studies._paper_scale import (
    PaperStudy,
    StudyUnit,
    committed_units,
    executor_for,
    publish,
    run_study,
    run_unit,
    unit,
)
from lib.tasks import LinearMapTask
from lib.train.gpt_train import GPTRunConfig, Member

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sweep_helpers  # noqa: E402,F401  (workers import the unit functions by name)

ROOT = Path(__file__).resolve().parent.parent


def tiny_study(n: int = 3) -> PaperStudy:
    task = LinearMapTask(4, 1, seed=0, distinct=True)
    units = tuple(
        unit(
            "sweep_helpers:tiny_training",
            GPTRunConfig(
                members=(Member(task, seed=k),),
                n_heads=2,
                d_head=4,
                tokens_per_step=64,
                steps=6,
                lr=1e-2,
                eval_every=3,
                eval_tokens=64,
            ),
        )
        for k in range(n)
    )
    return PaperStudy("tiny", ("B-sparsity",), "a 4-bit map, 6 steps (a test)", units, "sweep_helpers:summarize_losses")


def fresh_data(tmp_path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    (data / "manifest.json").write_text(json.dumps({"files": {}}))
    return data


def test_a_partial_study_publishes_what_is_done_and_resumes(tmp_path):
    study, cache, data = tiny_study(), Cache(tmp_path / "c", enabled=True), fresh_data(tmp_path)
    first = run_study(study, limit=2, workers=2, cache=cache, data_dir=data)
    assert (first["done"], first["of"], first["summary"]["missing"]) == (2, 3, 1)
    seconds = sum(o["cpu_seconds"] for o in first["units"].values())  # a tiny unit's CPU time rounds to 0.0 hours
    assert seconds > 0 and first["cpu_hours"] == round(seconds / 3600, 3)
    assert first["cpu_capability"] and first["command"] == "python -m lib.studies run tiny"
    on_disk = json.loads((data / "paper" / "tiny.json").read_text())
    assert len(on_disk["units"]) == 2  # every done unit's result, so a new machine resumes from data/
    assert on_disk["done"] == 2 and "paper/tiny.json" in json.loads((data / "manifest.json").read_text())["files"]
    second = run_study(study, workers=2, cache=cache, data_dir=data)  # resumes: only the third unit is computed
    assert second["done"] == 3 and second["summary"]["losses"][:2] == first["summary"]["losses"]
    assert publish(study, cache=cache, write=False)["summary"] == second["summary"]  # publishing computes nothing


def test_a_local_cluster_gives_the_local_pools_published_result(tmp_path):
    distributed = pytest.importorskip("distributed")
    study = tiny_study()
    local = run_study(study, workers=2, cache=Cache(tmp_path / "a", enabled=True), publish_to_data=False)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None, silence_logs=40
    ) as cluster:
        remote = run_study(
            study, scheduler=cluster.scheduler_address, cache=Cache(tmp_path / "b", enabled=True), publish_to_data=False
        )
    assert remote["summary"] == local["summary"] and remote["done"] == local["done"] == 3


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_local_pools_workers_end_with_the_process_that_started_them(tmp_path):
    """A study stopped with ``kill`` must not leave its workers computing units nobody will store."""
    import os
    import signal
    import subprocess
    import time

    script, pid_file = tmp_path / "parent.py", tmp_path / "worker.pid"
    script.write_text(
        "import os, time\n"
        "from lib.studies._paper_scale import local_pool\n"
        "def announce_and_sleep(path):\n"
        "    with open(path + '.tmp', 'w') as fh:\n"
        "        fh.write(str(os.getpid()))\n"
        "    os.replace(path + '.tmp', path)\n"
        "    time.sleep(120)\n"
        "if __name__ == '__main__':\n"
        "    pool = local_pool(1)\n"
        f"    pool.submit(announce_and_sleep, {str(pid_file)!r})\n"
        "    print('submitted', flush=True)\n"
        "    time.sleep(120)\n"
    )
    root = Path(__file__).resolve().parents[1]
    parent = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    try:
        assert parent.stdout.readline().strip() == "submitted"
        deadline = time.monotonic() + 60
        while not pid_file.exists() and time.monotonic() < deadline:  # the unit's process has started
            time.sleep(0.2)
        worker = int(pid_file.read_text())
        os.kill(worker, 0)  # alive while its parent is
        parent.send_signal(signal.SIGKILL)  # no shutdown, no atexit: as `kill -9`
        parent.wait(timeout=30)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                os.kill(worker, 0)
            except ProcessLookupError:
                break
            with open(f"/proc/{worker}/stat") as f:
                if f.read().split(")")[-1].split()[0] == "Z":  # a zombie has ended: nothing left to reap it here
                    break
            time.sleep(0.2)
        else:
            os.kill(worker, signal.SIGKILL)
            pytest.fail("the worker outlived its parent by 30 s")
    finally:
        if parent.poll() is None:
            parent.kill()


def test_a_unit_of_changed_code_is_refused(tmp_path):
    u = tiny_study(1).units[0]
    stale = StudyUnit(u.func, u.config, "0" * 64)
    with pytest.raises(ValueError, match="changed"):
        run_unit(stale)
    assert run_unit(u)["value"] == run_unit(u)["value"]  # deterministic


@pytest.mark.parametrize(
    "bad, match", [("nocolon", "package.module:function"), ("sweep_helpers:nothing", "not a function")]
)
def test_bad_study_definitions(bad, match):
    with pytest.raises(ValueError, match=match):
        unit(bad, None)
    with pytest.raises(ValueError, match="scheduler"):
        executor_for("localhost:8786")
    with pytest.raises(ValueError, match="name"):
        PaperStudy("a/b", (), "", tiny_study(1).units, "sweep_helpers:summarize_losses")


def test_the_command_line_lists_the_registered_studies(capsys):
    assert main(["list"]) == 0
    assert capsys.readouterr().out.strip()


def test_a_study_resumes_from_its_committed_units_alone(tmp_path):
    study, data = tiny_study(), fresh_data(tmp_path)
    first = run_study(study, limit=2, workers=1, cache=Cache(tmp_path / "c", enabled=True), data_dir=data)
    assert len(first["units"]) == 2 and len(committed_units(study, data)) == 2
    log = tmp_path / "calls"
    empty = Cache(tmp_path / "other", enabled=True)  # a new machine: no results cache, only data/
    again = publish(study, cache=empty, data_dir=data, write=False)
    assert again["summary"] == first["summary"] and again["done"] == 2
    stale = PaperStudy(
        study.name,
        study.claims,
        study.setting,
        tuple(StudyUnit(u.func, u.config, "0" * 64) for u in study.units),
        study.summarize,
    )
    assert committed_units(stale, data) == {}  # units of other code are not taken for these
    assert not log.exists()


def test_the_sparsity_study_has_one_unit_per_size_s_and_seed_of_the_papers_stacks():
    from lib.measures.comparisons import SOLVED
    from lib.studies.paper.sparsity import SPARSITY_SIZES, b_sparsity
    from lib.studies.sparsity_study import SparsityStudyConfig

    study, config = b_sparsity(), SparsityStudyConfig.paper()
    stacks = {S: config.run(S) for S in SPARSITY_SIZES}
    assert len(study.units) == sum(len(st.members) for st in stacks.values()) == 144
    first = [(u.config.run.members[0].task.S, u.config.run.members[0].task.s) for u in study.units[:18]]
    assert first == [(S, s) for S in (16, 32) for s in (S // 2, 1, S - 1) for _ in range(3)]  # the gap's units first
    deciding = [(u.config.run.members[0].task.S, u.config.run.members[0].task.s) for u in study.units[18:33]]
    assert deciding == [(S, s) for S, s in ((16, 4), (16, 12), (32, 2), (32, 3), (32, 30)) for _ in range(3)]
    members = [u.config.run.members[0] for u in study.units]
    assert sorted(map(repr, members)) == sorted(repr(m) for st in stacks.values() for m in st.members)
    for u in study.units:
        run, stack = u.config.run, stacks[u.config.run.members[0].task.S]
        assert (run.steps, run.tokens_per_step, run.d_model, run.lr, run.init) == (
            stack.steps,
            stack.tokens_per_step,
            stack.d_model,
            stack.lr,
            stack.init,
        )
        assert u.config.precision == "fp32" and run.stop_below == SOLVED


def _fake_unit(initial, final):
    return {"steps": [0, 100], "loss": [[initial], [final]], "pred_loss": [[initial], [final]], "steps_run": 100}


def _fake_values(loss, done=lambda S, s, k: True):
    from lib.studies.paper.sparsity import _sparsity_keys
    from lib.studies.sparsity_study import SparsityStudyConfig

    return [
        _fake_unit(2.0, loss(S, s, k)) if done(S, s, k) else None
        for S, s, k in _sparsity_keys(SparsityStudyConfig.paper())
    ]


def test_the_sparsity_summary_is_the_chapters_gap_on_done_seeds():
    from lib.studies.paper.sparsity import sparsity_summary

    values = _fake_values(
        lambda S, s, k: 1.0 + (s == S // 2) + 0.1 * (s == S - 1) + 0.01 * k, done=lambda S, s, k: S == 16 and k < 2
    )  # the third seed and S = 32 not done
    out = sparsity_summary(values)["sizes"]
    np.testing.assert_allclose(out["16"]["gap"], [2.0 - 1.1, 2.01 - 1.11])  # s=8 minus the worse of s=1 and s=15
    assert out["16"]["control_gap"] == [0.0, 0.0] and out["16"]["final"]["8"][2] is None and out["32"]["gap"] == []
    with pytest.raises(ValueError):
        sparsity_summary(values[:-1])


def test_the_sparsity_measure_takes_the_weaker_size_and_says_what_is_missing():
    from lib.studies.paper.sparsity import sparsity_measures, sparsity_summary

    both = sparsity_summary(_fake_values(lambda S, s, k: 1.0 + (0.3 if S == 16 else 0.5) * (s == S // 2) + 0.01 * k))
    m = sparsity_measures(both)["B-sparsity"]
    np.testing.assert_allclose(m["samples"], [0.3] * 3, atol=1e-12)  # S = 16, the weaker
    assert m["control"] == 0.0 and m["incomplete"] == []
    half = sparsity_summary(_fake_values(lambda S, s, k: 1.0 + 0.3 * (s == S // 2), done=lambda S, s, k: S == 16))
    assert "S = 32 not measured" in sparsity_measures(half)["B-sparsity"]["incomplete"][0]
    assert sparsity_measures(sparsity_summary(_fake_values(lambda S, s, k: 1.0, done=lambda *a: False))) == {}


def _commit_fake(data, study, values):
    """Write ``values`` (one per unit, ``None``: not done) as the study's committed units under ``data/paper/``."""
    from lib.studies._study import unit_key

    machine = {"arch": "x86_64", "cpu_capability": "AVX512", "threads": 1}
    units = {
        unit_key(u): {"value": v, "cpu_seconds": 180.0, "wall_seconds": 180.0, "machine": machine}
        for u, v in zip(study.units, values)
        if v is not None
    }
    (data / "paper").mkdir(exist_ok=True)
    (data / "paper" / f"{study.name}.json").write_text(json.dumps({"study": study.name, "units": units}))


def test_paper_records_judge_a_published_study_by_the_registry(tmp_path, monkeypatch):
    import lib.studies.paper as ps
    from lib.claims import ledger_markdown

    data = fresh_data(tmp_path)
    values = _fake_values(lambda S, s, k: 0.35 + 0.33 * (s == S // 2) + 0.01 * k, done=lambda S, s, k: S == 16)
    _commit_fake(data, ps.b_sparsity(), values)
    (paper,) = ps.paper_records(data)
    assert (paper.id, paper.scale, paper.chapter) == ("B-sparsity", "paper", "06_sparse_patterns")
    assert abs(paper.measured - 0.33) < 1e-9 and paper.control == 0.0
    assert paper.status == "incomplete"  # the gap passes, but S = 32 is missing: done in part, no final status
    assert paper.raw_status == "incomplete" and any("S = 32" in u for u in paper.unmet)
    assert "48 of 144 units, 2.4 CPU-hours" in paper.note  # every S = 16 unit, 180 CPU-s each
    monkeypatch.setattr(ps, "STUDIES", {})
    assert ps.paper_records(data) == []
    import lib

    lib.setup("06_sparse_patterns", fast=True)
    fast = lib.claim("B-sparsity", None, show=False, robustness=[])
    assert "**incomplete**<br><small>S=16: median gap 0.330" in ledger_markdown(
        [fast], paper=[paper]
    )  # its paper-scale cell
    assert ledger_markdown([fast]).count("**not run**") >= 2  # the FAST row not run, and no paper-scale study


def test_a_study_at_a_seed_offset_is_the_same_study_with_every_seed_moved():
    import lib.studies.paper as ps
    from lib.studies._study import unit_key

    for name in ps.SEEDED:
        base, moved = ps.make_study(name), ps.make_study(f"{name}@100")
        assert (moved.name, moved.seed_offset, len(moved.units)) == (f"{name}@100", 100, len(base.units))
        assert moved.command == f"python -m lib.studies run {name}@100"
        for a, b in zip(base.units, moved.units):
            (ma,), (mb,) = a.config.run.members, b.config.run.members
            assert mb.seed == ma.seed + 100 and replace(mb, seed=ma.seed) == ma  # init and data stream move
            assert replace(b.config, run=replace(b.config.run, members=(ma,))) == a.config  # nothing else does
        assert not {unit_key(u) for u in base.units} & {unit_key(u) for u in moved.units}
    assert ps.split_name("b-heads@7") == ("b-heads", 7) and ps.split_name("b-mixer") == ("b-mixer", 0)
    for bad, match in (
        ("b-mixer@3", "no seed offsets"),
        ("b-random@0", "positive"),
        ("b-random@x", "positive"),
        ("b-nope", "no paper-scale study"),
    ):
        with pytest.raises(ValueError, match=match):
            ps.make_study(bad)
    with pytest.raises(ValueError, match="named"):
        replace(ps.make_study("b-random"), seed_offset=3)
    from lib.studies.paper.seeds import random_summary

    n = len(ps.make_study("b-random").units)
    assert random_summary([None] * n, seed_offset=100)["seeds"][0] == 130  # the summary knows its seeds
    assert bsp.sparsity_summary([None] * 144, seed_offset=100)["seeds"] == [100, 101, 102]


def test_a_second_seed_set_decides_whether_a_paper_scale_claim_is_reproduced(tmp_path):
    import lib.studies.paper as ps
    from lib.studies.paper.heads import _heads_one_keys

    data = fresh_data(tmp_path)
    learns = lambda leaves: [_curve(300 if leaves(H, dh, k) else None) for H, dh, k in _heads_one_keys()]  # noqa
    paper_like = learns(lambda H, dh, k: H == 32)  # no single head leaves, every H = 32 run does
    _commit_fake(data, ps.b_heads_one(), paper_like)
    (first,) = ps.paper_records(data)
    assert (first.raw_status, first.status) == ("reproduced", "partial")  # fixed seeds: one set is an anecdote
    assert any("fixed seeds" in u for u in first.unmet) and "seed set" not in first.note

    _commit_fake(data, ps.b_heads_one(100), paper_like[:9] + [None] * 9)  # the second set, half done
    (running,) = ps.paper_records(data)
    assert running.status == "partial" and "seed set +100 (9 of 18 units)" in running.note
    assert running.extra["seed_sets"]["100"]["raw_status"] == "incomplete"  # a set still running judges nothing

    _commit_fake(data, ps.b_heads_one(100), paper_like)
    (both,) = ps.paper_records(data)
    assert both.status == "reproduced" and both.unmet == [] and "[reproduced]" in both.note

    _commit_fake(data, ps.b_heads_one(100), learns(lambda H, dh, k: H == 32 or (H, dh, k) == (1, 8, 0)))
    (differ,) = ps.paper_records(data)  # the second set has a single head that learns: the first was an accident
    assert differ.extra["seed_sets"]["100"]["raw_status"] == "not at our scale"  # 1 of 9, interval from 0
    assert differ.status == "not at our scale" and any("fragile" in u for u in differ.unmet)


def test_a_sparsity_unit_trains_at_the_papers_width():
    from lib.studies.paper.sparsity import b_sparsity
    from lib.studies._units import fast_curves
    from lib.core.smoke import cut

    cfg = cut(b_sparsity().units[0].config, 3000)  # the paper's model, 3 steps
    out = fast_curves(cfg)
    assert out["steps_run"] == 3 and out["steps"][-1] == 3 and len(out["loss"][-1]) == 1
    assert np.isfinite(out["loss"]).all() and json.loads(json.dumps(out)) == out


def _curve(exit_at, budget=10_000):
    """A unit's curves that leave the plateau at ``exit_at`` (``None``: never, run to the budget)."""
    steps = list(range(0, budget + 1, 100)) if exit_at is None else list(range(0, exit_at + 201, 100))
    loss = [[0.69] if exit_at is None or s < exit_at else [0.3 if s == exit_at else 0.05] for s in steps]
    return {"steps": steps, "loss": loss, "pred_loss": loss, "steps_run": steps[-1]}


@pytest.mark.parametrize("bf16_factor, verdict", [(1.0, "stands in"), (2.5, "biased"), (None, "not shown")])
def test_the_bf16_calibration_rule(bf16_factor, verdict):
    from lib.studies.paper.seeds import CALIBRATION_SEEDS, bf16_calibration, calibration_summary

    study = bf16_calibration()
    assert len(study.units) == 2 * len(CALIBRATION_SEEDS) and not study.claims and not study.measures
    assert [u.config.precision for u in study.units[:4]] == ["fp32", "bf16", "fp32", "bf16"]  # pairs first
    from lib import LINEAR_MAP_EXIT

    assert {u.config.run.stop_below for u in study.units} == {LINEAR_MAP_EXIT}  # the rule needs nothing after the exit
    assert len({u.config.run.members[0].seed for u in study.units}) == len(CALIBRATION_SEEDS)
    rng = np.random.default_rng(0)
    fp32 = [int(x) for x in rng.integers(9, 30, len(CALIBRATION_SEEDS)) * 100]  # a threefold spread, like the paper's
    if bf16_factor is None:  # half the seeds twice as slow, half twice as fast: a wide interval
        bf16 = [e * 2 if i % 2 else e // 2 for i, e in enumerate(fp32)]
    else:
        bf16 = [int(round(e * bf16_factor / 100)) * 100 for e in fp32]
    values = [_curve(e) for pair in zip(fp32, bf16) for e in pair]
    out = calibration_summary(values)
    assert out["verdict"] == verdict and len(out["ratios"]) == len(CALIBRATION_SEEDS)
    assert out["exits"]["fp32"] == [float(e) for e in fp32]
    half = calibration_summary(values[:6] + [None] * (len(values) - 6))  # three pairs done
    assert len(half["ratios"]) == 3 and half["exits"]["bf16"][5] is None
    never = calibration_summary([_curve(None)] * len(values))
    assert never["exits"]["fp32"][0] == 10_000.0  # censored at the budget


def test_the_single_head_study_counts_runs_that_leave_the_plateau():
    from lib.studies.paper.heads import _heads_one_keys, b_heads_one, heads_one_measures, heads_one_summary

    study, keys = b_heads_one(), _heads_one_keys()
    assert len(study.units) == len(keys) == 18 and [k[0] for k in keys[:9]] == [1] * 9  # one head first
    for u, (H, dh, k) in zip(study.units, keys):
        run = u.config.run
        assert (run.n_heads, run.d_head, run.members[0].seed, run.steps, run.tokens_per_step) == (
            H,
            dh,
            k,
            10_000,
            8192,
        )
    leaves = {(1, 8, 2), (32, 4, 0), (32, 8, 0), (32, 16, 1)}
    values = [_curve(300 if key in leaves else None) for key in keys]
    out = heads_one_summary(values)
    assert out["heads"]["1"] == {"left": 1, "done": 9, "of": 9} and out["heads"]["32"]["left"] == 3
    assert out["cells"]["1,8"] == ["never", "never", 300]
    m = heads_one_measures(out)["B-heads-one"]
    assert (m["value"], m["control"], m["incomplete"]) == (1, 3, [])
    # resampled seeds hold that run 0 to 3 times; 3 (1 in 27 resamples) lies beyond the 95th percentile
    assert (m["interval"].lo, m["interval"].hi, m["interval"].n) == (0, 2, 3)
    never = heads_one_measures(heads_one_summary([_curve(None)] * 9 + values[9:]))["B-heads-one"]
    assert (never["value"], never["interval"].lo, never["interval"].hi) == (0, 0, 0)
    one_seed = [v if k == 0 else None for v, (H, dh, k) in zip(values, keys)]
    assert heads_one_measures(heads_one_summary(one_seed))["B-heads-one"]["interval"] is None  # one seed: none
    part = heads_one_measures(heads_one_summary(values[:9] + [None] * 9))["B-heads-one"]
    assert part["control"] is None and "9 of 9 runs with H = 32 not done yet" in part["incomplete"][0]
    assert heads_one_measures(heads_one_summary([None] * 18)) == {}


def test_the_heads_grid_study_is_chapter_6s_grid_and_measure():
    from lib.measures.comparisons import heads_halves_control, heads_vs_head_size
    from lib.studies.paper.heads import HEADS_TIE, _heads_keys, b_heads, heads_measures, heads_summary
    from lib.studies.width_study import WidthStudyConfig

    study, keys, config = b_heads(), _heads_keys(), WidthStudyConfig.paper()
    cells = len(config.heads) * len(config.d_heads)
    assert len(study.units) == len(keys) == cells * len(config.seeds) == 54 and study.claims == ("B-heads",)
    assert {k[2] for k in keys[:cells]} == {config.seeds[0]}  # seed by seed: whole grids first
    widths = [H * dh for H, dh, _ in keys[:cells]]
    assert widths == sorted(widths) and len(set(keys)) == len(keys)  # narrowest first, every cell once per seed
    runs = config.runs()
    for u, (H, dh, k) in zip(study.units, keys):
        run, grid = u.config.run, runs["grid", H, dh]
        assert run == replace(grid, members=tuple(m for m in grid.members if m.seed == k), stop_below=HEADS_TIE / 2)
        assert u.config.precision == "fp32" and (run.steps, run.tokens_per_step) == (10_000, 8192)

    # synthetic grid: more heads always ends lower; final loss = 0.69 / H (seed 1 a little higher)
    def value(H, dh, k):
        v = _curve(300 if H >= 4 else None)
        v["pred_loss"] = v["pred_loss"][:-1] + [[0.69 / H + 0.001 * k]]
        return v

    values = [value(*key) for key in keys]
    out = heads_summary(values)
    assert out["final"]["2,8"] == [pytest.approx(0.345 + 0.001 * k) for k in config.seeds]
    assert out["exit"]["1,4"] == ["never"] * 3 and out["exit"]["4,4"] == [300] * 3
    loss = np.array([[[0.69 / H + 0.001 * k for k in config.seeds] for H in config.heads] for _ in config.d_heads])
    m = heads_measures(out)["B-heads"]
    assert m["value"] == heads_vs_head_size(loss, config.heads, config.d_heads, HEADS_TIE)["share"] == 1.0
    assert m["control"] == heads_halves_control(loss, HEADS_TIE) and m["incomplete"] == []
    assert m["interval"].n == 3 and "H=1: 0 of 9" in m["text"] and "H=32: 9 of 9" in m["text"]
    one = heads_measures(heads_summary(values[:cells] + [None] * (len(values) - cells)))["B-heads"]
    assert one["interval"] is None and one["control"] is None and len(one["incomplete"]) == 2  # one seed: no interval
    corner = heads_measures(heads_summary(values[:-1] + [None]))["B-heads"]  # seed 2 lacks only (32, 16)
    assert keys[-1] == (32, 16, 2) and corner["interval"].n == 3 and corner["incomplete"] == []  # it enters no pair
    assert "H=32: 8 of 8" in corner["text"] and corner["value"] == m["value"]
    gap = [None if key == (16, 16, 2) else v for key, v in zip(keys, values)]  # (16, 16) enters a pair
    assert heads_measures(heads_summary(gap))["B-heads"]["interval"].n == 2
    assert heads_measures(heads_summary([None] * len(values))) == {}
    with pytest.raises(ValueError, match="54"):
        heads_summary(values[:3])


def test_a_chapter_shows_the_paper_scale_row_or_says_it_is_not_run(tmp_path, capsys):
    import lib.studies.paper as ps

    data = fresh_data(tmp_path)
    assert ps.paper_claim("B-sparsity", data, show=False) is None
    assert ps.study_progress(None) == {"done": 0, "of": 0, "cpu_hours": 0.0}
    assert ps.study_progress(None, "b-sparsity")["of"] == 144 and ps.study_progress(None, "b-mixer")["of"] == 18
    values = _fake_values(lambda S, s, k: 0.35 + 0.33 * (s == S // 2), done=lambda S, s, k: S == 16)
    _commit_fake(data, ps.b_sparsity(), values)
    shown = ps.paper_claim("B-sparsity", data, show=False)
    record = ps.study_record("b-sparsity", data)
    assert shown.scale == "paper" and ps.study_progress(record) == {"done": 48, "of": 144, "cpu_hours": 2.4}
    assert record["summary"] == bsp.sparsity_summary(values)  # recomputed from the committed units
    assert ps.paper_claim("B-heads-one", data, show=False) is None  # no published study measures it here


def test_calibration_costs_read_the_committed_units_by_precision():
    from lib.readouts.paper import calibration_costs
    from lib.studies.paper.seeds import bf16_calibration
    from lib.studies._study import unit_key

    units = bf16_calibration().units[:4]  # two pairs
    per_step = {"fp32": 0.14, "bf16": 0.08}
    record = {
        "units": {
            unit_key(u): {"cpu_seconds": per_step[u.config.precision] * 1000, "value": {"steps_run": 1000}}
            for u in units
        }
    }
    assert calibration_costs(record) == pytest.approx(per_step)
    assert all(np.isnan(v) for v in calibration_costs(None).values())


def test_b_random_shares_the_calibration_units_and_reads_the_spread_as_chapter_6():
    from lib import spread
    from lib.studies.paper.seeds import (
        CALIBRATION_SEEDS,
        RANDOM_BIAS,
        b_random,
        bf16_calibration,
        random_measures,
        random_summary,
    )
    from lib.studies._study import unit_key

    study = b_random()
    n = len(CALIBRATION_SEEDS)
    fp32 = [unit_key(u) for u in bf16_calibration().units if u.config.precision == "fp32"]
    assert [unit_key(u) for u in study.units[:n]] == fp32  # the same runs: computed once, committed in both
    assert [u.config.run.members[0].bias for u in study.units] == [0.0] * n + [RANDOM_BIAS] * n
    exits = [800, 1600, None] + [1200] * (n - 3)  # None: never leaves within the budget
    biased = [200, 300] + [200] * (n - 2)
    summary = random_summary([_curve(e) for e in exits] + [_curve(e) for e in biased])
    assert summary["exits"][:3] == [800, 1600, "never"]
    m = random_measures(summary)["B-random"]
    assert m["chapter"] == "06_sparse_patterns" and m["value"] == pytest.approx(2.0) == spread([800, 1600, np.inf])
    assert m["control"] == pytest.approx(1.5) and not m["incomplete"]
    assert m["interval"].lo <= m["value"] <= m["interval"].hi
    part = random_measures(random_summary([_curve(e) for e in exits[:4]] + [None] * (2 * n - 4)))["B-random"]
    assert part["control"] is None and len(part["incomplete"]) == 2  # both halves say what is missing
    assert random_measures(random_summary([_curve(800)] + [None] * (2 * n - 1))) == {}  # one run: no spread yet
    with pytest.raises(ValueError, match="unit values"):
        random_summary([None])


def _loss_curve(exit_at, budget, every=100, plateau=0.69, after=0.3):
    """A unit's curves on the plateau until ``exit_at`` (``None``: never, to ``budget``), then ``after`` for two
    more evaluations (the unit stopped once solved)."""
    end = budget if exit_at is None else min(budget, exit_at + 2 * every)
    steps = list(range(0, end + 1, every))
    loss = [[plateau if exit_at is None or s < exit_at else after] for s in steps]
    return {"steps": steps, "loss": loss, "pred_loss": loss, "steps_run": steps[-1]}


def test_the_mixer_tuning_units_and_rule_are_chapter_7s():
    from lib.studies.paper.mixers import MIXER_ARCHS, _mixer_tuning_keys, b_mixer_tuning, mixer_tuning_summary
    from lib.studies.mixer_comparison import MixerComparisonConfig

    study, keys, t = b_mixer_tuning(), _mixer_tuning_keys(), MixerComparisonConfig.paper().tuning
    assert len(study.units) == len(keys) == len(MIXER_ARCHS) * len(t.lm_s) * len(t.lrs) == 24 and not study.measures
    stacked = {arch: t.run_config(arch, "linear map") for arch in MIXER_ARCHS}
    for u, (arch, s, lr) in zip(study.units, keys):
        run, stack = u.config, stacked[u.config.mixer]
        assert (run.mixer, run.lr, run.members[0].task.s, run.members[0].lr) == (arch, lr, s, None)
        assert (run.steps, run.stop_below, run.tokens_per_step, run.d_mlp) == (stack.steps, t.solved, 8192, 512)
        assert run.members[0].seed == t.tune_seed  # the tuning seed, not an evaluation seed
    # the attention arch leaves soonest at the second rate, the mixer at the third
    exit_at = {"attention": [None, 600, 1500, None], "mlp_mixer": [2000, 900, 300, 1200]}
    values = [_loss_curve(exit_at[arch][t.lrs.index(lr)], t.lm_steps) for arch, s, lr in keys]
    out = mixer_tuning_summary(values)
    assert out["archs"]["attention"]["best_lr"] == t.lrs[1] and out["archs"]["mlp_mixer"]["best_lr"] == t.lrs[2]
    from lib.studies.mixer_tuning import mean_loss_over_budget

    one = mean_loss_over_budget(values[1]["pred_loss"], t.lm_steps, t.eval_every)[0]  # a stopped unit carries its last
    assert out["archs"]["attention"]["scores"][1] == pytest.approx(one)
    part = mixer_tuning_summary(values[:-1] + [None])
    assert part["archs"]["mlp_mixer"]["best_lr"] is None and part["archs"]["mlp_mixer"]["scores"][-1] is None
    # where each left the plateau: every sparsity at the rates that exit, none at the rate that never does
    every = list(t.lm_s)
    assert out["archs"]["attention"]["left_plateau"] == [[], every, every, []]
    assert out["archs"]["mlp_mixer"]["left_plateau"] == [every] * 4
    assert part["archs"]["mlp_mixer"]["left_plateau"][-1] == every[:-1]  # a unit not done is not counted
    from lib.readouts.paper import tuning_exits

    text = tuning_exits(out, {"attention": "T"})
    assert (
        text.startswith(f"T: {t.lrs[1]:g} (s = {', '.join(map(str, every))}); {t.lrs[2]:g}") and "mlp_mixer: " in text
    )
    never = mixer_tuning_summary([_loss_curve(None, t.lm_steps) for _ in keys])
    assert tuning_exits(never).count("at no rate and no sparsity") == len(MIXER_ARCHS)
    with pytest.raises(ValueError, match="left_plateau"):
        tuning_exits({"lrs": [], "archs": {"attention": {"scores": [], "best_lr": None}}})


def test_b_mixer_needs_the_committed_tuning_and_trains_at_its_rates(tmp_path):
    import lib.studies.paper as ps
    from lib.studies.mixer_comparison import MixerComparisonConfig

    data = fresh_data(tmp_path)
    with pytest.raises(RuntimeError, match="b-mixer-tuning"):
        ps.b_mixer(data)
    c = MixerComparisonConfig.paper()
    t, tuning = c.tuning, ps.b_mixer_tuning()
    exit_at = {"attention": [None, 600, 1500, None], "mlp_mixer": [2000, 900, 300, 1200]}
    values = [_loss_curve(exit_at[arch][t.lrs.index(lr)], t.lm_steps) for arch, s, lr in bmx._mixer_tuning_keys()]
    _commit_fake(data, tuning, values[:-1] + [None])  # one unit short: no rates yet
    assert bmx.mixer_rates(data) is None and ps.paper_records(data) == []
    _commit_fake(data, tuning, values)
    assert bmx.mixer_rates(data) == {"attention": t.lrs[1], "mlp_mixer": t.lrs[2]}
    study = ps.make_study("b-mixer", data)
    assert len(study.units) == 18 and study.claims == ("B-mixer",)
    for u, (s, arch, k) in zip(study.units, ps._mixer_keys()):
        run = u.config
        assert (run.mixer, run.members[0].task.s, run.members[0].seed) == (arch, s, k)
        assert run.lr == bmx.mixer_rates(data)[arch] and run.members[0].lr is None
        assert (run.steps, run.stop_below) == (c.lm_steps, t.solved)
        assert run.init == LINEAR_MAP_INIT == "torch"  # the calibrated initialisation of the linear map
    assert ps.paper_records(data) == []  # b-mixer not published yet
    # the first version, from the trainer's default initialisation: its own tuning, no claim
    assert all(u.config.init == "torch" for u in tuning.units)
    with pytest.raises(RuntimeError, match="b-mixer-tuning-gpt2"):
        ps.make_study("b-mixer-gpt2", data)
    old = ps.make_study("b-mixer-tuning-gpt2")
    assert [u.config for u in old.units] == [replace(u.config, init="gpt2") for u in tuning.units]
    _commit_fake(data, old, values)
    gpt2 = ps.make_study("b-mixer-gpt2", data)
    assert gpt2.claims == () and not gpt2.measures and gpt2.name == "b-mixer-gpt2"
    assert [u.config for u in gpt2.units] == [replace(u.config, init="gpt2") for u in study.units]
    assert ps.study_progress(None, "b-mixer-gpt2")["of"] == 18


def test_mixer_view_says_what_each_stage_has(tmp_path):
    import lib.studies.paper as ps
    from lib.studies.mixer_comparison import MixerComparisonConfig

    data = fresh_data(tmp_path)
    view = readouts_paper.mixer_view("", {"attention": "T"}, data)
    assert (view["tuning_done"], view["tuning_of"], view["of"], view["summary"]) == (0, 24, 18, None)
    assert all(view[k] == "none yet" for k in ("rates", "scores", "left", "ratio", "finals", "solved_at"))
    t = MixerComparisonConfig.paper().tuning
    exit_at = {"attention": [None, 600, 1500, None], "mlp_mixer": [2000, 900, 300, 1200]}
    _commit_fake(
        data,
        ps.b_mixer_tuning(),
        [_loss_curve(exit_at[a][t.lrs.index(lr)], t.lm_steps) for a, s, lr in bmx._mixer_tuning_keys()],
    )
    study = ps.make_study("b-mixer", data)
    values = [_loss_curve(900 if arch == "attention" else 300, 10_000) for s, arch, k in ps._mixer_keys()]
    _commit_fake(data, study, values[:6] + [None] * 12)  # s = 3 only
    view = readouts_paper.mixer_view("", {"attention": "T"}, data)
    assert view["rates"] == f"T {t.lrs[1]:g}, mlp_mixer {t.lrs[2]:g}" and view["done"] == 6
    assert view["scores"].startswith("T ") and view["scores"].endswith(f"(rates {', '.join(f'{r:g}' for r in t.lrs)})")
    assert view["ratio"] == bmx.mixer_measures(view["summary"])["B-mixer"]["text"] and "3.0 at s = 3" in view["ratio"]
    assert view["finals"].startswith("s = 3: T 0 of 3 solved") and "s = 5: T none done" in view["finals"]
    assert readouts_paper.mixer_view("-gpt2", data_dir=data)["tuning_done"] == 0  # the other version: nothing committed


def test_b_mixer_reads_the_ratio_as_chapter_7():
    from types import SimpleNamespace

    from lib import LINEAR_MAP_EXIT, curve_time_ratio, halves_time_ratio
    from lib.studies.paper.mixers import _mixer_keys, mixer_measures, mixer_summary

    keys = _mixer_keys()
    exits = {
        ("attention", 3): [900, 1500, 1200],
        ("mlp_mixer", 3): [200, 300, 400],
        ("attention", 5): [None] * 3,
        ("mlp_mixer", 5): [1000, 2000, 3000],
        ("attention", 7): [None] * 3,
        ("mlp_mixer", 7): [None] * 3,
    }
    values = [_loss_curve(exits[arch, s][k], 10_000) for s, arch, k in keys]
    summary = mixer_summary(values)
    assert summary["steps"][-1] == 10_000 and len(summary["curves"]["attention,3"][0]) == 101
    assert summary["curves"]["mlp_mixer,3"][0][-1] == 0.3  # carried to the budget once solved
    m = mixer_measures(summary)["B-mixer"]
    grid = np.array(summary["steps"])

    def run(arch):
        return SimpleNamespace(
            steps=grid,
            pred_loss=np.array([c for s in (3, 5, 7) for c in summary["curves"][f"{arch},{s}"]], dtype=float).T,
        )

    tf, mix = run("attention"), run("mlp_mixer")
    assert m["value"] == pytest.approx(curve_time_ratio(tf, mix, 3, LINEAR_MAP_EXIT, 10_000))
    # s = 3: the means cross at 1,200 and 300 (4x); s = 5: the transformer never (10,000) over 2,000; s = 7 left out
    assert m["value"] == pytest.approx(np.sqrt(4.0 * 5.0))
    assert m["control"] == pytest.approx(halves_time_ratio(tf, 3, LINEAR_MAP_EXIT, 10_000))
    assert m["interval"].lo <= m["value"] <= m["interval"].hi and not m["incomplete"]
    part = mixer_measures(mixer_summary(values[:6] + [None] * 12))["B-mixer"]  # s = 3 only
    assert part["value"] == pytest.approx(4.0) and part["incomplete"] == ["s = 5 not done yet", "s = 7 not done yet"]
    assert mixer_measures(mixer_summary([None] * 18)) == {}


def test_a_reference_unit_trains_the_mlp_mixer_at_the_papers_width():
    from lib.studies.paper.mixers import b_mixer_tuning
    from lib.studies._units import reference_curves
    from lib.core.smoke import cut

    unit = next(u for u in b_mixer_tuning().units if u.config.mixer == "mlp_mixer")
    out = reference_curves(cut(unit.config, 1000))  # the paper's model, 3 steps
    assert out["steps_run"] == 3 and len(out["pred_loss"][-1]) == 1
    assert np.isfinite(out["pred_loss"]).all() and json.loads(json.dumps(out)) == out


@pytest.mark.parametrize("arch", ["attention", "mlp_mixer"])
def test_a_tuning_unit_trains_as_its_member_of_chapter_7s_stack(arch):
    """A ``b-mixer-tuning`` unit is one member of chapter 7's tuning stack, trained alone at the member's rate: the
    same curves (per-member rates rescale the stack's Adam, equal up to Adam's epsilon)."""
    from dataclasses import replace

    from lib.studies.mixer_tuning import MixerTuningConfig
    from lib.train.gpt_train import run_members

    t = MixerTuningConfig.fast()
    stack = replace(t.run_config(arch, "linear map"), steps=30, eval_every=10)  # members (s, lr), sparsity-major
    j = 5  # the second sparsity at the third rate (the stack runs at the second: this member is rescaled)
    member = stack.members[j]
    alone = replace(stack, members=(Member(member.task, seed=member.seed),), lr=member.lr)
    together, single = run_members(stack), run_members(alone)
    np.testing.assert_allclose(single.pred_loss[:, 0], together.pred_loss[:, j], atol=2e-4)
    assert member.lr != stack.lr and not np.allclose(together.pred_loss[:, j], together.pred_loss[:, j - 1])


def test_heads_grid_averages_the_seeds_done_per_cell():
    from lib.readouts.paper import heads_grid
    from lib.studies.paper.heads import _heads_keys, heads_summary

    keys = _heads_keys()
    values = [None] * len(keys)
    done = {(1, 4, 0): (0.69, None), (2, 4, 0): (0.1, 300), (2, 4, 1): (0.3, 900), (32, 16, 2): (0.0, 100)}
    for n, key in enumerate(keys):
        if key in done:
            final, exit_at = done[key]
            values[n] = {
                "steps": [0, 100, 200],
                "steps_run": 200,
                "pred_loss": [[0.7], [0.7 if exit_at is None else 0.5], [final]],
            }
    s = heads_summary(values)
    g = heads_grid(s)
    i4, i16 = g["d_heads"].index(4), g["d_heads"].index(16)
    j1, j2, j32 = (g["heads"].index(H) for H in (1, 2, 32))
    assert g["loss"].shape == (len(g["d_heads"]), len(g["heads"])) == g["done"].shape
    assert g["loss"][i4, j2] == pytest.approx(0.2) and g["done"][i4, j2] == 2 and g["left"][i4, j2] == 2
    assert g["loss"][i4, j1] == pytest.approx(0.69) and (g["done"][i4, j1], g["left"][i4, j1]) == (1, 0)
    assert (g["done"][i16, j32], g["left"][i16, j32]) == (1, 1)
    assert np.isnan(g["loss"]).sum() == g["loss"].size - 3 and g["done"].sum() == 4


def test_mixer_finals_counts_solved_runs_over_the_seeds_done():
    from lib.measures.comparisons import SOLVED
    from lib.readouts.paper import mixer_finals

    summary = {
        "archs": ["attention", "mlp_mixer"],
        "sparsities": [3, 5],
        "seeds": [0, 1, 2],
        "curves": {
            "attention,3": [[0.69, 0.4], [0.69, SOLVED / 2], None],
            "mlp_mixer,3": [[0.69, SOLVED]] * 3,
            "attention,5": [None] * 3,
            "mlp_mixer,5": [[0.69, 0.01], None, None],
        },
    }
    text = mixer_finals(summary, {"attention": "T"})
    assert text.startswith(f"s = 3: T 1 of 2 solved, mean last loss {(0.4 + SOLVED / 2) / 2:.3f}, mlp_mixer 0 of 3")
    assert "s = 5: T none done, mlp_mixer 1 of 1 solved, mean last loss 0.010" in text


def test_mixer_solved_at_gives_each_seeds_solve_step_and_a_censored_ratio_of_medians():
    from lib.measures.comparisons import SOLVED
    from lib.readouts.paper import mixer_solved_at

    hi, lo = 0.69, SOLVED / 2
    summary = {
        "archs": ["attention", "mlp_mixer"],
        "sparsities": [3, 5],
        "seeds": [0, 1, 2],
        "budget": 300,
        "steps": [0, 100, 200, 300],
        "curves": {
            "attention,3": [[hi, hi, lo, lo], [hi, hi, hi, lo], [hi, hi, hi, hi]],
            "mlp_mixer,3": [[hi, lo, lo, lo]] * 3,
            "attention,5": [[hi, hi, lo, lo], [hi, hi, lo, lo], [hi, hi, hi, hi]],
            "mlp_mixer,5": [[hi, lo, lo, lo], [hi, SOLVED, lo, lo], None],
        },
    }
    text = mixer_solved_at(summary, {"attention": "T"})
    s3, s5 = text.split(" · ")
    # s = 3: medians 300 (a seed solved at the budget: exact) over 100
    assert s3 == "s = 3: T 200, 300, not by 300; mlp_mixer 100, 100, 100 (ratio of medians 3.0)"
    # s = 5: a loss equal to SOLVED is not below it; a seed not done: no ratio
    assert s5 == "s = 5: T 200, 200, not by 300; mlp_mixer 100, 200"
    censored = dict(summary, curves=dict(summary["curves"], **{"attention,3": [[hi] * 4, [hi] * 4, [hi, lo, lo, lo]]}))
    assert mixer_solved_at(censored).split(" · ")[0].endswith("(ratio of medians ≥ 3.0)")


def test_every_linear_map_study_starts_from_the_calibrated_initialisation():
    """Chapter 6's plateau calibration chose the linear map's initialisation at paper scale; a study that forgets it
    (as the first B-mixer studies did) measures the trainer's default init instead. Staged studies are checked in
    test_b_mixer_needs_the_committed_tuning_and_trains_at_its_rates; the "-gpt2" versions are that first version."""
    import lib.studies.paper as ps
    from lib.tasks import LinearMapTask

    checked = 0
    for name, make in ps.STUDIES.items():
        if name in ps.STAGED or name.endswith("-gpt2"):
            continue
        for u in make().units:
            run = getattr(u.config, "run", u.config)  # FastRunConfig wraps the GPTRunConfig
            if all(isinstance(m.task, LinearMapTask) for m in run.members):
                assert run.init == LINEAR_MAP_INIT, f"{name}: a unit starts from init {run.init!r}"
                checked += 1
    assert checked >= 54 + 18 + 24  # b-heads, b-heads-one, b-mixer-tuning at least


def test_only_runs_the_units_named_by_index_and_rejects_bad_indices(tmp_path):
    from lib.studies._study import unit_key

    study, data = tiny_study(), fresh_data(tmp_path)
    got = run_study(study, only=[2, 0], workers=1, cache=Cache(tmp_path / "c", enabled=True), data_dir=data)
    assert set(got["units"]) == {unit_key(study.units[0]), unit_key(study.units[2])}
    for bad in ([], [len(study.units)], [-1], [True]):
        with pytest.raises(ValueError, match="only must name unit indices"):
            run_study(study, only=bad, cache=Cache(tmp_path / "c", enabled=True), data_dir=data)
    with pytest.raises(ValueError, match="limit or only"):
        run_study(study, only=[0], limit=1, cache=Cache(tmp_path / "c", enabled=True), data_dir=data)


def test_b_context_runs_the_linear_map_at_four_sizes_and_reads_chapter_6s_growth():
    from lib import growth_per_doubling
    from lib.measures.comparisons import LINEAR_MAP_EXIT
    from lib.studies.paper.context import (
        CONTEXT_BIAS,
        CONTEXT_SEEDS,
        CONTEXT_SIZES,
        b_context,
        context_measures,
        context_summary,
    )

    study = b_context()
    n = len(CONTEXT_SIZES) * len(CONTEXT_SEEDS)
    assert len(study.units) == 2 * n and study.claims == ("B-context",)
    runs = [u.config.run for u in study.units]
    assert [r.members[0].task.S for r in runs[:n]] == [S for S in CONTEXT_SIZES for _ in CONTEXT_SEEDS]
    assert [r.members[0].bias for r in runs] == [0.0] * n + [CONTEXT_BIAS] * n
    assert all(r.members[0].task.s == 3 and r.seq_len == 2 * r.members[0].task.S for r in runs)
    assert all(r.eval_every == 10 and r.stop_below == LINEAR_MAP_EXIT and r.steps == 10_000 for r in runs)
    assert all((r.n_heads, r.d_head, r.d_mlp, r.tokens_per_step, r.lr) == (8, 16, 512, 8192, 1e-3) for r in runs)
    assert [u.config.run.members[0].seed for u in b_context(100).units[:3]] == [k + 100 for k in CONTEXT_SEEDS]

    def summary(exits, biased):
        return context_summary([_curve(e) for e in exits] + [None if b is None else _curve(b) for b in biased])

    unbiased = [e for S in (100, 400, 1600, None) for e in (S, S, S)]  # S = 64 never leaves: counted at the budget
    m = context_measures(summary(unbiased, [200] * n))["B-context"]
    assert m["value"] == pytest.approx((10_000 / 100) ** (1 / 3))  # a lower bound: the last size is censored
    assert m["control"] == 0.0 and not m["incomplete"]  # equal biased plateaus do not rise at every doubling
    assert m["interval"].lo <= m["value"] <= m["interval"].hi
    # with two censored sizes the growth stops at the first (equal medians at the budget say nothing)
    two = [e for S in (100, 400, None, None) for e in (S, S, S)]
    assert context_measures(summary(two, [200] * n))["B-context"]["value"] == pytest.approx(10.0)
    # uncensored, it is chapter 6's growth on the medians of the same plateaus
    free = [e for S in (100, 300, 900, 2700) for e in (S - 100, S, S + 100)]
    plateaus = np.array(free, dtype=float).reshape(len(CONTEXT_SIZES), -1)
    assert context_measures(summary(free, [200] * n))["B-context"]["value"] == pytest.approx(
        growth_per_doubling(plateaus, CONTEXT_SIZES)
    )
    rising = [b for S in (100, 200, 400, 800) for b in (S, S, S)]  # a control that rises passes the bound
    assert context_measures(summary(free, rising))["B-context"]["control"] == pytest.approx(2.0)
    part = context_measures(summary(unbiased, [200] * 3 + [None] * (n - 3)))["B-context"]
    assert part["control"] is None and part["incomplete"]
    assert context_measures(context_summary([None] * (2 * n))) == {}  # the sizes taken need every unbiased run
    with pytest.raises(ValueError, match="unit values"):
        context_summary([None])
