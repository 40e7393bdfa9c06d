"""The modules with learned tables, bound (issue 23 item 4): posenc.T5RelativeBias and
posenc.LearnedPositionEmbedding (NumPy level) and their torch modules in posenc.torch.

References written here from the formulas (HF T5Attention.compute_bias: bias[h, i, j] = table[bucket(j - i'),
h], buckets from posenc.t5_relative_bucket, itself checked against T5's bucket function in
test_tables_golden.py; learned: x + scale * E[p + offset], torch.nn.functional.layer_norm, in float64 by
torch's autograd), plus gradcheck of the torch modules' gradients (posenc's backward) in float64.
"""
import numpy as np
import pytest

import posenc


def t5_reference(table, lq, lk, offset, bidirectional, num_buckets, max_distance):
    rel = np.arange(lk)[None, :] - (np.arange(lq)[:, None] + offset)
    b = posenc.t5_relative_bucket(rel, bidirectional, num_buckets, max_distance)
    return np.transpose(table[b], (2, 0, 1))  # (H, Lq, Lk)


@pytest.mark.parametrize("bidirectional", [True, False])
def test_t5_relative_bias_forward_backward(bidirectional):
    rel = posenc.T5RelativeBias(4, bidirectional=bidirectional, num_buckets=16, max_distance=32, dtype="float64")
    rel.init_normal(3, 0.5)
    table = np.array(rel.table)
    bias = rel.forward(5, 40, query_offset=7, dtype="float64")
    np.testing.assert_array_equal(bias, t5_reference(table, 5, 40, 7, bidirectional, 16, 32))
    g = np.random.default_rng(1).standard_normal((4, 5, 40))
    rel.backward(g, query_offset=7)
    b = posenc.t5_relative_bucket(np.arange(40)[None, :] - (np.arange(5)[:, None] + 7), bidirectional, 16, 32)
    want = np.zeros((16, 4))
    for i in range(5):
        for j in range(40):
            want[b[i, j]] += g[:, i, j]
    np.testing.assert_allclose(rel.table_grad, want, rtol=0, atol=1e-12)
    rel.zero_grad()
    assert not np.any(rel.table_grad)
    scores = np.zeros((2, 4, 5, 40), dtype=np.float32)
    posenc.add_t5_bias(scores, rel, starts=np.array([7, 0]))
    np.testing.assert_allclose(scores[0], t5_reference(table, 5, 40, 7, bidirectional, 16, 32), rtol=1e-7, atol=1e-7)
    np.testing.assert_allclose(scores[1], t5_reference(table, 5, 40, 0, bidirectional, 16, 32), rtol=1e-7, atol=1e-7)
    table[0, 0] = 99.0  # a copy: the module's table is unchanged
    assert rel.table[0, 0] != 99.0
    rel.table[0, 0] = 99.0  # the view writes the module's memory
    assert rel.forward(1, 1, dtype="float64")[0, 0, 0] == 99.0


def test_t5_relative_bias_rejections():
    with pytest.raises(ValueError, match="num_heads"):
        posenc.T5RelativeBias(0)
    rel = posenc.T5RelativeBias(4)
    with pytest.raises(ValueError):
        posenc.add_t5_bias(np.zeros((1, 3, 2, 2), dtype=np.float32), rel)
    with pytest.raises(TypeError, match="float32 or float64"):
        posenc.T5RelativeBias(4, dtype="float16")


