"""RoPE fused with 8-bit quantisation and the pair-layout conversions, bound (issue 23 item 4), against the C++
golden file quant.txt (gen_quant.py: exact rotation, Fraction roundings) and the formulas written out here."""
import numpy as np
import pytest

import posenc
from golden import find, golden_dir

pytestmark = pytest.mark.skipif(golden_dir() is None, reason="the golden files (tests/golden) are not in this checkout")

FUSED = ["fused_half_split_d8", "fused_half_split_d64", "fused_interleaved_d8", "fused_interleaved_d64"]


def int8_codes(y, inv):
    """int8: round half to even of y * inv (float32 product), saturated; NaN -> 0 (detail/math/quant.hpp)."""
    v = (y.astype(np.float32) * np.float32(inv)).astype(np.float64)
    return np.where(np.isnan(v), 0, np.clip(np.rint(v), -128, 127)).astype(np.int8)


def case_inputs(name):
    c = find("quant.txt", name)
    plan = posenc.RopePlan(c.int("head_dim"), base=c.num("base"), style=c.str("style"))
    return c, plan, c.array("x").astype(np.float32), c.array("positions").astype(np.int64)


@pytest.mark.parametrize("name", FUSED)
def test_int8_dynamic_matches_the_rules_on_the_kernels_own_rotation(name):
    c, plan, x, pos = case_inputs(name)
    codes = np.empty(x.shape, dtype=np.int8)
    scales = np.empty(x.shape[:3], dtype=np.float32)
    posenc.apply_rope_quantized(x, plan, codes, positions=pos, format="int8", scales_out=scales)
    y = posenc.apply_rope(x, plan, positions=pos)  # the same rotation, unquantised
    want_scale = (np.abs(y).max(axis=-1) / np.float32(127.0)).astype(np.float32)
    np.testing.assert_array_equal(scales, want_scale)
    for idx in np.ndindex(*x.shape[:3]):
        s = want_scale[idx]
        inv = np.float32(1.0) / s if s != 0 else np.float32(0.0)
        np.testing.assert_array_equal(codes[idx], int8_codes(y[idx], inv))
    # Against the golden codes of the exact rotation: at most one step apart (where y sits on a boundary).
    assert np.abs(codes.astype(np.int64) - c.array("int8_dyn").astype(np.int64)).max() <= 1
    np.testing.assert_allclose(scales, c.array("int8_dyn_scale"), rtol=2e-6, atol=0)


@pytest.mark.parametrize("name", FUSED)
@pytest.mark.parametrize("fmt,key", [("int8", "int8"), ("fp8_e4m3", "e4m3"), ("fp8_e5m2", "e5m2")])
def test_given_scales_within_one_step_of_golden(name, fmt, key):
    c, plan, x, pos = case_inputs(name)
    codes = np.empty(x.shape, dtype=np.int8 if fmt == "int8" else np.uint8)
    scale = c.array(f"{key}_scale").astype(np.float32)
    posenc.apply_rope_quantized(x, plan, codes, positions=pos, format=fmt, scales=scale)
    want = c.array(key).astype(np.int64)
    got = codes.astype(np.int64)
    if fmt != "int8":  # fp8 bytes: sign in bit 7, magnitude codes ordered within a sign
        same_sign = (got >> 7) == (want >> 7)
        assert np.all(same_sign | ((got & 0x7F) == 0) | ((want & 0x7F) == 0))
        got, want = got & 0x7F, want & 0x7F
    assert np.abs(got - want).max() <= 1


def test_append_kv_quantized_contiguous_int8_dynamic():
    plan = posenc.RopePlan(16, base=10000.0)
    g = np.random.default_rng(4)
    k = g.standard_normal((2, 3, 2, 16)).astype(np.float32)
    v = g.standard_normal((2, 3, 2, 16)).astype(np.float32)
    kc = np.zeros((2, 8, 2, 16), dtype=np.int8)
    vc = np.zeros((2, 8, 2, 16), dtype=np.int8)
    ks = np.zeros((2, 8, 2), dtype=np.float32)
    vs = np.zeros((2, 8, 2), dtype=np.float32)
    seq_lens = np.array([0, 4], dtype=np.int64)
    posenc.rope_append_kv_quantized(k, v, kc, vc, plan, seq_lens=seq_lens, k_scales_out=ks, v_scales_out=vs)
    for n, start in enumerate(seq_lens):
        kq = np.empty((1, 3, 2, 16), dtype=np.int8)
        kqs = np.empty((1, 3, 2), dtype=np.float32)
        posenc.apply_rope_quantized(k[n:n + 1], plan, kq, offset=int(start), scales_out=kqs)
        np.testing.assert_array_equal(kc[n, start:start + 3], kq[0])
        np.testing.assert_array_equal(ks[n, start:start + 3], kqs[0])
        vs_want = (np.abs(v[n]).max(axis=-1) / np.float32(127.0)).astype(np.float32)
        np.testing.assert_array_equal(vs[n, start:start + 3], vs_want)
        for l in range(3):
            for h in range(2):
                np.testing.assert_array_equal(vc[n, start + l, h], int8_codes(v[n, l, h], np.float32(1.0) / vs_want[l, h]))
    assert not kc[0, 3:].any() and not kc[1, :4].any()  # nothing outside the new rows


