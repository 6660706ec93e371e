"""The chapters as files: paired notebooks in sync, Colab cell from _config.yml, the template's structure."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tools import bookctl
import yaml

ROOT = Path(__file__).resolve().parent.parent


CHAPTERS = bookctl.chapter_docnames(ROOT)


def test_toc_lists_chapters_that_exist():
    assert CHAPTERS, "the TOC lists no chapters"
    for doc in CHAPTERS:
        assert (ROOT / f"{doc}.md").exists(), doc
        assert re.fullmatch(r"chapters/\d\d_[a-z0-9_]+", doc), doc


def test_paired_notebooks_are_in_sync():
    problems = bookctl.sync(ROOT, check=True)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("doc", CHAPTERS)
def test_paired_notebook_has_no_outputs(doc):
    nb = json.loads((ROOT / f"{doc}.ipynb").read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None


@pytest.mark.parametrize("doc", CHAPTERS)
def test_chapter_structure(doc):
    import jupytext

    slug = Path(doc).name
    nb = jupytext.read(ROOT / f"{doc}.md")
    assert nb.metadata["kernelspec"]["name"] == "python3"
    code = [c for c in nb.cells if c.cell_type == "code"]
    first = code[0]
    assert first.source.startswith(bookctl.BOOTSTRAP_MARK) and "remove-cell" in first.metadata.get("tags", [])
    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    assert url in first.source
    assert f'lib.setup("{slug}")' in code[1].source
    assert "lib.finish()" in code[-1].source
    assert any("lib.claim(" in c.source for c in code), "a chapter must test at least one claim"
    title = next(c for c in nb.cells if c.cell_type == "markdown").source.splitlines()[0]
    assert re.fullmatch(r"# [A-Z][^#]*", title), "the chapter starts with its title (the TOC numbers it)"
    assert not re.match(r"# \d", title) and not re.search(r"^## \d", nb_text(doc), re.M), (
        "no hand-typed numbers in headings"
    )


def nb_text(doc):
    return (ROOT / f"{doc}.md").read_text()


def test_synced_markdown_rewrites_only_the_colab_cell():
    text = (ROOT / "templates" / "chapter.md").read_text()
    out = bookctl.synced_markdown(text, "https://example.org/x/y", "template")
    assert "https://example.org/x/y" in out and "/content/y" in out
    assert out.replace(bookctl.bootstrap_code("https://example.org/x/y"), "") != out
    assert bookctl.synced_markdown(out, "https://example.org/x/y", "template") == out  # idempotent
    with pytest.raises(SystemExit, match="exactly one"):
        bookctl.synced_markdown("no cell here", "https://example.org/x/y", "bad")


def test_colab_installs_the_pinned_hub_stack_for_chapter_5_only():
    from lib.lm.suite import TRANSFORMERS_PIN

    ch5 = nb_text("chapters/05_language_models")
    cell = ch5[ch5.index(bookctl.BOOTSTRAP_MARK) :].split("```")[0]
    compile(cell, "bootstrap", "exec")
    assert f"transformers=={TRANSFORMERS_PIN}" in cell and "torch==" not in cell
    assert "pip" not in nb_text("chapters/01_copy_task").split("```")[1]
    with pytest.raises(SystemExit, match="pins no version of nosuchpackage"):
        bookctl.requirement_pins(["nosuchpackage"])


def test_config_excludes_what_breaks_an_offline_w_build():
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert cfg["only_build_toc_files"] is True
    for pattern in (".*", "**/.*", "lib", "tests", "data"):
        assert pattern in cfg["exclude_patterns"]
    assert "sphinx.ext.intersphinx" not in json.dumps(cfg)
    assert cfg["execute"]["execute_notebooks"] == "off"  # chapters run once, under nbmake
