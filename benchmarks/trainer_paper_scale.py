"""The project's GPT trainers against a plain single-model PyTorch loop, at paper B's linear-map configuration.

Paper B's linear map (S = 16, s = 3; one layer, d_model 128 = 8 heads of 16, MLP 512; 8,192 tokens = 256 sequences
of 32 tokens per step; Adam, lr 1e-3, betas (0.9, 0.98), no weight decay), configured as the committed ``b-heads``
unit of that cell (:func:`paper_config`), trained three ways from the same initial weights on the same batches:

(a) the project's paper-scale trainer, :func:`lib.train.fast_train.run_fast` with bfloat16 weight products (float32
    parameters, Adam, residual stream, attention weights and loss), with the units' held-out evaluation (every 100
    steps, 2,048 tokens: here at the first step and after the last);
(b) the project's reference trainer, :func:`lib.train.run_members` (float32; every committed study was trained with
    it), also with its evaluations; the fast trainer in float32 is checked to follow it to float32 rounding;
(c) the same model written the usual way (nanoGPT style): ``nn.Embedding``, ``nn.LayerNorm``, ``nn.Linear`` layers,
    an explicit causal softmax, ``torch.optim.Adam``, one ``loss.backward()`` per step, float32, no evaluation.

(b) and (c) must end at the same weights to float tolerance (max difference below 1e-4; so must the fast trainer in
float32), (a) at the same held-out output-bit loss as (b) to within 1e-2 (bfloat16's rounding). All run on one thread
and are timed in process CPU time, in interleaved rounds, the fastest round of each counted (the machine may be
shared). Achieved FLOP/s use the analytic count of the model's multiply-adds (forward + backward = 3 x forward),
against this machine's dense matmul rate measured in the same run, in float32 and in bfloat16.

The ratio compares like with like: time(c) / time(fast trainer in float32), both float32, one thread, process CPU
time; above 1 the project's trainer is ahead of the plain loop. The bfloat16 trainer (a) is timed only on a CPU with
bfloat16 dot products in hardware (AVX-512 BF16 or AMX; printed), where its speed-up is printed on a line of its own;
without them bfloat16 runs emulated, many times slower than float32, and is skipped.

Then it profiles both float32 trainers over a few steps and prints where the time goes, by operator family: the
project's trainer computes the LayerNorm affine as a separate stacked ``addcmul`` (per-member gains cannot go into
``F.layer_norm``), the embedding as a ``gather`` (a ``scatter_add`` backward) and evaluates on the held-out batch;
changing any of these changes its float results, and with them the committed paper-scale units.

    python benchmarks/trainer_paper_scale.py [--steps 40] [--rounds 3]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("BOOK_PROGRESS", "0")
from lib.core.env import native_bf16
from lib.models.gpt import init_gpt_params
from lib.studies.width_study import WidthStudyConfig
from lib.train import GPTRunConfig, run_members, task_parts
from lib.train.fast_train import FastRunConfig, run_fast

SEED = 11


def paper_config(steps: int) -> GPTRunConfig:
    """Paper B's linear map as the committed paper-scale studies train it: the ``(H, d_head) = (8, 16)`` cell of
    :meth:`lib.WidthStudyConfig.paper`'s grid (the ``b-heads`` unit of that cell), with this benchmark's seed and
    ``steps``. Its held-out evaluation (every ``eval_every`` = 100 steps, 2,048 tokens) is the units' too: a
    benchmark that evaluated more often would time evaluation the studies do not do."""
    grid = WidthStudyConfig.paper().runs()["grid", 8, 16]
    return replace(grid, members=(replace(grid.members[0], seed=SEED),), steps=steps)


class Block(nn.Module):
    """Pre-LayerNorm block: causal self-attention (explicit softmax), then a GELU MLP."""

    def __init__(self, d: int, n_heads: int, d_mlp: int, L: int):
        super().__init__()
        self.n_heads = n_heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d, bias=False)
        self.fc, self.out = nn.Linear(d, d_mlp), nn.Linear(d_mlp, d)
        self.register_buffer("causal", torch.full((L, L), float("-inf")).triu(1))

    def forward(self, x):
        B, L, d = x.shape
        H, dh = self.n_heads, d // self.n_heads
        q, k, v = self.qkv(self.ln1(x)).view(B, L, 3, H, dh).permute(2, 0, 3, 1, 4)  # 3 x (B, H, L, dh)
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(dh) + self.causal[:L, :L], dim=-1)  # (B, H, L, L)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(B, L, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class PlainGPT(nn.Module):
    """One GPT as a user would write it, loaded from the project's stacked initial parameters (member 0)."""

    def __init__(self, cfg: GPTRunConfig, params: dict):
        super().__init__()
        m = cfg.model()
        d, L = m.width, m.n_ctx
        self.tok, self.pos = nn.Embedding(m.vocab, d), nn.Embedding(L, d)
        self.blocks = nn.ModuleList(Block(d, m.n_heads, m.hidden, L) for _ in range(m.n_layers))
        self.ln_f, self.head = nn.LayerNorm(d), nn.Linear(d, m.vocab)
        p = {k: v[0].detach().float() for k, v in params.items()}
        with torch.no_grad():
            self.tok.weight.copy_(p["tok"])
            self.pos.weight.copy_(p["pos"])
            for i, b in enumerate(self.blocks):
                q = lambda name: p[f"b{i}_{name}"]  # noqa: E731
                b.ln1.weight.copy_(q("ln1_g")), b.ln1.bias.copy_(q("ln1_b"))
                b.ln2.weight.copy_(q("ln2_g")), b.ln2.bias.copy_(q("ln2_b"))
                b.qkv.weight.copy_(q("w_qkv").T), b.proj.weight.copy_(q("w_o").T)  # nn.Linear stores (out, in)
                b.fc.weight.copy_(q("w_in").T), b.fc.bias.copy_(q("b_in"))
                b.out.weight.copy_(q("w_out").T), b.out.bias.copy_(q("b_out"))
            self.ln_f.weight.copy_(p["lnf_g"]), self.ln_f.bias.copy_(p["lnf_b"])
            self.head.weight.copy_(p["w_u"].T), self.head.bias.copy_(p["b_u"])

    def forward(self, tokens):
        x = self.tok(tokens) + self.pos.weight[: tokens.shape[1]]
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln_f(x))


