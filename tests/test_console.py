"""lib.core.console: progress of a build at a seed offset goes to the process's stderr, line by line, never to the page."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT

SCRIPT = """
import io, sys, time
import lib
from lib.core import console
console.EVERY = 0.0
ctx = lib.setup("99_probe", fast=True)
captured = io.StringIO()
sys.stdout, sys.stderr = captured, captured  # what a notebook would record
from lib.core.progress import progress
for _ in progress(range(3), desc="probe study"):
    time.sleep(0.01)
sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
print("NOTEBOOK:" + repr(captured.getvalue()))
"""


def run(env_console: str):
    env = {**os.environ, "BOOK_CONSOLE": env_console, "BOOK_PROGRESS": "0", "BOOK_SEED": "7"}
    return subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True, check=True)


def test_console_progress_reaches_stderr_and_not_the_page():
    out = run("1")
    lines = out.stderr.splitlines()
    assert lines[0].startswith("[99_probe +") and "started: seed offset 7" in lines[0]
    assert any("probe study" in line and "3/3" in line for line in lines), out.stderr
    assert "NOTEBOOK:''" in out.stdout  # nothing went to the streams a notebook records


def test_without_the_flag_nothing_is_printed():
    out = run("0")
    assert out.stderr == "" and "NOTEBOOK:''" in out.stdout


def test_in_a_real_kernel_the_console_lines_stay_off_the_page():
    """ipykernel forwards file descriptor 2 (``sys.__stderr__`` too) into the notebook; the console must not be it."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
        "import lib\nfrom lib.core import console\n"
        "lib.setup('99_probe', fast=True)\nconsole.enable('99_probe')\nconsole.say('CONSOLE LINE')\n"
        "lib.finish()\nprint('page')"
    )
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    assert [(o.get("name"), o.get("text")) for o in nb.cells[0].outputs] == [("stdout", "page\n")]
