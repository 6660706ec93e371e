"""Parallel vs recurrent form of each token mixer that has both, at chapter 7's sizes (forward + backward).

Each recurrent mixer of ``lib.models.mixers`` runs either all positions at once (a scan, a triangular solve, a
masked matrix: ``"parallel"``) or as a Python loop over positions (``"recurrent"``). On a CPU with one thread the
loop's per-step overhead competes with the parallel form's extra arithmetic (an ``L x L`` or ``L x L x state``
intermediate), so which is faster depends on the mixer and the length; :meth:`MixerSpec.default_form` picks the
recurrent form for Mamba and RWKV up to ``SHORT`` positions and the parallel one otherwise. This benchmark times
both forms of every such mixer on one stacked training step of chapter 7 (9 members, 512 tokens per member,
d_model 32), checks that they give the same logits and gradients, and prints per mixer the ratio
time(slower form) / time(default form) -- above 1 means the default is the right choice.

The last line, ``ratio=``, is the geometric mean over mixers and lengths of time(other form) / time(default form).
Measured here (torch 2.13, one thread, shared 2-core machine): the recurrent default is 1.6-2.2x (Mamba) and
2.8-4.0x (RWKV) faster than their parallel forms; for Gated DeltaNet, the mLSTM and the LRU the two forms are within
±12% (0.92-1.22); ratio=1.51. The forms agree to 2e-7 in logits and gradients.

    python benchmarks/mixer_forms.py [--members 9] [--tokens 512] [--repeats 5]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib.models import GPTConfig, gpt_forward, init_gpt_params
from lib.models.mixers import MIXERS


def step_time(params, tokens, cfg, mode: str, repeats: int) -> tuple[float, torch.Tensor, dict]:
    """Best-of-``repeats`` CPU time of one forward + backward pass; the logits and gradients of the last pass."""
    best = math.inf
    for _ in range(repeats):
        for p in params.values():
            p.grad = None
        t0 = time.process_time()
        logits = gpt_forward(params, tokens, cfg, mode=mode)
        logits.square().mean().backward()
        best = min(best, time.process_time() - t0)
    return best, logits.detach(), {k: p.grad.clone() for k, p in params.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--members", type=int, default=9)
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    ratios = []
    for L in (15, 31):  # chapter 7: the linear map (S = 8) and the automaton (S = 8, T = 4), minus the last token
        for name, spec in MIXERS.items():
            if len(spec.forms) < 2:
                continue
            cfg = GPTConfig(vocab=2, n_ctx=L, n_heads=8, d_head=4, mixer=name, d_state=8)
            params = {k: v.requires_grad_() for k, v in init_gpt_params(cfg, tuple(range(args.members))).items()}
            B = max(1, args.tokens // (L + 1))
            tokens = torch.randint(0, 2, (args.members, B, L), generator=torch.Generator().manual_seed(0))
            default = spec.default_form(L)
            other = next(f for f in spec.forms if f != default)
            gpt_forward(params, tokens, cfg, mode=default)  # warm-up
            t_def, y_def, g_def = step_time(params, tokens, cfg, default, args.repeats)
            t_oth, y_oth, g_oth = step_time(params, tokens, cfg, other, args.repeats)
            diff = max(float((y_def - y_oth).abs().max()), max(float((g_def[k] - g_oth[k]).abs().max()) for k in g_def))
            assert diff < 1e-3, f"{name}: the two forms differ by {diff:.1e}"
            ratios.append(t_oth / t_def)
            print(
                f"L={L:2d} {name:11s} default {default:9s} {1e3 * t_def:7.1f} ms   {other:9s} {1e3 * t_oth:7.1f} ms   "
                f"other/default {t_oth / t_def:5.2f}   max |difference| {diff:.1e}"
            )
    print(f"ratio={math.exp(sum(map(math.log, ratios)) / len(ratios)):.2f}")


if __name__ == "__main__":
    main()
