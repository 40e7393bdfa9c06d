"""posenc.torch: the autograd Functions over posenc's kernels.

For each Function: torch.autograd.gradcheck in float64 (the analytic backward, posenc's transpose, against
finite differences of posenc's forward), and a float32 forward + backward against the same computation in
float64 within the forward's tolerance. The forwards themselves are checked against the golden files and the
HF formula elsewhere (test_rope_golden.py, test_torch_hf.py, ...); here the point is the gradients.
Skipped where PyTorch is not installed (the documented skip of scripts/check_python.sh).
"""
import numpy as np
import pytest

import posenc

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
import posenc.torch as pt  # noqa: E402  (needs torch)


def _x(shape, seed, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(*shape, generator=g, dtype=dtype) * 2 - 1).requires_grad_()


def _gradcheck(f, *inputs):
    assert torch.autograd.gradcheck(f, inputs, eps=1e-6, atol=1e-7, rtol=1e-6)


PLANS = [
    ("default", lambda: posenc.RopePlan(8, base=10000.0)),
    ("interleaved_partial", lambda: posenc.RopePlan(10, base=500.0, style="interleaved", rotary_dim=6, rotary_offset=2)),
    ("yarn", lambda: posenc.RopePlan(8, base=10000.0, scaling={"rope_type": "yarn", "factor": 4.0,
                                                                "original_max_position_embeddings": 64})),
    ("llama3", lambda: posenc.RopePlan(8, base=500000.0, scaling={"rope_type": "llama3", "factor": 8.0,
                                                                   "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                                   "original_max_position_embeddings": 64})),
    ("linear", lambda: posenc.RopePlan(8, scaling={"rope_type": "linear", "factor": 2.0})),
]


@pytest.mark.parametrize("name,make", PLANS, ids=[p[0] for p in PLANS])
def test_rope_gradcheck(name, make):
    plan = make()
    d = plan.head_dim
    x = _x((2, 3, 2, d), 1)
    _gradcheck(lambda t: pt.rope(t, plan, offset=5), x)
    ids = torch.tensor([[0, 7, 3], [40, 41, 1000]], dtype=torch.int64)
    _gradcheck(lambda t: pt.rope(t, plan, positions=ids), x)
    _gradcheck(lambda t: pt.rope(t, plan, starts=torch.tensor([3, 90], dtype=torch.int64)), x)


def test_rope_cache_and_layouts():
    plan = posenc.RopePlan(8, base=10000.0)
    cache = posenc.RopeCache(plan, 64, dtype="float64")
    x = _x((2, 2, 5, 8), 2)  # NHLD: (N, H, L, D)
    _gradcheck(lambda t: pt.rope(t, cache, offset=3, layout="NHLD"), x)
    y = pt.rope(x, cache, offset=3, layout="NHLD")
    want = posenc.apply_rope(x.detach(), plan, offset=3, layout="NHLD")
    assert torch.equal(y.detach(), want)  # the same kernel as posenc.apply_rope


def test_rope_backward_is_the_transpose():
    # <R x, v> = <x, R^T v> for the plan's magnitude != 1 (YaRN): the backward is the transpose, not the inverse.
    plan = posenc.RopePlan(16, base=10000.0, scaling={"rope_type": "yarn", "factor": 8.0,
                                                      "original_max_position_embeddings": 32})
    x, v = _x((1, 4, 3, 16), 3), _x((1, 4, 3, 16), 4)
    y = pt.rope(x, plan, offset=100)
    (gx,) = torch.autograd.grad(y, x, v)
    assert abs(float((y * v).sum()) - float((x * gx).sum())) < 1e-12
    assert float(torch.linalg.norm(y.detach())) != pytest.approx(float(torch.linalg.norm(x.detach())), rel=1e-6)


@pytest.mark.parametrize("style", ["half_split", "interleaved"])
def test_rope_float32_matches_float64(style):
    plan = posenc.RopePlan(32, base=10000.0, style=style)
    x64 = _x((2, 16, 4, 32), 5)
    v = torch.rand(2, 16, 4, 32, dtype=torch.float64, generator=torch.Generator().manual_seed(6))
    x32 = x64.detach().float().requires_grad_()
    ids = torch.arange(50000, 50016, dtype=torch.int64).repeat(2, 1)
    y64, y32 = pt.rope(x64, plan, positions=ids), pt.rope(x32, plan, positions=ids)
    (g64,) = torch.autograd.grad(y64, x64, v)
    (g32,) = torch.autograd.grad(y32, x32, v.float())
    # One rounding of the rotated value to float32 (the angle is formed in double for both).
    assert float((y32.double() - y64).abs().max()) < 4 * 2.0**-24
    assert float((g32.double() - g64).abs().max()) < 8 * 2.0**-24


def test_mrope_gradcheck():
    mp = posenc.MropePlan(posenc.RopePlan(12, base=10000.0), (2, 2, 2))
    x = _x((1, 4, 2, 12), 7)
    ids = torch.tensor([[0, 1, 2, 3], [0, 5, 5, 9], [0, 2, 7, 1]], dtype=torch.int64)
    _gradcheck(lambda t: pt.mrope(t, mp, ids), x)


@pytest.mark.parametrize("downscale", [False, True])
def test_xpos_gradcheck(downscale):
    plan = posenc.XposPlan(8, scale_base=64.0)
    x = _x((1, 6, 8), 8)
    _gradcheck(lambda t: pt.xpos(t, plan, offset=10, downscale=downscale, layout="NLD"), x)
    _gradcheck(lambda t: pt.xpos(t, plan, offset=10, center=30, downscale=downscale, layout="NLD"), x)


def test_xpos_float32_matches_float64():
    plan = posenc.XposPlan(16, scale_base=512.0)
    x64 = _x((2, 40, 16), 9)
    x32 = x64.detach().float().requires_grad_()
    y64 = pt.xpos(x64, plan, offset=2000, downscale=True, layout="NLD")
    y32 = pt.xpos(x32, plan, offset=2000, downscale=True, layout="NLD")
    v = torch.ones_like(y64)
    (g64,) = torch.autograd.grad(y64, x64, v)
    (g32,) = torch.autograd.grad(y32, x32, v.float())
    scale = float(y64.detach().abs().max()) + 1.0
    assert float((y32.double() - y64).abs().max()) <= 4 * 2.0**-24 * scale
    assert float((g32.double() - g64).abs().max()) <= 8 * 2.0**-24 * (float(g64.abs().max()) + 1.0)


@pytest.mark.parametrize("causal", [False, True])
def test_alibi_add_gradient(causal):
    s = _x((2, 3, 4, 6), 10)
    _gradcheck(lambda t: pt.add_alibi_bias(t, offset=2, causal=causal).masked_fill(
        torch.isneginf(pt.add_alibi_bias(t.detach(), offset=2, causal=causal)), 0.0), s)
    y = pt.add_alibi_bias(s, offset=2, causal=causal)
    (g,) = torch.autograd.grad(y, s, torch.ones_like(y))
    masked = torch.isneginf(y.detach())
    assert bool(masked.any()) == causal
    assert torch.equal(g, (~masked).double())  # identity, zero under the mask
    assert torch.equal(y.detach(), posenc.add_alibi_bias(s.detach().clone(), offset=2, causal=causal))


def test_sinusoidal_add_gradient():
    x = _x((2, 5, 8), 11)
    _gradcheck(lambda t: pt.add_sinusoidal(t, offset=3), x)
    y = pt.add_sinusoidal(x, offset=3, style="concat")
    assert torch.equal(y.detach(), posenc.add_sinusoidal(x.detach(), offset=3, style="concat"))


@pytest.mark.parametrize("bidirectional", [True, False])
def test_t5_bias_gradients(bidirectional):
    s = _x((2, 3, 4, 20), 12)
    table = _x((8, 3), 13)
    _gradcheck(lambda a, b: pt.add_t5_bias(a, b, query_offset=6, bidirectional=bidirectional, max_distance=16), s, table)
    y = pt.add_t5_bias(s, table, query_offset=6, bidirectional=bidirectional, max_distance=16)
    buckets = posenc.t5_bucket_table(4, 20, query_offset=6, bidirectional=bidirectional, num_buckets=8, max_distance=16)
    want = s.detach() + table.detach()[torch.from_numpy(buckets)].permute(2, 0, 1)
    assert torch.equal(y.detach(), want)


def test_rejections():
    plan = posenc.RopePlan(8)
    with pytest.raises(TypeError, match="posenc.torch.rope: x must be a torch.Tensor"):
        pt.rope(np.zeros((1, 1, 1, 8)), plan)
    with pytest.raises(TypeError, match="plan must be a posenc.RopePlan, RopeCache or RopeTable"):
        pt.rope(torch.zeros(1, 1, 1, 8), posenc.XposPlan(8))
    with pytest.raises(ValueError, match="head_dim"):
        pt.rope(torch.zeros(1, 1, 1, 6, requires_grad=True), plan)
    with pytest.raises(ValueError, match=r"table must be \(num_buckets, H=3\)"):
        pt.add_t5_bias(torch.zeros(1, 3, 2, 2), torch.zeros(8, 2))
