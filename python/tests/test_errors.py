"""Error mapping: posenc's status message as ValueError (TypeError for dtypes), and nothing written."""

from __future__ import annotations

import numpy as np
import pytest

import posenc


def rng_x(shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def test_bad_head_dim_in_place_names_x_and_writes_nothing():
    plan = posenc.RopePlan(64)
    x = rng_x((1, 4, 2, 96))
    x0 = x.copy()
    with pytest.raises(ValueError) as e:
        posenc.apply_rope(x, plan, out=x)
    assert str(e.value) == "posenc::apply_rope: x head dim (extent 3)=96 does not match the plan's head_dim=64"
    np.testing.assert_array_equal(x, x0)


def test_out_of_place_errors_leave_out_untouched():
    plan = posenc.RopePlan(8)
    x = rng_x((2, 3, 1, 8))
    out = np.full_like(x, 7.0)
    with pytest.raises(ValueError, match=r"posenc::apply_rope: positions per_token shape \(2, 4\) does not match \(N, L\)=\(2, 3\)"):
        posenc.apply_rope(x, plan, np.zeros((2, 4), np.int64), out=out)
    with pytest.raises(ValueError, match=r"position\[1, 2\]=-1 must be >= 0"):
        posenc.apply_rope(x, plan, np.array([[0, 1, 2], [0, 1, -1]]), out=out)
    with pytest.raises(ValueError, match="out shape"):
        posenc.apply_rope(x, plan, out=np.zeros((2, 3, 2, 8), np.float32))
    with pytest.raises(ValueError, match="overlaps"):
        big = rng_x((2, 4, 1, 8))
        posenc.apply_rope(big[:, :3], plan, out=big[:, 1:])
    np.testing.assert_array_equal(out, 7.0)


def test_cache_bounds_and_sequence_count():
    plan = posenc.RopePlan(8)
    cache = posenc.RopeCache(plan, 10)
    x = rng_x((2, 3, 1, 8))
    x0 = x.copy()
    with pytest.raises(ValueError, match="position 10 is past the cache of 10 positions"):
        posenc.apply_rope(x, cache, offset=8, out=x)
    with pytest.raises(ValueError, match=r"starts \(one start per sequence\) must have shape \(N,\) = \(2,\), got \(3,\)"):
        posenc.apply_rope(x, cache, starts=np.array([0, 1, 2]), out=x)
    np.testing.assert_array_equal(x, x0)


def test_binding_level_rejections():
    plan = posenc.RopePlan(8)
    with pytest.raises(TypeError, match="dtype int32"):
        posenc.apply_rope(np.zeros((1, 2, 1, 8), np.int32), plan)
    with pytest.raises(TypeError, match="complex"):
        posenc.apply_rope(np.zeros((1, 2, 1, 8), np.complex64), plan)
    with pytest.raises(ValueError, match="layout='LHD'"):
        posenc.apply_rope(np.zeros((2, 1, 8), np.float32), plan)
    with pytest.raises(ValueError, match="layout 'NLHD' needs 4"):
        posenc.apply_rope(np.zeros((2, 1, 8), np.float32), plan, layout="NLHD")
    with pytest.raises(ValueError, match="offset=3 must be 0 when positions are given"):
        posenc.apply_rope(np.zeros((1, 2, 1, 8), np.float32), plan, np.array([0]), offset=3)
    with pytest.raises(TypeError, match="positions must be integers"):
        posenc.apply_rope(np.zeros((1, 2, 1, 8), np.float32), plan, np.array([0.5]))
    with pytest.raises(TypeError, match="RopePlan, RopeCache or RopeTable"):
        posenc.apply_rope(np.zeros((1, 2, 1, 8), np.float32), "plan")


def test_qk_same_tensor_and_dtype_mismatch():
    plan = posenc.RopePlan(8)
    q = rng_x((1, 2, 2, 8))
    q0 = q.copy()
    with pytest.raises(ValueError, match="k and q are the same tensor"):
        posenc.apply_rope_qk(q, q, plan)
    with pytest.raises(TypeError, match="must have one dtype"):
        posenc.apply_rope_qk(q, q.astype(np.float64), plan)
    np.testing.assert_array_equal(q, q0)


def test_plan_configuration_errors():
    with pytest.raises(ValueError, match="rotary_dim=7 must be even and > 0"):
        posenc.RopePlan(8, rotary_dim=7)
    with pytest.raises(ValueError, match="rotary_offset=4 with rotary_dim=8 does not fit head_dim=8"):
        posenc.RopePlan(8, rotary_offset=4)
    with pytest.raises(ValueError, match="style='neox' is not one of: interleaved, half_split"):
        posenc.RopePlan(8, style="neox")
    with pytest.raises(ValueError, match=r"scaling has unknown key\(s\) fctor"):
        posenc.RopePlan(8, scaling={"rope_type": "linear", "fctor": 2})
    with pytest.raises(ValueError, match=r'scaling.factor is missing \(required for scaling.rope_type="linear"\)'):
        posenc.RopePlan(8, scaling={"rope_type": "linear"})
    with pytest.raises(ValueError, match="scaling.factor=0 must be finite and > 0"):
        posenc.RopePlan(8, scaling={"type": "ntk", "factor": 0})
    with pytest.raises(ValueError, match='scaling.factor="2" must be a number, got string'):
        posenc.RopePlan(8, scaling={"rope_type": "linear", "factor": "2"})
    with pytest.raises(ValueError, match="base=10 and scaling.rope_theta=20 differ"):
        posenc.RopePlan(8, base=10, scaling={"rope_theta": 20})
    with pytest.raises(ValueError, match="not built from a configuration"):
        posenc.RopePlan.from_inv_freq(8, [1.0, 0.1, 0.01, 0.001]).with_seq_len(5)
    with pytest.raises(ValueError, match="max_positions=-1 must be >= 0"):
        posenc.RopeCache(posenc.RopePlan(8), -1)


def test_other_functions_reject_without_writing():
    plan, other = posenc.RopePlan(8), posenc.RopePlan(8, rotary_dim=4)
    k = rng_x((1, 3, 1, 8))
    k0 = k.copy()
    with pytest.raises(ValueError, match="plans differ in layout"):
        posenc.rerotate_rope(k, plan, other)
    with pytest.raises(ValueError, match=r"deltas shape \(1, 2\) does not match k \(N, L\)=\(1, 3\)"):
        posenc.shift_rope(k, plan, np.zeros((1, 2), np.int64))
    s = np.zeros((2, 3, 4), np.float32)
    with pytest.raises(ValueError, match="scores has 2 heads where the configuration's shard has 4"):
        posenc.add_alibi_bias(s, num_heads=4)
    with pytest.raises(ValueError, match="dim=7 must be even and > 0"):
        posenc.sinusoidal_table(3, 7)
    with pytest.raises(ValueError, match="max_distance=4 must exceed the exact range 8"):
        posenc.t5_relative_bucket(3, True, 32, 4)
    x = rng_x((1, 2, 8))
    with pytest.raises(ValueError, match="center is required"):
        posenc.apply_xpos(x, posenc.XposPlan(8), np.zeros((1, 2), np.int64), layout="NLD")
    np.testing.assert_array_equal(k, k0)
    np.testing.assert_array_equal(s, 0)