@pytest.mark.parametrize("layer_norm", [False, True])
def test_learned_forward_backward_against_torch_formula(layer_norm):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    m = posenc.LearnedPositionEmbedding(64, 8, position_offset=2, scale=0.5, layer_norm=layer_norm, eps=1e-5,
                                        dtype="float64")
    m.init_normal(7, 0.3)
    if layer_norm:
        m.gamma[:] = np.linspace(0.5, 1.5, 8)
        m.beta[:] = np.linspace(-0.1, 0.1, 8)
    x = np.random.default_rng(2).standard_normal((2, 5, 8))
    cache = m.new_cache()
    y = m.forward(x, offset=10, cache=cache)
    E = torch.tensor(np.array(m.table), requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    gam = torch.tensor(np.array(m.gamma), requires_grad=True)
    bet = torch.tensor(np.array(m.beta), requires_grad=True)
    h = xt + 0.5 * E[torch.arange(10, 15) + 2][None]
    ref = torch.nn.functional.layer_norm(h, (8,), gam, bet, 1e-5) if layer_norm else h
    np.testing.assert_allclose(y, ref.detach().numpy(), rtol=0, atol=1e-12)
    g = np.random.default_rng(3).standard_normal((2, 5, 8))
    dx = m.backward(g, cache)
    ref.backward(torch.tensor(g))
    np.testing.assert_allclose(dx, xt.grad.numpy(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(m.table_grad, E.grad.numpy(), rtol=0, atol=1e-12)
    if layer_norm:
        np.testing.assert_allclose(m.gamma_grad, gam.grad.numpy(), rtol=0, atol=1e-12)
        np.testing.assert_allclose(m.beta_grad, bet.grad.numpy(), rtol=0, atol=1e-12)


def test_learned_rejections():
    m = posenc.LearnedPositionEmbedding(16, 4)
    with pytest.raises(ValueError, match="position"):
        m.forward(np.zeros((1, 2, 4), dtype=np.float32), offset=15)
    with pytest.raises(ValueError, match="dim"):
        posenc.LearnedPositionEmbedding(16, 0)
    with pytest.raises(ValueError, match="cache"):
        m.backward(np.zeros((1, 2, 4), dtype=np.float32), m.new_cache())


# ---- torch modules --------------------------------------------------------------------------------------------------


def test_torch_t5_module_gradcheck_and_compute_bias():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    import posenc.torch as pt

    mod = pt.T5RelativeBias(3, num_buckets=8, max_distance=16, dtype=torch.float64)
    with torch.no_grad():
        mod.weight.copy_(torch.randn(8, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(4)))
    scores = torch.rand(2, 3, 4, 12, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda s, w: mod(s, offset=5), (scores, mod.weight), eps=1e-6, atol=1e-7)
    starts = torch.tensor([0, 9])
    assert torch.autograd.gradcheck(lambda s, w: mod(s, starts=starts), (scores, mod.weight), eps=1e-6, atol=1e-7)
    assert torch.autograd.gradcheck(lambda w: mod.compute_bias(4, 12, 3), (mod.weight,), eps=1e-6, atol=1e-7)
    want = t5_reference(mod.weight.detach().numpy(), 4, 12, 3, True, 8, 16)
    np.testing.assert_array_equal(mod.compute_bias(4, 12, 3)[0].detach().numpy(), want)
    # An optimiser's step is what the kernels read next (the Parameter is posenc's memory).
    opt = torch.optim.SGD(mod.parameters(), lr=0.1)
    mod.compute_bias(4, 12).sum().backward()
    opt.step()
    np.testing.assert_array_equal(mod.compute_bias(4, 12)[0].detach().numpy(),
                                  t5_reference(mod.weight.detach().numpy(), 4, 12, 0, True, 8, 16))


@pytest.mark.parametrize("layer_norm", [False, True])
def test_torch_learned_module(layer_norm):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    import posenc.torch as pt

    mod = pt.LearnedPositionEmbedding(32, 6, scale=2.0, layer_norm=layer_norm, dropout=0.25, dtype=torch.float64)
    with torch.no_grad():
        mod.weight.copy_(torch.randn(32, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(5)))
    mod.eval()
    x = torch.rand(2, 4, 6, dtype=torch.float64, requires_grad=True)
    params = [mod.weight] + ([mod.ln_weight, mod.ln_bias] if layer_norm else [])
    assert torch.autograd.gradcheck(lambda a, *p: mod(a, offset=3), (x, *params), eps=1e-6, atol=1e-7)
    # Training: the dropout mask comes from the generator's seed (same generator state, same output); dropped
    # elements are zero and the kept ones scaled by 1/(1-p).
    mod.train()
    y1 = mod(x, offset=3, generator=torch.Generator().manual_seed(9))
    y2 = mod(x, offset=3, generator=torch.Generator().manual_seed(9))
    assert torch.equal(y1, y2)
    mod.eval()
    y_eval = mod(x, offset=3)
    kept = y1 != 0
    assert 0 < int(kept.sum()) < y1.numel()
    torch.testing.assert_close(y1[kept], y_eval[kept] / 0.75)
    # The training forward's gradient uses the same mask.
    mod.train()
    assert torch.autograd.gradcheck(lambda a: mod(a, offset=3, generator=torch.Generator().manual_seed(9)), (x,),
                                    eps=1e-6, atol=1e-7)
