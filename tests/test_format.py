"""The code is formatted by the formatter ``pyproject.toml`` configures (ruff format, 120 columns)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff() -> list[str] | None:
    exe = Path(sys.executable).with_name("ruff")
    if exe.exists():
        return [str(exe)]
    return [shutil.which("ruff")] if shutil.which("ruff") else None


def test_the_code_is_as_ruff_format_writes_it():
    ruff = _ruff()
    if ruff is None:
        pytest.skip("ruff is not installed (requirements.txt pins it)")
    out = subprocess.run(
        [*ruff, "format", "--check", "lib", "tests", "tools", "benchmarks"], cwd=ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, f"run `ruff format lib tests tools benchmarks`:\n{out.stdout}{out.stderr}"


def test_no_formatter_opt_outs_remain():
    marked = [
        str(p.relative_to(ROOT))
        for folder in ("lib", "tests", "tools", "benchmarks")
        for p in (ROOT / folder).rglob("*.py")
        if "fmt: " + "skip" in p.read_text()
    ]
    assert not marked, f"formatter opt-outs in {marked}"
