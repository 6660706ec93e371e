"""lib.models: attention maps, the copy head, hook points."""

from __future__ import annotations


import pytest
import torch

from lib.models import CopyHead, attention, capture, init_copy_params
from lib.tasks import CopyTask, copy_batch, sample_tokens, shift_matrix


def test_softmax_rows_are_distributions():
    G = torch.randn(5, 7, 7, dtype=torch.float64)
    A = attention("softmax", G)
    assert torch.allclose(A.sum(-1), torch.ones(5, 7, dtype=torch.float64))
    assert (A > 0).all()
    # invariant to a constant shift of each row
    assert torch.allclose(attention("softmax", G + torch.randn(5, 7, 1, dtype=torch.float64)), A)


def test_softmax_limits():
    L = 6
    assert torch.allclose(attention("softmax", torch.zeros(L, L)), torch.full((L, L), 1 / L))
    A = attention("softmax", 50.0 * shift_matrix(L))
    assert torch.allclose(A, shift_matrix(L), atol=1e-12)


def test_linear_attention_formula():
    G = torch.randn(3, 5, 5, dtype=torch.float64)
    beta = torch.randn(3, dtype=torch.float64)
    A = attention("linear", G, beta)
    assert torch.allclose(A, (G + beta[:, None, None]) / 5)
    assert torch.allclose(attention("linear", G), G / 5)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: attention("cosine", torch.zeros(3, 3)), "kind"),
        (lambda: attention("softmax", torch.zeros(3, 4)), "G must have shape"),
        (lambda: attention("softmax", torch.zeros(3, 3), torch.zeros(())), "beta must be None"),
        (lambda: attention("linear", torch.zeros(2, 3, 3), torch.zeros(3)), "beta must have shape"),
        (lambda: CopyHead("softmax", L=1, V=4), "L"),
        (lambda: CopyHead("linear", L=4, V=1), "V"),
        (lambda: CopyHead("relu", L=4, V=4), "kind"),
        (lambda: init_copy_params("softmax", 4, 4, seed=0, init_G=-1.0, init_W=0.1, copy_init=False), "init_G"),
        (lambda: init_copy_params("softmax", 4, 4, seed=0, init_G=1.0, init_W=float("nan"), copy_init=False), "init_W"),
    ],
)
def test_bad_inputs_raise_value_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("kind", ["softmax", "linear"])
def test_copy_head_forward_is_AXW(kind):
    head = CopyHead(kind, L=6, V=3, seed=1)
    X, _ = copy_batch(sample_tokens(CopyTask(V=3, L=6, P=4)), 3)
    with capture(head) as cache:
        out = head(X)
    A = cache["hook_pattern"]
    assert out.shape == (4, 6, 3)
    assert torch.allclose(out, A @ X @ head.W)
    assert torch.equal(cache["hook_attn_scores"], head.G.detach())
    with pytest.raises(ValueError, match="X must have shape"):
        head(X[:, :5])


def test_copy_init_solves_the_task():
    L, V = 8, 4
    head = CopyHead("softmax", L=L, V=V, seed=0, init_G=0.0, init_W=0.0, copy_init=True)
    X, Y = copy_batch(sample_tokens(CopyTask(V=V, L=L, P=16)), V)
    A = head.pattern().detach()
    # weight on the target is 1 / (1 + (L-1) e^{-3 ln L}) = 1 / (1 + (L-1)/L^3)
    assert torch.allclose(torch.diagonal(A[1:, :-1]), torch.full((L - 1,), 1 / (1 + (L - 1) / L**3), dtype=A.dtype))
    assert ((head(X) - Y) ** 2).mean() < 1e-3


def test_init_is_seeded():
    a = init_copy_params("linear", 5, 3, seed=4, init_G=0.1, init_W=0.1, copy_init=False)
    b = init_copy_params("linear", 5, 3, seed=4, init_G=0.1, init_W=0.1, copy_init=False)
    c = init_copy_params("linear", 5, 3, seed=5, init_G=0.1, init_W=0.1, copy_init=False)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not torch.equal(a[0], c[0])


def test_capture_filters_by_name_and_removes_hooks():
    head = CopyHead("softmax", L=4, V=2)
    X, _ = copy_batch(sample_tokens(CopyTask(V=2, L=4, P=1)), 2)
    with capture(head, names=("hook_pattern",)) as cache:
        head(X)
    assert list(cache) == ["hook_pattern"]
    assert not head.hook_pattern._forward_hooks
    with pytest.raises(ValueError, match="no hook point"):
        with capture(head, names=("hook_missing",)):
            pass
    with pytest.raises(TypeError):
        with capture("not a module"):
            pass
