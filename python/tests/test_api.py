"""The rest of the API: version, ISA control, plans and caches, the properties the C++ tests check (inverse,
composition of shifts, re-rotation, q/k in one pass), and the helpers."""

from __future__ import annotations

import importlib.metadata

import numpy as np
import pytest

import posenc


def rng_x(shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def test_version_matches_the_headers_and_the_metadata():
    assert posenc.__version__ == posenc._posenc.__version__ == importlib.metadata.version("posenc")


def test_isa_control():
    default = posenc.isa()
    assert default in ("scalar", "avx2", "avx512", "neon") and posenc.cpu_supports(default)
    assert posenc.set_isa("scalar") == "scalar" and posenc.isa() == "scalar"
    assert posenc.reset_isa() == default == posenc.isa()
    with pytest.raises(ValueError, match="isa='sse9'"):
        posenc.set_isa("sse9")


def test_every_isa_gives_the_same_rotation_within_tolerance():
    plan = posenc.RopePlan(128, base=500000.0)
    x = rng_x((2, 33, 3, 128), np.float32)
    results = {}
    for name in ("scalar", "avx2", "avx512", "neon"):
        if posenc.cpu_supports(name):
            posenc.set_isa(name)
            results[name] = posenc.apply_rope(x, plan, offset=1000)
    posenc.reset_isa()
    ref = results.pop("scalar")
    for y in results.values():
        np.testing.assert_allclose(y, ref, atol=4e-6)


def test_plan_properties_and_cache_views():
    plan = posenc.RopePlan(64, base=1e4, style="interleaved", rotary_dim=32, rotary_offset=16)
    assert (plan.head_dim, plan.rotary_dim, plan.rotary_offset, plan.pairs, plan.style) == (64, 32, 16, 16, "interleaved")
    np.testing.assert_allclose(plan.inv_freq, 1e4 ** (-2 * np.arange(16) / 32), rtol=1e-15)
    assert plan.inv_freq.dtype == np.float64 and not plan.inv_freq.flags.writeable
    cache = posenc.RopeCache(plan, 50, "float64")
    assert (cache.max_positions, cache.dtype, cache.cos.shape) == (50, "float64", (50, 16))
    ang = np.arange(50)[:, None] * plan.inv_freq
    np.testing.assert_allclose(cache.cos, np.cos(ang), atol=1e-15)
    np.testing.assert_allclose(cache.sin, np.sin(ang), atol=1e-15)
    assert not cache.sin.flags.writeable
    assert cache.plan.config is None and cache.plan.rotary_dim == 32
    del plan  # the cache holds its own copy; its views keep the cache alive
    cos = cache.cos
    del cache
    assert cos.shape == (50, 16) and cos[0, 0] == 1.0
    assert "RopePlan(head_dim=64" in repr(posenc.RopePlan(64))


def test_explicit_and_sectioned_plans():
    p = posenc.RopePlan.from_inv_freq(8, [1.0, 0.5], rotary_offset=2, magnitude=2.0, logit_scale=1.5)
    assert (p.rotary_dim, p.magnitude, p.logit_scale, p.config) == (4, 2.0, 1.5, None)
    s = posenc.RopePlan.sectioned(16, [0, 4, 4])
    np.testing.assert_allclose(s.inv_freq, np.tile(1e4 ** (-np.arange(4) / 4), 2), rtol=1e-15)


def test_inverse_undoes_the_rotation():
    plan = posenc.RopePlan(32, style="interleaved")
    x = rng_x((2, 7, 3, 32))
    pos = np.array([[0, 5, 9, 100, 7, 3, 1], [2, 2, 2, 2, 2, 2, 2]])
    back = posenc.apply_rope(posenc.apply_rope(x, plan, pos), plan, pos, inverse=True)
    np.testing.assert_allclose(back, x, atol=1e-12)


def test_shift_composes_with_the_rotation_and_rerotate_switches_plans():
    plan = posenc.RopePlan(32)
    x = rng_x((1, 6, 2, 32))
    k = posenc.apply_rope(x, plan, offset=10)
    posenc.shift_rope(k, plan, -4)
    np.testing.assert_allclose(k, posenc.apply_rope(x, plan, offset=6), atol=1e-12)
    deltas = np.array([[1, -2, 3, 0, 5, -6]])
    k = posenc.apply_rope(x, plan, offset=10)
    assert posenc.shift_rope(k, plan, deltas) is k
    np.testing.assert_allclose(k, posenc.apply_rope(x, plan, np.arange(10, 16)[None] + deltas), atol=1e-12)
    long = posenc.RopePlan(32, scaling={"rope_type": "linear", "factor": 4.0})
    k = posenc.apply_rope(x, plan, offset=3)
    posenc.rerotate_rope(k, plan, long, offset=3)
    np.testing.assert_allclose(k, posenc.apply_rope(x, long, offset=3), atol=1e-12)


def test_qk_in_one_pass_equals_two_calls_and_position_forms_agree():
    plan = posenc.RopePlan(16)
    q, k = rng_x((2, 4, 4, 16)), rng_x((2, 4, 2, 16), seed=1)
    wq, wk = posenc.apply_rope(q, plan, starts=np.array([3, 8])), posenc.apply_rope(k, plan, starts=np.array([3, 8]))
    posenc.apply_rope_qk(q, k, plan, starts=np.array([3, 8], np.int32))
    np.testing.assert_array_equal(q, wq)
    np.testing.assert_array_equal(k, wk)
    per_token = np.array([3, 8])[:, None] + np.arange(4)
    np.testing.assert_array_equal(posenc.apply_rope(rng_x((2, 4, 4, 16)), plan, per_token.astype(np.int32)),
                                  posenc.apply_rope(rng_x((2, 4, 4, 16)), plan, starts=np.array([3, 8])))
    np.testing.assert_array_equal(posenc.apply_rope(rng_x((2, 4, 4, 16)), plan, per_token.tolist()),
                                  posenc.apply_rope(rng_x((2, 4, 4, 16)), plan, per_token))


def test_scaling_dict_forms():
    yarn = posenc.RopePlan(64, scaling={"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096})
    assert yarn.magnitude == pytest.approx(0.1 * np.log(4.0) + 1.0, abs=1e-15)
    ds = posenc.RopePlan(64, scaling={"rope_type": "deepseek_yarn", "factor": 40.0, "original_max_position_embeddings": 4096,
                                      "mscale": 1.0, "mscale_all_dim": 1.0})
    assert ds.magnitude == 1.0 and ds.logit_scale == pytest.approx((0.1 * np.log(40.0) + 1.0) ** 2)
    ntk = posenc.RopePlan(64, scaling={"rope_type": "ntk", "factor": 8.0})
    np.testing.assert_allclose(ntk.inv_freq, (1e4 * 8.0 ** (64 / 62)) ** (-2 * np.arange(32) / 64), rtol=1e-14)
    dyn_cfg = {"rope_type": "dynamic", "factor": 2.0, "max_position_embeddings": 2048}
    with pytest.raises(ValueError, match="depends on the sequence length and no seq_len was given"):
        posenc.RopePlan(64, scaling=dyn_cfg)  # no silent unscaled base
    dyn = posenc.RopePlan(64, scaling=dyn_cfg, seq_len=2048)
    np.testing.assert_allclose(dyn.inv_freq, 1e4 ** (-2 * np.arange(32) / 64), rtol=1e-14)  # n <= M: unscaled
    assert dyn.with_seq_len(4096).inv_freq[1] < dyn.inv_freq[1]
    fixed = posenc.RopePlan(64, scaling={"rope_type": "dynamic", "factor": 2.0, "max_position_embeddings": 2048,
                                         "dynamic_policy": "fixed_at_max"})
    np.testing.assert_array_equal(fixed.inv_freq, dyn.with_seq_len(4096).inv_freq)
    half = posenc.RopePlan(64, scaling={"partial_rotary_factor": 0.5, "rope_theta": 500000.0})
    assert (half.rotary_dim, half.config["base"]) == (32, 500000.0)


def test_xpos_qk_and_center():
    plan = posenc.XposPlan(16)
    q, k = rng_x((1, 5, 2, 16)), rng_x((1, 5, 2, 16), seed=1)
    wq = posenc.apply_xpos(q, plan, offset=4)
    wk = posenc.apply_xpos(k, plan, offset=4, downscale=True)
    posenc.apply_xpos_qk(q, k, plan, offset=4)
    np.testing.assert_array_equal(q, wq)
    np.testing.assert_array_equal(k, wk)
    assert posenc.xpos_default_center(5, 4) == 5
    assert plan.max_safe_distance("float16") == pytest.approx(3966, abs=1)
    x = rng_x((1, 5, 16))
    y = posenc.apply_xpos(x, plan, layout="NLD")
    back = posenc.apply_xpos(y, plan, layout="NLD", inverse=True)
    s2 = np.exp(2 * plan.log_zeta * ((np.arange(5) - 3) / 512.0)[:, None])  # s^2 per (token, pair)
    np.testing.assert_allclose(back, x * np.repeat(s2, 2, axis=1)[None], atol=1e-12)


def test_alibi_slopes_shards_concatenate_bit_for_bit():
    whole = posenc.alibi_slopes(12)
    parts = np.concatenate([posenc.alibi_slopes(12, head_begin=b, head_end=b + 4) for b in (0, 4, 8)])
    np.testing.assert_array_equal(whole, parts)
    np.testing.assert_array_equal(posenc.alibi_slopes(8), 2.0 ** -np.arange(1, 9))
    scores = np.zeros((2, 12, 1, 5), np.float32)
    posenc.add_alibi_bias(scores, starts=np.array([4, 2]), causal=True)
    assert np.isneginf(scores[1, :, 0, 3:]).all() and (scores[1, :, 0, 2] == 0).all()


def test_tables_and_helpers():
    t = posenc.sinusoidal_table(4, 6, dtype=np.float64)
    w = 1e4 ** (-2 * np.arange(3) / 6)
    np.testing.assert_allclose(t[:, 0::2], np.sin(np.arange(4)[:, None] * w), atol=1e-15)
    np.testing.assert_allclose(t[:, 1::2], np.cos(np.arange(4)[:, None] * w), atol=1e-15)
    pos = posenc.make_padded_positions(np.array([[1, 1, 7, 9]]), 1)
    np.testing.assert_array_equal(pos, [[1, 1, 2, 3]])
    assert posenc.t5_relative_bucket(-20, True) == 10 and posenc.t5_relative_bucket(20) == 26
    assert posenc.t5_relative_bucket(5, False) == 0
    np.testing.assert_array_equal(posenc.t5_relative_bucket(np.array([[-20, 20], [5, 0]])), [[10, 26], [21, 0]])
    np.testing.assert_array_equal(posenc.t5_bucket_table(1, 3, 2), [[posenc.t5_relative_bucket(j - 2) for j in range(3)]])


def test_rope_table_engine_layouts_match_the_cache():
    # An engine's own table, in each layout engines keep, rotates as posenc's RopeCache of the same values.
    plan = posenc.RopePlan(16, base=10000.0)
    cache = posenc.RopeCache(plan, 64, "float32")
    cos, sin = np.array(cache.cos), np.array(cache.sin)  # (64, 8)
    x = np.random.default_rng(0).standard_normal((2, 5, 3, 16)).astype(np.float32)
    want = posenc.apply_rope(x, cache, offset=40)
    hf_cos, hf_sin = np.concatenate([cos, cos], 1), np.concatenate([sin, sin], 1)  # HF: halves repeated
    tables = [
        posenc.RopeTable.separate(cos, sin, 16),
        posenc.RopeTable.separate(hf_cos, hf_sin, 16),
        posenc.RopeTable.cos_sin_cache(np.concatenate([cos, sin], 1), 16),
        posenc.RopeTable.interleaved_pairs(np.stack([cos, sin], -1), 16),
    ]
    for t in tables:
        np.testing.assert_array_equal(posenc.apply_rope(x, t, offset=40), want)
    half = posenc.RopeTable.cos_sin_cache(np.concatenate([cos, sin], 1).astype(np.float16), 16)
    np.testing.assert_allclose(posenc.apply_rope(x, half, offset=40), want, rtol=0, atol=4e-3)
    with pytest.raises(ValueError, match="position 64 is past the cache of 64 positions"):
        posenc.apply_rope(x, tables[0], offset=60)
    with pytest.raises(ValueError, match="cos and sin must be 2-D arrays of one shape"):
        posenc.RopeTable.separate(cos, sin[:, :4], 16)
