"""lib.models.gpt: causal, explicit attention behind hook points, the bias, stacking = looping, bad inputs."""

from __future__ import annotations

import pytest
import torch

from lib.models import (
    GPT,
    GPTConfig,
    capture,
    causal_bias,
    gpt_forward,
    init_gpt_params,
)
from lib.models.gpt import hook_names, softmax
from lib.models.hooks import Recorder
from lib.tasks import LinearMapTask, linear_map_batch, linear_map_mask, sample_map


def small(**kw):
    base = {"vocab": 3, "n_ctx": 12, "n_heads": 4, "d_head": 4, "n_layers": 2, "init_std": 0.3}
    base.update(kw)
    return GPTConfig(**base)


def test_shapes_and_hook_points():
    cfg = small()
    model = GPT(cfg, seeds=(0, 1, 2))
    tokens = torch.randint(0, 3, (3, 5, 12))
    with capture(model) as cache:
        logits = model(tokens)
    assert logits.shape == (3, 5, 12, 3)
    assert list(cache) == list(hook_names(cfg))  # every TransformerLens-style point, in the order of the forward
    assert {n.split(".")[-1] for n in cache} == {
        "hook_embed",
        "hook_pos_embed",
        "hook_resid_pre",
        "hook_q",
        "hook_k",
        "hook_v",
        "hook_attn_scores",
        "hook_pattern",
        "hook_z",
        "hook_attn_out",
        "hook_resid_mid",
        "hook_mlp_out",
        "hook_resid_post",
    }
    E, B, L, H, dh, d = 3, 5, 12, 4, 4, cfg.width
    assert cache["blocks.1.attn.hook_pattern"].shape == (E, B, H, L, L)
    for name in ("hook_q", "hook_k", "hook_v", "hook_z"):
        assert cache[f"blocks.0.attn.{name}"].shape == (E, B, H, L, dh)
    for name in ("hook_resid_pre", "hook_attn_out", "hook_resid_mid", "hook_mlp_out", "hook_resid_post"):
        assert cache[f"blocks.1.{name}"].shape == (E, B, L, d)
    assert cache["hook_embed"].shape == (E, B, L, d) and cache["hook_pos_embed"].shape == (E, L, d)
    with capture(model, ("hook_pattern",)) as only:
        model(tokens)
    assert set(only) == {"blocks.0.attn.hook_pattern", "blocks.1.attn.hook_pattern"}


def test_the_residual_stream_adds_up():
    """resid_pre + attn_out = resid_mid, resid_mid + mlp_out = resid_post = next resid_pre; z = pattern v."""
    cfg = small()
    model = GPT(cfg, seeds=(0, 1))
    with capture(model) as c:
        model(torch.randint(0, 3, (2, 3, 12)))
    assert torch.allclose(c["hook_embed"] + c["hook_pos_embed"][:, None], c["blocks.0.hook_resid_pre"])
    for l in range(2):
        b = f"blocks.{l}."
        assert torch.allclose(c[b + "hook_resid_pre"] + c[b + "hook_attn_out"], c[b + "hook_resid_mid"], atol=1e-6)
        assert torch.allclose(c[b + "hook_resid_mid"] + c[b + "hook_mlp_out"], c[b + "hook_resid_post"], atol=1e-6)
        assert torch.allclose(c[b + "attn.hook_pattern"] @ c[b + "attn.hook_v"], c[b + "attn.hook_z"], atol=1e-6)
    assert torch.equal(c["blocks.0.hook_resid_post"], c["blocks.1.hook_resid_pre"])


def test_a_hook_can_replace_what_passes():
    """Patching through a hook: a uniform pattern in layer 0 changes the logits exactly as recomputing would."""
    cfg = small(n_layers=1)
    params = init_gpt_params(cfg, (2,))
    tokens = torch.randint(0, 3, (1, 4, 12), generator=torch.Generator().manual_seed(0))
    plain = gpt_forward(params, tokens, cfg)
    assert torch.equal(gpt_forward(params, tokens, cfg, hooks={"blocks.0.attn.hook_pattern": lambda t: t}), plain)
    causal_uniform = torch.tril(torch.ones(12, 12)) / torch.arange(1, 13)[:, None]
    patched = gpt_forward(
        params, tokens, cfg, hooks={"blocks.0.attn.hook_pattern": lambda t: causal_uniform.expand_as(t)}
    )
    rec = Recorder(["blocks.0.attn.hook_v", "blocks.0.hook_resid_pre"])
    gpt_forward(params, tokens, cfg, hooks=rec.hooks)
    z = causal_uniform @ rec.seen["blocks.0.attn.hook_v"]  # (1, 4, H, 12, dh)
    x = rec.seen["blocks.0.hook_resid_pre"] + (
        z.permute(0, 1, 3, 2, 4).reshape(1, 4, 12, -1) @ params["b0_w_o"][:, None]
    )
    expected = gpt_forward(params, tokens, cfg, hooks={"blocks.0.hook_resid_mid": lambda t: x})
    assert not torch.allclose(patched, plain) and torch.allclose(patched, expected, atol=1e-5)


