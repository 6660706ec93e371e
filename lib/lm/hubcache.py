"""Write a local suite as a Hugging Face hub cache, in the layout and file format of Pythia's checkpoints.

The chapter's hub branch loads PolyPythias with ``from_pretrained("EleutherAI/pythia-{size}[-seed{k}]",
revision="step{N}")``. That code cannot be run here (no network), so this module writes any local suite
(:class:`lib.lm.suite.LocalSuite`) as the cache ``huggingface_hub`` would have left after downloading it, and the
same loading code runs offline on it (``HF_HUB_CACHE=<dir> HF_HUB_OFFLINE=1``)::

    <cache>/models--<org>--<prefix>-<size>[-seed<k>]/
        blobs/<sha256>                    file contents, one blob per distinct file
        snapshots/<commit>/<file>         relative symlinks into blobs/, one snapshot per revision
        refs/step<N>                      the commit of revision step<N> (no newline, as huggingface_hub writes it)
        refs/main                         seed 0: the last step's commit; seed k: a commit holding only .gitattributes

Each revision holds what a Pythia revision holds: ``config.json`` with the keys of Pythia's configs (the legacy
``rotary_pct`` and ``rotary_emb_base``, ``torch_dtype`` float16, ``transformers_version`` 4.24.0, no
``rope_parameters``), ``pytorch_model.bin`` (a pickled fp16 state dict with Pythia's names, including the buffers
old GPT-NeoX code saved: ``attention.bias`` (the causal mask), ``attention.masked_bias`` and
``attention.rotary_emb.inv_freq`` per layer) and the tokenizer files. Commits are the sha1 of the revision's
repository, name and file digests, so writing the same suite twice gives the same cache.

Command::

    python -m lib.lm.hubcache --root build/lm/bpesuite --cache build/lm/hubcache [--org attnbook] [--seeds 0 1 2]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
from pathlib import Path

from .suite import LocalSuite

__all__ = ["PYTHIA_CONFIG_KEYS", "repo_folder", "pythia_config", "pythia_state_dict", "write_hub_cache", "main"]

#: The keys of a Pythia checkpoint's ``config.json`` (EleutherAI/pythia-*, written by transformers 4.24).
PYTHIA_CONFIG_KEYS = (
    "architectures",
    "bos_token_id",
    "eos_token_id",
    "hidden_act",
    "hidden_size",
    "initializer_range",
    "intermediate_size",
    "layer_norm_eps",
    "max_position_embeddings",
    "model_type",
    "num_attention_heads",
    "num_hidden_layers",
    "rotary_emb_base",
    "rotary_pct",
    "tie_word_embeddings",
    "torch_dtype",
    "transformers_version",
    "use_cache",
    "use_parallel_residual",
    "vocab_size",
)
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")
GITATTRIBUTES = "*.bin filter=lfs diff=lfs merge=lfs -text\n*.safetensors filter=lfs diff=lfs merge=lfs -text\n"


def repo_folder(repo_id: str) -> str:
    """``models--<org>--<name>``: huggingface_hub's cache folder of a model repository ``<org>/<name>``."""
    if repo_id.count("/") != 1 or not all(repo_id.split("/")):
        raise ValueError(f"repo_id must be '<org>/<name>', got {repo_id!r}")
    return "models--" + repo_id.replace("/", "--")


