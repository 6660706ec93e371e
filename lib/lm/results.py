"""Committed files of a local suite: a run's two checkpoints exported as a two-step local suite (:func:`export_pair`,
the pair chapter 5 patches live); their manifest entries go through :func:`lib.core.cache.register_files`.

The per-run analyses themselves are committed through the results cache (:mod:`lib.lm.study_results`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from .suite import INDEX_FILE, INDEX_FORMAT, LocalSuite

__all__ = ["export_pair"]


def export_pair(suite: LocalSuite, size: str, seed: int, old: int, new: int, out: Path) -> list[Path]:
    """Copy two checkpoints and the tokenizer into ``out`` as a two-step local suite; return the files written."""
    shutil.rmtree(out, ignore_errors=True)
    name = suite.name(size, seed)
    files = {}
    for step in (old, new):
        src = suite.verify_checkpoint(size, seed, step)
        shutil.copytree(src, out / name / f"step{step}")
        files[f"step{step}"] = suite.files[name][f"step{step}"]
    shutil.copytree(suite.root / "tokenizer", out / "tokenizer")
    index = {
        "format": INDEX_FORMAT,
        "prefix": suite.prefix,
        "sizes": [size],
        "seeds": [seed],
        "steps": [old, new],
        "description": f"the checkpoint pair around the emergence of {name} (from {suite.description})",
        "size_info": {size: suite.size_info.get(size, {})},
        "files": {name: files},
        "meta": {},
    }
    (out / INDEX_FILE).write_text(json.dumps(index, indent=1))
    return sorted(p for p in out.rglob("*") if p.is_file())