def plain_loop(cfg: GPTRunConfig) -> tuple[np.ndarray, PlainGPT]:
    """Train :class:`PlainGPT` on the project's batches; the training loss of every step, and the trained model."""
    member = cfg.members[0]
    model = PlainGPT(cfg, init_gpt_params(cfg.model(), [member.seed]))
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, betas=cfg.betas, eps=1e-8)
    sample, gen = task_parts(member.task).sample, torch.Generator().manual_seed(10_007 * member.seed + 1)
    losses = []
    for _ in range(cfg.steps):
        tokens = sample(cfg.batch, gen)  # (B, L + 1), the project's stream
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses), model


def forward_flops(cfg: GPTRunConfig) -> float:
    """Multiply-adds x 2 of one forward pass over a step's batch (matmuls only: projections, scores, mixing, MLP,
    unembedding)."""
    m = cfg.model()
    d, L, B = m.width, cfg.seq_len - 1, cfg.batch
    per_token = m.n_layers * (3 * d * d + d * d + 2 * d * m.hidden) + d * m.vocab
    attention = m.n_layers * 2 * L * L * d  # scores and mixing, all heads
    return 2.0 * B * (L * per_token + attention)


def matmul_rate(dtype=torch.float32, n: int = 1024, reps: int = 20) -> float:
    """Dense matmul FLOP/s of this machine on one thread, inputs in ``dtype``."""
    a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
    a @ b
    t0 = time.process_time()
    for _ in range(reps):
        a @ b
    return 2.0 * n**3 * reps / (time.process_time() - t0)


#: Operator families of the time breakdown (aten names; the rest is "other").
FAMILIES = {
    "matrix products": ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"),
    "layer norm and its affine": ("aten::native_layer_norm", "aten::native_layer_norm_backward", "aten::addcmul"),
    "embedding": ("aten::gather", "aten::scatter_add_", "aten::embedding_dense_backward", "aten::index_select"),
    "softmax": ("aten::_softmax", "aten::_softmax_backward_data"),
    "GELU": ("aten::gelu", "aten::gelu_backward"),
    "copies and layout": ("aten::copy_", "aten::cat", "aten::clone"),
    "reductions (sum)": ("aten::sum",),
}


