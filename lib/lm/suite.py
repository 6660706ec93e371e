"""Model suites: sizes × seeds × checkpoint steps, from the Hugging Face hub (PolyPythias) or a local folder.

Two sources, one interface (:class:`Suite`):

* ``hub``: ``EleutherAI/pythia-{size}`` (seed 0, the original run) and ``EleutherAI/pythia-{size}-seed{k}``
  (PolyPythias), revision ``step{N}``, loaded with ``transformers`` (GPT-NeoX). :func:`open_suite` first checks
  that the hub answers within a few seconds and otherwise raises :class:`HubUnreachable` (no long hang).
* ``local``: a folder with the same layout, one sub-folder per model and revision,
  ``<root>/<prefix>-{size}[-seed{k}]/step{N}/`` in ``save_pretrained`` format with its tokenizer, plus an index
  ``<root>/suite.json`` that lists sizes, seeds, steps and the sha256 of every file. A checkpoint is verified
  against the index before it is loaded, so a missing or corrupt one is reported by path and never half-loaded.

Unknown sizes, seeds or steps raise a ``ValueError`` that lists what the suite has.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "PYTHIA_SIZES", "PYTHIA_SEEDS", "pythia_steps", "model_name", "SuiteIndexError", "HubUnreachable", "Suite",
    "LocalSuite", "HubSuite", "open_suite", "hub_reachable", "file_sha256", "INDEX_FILE", "INDEX_FORMAT",
]

PYTHIA_SIZES = ("14m", "31m", "70m", "160m", "410m")
PYTHIA_SEEDS = tuple(range(10))
INDEX_FILE = "suite.json"
INDEX_FORMAT = "attnbook-lm-suite 1"
HUB_HOST = "huggingface.co"


def pythia_steps() -> tuple[int, ...]:
    """Pythia's 154 checkpoint steps: 0, 1, 2, 4, …, 512 (powers of two), then 1000, 2000, …, 143000."""
    return (0,) + tuple(2**i for i in range(10)) + tuple(range(1000, 143001, 1000))


def model_name(prefix: str, size: str, seed: int) -> str:
    """``{prefix}-{size}`` for seed 0 (the original run, as on the hub), ``{prefix}-{size}-seed{k}`` otherwise."""
    return f"{prefix}-{size}" if seed == 0 else f"{prefix}-{size}-seed{seed}"


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class SuiteIndexError(ValueError):
    """A local suite's index, folder or checkpoint is missing, malformed or corrupt (the message names the path)."""


class HubUnreachable(ConnectionError):
    """The Hugging Face hub did not answer in time (or the environment forbids it): use the local suite."""


