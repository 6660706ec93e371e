"""The per-run analysis through the results cache: :func:`study_run` (one run, keyed by :class:`lib.lm.study.RunKey`)
and :func:`study_suite` (every built run of a suite, one cache entry each); publishing run by run
(:func:`publish_runs`) and reading what is published (:func:`committed_runs`).

One entry per run is what lets the hub analysis resume after a disconnect (a Colab session loses its kernel, not its
cache folder) and a suite built over several sessions be analysed, and published, run by run: ``data/`` holds

* ``data/lm/bpesuite/suite.json``: the suite's index restricted to the published runs (sizes, seeds, steps, the
  sha256 of every checkpoint file, CPU seconds per run), from which :func:`lib.lm.study.run_key` gives each run's
  key without the checkpoints;
* ``data/cache/analyze_run/<key>.pkl``: one :class:`lib.lm.study.RunResult` per published run.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.cache import Cache, _atomic_write, cached, load_committed, publish
from ..core.env import DATA_DIR
from ..core.progress import progress
from . import study as _study
from .study import RunKey, RunResult, StudyConfig, run_key
from .suite import INDEX_FILE, LocalSuite

__all__ = [
    "study_run",
    "study_suite",
    "publish_runs",
    "committed_runs",
    "open_study",
    "study_source",
    "export_study_pair",
    "pair_run",
    "live_patch",
    "LivePatch",
    "BPE_DATA",
    "BPE_PAIR",
    "BPE_REGENERATE",
    "COLAB_SELECTION",
]

#: Where the BPE suite's published index lives (its runs' results are in ``data/cache/``).
BPE_DATA = DATA_DIR / "lm" / "bpesuite"
#: The checkpoint pair of one run around its emergence (fp16, as a two-step local suite), patched live in chapter 5.
BPE_PAIR = DATA_DIR / "lm" / "bpepair"
#: The default PolyPythia selection on the hub (a Colab GPU session): the three smallest sizes, ten seeds each,
#: analysed by bisection (about 25 checkpoints a run; every checkpoint but a run's first and last is deleted from the
#: cache after use, so the disk holds at most about 60 of at most 166 MB, about 10 GB).
COLAB_SELECTION = {"sizes": ("14m", "31m", "70m"), "seeds": tuple(range(10))}
#: The commands that build the BPE suite's runs and publish their analysis (resumable, shardable).
BPE_REGENERATE = (
    "python -m lib.lm.minisuite build --scale bpe [--sizes ...] [--seeds ...] && "
    "python -m lib.lm.minisuite analyze --scale bpe --publish"
)

#: :func:`lib.lm.study.analyze_run` through the results cache (``cache=False`` computes, a ``Cache`` chooses one).
study_run = cached(_study.analyze_run)


def _runs(suite, sizes, seeds) -> list[tuple[str, int]]:
    sizes = tuple(sizes or suite.sizes)
    seeds = tuple(suite.seeds if seeds is None else seeds)
    runs = [(sz, sd) for sd in seeds for sz in sizes]
    for sz, sd in runs:
        suite.check(sz, sd)
    built = set(getattr(suite, "built", runs))
    return [r for r in runs if r in built]


def study_suite(
    study: StudyConfig, suite, *, cache: Cache | bool | None = None, sizes=None, seeds=None
) -> list[RunResult]:
    """Every run (``sizes`` × ``seeds``, default the suite's; of a local suite built in shards only its finished
    runs) of ``suite`` analysed with ``study``, each through the cache, seeds outermost (so a partial pass has every
    size of its first seeds). Returns the results in that order."""
    keys: list[RunKey] = [run_key(study, suite, sz, sd) for sz, sd in _runs(suite, sizes, seeds)]
    return [study_run(key, suite, cache=cache) for key in progress(keys, desc=f"study {suite.prefix}")]


def publish_runs(
    study: StudyConfig,
    suite: LocalSuite,
    command: str,
    *,
    sizes=None,
    seeds=None,
    data_dir: Path = DATA_DIR,
    out: Path | None = None,
    cache: Cache | None = None,
) -> list[Path]:
    """Analyse (through the cache) and publish every finished run of the local ``suite`` (restricted to ``sizes`` ×
    ``seeds``), then write the committed index ``out/suite.json``: the suite's index with the runs published so far
    (earlier sessions' and this one's). Returns the published result files."""
    if not isinstance(suite, LocalSuite):
        raise ValueError(f"only a local suite is published, got {type(suite).__name__}")
    out = Path(out or Path(data_dir) / "lm" / f"{suite.prefix}suite")
    index = json.loads((suite.root / INDEX_FILE).read_text(encoding="utf-8"))
    old = json.loads((out / INDEX_FILE).read_text(encoding="utf-8")) if (out / INDEX_FILE).is_file() else None
    if old is not None and old.get("meta", {}).get("config_key") != index.get("meta", {}).get("config_key"):
        raise ValueError(f"{out / INDEX_FILE} belongs to another build of the suite (config key differs)")
    published = set(old["files"]) if old else set()
    paths = []
    for size, seed in _runs(suite, sizes, seeds):
        key = run_key(study, suite, size, seed)
        study_run(key, suite, cache=cache)
        paths.append(publish(study_run, key, command, cache=cache, data_dir=data_dir))
        published.add(key.name)
    meta = index.get("meta", {})
    index["files"] = {n: f for n, f in index["files"].items() if n in published}
    index["meta"] = {
        **{k: v for k, v in meta.items() if not isinstance(v, dict)},
        **{k: {n: x for n, x in v.items() if n in published} for k, v in meta.items() if isinstance(v, dict)},
        "complete": len(published) == len(index["sizes"]) * len(index["seeds"]),
    }
    out.mkdir(parents=True, exist_ok=True)
    _atomic_write(out / INDEX_FILE, (json.dumps(index, indent=1) + "\n").encode())
    shutil.copytree(suite.root / "tokenizer", out / "tokenizer", dirs_exist_ok=True)
    from ..core.cache import register_files

    register_files(
        [out / INDEX_FILE, *sorted((out / "tokenizer").iterdir())],
        command,
        "lib.lm.study_results.publish_runs",
        data_dir=Path(data_dir),
    )
    return paths


def committed_runs(
    study: StudyConfig | None = None, *, root: Path = BPE_DATA, cache: Cache | None = None
) -> tuple[LocalSuite, list[RunResult]]:
    """The published suite index (opened without its checkpoints) and the committed result of each of its runs,
    seeds outermost. A missing result raises ``FileNotFoundError`` naming the command that regenerates it."""
    study = study or StudyConfig()
    suite = LocalSuite(root, verify=False)
    results = []
    for size, seed in suite.built:
        key = run_key(study, suite, size, seed)
        hit, value = load_committed(study_run, key, cache=cache)
        if not hit:
            raise FileNotFoundError(
                f"no committed analysis of {key.name} for this study config and code; "
                f"regenerate with `{BPE_REGENERATE}`"
            )
        results.append(value)
    return suite, results


def study_source(fast: bool, *, timeout: float = 5.0) -> tuple[str | None, str]:
    """Which suite chapter 5 reads: ``(hub prefix or None, why)``. ``BOOK_LM_HUB=<org>/<family>`` chooses a hub
    suite (with ``HF_HUB_OFFLINE=1``: from the hub cache); otherwise, at paper scale, the PolyPythias when the hub
    answers within ``timeout`` seconds; otherwise (and always at FAST scale) the committed BPE mini-suite."""
    import os

    from .suite import PYTHIA_PREFIX, hub_reachable

    hub = os.environ.get("BOOK_LM_HUB", "").strip()
    if hub:
        if hub.count("/") != 1:
            raise ValueError(f"BOOK_LM_HUB must be '<org>/<family>' (e.g. EleutherAI/pythia), got {hub!r}")
        return hub, "BOOK_LM_HUB is set"
    if fast:
        return None, "FAST scale"
    ok, why = hub_reachable(timeout)
    return (PYTHIA_PREFIX, "paper scale, the hub answered") if ok else (None, f"paper scale, hub unreachable ({why})")


def open_study(hub: str | None = None, *, device=None, cache: Cache | None = None):
    """The runs chapter 5 reads: ``(table, suite, why)``.

    ``hub=None``: the BPE mini-suite's committed per-run results (no checkpoint needed). ``hub="<org>/<family>"``
    (the chapter's ``BOOK_LM_HUB``): that suite through ``from_pretrained(repo, revision="step<N>")``, analysed by
    bisection with one cache entry per run (a disconnect resumes); with ``HF_HUB_OFFLINE=1`` every run the hub cache
    holds (:meth:`lib.lm.suite.HubSuite.discover`, e.g. a cache written by :mod:`lib.lm.hubcache`), online
    :data:`COLAB_SELECTION` with checkpoints evicted after use.
    """
    from .study_report import study_table
    from .suite import HubSuite, hub_offline

    if hub is None:
        suite, results = committed_runs(cache=cache)
        return study_table(results, suite, min_runs=3), suite, "the BPE mini-suite's committed analysis"
    if hub_offline():
        suite = HubSuite.discover(hub, device=device)
        why = f"{hub} from the hub cache, offline ({len(suite.sizes)} sizes x {len(suite.seeds)} seeds)"
    else:
        suite = HubSuite(**COLAB_SELECTION, prefix=hub, device=device, evict=True)
        why = f"{hub} from the hub ({len(suite.sizes)} sizes x {len(suite.seeds)} seeds, by bisection)"
    results = study_suite(StudyConfig(mode="bisect"), suite, cache=cache)
    return study_table(results, suite, min_runs=min(3, len(suite.seeds))), suite, why


def pair_run(table, task: str = "rep"):
    """The run whose checkpoint pair chapter 5 patches live (rule fixed before the data: the largest size's lowest
    seed with a patch of ``task``), or None."""
    for size in reversed(table.sizes):
        for seed in table.present(size):
            r = table.runs[(size, seed)]
            if r.patches.get(task) is not None:
                return r
    return None


def export_study_pair(
    suite: LocalSuite, table, command: str, *, task: str = "rep", out: Path = BPE_PAIR, data_dir: Path = DATA_DIR
) -> list[Path]:
    """Copy :func:`pair_run`'s two checkpoints into ``out`` as a two-step local suite and list them in the manifest."""
    from ..core.cache import _read_manifest, register_files
    from .results import export_pair

    r = pair_run(table, task)
    if r is None:
        raise ValueError(f"no run of the table has a {task} patch")
    old, new = r.patches[task].pair
    manifest = _read_manifest(Path(data_dir))
    rel = Path(out).resolve().relative_to(Path(data_dir).resolve()).as_posix() + "/"
    manifest["files"] = {k: v for k, v in manifest["files"].items() if not k.startswith(rel)}
    _atomic_write(Path(data_dir) / "manifest.json", (json.dumps(manifest, indent=2) + "\n").encode())
    files = export_pair(suite, r.key.size, r.key.seed, old, new, out)
    register_files(files, command, "lib.lm.study_results.export_study_pair", data_dir=Path(data_dir))
    return files


@dataclass
class LivePatch:
    """Patching recomputed from a run's two checkpoints: ``p_old``, ``p_new (P,)``, ``p_head (L, H, P)``, ``p_topk
    (len(ks), P)`` with the run's committed head order, and the two checkpoints' patterns ``(L, P, H, T, T)``."""

    p_old: np.ndarray
    p_new: np.ndarray
    p_head: np.ndarray
    p_topk: np.ndarray
    pat_old: object
    pat_new: object
    input_ids: np.ndarray


def live_patch(pair_suite, result, task: str = "rep") -> LivePatch:
    """Recompute ``result``'s patching of ``task`` from the checkpoints in ``pair_suite`` (the same prompts, heads
    and order): what the committed analysis did, done again in the reader's kernel."""
    import torch

    from .patching import all_single_head_logits, patched_last_logits, record_patterns, target_probs, topk_masks
    from .tasks import build_prompts

    pt = result.patches.get(task)
    if pt is None:
        raise ValueError(f"{result.key.name} has no {task} patch")
    study = result.key.study
    pset = build_prompts(task, pair_suite.load_tokenizer(), study.n_prompts, study.prompt_seed)
    if list(pset.prompts) != list(result.prompts[task][0]):
        raise ValueError("the pair's tokenizer builds other prompts than the committed analysis")
    old = pair_suite.load_model(result.key.size, result.key.seed, pt.pair[0])
    new = pair_suite.load_model(result.key.size, result.key.seed, pt.pair[1])
    ids = torch.as_tensor(pset.input_ids, device=next(old.parameters()).device)
    lo, pat_old = record_patterns(old, ids)
    ln, pat_new = record_patterns(new, ids)  # (L, P, H, T, T)
    L, P, H = pat_new.shape[:3]
    tgt = pset.target_ids
    p_head = target_probs(all_single_head_logits(old, ids, pat_new).cpu(), tgt).reshape(L, H, P)
    p_topk = target_probs(patched_last_logits(old, ids, pat_new, topk_masks(pt.order, L, H, pt.ks)).cpu(), tgt)
    return LivePatch(
        target_probs(lo.cpu(), tgt),
        target_probs(ln.cpu(), tgt),
        p_head,
        p_topk,
        pat_old.cpu(),
        pat_new.cpu(),
        pset.input_ids,
    )
