"""lib.paper_scale: a study's units through the sweep engine, resumed, published with their cost; the same published
result from the local process pool and from a dask LocalCluster scheduler."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from lib.cache import Cache
from lib.paper_scale import PaperStudy, StudyUnit, executor_for, main, publish, run_study, run_unit, unit
from lib.tasks import LinearMapTask
from lib.train.gpt_train import GPTRunConfig, Member

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sweep_helpers  # noqa: E402,F401  (workers import the unit functions by name)

ROOT = Path(__file__).resolve().parent.parent


def tiny_study(n: int = 3) -> PaperStudy:
    task = LinearMapTask(4, 1, seed=0, distinct=True)
    units = tuple(unit("sweep_helpers:tiny_training",
                       GPTRunConfig(members=(Member(task, seed=k),), n_heads=2, d_head=4, tokens_per_step=64, steps=6,
                                    lr=1e-2, eval_every=3, eval_tokens=64)) for k in range(n))  # fmt: skip
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
    assert first["cpu_hours"] > 0 and first["cpu_capability"] and first["command"] == "python -m lib.paper_scale run tiny"
    on_disk = json.loads((data / "paper" / "tiny.json").read_text())
    assert on_disk["done"] == 2 and "paper/tiny.json" in json.loads((data / "manifest.json").read_text())["files"]
    second = run_study(study, workers=2, cache=cache, data_dir=data)  # resumes: only the third unit is computed
    assert second["done"] == 3 and second["summary"]["losses"][:2] == first["summary"]["losses"]
    assert publish(study, cache=cache, write=False)["summary"] == second["summary"]  # publishing computes nothing


def test_a_local_cluster_gives_the_local_pools_published_result(tmp_path):
    distributed = pytest.importorskip("distributed")
    study = tiny_study()
    local = run_study(study, workers=2, cache=Cache(tmp_path / "a", enabled=True), publish_to_data=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None, silence_logs=40) as cluster:  # fmt: skip
        remote = run_study(study, scheduler=cluster.scheduler_address, cache=Cache(tmp_path / "b", enabled=True),
                           publish_to_data=False)  # fmt: skip
    assert remote["summary"] == local["summary"] and remote["done"] == local["done"] == 3


def test_a_unit_of_changed_code_is_refused(tmp_path):
    u = tiny_study(1).units[0]
    stale = StudyUnit(u.func, u.config, "0" * 64)
    with pytest.raises(ValueError, match="changed"):
        run_unit(stale)
    assert run_unit(u)["value"] == run_unit(u)["value"]  # deterministic


@pytest.mark.parametrize("bad, match", [("nocolon", "package.module:function"), ("sweep_helpers:nothing", "not a function")])
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


def test_the_sparsity_study_has_one_unit_per_s_and_seed_of_the_papers_stack():
    from lib.paper_studies import b_sparsity_s16
    from lib.studies.sparsity_study import SparsityStudyConfig

    study = b_sparsity_s16()
    stack = SparsityStudyConfig.paper().run(16)
    assert len(study.units) == len(stack.members) == 48
    for u, m in zip(study.units, stack.members):
        run = u.config.run
        assert run.members == (m,) and (run.steps, run.tokens_per_step, run.d_model, run.lr) == (
            stack.steps, stack.tokens_per_step, stack.d_model, stack.lr) and u.config.precision == "fp32"


def test_the_sparsity_summary_is_the_chapters_gap_on_done_seeds():
    from lib.paper_studies import sparsity_summary

    values = []
    for s in range(1, 17):
        for k in range(3):
            done = k < 2  # the third seed not done
            values.append({"initial": [2.0], "final": [1.0 + (s == 8) + 0.1 * (s == 15) + 0.01 * k]} if done else None)
    out = sparsity_summary(values)
    np.testing.assert_allclose(out["gap"], [2.0 - 1.1, 2.01 - 1.11])  # s=8 minus the worse of s=1 and s=15
    assert out["control_gap"] == [0.0, 0.0] and out["final"]["8"][2] is None
    with pytest.raises(ValueError):
        sparsity_summary(values[:-1])


def test_a_sparsity_unit_trains_at_the_papers_width(tmp_path):
    from lib.paper_studies import b_sparsity_s16, first_and_last_loss
    from lib.smoke import cut

    cfg = cut(b_sparsity_s16().units[0].config, 3000)  # the paper's model, 3 steps
    out = first_and_last_loss(cfg)
    assert out["steps_run"] == 3 and len(out["final"]) == 1 and np.isfinite(out["final"]).all()