def _quiet_transformers() -> None:
    """No per-load progress bars or info lines from transformers (chapters and logs stay readable)."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()


# ------------------------------------------------------------------------------------------------ base
class Suite:
    """Sizes × seeds × steps of one model family; subclasses load models and the tokenizer.

    Attributes
    ----------
    source : str
        ``"hub"`` or ``"local"`` (every figure and claim of chapter 5 says which).
    prefix : str
        Model-name prefix, e.g. ``"EleutherAI/pythia"`` or ``"mini"``.
    sizes, seeds, steps : tuple
        What the suite has (steps sorted increasingly).
    """

    source = "?"

    def __init__(self, prefix: str, sizes, seeds, steps, description: str = ""):
        self.prefix = prefix
        self.sizes = tuple(sizes)
        self.seeds = tuple(int(s) for s in seeds)
        self.steps = tuple(sorted(int(s) for s in steps))
        self.description = description

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.prefix!r}: sizes {list(self.sizes)}, seeds {list(self.seeds)}, "
                f"{len(self.steps)} steps {self.steps[0]}…{self.steps[-1]})")

    def check(self, size: str, seed: int, step: int | None = None) -> None:
        """Raise a ``ValueError`` naming the argument and listing what the suite has, if any is unknown."""
        if size not in self.sizes:
            raise ValueError(f"size {size!r} is not in the suite; it has sizes {list(self.sizes)}")
        if isinstance(seed, bool) or seed not in self.seeds:
            raise ValueError(f"seed {seed!r} is not in the suite; it has seeds {list(self.seeds)}")
        if step is not None and (isinstance(step, bool) or step not in self.steps):
            shown = list(self.steps) if len(self.steps) <= 40 else f"{list(self.steps[:12])} … {list(self.steps[-3:])}"
            raise ValueError(f"step (revision) {step!r} is not in the suite; it has {len(self.steps)} steps: {shown}")

    def name(self, size: str, seed: int) -> str:
        self.check(size, seed)
        return model_name(self.prefix, size, seed)

    def revision(self, step: int) -> str:
        return f"step{int(step)}"

    def load_model(self, size: str, seed: int, step: int, *, attn_implementation: str = "patchable", dtype=None):
        raise NotImplementedError

    def load_tokenizer(self):
        raise NotImplementedError


# ------------------------------------------------------------------------------------------------ local
class LocalSuite(Suite):
    """A suite on disk (written by :mod:`lib.lm.minisuite`), verified against its ``suite.json`` index.

    Parameters
    ----------
    root : path
        The suite folder (holding ``suite.json``).
    verify : bool
        Check at opening that every listed checkpoint folder exists (cheap); each load also checks sha256.
    """

    source = "local"

    def __init__(self, root: str | Path, *, verify: bool = True):
        self.root = Path(root)
        index_path = self.root / INDEX_FILE
        if not index_path.is_file():
            raise SuiteIndexError(f"{index_path}: no suite index here (build one with `python -m lib.lm.minisuite build`)")
        try:
            index = json.loads(index_path.read_text(encoding="utf-8"))
            if index.get("format") != INDEX_FORMAT:
                raise KeyError(f"format {index.get('format')!r}, expected {INDEX_FORMAT!r}")
            super().__init__(index["prefix"], index["sizes"], index["seeds"], index["steps"], index.get("description", ""))
            self.files: dict[str, dict[str, dict[str, str]]] = index["files"]
            self.size_info: dict[str, Any] = index.get("size_info", {})
            self.meta: dict[str, Any] = index.get("meta", {})
        except (KeyError, TypeError, json.JSONDecodeError) as err:
            raise SuiteIndexError(f"{index_path}: malformed suite index ({err})") from None
        self.digest = file_sha256(index_path)
        if verify:
            missing = [str(self.path(sz, sd, st)) for sz in self.sizes for sd in self.seeds for st in self.steps
                       if not self.path(sz, sd, st).is_dir()]
            if missing:
                raise SuiteIndexError(f"local suite {self.root}: {len(missing)} checkpoint folder(s) missing, e.g. {missing[:3]}")

    def path(self, size: str, seed: int, step: int) -> Path:
        """The checkpoint folder ``<root>/<name>/step{N}``."""
        self.check(size, seed, step)
        return self.root / self.name(size, seed) / self.revision(step)

    def verify_checkpoint(self, size: str, seed: int, step: int) -> Path:
        """Check every file of one checkpoint against the index; return its folder or raise :class:`SuiteIndexError`."""
        folder = self.path(size, seed, step)
        listed = self.files.get(self.name(size, seed), {}).get(self.revision(step))
        if not listed:
            raise SuiteIndexError(f"{folder}: not listed in {self.root / INDEX_FILE}")
        for fname, digest in listed.items():
            f = folder / fname
            if not f.is_file():
                raise SuiteIndexError(f"checkpoint {folder}: file {fname} is missing")
            if file_sha256(f) != digest:
                raise SuiteIndexError(f"checkpoint {folder}: file {fname} is corrupt (sha256 differs from the index)")
        return folder

    def load_model(self, size: str, seed: int, step: int, *, attn_implementation: str = "patchable", dtype=None):
        """The checkpoint as a ``GPTNeoXForCausalLM`` in eval mode (fp32 by default), after verification."""
        import torch
        from transformers import AutoModelForCausalLM

        from .patching import register_patchable

        folder = self.verify_checkpoint(size, seed, step)
        _quiet_transformers()
        if attn_implementation == "patchable":
            register_patchable()
        model = AutoModelForCausalLM.from_pretrained(folder, attn_implementation=attn_implementation,
                                                     dtype=dtype or torch.float32)
        return model.eval()

    def run_losses(self, size: str, seed: int) -> list[float] | None:
        """The run's training losses (from its ``run.json``, when the suite was trained here), else None."""
        path = self.root / self.name(size, seed) / "run.json"
        if not path.is_file():
            return None
        return json.loads(path.read_text()).get("losses")

    def load_tokenizer(self):
        from transformers import AutoTokenizer

        folder = self.root / "tokenizer"
        if not (folder / "tokenizer.json").is_file():
            raise SuiteIndexError(f"{folder}: the suite's tokenizer is missing")
        return AutoTokenizer.from_pretrained(folder)


