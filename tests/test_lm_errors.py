"""Load errors that say what and where, on a hub cache the project's writer (:mod:`lib.lm.hubcache`) did not write.

The cache is laid out here by hand as huggingface_hub leaves it: per revision a snapshot of relative links into
``blobs/``, weights named by their sha256 (LFS) and every other file by its git object id, ``refs/step<N>``. Seed 0
has ``pytorch_model.bin`` and the tokenizer files in every revision, seed 1 ``model.safetensors`` and no tokenizer
(the tokenizer is read from seed 0). One family of repositories per fault: a missing middle revision, corrupt blobs,
no ``tokenizer.json``, a vocabulary larger than the embedding. Every error (or warning) names ``repo@revision`` and
the file; the loading runs in a fresh interpreter with ``HF_HUB_OFFLINE=1``, as in ``tests/test_lm_hubcache.py``.
"""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path

import pytest
from test_lm_hubcache import _offline

from lib.lm.suite import CheckpointError, check_vocab, git_blob_sha1

ROOT = Path(__file__).resolve().parents[1]
TOKENIZER = ROOT / "data" / "lm" / "bpepair" / "tokenizer"  # a byte-level BPE of 2048 tokens
STEPS = (0, 1, 2, 4)
LFS = (".bin", ".safetensors")


