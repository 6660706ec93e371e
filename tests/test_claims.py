"""lib.claims: criteria, statuses, the assert, and the ledger built from notebook outputs."""

from __future__ import annotations

import json

import pytest

import lib
from lib.claims import CLAIM_KEY, ClaimMismatch, ClaimRecord, collect_claims, ledger_markdown


def test_criteria():
    assert lib.between(1, 2)(1.5) and not lib.between(1, 2)(2.5)
    assert lib.at_least(3)(3) and not lib.at_least(3)(2.99)
    assert lib.at_most(3)(3) and not lib.at_most(3)(3.01)
    assert lib.within(300, rel=0.1)(329) and not lib.within(300, rel=0.1)(331)
    assert lib.within(0.2, tol=0.05)(0.16) and not lib.within(0.2, tol=0.05)(0.26)
    assert lib.is_true()(True) and not lib.is_true()(False)
    assert not lib.at_least(0)(float("nan"))
    assert "300" in lib.within(300, rel=0.1).describe()


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: lib.between(2, 1), "lo < hi"),
        (lambda: lib.between(0, float("inf")), "finite"),
        (lambda: lib.at_least(float("nan")), "finite"),
        (lambda: lib.within(1.0), "exactly one"),
        (lambda: lib.within(1.0, rel=0.1, tol=0.1), "exactly one"),
        (lambda: lib.within(1.0, rel=-0.1), "rel"),
        (lambda: lib.within(1.0, tol=0.0), "tol"),
        (lambda: lib.at_most("3"), "finite"),
    ],
)
def test_bad_criteria(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def claim_kwargs(**kw):
    base = dict(statement="x grows", source_value="≈1", measured=0.95, reproduced=lib.at_least(0.9))
    base.update(kw)
    return base


def test_status_follows_the_criteria(book_context):
    assert lib.claim("A-t1", **claim_kwargs(), show=False).status == "reproduced"
    rec = lib.claim("A-t2", **claim_kwargs(measured=0.6, partial=lib.at_least(0.5), expect="partial"), show=False)
    assert rec.status == "partial" and rec.source == "A" and rec.chapter == "99_test_chapter"
    rec = lib.claim("t3", **claim_kwargs(measured=0.1, expect="not at our scale"), show=False)
    assert rec.status == "not at our scale" and rec.source == "ours"


def test_unexpected_status_fails_loudly(book_context):
    with pytest.raises(ClaimMismatch, match="expects 'reproduced'"):
        lib.claim("B-t4", **claim_kwargs(measured=0.1, expect="reproduced"), show=False)
    with pytest.raises(AssertionError):  # ClaimMismatch is an AssertionError: it fails nbmake like an assert
        lib.claim("B-t5", **claim_kwargs(measured=0.99, expect="partial"), show=False)


def test_scale_dependent_expectation(book_context):
    rec = lib.claim("A-t6", **claim_kwargs(measured=0.6, partial=lib.at_least(0.5), expect={"fast": "partial", "full": "reproduced"}), show=False)
    assert rec.expected == "partial" and rec.scale == "fast"
    with pytest.raises(ValueError, match="fast"):
        lib.claim("A-t7", **claim_kwargs(expect={"fast": "reproduced"}), show=False)


def test_contradicted_is_checked_first(book_context):
    rec = lib.claim("B-t9", **claim_kwargs(measured=-0.3, partial=lib.at_least(-1.0), contradicted=lib.at_most(-0.2),
                                           expect="contradicted"), show=False)  # fmt: skip
    assert rec.status == "contradicted"
    assert lib.claim("B-t10", **claim_kwargs(measured=-0.1, partial=lib.at_least(-1.0), contradicted=lib.at_most(-0.2),
                                             expect="partial"), show=False).status == "partial"  # fmt: skip


def test_no_expectation_records_without_asserting(book_context):
    for measured in (0.1, 0.99):  # whatever the status, a scale without an expectation only records it
        rec = lib.claim("A-t8", **claim_kwargs(measured=measured, expect={"fast": None, "full": "reproduced"}), show=False)
        assert rec.expected is None and rec.status == ("reproduced" if measured > 0.5 else "not at our scale")


@pytest.mark.parametrize(
    "kw, exc, match",
    [
        (dict(measured=True), TypeError, "boolean"),
        (dict(measured=0.5, reproduced=lib.is_true()), TypeError, "boolean"),
        (dict(measured="0.5"), TypeError, "number"),
        (dict(reproduced=0.9), TypeError, "Criterion"),
        (dict(partial="x"), TypeError, "partial"),
        (dict(statement=""), ValueError, "statement"),
        (dict(source_value="  "), ValueError, "source_value"),
        (dict(expect="maybe"), ValueError, "expect"),
        (dict(source="C"), ValueError, "source"),
        (dict(extra={"f": object()}), TypeError, "serializable"),
    ],
)
def test_bad_claims(book_context, kw, exc, match):
    with pytest.raises(exc, match=match):
        lib.claim("A-bad", **claim_kwargs(**kw), show=False)


def test_claim_needs_setup(monkeypatch):
    import lib.book

    monkeypatch.setattr(lib.book, "_CONTEXT", None)
    with pytest.raises(RuntimeError, match="setup"):
        lib.claim("A-x", **claim_kwargs(), show=False)


def fake_notebook(tmp_path, name, records):
    outputs = [{"output_type": "display_data", "metadata": {CLAIM_KEY: r.to_json()}, "data": {"text/plain": str(r)}} for r in records]
    nb = {"cells": [{"cell_type": "code", "execution_count": 1, "source": "", "metadata": {}, "outputs": outputs}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / f"{name}.ipynb"
    path.write_text(json.dumps(nb))
    return path


def test_ledger_is_built_from_notebook_outputs(book_context, tmp_path):
    r1 = lib.claim("B-z", **claim_kwargs(statement="a | b"), show=False)
    r2 = lib.claim("A-a", **claim_kwargs(), show=False)
    path = fake_notebook(tmp_path, "ch", [r1, r2])
    got = collect_claims([path])
    assert got == [r1, r2]
    text = ledger_markdown(got, {"99_test_chapter": "/chapters/99_test_chapter"})
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert [row.split("|")[1].split()[0] for row in rows] == ["`A-a`", "`B-z`"]  # paper A first
    assert "a \\| b" in text  # table-safe
    assert "{doc}`99 </chapters/99_test_chapter>`" in text
    assert "2 claim checks" in text
    assert ClaimRecord.from_json(json.loads(json.dumps(r1.to_json()))) == r1


def test_ledger_rejects_duplicates_and_handles_empty(book_context, tmp_path):
    r = lib.claim("A-dup", **claim_kwargs(), show=False)
    with pytest.raises(ValueError, match="twice"):
        collect_claims([fake_notebook(tmp_path, "dup", [r, r])])
    assert "No claims" in ledger_markdown([])


def test_claim_display_bundle(book_context):
    r = lib.claim("A-show", **claim_kwargs(note="our choice"), show=False)
    data, metadata = r._bundle()
    assert set(data) == {"text/plain", "text/html"} and metadata == {CLAIM_KEY: r.to_json()}
    assert "reproduced" in data["text/html"] and "our choice" in data["text/html"]