def test_quantized_rejections_write_nothing():
    plan = posenc.RopePlan(16)
    x = np.ones((1, 2, 2, 16), dtype=np.float32)
    codes = np.full(x.shape, 7, dtype=np.uint8)
    with pytest.raises(TypeError, match="int8"):
        posenc.apply_rope_quantized(x, plan, codes, format="int8")
    with pytest.raises(ValueError):
        posenc.apply_rope_quantized(x, plan, codes, format="fp8_e4m3")  # fp8 needs given scales
    with pytest.raises(ValueError, match="format"):
        posenc.apply_rope_quantized(x, plan, np.zeros(x.shape, dtype=np.int8), format="int4")
    assert (codes == 7).all()


@pytest.mark.parametrize("rotary_dim,offset", [(16, 0), (8, 4)])
def test_convert_layout_commutes_with_rope(rotary_dim, offset):
    g = np.random.default_rng(5)
    x = g.standard_normal((2, 3, 2, 16))
    inter = posenc.RopePlan(16, base=500.0, style="interleaved", rotary_dim=rotary_dim, rotary_offset=offset)
    half = posenc.RopePlan(16, base=500.0, style="half_split", rotary_dim=rotary_dim, rotary_offset=offset)
    a = posenc.convert_rope_layout(posenc.apply_rope(x, inter, offset=9), "interleaved", "half_split", rotary_dim, offset)
    b = posenc.apply_rope(posenc.convert_rope_layout(x, "interleaved", "half_split", rotary_dim, offset), half, offset=9)
    # The same rotation up to rounding: the interleaved and half-split kernels order their FMAs differently.
    np.testing.assert_allclose(a, b, rtol=0, atol=4 * np.finfo(np.float64).eps)
    # The permutation itself: interleaved feature 2i + j is half-split feature j R/2 + i, the rest copied.
    y = posenc.convert_rope_layout(x, "interleaved", "half_split", rotary_dim, offset)
    r = rotary_dim
    for i in range(r // 2):
        for j in range(2):
            np.testing.assert_array_equal(y[..., offset + j * r // 2 + i], x[..., offset + 2 * i + j])
    np.testing.assert_array_equal(y[..., :offset], x[..., :offset])
    np.testing.assert_array_equal(posenc.convert_rope_layout(y, "half_split", "interleaved", rotary_dim, offset), x)


def test_convert_weight_layout_keeps_attention_scores():
    # q = W_q h, k = W_k h: scores of half-split RoPE with W equal those of interleaved RoPE with the permuted W.
    g = np.random.default_rng(6)
    heads, hd, d_in = 2, 8, 5
    wq, wk = g.standard_normal((heads * hd, d_in)), g.standard_normal((heads * hd, d_in))
    h = g.standard_normal((4, d_in))
    half = posenc.RopePlan(hd, style="half_split")
    inter = posenc.RopePlan(hd, style="interleaved")

    def scores(wq_, wk_, plan):
        q = (h @ wq_.T).reshape(1, 4, heads, hd)
        k = (h @ wk_.T).reshape(1, 4, heads, hd)
        q, k = posenc.apply_rope(q, plan), posenc.apply_rope(k, plan)
        return np.einsum("nlhd,nmhd->nhlm", q, k)

    pq = posenc.convert_rope_weight_layout(wq, heads, hd, "half_split", "interleaved")
    pk = posenc.convert_rope_weight_layout(wk, heads, hd, "half_split", "interleaved")
    np.testing.assert_allclose(scores(wq, wk, half), scores(pq, pk, inter), rtol=1e-12, atol=1e-12)
    bias = g.standard_normal(heads * hd)
    pb = posenc.convert_rope_weight_layout(bias, heads, hd, "half_split", "interleaved")
    np.testing.assert_array_equal(pb, pq[:, 0] * 0 + posenc.convert_rope_weight_layout(bias[:, None], heads, hd, "half_split",
                                                                                        "interleaved")[:, 0])
    with pytest.raises(ValueError, match="num_heads"):
        posenc.convert_rope_weight_layout(wq, 3, hd, "half_split", "interleaved")
