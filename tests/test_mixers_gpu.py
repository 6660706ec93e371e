"""GPU kernels as cross-checks of the pure-torch mixers (skipped without CUDA and the GPU library).

The pure-torch recurrences of :mod:`lib.models.mixers` are the reference; where a GPU library implements the same
recurrence, its kernel must agree with ours on the GPU. CI has neither, so these tests are skipped there; they run
on a machine with CUDA and ``pip install flash-linear-attention``.
"""

import pytest
import torch

from lib.models.mixers.deltanet import delta_rule

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


def test_gated_delta_rule_matches_flash_linear_attention():
    fla = pytest.importorskip("fla.ops.gated_delta_rule")
    g = torch.Generator().manual_seed(0)
    B, H, L, dk, dv = 2, 3, 37, 16, 8
    q = torch.nn.functional.normalize(torch.randn(B, H, L, dk, generator=g), dim=-1)
    k = torch.nn.functional.normalize(torch.randn(B, H, L, dk, generator=g), dim=-1)
    v = torch.randn(B, H, L, dv, generator=g)
    log_alpha = -torch.rand(B, H, L, generator=g)  # decays in (e^-1, 1)
    beta = torch.rand(B, H, L, generator=g)
    ours = delta_rule(
        q[None].double(),
        k[None].double(),
        v[None].double(),
        log_alpha[None].double(),
        beta[None].double(),
        mode="recurrent",
    )[0]  # (B, H, L, dv)
    # fla's layout is (B, L, H, d); its output is S_t^T q_t with S in (dk, dv): the same recurrence, scale 1 here
    to = lambda x: x.transpose(1, 2).contiguous().cuda()  # noqa: E731
    out, _ = fla.fused_recurrent_gated_delta_rule(
        q=to(q),
        k=to(k),
        v=to(v),
        g=log_alpha.transpose(1, 2).contiguous().cuda(),
        beta=beta.transpose(1, 2).contiguous().cuda(),
        scale=1.0,
    )
    torch.testing.assert_close(out.transpose(1, 2).double().cpu(), ours, atol=2e-3, rtol=2e-3)
