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
from pathlib import Path
from typing import Any

__all__ = [
    "PYTHIA_SIZES",
    "PYTHIA_SEEDS",
    "pythia_steps",
    "model_name",
    "SuiteIndexError",
    "HubUnreachable",
    "Suite",
    "LocalSuite",
    "HubSuite",
    "open_suite",
    "hub_reachable",
    "hub_offline",
    "hub_cache_dir",
    "check_transformers",
    "file_sha256",
    "INDEX_FILE",
    "INDEX_FORMAT",
    "PYTHIA_PREFIX",
    "TRANSFORMERS_PIN",
]

PYTHIA_PREFIX = "EleutherAI/pythia"
#: The transformers release chapter 5 is tested with (``requirements.txt`` pins the same; a test checks).
TRANSFORMERS_PIN = "5.24.0"
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
        return (
            f"{type(self).__name__}({self.prefix!r}: sizes {list(self.sizes)}, seeds {list(self.seeds)}, "
            f"{len(self.steps)} steps {self.steps[0]}…{self.steps[-1]})"
        )

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

    def release(self, size: str, seed: int, step: int) -> bool:
        """Free a checkpoint after use; True if something was deleted (only :class:`HubSuite` with ``evict``)."""
        self.check(size, seed, step)
        return False


# ------------------------------------------------------------------------------------------------ local
class LocalSuite(Suite):
    """A suite on disk (written by :mod:`lib.lm.minisuite`), verified against its ``suite.json`` index.

    Parameters
    ----------
    root : path
        The suite folder (holding ``suite.json``).
    verify : bool
        Check at opening that every listed checkpoint folder exists (cheap); each load also checks sha256.
    device : str or torch.device, optional
        Where :meth:`load_model` puts each model (e.g. the chapter's ``ctx.device``).
    """

    source = "local"

    def __init__(self, root: str | Path, *, verify: bool = True, device=None):
        self.root = Path(root)
        self.device = device
        index_path = self.root / INDEX_FILE
        if not index_path.is_file():
            raise SuiteIndexError(
                f"{index_path}: no suite index here (build one with `python -m lib.lm.minisuite build`)"
            )
        try:
            index = json.loads(index_path.read_text(encoding="utf-8"))
            if index.get("format") != INDEX_FORMAT:
                raise KeyError(f"format {index.get('format')!r}, expected {INDEX_FORMAT!r}")
            super().__init__(
                index["prefix"], index["sizes"], index["seeds"], index["steps"], index.get("description", "")
            )
            self.files: dict[str, dict[str, dict[str, str]]] = index["files"]
            self.size_info: dict[str, Any] = index.get("size_info", {})
            self.meta: dict[str, Any] = index.get("meta", {})
        except (KeyError, TypeError, json.JSONDecodeError) as err:
            raise SuiteIndexError(f"{index_path}: malformed suite index ({err})") from None
        self.digest = file_sha256(index_path)
        if verify:
            missing = [
                str(self.path(sz, sd, st))
                for sz, sd in self.built
                for st in self.steps
                if not self.path(sz, sd, st).is_dir()
            ]
            if missing:
                raise SuiteIndexError(
                    f"local suite {self.root}: {len(missing)} checkpoint folder(s) missing, e.g. {missing[:3]}"
                )

    @property
    def built(self) -> list[tuple[str, int]]:
        """The ``(size, seed)`` runs the index lists, seeds outermost: all of them for a complete suite, the finished
        ones for a suite built in shards (``meta["complete"]`` is then False)."""
        return [(sz, sd) for sd in self.seeds for sz in self.sizes if self.name(sz, sd) in self.files]

    @property
    def complete(self) -> bool:
        """Whether every (size, seed) of the suite is built."""
        return len(self.built) == len(self.sizes) * len(self.seeds)

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
        model = AutoModelForCausalLM.from_pretrained(
            folder, attn_implementation=attn_implementation, dtype=dtype or torch.float32
        )
        return (model.to(self.device) if self.device is not None else model).eval()

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
    if hub_offline():
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


