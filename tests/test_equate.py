"""A numerics-neutral re-key (lib.studies._equate): committed units move to the keys of changed code only when the
code of now computes the committed numbers exactly, on a machine like the one that computed them."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from lib.core.cache import Cache
from lib.core.numerics import numerics_version
from lib.studies._equate import NotNeutral, equate, numerics_at
from lib.studies._paper_scale import PaperStudy, committed_units, publish, published, run_study, unit
from lib.studies._study import resolve, run_unit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sweep_helpers import Risky  # noqa: E402  (task processes import the unit functions by name)

ROOT = Path(__file__).resolve().parents[1]
FUNC = "sweep_helpers:square_or_die"


def _study(numerics: str | None = None, n: int = 4) -> PaperStudy:
    units = tuple(unit(FUNC, Risky(x)) for x in range(n))
    if numerics is not None:  # the same study as code of another numerics version defines it
        units = tuple(replace(u, numerics=numerics) for u in units)
    return PaperStudy("squares", (), "squares (a test)", units, "sweep_helpers:summarize_squares")


def _same_code(u):
    """Compute ``u`` with the code as it is (which the test labels as another numerics version)."""
    return run_unit(replace(u, numerics=numerics_version(resolve(u.func))))


@pytest.fixture
def committed(tmp_path) -> tuple[Path, str]:
    """A published study of four units, computed by the code as it is; its numerics version then."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "manifest.json").write_text(json.dumps({"files": {}}))
    run_study(_study(), workers=1, cache=Cache(tmp_path / "cache", enabled=True), data_dir=data)
    return data, numerics_version(resolve(FUNC))


def test_a_refactor_that_computes_the_same_numbers_keeps_every_unit(committed):
    data, then = committed
    now = _study(numerics="refactored")
    assert committed_units(now, data) == {}  # what a refactor does today: every unit stale
    before = {u["value"]["y"] for u in published("squares", data)["units"].values()}
    out = equate(now, lambda funcs: {f: then for f in funcs}, data_dir=data, recompute=_same_code)
    assert out["renamed"] == 4 and len(out["verified"]) == 1 and out["unchanged"] == []
    found = committed_units(now, data)
    assert len(found) == 4 and {u["value"]["y"] for u in found.values()} == before == {0, 1, 4, 9}
    again = equate(now, lambda funcs: {f: then for f in funcs}, data_dir=data, recompute=_same_code)
    assert again["renamed"] == 0  # idempotent: nothing is left under the old keys


def test_a_refactor_that_moves_one_bit_keeps_nothing(committed):
    data, then = committed
    path = data / "paper" / "squares.json"
    raw = path.read_bytes()

    def off_by_a_bit(u):
        got = _same_code(u)
        got["value"] = {**got["value"], "y": got["value"]["y"] + 1e-12}
        return got

    with pytest.raises(NotNeutral, match="differently from the committed value"):
        equate(
            _study(numerics="refactored"), lambda funcs: {f: then for f in funcs}, data_dir=data, recompute=off_by_a_bit
        )
    assert path.read_bytes() == raw


def test_units_of_another_machine_cannot_be_verified_here(committed):
    data, then = committed
    elsewhere = {"arch": "x86_64", "cpu": "another CPU", "cpu_capability": "AVX2", "torch": "2.13.0+cpu"}
    with pytest.raises(NotNeutral, match="no committed unit"):
        equate(
            _study(numerics="refactored"),
            lambda funcs: {f: then for f in funcs},
            data_dir=data,
            here=elsewhere,
            recompute=_same_code,
        )


def test_unchanged_numerics_rename_nothing(committed):
    data, then = committed
    calls = []
    out = equate(_study(), lambda funcs: {f: then for f in funcs}, data_dir=data, recompute=lambda u: calls.append(u))
    assert out == {"study": "squares", "renamed": 0, "verified": [], "unchanged": [FUNC]} and calls == []


def test_the_numerics_of_a_revision_are_read_from_that_revision():
    """At HEAD, with lib as committed, the numerics of the paper-scale unit functions are those of the working tree."""
    git = lambda *a: subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True)  # noqa: E731
    if git("rev-parse", "--is-inside-work-tree").stdout.strip() != "true":
        pytest.skip("not a git checkout")
    if git("diff", "--quiet", "HEAD", "--", "lib").returncode != 0:
        pytest.skip("lib has uncommitted changes: HEAD's numerics may differ from the working tree's")
    funcs = ["lib.studies._units:fast_curves", "lib.studies._units:reference_curves"]
    assert numerics_at(ROOT, "HEAD", funcs) == {f: numerics_version(resolve(f)) for f in funcs}


