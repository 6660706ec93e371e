"""Committed results of the mini-suite: the analysis (through the cache), the suite's index and one checkpoint pair.

``data/`` holds (each file in ``data/manifest.json`` with its sha256, size and regenerating command):

* ``data/lm/minisuite/suite.json``: the full suite's index (sizes, seeds, steps, sha256 of every checkpoint file);
  its sha256 is the ``suite_digest`` of the analysis config, so the chapter can ask the cache for the analysis of
  exactly that suite without having the suite;
* ``data/cache/lib.lm.analysis.analyze_suite/<key>.pkl``: the analysis (:func:`lib.publish`);
* ``data/lm/pair/``: the two fp16 checkpoints around one run's emergence, laid out as a two-step local suite, which
  the chapter patches live.

:func:`load_analysis` returns the committed analysis, or computes it when the suite is present locally; otherwise it
fails with the commands that regenerate it (a FAST build never trains the full suite).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from ..cache import Cache, _atomic_write, _read_manifest, _sha256, cached, load_committed, publish
from ..env import DATA_DIR, ROOT
from . import analysis as _analysis
from .analysis import AnalysisConfig
from .suite import INDEX_FILE, INDEX_FORMAT, LocalSuite, file_sha256

__all__ = ["analyze_suite", "COMMITTED_INDEX", "PAIR_DIR", "BUILD_ROOT", "REGENERATE", "committed_config", "load_analysis",
           "choose_pair", "export_pair", "register_files", "run_analysis_command"]

COMMITTED_INDEX = DATA_DIR / "lm" / "minisuite" / INDEX_FILE
PAIR_DIR = DATA_DIR / "lm" / "pair"
BUILD_ROOT = ROOT / "build" / "lm" / "minisuite"
REGENERATE = ("python -m lib.lm.minisuite build --scale full && "
              "python -m lib.lm.minisuite analyze --scale full --publish")

#: :func:`lib.lm.analysis.analyze_suite` through the results cache (``cache=False`` computes, a ``Cache`` chooses one).
analyze_suite = cached(_analysis.analyze_suite)


def committed_config(index: Path = COMMITTED_INDEX) -> AnalysisConfig:
    """The analysis config of the committed mini-suite (its digest is the committed index's sha256)."""
    if not Path(index).is_file():
        raise FileNotFoundError(f"{index}: the committed suite index is missing; regenerate with `{REGENERATE}`")
    return AnalysisConfig(suite_digest=file_sha256(Path(index)))


def load_analysis(config: AnalysisConfig | None = None, *, root: Path = BUILD_ROOT, cache: Cache | None = None):
    """The committed analysis (verified), or computed from the local suite at ``root`` if it is there.

    With the results cache turned off (``BOOK_CACHE=0``) the committed analysis is still read (and verified): it is
    committed data, and recomputing it needs the full suite, about an hour of training.
    """
    config = config or committed_config()
    cache = cache or Cache()
    hit, value = load_committed(analyze_suite, config, cache=cache)
    if hit:
        return value
    if (Path(root) / INDEX_FILE).is_file() and file_sha256(Path(root) / INDEX_FILE) == config.suite_digest:
        return analyze_suite(config, LocalSuite(root), cache=cache)
    raise RuntimeError(f"no committed analysis for this code and suite (stale after a change to lib/lm, or missing), "
                       f"and no suite at {root}; regenerate with `{REGENERATE}` (about 1 CPU-hour)")


def choose_pair(analysis) -> tuple[str, int, int, int]:
    """The checkpoint pair the chapter patches live (our rule, fixed before looking at the results): the largest
    size, its first seed with patched prompts, and the pair at which most of that run's prompts emerge (earliest on
    ties). Returns ``(size, seed, old step, new step)``."""
    size = analysis.sizes[-1]
    for seed in analysis.seeds:
        patch = analysis.patches.get(f"{size}/{seed}")
        if patch is not None:
            pairs, counts = np.unique(patch.pairs, axis=0, return_counts=True)
            old, new = pairs[int(np.argmax(counts))]
            return size, int(seed), int(old), int(new)
    raise ValueError(f"no run of size {size} has prompts that emerge after step 0")


def register_files(paths, command: str, function: str, data_dir: Path = DATA_DIR) -> None:
    """Add plain files under ``data_dir`` to its manifest (sha256, size, regenerating command, producing function)."""
    manifest = _read_manifest(data_dir)
    for path in paths:
        data = Path(path).read_bytes()
        rel = Path(path).resolve().relative_to(Path(data_dir).resolve()).as_posix()
        manifest["files"][rel] = {"sha256": _sha256(data), "size": len(data), "command": command, "function": function}
    manifest["files"] = dict(sorted(manifest["files"].items()))
    _atomic_write(Path(data_dir) / "manifest.json", (json.dumps(manifest, indent=2) + "\n").encode())


def export_pair(suite: LocalSuite, size: str, seed: int, old: int, new: int, out: Path = PAIR_DIR) -> list[Path]:
    """Copy two checkpoints and the tokenizer into ``out`` as a two-step local suite; return the files written."""
    shutil.rmtree(out, ignore_errors=True)
    name = suite.name(size, seed)
    files = {}
    for step in (old, new):
        src = suite.verify_checkpoint(size, seed, step)
        shutil.copytree(src, out / name / f"step{step}")
        files[f"step{step}"] = suite.files[name][f"step{step}"]
    shutil.copytree(suite.root / "tokenizer", out / "tokenizer")
    index = {"format": INDEX_FORMAT, "prefix": suite.prefix, "sizes": [size], "seeds": [seed], "steps": [old, new],
             "description": f"the checkpoint pair around the emergence of {name} (from {suite.description})",
             "size_info": {size: suite.size_info.get(size, {})}, "files": {name: files}, "meta": {}}
    (out / INDEX_FILE).write_text(json.dumps(index, indent=1))
    return sorted(p for p in out.rglob("*") if p.is_file())


def run_analysis_command(scale: str, root: Path, *, publish_results: bool = False) -> None:
    """``python -m lib.lm.minisuite analyze``: analyse the suite at ``root`` (cached); with ``--publish`` commit
    the analysis, the suite's index and the chapter's checkpoint pair to ``data/``."""
    suite = LocalSuite(root)
    config = AnalysisConfig(suite_digest=suite.digest)
    result = analyze_suite(config, suite)
    print(f"analysed {suite}: {len(result.patches)} runs with patched prompts")
    if not publish_results:
        return
    if scale != "full":
        raise ValueError("only the full mini-suite is published to data/")
    command = f"python -m lib.lm.minisuite build --scale {scale} && python -m lib.lm.minisuite analyze --scale {scale} --publish"
    COMMITTED_INDEX.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(Path(root) / INDEX_FILE, COMMITTED_INDEX)
    register_files([COMMITTED_INDEX], command, "lib.lm.minisuite.build_suite")
    path = publish(analyze_suite, config, command)
    size, seed, old, new = choose_pair(result)
    old_manifest = _read_manifest(DATA_DIR)
    stale = [k for k in old_manifest["files"] if k.startswith("lm/pair/")]
    for k in stale:
        del old_manifest["files"][k]
    _atomic_write(DATA_DIR / "manifest.json", (json.dumps(old_manifest, indent=2) + "\n").encode())
    files = export_pair(suite, size, seed, old, new)
    register_files(files, command, "lib.lm.results.export_pair")
    total = sum(p.stat().st_size for p in files) + path.stat().st_size + COMMITTED_INDEX.stat().st_size
    print(f"published {path.relative_to(ROOT)}, {COMMITTED_INDEX.relative_to(ROOT)} and the pair {size}/seed {seed} "
          f"steps {old}->{new} ({len(files)} files); {total / 1e6:.1f} MB in all")