def hub_offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` asks huggingface_hub to use its cache only."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def hub_cache_dir() -> Path:
    """The hub cache huggingface_hub reads (``HF_HUB_CACHE``, else ``HF_HOME/hub``, else ``~/.cache/huggingface/hub``),
    from the environment at call time (huggingface_hub's own constant is fixed when it is first imported)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "huggingface")
    return Path(home).expanduser() / "hub"


def check_transformers(version: str | None = None) -> str:
    """The installed transformers version, or a ``RuntimeError`` saying how to install the pinned one.

    The patchable attention relies on transformers 5's ``AttentionInterface`` and ``masking_utils``: another major
    version fails with a message naming the pin; another 5.x release is accepted.
    """
    if version is None:
        import transformers

        version = transformers.__version__
    if version.split(".")[0] != TRANSFORMERS_PIN.split(".")[0]:
        raise RuntimeError(
            f"transformers {version} is installed; chapter 5 needs transformers 5 (tested: "
            f"{TRANSFORMERS_PIN}): pip install transformers=={TRANSFORMERS_PIN}"
        )
    return version


class HubSuite(Suite):
    """A suite on the hub: ``<prefix>-{size}[-seed{k}]`` at revision ``step{N}`` (PolyPythias by default).

    Online, the hub must answer a small request within ``timeout`` seconds (else :class:`HubUnreachable`). With
    ``HF_HUB_OFFLINE=1`` the suite is read from the hub cache (:func:`hub_cache_dir`) through the same
    ``from_pretrained(repo_id, revision=...)`` calls; its first and last checkpoints must be in the cache. A cache
    written by :mod:`lib.lm.hubcache` is such a cache; :meth:`discover` reads a suite's sizes, seeds and steps from it.

    Parameters
    ----------
    sizes, seeds, steps
        The selection (PolyPythia sizes must be Pythia's; ``steps`` default: Pythia's 154).
    prefix : str
        ``<org>/<family>``, e.g. ``"EleutherAI/pythia"``.
    device : str or torch.device, optional
        Where :meth:`load_model` puts each model (e.g. the chapter's ``ctx.device``).
    evict : bool
        :meth:`release` deletes a checkpoint's files from the cache after use (a Colab disk holds few 410m
        checkpoints); off by default, and never for an offline cache.
    """

    source = "hub"

    def __init__(
        self,
        sizes=PYTHIA_SIZES,
        seeds=PYTHIA_SEEDS,
        steps=None,
        *,
        prefix: str = PYTHIA_PREFIX,
        timeout: float = 3.0,
        device=None,
        evict: bool = False,
    ):
        check_transformers()
        if prefix.count("/") != 1:
            raise ValueError(f"prefix must be '<org>/<family>', got {prefix!r}")
        if prefix == PYTHIA_PREFIX:
            unknown = [s for s in sizes if s not in PYTHIA_SIZES]
            if unknown:
                raise ValueError(f"sizes {unknown} are not PolyPythia sizes; it has {list(PYTHIA_SIZES)}")
        self.offline = hub_offline()
        super().__init__(
            prefix,
            sizes,
            seeds,
            steps or pythia_steps(),
            "PolyPythias (Pythia, 10 seeds)" if prefix == PYTHIA_PREFIX else f"{prefix} on the hub",
        )
        if self.offline:
            gaps = [
                f"{self.name(sz, sd)}@{self.revision(st)}"
                for sz in self.sizes
                for sd in self.seeds
                for st in (self.steps[0], self.steps[-1])
                if not self.cached(sz, sd, st)
            ]
            if gaps:
                raise HubUnreachable(
                    f"HF_HUB_OFFLINE is set and the hub cache {hub_cache_dir()} lacks {len(gaps)} "
                    f"checkpoint(s), e.g. {gaps[:3]}. Use the local mini-suite instead."
                )
        else:
            ok, why = hub_reachable(timeout)
            if not ok:
                raise HubUnreachable(f"the Hugging Face hub is unreachable: {why}. Use the local mini-suite instead.")
        self.device = device
        self.evict = bool(evict) and not self.offline
        steps_id = hashlib.sha256(",".join(map(str, self.steps)).encode()).hexdigest()[:12]
        self.digest = f"hub:{prefix}:" + ",".join(self.sizes) + ":" + ",".join(map(str, self.seeds)) + f":{steps_id}"

    @classmethod
    def discover(cls, prefix: str, *, sizes=None, seeds=None, **kwargs) -> "HubSuite":
        """The suite ``prefix`` as the hub cache holds it (offline): sizes, seeds and the steps every model has.

        Repositories ``<prefix>-<size>`` (seed 0) and ``<prefix>-<size>-seed<k>`` are found by their cache folders,
        steps by their ``refs/step<N>``; ``sizes``/``seeds`` restrict the selection.
        """
        org, family = prefix.split("/") if prefix.count("/") == 1 else (None, None)
        if org is None:
            raise ValueError(f"prefix must be '<org>/<family>', got {prefix!r}")
        head = f"models--{org}--{family}-"
        found: dict[tuple[str, int], set[int]] = {}
        for folder in sorted(hub_cache_dir().glob(head + "*")):
            rest = folder.name[len(head) :]
            size, _, seed = rest.partition("-seed")
            if not size or (seed and not seed.isdigit()):
                continue
            refs = folder / "refs"
            steps = {int(r.name[4:]) for r in refs.glob("step*") if r.name[4:].isdigit()} if refs.is_dir() else set()
            found[(size, int(seed) if seed else 0)] = steps
        if not found:
            raise HubUnreachable(f"no repositories {org}/{family}-* in the hub cache {hub_cache_dir()}")
        all_sizes = sorted({k[0] for k in found}, key=lambda s: (len(s), s))
        all_seeds = sorted({k[1] for k in found})
        sizes = tuple(sizes or all_sizes)
        seeds = tuple(all_seeds if seeds is None else seeds)
        missing = [f"{sz}/seed {sd}" for sz in sizes for sd in seeds if (sz, sd) not in found]
        if missing:
            raise ValueError(f"the hub cache has no {missing}; it has sizes {all_sizes}, seeds {all_seeds}")
        steps = set.intersection(*(found[(sz, sd)] for sz in sizes for sd in seeds))
        if not steps:
            raise ValueError(f"the models of {prefix} in the hub cache share no step revision")
        return cls(sizes, seeds, sorted(steps), prefix=prefix, **kwargs)

    def cached(self, size: str, seed: int, step: int) -> bool:
        """Whether the cache holds this checkpoint's ``config.json`` (checked without network)."""
        from huggingface_hub import try_to_load_from_cache

        path = try_to_load_from_cache(
            self.name(size, seed), "config.json", revision=self.revision(step), cache_dir=hub_cache_dir()
        )
        return isinstance(path, str)

    def load_model(self, size: str, seed: int, step: int, *, attn_implementation: str = "patchable", dtype=None):
        """``from_pretrained(<prefix>-<size>[-seed<k>], revision="step<N>")`` in eval mode, on :attr:`device`."""
        import torch
        from transformers import AutoModelForCausalLM

        from .patching import register_patchable

        self.check(size, seed, step)
        _quiet_transformers()
        if attn_implementation == "patchable":
            register_patchable()
        model = AutoModelForCausalLM.from_pretrained(
            self.name(size, seed),
            revision=self.revision(step),
            cache_dir=hub_cache_dir(),
            attn_implementation=attn_implementation,
            dtype=dtype or torch.float32,
        )
        return (model.to(self.device) if self.device is not None else model).eval()

    def release(self, size: str, seed: int, step: int) -> bool:
        """After use: delete this checkpoint's revision from the cache when :attr:`evict` is on; True if deleted."""
        self.check(size, seed, step)
        if not self.evict:
            return False
        from huggingface_hub import scan_cache_dir

        info = scan_cache_dir(hub_cache_dir())
        commits = [
            rev.commit_hash
            for repo in info.repos
            if repo.repo_id == self.name(size, seed)
            for rev in repo.revisions
            if self.revision(step) in rev.refs
        ]
        if commits:
            info.delete_revisions(*commits).execute()
        return bool(commits)

    def load_tokenizer(self):
        """The tokenizer of the first size's original run (``<prefix>-<size>``, seed 0, at the last step): one
        tokenizer for the whole family, so it loads whether or not seed 0 is among the selected seeds."""
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(
            model_name(self.prefix, self.sizes[0], 0), revision=self.revision(self.steps[-1]), cache_dir=hub_cache_dir()
        )


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