def pythia_config(config: dict) -> dict:
    """A transformers-5 GPT-NeoX ``config.json`` (dict) rewritten with exactly Pythia's keys.

    ``rope_parameters`` becomes the legacy ``rotary_pct`` (its ``partial_rotary_factor``) and ``rotary_emb_base``
    (its ``rope_theta``); keys Pythia's configs do not have are dropped, and a ``ValueError`` is raised when one of
    them is not at the value transformers assumes for a missing key (the checkpoint would load as another model).
    """
    rope = config.get("rope_parameters") or {}
    out = {k: config[k] for k in PYTHIA_CONFIG_KEYS if k in config}
    out.update(
        rotary_pct=float(rope.get("partial_rotary_factor", config.get("rotary_pct", 0.25))),
        rotary_emb_base=int(rope.get("rope_theta", config.get("rotary_emb_base", 10000))),
        torch_dtype="float16",
        transformers_version="4.24.0",
        architectures=["GPTNeoXForCausalLM"],
    )
    assumed = {"attention_bias": True, "hidden_dropout": 0.0, "attention_dropout": 0.0}
    changed = {k: config[k] for k, v in assumed.items() if k in config and config[k] != v}
    if changed:
        raise ValueError(
            f"config keys {changed} differ from what a Pythia config (which lacks them) implies: {assumed}"
        )
    missing = [k for k in PYTHIA_CONFIG_KEYS if k not in out]
    if missing:
        raise ValueError(f"the config lacks Pythia keys {missing}")
    return dict(sorted(out.items()))


def pythia_state_dict(state: dict, config: dict) -> dict:
    """The checkpoint's tensors (fp16) plus the buffers Pythia's ``pytorch_model.bin`` files carry per layer.

    ``attention.bias`` is the lower-triangular causal mask ``(1, 1, P, P)`` (bool) over ``P`` =
    ``max_position_embeddings``; ``attention.masked_bias`` the scalar −1e9; ``attention.rotary_emb.inv_freq`` the
    rotary frequencies :math:`b^{-2i/r}`, :math:`i < r/2`, with ``r = int(d_head · rotary_pct)`` and base ``b``.
    Current transformers ignores all three on loading (they are recomputed), as it does for Pythia's.
    """
    import torch

    P = int(config["max_position_embeddings"])
    d_head = int(config["hidden_size"]) // int(config["num_attention_heads"])
    r = int(d_head * float(config["rotary_pct"]))
    inv_freq = 1.0 / (float(config["rotary_emb_base"]) ** (torch.arange(0, r, 2).float() / r))
    out = {k: v.to(torch.float16) if v.is_floating_point() else v for k, v in state.items()}
    for i in range(int(config["num_hidden_layers"])):
        pre = f"gpt_neox.layers.{i}.attention."
        if pre + "query_key_value.weight" not in out:
            raise ValueError(f"state dict has no {pre}query_key_value.weight: not a GPT-NeoX checkpoint")
        out[pre + "bias"] = torch.tril(torch.ones(P, P, dtype=torch.bool)).view(1, 1, P, P)
        out[pre + "masked_bias"] = torch.tensor(-1e9)
        out[pre + "rotary_emb.inv_freq"] = inv_freq.clone()
    return out


def _revision_files(folder: Path) -> dict[str, bytes]:
    """A Pythia-format revision (file name -> bytes) from one local ``save_pretrained`` checkpoint folder."""
    import io

    import torch
    from safetensors.torch import load_file

    config = pythia_config(json.loads((folder / "config.json").read_text()))
    buf = io.BytesIO()
    torch.save(pythia_state_dict(load_file(folder / "model.safetensors"), config), buf)
    files = {"config.json": (json.dumps(config, indent=2) + "\n").encode(), "pytorch_model.bin": buf.getvalue()}
    for name in TOKENIZER_FILES:
        if (folder / name).is_file():
            files[name] = (folder / name).read_bytes()
    return files


def _write_snapshot(repo: Path, repo_id: str, revision: str, files: dict[str, bytes]) -> str:
    """Write ``files`` as one snapshot of ``repo`` (blobs by sha256, relative symlinks) and ``refs/<revision>``."""
    digests = {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}
    commit = hashlib.sha1(json.dumps([repo_id, revision, sorted(digests.items())]).encode()).hexdigest()
    snap = repo / "snapshots" / commit
    snap.mkdir(parents=True, exist_ok=True)
    (repo / "blobs").mkdir(exist_ok=True)
    for name, data in files.items():
        blob = repo / "blobs" / digests[name]
        if not blob.is_file():
            tmp = blob.with_name(blob.name + ".incomplete")
            tmp.write_bytes(data)
            os.replace(tmp, blob)
        link = snap / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(os.path.relpath(blob, snap))
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / revision).write_text(commit)
    return commit


