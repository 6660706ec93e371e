"""lib.claims: the registry, the rules that turn a measurement into a status, and the ledger built from notebooks."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import jupytext
import numpy as np
import pytest

import lib
import lib.core.context
from lib.claims import (
    CLAIM_KEY,
    REGISTRY,
    STATUSES,
    Check,
    ClaimRecord,
    Rule,
    collect_claims,
    get_check,
    judge,
    ledger_markdown,
)

ROOT = Path(__file__).resolve().parent.parent
# The ids of shared/reference/claims.md (the claims the book must carry), copied here so a fresh clone can check them.
REFERENCE_IDS = (
    "A-post A-red A-soft-order A-soft-scale A-soft-300 A-lin-order A-lin-V2 A-lin-cross A-lin-first A-loss A-adam "
    "A-sgld A-precursor A-efficiency B-random B-size B-abrupt B-patch B-staircase B-sparsity B-context B-bias B-heads "
    "B-dhead B-depth B-mixer B-ca-best B-prepre"
).split()


# --------------------------------------------------------------------------------------------- criteria
def test_criteria():
    assert lib.claims.between(1, 2)(1.5) and not lib.claims.between(1, 2)(2.5)
    assert lib.claims.at_least(3)(3) and not lib.claims.at_least(3)(2.99)
    assert lib.claims.at_most(3)(3) and not lib.claims.at_most(3)(3.01)
    assert lib.claims.within(300, rel=0.1)(329) and not lib.claims.within(300, rel=0.1)(331)
    assert lib.claims.within(0.2, tol=0.05)(0.16) and not lib.claims.within(0.2, tol=0.05)(0.26)
    assert lib.claims.is_true()(True) and not lib.claims.is_true()(False)
    assert not lib.claims.at_least(0)(float("nan"))
    assert "300" in lib.claims.within(300, rel=0.1).describe()


def test_criterion_on_an_interval():
    assert lib.claims.at_least(1).holds_on(1.0, 5.0) and not lib.claims.at_least(1).holds_on(0.9, 5.0)
    assert lib.claims.at_most(1).holds_on(-np.inf, 1.0) and not lib.claims.at_most(1).holds_on(0.5, 1.1)
    assert lib.claims.between(0, 1).holds_on(0.2, 0.8) and not lib.claims.between(0, 1).holds_on(0.2, 1.2)
    # a yes/no condition's interval is that of its indicator over resamples: it passes only when both ends are 1
    assert lib.claims.is_true().holds_on(1.0, 1.0) and not lib.claims.is_true().holds_on(0.0, 1.0)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: lib.claims.between(2, 1), "lo < hi"),
        (lambda: lib.claims.between(0, float("inf")), "finite"),
        (lambda: lib.claims.at_least(float("nan")), "finite"),
        (lambda: lib.claims.within(1.0), "exactly one"),
        (lambda: lib.claims.within(1.0, rel=0.1, tol=0.1), "exactly one"),
        (lambda: lib.claims.within(1.0, rel=-0.1), "rel"),
        (lambda: lib.claims.within(1.0, tol=0.0), "tol"),
        (lambda: lib.claims.at_most("3"), "finite"),
    ],
)
def test_bad_criteria(make, match):
    with pytest.raises(ValueError, match=match):
        make()


# --------------------------------------------------------------------------------------------- the registry
def test_registry_holds_every_reference_claim_with_reasons():
    assert set(REFERENCE_IDS) <= set(REGISTRY)
    for c in REGISTRY.values():
        assert c.statement.strip() and c.source_value.strip() and c.checks, c.id
        for k in c.checks:
            rules = [k.reproduced, k.partial, k.contradicted]
            assert all(r.why.strip() for r in rules if r is not None), (c.id, k.chapter)
            assert k.measure.strip(), (c.id, k.chapter)


def test_every_counted_check_has_a_partial_level_or_says_why_not():
    from lib.claims.registry import NO_PARTIAL

    checks = {(c.id, k.chapter): k for c in REGISTRY.values() for k in c.checks}
    assert set(NO_PARTIAL) <= set(checks), "reasons for checks that do not exist"
    for key, k in checks.items():
        if k.kind == "derived":
            assert not k.no_partial, key  # never counted: no level to argue about
        else:
            assert (k.partial is None) == bool(k.no_partial.strip()), key  # one or the other, never both
    with pytest.raises(ValueError, match="partial"):
        Check(
            "01_copy_task",
            "trained",
            "m",
            Rule(lib.claims.at_least(1), "r"),
            Rule(lib.claims.at_least(0.5), "p"),
            no_partial="none",
        )


def test_a_claim_box_says_why_there_is_no_partial_level(chapter1):
    from lib.claims.registry import NO_PARTIAL

    box = lib.claim("A-lin-order", 0.1, show=False, robustness=[])._repr_html_()
    assert "no partial level" in box and NO_PARTIAL["A-lin-order", "01_copy_task"][:40] in box
    box = lib.claim("A-soft-300", 310.0, show=False, robustness=[])._repr_html_()
    assert "partial if" in box and "no partial level" not in box


def _chapter_claim_calls():
    """(chapter slug, claim id, keyword names) of every lib.claim call in the chapters' code cells."""
    calls = []
    for md in sorted((ROOT / "chapters").glob("[0-9][0-9]_*.md")):
        for cell in jupytext.read(md).cells:
            if cell.cell_type != "code":
                continue
            code = "\n".join(line for line in cell.source.split("\n") if not line.lstrip().startswith(("%", "!")))
            for node in ast.walk(ast.parse(code)):
                if isinstance(node, ast.Call) and ast.unparse(node.func) == "lib.claim":
                    calls.append((md.stem, node.args[0].value, {k.arg for k in node.keywords}))
    return calls


