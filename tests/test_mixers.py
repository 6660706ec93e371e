"""lib.models.mixers: every token mixer is causal, its forms agree, its shapes and parameter counts are right, it
learns a trivial copy task, it rejects bad inputs; the unmasked mixer reads the answer and the causal one cannot."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from lib.models import GPT, GPTConfig, capture, gpt_forward, init_gpt_params
from lib.models.gpt import hook_names
from lib.models.mixers import ARCHITECTURES, MIXERS, get_mixer
from lib.models.mixers.common import causal_conv, token_shift
from lib.models.mixers.deltanet import delta_rule
from lib.models.mixers.linear_rnn import lru_states
from lib.models.mixers.mamba import selective_scan
from lib.models.mixers.mlstm import mlstm_cell
from lib.models.mixers.rwkv import wkv

f64 = torch.float64
OTHERS = tuple(a for a in ARCHITECTURES if a != "attention")
TWO_FORMS = tuple(n for n, s in MIXERS.items() if "recurrent" in s.forms)


def config(mixer, **kw):
    base = {
        "vocab": 3,
        "n_ctx": 12,
        "n_heads": 2,
        "d_head": 4,
        "n_layers": 2,
        "init_std": 0.3,
        "mixer": mixer,
        "d_state": 4,
    }
    base.update(kw)
    return GPTConfig(**base)


def test_registry():
    assert set(ARCHITECTURES) <= set(MIXERS) and "mlp_mixer_unmasked" in MIXERS
    assert len(ARCHITECTURES) == 7 and ARCHITECTURES[0] == "attention"
    assert all(MIXERS[n].causal for n in ARCHITECTURES) and not MIXERS["mlp_mixer_unmasked"].causal
    assert TWO_FORMS == ("mamba", "deltanet", "rwkv", "mlstm", "linear_rnn")


@pytest.mark.parametrize("mixer", ARCHITECTURES)
@pytest.mark.parametrize("L", [7, 12])
def test_causal_no_position_sees_the_future(mixer, L):
    cfg = config(mixer)
    params = init_gpt_params(cfg, (0, 1), dtype=f64)
    gen = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, 3, (2, 3, L), generator=gen)
    base = gpt_forward(params, tokens, cfg)
    for p in range(1, L):
        changed = tokens.clone()
        changed[..., p] = (changed[..., p] + 1) % 3  # one future token
        out = gpt_forward(params, changed, cfg)
        assert torch.allclose(out[:, :, :p], base[:, :, :p], atol=1e-12, rtol=0), (
            f"{mixer}: position < {p} saw the future"
        )
        assert not torch.allclose(out[:, :, p], base[:, :, p]), f"{mixer}: position {p} ignores its own token"


@pytest.mark.parametrize("mixer", TWO_FORMS)
def test_causal_in_the_recurrent_form_too(mixer):
    cfg = config(mixer)
    params = init_gpt_params(cfg, (3,), dtype=f64)
    tokens = torch.randint(0, 3, (1, 2, 9), generator=torch.Generator().manual_seed(1))
    changed = tokens.clone()
    changed[..., 5:] = (changed[..., 5:] + 1) % 3
    a, b = (gpt_forward(params, t, cfg, mode="recurrent") for t in (tokens, changed))
    assert torch.equal(a[:, :, :5], b[:, :, :5])


def test_unmasked_control_sees_the_future():
    cfg = config("mlp_mixer_unmasked")
    params = init_gpt_params(cfg, (0,), dtype=f64)
    tokens = torch.randint(0, 3, (1, 2, 12), generator=torch.Generator().manual_seed(0))
    changed = tokens.clone()
    changed[..., -1] = (changed[..., -1] + 1) % 3
    out, base = gpt_forward(params, changed, cfg), gpt_forward(params, tokens, cfg)
    assert (out[:, :, 0] - base[:, :, 0]).abs().max() > 1e-3  # the first position reads the last token


def test_an_unmasked_mixer_learns_coin_flips_a_causal_one_cannot():
    """Trained on a linear map whose input bits are independent coin flips, an unmasked MLP-Mixer reads them and goes
    to zero loss on them; the causal one stays at ln 2 (chapter 7's demonstration, a property of the code rather
    than a claim of either paper)."""
    import numpy as np

    import lib

    task = lib.LinearMapTask(8, 4, seed=0, distinct=True)
    run = dict(
        members=tuple(lib.Member(task, seed=k) for k in range(2)),
        n_heads=8,
        d_head=4,
        tokens_per_step=512,
        steps=150,
        lr=3e-3,
        eval_every=25,
        eval_tokens=2048,
    )
    leak, causal = (lib.train_gpt(lib.GPTRunConfig(**run, mixer=m)) for m in ("mlp_mixer_unmasked", "mlp_mixer"))
    ln2 = math.log(2)
    assert np.all(lib.input_bit_loss(leak.loss, leak.pred_loss, task.S)[-1] < 0.1 * ln2)
    assert np.all(np.abs(lib.input_bit_loss(causal.loss, causal.pred_loss, task.S)[-1] - ln2) < 0.05 * ln2)


@pytest.mark.parametrize("mixer", TWO_FORMS)
def test_recurrent_form_equals_parallel_form_with_gradients(mixer):
    cfg = config(mixer, n_ctx=20, init_std=0.5)
    params = {k: v.requires_grad_(True) for k, v in init_gpt_params(cfg, (0, 1), dtype=f64).items()}
    tokens = torch.randint(0, 3, (2, 3, 19), generator=torch.Generator().manual_seed(2))  # 19: not a power of 2
    par = gpt_forward(params, tokens, cfg, mode="parallel")
    rec = gpt_forward(params, tokens, cfg, mode="recurrent")
    assert torch.allclose(par, rec, atol=1e-10, rtol=1e-8)
    weight = torch.randn(par.shape, dtype=f64, generator=torch.Generator().manual_seed(3))
    g_par = torch.autograd.grad((par * weight).sum(), list(params.values()))
    g_rec = torch.autograd.grad((rec * weight).sum(), list(params.values()))
    for name, a, b in zip(params, g_par, g_rec):
        assert torch.allclose(a, b, atol=1e-9, rtol=1e-7), name


def test_kernels_against_their_definitions():
    gen = torch.Generator().manual_seed(0)
    E, B, H, L, dk, dv = 2, 3, 2, 11, 4, 3
    # selective scan: s_t = a_t s_{t-1} + b_t
    a, b = torch.rand(E, B, L, 5, generator=gen, dtype=f64), torch.randn(E, B, L, 5, generator=gen, dtype=f64)
    s, ref = selective_scan(a, b), torch.zeros(E, B, 5, dtype=f64)
    for t in range(L):
        ref = a[:, :, t] * ref + b[:, :, t]
        assert torch.allclose(s[:, :, t], ref)
    # gated delta rule, literally: S_t = alpha_t S_{t-1} (I - beta_t k_t k_t^T) + beta_t v_t k_t^T, o_t = S_t q_t
    q = F.normalize(torch.randn(E, B, H, L, dk, generator=gen, dtype=f64), dim=-1)
    k = F.normalize(torch.randn(E, B, H, L, dk, generator=gen, dtype=f64), dim=-1)
    v = torch.randn(E, B, H, L, dv, generator=gen, dtype=f64)
    log_alpha = -torch.rand(E, B, H, L, generator=gen, dtype=f64)
    beta = torch.rand(E, B, H, L, generator=gen, dtype=f64)
    o = delta_rule(q, k, v, log_alpha, beta)
    S = torch.zeros(E, B, H, dv, dk, dtype=f64)
    eye = torch.eye(dk, dtype=f64)
    for t in range(L):
        kt = k[..., t, :]
        bt = beta[..., t, None, None]
        S = log_alpha[..., t, None, None].exp() * S @ (eye - bt * kt[..., :, None] * kt[..., None, :])
        S = S + bt * v[..., t, :, None] * kt[..., None, :]
        assert torch.allclose(o[..., t, :], (S @ q[..., t, :, None])[..., 0], atol=1e-12)
    # mLSTM without stabiliser: C_t = f C + i v k^T, n_t = f n + i k, h = C q / max(|n.q|, 1)
    i_pre, f_pre = torch.randn(E, B, H, L, generator=gen, dtype=f64), torch.randn(E, B, H, L, generator=gen, dtype=f64)
    h = mlstm_cell(q, k, v, i_pre, f_pre)
    C, n = torch.zeros(E, B, H, dv, dk, dtype=f64), torch.zeros(E, B, H, dk, dtype=f64)
    for t in range(L):
        f, i = torch.sigmoid(f_pre[..., t])[..., None], i_pre[..., t].exp()[..., None]
        C = f[..., None] * C + i[..., None] * v[..., t, :, None] * k[..., t, None, :]
        n = f * n + i * k[..., t, :]
        den = (n * q[..., t, :]).sum(-1, keepdim=True).abs().clamp_min(1.0)
        assert torch.allclose(h[..., t, :], (C @ q[..., t, :, None])[..., 0] / den, atol=1e-10)
    # WKV: a decaying softmax average with a bonus for the current token
    kk, vv = torch.randn(E, B, L, 5, generator=gen, dtype=f64), torch.randn(E, B, L, 5, generator=gen, dtype=f64)
    w, u = torch.rand(E, 5, generator=gen, dtype=f64), torch.randn(E, 5, generator=gen, dtype=f64)
    out = wkv(kk, vv, w, u)
    for t in range(L):
        logit = torch.stack(
            [-(t - 1 - s) * w[:, None] + kk[:, :, s] if s < t else u[:, None] + kk[:, :, t] for s in range(t + 1)], -1
        )
        ref = (logit.softmax(-1) * vv[:, :, : t + 1].transpose(2, 3)).sum(-1)
        assert torch.allclose(out[:, :, t], ref, atol=1e-12)
    # LRU: s_t = lambda s_{t-1} + u_t in complex numbers
    u_re, u_im = torch.randn(E, B, L, 3, generator=gen, dtype=f64), torch.randn(E, B, L, 3, generator=gen, dtype=f64)
    nu, theta = torch.randn(E, 3, generator=gen, dtype=f64), torch.randn(E, 3, generator=gen, dtype=f64)
    s_re, s_im = lru_states(u_re, u_im, nu, theta)
    lam = torch.exp(-nu.exp() + 1j * theta.exp())[:, None]
    ref = torch.zeros(E, B, 3, dtype=torch.complex128)
    for t in range(L):
        ref = lam * ref + torch.complex(u_re[:, :, t], u_im[:, :, t])
        assert torch.allclose(s_re[:, :, t], ref.real) and torch.allclose(s_im[:, :, t], ref.imag)


def test_conv_and_shift_are_causal():
    x = torch.arange(1.0, 6.0)[None, None, :, None].expand(1, 1, 5, 2)  # (1, 1, 5, 2)
    assert torch.equal(token_shift(x)[0, 0, :, 0], torch.tensor([0.0, 1, 2, 3, 4]))
    w = torch.tensor([[[1.0, 10.0, 100.0]]]).expand(1, 2, 3)  # y_t = x_{t-2} + 10 x_{t-1} + 100 x_t
    assert torch.equal(causal_conv(x, w)[0, 0, :, 1], torch.tensor([100.0, 210, 321, 432, 543]))


def expected_mixer_params(mixer, d, H, dh, n, N, m):
    """Token-mixer (and channel-mixer) parameters of one block, counted by hand."""
    a = H * dh
    mlp = d * m + m + m * d + d
    if mixer == "attention":
        return d * 3 * a + a * d + mlp
    if mixer in ("mlp_mixer", "mlp_mixer_unmasked"):
        return 4 * n * n + 4 * n + n * 4 * n + n + mlp
    if mixer == "mamba":
        di, R = 2 * d, math.ceil(d / 16)
        return d * 2 * di + di * 4 + di + di * (R + 2 * N) + R * di + di + di * N + di + di * d + mlp
    if mixer == "deltanet":
        return d * 3 * a + 3 * a * 4 + d * 2 * H + 2 * H + d * a + dh + a * d + mlp
    if mixer == "rwkv":
        return 5 * d + 4 * d * d + 2 * d + d * m + m * d + d * d  # time mix + channel mix (no MLP)
    if mixer == "mlstm":
        return d * 4 + d + d * 2 * a + d * a + d * 2 * H + 2 * H + d * a + dh + a * d + mlp
    if mixer == "linear_rnn":
        return 2 * N + 4 * d * N + d + mlp
    raise AssertionError(mixer)


@pytest.mark.parametrize("mixer", list(MIXERS))
def test_shapes_and_parameter_counts(mixer):
    d, H, dh, n, N, m, V, layers = 16, 2, 8, 10, 4, 40, 5, 2
    cfg = GPTConfig(vocab=V, n_ctx=n, n_heads=H, d_head=dh, n_layers=layers, d_mlp=m, mixer=mixer, d_state=N)
    params = init_gpt_params(cfg, (0, 1, 2))
    assert {k: tuple(v.shape[1:]) for k, v in params.items()} == cfg.shapes()
    assert all(v.shape[0] == 3 and v.dtype == torch.float32 for v in params.values())
    shared = V * d + n * d + 2 * d + d * V + V  # embeddings, positions, final LayerNorm, unembedding
    per_layer = 4 * d + expected_mixer_params(mixer, d, H, dh, n, N, m)  # two LayerNorms + mixers
    assert cfg.n_params == shared + layers * per_layer
    assert sum(v[0].numel() for v in params.values()) == cfg.n_params
    model = GPT(cfg, seeds=(0, 1, 2))
    with capture(model) as cache:
        logits = model(torch.randint(0, V, (3, 4, 7)))  # shorter than n_ctx
    assert logits.shape == (3, 4, 7, V) and torch.isfinite(logits).all()
    if mixer == "attention":
        assert cache["blocks.1.attn.hook_pattern"].shape == (3, 4, H, 7, 7)
    else:
        assert list(cache) == list(hook_names(cfg)) and not any("attn" in n for n in cache)
        assert cache["blocks.0.hook_mixer_out"].shape == (3, 4, 7, d)
        assert torch.allclose(
            cache["blocks.0.hook_resid_pre"] + cache["blocks.0.hook_mixer_out"],
            cache["blocks.0.hook_resid_mid"],
            atol=1e-6,
        )


@pytest.mark.parametrize("mixer", OTHERS)
def test_stack_equals_loop_and_init_is_seeded(mixer):
    cfg = config(mixer)
    tokens = torch.randint(0, 3, (3, 4, 12), generator=torch.Generator().manual_seed(5))
    stacked = gpt_forward(init_gpt_params(cfg, (3, 7, 11)), tokens, cfg)
    for e, seed in enumerate((3, 7, 11)):
        single = gpt_forward(init_gpt_params(cfg, (seed,)), tokens[e : e + 1], cfg)
        assert torch.allclose(stacked[e], single[0], atol=1e-5)
    a, b = init_gpt_params(cfg, (5,)), init_gpt_params(cfg, (5,))
    assert all(torch.equal(a[k], b[k]) for k in a)


def copy_batch(n, gen, half=6, vocab=4):
    """A trivial copy task: ``half`` random tokens, then the same tokens again (position i+half copies i)."""
    x = torch.randint(0, vocab, (n, half), generator=gen)
    return torch.cat([x, x], 1)


def train_copy(mixer, steps, lr=1e-2, seeds=(0,), return_model=False):
    """Train one model per seed on the copy task, stacked (members are independent: the loss is the sum of
    theirs and Adam is elementwise); the held-out loss on the copied half per member, ``(len(seeds),)``."""
    cfg = GPTConfig(vocab=4, n_ctx=11, n_heads=4, d_head=8, mixer=mixer, d_state=8)
    params = {k: v.requires_grad_(True) for k, v in init_gpt_params(cfg, seeds).items()}
    opt = torch.optim.Adam(list(params.values()), lr=lr, betas=(0.9, 0.98))
    gens = [torch.Generator().manual_seed(k) for k in seeds]
    for _ in range(steps):
        x = torch.stack([copy_batch(32, g) for g in gens])  # (E, 32, 12)
        logits = gpt_forward(params, x[..., :-1], cfg)  # (E, 32, 11, 4)
        loss = F.cross_entropy(logits.reshape(-1, 4), x[..., 1:].reshape(-1), reduction="none")
        opt.zero_grad()
        loss.view(len(seeds), -1).mean(1).sum().backward()
        opt.step()
    x = copy_batch(512, torch.Generator().manual_seed(99))
    with torch.no_grad():
        logits = gpt_forward(params, x.expand(len(seeds), -1, -1)[..., :-1], cfg)  # (E, 512, 11, 4)
    target = x[:, 6:].expand(len(seeds), -1, -1)  # the copied half
    loss = F.cross_entropy(logits[:, :, 5:].reshape(-1, 4), target.reshape(-1), reduction="none")
    loss = loss.view(len(seeds), -1).mean(1)
    return (loss, {k: v.detach() for k, v in params.items()}, cfg) if return_model else loss


LEARN_SEEDS = tuple(range(8))


@pytest.mark.parametrize("mixer", ARCHITECTURES)
def test_learns_a_trivial_copy_task(mixer):
    """Learning is a property of the seed distribution, not of one seed (on one CPU's float kernels): of eight seeds,
    the median ends below a tenth of chance and a majority does. Which seeds learn depends on the kernels: Mamba at
    600 steps solves 12 of seeds 0-11 natively on AVX-512 but 10 under ATEN_CPU_CAPABILITY=default (seeds 1 and 4
    stay near 0.3), so "at most one of five fails" failed there; a broken mixer solves none."""
    loss = train_copy(mixer, steps=600, seeds=LEARN_SEEDS)
    solved = loss < 0.1 * math.log(4)
    assert float(loss.median()) < 0.1 * math.log(4) and int(solved.sum()) > len(LEARN_SEEDS) // 2, loss


def test_a_stacked_seed_trains_as_it_does_alone():
    stacked = train_copy("attention", steps=20, seeds=(3, 4))
    alone = train_copy("attention", steps=20, seeds=(4,))
    assert torch.allclose(stacked[1], alone[0], atol=1e-5)


def train_on_noise(mixer, steps=150):
    """Every token a fresh coin flip: nothing is predictable from the past, so a causal model stays at ln 2."""
    cfg = GPTConfig(vocab=2, n_ctx=15, n_heads=4, d_head=8, mixer=mixer)
    params = {k: v.requires_grad_(True) for k, v in init_gpt_params(cfg, (0,)).items()}
    opt = torch.optim.Adam(list(params.values()), lr=3e-3, betas=(0.9, 0.98))
    gen = torch.Generator().manual_seed(0)
    for _ in range(steps):
        x = torch.randint(0, 2, (1, 32, 16), generator=gen)
        loss = F.cross_entropy(gpt_forward(params, x[..., :-1], cfg).reshape(-1, 2), x[..., 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    x = torch.randint(0, 2, (1, 512, 16), generator=torch.Generator().manual_seed(9))
    with torch.no_grad():
        return float(F.cross_entropy(gpt_forward(params, x[..., :-1], cfg).reshape(-1, 2), x[..., 1:].reshape(-1)))


def test_unmasked_mixer_reads_the_answer_and_the_causal_one_cannot():
    assert train_on_noise("mlp_mixer_unmasked") < 0.2  # it "predicts" coin flips: it reads them
    assert train_on_noise("mlp_mixer") > 0.98 * math.log(2)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: GPTConfig(vocab=2, n_ctx=4, mixer="transformer"), "mixer"),
        (lambda: get_mixer("mamba2"), "mixer"),
        (lambda: GPTConfig(vocab=2, n_ctx=4, n_heads=3, d_model=16, mixer="deltanet"), "d_model"),
        (lambda: GPTConfig(vocab=2, n_ctx=4, n_heads=3, d_model=16), "d_model"),
        (lambda: GPTConfig(vocab=2, n_ctx=4, d_state=0, mixer="mamba"), "d_state"),
        (lambda: GPTConfig(vocab=2, n_ctx=4, n_heads=0, mixer="mlstm"), "n_heads"),
        (lambda: GPTConfig(vocab=2, n_ctx=0, mixer="mlp_mixer"), "n_ctx"),
        (lambda: GPTConfig(vocab=2, n_ctx=4, d_head=-1, mixer="rwkv"), "d_head"),
        (lambda: GPTConfig(vocab=2, n_ctx=4, d_mlp=0, mixer="linear_rnn"), "d_mlp"),
        (
            lambda: gpt_forward(
                init_gpt_params(config("mlp_mixer"), (0,)),
                torch.zeros(1, 2, 5, dtype=torch.long),
                config("mlp_mixer"),
                mode="recurrent",
            ),
            "mode",
        ),
        (
            lambda: gpt_forward(
                init_gpt_params(config("attention"), (0,)),
                torch.zeros(1, 2, 5, dtype=torch.long),
                config("attention"),
                mode="recurrent",
            ),
            "mode",
        ),
        (
            lambda: gpt_forward(
                init_gpt_params(config("mamba"), (0,)),
                torch.zeros(1, 2, 5, dtype=torch.long),
                config("mamba"),
                bias=torch.ones(5, 5),
            ),
            "bias",
        ),
    ],
)
def test_bad_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("mixer", ["attention", "mamba", "mlp_mixer_unmasked"])
def test_input_attribution(mixer):
    from lib.models import input_attribution

    cfg = config(mixer, vocab=2)
    params = init_gpt_params(cfg, (0, 1))
    tokens = torch.randint(0, 2, (6, 13), generator=torch.Generator().manual_seed(0))
    att = input_attribution(params, cfg, tokens, torch.tensor([0, 4, 11]))
    assert att.shape == (2, 3, 12) and torch.allclose(att.sum(-1), torch.ones(2, 3))
    future = att[:, 1, 5:].abs().max()
    assert (future > 1e-3) if mixer == "mlp_mixer_unmasked" else (future == 0)
    with pytest.raises(ValueError, match="queries"):
        input_attribution(params, cfg, tokens, torch.tensor([12]))


def test_input_sensitivity_finds_the_keys_of_a_known_function():
    from lib.models import input_sensitivity

    cfg = config("mamba", vocab=2)
    params = init_gpt_params(cfg, (0, 1))
    tokens = torch.randint(0, 2, (32, 13), generator=torch.Generator().manual_seed(0))
    sens = input_sensitivity(params, cfg, tokens, torch.tensor([3, 11]))
    assert sens.shape == (2, 2, 12) and float(sens[:, 0, 4:].abs().max()) == 0.0 and float(sens.min()) >= 0  # causal
    assert float(sens[:, 0, :4].max()) > 0
    with pytest.raises(ValueError, match="queries"):
        input_sensitivity(params, cfg, tokens, torch.tensor([12]))
    # a model trained on the copy task: the query predicting token 6+i depends on position i (and nothing else)
    loss, trained, copy_cfg = train_copy("mlp_mixer", steps=300, seeds=(0, 1, 2), return_model=True)
    best = int(loss.argmin())  # a learned model (the sensitivity map is the point here, not how often it learns)
    assert float(loss[best]) < 0.1 * math.log(4), loss
    x = copy_batch(256, torch.Generator().manual_seed(5))
    sens = input_sensitivity({k: v[best : best + 1] for k, v in trained.items()}, copy_cfg, x, torch.arange(5, 11))[0]
    assert torch.allclose(sens.diagonal(), torch.ones(6), atol=0.05)  # key i for the query that predicts 6+i
    assert float(sens.fill_diagonal_(0).max()) < 0.05
