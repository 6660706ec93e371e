"""Shared test setup: one torch thread, float64 checks, and the --html-dir option of the built-HTML checks."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # tests also run from a plain checkout (no `pip install -e .`)
    sys.path.insert(0, str(ROOT))

torch.set_num_threads(1)
# Unit tests compute everything: the default results cache is off (tests of lib.core.cache build their own Cache).
os.environ["BOOK_CACHE"] = "0"


def pytest_addoption(parser):
    parser.addoption("--html-dir", default=None, help="built HTML book to check (tests/test_built_html.py)")
    parser.addoption(
        "--executed-dir", default=None, help="staged book whose chapters nbmake executed (tests/test_determinism.py)"
    )
    parser.addoption("--second-dir", default=None, help="a second staged copy whose first chapters were executed again")


@pytest.fixture
def book_context():
    """A chapter context, so lib.claim can be called in tests."""
    import lib

    return lib.setup("99_test_chapter", fast=True)