# ------------------------------------------------------------------------------------------------ hub
def hub_reachable(timeout: float = 3.0, host: str = HUB_HOST) -> tuple[bool, str]:
    """``(True, "")`` if the hub's API answers a small HTTPS request within ``timeout`` seconds, else ``(False, why)``.

    The whole check (name resolution, connection, TLS, response) runs in a daemon thread that is abandoned after
    ``timeout`` seconds, so no network condition can make it hang longer.
    """
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return False, "HF_HUB_OFFLINE is set"
    import threading
    import urllib.request

    url = f"https://{host}/api/models/EleutherAI/pythia-14m"
    outcome: list = []

    def probe() -> None:
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp:
                outcome.append((resp.status == 200, f"HTTP {resp.status}"))
        except Exception as err:  # noqa: BLE001 - any failure means: not reachable
            outcome.append((False, f"{type(err).__name__}: {err}"))

    worker = threading.Thread(target=probe, daemon=True)
    worker.start()
    worker.join(timeout)
    if not outcome:
        return False, f"{url} did not answer within {timeout:g} s"
    ok, detail = outcome[0]
    return (True, "") if ok else (False, f"{url} did not answer ({detail})")


class HubSuite(Suite):
    """PolyPythias on the hub: ``EleutherAI/pythia-{size}[-seed{k}]`` at revision ``step{N}`` (downloads on demand)."""

    source = "hub"

    def __init__(self, sizes=PYTHIA_SIZES, seeds=PYTHIA_SEEDS, steps=None, *, timeout: float = 3.0):
        ok, why = hub_reachable(timeout)
        if not ok:
            raise HubUnreachable(f"the Hugging Face hub is unreachable: {why}. Use the local mini-suite instead.")
        unknown = [s for s in sizes if s not in PYTHIA_SIZES]
        if unknown:
            raise ValueError(f"sizes {unknown} are not PolyPythia sizes; it has {list(PYTHIA_SIZES)}")
        super().__init__("EleutherAI/pythia", sizes, seeds, steps or pythia_steps(), "PolyPythias (Pythia, 10 seeds)")
        self.digest = "hub:" + ",".join(sizes) + ":" + ",".join(map(str, self.seeds))

    def load_model(self, size: str, seed: int, step: int, *, attn_implementation: str = "patchable", dtype=None):
        import torch
        from transformers import AutoModelForCausalLM

        from .patching import register_patchable

        self.check(size, seed, step)
        _quiet_transformers()
        if attn_implementation == "patchable":
            register_patchable()
        model = AutoModelForCausalLM.from_pretrained(self.name(size, seed), revision=self.revision(step),
                                                     attn_implementation=attn_implementation, dtype=dtype or torch.float32)
        return model.eval()

    def load_tokenizer(self):
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(self.name(self.sizes[0], 0))


def open_suite(source: str = "auto", *, root: str | Path | None = None, timeout: float = 3.0, **hub_kwargs) -> Suite:
    """Open a suite: ``"hub"``, ``"local"`` (needs ``root``) or ``"auto"`` (the hub if it answers, else ``root``).

    Raises
    ------
    HubUnreachable
        ``source="hub"`` and the hub does not answer within ``timeout`` seconds.
    SuiteIndexError
        The local suite is missing or malformed (the message names the path).
    """
    if source not in ("auto", "hub", "local"):
        raise ValueError(f"source must be 'auto', 'hub' or 'local', got {source!r}")
    if source in ("auto", "hub"):
        try:
            return HubSuite(timeout=timeout, **hub_kwargs)
        except HubUnreachable:
            if source == "hub":
                raise
    if root is None:
        raise ValueError("root (the local suite's folder) is required when the hub is not used")
    return LocalSuite(root)
