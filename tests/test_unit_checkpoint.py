"""Paper-scale units that survive being stopped, and train where the engine says: lib.train.train_ensemble_resumable,
lib.train.fast_train.run_fast(checkpoint=...), lib.core.unit_context and the engine's run_unit.

Properties: the resumable trainer is train_ensemble step for step (bit for bit, with early stops, a schedule, weight
decay and SGD); a unit killed by SIGKILL mid-run and started again ends with the numbers of the run never stopped;
a checkpoint of another run is refused and an unreadable one recomputed; the engine removes a finished unit's
checkpoint and records its device; a bad device is refused before anything runs."""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
import os
import signal
import time

import numpy as np
import pytest
import torch

from lib.core.unit_context import UnitContext, current_unit, unit_device, unit_running
from lib.tasks import LinearMapTask
from lib.train import AdamConfig, Checkpoint, GPTRunConfig, Member, train_ensemble, train_ensemble_resumable
from lib.train.fast_train import FastRunConfig, run_fast


def _problem(E=3, n=40, d=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    X, y = torch.randn(E, n, d, generator=g), torch.randn(E, n, generator=g)
    y[1] *= 1e-3  # member 1 is nearly solved at zero: the stopping callback freezes it early

    def loss_fn(p, step):
        return ((torch.einsum("end,ed->en", X, p["w"]) + p["b"] - y) ** 2).mean(1)

    return {"w": torch.zeros(E, d), "b": torch.zeros(E, 1)}, loss_fn


def _stop_small(p, step):  # freeze the members whose bias is tiny (member 1, at its first check point after 0)
    return (p["b"][:, 0].abs() < 1e-3) & torch.tensor(step > 0)


def _same(a, b):
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, dict):
            assert x.keys() == y.keys() and all(torch.equal(x[k], y[k]) for k in x), f.name
        elif isinstance(x, torch.Tensor):
            assert torch.equal(x, y) or (x.isnan() == y.isnan()).all() and torch.equal(x.nan_to_num(), y.nan_to_num())
        else:
            assert x == y, f.name


@pytest.mark.parametrize(
    "adam",
    [
        AdamConfig(lr=0.05, steps=90, check_every=10),
        AdamConfig(lr=0.05, steps=90, check_every=10, tol=1e-3, lr_final=1e-3),
        AdamConfig(lr=0.05, steps=90, check_every=7, weight_decay=0.1),
        AdamConfig(lr=0.05, steps=90, check_every=10, optimizer="sgd"),
    ],
)
def test_the_resumable_trainer_is_train_ensemble_bit_for_bit(adam, tmp_path):
    params, loss_fn = _problem()
    plain = train_ensemble(params, loss_fn, adam, on_check=_stop_small)
    _same(train_ensemble_resumable(params, loss_fn, adam, on_check=_stop_small), plain)
    ck = Checkpoint(tmp_path / "ck.pt", every=20)
    _same(train_ensemble_resumable(params, loss_fn, adam, on_check=_stop_small, checkpoint=ck), plain)
    saved = torch.load(ck.path, weights_only=False)["step"]  # the last checkpoint written
    assert saved % 20 == 0 and 0 < saved <= plain.steps_run
    # started again from that checkpoint (the steps after it recomputed), the same run to the bit
    _same(train_ensemble_resumable(params, loss_fn, adam, on_check=_stop_small, checkpoint=ck), plain)


def _run(steps=400, **kw):
    task = LinearMapTask(4, 1, seed=0, distinct=True)
    members = (Member(task, seed=0), Member(task, seed=1, bias=4.0))  # the biased member stops early
    base = dict(members=members, n_heads=2, d_head=4, tokens_per_step=256, steps=steps, lr=1e-2, eval_every=20)
    return FastRunConfig(GPTRunConfig(**{**base, "eval_tokens": 256, "stop_below": 0.05, **kw}), "fp32")


def _arrays(run):
    out = {
        f.name: getattr(run, f.name) for f in dataclasses.fields(run) if isinstance(getattr(run, f.name), np.ndarray)
    }
    return {**out, **{f"params.{k}": v for k, v in run.params.items()}, "steps_run": run.steps_run}


def _train_until_killed(cfg, path, every):
    torch.set_num_threads(1)
    run_fast(cfg, checkpoint=path, checkpoint_every=every)


def test_a_unit_killed_mid_run_resumes_to_the_numbers_of_one_never_stopped(tmp_path):
    torch.set_num_threads(1)
    cfg, path = _run(), tmp_path / "unit.pt"
    whole = _arrays(run_fast(cfg))
    proc = mp.get_context("spawn").Process(target=_train_until_killed, args=(cfg, path, 40))
    proc.start()
    deadline = time.monotonic() + 120
    while not path.exists() and proc.is_alive() and time.monotonic() < deadline:
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.join()
    assert proc.exitcode == -signal.SIGKILL, "the run ended before it could be killed: make it longer"
    stopped_at = torch.load(path, weights_only=False)["step"]
    assert 0 < stopped_at < cfg.run.steps
    resumed = _arrays(run_fast(cfg, checkpoint=path, checkpoint_every=40))
    assert resumed.keys() == whole.keys()
    for k in whole:
        assert np.array_equal(resumed[k], whole[k]), k  # every evaluation, weight and the step count, to the bit