def test_chapters_pass_no_criteria_and_only_registered_checks():
    calls = _chapter_claim_calls()
    assert len(calls) >= 40
    allowed = {"control", "samples", "interval", "text", "note", "extra"}
    for chapter, cid, keywords in calls:
        assert keywords <= allowed, (
            f"{chapter} {cid} passes {sorted(keywords - allowed)}: criteria live in the registry"
        )
        get_check(cid, chapter)  # raises when the registry has no such check
    registered = {(k.chapter, c.id) for c in REGISTRY.values() for k in c.checks}
    assert registered == {(ch, cid) for ch, cid, _ in calls}, "a registered check no chapter makes, or the reverse"


def test_checks_with_a_control_are_called_with_one():
    for chapter, cid, keywords in _chapter_claim_calls():
        _, check = get_check(cid, chapter)
        if check.control and check.kind != "derived":
            assert "control" in keywords, f"{chapter} {cid}: the registry names a control the chapter does not pass"


def test_list_command(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "lib.claims", "list", "--json"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    data = json.loads(run.stdout)
    assert {c["id"] for c in data} == set(REGISTRY)
    assert all(k["reproduced"]["why"] for c in data for k in c["checks"])
    text = subprocess.run(
        [sys.executable, "-m", "lib.claims", "list", "--chapter", "01_copy_task"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "A-soft-order" in text and "B-sparsity" not in text and "control:" in text


# --------------------------------------------------------------------------------------------- the rules
def check(kind="trained", control="the effect removed", **kw):
    base = dict(
        chapter="99_test_chapter",
        kind=kind,
        measure="m",
        reproduced=Rule(lib.claims.at_least(0.9), "paper: 1"),
        partial=Rule(lib.claims.at_least(0.5), "half"),
        control=control,
    )
    base.update(kw)
    return Check(**base)


SEEDS_KEPT = {f"BOOK_SEED={k}": "reproduced" for k in (1, 2)} | {"ATEN_CPU_CAPABILITY=default": "reproduced"}


def test_reproduced_needs_interval_control_and_robustness():
    c, kept = check(), SEEDS_KEPT
    assert judge(c, 0.95, control=0.1, interval=(0.91, 0.99), robust=kept) == ("reproduced", "reproduced", [])
    status, raw, unmet = judge(c, 0.95, control=0.1, interval=None, robust=kept)
    assert (status, raw) == ("partial", "partial") and unmet == ["no interval over seeds or prompts"]
    assert "not wholly" in judge(c, 0.95, control=0.1, interval=(0.8, 0.99), robust=kept)[2][0]
    assert judge(c, 0.95, control=None, interval=(0.91, 0.99), robust=kept)[2] == ["the control was not measured"]
    assert judge(check(control=""), 0.95, control=0.1, interval=(0.91, 0.99), robust=kept)[2] == [
        "no negative control designed"
    ]
    status, raw, unmet = judge(c, 0.95, control=0.1, interval=(0.91, 0.99), robust=None)
    assert (status, raw) == ("partial", "reproduced") and "robustness" in unmet[0]
    status, raw, unmet = judge(c, 0.95, control=0.1, interval=(0.91, 0.99), robust={**kept, "BOOK_SEED=3": "partial"})
    assert (status, raw) == ("partial", "reproduced") and unmet == [
        "fragile: the status held at 2 of 3 other seed offsets"
    ]
    status, raw, unmet = judge(c, 0.95, control=0.1, interval=(0.91, 0.99), robust=kept, choice="picked L to match")
    assert (status, raw) == ("partial", "partial") and unmet == [
        "the setting was chosen to match the paper: the agreement is built in"
    ]


def test_a_control_that_passes_too_leaves_nothing_shown():
    """A value past a criterion its control passes too is not at our scale: the measure cannot tell the effect from
    its absence, whether the value reads as reproduced or only as partial."""
    c = check()
    status, _, unmet = judge(c, 0.95, control=0.92, interval=(0.91, 0.99), robust=SEEDS_KEPT)
    assert status == "not at our scale" and "control passes the reproduced criterion" in unmet[0]
    assert judge(c, 0.95, control=0.6, interval=(0.91, 0.99), robust=SEEDS_KEPT)[0] == "reproduced"  # fails ≥ 0.9
    status, _, unmet = judge(c, 0.6, control=0.55)
    assert status == "not at our scale" and "control passes the partial criterion" in unmet[0]
    assert judge(c, 0.6, control=0.1)[0] == "partial"


def test_partial_must_hold_at_half_the_other_seed_offsets():
    c = check()
    seeds = lambda *s: {f"BOOK_SEED={k}": v for k, v in enumerate(s, 1)}  # noqa: E731
    status, raw, unmet = judge(
        c, 0.6, control=0.1, robust=seeds("not at our scale", "not at our scale", "partial", "not at our scale")
    )
    assert (status, raw) == ("not at our scale", "partial") and "partial or better at 1 of 4" in unmet[-1]
    assert (
        judge(c, 0.6, control=0.1, robust=seeds("not at our scale", "reproduced", "partial", "not at our scale"))[0]
        == "partial"
    )
    # the kernel runs reread seed 0's data: they do not count towards the seed offsets
    kernels = {"ATEN_CPU_CAPABILITY=avx2": "not at our scale", "ATEN_CPU_CAPABILITY=default": "not at our scale"}
    assert judge(c, 0.6, control=0.1, robust=kernels)[0] == "partial"


def test_partial_contradicted_derived_incomplete_and_not_run():
    c = check(contradicted=Rule(lib.claims.at_most(-0.5), "the opposite"))
    assert judge(c, 0.6)[0] == "partial"
    assert judge(c, 0.6, interval=(0.4, 0.7))[0] == "not at our scale"  # with an interval, all of it must pass
    assert judge(c, 0.1)[0] == "not at our scale"
    assert judge(c, -0.6)[0] == "contradicted"
    assert judge(c, -0.6, interval=(-0.9, -0.55))[0] == "contradicted"
    assert judge(c, -0.6, interval=(-0.9, -0.2))[0] == "not at our scale"  # a contradiction needs all of it too
    status, _, unmet = judge(c, -0.6, smaller="S = 8 against the paper's 16")  # a smaller model cannot contradict
    assert status == "not at our scale" and "S = 8 against the paper's 16" in unmet[0]
    assert judge(c, None)[0] == "not run"
    assert judge(c, 0.95, control=0.1, incomplete=["s = 5 not done"]) == (
        "incomplete",
        "incomplete",
        ["s = 5 not done"],
    )
    # our own derivation is never counted: always derived, with its verdict
    d = check(kind="derived", control="", contradicted=Rule(lib.claims.at_most(-0.5), "x"))
    assert [judge(d, x)[:2] for x in (0.95, 0.6, 0.1, -0.6)] == [
        ("derived", "holds"),
        ("derived", "holds weakly"),
        ("derived", "does not hold"),
        ("derived", "says the opposite"),
    ]
    assert judge(d, 0.95)[2] == []


def test_a_qualitative_claim_needs_its_condition_to_hold_across_the_interval():
    q = check(reproduced=Rule(lib.claims.is_true("holds"), "paper"), partial=None)
    assert judge(q, True, control=False, interval=(1.0, 1.0), robust=SEEDS_KEPT)[0] == "reproduced"
    # a yes on one draw is not a reproduction: without resamples, or when some resamples say no, it is partial
    assert judge(q, True, control=False, robust=SEEDS_KEPT)[2] == ["no interval over seeds or prompts"]
    assert "fails in a resample" in judge(q, True, control=False, interval=(0.0, 1.0), robust=SEEDS_KEPT)[2][0]
    assert judge(q, True, control=True, interval=(1.0, 1.0), robust=SEEDS_KEPT)[0] == "not at our scale"
    assert judge(q, False)[0] == "not at our scale"


def test_condition_interval_is_the_bootstrap_of_the_indicator():
    x = np.array([0.9, 0.95, 0.85, 0.92, 0.88, 0.97])
    sure = lib.condition_interval(lambda g: np.median(g) >= 0.5, x)
    assert (sure.value, sure.lo, sure.hi, sure.n) == (1.0, 1.0, 1.0, 6)  # every resample's median is above 0.5
    never = lib.condition_interval(lambda g: np.median(g) >= 2, x)
    assert (never.value, never.lo, never.hi) == (0.0, 0.0, 0.0)
    # one outlying unit of 9: the median is robust to it, the maximum is not (it enters 1 - (8/9)^9 = 65 % of resamples)
    y = np.array([0.1] * 8 + [5.0])
    assert lib.condition_interval(lambda g: np.median(g) < 1, y).lo == 1.0
    shaky = lib.condition_interval(lambda g: g.max() < 1, y)
    assert (shaky.value, shaky.lo, shaky.hi) == (0.0, 0.0, 1.0)
    # paired arrays stacked on a leading axis are resampled together; separate groups independently
    a, b = np.arange(5.0), np.arange(5.0)
    assert lib.condition_interval(lambda g: np.all(g[0] == g[1]), np.stack([a, b])).lo == 1.0
    assert lib.condition_interval(lambda u, v: np.all(u == v), a, b).lo == 0.0
    with pytest.raises(ValueError, match="at least 2"):
        lib.condition_interval(lambda g: True, np.array([1.0]))
    with pytest.raises(ValueError, match="at least one group"):
        lib.condition_interval(lambda: True)


def test_a_qualitative_claim_takes_the_interval_of_its_condition(book_context):
    lib.setup("08_synthesis", fast=True)
    sure = lib.condition_interval(lambda g: np.median(g) >= 0.5, np.array([0.9, 0.95, 0.85, 0.92]))
    rec = lib.claim("S-precursor", None, interval=sure, control=False, show=False, robustness=[])
    assert rec.measured is True and rec.raw_status == "reproduced" and "holds in more than 95 %" in rec.interval_text()
    shaky = lib.core.stats.Interval(1.0, 0.0, 1.0, 0.9, 4)
    rec = lib.claim("S-precursor", True, interval=shaky, control=False, show=False, robustness=[])
    assert rec.status == "partial" and "fails in at least 5 %" in rec.interval_text()
    with pytest.raises(ValueError, match="disagrees"):
        lib.claim("S-precursor", False, interval=sure, control=False, show=False, robustness=[])
    with pytest.raises(ValueError, match="indicator"):
        lib.claim(
            "S-precursor", True, interval=lib.core.stats.Interval(0.7, 0.5, 0.9, 0.9, 4), control=False, show=False
        )


# --------------------------------------------------------------------------------------------- lib.claim
@pytest.fixture
def chapter1():
    return lib.setup("01_copy_task", fast=True)


def test_claim_reads_everything_from_the_registry(chapter1):
    kept = [{"label": "seed 1", "statuses": {"01_copy_task/A-soft-order": "partial"}}]
    rec = lib.claim("A-soft-order", 0.9, control=0.1, show=False, robustness=kept)
    claim_, check_ = get_check("A-soft-order", "01_copy_task")
    assert rec.statement == claim_.statement and rec.criterion == check_.reproduced.criterion.describe()
    assert rec.why == check_.reproduced.why and rec.kind == "trained" and rec.control_case == check_.control
    assert rec.status == "partial" and rec.unmet == ["no interval over seeds or prompts"]  # one training set per P
    assert rec.extra["robust"] == {"kernels": [1, 1, 1]} and rec.extra["control_passes"] is False
    assert "none" not in rec.control_text() and "fails" in rec.control_text()


def test_samples_give_the_bootstrap_interval(book_context):
    lib.setup("05_language_models", fast=True)
    x = np.array([0.5, 0.6, 0.7, 0.4, 0.55])
    rec = lib.claim("B-abrupt", None, samples=x, control=0.05, show=False, robustness=[])
    expected = lib.bootstrap_interval(x)
    assert rec.measured == pytest.approx(np.median(x))
    assert (rec.interval["lo"], rec.interval["hi"]) == (expected.lo, expected.hi)
    assert rec.status == "partial" and rec.raw_status == "reproduced"  # all but the robustness runs
    rec = lib.claim("B-abrupt", 0.6, samples=x, control=0.5, show=False, robustness=[])
    assert rec.status == "not at our scale" and "control passes the reproduced criterion" in rec.unmet[0]
    # one sample (one seed qualified): its value, no interval, so it cannot be reproduced; none is an error
    rec = lib.claim("B-abrupt", None, samples=[0.7], control=0.05, show=False, robustness=[])
    assert rec.measured == 0.7 and rec.interval is None and "no interval over seeds or prompts" in rec.unmet
    rec = lib.claim("B-abrupt", 0.7, control=float("nan"), show=False, robustness=[])  # a control that could not be
    assert rec.control is None and "the control was not measured" in rec.unmet  # measured is not a number
    with pytest.raises(ValueError, match="no samples"):
        lib.claim("B-abrupt", None, samples=[], control=0.05, show=False, robustness=[])


@pytest.mark.parametrize(
    "args, kw, exc, match",
    [
        (("A-nope", 1.0), {}, KeyError, "not in the registry"),
        (("B-sparsity", 1.0), {}, KeyError, "no check registered for chapter"),
        (("A-soft-order", True), {}, TypeError, "number"),
        (("A-soft-order", "0.5"), {}, TypeError, "number"),
        (("A-loss", 0.5), {}, TypeError, "bool"),
        (("A-soft-order", float("nan")), {}, ValueError, "NaN"),
        (
            ("A-soft-order", 0.5),
            {"samples": [0.1, 0.2], "interval": lib.bootstrap_interval([0.1, 0.2])},
            ValueError,
            "not both",
        ),
        (("A-soft-order", 0.5), {"interval": (0.1, 0.2)}, TypeError, "Interval"),
        (("A-soft-order", 0.5), {"extra": {"f": object()}}, TypeError, "serializable"),
    ],
)
def test_bad_claims(chapter1, args, kw, exc, match):
    with pytest.raises(exc, match=match):
        lib.claim(*args, show=False, robustness=[], **kw)


def test_claim_needs_setup(monkeypatch):
    import lib.book

    monkeypatch.setattr(lib.core.context, "_CONTEXT", None)
    with pytest.raises(RuntimeError, match="setup"):
        lib.claim("A-soft-order", 0.9, show=False)


# --------------------------------------------------------------------------------------------- the ledger
def fake_notebook(tmp_path, name, records):
    outputs = [
        {"output_type": "display_data", "metadata": {CLAIM_KEY: r.to_json()}, "data": {"text/plain": str(r)}}
        for r in records
    ]
    nb = {
        "cells": [{"cell_type": "code", "execution_count": 1, "source": "", "metadata": {}, "outputs": outputs}],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = tmp_path / f"{name}.ipynb"
    path.write_text(json.dumps(nb))
    return path


def test_ledger_is_built_from_notebook_outputs(tmp_path):
    lib.setup("01_copy_task", fast=True)
    r1 = lib.claim("A-soft-order", 0.9, control=0.1, show=False, robustness=[])
    r2 = lib.claim("A-loss", True, control=False, show=False, robustness=[])
    lib.setup("03_linear_vs_softmax", fast=True)
    r3 = lib.claim("A-lin-V2", 2.01, show=False, robustness=[])
    path = fake_notebook(tmp_path, "ch", [r1, r2, r3])
    got = collect_claims([path])
    assert got == [r1, r2, r3]
    text = ledger_markdown(got, {"01_copy_task": "/chapters/01_copy_task"})
    assert text.startswith("| claims of | reproduced | partial | not at our scale | contradicted |")
    assert "| Paper A (2 checks of 2 claims) | 0 | 2 (1 experiment) | 0 | 0 |" in text  # two rows of chapter 1's scans
    assert "1 *derived* check, the book's own theory checked against itself (1 of them holds)" in text
    assert "| **derived: holds** | `A-lin-V2`" in text
    assert "No claim of paper B is reproduced yet" in text
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert [row.split("|")[1].split()[0] for row in rows] == ["`A-lin-V2`", "`A-loss`", "`A-soft-order`"]
    assert "{doc}`1 </chapters/01_copy_task>`" in text
    assert "lacks: no interval" in text and "0.1 (fails)" in text
    assert ClaimRecord.from_json(json.loads(json.dumps(r1.to_json()))) == r1


def test_ledger_rejects_duplicates_and_handles_empty(tmp_path):
    lib.setup("01_copy_task", fast=True)
    r = lib.claim("A-soft-order", 0.9, show=False, robustness=[])
    with pytest.raises(ValueError, match="twice"):
        collect_claims([fake_notebook(tmp_path, "dup", [r, r])])
    assert "No claims" in ledger_markdown([])


def test_claim_display_bundle(chapter1):
    r = lib.claim("A-soft-300", 310.0, note="our note", show=False, robustness=[])
    data, metadata = r._bundle()
    assert set(data) == {"text/plain", "text/html"} and metadata == {CLAIM_KEY: r.to_json()}
    assert "partial" in data["text/html"] and "our note" in data["text/html"]
    assert "Chosen to match the paper" in data["text/html"]  # L=32, V=8 were picked for this number
    assert set(STATUSES) >= {r.status}


def test_committed_studies_cannot_pass_the_robustness_requirement():
    c = check(committed="a study in data/")
    status, raw, unmet = judge(c, 0.95, control=0.1, interval=(0.91, 0.99), robust=SEEDS_KEPT)
    assert (status, raw) == ("partial", "reproduced") and "committed study" in unmet[0]


def test_robustness_runs_decide_fragility(chapter1):
    key = "01_copy_task/A-soft-order"
    sure = lib.core.stats.Interval(0.95, 0.93, 0.97, 0.9, 5)  # wholly past the bound
    kept = [{"label": f"BOOK_SEED={k}", "statuses": {key: "reproduced"}} for k in (1, 2)]
    rec = lib.claim("A-soft-order", 0.95, interval=sure, control=0.05, show=False, robustness=kept)
    assert rec.status == "reproduced" and rec.unmet == [] and rec.robust_text() == "kept at 2 of 2 other seed offsets"
    flipped = kept[:1] + [{"label": "default kernels", "statuses": {key: "partial"}}]
    assert (
        lib.claim("A-soft-order", 0.95, interval=sure, control=0.05, show=False, robustness=flipped).status == "partial"
    )
    missing = kept[:1] + [{"label": "BOOK_SEED=2", "statuses": {}}]  # the run never reached the claim
    rec = lib.claim("A-soft-order", 0.95, interval=sure, control=0.05, show=False, robustness=missing)
    assert rec.status == "partial" and "1 of 2" in rec.unmet[0]
    assert (
        "1 of 2 other seed offsets, 0 of 1 CPU kernels"
        in lib.claim(
            "A-soft-order", 0.95, interval=sure, control=0.05, show=False, robustness=missing + flipped[1:]
        ).robust_text()
    )


def test_parts_and_meets_read_the_thresholds_from_the_registry(chapter1):
    from lib.claims import at_least, is_true, meets, part_holds, parts_hold

    thresholds = dict(get_check("A-loss", "01_copy_task")[1].parts)
    soft, lin = thresholds["softmax share"].lo, thresholds["linear share"].hi
    assert parts_hold("A-loss", {"softmax share": soft, "linear share": lin})  # the current chapter's check
    assert not parts_hold("A-loss", {"softmax share": soft - 1e-6, "linear share": lin})  # each part can fail alone
    assert not parts_hold("A-loss", {"softmax share": soft, "linear share": lin + 1e-6})
    assert part_holds("A-loss", "linear share", lin) and not part_holds("A-loss", "softmax share", soft / 2)
    theory = {"linear drops": 2, "plateau rate": 0.1, "softmax jump": 0.5}
    assert parts_hold("A-loss", theory, chapter="03_linear_vs_softmax")
    assert not parts_hold("A-loss", {**theory, "linear drops": 1}, chapter="03_linear_vs_softmax")
    with pytest.raises(ValueError, match="has the parts"):
        parts_hold("A-loss", {"softmax share": 0.9})
    with pytest.raises(ValueError, match="no parts"):
        parts_hold("A-soft-order", {"x": 1.0})
    with pytest.raises(ValueError, match="no part"):
        part_holds("A-loss", "x", 1.0)
    mixer = get_check("B-mixer", "07_token_mixers")[1]
    lo = mixer.reproduced.criterion.lo
    assert meets("B-mixer", lo, chapter="07_token_mixers") and not meets(
        "B-mixer", lo * 0.999, chapter="07_token_mixers"
    )
    assert meets("B-mixer", mixer.partial.criterion.lo, "partial", chapter="07_token_mixers")
    with pytest.raises(ValueError, match="rule must be"):
        meets("B-mixer", 1.0, "likely", chapter="07_token_mixers")
    with pytest.raises(ValueError, match="is_true"):  # a check with parts is qualitative
        Check("01_copy_task", "trained", "m", Rule(at_least(1.0), "r"), parts=(("a", at_least(1.0)),))
    with pytest.raises(ValueError, match="distinct"):
        Check("01_copy_task", "trained", "m", Rule(is_true(), "r"), parts=(("a", at_least(1.0)), ("a", at_least(2.0))))


def test_a_check_with_parts_is_called_through_parts_hold():
    """No chapter types a part's threshold: every chapter that makes a check with parts calls parts_hold for it."""
    for claim_ in REGISTRY.values():
        for check in claim_.checks:
            if check.parts:
                text = (ROOT / "chapters" / f"{check.chapter}.md").read_text()
                assert re.search(rf'parts_hold\(\s*(#[^\n]*)?\s*"{claim_.id}"', text), (check.chapter, claim_.id)


def test_smaller_settings_and_experiments_name_registered_checks():
    """Every FAST check of paper B with a contradicted rule says its smaller setting (so a contradiction there reads
    not at our scale), and every experiment lists checks that exist."""
    from lib.claims.registry import EXPERIMENTS, SMALLER_SETTING, experiment

    need = {(c.id, k.chapter) for c in REGISTRY.values() if c.source == "B" for k in c.checks if k.contradicted}
    assert need <= set(SMALLER_SETTING), need - set(SMALLER_SETTING)
    for rows in EXPERIMENTS.values():
        for cid, chapter in rows:
            get_check(cid, chapter)
    assert experiment("A-loss", "01_copy_task") == experiment("A-soft-order", "01_copy_task")
    assert experiment("B-mixer", "07_token_mixers") == "B-mixer (07_token_mixers)"  # its own


def test_headline_counts_per_paper_and_names_paper_b_by_scale():
    lib.setup("06_sparse_patterns", fast=True)
    fast = lib.claim("B-heads-one", 1, control=9, show=False, robustness=[])  # a single head learns at FAST
    assert fast.status == "not at our scale" and "smaller than the paper's" in fast.unmet[0]
    paper = lib.claims.build_record(
        "B-heads-one", "06_sparse_patterns", 0, control=9, scale="paper", committed="b-heads-one", robustness=[]
    )
    assert paper.status == "partial"  # fixed seeds; at the paper's setting the contradicted rule would stand
    assert lib.claims.build_record("B-heads-one", "06_sparse_patterns", 2, scale="paper").status == "contradicted"
    text = lib.claims.counts_markdown([fast], [paper])
    assert "| Paper B (1 check of 1 claim) | 0 | 0 | 1 | 0 |" in text
    assert (
        "No claim of paper B is reproduced yet; at FAST scale, none reproduced or partial — at paper scale, "
        "partial: B-heads-one." in text
    )


def test_committed_history_is_current():
    """data/claims_history.json names, per check, the commit since which its criteria and control stand; it is read
    from git once and committed (a build may have no history), so after a change of a criterion or a control it must
    be written again (`python -m lib.claims history --write`, in a commit after the change)."""
    from lib.claims.history import history, load_history

    if (
        subprocess.run(
            ["git", "rev-parse", "--is-shallow-repository"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        != "false"
    ):
        pytest.skip("needs the git history")
    saved = load_history()
    assert set(saved) == {f"{k.chapter}/{c.id}" for c in REGISTRY.values() for k in c.checks}
    assert saved == json.loads(json.dumps(history(ROOT))), "stale: run `python -m lib.claims history --write`"


# A throwaway repository for lib.claims.history: a tiny chapter, then a tiny registry (its own dataclasses, the book's
# criteria.py), committed on chosen dates.
_TINY_REGISTRY = """
from dataclasses import dataclass
from .criteria import at_least, at_most


@dataclass(frozen=True)
class Rule:
    criterion: object


@dataclass(frozen=True)
class Check:
    chapter: str
    measure: str
    reproduced: Rule
    partial: Rule = None
    contradicted: Rule = None
    control: str = ""


@dataclass(frozen=True)
class Claim:
    id: str
    checks: tuple


REGISTRY = {{c.id: c for c in [{claims}]}}
"""


def _tiny_registry(checks: dict) -> tuple[str, dict]:
    """The registry file's text for ``{id: (measure, control, reproduced, partial)}`` (criteria as source text), and
    the same checks as the book's own Claim/Check objects (what history() is given as now)."""
    from lib.claims import criteria
    from lib.claims.registry import Claim

    ns = {"at_least": criteria.at_least, "at_most": criteria.at_most}
    claims = ", ".join(
        f"Claim({cid!r}, (Check('01_x', {m!r}, Rule({rep}), {f'Rule({par})' if par else None}, control={c!r}),))"
        for cid, (m, c, rep, par) in checks.items()
    )
    now = {
        cid: Claim(
            cid,
            "s",
            "v",
            (
                Check(
                    "01_x",
                    "trained",
                    m,
                    Rule(eval(rep, ns), "w"),
                    Rule(eval(par, ns), "w") if par else None,
                    control=c,
                    no_partial="" if par else "none",
                ),
            ),
        )
        for cid, (m, c, rep, par) in checks.items()
    }
    return _TINY_REGISTRY.format(claims=claims), now


def _chapter(*cells: str) -> str:
    return "# A chapter\n\n" + "\n".join(f"```{{code-cell}} ipython3\n:tags: [hide-input]\n\n{c}\n```\n" for c in cells)


def _commit(repo: Path, date: str, files: dict, message: str, moves: dict | None = None) -> str:
    def git(*args):
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args],
            cwd=repo,
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "GIT_AUTHOR_DATE": f"{date}T12:00:00", "GIT_COMMITTER_DATE": f"{date}T12:00:00"},
        ).stdout

    if not (repo / ".git").exists():
        git("init", "-q")
    for old, new in (moves or {}).items():
        git("mv", old, new)
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, encoding="utf-8")
        git("add", name)
    git("commit", "-q", "-m", message)
    return git("rev-parse", "--short=7", "HEAD").strip()


def test_history_traces_a_criterion_into_the_chapter_before_the_registry(tmp_path):
    """Per check, the origin is the first chapter commit of the unbroken run of equal criterion expressions (by AST)
    that ends just before the registry: a reformatted expression and a renamed chapter keep the run, a changed
    threshold (in the call or in a constant it names) starts it anew; a bound computed from data, or one that the
    registry does not hold exactly, has no origin. The registry's own run gives criterion, control and measure."""
    from lib.claims.history import history

    criteria_py = (ROOT / "lib" / "claims" / "criteria.py").read_text(encoding="utf-8")
    v1 = _chapter(
        "import lib\nHALF = 0.2",
        'lib.claim("X-a", 0.9, reproduced=lib.at_least(0.8), partial=lib.at_least(0.5))\n'
        'lib.claim("X-b", 0.1, reproduced=lib.at_most(0.3))',
        'lib.claim("X-c", 0.2, reproduced=lib.at_least(HALF))\n'
        'lib.claim("X-d", 0.1, reproduced=lib.at_most(0.05 * float(data.max())))\n'
        'lib.claim("X-e", 0.2, reproduced=lib.at_least(0.5 * (0.67 - 0.357)))',
    )
    c1 = _commit(tmp_path, "2026-11-27", {"chapters/x.md": v1}, "a chapter")
    v2 = _chapter(
        "import lib\nHALF = 0.5 * 0.31",
        'lib.claim(\n    "X-a",\n    0.9,\n    reproduced=lib.at_least( 0.80 ),\n    partial=lib.at_least(.5),  # reformatted\n)\n'
        'lib.claim("X-b", 0.1, reproduced=lib.at_most(0.25))',
        'lib.claim("X-c", 0.2, reproduced=lib.at_least(HALF))\n'
        'lib.claim("X-d", 0.1, reproduced=lib.at_most(0.05 * float(data.max())))\n'
        'lib.claim("X-e", 0.2, reproduced=lib.at_least(0.5 * (0.67 - 0.357)))',
    )
    c2 = _commit(
        tmp_path, "2026-11-28", {"chapters/01_x.md": v2}, "renamed, reformatted", {"chapters/x.md": "chapters/01_x.md"}
    )
    checks = {
        "X-a": ("share", "control a", "at_least(0.8)", "at_least(0.5)"),
        "X-b": ("ratio", "control b", "at_most(0.25)", None),
        "X-c": ("gap", "", "at_least(0.155)", None),
        "X-d": ("step", "", "at_most(0.05)", None),
        "X-e": ("gap", "", "at_least(0.155)", None),
    }
    text, _ = _tiny_registry(checks)
    v3 = _chapter("import lib", *(f'lib.claim("{cid}", 0.5)' for cid in checks))
    files = {"chapters/01_x.md": v3, "lib/claims/criteria.py": criteria_py, "lib/claims/registry.py": text}
    c3 = _commit(tmp_path, "2026-12-01", files, "registry")
    checks["X-a"] = ("share, now in words", "control a", "at_least(0.8)", "at_least(0.5)")
    checks["X-b"] = ("ratio", "control b, replaced", "at_most(0.25)", None)
    text, now = _tiny_registry(checks)
    c4 = _commit(tmp_path, "2026-12-03", {"lib/claims/registry.py": text}, "measure and control")

    h = history(tmp_path, registry=now)
    assert h["01_x/X-a"]["criterion_origin"] == [c1, "2026-11-27"]  # reformatting and the rename kept the run
    assert h["01_x/X-b"]["criterion_origin"] == [c2, "2026-11-28"]  # 0.3 -> 0.25 started it anew
    assert h["01_x/X-c"]["criterion_origin"] == [c2, "2026-11-28"]  # HALF 0.2 -> 0.155
    assert h["01_x/X-d"]["criterion_origin"] is None and "data.max()" in h["01_x/X-d"]["criterion_origin_note"]
    assert h["01_x/X-e"]["criterion_origin"] is None and "≥ 0.1565" in h["01_x/X-e"]["criterion_origin_note"]
    assert all(h[f"01_x/{cid}"]["criterion"] == [c3, "2026-12-01"] for cid in checks)
    assert h["01_x/X-a"]["measure"] == [c4, "2026-12-03"] and h["01_x/X-a"]["control"] == [c3, "2026-12-01"]
    assert h["01_x/X-b"]["measure"] == [c3, "2026-12-01"] and h["01_x/X-b"]["control"] == [c4, "2026-12-03"]
    assert h["01_x/X-c"]["control"] is None

    checks["X-a"] = ("share, now in words", "control a", "at_least(0.85)", "at_least(0.5)")
    text, now = _tiny_registry(checks)
    c5 = _commit(tmp_path, "2026-12-05", {"lib/claims/registry.py": text}, "a criterion changed")
    a = history(tmp_path, registry=now)["01_x/X-a"]
    assert a["criterion"] == [c5, "2026-12-05"] and a["criterion_origin"] is None  # newer than the registry


def test_committed_history_gives_every_check_its_measure_and_a_chapter_origin_before_its_registration():
    """Every key of data/claims_history.json is a registered check with a measure entry; an origin found in a
    chapter is older than the criterion's registration, which is then the registry's first commit."""
    from lib.claims.history import load_history

    saved = load_history()
    registered = {f"{k.chapter}/{c.id}": k for c in REGISTRY.values() for k in c.checks}
    assert saved and set(saved) <= set(registered)
    assert all(h["measure"] and len(h["measure"]) == 2 for h in saved.values())
    first = min(h["criterion"][1] for h in saved.values() if h["criterion"])
    origins = {key: h for key, h in saved.items() if h["criterion_origin"]}
    assert origins, "no criterion traced into a chapter"
    assert len({tuple(h["criterion"]) for h in origins.values()}) == 1  # all registered in the registry's first commit
    for key, h in origins.items():
        assert h["criterion_origin"][1] <= h["criterion"][1] == first, key
        assert not h["criterion_origin_note"], key
    assert all(h["criterion_origin_note"] for h in saved.values() if not h["criterion_origin"])


def test_the_ledger_says_where_a_criterion_was_set_and_since_when_control_and_measure_stand():
    from lib.claims.ledger import _since

    h = {
        "criterion": ["bb92439", "2026-12-01"],
        "control": ["8538298", "2026-12-01"],
        "measure": ["9a5bb20", "2026-12-07"],
        "criterion_origin": ["99c7425", "2026-11-29"],
    }
    assert _since(h) == (
        "<br><small>criterion set in the chapter 2026-11-29 (99c7425), registered 2026-12-01 (bb92439); "
        "control since 2026-12-01 (8538298); measure since 2026-12-07 (9a5bb20)</small>"
    )
    h.update(criterion_origin=None, control=None)
    assert _since(h) == "<br><small>criterion since 2026-12-01 (bb92439); measure since 2026-12-07 (9a5bb20)</small>"


def test_a_record_with_non_finite_numbers_survives_the_notebook(tmp_path):
    """ipykernel writes inf in output metadata as the string "inf": the ledger reads it back as a number."""
    lib.setup("06_sparse_patterns", fast=True)
    iv = lib.core.stats.Interval(0.1, 0.0, float("inf"), 0.9, 4)
    rec = lib.claim("B-bias", 0.1, interval=iv, control=0.8, show=False, robustness=[])
    data = json.loads(json.dumps(rec.to_json()).replace("Infinity", '"inf"'))
    back = ClaimRecord.from_json(data)
    assert back.interval["hi"] == float("inf") and back.interval_text().startswith("[0, inf]")
    assert "B-bias" in ledger_markdown([back])


def test_the_landing_table_has_one_plain_row_per_claim_and_explains_each_contradiction():
    from lib.claims.ledger import _math, claims_table_markdown

    lib.setup("01_copy_task", fast=True)
    r1 = lib.claim("A-soft-order", 0.9, control=0.1, show=False, robustness=[])
    lib.setup("03_linear_vs_softmax", fast=True)
    derived = lib.claim("A-lin-V2", 2.01, show=False, robustness=[])
    lib.setup("04_adam_and_sgld", fast=True)
    r4 = lib.claim("A-soft-order", 0.2, control=0.1, show=False, robustness=[])
    fake = replace(r4, id="A-lin-cross", status="contradicted", measured_text="P× ∝ L^2.03 V^-0.28")
    text = claims_table_markdown([r1, derived, r4, fake], [], {"01_copy_task": "/chapters/01_copy_task"})
    assert text.startswith("**Paper A**") and "| claim | the paper | ours | status | paper scale |" in text
    rows = [line for line in text.splitlines() if line.startswith("| ") and "<small>" in line]
    assert len(rows) == 2  # A-soft-order once (two chapters), A-lin-cross; the derived check is not a row
    assert f"{r1.status} ({{doc}}`ch. 1 </chapters/01_copy_task>`) · {r4.status} (ch. 4)" in rows[1]
    assert "- A-lin-cross (ch. 4): ours P× ∝ $L^{2.03}$ $V^{-0.28}$; the paper:" in text
    assert _math("P ∝ L^{3/2} V^{1/2} and a|b") == "P ∝ $L^{3/2}$ $V^{1/2}$ and a\\|b"
