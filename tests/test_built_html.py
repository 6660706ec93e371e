"""Checks of the built HTML book (run by `make test` after the build: --html-dir _build/html)."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from tools import bookctl

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = bookctl.chapter_docnames(ROOT)

ERROR_MARKERS = (
    "Traceback (most recent call last)",
    "output traceback",
    "output error",
    "CellExecutionError",
    "ClaimMismatch",
)


@pytest.fixture(scope="module")
def html_dir(request) -> Path:
    value = request.config.getoption("--html-dir")
    if value is None:
        pytest.skip("no --html-dir given (make test passes it after building the book)")
    path = Path(value)
    assert (path / "index.html").exists(), f"{path} holds no built book"
    return path


@pytest.mark.parametrize("doc", CHAPTERS)
def test_chapter_page_has_figures_and_no_errors(html_dir, doc):
    page = html_dir / f"{doc}.html"
    assert page.exists(), f"{page} was not built"
    text = page.read_text(encoding="utf-8")
    figures = re.findall(r"<img[^>]+src=\"\.\./_images/[^\"]+\.png\"", text)  # executed plot outputs
    assert figures, f"{doc}: no figure"
    for marker in ERROR_MARKERS:
        assert marker not in text, f"{doc}: error output ({marker})"
    assert "claim-box" in text, f"{doc}: no claim is shown"


def uncaptioned_figures(text: str) -> list[str]:
    """The executed plot images of a page that stand outside a ``<figure>`` with a ``<figcaption>``."""
    bare = []
    for m in re.finditer(r"<img[^>]+src=\"(\.\./)?_images/([^\"]+\.png)\"", text):
        opened, closed = text.rfind("<figure", 0, m.start()), text.rfind("</figure>", 0, m.start())
        end = text.find("</figure>", m.end())
        if opened <= closed or end < 0 or "<figcaption" not in text[m.end() : end]:
            bare.append(m.group(2)[:16])
    return bare


def echoed_values(text: str) -> list[str]:
    """Cell results shown as plain text (a value a cell echoes), as opposed to printed lines or figures."""
    return [
        html.unescape(re.sub(r"<[^>]+>", "", m))[:60]
        for m in re.findall(r"output text_plain[^>]*>(.*?)</pre>", text, re.S)
    ]


@pytest.mark.parametrize("doc", CHAPTERS)
def test_every_figure_has_a_caption_and_no_value_is_echoed(html_dir, doc):
    text = (html_dir / f"{doc}.html").read_text(encoding="utf-8")
    assert uncaptioned_figures(text) == [], f"{doc}: figures without a numbered caption"
    assert echoed_values(text) == [], f"{doc}: echoed values"


def test_the_figure_and_echo_checks_can_fail():
    img = '<img alt="x" src="../_images/abc.png" />'
    assert uncaptioned_figures(f"<div>{img}</div>") == ["abc.png"]
    assert (
        uncaptioned_figures(f'<figure class="align-default">{img}<figcaption><p>Look.</p></figcaption></figure>') == []
    )
    assert uncaptioned_figures(f"<figure>{img}</figure>") == ["abc.png"]
    echo = '<div class="output text_plain highlight-myst-ansi notranslate"><div class="highlight"><pre>0.25</pre>'
    assert echoed_values(echo) == ["0.25"] and echoed_values('<div class="output stream"><pre>x</pre>') == []


@pytest.mark.parametrize("doc", CHAPTERS)
def test_colab_button_opens_the_paired_notebook(html_dir, doc):
    text = html.unescape((html_dir / f"{doc}.html").read_text(encoding="utf-8"))
    links = re.findall(r"https://colab\.research\.google\.com/github/[^\"']+", text)
    assert links, f"{doc}: no Colab launch button"
    assert all(link.endswith(f"{doc}.ipynb") for link in links), links
    assert (ROOT / f"{doc}.ipynb").exists()


def test_landing_page_leads_with_the_results_and_a_plain_table(html_dir):
    root = bookctl.toc_files(ROOT)[0]  # the landing page (index.html only redirects to it)
    text = (html_dir / f"{root}.html").read_text(encoding="utf-8")
    assert re.search(r"<img[^>]+src=\"[^\"]+\.png\"", text), "the landing page has no figure"
    assert "What could not be done here" in text
    assert "Paper A (" in text and "Paper B (" in text and "<table" in text  # the count per paper leads
    assert "of paper B" in text and "derived</em> check" in text  # paper B's sentence; derived checks apart
    assert "<strong>Paper B</strong>" in text and "paper scale" in text  # the plain table, one part per paper
    for doc in CHAPTERS:
        slug = Path(doc).name
        if slug != "02_bayesian_posterior":  # its checks are all derived: counted apart, not in the table
            assert f"chapters/{slug}.html" in text, f"the landing page's table links no claim of {slug}"
    assert "reproduced if" not in text  # the full ledger is its own page


def test_the_ledger_page_has_every_check_in_full(html_dir):
    text = (html_dir / "ledger.html").read_text(encoding="utf-8")
    assert "Claims ledger" in text
    assert "reproduced if" in text and "lacks:" in text  # criterion column; what a partial still lacks
    for doc in CHAPTERS:
        assert f"chapters/{Path(doc).name}.html" in text, f"the ledger links no claim of {doc}"
    assert "not at our scale" in text  # the legend and statuses are rendered


REMOTE = re.compile(r"^(https?:)?//", re.I)


def test_no_page_loads_a_script_style_or_font_from_another_host(html_dir):
    """Offline readers get typeset math: MathJax comes from the registry package sphinx-mathjax-offline, copied into
    _static; no page (and no stylesheet it loads) fetches a script, style or font from the network."""
    pages = sorted(html_dir.rglob("*.html"))
    assert pages
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for tag in re.findall(r"<(?:script|link|img)\b[^>]*>", text):
            if tag.startswith("<link") and not re.search(r'rel="(stylesheet|preload|modulepreload|icon)"', tag):
                continue  # plain hyperlinks in <link> (e.g. rel="next") load nothing
            for url in re.findall(r'(?:src|href)="([^"]+)"', tag):
                assert not REMOTE.match(url), f"{page.relative_to(html_dir)} loads {url} from another host"
    for css in (html_dir / "_static").rglob("*.css"):
        for url in re.findall(r"url\(\s*['\"]?([^'\")]+)", css.read_text(encoding="utf-8", errors="replace")):
            assert not REMOTE.match(url), f"{css.relative_to(html_dir)} loads {url} from another host"


def test_mathjax_is_served_from_the_book(html_dir):
    text = (html_dir / f"{CHAPTERS[0]}.html").read_text(encoding="utf-8")
    src = re.findall(r'<script[^>]*src="([^"]*mathjax[^"]*)"', text)
    assert src, "no MathJax script on the first chapter"
    assert (html_dir / CHAPTERS[0]).parent.joinpath(src[0]).resolve().exists(), src[0]
    assert (html_dir / "_static" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2").is_dir()  # the fonts too