def test_a_checkpoint_of_another_run_is_refused_and_an_unreadable_one_recomputed(tmp_path):
    path = tmp_path / "unit.pt"
    run_fast(_run(steps=60), checkpoint=path, checkpoint_every=20)
    with pytest.raises(ValueError, match=f"checkpoint {path} belongs to another run"):
        run_fast(_run(steps=60, d_head=8), checkpoint=path, checkpoint_every=20)
    path.write_bytes(b"not a checkpoint")
    with pytest.warns(UserWarning, match="unreadable"):
        again = _arrays(run_fast(_run(steps=60), checkpoint=path, checkpoint_every=20))
    assert all(np.array_equal(again[k], v) for k, v in _arrays(run_fast(_run(steps=60))).items())
    with pytest.raises(ValueError, match="both state and restore"):
        Checkpoint(path, state=lambda: None)
    with pytest.raises(ValueError, match="every must be an int >= 1"):
        Checkpoint(path, every=0)


def test_the_engine_runs_a_unit_in_its_context_and_removes_its_checkpoint(tmp_path, monkeypatch):
    from lib.studies._study import run_unit, unit, unit_key

    monkeypatch.setenv("BOOK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("BOOK_CHECKPOINT_DIR", str(tmp_path / "checkpoints"))
    monkeypatch.setenv("BOOK_CHECKPOINT_EVERY", "20")
    monkeypatch.setenv("BOOK_UNIT_DEVICE", "cpu")
    u = unit("lib.studies._units:fast_curves", _run(steps=60))
    seen = []
    import lib.studies._units as units

    real = units.run_fast
    monkeypatch.setattr(units, "run_fast", lambda cfg, **kw: (seen.append(kw), real(cfg, **kw))[1])
    out = run_unit(u)
    assert seen == [
        {"device": "cpu", "checkpoint": tmp_path / "checkpoints" / f"{unit_key(u)}.pt", "checkpoint_every": 20}
    ]
    assert out["machine"]["device"] == "cpu" and not (tmp_path / "checkpoints" / f"{unit_key(u)}.pt").exists()
    assert out["value"]["steps"] == [0, 20, 40, 60] or out["value"]["steps_run"] <= 60
    assert current_unit() == UnitContext()  # outside a unit: the CPU, no checkpoint
    monkeypatch.setenv("BOOK_CHECKPOINT_EVERY", "0")  # no checkpoints: nothing written
    run_unit(u)
    assert not (tmp_path / "checkpoints").exists() or not any((tmp_path / "checkpoints").iterdir())


def test_a_bad_device_or_interval_is_refused_before_anything_runs(monkeypatch, capsys):
    from lib.studies.__main__ import main

    monkeypatch.setenv("BOOK_UNIT_DEVICE", "tpu")
    with pytest.raises(ValueError, match="BOOK_UNIT_DEVICE must be auto, cpu, cuda or cuda:N, got 'tpu'"):
        unit_device()
    monkeypatch.setenv("BOOK_UNIT_DEVICE", "auto")
    assert unit_device() == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(SystemExit):
        main(["run", "b-random", "--device", "tpu"])
    assert "BOOK_UNIT_DEVICE must be" in capsys.readouterr().err
    with pytest.raises(ValueError, match="device must be 'cpu'"):
        UnitContext(device="tpu")
    with pytest.raises(ValueError, match="every must be an int >= 1"):
        UnitContext(every=0)
    if not torch.cuda.is_available():
        with pytest.raises(SystemExit):
            main(["run", "b-random", "--device", "cuda"])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_unit_on_the_gpu_follows_the_cpu_run_and_resumes():
    cpu = run_fast(_run(steps=100))
    with unit_running(UnitContext(device="cuda")):
        from lib.studies._units import fast_curves

        gpu = fast_curves(_run(steps=100))
    np.testing.assert_allclose(np.array(gpu["pred_loss"]), cpu.pred_loss, atol=1e-4)


def test_a_bfloat16_unit_is_refused_where_the_cpu_emulates_bfloat16(monkeypatch):
    import lib.core.env as env
    from lib.studies._study import check_precision, unit

    bf16, fp32 = (
        unit("lib.studies._units:fast_curves", dataclasses.replace(_run(), precision=p)) for p in ("bf16", "fp32")
    )
    monkeypatch.setattr(env, "native_bf16", lambda: False)
    with pytest.raises(ValueError, match="trains in bfloat16, which this CPU emulates"):
        check_precision(bf16, "cpu")
    check_precision(fp32, "cpu")  # float32 runs anywhere
    check_precision(bf16, "cuda")  # a GPU has bfloat16
    monkeypatch.setattr(env, "native_bf16", lambda: True)
    check_precision(bf16, "cpu")  # a CPU with AVX-512 BF16 or AMX


# ------------------------------------------------------------------ stacks: units of one shape trained as one run
def _fast_unit(seed, bias=0.0, d_head=4):
    from lib.studies._study import unit

    cfg = _run(steps=200, d_head=d_head)
    member = Member(cfg.run.members[0].task, seed=seed, bias=bias)
    return unit(
        "lib.studies._units:fast_curves", dataclasses.replace(cfg, run=dataclasses.replace(cfg.run, members=(member,)))
    )


def test_units_of_one_shape_are_gathered_into_stacks_of_at_most_k():
    from lib.studies._stack import UnitStack, make_stacks, stackable

    a = [_fast_unit(k) for k in range(3)]
    b = [_fast_unit(k, d_head=8) for k in range(2)]
    other = dataclasses.replace(a[0], func="sweep_helpers:square_or_die")  # another function: never stacked
    assert stackable(a[0]) == stackable(a[2]) != stackable(b[0]) and stackable(other) is None
    got = make_stacks([a[0], b[0], other, a[1], b[1], a[2]], 2)
    assert got == [UnitStack((a[0], a[1])), UnitStack((b[0], b[1])), other, UnitStack((a[2],))]
    assert make_stacks(a, 1) == a
    with pytest.raises(ValueError, match="stack size must be an int >= 1"):
        make_stacks(a, 0)
    with pytest.raises(ValueError, match="one shape"):
        UnitStack((a[0], b[0]))


def test_a_stacked_members_curves_are_cut_to_its_run_alone():
    from lib.studies._stack import split_stack

    loss, pred = [[2, 2], [1, 1.5], [0.5, 1.2], [0.5, 1.1]], [[1, 1], [0.04, 0.9], [0.04, 0.8], [0.04, 0.7]]
    value = {"steps": [0, 20, 40, 60], "loss": loss, "pred_loss": pred, "steps_run": 60}  # member 0 stops at 20
    assert split_stack(value, 0, 0.05) == {
        "steps": [0, 20],
        "loss": [[2], [1]],
        "pred_loss": [[1], [0.04]],
        "steps_run": 20,
    }
    assert split_stack(value, 1, 0.05)["steps"] == [0, 20, 40, 60] and split_stack(value, 1, 0.05)["steps_run"] == 60
    value["loss"][2][1] = float("nan")
    with pytest.raises(ValueError, match="non-finite"):
        split_stack(value, 1, 0.05)


def test_a_stack_gives_each_unit_the_value_it_has_alone(tmp_path, monkeypatch):
    from lib.studies._stack import UnitStack, run_stack
    from lib.studies._study import run_unit

    monkeypatch.setenv("BOOK_CHECKPOINT_DIR", str(tmp_path))
    units = (_fast_unit(0), _fast_unit(1, bias=4.0), _fast_unit(2))  # the biased member stops early
    alone = [run_unit(u) for u in units]
    stacked = run_stack(UnitStack(units))
    assert [s["machine"]["stacked"] for s in stacked] == [3, 3, 3] and not any(tmp_path.iterdir())
    assert alone[1]["value"]["steps_run"] < 200  # the early stop is cut back to the unit's own
    for a, s in zip(alone, stacked):
        a, s = a["value"], s["value"]
        assert a["steps"] == s["steps"] and a["steps_run"] == s["steps_run"]
        np.testing.assert_allclose(s["pred_loss"], a["pred_loss"], rtol=0, atol=1e-5)
        np.testing.assert_allclose(s["loss"], a["loss"], rtol=0, atol=1e-5)


def test_a_study_run_in_stacks_publishes_every_unit_as_its_own(tmp_path, monkeypatch):
    import json

    from lib.core.cache import Cache
    from lib.studies._paper_scale import PaperStudy, run_study

    monkeypatch.setenv("BOOK_CHECKPOINT_DIR", str(tmp_path / "ck"))
    units = tuple(_fast_unit(k, bias=4.0 * (k == 1)) for k in range(3))
    study = PaperStudy("stacked", ("B-random",), "three tiny units (a test)", units, "sweep_helpers:summarize_losses")
    data = {}
    for stack in (1, 2):
        data[stack] = tmp_path / f"data{stack}"
        data[stack].mkdir()
        (data[stack] / "manifest.json").write_text(json.dumps({"files": {}}))
        cache = Cache(tmp_path / f"cache{stack}", enabled=True)
        record = run_study(study, workers=1, cache=cache, data_dir=data[stack], stack=stack)
        assert (record["done"], record["of"]) == (3, 3)
    alone, stacked = (json.loads((data[k] / "paper" / "stacked.json").read_text())["units"] for k in (1, 2))
    assert alone.keys() == stacked.keys()  # the same units, filed under the same keys
    assert sorted(u["machine"].get("stacked", 1) for u in stacked.values()) == [1, 2, 2]  # a stack of 2, one alone
    for key in alone:
        a, s = alone[key]["value"], stacked[key]["value"]
        assert a["steps"] == s["steps"] and np.allclose(a["pred_loss"], s["pred_loss"], rtol=0, atol=1e-5)
    with pytest.raises(ValueError, match="stack must be an int >= 1"):
        run_study(study, workers=1, data_dir=data[1], stack=0)