def breakdown(train, steps: int) -> dict[str, float]:
    """Milliseconds per step of ``train()`` (which runs ``steps`` steps) by operator family (self CPU time)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        train()
    out = dict.fromkeys([*FAMILIES, "other"], 0.0)
    for ev in prof.key_averages():
        family = next((f for f, names in FAMILIES.items() if ev.key in names), "other")
        out[family] += ev.self_cpu_time_total / 1e3 / steps  # microseconds -> ms per step
    return out


def timed(f):
    t0 = time.process_time()
    out = f()
    return out, time.process_time() - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    cfg = paper_config(args.steps)
    native = native_bf16()
    for precision in ("bf16", "fp32") if native else ("fp32",):  # warm-up (allocator, lazy imports, kernels)
        run_fast(FastRunConfig(paper_config(2), precision))
    run_members(paper_config(2)), plain_loop(paper_config(2))
    out = {}

    methods = {
        "fast trainer, bf16": (lambda: run_fast(FastRunConfig(cfg, "bf16"))) if native else None,
        "fast trainer, fp32": lambda: run_fast(FastRunConfig(cfg, "fp32")),
        "reference trainer": lambda: run_members(cfg),
        "plain loop": lambda: plain_loop(cfg),
    }
    times = {name: [] for name in methods}
    for _ in range(args.rounds):  # interleaved rounds; the fastest of each method (the least disturbed)
        for name, f in methods.items():
            if f is None:  # bfloat16 without hardware support: not timed
                out[name], t = None, math.nan
                times[name].append(t)
                continue
            result, t = timed(f)
            times[name].append(t)
            out[name] = result
    fast, fast32, reference, (plain, plain_model) = (out[name] for name in methods)
    t_fast, t_fast32, t_ref, t_plain = (min(times[name]) for name in methods)
    drift32 = max(float(np.abs(reference.params[k] - fast32.params[k]).max()) for k in reference.params)
    # The plain model's weights after the run against the reference run's, in the plain model's layout.
    as_plain = PlainGPT(cfg, {k: torch.from_numpy(v) for k, v in reference.params.items()}).state_dict()
    drift_plain = max(float((v - as_plain[k]).abs().max()) for k, v in plain_model.state_dict().items())
    # The held-out output-bit loss the trainers record at the end (the same evaluation batch).
    diff16 = float(abs(fast.pred_loss[-1, 0] - reference.pred_loss[-1, 0])) if native else math.nan
    assert drift_plain < 1e-4, (
        f"the reference trainer and the plain loop do not learn the same thing: {drift_plain:.2e}"
    )
    assert drift32 < 1e-4, f"the fast trainer in float32 strays from the reference: {drift32:.2e}"
    assert not native or diff16 < 1e-2, (
        f"the bfloat16 trainer strays from the reference: |held-out loss difference| {diff16:.2e}"
    )
    peak32, flops = matmul_rate(), 3 * forward_flops(cfg) * args.steps
    peak16 = matmul_rate(torch.bfloat16) if native else math.nan
    print(f"CPU capability {torch.backends.cpu.get_cpu_capability()}, bfloat16 dot products in hardware: {native}")
    print(f"dense matmul on one thread: float32 {peak32 / 1e9:.1f} GFLOP/s, bfloat16 {peak16 / 1e9:.1f} GFLOP/s")
    rows = (
        *((("fast trainer, bf16", t_fast, peak16),) if native else ()),
        ("fast trainer, fp32", t_fast32, peak32),
        ("reference trainer", t_ref, peak32),
        ("plain loop", t_plain, peak32),
    )
    for name, t, peak in rows:
        rate = flops / t
        print(
            f"{name:>18}: {1e3 * t / args.steps:6.1f} ms/step, {rate / 1e9:5.1f} GFLOP/s = {rate / peak:.0%} of its dense matmul"
        )
    print(
        f"after {args.steps} steps, max |weight difference| against the reference trainer: plain loop "
        f"{drift_plain:.1e}, fast fp32 {drift32:.1e}; |held-out output-bit loss difference| bf16 {diff16:.1e} "
        f"(at {reference.pred_loss[-1, 0]:.4f})"
    )
    n = min(args.steps, 20)
    where = {
        "fast trainer, fp32": breakdown(lambda: run_fast(FastRunConfig(paper_config(n), "fp32")), n),
        "plain loop": breakdown(lambda: plain_loop(paper_config(n)), n),
    }
    print(f"where the time goes ({n} steps under the profiler; ms/step of self CPU time, fast fp32 / plain loop):")
    for family in where["plain loop"]:
        a, b = where["fast trainer, fp32"][family], where["plain loop"][family]
        print(f"  {family:>26}: {a:6.1f} / {b:6.1f}  ({a - b:+.1f})")
    print(f"plain / reference trainer (float32): {t_plain / t_ref:.2f}")
    print(
        f"plain float32 / fast bfloat16: {t_plain / t_fast:.2f}"
        if native
        else "fast bfloat16: not timed (no bfloat16 dot products in hardware: it would run emulated)"
    )
    print(f"ratio={t_plain / t_fast32:.2f}")  # plain loop / fast trainer, both float32


if __name__ == "__main__":
    main()
