"""Model suites: sizes × seeds × checkpoint steps, from the Hugging Face hub (PolyPythias) or a local folder.

Two sources, one interface (:class:`Suite`):

* ``hub``: ``EleutherAI/pythia-{size}`` (seed 0, the original run) and ``EleutherAI/pythia-{size}-seed{k}``
  (PolyPythias), revision ``step{N}``, loaded with ``transformers`` (GPT-NeoX). :func:`open_suite` first checks
  that the hub answers within a few seconds and otherwise raises :class:`HubUnreachable` (no long hang).
* ``local``: a folder with the same layout, one sub-folder per model and revision,
  ``<root>/<prefix>-{size}[-seed{k}]/step{N}/`` in ``save_pretrained`` format with its tokenizer, plus an index
  ``<root>/suite.json`` that lists sizes, seeds, steps and the sha256 of every file. A checkpoint is verified
  against the index before it is loaded, so a missing or corrupt one is reported by path and never half-loaded.

Unknown sizes, seeds or steps raise a ``ValueError`` that lists what the suite has. Every load error names
``repo@revision`` and the file: a revision missing from the hub cache, a file missing from a snapshot, a blob whose
content does not match the hash the cache names it by (:func:`verify_snapshot`), a missing ``tokenizer.json`` (which
transformers would otherwise load as an empty tokenizer) and a tokenizer that does not fit the model's embedding
(:func:`check_vocab`) raise :class:`CheckpointError`; steps dropped on purpose (:meth:`HubSuite.discover`) are named
in a :class:`SuiteWarning`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import warnings
from pathlib import Path
from typing import Any

__all__ = [
    "PYTHIA_SIZES",
    "PYTHIA_SEEDS",
    "pythia_steps",
    "model_name",
    "SuiteIndexError",
    "CheckpointError",
    "SuiteWarning",
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
    "git_blob_sha1",
    "cached_snapshot",
    "verify_snapshot",
    "check_vocab",
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


def git_blob_sha1(path: Path) -> str:
    """Git's object id of a file (``sha1("blob <size>\\0" + content)``): the name the hub cache gives a blob of a file
    that is not stored with LFS (LFS blobs are named by the content's sha256)."""
    h = hashlib.sha1()
    h.update(b"blob %d\0" % Path(path).stat().st_size)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class SuiteIndexError(ValueError):
    """A local suite's index, folder or checkpoint is missing, malformed or corrupt (the message names the path)."""


class CheckpointError(ValueError):
    """A checkpoint or tokenizer that cannot be used: its revision or a file is missing, a file is corrupt, or the
    tokenizer does not fit the model (the message names ``repo@revision`` and the file)."""


class SuiteWarning(UserWarning):
    """Part of a suite was left out on purpose (e.g. steps that not every run has); the message says what."""


class HubUnreachable(ConnectionError):
    """The Hugging Face hub did not answer in time (or the environment forbids it): use the local suite."""


def _quiet_transformers() -> None:
    """No per-load progress bars or info lines from transformers (chapters and logs stay readable)."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()


def check_vocab(n_tokens: int, rows: int, tokenizer_at: str, model_at: str) -> None:
    """Refuse a tokenizer that does not fit a model whose embedding has ``rows`` rows (``vocab_size``).

    More tokens than rows: token ids ``≥ rows`` would index past the embedding. Fewer than half the rows: no
    model is padded that much, so the tokenizer is empty or damaged (transformers loads a tokenizer without its
    ``tokenizer.json`` as one of 2 tokens) or another model's. Models may pad their embedding (Pythia: 50,277
    tokens, 50,304 rows), so anything in between is accepted.

    Raises
    ------
    CheckpointError
        Naming the tokenizer's and the model's ``repo@revision`` (or folder) and both sizes.
    """
    if n_tokens > rows:
        raise CheckpointError(
            f"the tokenizer of {tokenizer_at} has {n_tokens} tokens but {model_at} has {rows} embedding rows "
            f"(config.json vocab_size): token ids {rows}…{n_tokens - 1} have no embedding, so this tokenizer is not "
            "the model's"
        )
    if 2 * n_tokens < rows:
        raise CheckpointError(
            f"the tokenizer of {tokenizer_at} has only {n_tokens} tokens for the {rows} embedding rows of {model_at} "
            "(config.json vocab_size): an empty or damaged tokenizer.json, or another model's tokenizer"
        )


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}"


def _load_error(where: str, what: str, err: Exception) -> Exception:
    """``err`` (raised while loading ``what`` of ``where`` = ``repo@revision``) as an error naming both."""
    if isinstance(err, (ConnectionError, TimeoutError)):
        return HubUnreachable(f"{where}: the hub did not deliver {what} ({_first_line(err)})")
    return CheckpointError(f"{where}: cannot load {what} ({_first_line(err)})")


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
        self._tokenizer: tuple[int, str] | None = None  # (tokens, where) of the last tokenizer loaded

    def _check_rows(self, model, where: str) -> None:
        """Refuse a loaded model whose embedding is smaller than the suite's tokenizer (when one was loaded)."""
        loaded = getattr(self, "_tokenizer", None)
        if loaded is not None:
            check_vocab(loaded[0], model.get_input_embeddings().num_embeddings, loaded[1], where)

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
        where = f"{self.name(size, seed)}@{self.revision(step)}"
        listed = self.files.get(self.name(size, seed), {}).get(self.revision(step))
        if not listed:
            raise SuiteIndexError(f"{where}: checkpoint {folder}: not listed in {self.root / INDEX_FILE}")
        for fname, digest in listed.items():
            f = folder / fname
            if not f.is_file():
                raise SuiteIndexError(f"{where}: checkpoint {folder}: file {fname} is missing")
            if file_sha256(f) != digest:
                raise SuiteIndexError(
                    f"{where}: checkpoint {folder}: file {fname} is corrupt (sha256 differs from the index "
                    f"{self.root / INDEX_FILE})"
                )
        return folder

    def load_model(self, size: str, seed: int, step: int, *, attn_implementation: str = "patchable", dtype=None):
        """The checkpoint as a ``GPTNeoXForCausalLM`` in eval mode (fp32 by default), after verification."""
        import torch
        from transformers import AutoModelForCausalLM

        from .patching import register_patchable

        folder = self.verify_checkpoint(size, seed, step)
        where = f"{self.name(size, seed)}@{self.revision(step)} ({folder})"
        _quiet_transformers()
        if attn_implementation == "patchable":
            register_patchable()
        try:
            model = AutoModelForCausalLM.from_pretrained(
                folder, attn_implementation=attn_implementation, dtype=dtype or torch.float32
            )
        except Exception as err:  # re-raised naming the checkpoint
            if isinstance(err, MemoryError):
                raise
            raise _load_error(where, "the model", err) from err
        self._check_rows(model, where)
        return (model.to(self.device) if self.device is not None else model).eval()

    def run_losses(self, size: str, seed: int) -> list[float] | None:
        """The run's training losses (from its ``run.json``, when the suite was trained here), else None."""
        path = self.root / self.name(size, seed) / "run.json"
        if not path.is_file():
            return None
        return json.loads(path.read_text()).get("losses")

    def load_tokenizer(self):
        """The suite's tokenizer (``<root>/tokenizer``), checked to fit the embedding of every built size."""
        from transformers import AutoTokenizer

        folder = self.root / "tokenizer"
        if not (folder / "tokenizer.json").is_file():
            raise SuiteIndexError(f"{folder}: the suite's tokenizer is missing (no file tokenizer.json)")
        try:
            tok = AutoTokenizer.from_pretrained(folder)
        except Exception as err:  # re-raised naming the folder
            raise _load_error(f"{self.prefix} ({folder})", "the tokenizer", err) from err
        where = f"{self.prefix} ({folder / 'tokenizer.json'})"
        seen = set()
        for size, seed in self.built:
            config = self.path(size, seed, self.steps[-1]) / "config.json"
            if size in seen or not config.is_file():
                continue
            seen.add(size)
            rows = json.loads(config.read_text(encoding="utf-8")).get("vocab_size")
            if isinstance(rows, int):
                check_vocab(len(tok), rows, where, f"{self.name(size, seed)}@{self.revision(self.steps[-1])}")
        self._tokenizer = (len(tok), where)
        return tok


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


