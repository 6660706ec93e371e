"""The chapter rules (issue 15): chapters are lectures over one-call experiments in ``lib``.

Enforced on every chapter:

* ``defs``: no function or class definitions (a ``lambda`` passed to a ``lib`` call is an argument; helpers live in ``lib``: ``lib.book.plots``, ``lib.measures.comparisons``, studies);
* ``imports``: ``lib`` is imported as ``lib`` and its curated subpackages ``lib.theory`` and ``lib.lm``, never a
  module under them (``from lib.train.copy_dynamics import ...``);
* ``loops``: no loop or comprehension over training or fitting calls (``train*``, ``fit*``, ``scan_transition``,
  ``run_sweep``): a set of runs is a study in ``lib``, one call;
* ``long cells``: visible code cells of at most 20 non-blank lines;
* ``code lines``: at most as many visible code lines as prose lines;
* ``hidden computation``: hidden cells call no ``lib`` or theory function but plotting helpers and the book's
  bookkeeping (recording a claim, gluing a value: a claim's box shows what it measured).

Every chapter meets all six (the record of what each still owed went in the commit that cleared the last of it).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import jupytext
import pytest

from tools.bookctl import toc_files

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("*.md"))
MAX_CELL = 20
ALLOWED_IMPORTS = {"lib", "lib.theory", "lib.lm"}
TRAINING = re.compile(r"^(train|fit|scan_transition$|run_sweep$)")
PLOTTING = {
    "attention_heatmap",
    "plot_sweep",
    "mark_interval",
    "legend_for_runs",
    "scan_figure",
    "filtered_at",
    "scan_state",
    "ternary_panel",
    "relative_to",
    "action_landscape",
    "action_landscape_figure",
    "jump_figure",
    "export_figure",
    "interact",
    "glue",
    "finish",
    # bookkeeping: recording claims and gluing values (the claim's box shows what it measured)
    "claim",
    "paper_claim",
    "glue_all",
    "parts_hold",
    "part_holds",
    "study_record",  # reads a committed paper-scale study, computes nothing
    "study_progress",
}
LIB_NAMES = ("lib", "th", "theory")  # how chapters name lib and its theory


def _called_name(node: ast.Call) -> str:
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")


def chapter_report(text: str) -> dict:
    """Every rule's findings for one chapter's MyST source ``text``."""
    nb = jupytext.reads(text, fmt="md:myst")
    code = prose = 0
    report = {"defs": [], "imports": [], "loops": [], "long cells": [], "hidden computation": []}
    for cell in nb.cells:
        lines = [ln for ln in cell.source.splitlines() if ln.strip()]
        if cell.cell_type == "markdown":
            prose += len(lines)
            continue
        if cell.cell_type != "code":
            continue
        tags = cell.metadata.get("tags", [])
        if "remove-cell" in tags:  # the Colab bootstrap: not part of the lecture
            continue
        hidden = "hide-input" in tags or "remove-input" in tags
        if not hidden:
            code += len(lines)
            if len(lines) > MAX_CELL:
                report["long cells"].append(len(lines))
        tree = ast.parse("\n".join(ln for ln in cell.source.splitlines() if not ln.lstrip().startswith(("%", "!"))))
        if hidden:
            computed = sorted(
                {
                    ast.unparse(n.func)
                    for n in ast.walk(tree)
                    if isinstance(n, ast.Call)
                    and isinstance(n.func, ast.Attribute)
                    and _root(n.func) in LIB_NAMES
                    and n.func.attr not in PLOTTING
                }
            )
            if computed:
                report["hidden computation"].append(computed)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):  # a lambda argument is fine
                report["defs"].append(node.name)
            elif isinstance(node, ast.Import):
                report["imports"] += [
                    a.name for a in node.names if a.name.startswith("lib.") and a.name not in ALLOWED_IMPORTS
                ]
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "lib":
                if node.module not in ALLOWED_IMPORTS or any(
                    a.name not in ("theory", "lm") for a in node.names if node.module == "lib"
                ):
                    report["imports"].append(node.module)
            if isinstance(node, (ast.For, ast.While)):
                parts = node.body
            elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
                parts = [node.elt]
            elif isinstance(node, ast.DictComp):
                parts = [node.key, node.value]
            else:
                continue
            report["loops"] += [
                _called_name(m)
                for part in parts
                for m in ast.walk(part)
                if isinstance(m, ast.Call) and TRAINING.match(_called_name(m))
            ]
    report["code"], report["prose"] = code, prose
    return report


def _root(node: ast.AST) -> str:
    while isinstance(node, ast.Attribute):
        node = node.value
    return getattr(node, "id", "")


def broken_rules(report: dict) -> dict:
    return {
        "loops": len(report["loops"]),
        "long cells": len(report["long cells"]),
        "code > prose": report["code"] > report["prose"],
        "hidden computation": len(report["hidden computation"]),
    }


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_chapter_keeps_the_rules(path):
    report = chapter_report(path.read_text(encoding="utf-8"))
    assert report["defs"] == [], f"{path.stem}: function or class definitions belong in lib: {report['defs']}"
    assert report["imports"] == [], f"{path.stem}: import lib's curated names, not its modules: {report['imports']}"
    assert report["loops"] == [], f"{path.stem}: loops over training or fitting calls: {report['loops']}"
    assert report["long cells"] == [], f"{path.stem}: visible cells over {MAX_CELL} lines: {report['long cells']}"
    assert report["code"] <= report["prose"], f"{path.stem}: {report['code']} code lines vs {report['prose']} prose"
    assert report["hidden computation"] == [], f"{path.stem}: hidden cells compute: {report['hidden computation']}"


CLEAN = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# A chapter

Prose first, one line.
And another line of prose.
And a third.

```{code-cell} ipython3
import lib

runs = lib.load_context_study(lib.ContextStudyConfig.fast())
```
"""


