"""posenc.torch.compat: each drop-in against the real package it replaces, installed as its users install it
(scripts/check_python.sh: rotary-embedding-torch 0.9.1 with einops, torchscale 0.3.0 and zetascale 2.8.8 with
--no-deps; zeta's and torchscale's module files are loaded by path, their package __init__ imports far more).

Forward outputs and input gradients on random inputs, float32 and float64, several shapes, offsets up to 50k,
xPos both ways. The originals form angles (and xPos scales) in float32, off by up to ~p * 2^-24 rad at position
p; posenc forms them in double. So each comparison allows the original's float32 error (``float32_angle_tol``),
and a float64 reference written out here from the formula shows that the difference is the original's: posenc
stays within float32 rounding of the formula at every offset. Where an original has a defect the test shows
it next to the drop-in's formula. Any skip but "PyTorch is not installed" fails CI (check_python.sh).
"""
import importlib.util
import math
import os

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")

import posenc  # noqa: E402
from posenc.torch.compat import rotary_embedding_torch as pc_ret  # noqa: E402
from posenc.torch.compat import torchscale as pc_ts  # noqa: E402
from posenc.torch.compat import zeta as pc_zeta  # noqa: E402

ret = pytest.importorskip("rotary_embedding_torch", reason="rotary-embedding-torch is not installed")


def _load_by_path(package, relative, name):
    spec = importlib.util.find_spec(package)
    if spec is None:
        pytest.skip(f"{package} is not installed")
    path = os.path.join(list(spec.submodule_search_locations)[0], relative)
    s = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(s)
    s.loader.exec_module(mod)
    return mod


ts_xpos = _load_by_path("torchscale", "component/xpos_relative_position.py", "ref_torchscale_xpos")
zeta_rope = _load_by_path("zeta", "nn/embeddings/rope.py", "ref_zeta_rope")


def rand(shape, seed, dtype):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(*shape, generator=g, dtype=torch.float64) * 2 - 1).to(dtype)


def float32_angle_tol(x, max_pos, scale=1.0):
    """What the original's float32 angles (p and w rounded, their product rounded, float32 cos/sin) and the
    float32 rounding of each side can leave between two correct implementations: |x| (p w 2^-22 + 2^-21) s."""
    return float(x.abs().max()) * (max_pos * 2.0**-22 + 2.0**-21) * scale


def fwd_bwd(f, *xs):
    """f's output and the gradients of sum(f * v) for a fixed random v, per input."""
    xs = [x.detach().clone().requires_grad_() for x in xs]
    y = f(*xs)
    ys = y if isinstance(y, tuple) else (y,)
    loss = sum((t * rand(t.shape, 99 + i, t.dtype)).sum() for i, t in enumerate(ys))
    grads = torch.autograd.grad(loss, xs)
    return tuple(t.detach() for t in ys), grads


