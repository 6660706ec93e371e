"""The built book opened as a reader opens it: every page in headless Chromium (run by `make test` after the build).

For each page: every image loads, every formula is typeset by MathJax (no raw TeX left in a ``.math`` element), no
display equation is wider than the column, no printed output is cut at the column's edge, and the console shows no
error (an uncaught exception or a resource that failed to load). One screenshot per chapter and of the landing page
is saved under ``_build/screenshots/``. Chromium is Debian's ``chromium`` (``make chromium`` installs it where missing);
``BOOK_CHROMIUM`` names another binary.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tools import bookctl

ROOT = Path(__file__).resolve().parent.parent
PAGES = bookctl.toc_files(ROOT)  # the landing page and every chapter
CHAPTERS = bookctl.chapter_docnames(ROOT)
FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--allow-file-access-from-files",
    "--hide-scrollbars",
    "--virtual-time-budget=20000",
]


@pytest.fixture(scope="module")
def html_dir(request) -> Path:
    value = request.config.getoption("--html-dir")
    if value is None:
        pytest.skip("no --html-dir given (make test passes it after building the book)")
    return Path(value).resolve()


@pytest.fixture(scope="module")
def chromium() -> str:
    exe = os.environ.get("BOOK_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.fail("headless Chromium is missing: `make chromium` installs Debian's chromium (or set BOOK_CHROMIUM)")
    return exe


def run_chromium(exe: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([exe, *FLAGS, *args], capture_output=True, text=True, timeout=120)


def probe(exe: str, page: Path, tmp: Path) -> tuple[dict, list[str]]:
    shutil.copy(ROOT / "tests" / "browser_probe.html", tmp / "probe.html")
    url = f"{(tmp / 'probe.html').as_uri()}?page={page.as_uri()}"
    out = run_chromium(exe, "--enable-logging=stderr", "--v=0", "--dump-dom", url)
    found = re.search(r'<pre id="out">([^<]*)</pre>', out.stdout)
    assert found and found.group(1) != "pending", f"the probe did not finish on {page.name}: {out.stderr[-2000:]}"
    console = [line for line in out.stderr.splitlines() if "CONSOLE" in line]
    errors = [line for line in console if re.search(r"Uncaught|Error|Failed to load", line)]
    return json.loads(found.group(1)), errors


@pytest.mark.parametrize("doc", PAGES)
def test_page_renders_in_a_browser(html_dir, chromium, doc, tmp_path):
    page = html_dir / f"{doc}.html"
    assert page.exists(), f"{page} was not built"
    report, errors = probe(chromium, page, tmp_path)
    assert report["broken"] == [], f"{doc}: images that do not load: {report['broken']}"
    assert report["untypeset"] == [], f"{doc}: formulas left as raw TeX: {report['untypeset'][:5]}"
    assert report["cut"] == [], f"{doc}: printed output cut at the column: {report['cut'][:3]}"
    assert report["overflow"] == [], f"{doc}: display equations wider than the column, in sections {report['overflow']}"
    if report["math"]:
        assert report["mathjax"] and report["mjx"] >= report["math"], f"{doc}: MathJax did not typeset the page"
    assert errors == [], f"{doc}: console errors:\n" + "\n".join(errors)
    if doc in CHAPTERS:
        assert report["images"] > 0, f"{doc}: no figure"


@pytest.mark.parametrize("doc", [PAGES[0], *CHAPTERS])
def test_screenshot_per_chapter(html_dir, chromium, doc):
    shots = html_dir.parent / "screenshots"
    shots.mkdir(exist_ok=True)
    target = shots / f"{Path(doc).name}.png"
    target.unlink(missing_ok=True)
    run_chromium(chromium, f"--screenshot={target}", "--window-size=1280,2400", (html_dir / f"{doc}.html").as_uri())
    assert target.exists() and target.stat().st_size > 20_000, f"{doc}: no screenshot (or a blank one)"
