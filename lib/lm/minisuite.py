"""The offline mini-suites: small GPT-NeoX models (sizes × seeds) with Pythia-style checkpoints, trained here.

One resumable command builds a suite, whole or in shards (a suite too big for one session)::

    python -m lib.lm.minisuite build   --scale bpe [--sizes 160k 410k] [--seeds 0 1 2]
    python -m lib.lm.minisuite analyze --scale bpe --publish

``build`` trains the (size, seed) runs one after the other with a progress bar, seeds outermost. A run writes its
checkpoints (``save_pretrained``, fp16, with the tokenizer) as it goes and, next to the latest one, a resume state
(fp32 weights, optimiser, data-stream state); a killed build continues from there and gives bit-identical
checkpoints (one thread, no dropout). A finished run leaves ``run.json`` with the sha256 of every file, and the
suite's index ``suite.json`` lists every finished run (``meta["complete"]`` once all are). ``analyze`` runs the
per-run analysis (:mod:`lib.lm.study`) through the results cache, and ``--publish`` commits each finished run's
result, the index of the published runs and chapter 5's checkpoint pair to ``data/`` (:mod:`lib.lm.study_results`).

Two families: the word-level suites on the synthetic corpus (``full``, ``tiny``; the recipe measured in
the mini-suite design notes: corpus mix, >= 3 layers, AdamW 3e-3 with warm-up and cosine decay, seed = init and
data order) and the byte-level BPE suites on English prose (``bpe``, ``tiny-bpe``), which chapter 5 reads.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..core.cache import config_key
from ..core.progress import progress
from .bpe import BPEConfig, train_bpe
from .corpus import CorpusConfig, CorpusSampler, ProseCorpusConfig, ProseSampler, prose_stream, randrep_pool
from .suite import INDEX_FILE, INDEX_FORMAT, file_sha256, model_name
from .tokenizer import VocabConfig, build_tokenizer, build_vocab

__all__ = [
    "ModelSize",
    "TrainConfig",
    "MiniSuiteConfig",
    "MINISUITE",
    "TINY_SUITE",
    "TINY_BPE_SUITE",
    "BPE_SUITE",
    "SCALES",
    "checkpoint_schedule",
    "suite_data",
    "train_run",
    "build_suite",
    "main",
]


@dataclass(frozen=True)
class ModelSize:
    """One model size of the suite (GPT-NeoX, Pythia's architecture choices at toy width)."""

    name: str
    n_layer: int
    d_model: int
    n_head: int

    def __post_init__(self):
        for f in ("n_layer", "d_model", "n_head"):
            v = getattr(self, f)
            if not isinstance(v, int) or v < 1:
                raise ValueError(f"{f} must be a positive int, got {v!r}")
        if self.d_model % self.n_head or (self.d_model // self.n_head) % 8:
            raise ValueError(f"d_model/n_head must be a multiple of 8 (rotary dims), got {self.d_model}/{self.n_head}")

    def hf_config(self, vocab_size: int, max_positions: int = 128, *, eos: int = 2, pad: int = 0):
        from transformers import GPTNeoXConfig

        return GPTNeoXConfig(
            vocab_size=vocab_size,
            hidden_size=self.d_model,
            num_hidden_layers=self.n_layer,
            num_attention_heads=self.n_head,
            intermediate_size=4 * self.d_model,
            rotary_pct=0.25,
            use_parallel_residual=True,
            tie_word_embeddings=False,
            max_position_embeddings=max_positions,
            bos_token_id=eos,
            eos_token_id=eos,
            pad_token_id=pad,
        )


@dataclass(frozen=True)
class TrainConfig:
    """AdamW with linear warm-up and cosine decay to ``lr_final_frac * lr`` at ``steps`` (Pythia's schedule shape)."""

    steps: int = 3000
    batch_size: int = 32
    lr: float = 3e-3
    lr_final_frac: float = 0.1
    warmup: int = 100
    betas: tuple[float, float] = (0.9, 0.95)
    weight_decay: float = 0.01
    grad_clip: float = 1.0

    def __post_init__(self):
        if not isinstance(self.steps, int) or self.steps < 1:
            raise ValueError(f"steps must be a positive int, got {self.steps!r}")
        if not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {self.batch_size!r}")
        if not self.lr > 0 or not 0 < self.lr_final_frac <= 1:
            raise ValueError(f"lr must be > 0 and lr_final_frac in (0, 1], got {self.lr}, {self.lr_final_frac}")

    def lr_at(self, step: int) -> float:
        if step < self.warmup:
            return self.lr * (step + 1) / self.warmup
        t = (step - self.warmup) / max(1, self.steps - self.warmup)
        return self.lr * (self.lr_final_frac + (1 - self.lr_final_frac) * 0.5 * (1 + math.cos(math.pi * min(t, 1.0))))


def checkpoint_schedule(total: int, log_until: int, every: int) -> tuple[int, ...]:
    """Pythia-like steps: 0, 1, 2, 4, …, ``log_until`` (powers of two), then every ``every`` steps up to ``total``."""
    if not (isinstance(total, int) and isinstance(log_until, int) and isinstance(every, int)) or min(total, every) < 1:
        raise ValueError(f"total, log_until, every must be positive ints, got {total}, {log_until}, {every}")
    log = [0] + [2**i for i in range(int(math.log2(max(log_until, 1))) + 1) if 2**i <= min(log_until, total)]
    start = (log[-1] // every + 1) * every
    return tuple(sorted(set(log) | set(range(start, total + 1, every)) | {total}))


@dataclass(frozen=True)
class MiniSuiteConfig:
    """Everything that defines a mini-suite (its hash names the build; a root holds exactly one config)."""

    prefix: str = "mini"
    sizes: tuple[ModelSize, ...] = (
        ModelSize("120k", 3, 48, 3),
        ModelSize("200k", 3, 64, 4),
        ModelSize("410k", 3, 96, 4),
    )
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    train: TrainConfig = TrainConfig()
    corpus: CorpusConfig | ProseCorpusConfig = CorpusConfig()
    vocab: VocabConfig | BPEConfig = VocabConfig()
    checkpoints: tuple[int, ...] = field(default_factory=lambda: checkpoint_schedule(3000, 64, 50))
    data_seed_offset: int = 10000

    def __post_init__(self):
        names = [s.name for s in self.sizes]
        if not names or len(set(names)) != len(names):
            raise ValueError(f"sizes must have distinct names, got {names}")
        if not self.seeds or len(set(self.seeds)) != len(self.seeds) or min(self.seeds) < 0:
            raise ValueError(f"seeds must be distinct non-negative ints, got {self.seeds}")
        if (
            list(self.checkpoints) != sorted(set(self.checkpoints))
            or self.checkpoints[0] != 0
            or self.checkpoints[-1] != self.train.steps
        ):
            raise ValueError(
                f"checkpoints must increase from 0 to train.steps={self.train.steps}, got {self.checkpoints}"
            )
        if isinstance(self.vocab, BPEConfig) != isinstance(self.corpus, ProseCorpusConfig):
            raise ValueError(
                "a BPE vocabulary goes with the prose corpus, a word-level one with the synthetic corpus; "
                f"got {type(self.vocab).__name__} with {type(self.corpus).__name__}"
            )

    def size(self, name: str) -> ModelSize:
        for s in self.sizes:
            if s.name == name:
                return s
        raise ValueError(f"size {name!r} is not in the suite; it has {[s.name for s in self.sizes]}")


#: The chapter's suite: 3 sizes × 5 seeds × 3000 steps, 67 checkpoints each (40 CPU-minutes on one thread, 0.5 GB).
MINISUITE = MiniSuiteConfig()
#: The CI suite: built inside the chapter in seconds (it need not show emergence).
TINY_SUITE = MiniSuiteConfig(
    prefix="tiny",
    sizes=(ModelSize("30k", 2, 32, 2), ModelSize("60k", 2, 48, 3)),
    seeds=(0, 1),
    train=TrainConfig(steps=40, warmup=5),
    checkpoints=checkpoint_schedule(40, 8, 8),
)
#: The byte-level BPE suite's code path at test size (prose corpus, a small BPE; learns nothing in 40 steps).
TINY_BPE_SUITE = MiniSuiteConfig(
    prefix="tinybpe",
    sizes=(ModelSize("30k", 2, 32, 2),),
    seeds=(0, 1),
    train=TrainConfig(steps=40, warmup=5),
    checkpoints=checkpoint_schedule(40, 8, 8),
    vocab=BPEConfig(vocab_size=512, n_words=20_000),
    corpus=ProseCorpusConfig(n_words=20_000),
)
#: The byte-level BPE suite chapter 5 reads (built and published: ``data/lm/bpesuite``): 4 sizes spanning 10x in
#: parameters x 10 seeds (PolyPythias has 10), BPE 2048 on English prose, repeated random spans of single-token
#: corpus-half words, digits and capitals (``randrep_pool="words"``), 4000 steps (``build --scale bpe``, then
#: ``analyze --scale bpe``: :func:`lib.lm.study_results.study_suite`).
BPE_SUITE = MiniSuiteConfig(
    prefix="bpe",
    sizes=(
        ModelSize("160k", 2, 32, 2),
        ModelSize("410k", 3, 64, 4),
        ModelSize("840k", 4, 96, 4),
        ModelSize("1.6m", 4, 144, 6),
    ),
    seeds=tuple(range(10)),
    train=TrainConfig(steps=4000),
    checkpoints=checkpoint_schedule(4000, 64, 100),
    vocab=BPEConfig(vocab_size=2048),
    corpus=ProseCorpusConfig(randrep_pool="words"),
)
SCALES = {"full": MINISUITE, "tiny": TINY_SUITE, "tiny-bpe": TINY_BPE_SUITE, "bpe": BPE_SUITE}


# ------------------------------------------------------------------------------------------------ one run
@lru_cache(maxsize=2)
def _bpe_data(vocab: BPEConfig, corpus: ProseCorpusConfig):
    """The learned BPE and the prose stream it tokenizes (once per process: about a minute for the defaults)."""
    tok = train_bpe(vocab)
    return tok, prose_stream(corpus, tok)


def suite_data(config: "MiniSuiteConfig", seed: int):
    """``(tokenizer, sampler, eos id, pad id)`` of one run: the word-level tokenizer with the synthetic corpus, or
    the byte-level BPE with the prose corpus; the sampler's stream is seeded ``data_seed_offset + seed``."""
    if isinstance(config.vocab, BPEConfig):
        tok, stream = _bpe_data(config.vocab, config.corpus)
        pool = randrep_pool(tok) if config.corpus.randrep_pool == "words" else None
        return (
            tok,
            ProseSampler(config.corpus, stream, tok.eos_token_id, config.data_seed_offset + seed, pool),
            tok.eos_token_id,
            tok.pad_token_id,
        )
    tok = build_tokenizer(config.vocab)
    return tok, CorpusSampler(config.corpus, build_vocab(config.vocab), config.data_seed_offset + seed), 2, 0


def _atomic_torch_save(obj, path: Path) -> None:
    import torch

    tmp = path.with_name(path.name + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def _save_checkpoint(model, tokenizer, folder: Path) -> dict[str, str]:
    """Write ``model`` (as fp16) and the tokenizer into ``folder`` atomically; return ``{file: sha256}``."""
    import torch

    tmp = folder.with_name("." + folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    copy.deepcopy(model).to(torch.float16).save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    hashes = {f.name: file_sha256(f) for f in sorted(tmp.iterdir()) if f.is_file()}
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(tmp, folder)
    return hashes


def train_run(
    config: MiniSuiteConfig, size: str, seed: int, root: str | Path, *, bar=None, stop_after: int | None = None
) -> dict | None:
    """Train one (size, seed) run into ``root/<prefix>-<size>[-seed<k>]``, resuming if a resume state is there.

    Returns the run summary (also written to ``run.json``): config key, losses, per-checkpoint file hashes, CPU time.
    A finished run (``run.json`` with the same config key) is returned without training. ``stop_after`` stops
    (returning None) once the first checkpoint at or after that step and its resume state are written: what a kill
    leaves behind (used to test resumption).
    """
    import torch
    from transformers import GPTNeoXForCausalLM

    msize = config.size(size)
    if seed not in config.seeds:
        raise ValueError(f"seed {seed!r} is not in the suite config; it has {list(config.seeds)}")
    key = config_key(config)
    run_dir = Path(root) / model_name(config.prefix, size, seed)
    done = run_dir / "run.json"
    if done.is_file():
        summary = json.loads(done.read_text())
        if summary.get("config_key") != key:
            raise ValueError(f"{run_dir} holds a run of another suite config; use another root or delete it")
        if bar is not None:
            bar.update(config.train.steps)
        return summary
    run_dir.mkdir(parents=True, exist_ok=True)
    tokenizer, sampler, eos, pad = suite_data(config, seed)
    torch.manual_seed(seed)
    model = GPTNeoXForCausalLM(msize.hf_config(len(tokenizer), max(128, config.corpus.seq_len), eos=eos, pad=pad))
    model.config._attn_implementation = "sdpa"
    tc = config.train
    opt = torch.optim.AdamW(model.parameters(), lr=tc.lr, betas=tc.betas, weight_decay=tc.weight_decay)
    state_path = run_dir / "_resume.pt"
    step, losses, files, cpu = 0, [], {}, 0.0
    if state_path.is_file():
        state = torch.load(state_path, weights_only=False)
        if state["config_key"] != key:
            raise ValueError(f"{state_path} belongs to another suite config; delete it or use another root")
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        sampler.set_state(state["sampler"])
        step, losses, files, cpu = state["step"], state["losses"], state["files"], state["cpu"]
    if bar is not None:
        bar.update(step)
    ckpts = set(config.checkpoints)
    t0 = time.process_time()
    model.train()
    while True:
        if step in ckpts and f"step{step}" not in files:
            model.eval()
            files[f"step{step}"] = _save_checkpoint(model, tokenizer, run_dir / f"step{step}")
            model.train()
            _atomic_torch_save(
                {
                    "config_key": key,
                    "model": model.state_dict(),
                    "opt": opt.state_dict(),
                    "sampler": sampler.get_state(),
                    "step": step,
                    "losses": losses,
                    "files": files,
                    "cpu": cpu + time.process_time() - t0,
                },
                state_path,
            )
            if stop_after is not None and step >= stop_after and step < tc.steps:
                return None
        if step >= tc.steps:
            break
        for g in opt.param_groups:
            g["lr"] = tc.lr_at(step)
        x = torch.from_numpy(sampler.batch(tc.batch_size))  # (B, T+1)
        logits = model(input_ids=x[:, :-1]).logits  # (B, T, V)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), tc.grad_clip)
        opt.step()
        losses.append(float(loss.detach()))
        step += 1
        if bar is not None:
            bar.update(1)
    summary = {
        "config_key": key,
        "name": run_dir.name,
        "size": size,
        "seed": seed,
        "losses": losses,
        "files": files,
        "cpu_seconds": cpu + time.process_time() - t0,
        "n_params": sum(p.numel() for p in model.parameters()),
    }
    tmp = done.with_name("run.json.tmp")
    tmp.write_text(json.dumps(summary))
    os.replace(tmp, done)
    state_path.unlink(missing_ok=True)
    return summary


def build_suite(config: MiniSuiteConfig, root: str | Path, *, description: str = "", sizes=None, seeds=None) -> Path:
    """Train the runs of ``config`` into ``root`` (resumable) and write the index ``suite.json``; return its path.

    ``sizes`` and ``seeds`` (default: all of the suite's) train a shard only, seeds outermost, so that a suite too
    large for one session is built, and analysed run by run, over several. The index always lists every finished
    run of ``root`` (``meta["complete"]`` says whether that is all of them); :class:`lib.lm.suite.LocalSuite` opens a
    partial suite and serves its finished runs (:attr:`~lib.lm.suite.LocalSuite.built`).
    """
    import torch
    from transformers.utils import logging as hf_logging

    torch.set_num_threads(1)
    hf_logging.disable_progress_bar()
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    key = config_key(config)
    shard = [
        (config.size(sz).name, sd)
        for sd in (config.seeds if seeds is None else seeds)
        for sz in (sizes or [s.name for s in config.sizes])
    ]
    bar = progress(
        total=len(shard) * config.train.steps,
        desc=f"mini-suite {config.prefix}",
        unit="step",
        leave=True,
        mininterval=2.0,
    )
    try:
        for size, seed in shard:
            bar.set_postfix_str(f"{size} seed {seed}")
            train_run(config, size, seed, root, bar=bar)
    finally:
        bar.close()
    runs = [(size.name, seed) for seed in config.seeds for size in config.sizes]
    # finished runs (this shard's and earlier ones'), read back from their run.json
    summaries = {
        r: train_run(config, *r, root) for r in runs if (root / model_name(config.prefix, *r) / "run.json").is_file()
    }
    tok_dir = root / "tokenizer"
    suite_data(config, config.seeds[0])[0].save_pretrained(tok_dir)
    names = {r: model_name(config.prefix, *r) for r in summaries}
    n_params = {
        sz: next(v["n_params"] for (s, _), v in summaries.items() if s == sz) for sz in {s for s, _ in summaries}
    }
    index = {
        "format": INDEX_FORMAT,
        "prefix": config.prefix,
        "description": description or f"mini-suite {key}",
        "sizes": [s.name for s in config.sizes],
        "seeds": list(config.seeds),
        "steps": list(config.checkpoints),
        "size_info": {s.name: {**asdict(s), "n_params": n_params.get(s.name)} for s in config.sizes},
        "files": {names[r]: v["files"] for r, v in summaries.items()},
        "meta": {
            "config_key": key,
            "complete": len(summaries) == len(runs),
            "cpu_seconds": {names[r]: v["cpu_seconds"] for r, v in summaries.items()},
            "final_loss": {names[r]: float(np.mean(v["losses"][-50:])) for r, v in summaries.items()},
        },
    }
    path = root / INDEX_FILE
    tmp = path.with_name(INDEX_FILE + ".tmp")
    tmp.write_text(json.dumps(index, indent=1))
    os.replace(tmp, path)
    return path


def main(argv=None) -> None:
    """``python -m lib.lm.minisuite {build,analyze} --scale {full,tiny} --root DIR [--publish]``."""
    parser = argparse.ArgumentParser(prog="python -m lib.lm.minisuite", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("build", "analyze"))
    parser.add_argument("--scale", choices=sorted(SCALES), default="full")
    parser.add_argument("--root", default=None, help="suite folder (default build/lm/<prefix>suite)")
    parser.add_argument("--sizes", nargs="+", default=None, help="build/analyze only these sizes (default all)")
    parser.add_argument(
        "--seeds", nargs="+", type=int, default=None, help="build/analyze only these seeds (default all)"
    )
    parser.add_argument(
        "--publish",
        action="store_true",
        help="analyze: commit each finished run's result and the checkpoint pair to data/",
    )
    args = parser.parse_args(argv)
    from ..core.env import ROOT

    config = SCALES[args.scale]
    root = Path(args.root) if args.root else ROOT / "build" / "lm" / f"{config.prefix}suite"
    if args.command == "build":
        path = build_suite(config, root, sizes=args.sizes, seeds=args.seeds)
        print(f"suite index: {path}")
    elif isinstance(config.vocab, BPEConfig):
        from .study import StudyConfig
        from .study_results import publish_runs, study_suite
        from .suite import LocalSuite

        suite = LocalSuite(root)
        if args.publish:
            if args.scale != "bpe":
                raise SystemExit("only the BPE suite's analysis is published to data/")
            from .study_report import study_table
            from .study_results import committed_runs, export_study_pair, pair_run

            command = (
                "python -m lib.lm.minisuite build --scale bpe && "
                "python -m lib.lm.minisuite analyze --scale bpe --publish"
            )
            paths = publish_runs(StudyConfig(), suite, command, sizes=args.sizes, seeds=args.seeds)
            committed, results = committed_runs()
            table = study_table(results, committed)
            print(
                f"published {len(paths)} runs of {root}; data/ holds {len(results)} of "
                f"{len(suite.sizes) * len(suite.seeds)}"
            )
            chosen = pair_run(table)
            if chosen is not None and (chosen.key.size, chosen.key.seed) in suite.built:
                files = export_study_pair(suite, table, command)
                print(f"the live pair: {chosen.key.name} steps {chosen.patches['rep'].pair} ({len(files)} files)")
            elif chosen is not None:
                print(f"the live pair's run {chosen.key.name} is not built here: the committed pair is kept")
        else:
            results = study_suite(StudyConfig(), suite, sizes=args.sizes, seeds=args.seeds)
            print(f"analysed {len(results)} runs of {root} (cached per run)")
    else:
        raise SystemExit(
            f"the {args.scale!r} suite is word-level; chapter 5's analysis (lib.lm.study) reads byte-level "
            "BPE suites: analyze --scale bpe (or tiny-bpe)"
        )


if __name__ == "__main__":
    main()