def interleaved_rope_f64(x, positions, w, dim):
    """x (..., L, D) float64, positions (L,), w (dim/2,): pairs (2i, 2i+1) of the first dim features."""
    a = positions.double()[:, None] * w[None, :]
    c, s = a.cos(), a.sin()
    x1, x2 = x[..., 0:dim:2], x[..., 1:dim:2]
    rot = torch.stack((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1).flatten(-2)
    return torch.cat((rot, x[..., dim:]), dim=-1)


# ---- rotary-embedding-torch ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("offset", [0, 37, 50000])
@pytest.mark.parametrize("dim,head_dim,kwargs", [
    (32, 32, {}),
    (16, 48, {"theta": 500000}),
    (24, 24, {"interpolate_factor": 4.0, "theta_rescale_factor": 2.0}),
])
def test_rotary_embedding_torch_rotate_queries_or_keys(dtype, offset, dim, head_dim, kwargs):
    x = rand((2, 3, 7, head_dim), 1, dtype)  # (batch, heads, seq, dim): seq_dim -2
    ours_m, orig_m = pc_ret.RotaryEmbedding(dim, **kwargs), ret.RotaryEmbedding(dim, **kwargs)
    (y, ), (g, ) = fwd_bwd(lambda t: ours_m.rotate_queries_or_keys(t, offset=offset), x)
    (yr, ), (gr, ) = fwd_bwd(lambda t: orig_m.rotate_queries_or_keys(t, offset=offset), x)
    assert y.dtype == yr.dtype == dtype
    tol = float32_angle_tol(x, offset + 7)
    assert float((y.double() - yr.double()).abs().max()) <= tol
    assert float((g.double() - gr.double()).abs().max()) <= 2 * tol
    # posenc against the formula in float64: float32 rounding at most, at every offset.
    w = 1.0 / (ours_m.theta ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    pos = (torch.arange(7, dtype=torch.float64) + offset) / kwargs.get("interpolate_factor", 1.0)
    want = interleaved_rope_f64(x.double(), pos, w, dim)
    # float32: cos/sin rounded to float and a few float operations (|y| <= sqrt(2)); float64: the last bit of
    # w_i (torch's pow here, posenc's there) times the position.
    bound = 2.0**-21 if dtype == torch.float32 else (offset + 7) * 2.0**-50 + 2.0**-48
    assert float((y.double() - want).abs().max()) <= bound


def test_rotary_embedding_torch_seq_before_head_dim_and_3d():
    ours_m = pc_ret.RotaryEmbedding(16, seq_before_head_dim=True)
    orig_m = ret.RotaryEmbedding(16, seq_before_head_dim=True)
    x = rand((2, 9, 4, 16), 2, torch.float32)  # (batch, seq, heads, dim): seq_dim -3
    assert float((ours_m.rotate_queries_or_keys(x) - orig_m.rotate_queries_or_keys(x)).abs().max()) <= float32_angle_tol(x, 9)
    x3 = rand((3, 11, 16), 3, torch.float32)  # (batch, seq, dim)
    ours3, orig3 = pc_ret.RotaryEmbedding(16), ret.RotaryEmbedding(16)
    assert float((ours3.rotate_queries_or_keys(x3, offset=5) - orig3.rotate_queries_or_keys(x3, offset=5)).abs().max()) <= \
        float32_angle_tol(x3, 16)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("length", [6, 33])
def test_rotary_embedding_torch_xpos_queries_and_keys(dtype, length):
    ours_m = pc_ret.RotaryEmbedding(16, use_xpos=True, xpos_scale_base=64)
    orig_m = ret.RotaryEmbedding(16, use_xpos=True, xpos_scale_base=64)
    q, k = rand((2, 2, length, 16), 4, dtype), rand((2, 2, length, 16), 5, dtype)
    (yq, yk), (gq, gk) = fwd_bwd(lambda a, b: ours_m.rotate_queries_and_keys(a, b), q, k)
    (rq, rk), (hq, hk) = fwd_bwd(lambda a, b: orig_m.rotate_queries_and_keys(a, b), q, k)
    # The scales reach zeta^(+-L/2/64); their float32 power adds |ln zeta| L 2^-24 relative.
    s = math.exp(abs(math.log(0.4 / 1.4)) * length / 2 / 64)
    tol = float32_angle_tol(q, length, s) * 4
    for a, b in ((yq, rq), (yk, rk), (gq, hq), (gk, hk)):
        assert float((a.double() - b.double()).abs().max()) <= tol


def test_rotary_embedding_torch_cached_keys():
    # Without xPos: the same as the original (q at k_len - q_len + offset ..., k at 0 ...).
    ours_m, orig_m = pc_ret.RotaryEmbedding(32), ret.RotaryEmbedding(32)
    q, k = rand((1, 2, 3, 32), 6, torch.float32), rand((1, 2, 10, 32), 7, torch.float32)
    (yq, yk), (gq, gk) = fwd_bwd(lambda a, b: ours_m.rotate_queries_with_cached_keys(a, b, offset=2), q, k)
    (rq, rk), (hq, hk) = fwd_bwd(lambda a, b: orig_m.rotate_queries_with_cached_keys(a, b, offset=2), q, k)
    for a, b in ((yq, rq), (yk, rk), (gq, hq), (gk, hk)):
        assert float((a - b).abs().max()) <= float32_angle_tol(q, 12)
    # With xPos and q_len == k_len: the original's result.
    ours_x = pc_ret.RotaryEmbedding(16, use_xpos=True, xpos_scale_base=64)
    orig_x = ret.RotaryEmbedding(16, use_xpos=True, xpos_scale_base=64)
    q, k = rand((1, 2, 8, 16), 8, torch.float32), rand((1, 2, 8, 16), 9, torch.float32)
    for a, b in zip(ours_x.rotate_queries_with_cached_keys(q, k), orig_x.rotate_queries_with_cached_keys(q, k)):
        assert float((a - b).abs().max()) <= 4 * float32_angle_tol(q, 8, 2.0)
    # q_len < k_len, the documented difference: the drop-in's last queries are exactly those of the whole
    # sequence rotated by rotate_queries_and_keys (one centre); the original's are not (q centred at q_len // 2).
    k = rand((1, 2, 12, 16), 10, torch.float64)
    q_all = rand((1, 2, 12, 16), 11, torch.float64)
    q = q_all[:, :, -4:]
    full_q, full_k = ours_x.rotate_queries_and_keys(q_all, k)
    dq, dk = ours_x.rotate_queries_with_cached_keys(q, k)
    assert float((dq - full_q[:, :, -4:]).abs().max()) < 1e-12 and float((dk - full_k).abs().max()) < 1e-12
    oq, _ = orig_x.rotate_queries_with_cached_keys(q, k)
    assert float((oq.double() - full_q[:, :, -4:]).abs().max()) > 1e-3


def test_rotary_embedding_torch_unsupported_options_are_named():
    with pytest.raises(NotImplementedError, match="freqs_for='pixel'"):
        pc_ret.RotaryEmbedding(16, freqs_for="pixel")
    with pytest.raises(NotImplementedError, match="learned_freq"):
        pc_ret.RotaryEmbedding(16, learned_freq=True)
    with pytest.raises(ValueError, match="rotate_queries_and_keys"):
        pc_ret.RotaryEmbedding(16, use_xpos=True).rotate_queries_or_keys(torch.zeros(1, 1, 2, 16))


# ---- torchscale ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("offset", [0, 5, 5000])
@pytest.mark.parametrize("downscale", [False, True])
def test_torchscale_xpos(dtype, offset, downscale):
    x = rand((3, 10, 32), 12, dtype)
    ours_m, orig_m = pc_ts.XPOS(32, scale_base=512), ts_xpos.XPOS(32, scale_base=512).to(dtype)
    (y, ), (g, ) = fwd_bwd(lambda t: ours_m(t, offset=offset, downscale=downscale), x)
    (yr, ), (gr, ) = fwd_bwd(lambda t: orig_m(t, offset=offset, downscale=downscale), x)
    # Scales up to zeta_0^(-(L + offset)/2/512) (zeta_0 = 0.4/1.4), formed in float32 by torchscale.
    s = math.exp(abs(math.log(0.4 / 1.4)) * (10 + offset) / 2 / 512)
    tol = float32_angle_tol(x, offset + 10, s) * (1 + abs(math.log(0.4 / 1.4)) * (10 + offset) / 2)
    assert float((y.double() - yr.double()).abs().max()) <= tol
    assert float((g.double() - gr.double()).abs().max()) <= tol


# ---- zeta ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("use_xpos", [False, True])
def test_zeta_forward_tables(use_xpos):
    ours_m = pc_zeta.RotaryEmbedding(16, use_xpos=use_xpos, scale_base=64)
    orig_m = zeta_rope.RotaryEmbedding(16, use_xpos=use_xpos, scale_base=64)
    f, s = ours_m(40, "cpu")
    fr, sr = orig_m(40, "cpu")
    assert f.shape == fr.shape == (40, 16) and f.dtype == fr.dtype == torch.float32
    assert float((f - fr).abs().max()) <= 40 * 2.0**-22
    if use_xpos:
        assert float(((s - sr) / sr).abs().max()) <= 2.0**-18
    else:
        assert s == sr == 1.0


def test_zeta_apply_is_half_split_rope():
    ours_m = pc_zeta.RotaryEmbedding(32, base=10000)
    freqs, scale = ours_m(20, "cpu")
    t = rand((2, 4, 12, 32), 13, torch.float32)  # the last 12 of 20 positions
    (y, ), (g, ) = fwd_bwd(lambda a: pc_zeta.apply_rotary_pos_emb(a, freqs, scale), t)
    want = posenc.apply_rope(t, posenc.RopePlan(32, base=10000), offset=8, layout="NHLD")
    assert torch.equal(y, want)
    # The formula (HF rotate_half, float64) gives the same within float32 rounding; so does the torch fallback
    # for angles this module did not make.
    w = torch.tensor(posenc.RopePlan(32, base=10000).inv_freq, dtype=torch.float64)
    a = torch.arange(8, 20, dtype=torch.float64)[:, None] * torch.cat((w, w))[None, :]
    t64 = t.double()
    ref = t64 * a.cos() + torch.cat((-t64[..., 16:], t64[..., :16]), -1) * a.sin()
    assert float((y.double() - ref).abs().max()) <= 2.0**-21
    fallback = pc_zeta.apply_rotary_pos_emb(t, freqs.clone(), scale)  # a clone carries no plan
    assert float((fallback.double() - ref).abs().max()) <= 2.0**-21
    # The gradient is the transposed rotation: <y, v> = <t, g> for the v of fwd_bwd.
    v = rand(y.shape, 99, y.dtype)
    assert abs(float((y.double() * v.double()).sum() - (t.double() * g.double()).sum())) < 1e-4


def test_zeta_original_rotate_half_defect():
    # zeta's rotate_half unbinds the wrong axis: any dim but 4 raises, and at 4 the pairs are wrong.
    freqs, scale = zeta_rope.RotaryEmbedding(8)(5, "cpu")
    with pytest.raises((ValueError, RuntimeError)):
        zeta_rope.apply_rotary_pos_emb(torch.ones(1, 5, 8), freqs, scale)
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    assert zeta_rope.rotate_half(x).tolist() == [[-2.0, -4.0, 1.0, 3.0]]  # half-split's is [-3, -4, 1, 2]
    assert pc_zeta.rotate_half(x).tolist() == [[-3.0, -4.0, 1.0, 2.0]]


def test_zeta_xpos_queries_and_keys():
    ours_m = pc_zeta.RotaryEmbedding(16, use_xpos=True, scale_base=64)
    freqs, scale = ours_m(9, "cpu")
    q = rand((1, 2, 9, 16), 14, torch.float64)
    yq = pc_zeta.apply_rotary_pos_emb(q, freqs, scale)
    yk = pc_zeta.apply_rotary_pos_emb(q, freqs, scale ** -1)
    plan = posenc.XposPlan(16, scale_base=64, style="half_split")
    assert torch.equal(yq, posenc.apply_xpos(q, plan, center=4, layout="NHLD"))
    assert torch.equal(yk, posenc.apply_xpos(q, plan, center=4, downscale=True, layout="NHLD"))
