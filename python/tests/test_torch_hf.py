"""posenc on PyTorch tensors against a plain PyTorch implementation of the Hugging Face formula in float64.

The reference is transformers' Llama RoPE written out (`rotate_half`, `apply_rotary_pos_emb`, inv_freq =
1 / base^(arange(0, R, 2) / R)) with every step in float64, and the GPT-J / "traditional" interleaved form
(pairs (x[2i], x[2i+1])). Properties on random shapes, bases, windows and positions: posenc equals it to the
double rounding of the angle; the rotation keeps each pair's norm; <R_m q, R_n k> depends only on m - n.
Skipped where PyTorch is not installed (the documented skip of scripts/check_python.sh).
"""
import numpy as np
import pytest

import posenc

torch = pytest.importorskip("torch", reason="PyTorch is not installed")


def hf_rope(x, positions, base, rotary_dim, interleaved):
    """x (N, L, H, D) float64; positions (N, L) int64; the first rotary_dim features rotate."""
    inv_freq = 1.0 / base ** (torch.arange(0, rotary_dim, 2, dtype=torch.float64) / rotary_dim)
    angles = positions.to(torch.float64)[..., None] * inv_freq  # (N, L, R/2)
    cos, sin = angles.cos()[:, :, None, :], angles.sin()[:, :, None, :]
    rot, rest = x[..., :rotary_dim], x[..., rotary_dim:]
    if interleaved:
        a, b = rot[..., 0::2], rot[..., 1::2]
        out = torch.stack((a * cos - b * sin, b * cos + a * sin), dim=-1).flatten(-2)
    else:
        half = rotary_dim // 2
        cos2, sin2 = torch.cat((cos, cos), dim=-1), torch.cat((sin, sin), dim=-1)
        rotate_half = torch.cat((-rot[..., half:], rot[..., :half]), dim=-1)
        out = rot * cos2 + rotate_half * sin2
    return torch.cat((out, rest), dim=-1)


@pytest.mark.parametrize("seed", range(12))
def test_matches_hf_formula_in_float64(seed):
    g = torch.Generator().manual_seed(seed)
    n, l, h = (int(v) for v in torch.randint(1, 5, (3,), generator=g))
    d = 2 * int(torch.randint(2, 40, (1,), generator=g))
    r = 2 * int(torch.randint(1, d // 2 + 1, (1,), generator=g))
    base = [10000.0, 500000.0, 1e6][seed % 3]
    interleaved = seed % 2 == 1
    positions = torch.randint(0, 1 << 20, (n, l), generator=g, dtype=torch.int64)
    x = torch.rand(n, l, h, d, generator=g, dtype=torch.float64) * 2 - 1
    want = hf_rope(x, positions, base, r, interleaved)
    plan = posenc.RopePlan(d, base=base, rotary_dim=r, style="interleaved" if interleaved else "half_split")
    got = posenc.apply_rope(x, plan, positions=positions.numpy())
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float64
    # Both form theta = p * w in double; libm and posenc's sincos agree to a few ulp, and the float64
    # inv_freq of torch's pow and posenc's may differ in the last bit (p * 2^-52 rad at position p).
    tol = float(positions.max()) * 2.0**-50 + 1e-14
    assert float((got - want).abs().max()) <= tol


def test_norm_kept_and_relative_position():
    plan = posenc.RopePlan(64, base=10000.0)
    g = torch.Generator().manual_seed(7)
    q = torch.rand(1, 1, 1, 64, generator=g, dtype=torch.float64)
    k = torch.rand(1, 1, 1, 64, generator=g, dtype=torch.float64)
    dots = []
    for m, n in ((5, 2), (1003, 1000), (90003, 90000)):
        qm = posenc.apply_rope(q, plan, offset=m)
        kn = posenc.apply_rope(k, plan, offset=n)
        np.testing.assert_allclose(qm.norm().item(), q.norm().item(), rtol=1e-14)
        dots.append(float((qm * kn).sum()))
    np.testing.assert_allclose(dots, [dots[0]] * 3, rtol=1e-9)


def test_float32_in_place_on_a_transposed_tensor():
    """HF keeps q as (batch, heads, tokens, head_dim), a transposed view: rotated where it is (layout NHLD)."""
    plan = posenc.RopePlan(32)
    base = torch.rand(2, 7, 4, 32)  # (batch, tokens, heads, head_dim)
    q = base.transpose(1, 2)  # (batch, heads, tokens, head_dim), not contiguous
    want = hf_rope(base.to(torch.float64), torch.arange(7)[None, :].expand(2, -1), 10000.0, 32, False)
    assert posenc.apply_rope(q, plan, out=q, layout="NHLD") is q
    assert float((base.to(torch.float64) - want).abs().max()) < 2e-6