_COMMIT = re.compile(r"[0-9a-f]{40}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
#: Blobs already checked against their names: (path, size, mtime_ns), so a checkpoint loaded twice is hashed once.
_VERIFIED: set[tuple[str, int, int]] = set()


def cached_snapshot(repo_id: str, revision: str, cache_dir: str | Path | None = None) -> Path | None:
    """The snapshot folder of ``repo_id@revision`` in the hub cache (``refs/<revision>`` → ``snapshots/<commit>``),
    or None when the cache does not hold that revision; ``cache_dir`` defaults to :func:`hub_cache_dir`."""
    repo = Path(cache_dir or hub_cache_dir()) / ("models--" + repo_id.replace("/", "--"))
    if _COMMIT.fullmatch(revision):
        commit = revision
    else:
        ref = repo / "refs" / revision
        if not ref.is_file():
            return None
        commit = ref.read_text(encoding="utf-8").strip()
    snap = repo / "snapshots" / commit
    return snap if snap.is_dir() else None


def verify_snapshot(repo_id: str, revision: str, snapshot: Path, names) -> None:
    """Check the files ``names`` of a hub-cache snapshot against the hashes their blobs are named by.

    huggingface_hub stores each file once, as ``blobs/<name>`` with a relative link from the snapshot: an LFS file
    (weights) is named by the sha256 of its content, any other file by its git object id (:func:`git_blob_sha1`).
    A file that is not such a link (a copied cache) has no hash to check and is skipped; so is a file not in the
    snapshot (loading reports it). A blob that passed is not hashed again while its size and mtime stay the same.

    Raises
    ------
    CheckpointError
        A link that points to no blob, or a blob whose content does not match its name, naming
        ``repo_id@revision``, the file and the blob, and how to have it downloaded again.
    """
    where = f"{repo_id}@{revision}"
    for name in names:
        link = Path(snapshot) / name
        if not link.is_symlink():
            continue
        blob = link.resolve()
        if not blob.is_file():
            raise CheckpointError(
                f"{where}: file {name} is missing from the hub cache (its link {link} points to no blob {blob.name})"
            )
        kind = "sha256" if _SHA256.fullmatch(blob.name) else "git sha1" if _COMMIT.fullmatch(blob.name) else None
        if kind is None:
            continue
        st = blob.stat()
        key = (str(blob), st.st_size, st.st_mtime_ns)
        if key in _VERIFIED:
            continue
        got = file_sha256(blob) if kind == "sha256" else git_blob_sha1(blob)
        if got != blob.name:
            raise CheckpointError(
                f"{where}: file {name} is corrupt: its blob {blob} has {kind} {got}, not the {blob.name} the hub "
                f"cache names it by (delete the blob and the link {link} to download it again)"
            )
        _VERIFIED.add(key)


def _model_files(snapshot: Path) -> list[str]:
    """The files of a snapshot that ``from_pretrained`` reads for the model: its configs and weights (the
    ``.safetensors`` ones when there are any, as transformers prefers them; else the ``.bin`` ones)."""
    names = sorted(p.name for p in snapshot.iterdir())
    weights = [n for n in names if n.endswith((".safetensors", ".safetensors.index.json"))]
    if not weights:
        weights = [n for n in names if n.endswith((".bin", ".bin.index.json"))]
    return [n for n in names if n in ("config.json", "generation_config.json")] + weights


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
            gaps = [
                f"{self.name(sz, sd)}@{self.revision(st)}"
                for sz in self.sizes
                for sd in self.seeds
                for st in self.steps[1:-1]
                if cached_snapshot(self.name(sz, sd), self.revision(st)) is None
            ]
            if gaps:
                warnings.warn(
                    f"HF_HUB_OFFLINE is set and the hub cache {hub_cache_dir()} lacks {len(gaps)} of the selected "
                    f"checkpoints: {gaps if len(gaps) <= 6 else gaps[:6] + ['…']}; loading one raises "
                    "CheckpointError (HubSuite.discover selects the steps every run has)",
                    SuiteWarning,
                    stacklevel=2,
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
            raise ValueError(
                f"the hub cache {hub_cache_dir()} has no {prefix} runs {missing}; it has sizes {all_sizes}, "
                f"seeds {all_seeds}"
            )
        steps = set.intersection(*(found[(sz, sd)] for sz in sizes for sd in seeds))
        if not steps:
            raise ValueError(f"the models of {prefix} in the hub cache {hub_cache_dir()} share no step revision")
        runs = [(sz, sd) for sz in sizes for sd in seeds]
        dropped = sorted(set.union(*(found[r] for r in runs)) - steps)
        if dropped:
            lacking = []
            for st in dropped:
                names = ", ".join(model_name(prefix, sz, sd) for sz, sd in runs if st not in found[(sz, sd)])
                lacking.append(f"step{st} (missing in {names})")
            more = " …" if len(lacking) > 8 else ""
            warnings.warn(
                f"{len(dropped)} step(s) dropped from every run of {prefix}, because the hub cache "
                f"{hub_cache_dir()} lacks them in some runs: {'; '.join(lacking[:8])}{more}",
                SuiteWarning,
                stacklevel=2,
            )
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
        repo, rev = self.name(size, seed), self.revision(step)
        where = f"{repo}@{rev}"
        snap = cached_snapshot(repo, rev)
        if snap is None and self.offline:
            raise CheckpointError(
                f"{where} is not in the hub cache {hub_cache_dir()} (no refs/{rev}): step {step} is missing from "
                f"this run; download it, or open the suite without it (HubSuite.discover)"
            )
        if snap is not None:
            files = _model_files(snap)
            if self.offline and "config.json" not in files:
                raise CheckpointError(f"{where}: file config.json is missing from its snapshot {snap}")
            if self.offline and not any(n.endswith((".safetensors", ".bin")) for n in files):
                raise CheckpointError(
                    f"{where}: no weights file (model.safetensors or pytorch_model.bin) in its snapshot {snap}"
                )
            verify_snapshot(repo, rev, snap, files)
        _quiet_transformers()
        if attn_implementation == "patchable":
            register_patchable()
        try:
            model = AutoModelForCausalLM.from_pretrained(
                repo,
                revision=rev,
                cache_dir=hub_cache_dir(),
                attn_implementation=attn_implementation,
                dtype=dtype or torch.float32,
            )
        except Exception as err:  # re-raised naming repo@revision
            if isinstance(err, MemoryError):
                raise
            raise _load_error(where, "the model", err) from err
        if not self.offline:  # what was downloaded just now
            snap = cached_snapshot(repo, rev)
            if snap is not None:
                verify_snapshot(repo, rev, snap, _model_files(snap))
        self._check_rows(model, where)
        return (model.to(self.device) if self.device is not None else model).eval()

    def _file(self, repo: str, rev: str, filename: str) -> Path | str:
        """``filename`` of ``repo@rev``, verified, from the cache (or downloaded when online), else why not."""
        snap = cached_snapshot(repo, rev)
        if snap is not None and (snap / filename).exists():
            verify_snapshot(repo, rev, snap, [filename])
            return snap / filename
        if self.offline:
            return (
                f"{repo}@{rev} is not in the hub cache (no refs/{rev})"
                if snap is None
                else f"{repo}@{rev} has no {filename} in its snapshot {snap}"
            )
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import EntryNotFoundError, RepositoryNotFoundError, RevisionNotFoundError

        try:
            path = Path(hf_hub_download(repo, filename, revision=rev, cache_dir=hub_cache_dir()))
        except (EntryNotFoundError, RevisionNotFoundError, RepositoryNotFoundError) as err:
            return f"{repo}@{rev} has no {filename} on the hub ({_first_line(err)})"
        except Exception as err:  # re-raised naming repo@revision and the file
            if isinstance(err, MemoryError):
                raise
            raise _load_error(f"{repo}@{rev}", filename, err) from err
        snap = cached_snapshot(repo, rev)
        if snap is not None:
            verify_snapshot(repo, rev, snap, [filename])
        return path

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
        tokenizer for the whole family, so it loads whether or not seed 0 is among the selected seeds (and whether or
        not the seed repositories hold tokenizer files).

        Where seed 0's revision has no ``tokenizer.json``, the selected seeds' repositories (first size, last step)
        are tried in turn, with a :class:`SuiteWarning` naming what was missing; the tokenizer is checked to fit
        every size's ``config.json`` (:func:`check_vocab`), and each later :meth:`load_model` checks its embedding.

        Raises
        ------
        CheckpointError
            No candidate has ``tokenizer.json`` (transformers would load an empty tokenizer without it), a file is
            corrupt, or the tokenizer does not fit a size's embedding; the message names ``repo@revision``.
        """
        from transformers import AutoTokenizer

        rev = self.revision(self.steps[-1])
        candidates = [model_name(self.prefix, self.sizes[0], 0)]
        candidates += [self.name(self.sizes[0], sd) for sd in self.seeds if sd != 0]
        missing = []
        for repo in candidates:
            found = self._file(repo, rev, "tokenizer.json")
            if isinstance(found, Path):
                break
            missing.append(found)
        else:
            raise CheckpointError(
                f"no tokenizer for {self.prefix}: tokenizer.json is missing ({'; '.join(missing)}); without it "
                "transformers would load an empty tokenizer"
            )
        where = f"{repo}@{rev}"
        if missing:
            warnings.warn(f"the tokenizer of {where} is used, because {'; '.join(missing)}", SuiteWarning, stacklevel=2)
        try:
            tok = AutoTokenizer.from_pretrained(repo, revision=rev, cache_dir=hub_cache_dir())
        except Exception as err:  # re-raised naming repo@revision
            if isinstance(err, MemoryError):
                raise
            raise _load_error(where, "the tokenizer", err) from err
        for size in self.sizes:
            model_at = f"{self.name(size, self.seeds[0])}@{rev}"
            config = self._file(self.name(size, self.seeds[0]), rev, "config.json")
            if isinstance(config, Path):
                try:
                    rows = json.loads(config.read_text(encoding="utf-8"))["vocab_size"]
                except (KeyError, TypeError, ValueError) as err:
                    raise CheckpointError(
                        f"{model_at}: file config.json has no vocab_size ({_first_line(err)})"
                    ) from err
                check_vocab(len(tok), int(rows), where, model_at)
        self._tokenizer = (len(tok), where)
        return tok


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