def _revision(seed: int, step: int, rows: int, weights: str, tokenizer: bool) -> dict[str, bytes]:
    """One revision's files: a 1-layer GPT-NeoX with ``rows`` embedding rows, weights seeded by (seed, step)."""
    import torch
    from safetensors.torch import save
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    config = GPTNeoXConfig(
        vocab_size=rows,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    torch.manual_seed(1000 * seed + step)
    state = {k: v.contiguous() for k, v in GPTNeoXForCausalLM(config).state_dict().items()}
    if weights == "bin":
        buf = io.BytesIO()
        torch.save(state, buf)
        files = {"pytorch_model.bin": buf.getvalue()}
    else:
        files = {"model.safetensors": save(state, metadata={"format": "pt"})}
    files["config.json"] = config.to_json_string().encode()
    if tokenizer:
        for name in ("tokenizer.json", "tokenizer_config.json"):
            files[name] = (TOKENIZER / name).read_bytes()
    return files


def _git_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _write_repo(cache: Path, repo_id: str, revisions: dict[str, dict[str, bytes]]) -> Path:
    """``repo_id`` in huggingface_hub's cache layout: blobs by sha256 (LFS) or git sha1, relative links, refs."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    (repo / "blobs").mkdir(parents=True, exist_ok=True)
    (repo / "refs").mkdir(exist_ok=True)
    for rev, files in revisions.items():
        commit = hashlib.sha1(f"{repo_id}@{rev}".encode()).hexdigest()
        snap = repo / "snapshots" / commit
        snap.mkdir(parents=True)
        for name, data in files.items():
            digest = hashlib.sha256(data).hexdigest() if name.endswith(LFS) else _git_sha1(data)
            blob = repo / "blobs" / digest
            if not blob.exists():
                blob.write_bytes(data)
            (snap / name).symlink_to(os.path.relpath(blob, snap))
        (repo / "refs" / rev).write_text(commit)
    return repo


def _family(cache: Path, family: str, *, rows=2048, tokenizer=(0,), skip=()) -> dict[tuple[int, int], Path]:
    """Size ``1k``, seeds 0 (``.bin``) and 1 (``.safetensors``), steps :data:`STEPS`; ``rows`` an int or
    ``{step: rows}``; ``tokenizer`` the seeds whose revisions hold the tokenizer files; ``skip`` (seed, step) pairs
    left out. Returns each revision's snapshot folder."""
    snaps = {}
    for seed in (0, 1):
        repo_id = f"ext/{family}-1k" + (f"-seed{seed}" if seed else "")
        revisions = {
            f"step{st}": _revision(
                seed, st, rows if isinstance(rows, int) else rows[st], "bin" if seed == 0 else "st", seed in tokenizer
            )
            for st in STEPS
            if (seed, st) not in skip
        }
        repo = _write_repo(cache, repo_id, revisions)
        for st in STEPS:
            ref = repo / "refs" / f"step{st}"
            if ref.is_file():
                snaps[(seed, st)] = repo / "snapshots" / ref.read_text()
    return snaps


def _corrupt(link: Path) -> None:
    """Flip one byte of the blob behind ``link`` (its name, the hash, stays)."""
    blob = link.resolve()
    data = bytearray(blob.read_bytes())
    data[len(data) // 2] ^= 0xFF
    blob.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    out = tmp_path_factory.mktemp("extcache")
    _family(out, "good")
    _family(out, "gap", skip={(1, 2)})
    snaps = _family(out, "corrupt")
    _corrupt(snaps[(1, 1)] / "model.safetensors")  # an LFS blob (sha256)
    _corrupt(snaps[(0, 2)] / "pytorch_model.bin")
    (snaps[(1, 2)] / "model.safetensors").unlink()  # a weight file missing from its snapshot
    weights = snaps[(1, 4)] / "model.safetensors"  # a copied, truncated file: no blob name to check it by
    data = weights.read_bytes()
    weights.unlink()
    weights.write_bytes(data[: len(data) // 2])
    snaps = _family(out, "badconfig")
    _corrupt(snaps[(0, 1)] / "config.json")  # a git blob (sha1), shared by every revision of seed 0 (same content)
    _family(out, "notok", tokenizer=())
    _family(out, "tokseed", tokenizer=(1,))
    _family(out, "small", rows=1000)
    _family(out, "shrunk", rows={0: 2048, 1: 1000, 2: 2048, 4: 2048})
    return out


_SCRIPT = """
import json, warnings
import torch
from lib.lm.suite import HubSuite

out = {}

def attempt(key, fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out[key] = {"ok": fn()}
        except Exception as err:
            out[key] = {"error": type(err).__name__, "msg": str(err)}
    out[key]["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]

ids = torch.tensor([[5, 6, 7, 8, 5, 6, 7]])

def good():
    hub = HubSuite.discover("ext/good", seeds=(1,))  # seed 1 has no tokenizer: seed 0's is used
    tok = hub.load_tokenizer()
    shapes = [list(hub.load_model("1k", 1, st)(input_ids=ids).logits.shape) for st in hub.steps]
    both = HubSuite.discover("ext/good")
    rows = [both.load_model("1k", sd, 4).get_input_embeddings().num_embeddings for sd in (0, 1)]
    return dict(steps=list(hub.steps), vocab=len(tok), shapes=shapes, rows=rows)

attempt("good", good)
attempt("discover_gap", lambda: list(HubSuite.discover("ext/gap").steps))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    gap = HubSuite(("1k",), (0, 1), (0, 1, 2, 4), prefix="ext/gap")  # step 2 selected although seed 1 lacks it
out["gap_selected"] = {"warnings": [f"{w.category.__name__}: {w.message}" for w in caught]}
attempt("gap_load", lambda: gap.load_model("1k", 1, 2))
attempt("gap_other", lambda: gap.load_model("1k", 0, 2).config.vocab_size)
bad = HubSuite.discover("ext/corrupt")
attempt("corrupt_safetensors", lambda: bad.load_model("1k", 1, 1))
attempt("corrupt_bin", lambda: bad.load_model("1k", 0, 2))
attempt("corrupt_config", lambda: HubSuite.discover("ext/badconfig").load_model("1k", 0, 4))
attempt("missing_weights", lambda: bad.load_model("1k", 1, 2))
attempt("corrupt_others_load", lambda: bad.load_model("1k", 1, 0).config.vocab_size)
attempt("truncated_copy", lambda: bad.load_model("1k", 1, 4))
attempt("notok", lambda: len(HubSuite.discover("ext/notok").load_tokenizer()))
attempt("tokseed", lambda: len(HubSuite.discover("ext/tokseed").load_tokenizer()))
attempt("small", lambda: len(HubSuite.discover("ext/small").load_tokenizer()))
shrunk = HubSuite.discover("ext/shrunk")
attempt("shrunk_tokenizer", lambda: len(shrunk.load_tokenizer()))
attempt("shrunk_load", lambda: shrunk.load_model("1k", 0, 1))
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def outcome(cache):
    return _offline(_SCRIPT, cache)  # the hub-cache tests' offline runner: cache variables set, the hub forbidden


def _error(outcome, key: str, *parts: str) -> str:
    got = outcome[key]
    assert got.get("error") == "CheckpointError", got
    for part in parts:
        assert part in got["msg"], (part, got["msg"])
    return got["msg"]


def test_a_cache_not_written_here_loads_with_the_tokenizer_only_at_seed_0(outcome):
    good = outcome["good"]
    assert "ok" in good and not good["warnings"], good
    assert good["ok"]["steps"] == list(STEPS) and good["ok"]["vocab"] == 2048
    assert good["ok"]["shapes"] == [[1, 7, 2048]] * len(STEPS)
    assert good["ok"]["rows"] == [2048, 2048]  # .bin (seed 0) and .safetensors (seed 1) revisions


def test_a_missing_middle_revision_is_named(outcome):
    dropped = outcome["discover_gap"]
    assert dropped["ok"] == [0, 1, 4]  # dropped from every run, and said so
    assert len(dropped["warnings"]) == 1 and dropped["warnings"][0].startswith("SuiteWarning: 1 step(s) dropped")
    assert "step2 (missing in ext/gap-1k-seed1)" in dropped["warnings"][0]
    selected = outcome["gap_selected"]["warnings"]
    assert len(selected) == 1 and "lacks 1 of the selected checkpoints" in selected[0]
    assert "ext/gap-1k-seed1@step2" in selected[0]
    _error(outcome, "gap_load", "ext/gap-1k-seed1@step2 is not in the hub cache", "no refs/step2")
    assert outcome["gap_other"]["ok"] == 2048  # the other run still has step 2


def test_a_corrupt_blob_is_named_by_repo_revision_and_file(outcome):
    msg = _error(outcome, "corrupt_safetensors", "ext/corrupt-1k-seed1@step1: file model.safetensors is corrupt")
    assert "sha256" in msg and "download it again" in msg
    _error(outcome, "corrupt_bin", "ext/corrupt-1k@step2: file pytorch_model.bin is corrupt")
    msg = _error(outcome, "corrupt_config", "ext/badconfig-1k@step4: file config.json is corrupt")
    assert "git sha1" in msg
    _error(outcome, "missing_weights", "ext/corrupt-1k-seed1@step2: no weights file", "model.safetensors")
    assert outcome["corrupt_others_load"]["ok"] == 2048
    # a file that is no link into blobs/ cannot be checked; transformers' error is re-raised naming repo@revision
    _error(outcome, "truncated_copy", "ext/corrupt-1k-seed1@step4: cannot load the model (")


def test_a_missing_tokenizer_is_an_error_not_an_empty_tokenizer(outcome):
    msg = _error(outcome, "notok", "no tokenizer for ext/notok", "ext/notok-1k@step4 has no tokenizer.json")
    assert "ext/notok-1k-seed1@step4 has no tokenizer.json" in msg  # every candidate tried is named
    tokseed = outcome["tokseed"]
    assert tokseed["ok"] == 2048 and len(tokseed["warnings"]) == 1
    assert "the tokenizer of ext/tokseed-1k-seed1@step4 is used" in tokseed["warnings"][0]
    assert "ext/tokseed-1k@step4 has no tokenizer.json" in tokseed["warnings"][0]


def test_a_vocabulary_larger_than_the_embedding_is_refused(outcome):
    _error(
        outcome,
        "small",
        "the tokenizer of ext/small-1k@step4 has 2048 tokens but ext/small-1k@step4 has 1000 embedding rows",
        "config.json vocab_size",
    )
    assert outcome["shrunk_tokenizer"]["ok"] == 2048  # the last step fits ...
    _error(outcome, "shrunk_load", "ext/shrunk-1k@step1 has 1000 embedding rows")  # ... step 1 does not


def test_check_vocab_accepts_padding_and_refuses_empty_or_larger_tokenizers():
    check_vocab(50277, 50304, "tok", "model")  # Pythia: the embedding is padded
    with pytest.raises(CheckpointError, match=r"tok has 2049 tokens but model has 2048 embedding rows"):
        check_vocab(2049, 2048, "tok", "model")
    with pytest.raises(CheckpointError, match=r"tok has only 2 tokens for the 50304 embedding rows of model"):
        check_vocab(2, 50304, "tok", "model")


def test_git_blob_sha1_is_gits_object_id(tmp_path):
    (tmp_path / "f").write_bytes(b"hello\n")
    assert git_blob_sha1(tmp_path / "f") == "ce013625030ba8dba906f756967f9e9ca394464a"  # git hash-object


def test_a_local_suite_refuses_a_tokenizer_larger_than_its_models(tmp_path):
    import shutil

    from lib.lm.suite import LocalSuite

    root = tmp_path / "pair"
    shutil.copytree(ROOT / "data" / "lm" / "bpepair", root)
    suite = LocalSuite(root)
    assert len(suite.load_tokenizer()) == 2048
    config = root / "bpe-1.6m" / "step3600" / "config.json"
    config.write_text(config.read_text().replace('"vocab_size": 2048', '"vocab_size": 1024'))
    with pytest.raises(CheckpointError, match=r"tokenizer.json\) has 2048 tokens but bpe-1.6m@step3600 has 1024"):
        suite.load_tokenizer()


def test_make_prompts_is_word_level_only_and_not_public():
    """``lib.lm.prompts.make_prompts`` raised on byte-level BPEs: it left the public API, and says where to go."""
    from transformers import AutoTokenizer

    import lib.lm
    from lib.lm.prompts import make_prompts
    from lib.lm.tasks import build_prompts

    assert "make_prompts" not in lib.lm.__all__ and not hasattr(lib.lm, "make_prompts")
    tok = AutoTokenizer.from_pretrained(TOKENIZER)
    with pytest.raises(ValueError, match=r"make_prompts builds the word-level .* lib\.lm\.tasks\.build_prompts"):
        make_prompts("rep", tok)
    assert build_prompts("rep", tok, 4).input_ids.shape[0] == 4  # what a BPE's prompts come from