def _on_another_cpu_model(data: Path) -> None:
    """Relabel every committed unit as computed on another CPU model of this machine's ISA level."""
    path = data / "paper" / "squares.json"
    record = json.loads(path.read_text())
    for u in record["units"].values():
        u["machine"] = {**u["machine"], "cpu": "another CPU model", "isa": "another ISA string"}
    path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


def _shifted(dy: float):
    def recompute(u):
        got = _same_code(u)
        got["value"] = {**got["value"], "y": got["value"]["y"] + dy}
        return got

    return recompute


def test_units_of_another_cpu_model_are_kept_only_within_a_stated_tolerance(committed):
    data, then = committed
    _on_another_cpu_model(data)
    now, numerics = _study(numerics="refactored"), lambda funcs: {f: then for f in funcs}
    with pytest.raises(NotNeutral, match="or within a tolerance"):  # bit identity cannot be shown here
        equate(now, numerics, data_dir=data, recompute=_same_code)
    with pytest.raises(NotNeutral, match="tolerance 1e-09"):  # a difference above the tolerance
        equate(now, numerics, data_dir=data, recompute=_shifted(1e-6), tolerance=1e-9)
    assert committed_units(now, data) == {}
    out = equate(now, numerics, data_dir=data, recompute=_shifted(1e-12), tolerance=1e-9)
    assert out["renamed"] == 4 and out["verified"][0]["tolerance"] == 1e-9
    assert 0 < out["verified"][0]["max_diff"] <= 1e-9
    record = published("squares", data)
    assert record["equated"] == out["verified"] and record["equated"][0]["then"]["cpu"] == "another CPU model"
    assert len(committed_units(now, data)) == 4
    again = publish(now, cache=Cache(data.parent / "empty", enabled=True), data_dir=data)  # a later publish keeps it
    assert again["equated"] == out["verified"] and again["done"] == 4


def test_a_tolerance_never_excuses_a_different_integer():
    from lib.studies._equate import _within

    assert _within({"steps": [1, 2], "loss": [0.5]}, {"steps": [1, 2], "loss": [0.5 + 1e-12]}, 1e-9)
    assert not _within({"steps": [1, 2], "loss": [0.5]}, {"steps": [1, 3], "loss": [0.5]}, 1e-9)
    assert not _within({"exit": "never"}, {"exit": 7100}, 1e-9)
    assert not _within({"a": [1.0]}, {"a": [1.0, 2.0]}, 1.0)
    with pytest.raises(ValueError, match="tolerance must be"):
        equate(_study(), lambda funcs: {}, tolerance=1.0)


def test_units_of_another_cpu_model_are_kept_when_both_codes_agree_to_the_bit_here(committed):
    data, then = committed
    _on_another_cpu_model(data)
    now, numerics = _study(numerics="refactored"), lambda funcs: {f: then for f in funcs}
    shifted = _shifted(1e-6)  # the committed values came from another CPU model: here they differ in the last bits
    moved = lambda i: _same_code(now.units[i])["value"] | {"y": _same_code(now.units[i])["value"]["y"] + 0.5}  # noqa
    with pytest.raises(NotNeutral, match="computed here by the code of then and of now differs"):
        equate(now, numerics, data_dir=data, recompute=shifted, then_here=moved)  # the edit changed a number
    assert committed_units(now, data) == {}
    same = lambda i: shifted(now.units[i])["value"]  # noqa: E731  (the code of then, here: the same bits as now)
    out = equate(now, numerics, data_dir=data, recompute=shifted, then_here=same)
    assert out["renamed"] == 4 and out["verified"][0]["method"] == "then and now computed here, equal to the bit"
    assert out["verified"][0]["committed_max_diff"] == pytest.approx(1e-6)  # recorded, not judged
    assert published("squares", data)["equated"] == out["verified"] and len(committed_units(now, data)) == 4


def test_an_older_record_without_a_cpu_model_is_compared_by_both_codes_here(committed):
    data, then = committed
    path = data / "paper" / "squares.json"
    record = json.loads(path.read_text())
    for u in record["units"].values():
        u["machine"] = {k: v for k, v in u["machine"].items() if k not in ("cpu", "isa")}  # as older records are
    path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    now, numerics, shifted = _study(numerics="refactored"), lambda funcs: {f: then for f in funcs}, _shifted(1e-6)
    with pytest.raises(NotNeutral, match="differently from the committed value"):  # tried for bit identity: fails
        equate(now, numerics, data_dir=data, recompute=shifted)
    out = equate(now, numerics, data_dir=data, recompute=shifted, then_here=lambda i: shifted(now.units[i])["value"])
    assert out["renamed"] == 4 and out["verified"][0]["method"].startswith("then and now")
