"""posenc.torch.compat.seeds (the documents' own modules, which exist only as notes) against the golden files,
and posenc's sinusoidal tables and ALiBi against the transformers implementations engines and researchers run
(M2M100 / FSMT sinusoidal embeddings, BLOOM and MPT ALiBi; transformers 4.46.3, installed by check_python.sh).
Any skip but "PyTorch is not installed" fails CI."""
import math

import numpy as np
import pytest

import posenc
from golden import find, golden_dir

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
from posenc.torch.compat import seeds  # noqa: E402

pytestmark = pytest.mark.skipif(golden_dir() is None, reason="the golden files (tests/golden) are not in this checkout")


def test_sinusoidal_positional_encoding_against_golden():
    c = find("sinusoidal.txt", "interleaved_basic")  # dim 8, length 6, offset 0, base 10000
    table = c.array("table")
    m = seeds.SinusoidalPositionalEncoding(8, max_len=6).eval()
    np.testing.assert_allclose(m.pe[0].numpy(), table, rtol=0, atol=2.0**-24)
    x = torch.zeros(2, 6, 8, requires_grad=True)
    y = m(x)
    np.testing.assert_allclose(y.detach().numpy(), np.broadcast_to(table, (2, 6, 8)), rtol=0, atol=2.0**-24)
    y.sum().backward()
    assert torch.equal(x.grad, torch.ones_like(x))
    with pytest.raises(ValueError, match="emb_dim must be even, but got 7"):
        seeds.SinusoidalPositionalEncoding(7)
    with pytest.raises(ValueError, match="exceeds max_len=6"):
        m(torch.zeros(1, 7, 8))


def test_learned_positional_embedding():
    torch.manual_seed(0)
    m = seeds.LearnedPositionalEmbedding(emb_dim=8, seq_len=16, scale=0.5, use_ln=True, dropout=0.1).eval()
    x = torch.randn(2, 5, 8, dtype=torch.float32, requires_grad=True)
    y = m(x)
    e = m.embedding
    ref = torch.nn.functional.layer_norm(x + 0.5 * e.weight[:5][None], (8,), e.ln_weight, e.ln_bias, 1e-5)
    torch.testing.assert_close(y, ref, rtol=1e-6, atol=1e-6)
    g = torch.randn_like(y)
    gx, gw = torch.autograd.grad(y, (x, e.weight), g)
    rx, rw = torch.autograd.grad(ref, (x, e.weight), g)
    torch.testing.assert_close(gx, rx, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(gw, rw, rtol=1e-5, atol=1e-5)
    assert float(e.weight.detach().std()) > 0.5  # N(0, 1) as nn.Embedding
    with pytest.raises(NotImplementedError, match="relative=True"):
        seeds.LearnedPositionalEmbedding(8, relative=True)


def test_rotary_positional_embedding_interleaved_pairs():
    m = seeds.RotaryPositionalEmbedding(16, base=10000.0)
    q = torch.randn(1, 2, 7, 16, dtype=torch.float64)
    k = torch.randn(1, 2, 7, 16, dtype=torch.float64)
    rq, rk = m(q, k)
    w = 1.0 / 10000.0 ** (torch.arange(0, 16, 2, dtype=torch.float64) / 16)
    a = torch.arange(7, dtype=torch.float64)[:, None] * w
    for x, r in ((q, rq), (k, rk)):
        x1, x2 = x[..., 0::2], x[..., 1::2]  # the notes' real and imaginary parts
        want = torch.stack((x1 * a.cos() - x2 * a.sin(), x2 * a.cos() + x1 * a.sin()), -1).flatten(-2)
        torch.testing.assert_close(r, want, rtol=0, atol=1e-14)


def test_alibi_positional_bias_against_golden():
    c = find("alibi.txt", "bias_h8_prefill")  # linear form, 8 heads, Lq = Lk = 5, queries at 0..4
    h, lq, lk = c.int("num_heads"), c.int("query_len"), c.int("key_len")
    m = seeds.ALiBiPositionalBias(h, max_bias=c.num("max_bias"))
    s = torch.zeros(1, h, lq, lk, dtype=torch.float64, requires_grad=True)
    y = m(s)
    np.testing.assert_allclose(y[0].detach().numpy(), c.array("bias").reshape(h, lq, lk), rtol=0, atol=1e-15)
    y.sum().backward()
    assert torch.equal(s.grad, torch.ones_like(s))


@pytest.mark.parametrize("name", ["slopes_h5_mb8", "slopes_h12_mb8", "slopes_h6_mb16"])
def test_alibi_positional_bias_slopes_against_golden(name):
    c = find("alibi.txt", name)
    m = seeds.ALiBiPositionalBias(c.int("num_heads"), max_bias=c.num("max_bias"))
    np.testing.assert_allclose(m.slopes.numpy(), c.array("slopes"), rtol=4 * 2.0**-52, atol=0)


# ---- against transformers ---------------------------------------------------------------------------------------

transformers = pytest.importorskip("transformers", reason="transformers is not installed")


@pytest.mark.parametrize("heads", [8, 12, 5])
def test_alibi_against_bloom_and_mpt(heads):
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor
    from transformers.models.mpt.modeling_mpt import build_mpt_alibi_tensor

    length = 9
    mask = torch.ones(1, length, dtype=torch.int64)
    bloom = build_alibi_tensor(mask, heads, torch.float64).reshape(heads, 1, length)  # slope_h * j
    ours = posenc.alibi_bias(heads, length, length, dtype=np.float64)  # slope_h * (j - i)
    # BLOOM adds slope_h * j to every query row: ours minus it is constant along each row (softmax-invariant).
    diff = ours - bloom.numpy()
    # BLOOM forms its slopes in float32 (relative error 2^-24 each, times j <= L - 1).
    np.testing.assert_allclose(diff, np.broadcast_to(diff[..., :1], diff.shape), rtol=0, atol=(length - 1) * 2.0**-22)
    np.testing.assert_allclose(bloom[:, 0, 1].numpy(), posenc.alibi_slopes(heads), rtol=2e-7)
    # MPT: slope_h * (j - (L - 1)) with its slopes 2^(-8 (h+1)/n') over n' = next power of two, interleaved.
    mpt = build_mpt_alibi_tensor(heads, length, alibi_bias_max=8).reshape(heads, 1, length).double()
    np.testing.assert_allclose(mpt[:, 0, 0].numpy(), -(length - 1) * posenc.alibi_slopes(heads), rtol=2e-7)


@pytest.mark.parametrize("dim,padding_idx", [(16, 1), (64, 0), (10, 3)])
def test_sinusoidal_concat_against_m2m100_and_fsmt(dim, padding_idx):
    from transformers.models.fsmt.modeling_fsmt import SinusoidalPositionalEmbedding as Fsmt
    from transformers.models.m2m_100.modeling_m2m_100 import M2M100SinusoidalPositionalEmbedding as M2m

    rows = 200
    m2m = M2m.get_embedding(rows, dim, padding_idx).double().numpy()
    ours = posenc.sinusoidal_table(rows, dim, style="concat", padding_idx=padding_idx, dtype=np.float64)
    # transformers forms p * w_i in float32: off by up to ~p 2^-24 rad at row p.
    np.testing.assert_allclose(ours, m2m, rtol=0, atol=rows * 2.0**-22)
    fsmt = Fsmt(rows, dim, padding_idx).weight.detach().double().numpy()
    np.testing.assert_allclose(ours, fsmt, rtol=0, atol=rows * 2.0**-22)
    assert not ours[padding_idx].any()