def test_capture_names_the_available_points_when_none_matches():
    model = GPT(small(n_layers=1))
    with pytest.raises(ValueError, match="blocks.0.attn.hook_pattern"):
        with capture(model, ("hook_nothing",)):
            pass
    with pytest.raises(ValueError, match="non-empty"):
        Recorder([])


@pytest.mark.parametrize("L", [6, 12, 20])  # both softmax paths (rows shorter and longer than 16 keys)
def test_causal_no_position_sees_the_future(L):
    cfg = small(n_ctx=20)
    model = GPT(cfg, seeds=(0, 1))
    torch.manual_seed(0)
    tokens = torch.randint(0, 3, (2, 4, L))
    base = model(tokens)
    for p in range(1, L):
        changed = tokens.clone()
        changed[..., p:] = (changed[..., p:] + 1) % 3  # perturb every token from p on
        out = model(changed)
        assert torch.allclose(out[:, :, :p], base[:, :, :p], atol=1e-6), f"position < {p} saw the future"
        assert not torch.allclose(out[:, :, p:], base[:, :, p:])


def test_pattern_rows_sum_to_one_and_are_causal():
    model = GPT(small(), seeds=(4,))
    with capture(model) as cache:
        model(torch.randint(0, 3, (1, 6, 12)))
    for l in range(2):
        A = cache[f"blocks.{l}.attn.hook_pattern"]
        assert torch.allclose(A.sum(-1), torch.ones(A.shape[:-1]), atol=1e-6)
        assert float(A.triu(1).abs().max()) == 0.0
        S = cache[f"blocks.{l}.attn.hook_attn_scores"]
        assert torch.isinf(S.triu(1)[..., 0, 1:]).all()  # masked scores are -inf before the softmax


def test_large_bias_concentrates_the_pattern_on_the_mask():
    task = LinearMapTask(6, 2, seed=0)
    A = sample_map(task)
    M = linear_map_mask(A)  # (11, 11)
    cfg = GPTConfig(vocab=2, n_ctx=11, n_heads=2, d_head=4, n_layers=1)
    model = GPT(cfg, seeds=(0, 1, 2))
    tokens = linear_map_batch(A, 8, torch.Generator().manual_seed(1))[:, :-1]
    c = torch.tensor([0.0, 3.0, 20.0])
    q = torch.arange(5, 11)
    mass = []
    with capture(model) as cache:
        model(tokens, bias=c[:, None, None] * M)
    A_pat = cache["blocks.0.attn.hook_pattern"]  # (3, 8, 2, 11, 11)
    for e in range(3):
        mass.append(float((A_pat[e][:, :, q] * M[q]).sum(-1).mean()))
    assert mass[0] < mass[1] < mass[2]
    assert mass[2] > 0.999  # e^20 swamps every other key
    assert mass[0] < 0.5  # at initialisation the head is near uniform over 6..11 keys


def test_stack_equals_loop():
    cfg = small()
    seeds = (3, 7, 11)
    tokens = torch.randint(0, 3, (3, 4, 12))
    bias = torch.rand(3, 12, 12)
    stacked = gpt_forward(init_gpt_params(cfg, seeds), tokens, cfg, bias=bias)
    for e, seed in enumerate(seeds):
        single = gpt_forward(init_gpt_params(cfg, (seed,)), tokens[e : e + 1], cfg, bias=bias[e : e + 1])
        assert torch.allclose(stacked[e], single[0], atol=1e-5)