@pytest.mark.parametrize(
    "cell, rule",
    [
        ("def helper(x):\n    return x", "defs"),
        ("from lib.train.copy_dynamics import train_copy_dynamics", "imports"),
        ("import lib.train.copy_dynamics", "imports"),
        ("runs = [lib.train_gpt(c) for c in configs]", "loops"),
        ("for c in configs:\n    lib.fit_copy_map(c)", "loops"),
        ("\n".join(f"x{i} = {i}" for i in range(21)), "long cells"),
        (
            ":tags: [hide-input]\n\nfig = lib.scan_figure(runs, 't')\ncurve = th.order_parameters_vs_P(runs)",
            "hidden computation",
        ),
    ],
)
def test_a_chapter_breaking_one_rule_is_caught(cell, rule):
    assert all(not v for k, v in chapter_report(CLEAN).items() if k not in ("code", "prose"))
    broken = chapter_report(CLEAN + f"\n```{{code-cell}} ipython3\n{cell}\n```\n")
    assert broken[rule], rule
    if rule != "long cells":
        assert broken_rules(chapter_report(CLEAN))["code > prose"] is False
    assert (
        broken_rules(chapter_report(CLEAN + "\n```{code-cell} ipython3\nx = 1\ny = 2\nz = 3\n```\n"))["code > prose"]
        is True
    )


def test_lib_exports_exactly_what_chapters_use():
    import lib

    used = set(re.findall(r"\blib\.([A-Za-z_]\w*)", "".join(p.read_text(encoding="utf-8") for p in CHAPTERS)))
    assert sorted(set(lib.__all__) - used) == [], "lib/__init__.py exports names no chapter uses"
    assert sorted(used - set(lib.__all__) - {"lm", "theory"}) == [], (
        "chapters use names lib/__init__.py does not export"
    )
    assert len(lib.__all__) == len(set(lib.__all__))


# ----------------------------------------------------------------------------------------------- reading (issue 47)
#: Provenance a reader does not need in the running text: it belongs in the Methods appendix and commit messages.
PROVENANCE = re.compile(
    r"\bcach(?:e|es|ed|ing)\b|\bmanifests?\b|\bCPU[- ]hours?\b|--publish|python -m lib\.studies|data/paper", re.I
)


def _prose(doc: str) -> str:
    path = ROOT / f"{doc}.md"
    if doc.startswith("chapters/"):
        return "\n".join(c.source for c in jupytext.read(path).cells if c.cell_type == "markdown")
    return path.read_text(encoding="utf-8")


def test_the_book_reads_in_an_evening():
    from tools.bookctl import PROSE_BUDGET, prose_words

    counts = prose_words(ROOT)
    assert set(counts) >= {f"chapters/{p.stem}" for p in CHAPTERS}
    assert sum(counts.values()) <= PROSE_BUDGET, f"{sum(counts.values())} words of prose: {counts}"


def test_prose_words_count_glued_values_as_one_word(tmp_path):
    from tools.bookctl import prose_words

    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n  - file: chapters/01_x\n")
    (tmp_path / "intro.md").write_text("# Title\n\nTwo words.\n")
    (tmp_path / "chapters").mkdir()
    cell = "```{code-cell} ipython3\nx = 1  # code is not prose\n```\n"
    (tmp_path / "chapters" / "01_x.md").write_text(f"# One\n\nGap {{glue:text}}`gap:.2f` here.\n\n{cell}")
    assert prose_words(tmp_path) == {"intro": 3, "chapters/01_x": 4}


@pytest.mark.parametrize("doc", [d for d in toc_files(ROOT) if d != "methods"])
def test_no_provenance_outside_the_methods_appendix(doc):
    found = [m.group(0) for m in PROVENANCE.finditer(_prose(doc))]
    assert found == [], f"{doc}: provenance in the running text ({found}); it belongs in methods.md"


def test_the_provenance_pattern_finds_what_it_names():
    for text in ("results are cached", "the manifest", "3.3 CPU-hours", "run --publish", "data/paper/x.json"):
        assert PROVENANCE.search(text), text
    for text in ("a manifold of minima", "the paper's budget", "published by the authors"):
        assert not PROVENANCE.search(text), text
