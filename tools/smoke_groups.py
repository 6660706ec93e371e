"""pytest plugin of ``make smoke-paper``: chapters that compute the same study run on one worker, one after the other.

A smoke run starts from an empty results cache, so two chapters that need one study (chapter 8 reads chapter 6's
context study) would both compute it when pytest-xdist runs them at once. With ``-p tools.smoke_groups --dist
loadgroup`` they share an xdist group: the first computes and caches the study, the second loads it.
"""

from __future__ import annotations

import pytest

#: chapter stem -> the group of chapters that share a computed study
GROUPS = {"06_sparse_patterns": "context-study", "08_synthesis": "context-study"}


def pytest_collection_modifyitems(items):
    for item in items:
        group = GROUPS.get(item.path.stem) if item.path.suffix == ".ipynb" else None
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