def write_hub_cache(
    suite: LocalSuite, cache_dir: str | Path, *, org: str = "attnbook", steps=None, sizes=None, seeds=None
) -> list[str]:
    """Write every built model of ``suite`` (restricted to ``sizes`` × ``seeds`` if given; its ``steps``, or the
    given subset) into ``cache_dir`` as hub repositories ``<org>/<suite prefix>-<size>[-seed<k>]``; return the repo
    ids. (:meth:`lib.lm.suite.HubSuite.discover` wants every size with every seed: of a suite built in shards, write
    a selection that has them.)

    Point ``HF_HUB_CACHE`` at ``cache_dir`` and set ``HF_HUB_OFFLINE=1``; then
    ``HubSuite.discover(f"{org}/{suite.prefix}")`` finds the suite and loads it as the hub's PolyPythias are loaded.
    """
    if not isinstance(suite, LocalSuite):
        raise ValueError(f"suite must be a LocalSuite, got {type(suite).__name__}")
    if not org or "/" in org:
        raise ValueError(f"org must be a name without '/', got {org!r}")
    steps = tuple(suite.steps if steps is None else steps)
    for st in steps:
        suite.check(suite.sizes[0], suite.seeds[0], st)
    cache = Path(cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    repo_ids = []
    runs = [(sz, sd) for sz, sd in suite.built if (sizes is None or sz in sizes) and (seeds is None or sd in seeds)]
    if not runs:
        raise ValueError(f"no built run of {suite.root} among sizes {sizes} and seeds {seeds}")
    for size, seed in sorted(runs, key=lambda r: (suite.sizes.index(r[0]), r[1])):  # finished runs
        repo_id = f"{org}/{suite.name(size, seed)}"
        repo = cache / repo_folder(repo_id)
        last = None
        for st in steps:
            last = _write_snapshot(
                repo, repo_id, suite.revision(st), _revision_files(suite.verify_checkpoint(size, seed, st))
            )
        if seed == 0:  # the original run's main is its final checkpoint (Pythia's)
            (repo / "refs" / "main").write_text(last)
        else:  # PolyPythia seed repos: main holds only .gitattributes
            _write_snapshot(repo, repo_id, "main", {".gitattributes": GITATTRIBUTES.encode()})
        repo_ids.append(repo_id)
    return repo_ids


def main(argv=None) -> None:
    """``python -m lib.lm.hubcache --root SUITE --cache DIR [--org ORG] [--sizes ...] [--seeds ...] [--clean]``."""
    parser = argparse.ArgumentParser(prog="python -m lib.lm.hubcache", description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", required=True, help="the local suite folder (with suite.json)")
    parser.add_argument("--cache", required=True, help="the hub cache folder to write (HF_HUB_CACHE)")
    parser.add_argument("--org", default="attnbook")
    parser.add_argument("--sizes", nargs="+", default=None, help="only these sizes (default every built one)")
    parser.add_argument("--seeds", nargs="+", type=int, default=None, help="only these seeds")
    parser.add_argument("--clean", action="store_true", help="delete the cache folder first")
    args = parser.parse_args(argv)
    if args.clean:
        shutil.rmtree(args.cache, ignore_errors=True)
    suite = LocalSuite(args.root)
    ids = write_hub_cache(suite, args.cache, org=args.org, sizes=args.sizes, seeds=args.seeds)
    size = sum(f.stat().st_size for f in Path(args.cache).rglob("*") if f.is_file() and not f.is_symlink())
    print(f"wrote {len(ids)} repositories x {len(suite.steps)} revisions ({size / 1e6:.1f} MB) into {args.cache}")
    print(f"use: HF_HUB_CACHE={Path(args.cache).resolve()} HF_HUB_OFFLINE=1 BOOK_LM_HUB={args.org}/{suite.prefix}")


if __name__ == "__main__":
    main()