def test_shared_tokens_broadcast_to_members():
    cfg = small()
    p = init_gpt_params(cfg, (0, 0))
    out = gpt_forward(p, torch.randint(0, 3, (4, 12)), cfg)
    assert out.shape == (2, 4, 12, 3) and torch.allclose(out[0], out[1])


def test_short_softmax_matches_torch_with_gradients():
    s = torch.randn(3, 5, 7, dtype=torch.float64).masked_fill(torch.ones(5, 7, dtype=torch.bool).triu(3), float("-inf"))
    s.requires_grad_(True)
    g = torch.randn(3, 5, 7, dtype=torch.float64)
    ours = softmax(s)
    ref = torch.softmax(s, -1)
    assert torch.allclose(ours, ref)
    (g1,) = torch.autograd.grad(ours, s, g)
    (g2,) = torch.autograd.grad(ref, s, g)
    assert torch.allclose(g1, g2)
    assert torch.autograd.gradcheck(softmax, (torch.randn(2, 4, 6, dtype=torch.float64, requires_grad=True),))


def test_init_is_seeded_and_scaled():
    cfg = small(init_std=0.02, n_layers=2)
    a, b = init_gpt_params(cfg, (5,)), init_gpt_params(cfg, (5,))
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert torch.equal(a["b0_ln1_g"], torch.ones(1, 16)) and torch.equal(a["b1_b_in"], torch.zeros(1, 64))
    assert abs(float(a["b0_w_in"].std()) - 0.02) < 0.005
    assert abs(float(a["b0_w_out"].std()) - 0.01) < 0.003  # residual outputs scaled by 1/sqrt(2 n_layers)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: GPTConfig(vocab=1, n_ctx=4), "vocab"),
        (lambda: GPTConfig(vocab=2, n_ctx=4, n_heads=0), "n_heads"),
        (lambda: GPTConfig(vocab=2, n_ctx=4, d_head=0), "d_head"),
        (lambda: GPTConfig(vocab=2, n_ctx=4, n_layers=0), "n_layers"),
        (lambda: GPTConfig(vocab=2, n_ctx=4, init_std=0.0), "init_std"),
        (lambda: init_gpt_params(small(), ()), "seeds"),
        (lambda: init_gpt_params(small(), (-1,)), "seed"),
        (lambda: GPT("cfg"), "cfg"),
        (
            lambda: gpt_forward(init_gpt_params(small(), (0,)), torch.zeros(1, 2, 13, dtype=torch.long), small()),
            "n_ctx",
        ),
        (
            lambda: gpt_forward(init_gpt_params(small(), (0, 1)), torch.zeros(3, 2, 5, dtype=torch.long), small()),
            "tokens",
        ),
        (lambda: causal_bias(5, torch.zeros(4, 4)), "bias"),
    ],
)
def test_bad_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_torch_init_matches_pytorch_module_defaults():
    """init="torch": nn.Linear's U(+-1/sqrt(fan_in)) for weights and their biases, nn.Embedding's N(0, 1)."""
    cfg = GPTConfig(vocab=50, n_ctx=64, n_heads=8, d_head=16, n_layers=2, d_mlp=512, init="torch")
    p = init_gpt_params(cfg, (0,), dtype=torch.float64)
    d = cfg.width
    for name, fan_in in (
        ("b0_w_qkv", d),
        ("b1_w_o", d),
        ("b0_w_in", d),
        ("b0_b_in", d),
        ("b1_w_out", 512),
        ("b1_b_out", 512),
        ("w_u", d),
        ("b_u", d),
    ):
        bound = 1 / fan_in**0.5
        assert float(p[name].abs().max()) <= bound
        assert abs(float(p[name].std()) - bound / 3**0.5) < 0.15 * bound / 3**0.5  # U(-b, b) has std b / sqrt(3)
    for name in ("tok", "pos"):
        assert abs(float(p[name].std()) - 1.0) < 0.1
    assert torch.equal(p["b0_ln1_g"], torch.ones_like(p["b0_ln1_g"])) and not p["b0_ln1_b"].any()
    gpt2 = init_gpt_params(GPTConfig(vocab=50, n_ctx=64, n_heads=8, d_head=16, n_layers=2, d_mlp=512), (0,))
    assert not gpt2["b0_b_in"].any() and abs(float(gpt2["b0_w_qkv"].std()) - 0.02) < 0.002
    with pytest.raises(ValueError, match="init must be one of"):
        GPTConfig(vocab=3, n_ctx=4, init="xavier")
