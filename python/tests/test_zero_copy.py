"""Zero copy: results land in the caller's buffer (out=x is x itself, rotated in place), strided views of a
fused QKV buffer are rotated where they are, layouts only permute strides, and nothing outside the view moves."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import posenc

from conftest import HAS_TORCH


def address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def rope_ref(x: np.ndarray, plan: posenc.RopePlan, pos: np.ndarray) -> np.ndarray:
    """Hugging Face's half-split formula in float64: x * cos + rotate_half(x) * sin over the window."""
    x = np.asarray(x, dtype=np.float64)
    r, o = plan.rotary_dim, plan.rotary_offset
    ang = pos[..., None].astype(np.float64) * plan.inv_freq  # (N, L, R/2)
    cos = np.concatenate([np.cos(ang)] * 2, -1)[:, :, None, :] * plan.magnitude
    sin = np.concatenate([np.sin(ang)] * 2, -1)[:, :, None, :] * plan.magnitude
    w = x[..., o:o + r]
    rot = np.concatenate([-w[..., r // 2:], w[..., : r // 2]], -1)
    y = x.copy()
    y[..., o:o + r] = w * cos + rot * sin
    return y


def positions(n, l, offset=0):
    return np.broadcast_to(np.arange(offset, offset + l), (n, l))


def test_out_is_x_rotates_in_place():
    plan = posenc.RopePlan(64)
    x = np.random.default_rng(1).standard_normal((2, 5, 3, 64)).astype(np.float32)
    ref = rope_ref(x, plan, positions(2, 5, 7))
    a = address(x)
    y = posenc.apply_rope(x, plan, offset=7, out=x)
    assert y is x and address(x) == a
    np.testing.assert_allclose(x, ref, atol=2e-6)


def test_out_given_is_written_and_returned():
    plan = posenc.RopePlan(32, style="interleaved")
    x = np.random.default_rng(2).standard_normal((1, 4, 2, 32))
    x0 = x.copy()
    out = np.full_like(x, np.nan)
    y = posenc.apply_rope(x, plan, out=out)
    assert y is out
    np.testing.assert_array_equal(x, x0)
    assert np.isfinite(out).all()


def test_fused_qkv_slices_rotate_in_place_without_touching_the_rest():
    n, l, hq, hk, d = 2, 6, 4, 2, 32
    row = (hq + 2 * hk) * d
    rng = np.random.default_rng(3)
    qkv = rng.standard_normal((n, l, row)).astype(np.float32)
    before = qkv.copy()
    q = qkv[..., : hq * d].reshape(n, l, hq, d)
    k = qkv[..., hq * d:(hq + hk) * d].reshape(n, l, hk, d)
    assert np.shares_memory(q, qkv) and np.shares_memory(k, qkv) and not q.flags.c_contiguous
    plan = posenc.RopePlan(d)
    past = np.array([3, 11])
    # q alone, through its strides.
    assert posenc.apply_rope(q, plan, starts=past, out=q) is q
    np.testing.assert_allclose(q, rope_ref(before[..., : hq * d].reshape(n, l, hq, d), plan,
                                           past[:, None] + np.arange(l)), atol=2e-6)
    np.testing.assert_array_equal(qkv[..., hq * d:], before[..., hq * d:])  # k and v untouched
    # q and k in one pass: v untouched.
    qkv[...] = before
    posenc.apply_rope_qk(q, k, plan, starts=past)
    pos = past[:, None] + np.arange(l)
    np.testing.assert_allclose(q, rope_ref(before[..., : hq * d].reshape(n, l, hq, d), plan, pos), atol=2e-6)
    np.testing.assert_allclose(k, rope_ref(before[..., hq * d:(hq + hk) * d].reshape(n, l, hk, d), plan, pos), atol=2e-6)
    np.testing.assert_array_equal(qkv[..., (hq + hk) * d:], before[..., (hq + hk) * d:])


def test_nhld_layout_is_a_stride_permutation():
    plan = posenc.RopePlan(16)
    x = np.random.default_rng(4).standard_normal((2, 3, 5, 16)).astype(np.float32)  # (N, H, L, D)
    want = posenc.apply_rope(np.ascontiguousarray(x.transpose(0, 2, 1, 3)), plan, offset=2).transpose(0, 2, 1, 3)
    a = address(x)
    posenc.apply_rope(x, plan, offset=2, out=x, layout="NHLD")
    assert address(x) == a
    np.testing.assert_array_equal(x, want)
    # (L, D), (L, H, D) and (N, L, D) views are unit dimensions of the same memory.
    ld = np.random.default_rng(5).standard_normal((7, 16))
    np.testing.assert_array_equal(posenc.apply_rope(ld, plan), posenc.apply_rope(ld[None, :, None, :], plan)[0, :, 0])
    np.testing.assert_array_equal(posenc.apply_rope(ld[:, None], plan, layout="LHD"),
                                  posenc.apply_rope(ld[None, :, None], plan)[0])
    np.testing.assert_array_equal(posenc.apply_rope(ld[None], plan, layout="NLD"),
                                  posenc.apply_rope(ld[None, :, None], plan)[:, :, 0])


def test_any_positive_strides():
    plan = posenc.RopePlan(8)
    big = np.random.default_rng(6).standard_normal((2, 10, 3, 20))
    view = big[:, ::3, ::2, 4:12]  # every third token, every other head, a window of each row
    before = big.copy()
    want = posenc.apply_rope(np.ascontiguousarray(view), plan, offset=5)
    posenc.apply_rope(view, plan, offset=5, out=view)
    np.testing.assert_array_equal(view, want)
    mask = np.ones(big.shape, bool)
    mask[:, ::3, ::2, 4:12] = False
    np.testing.assert_array_equal(big[mask], before[mask])


def test_negative_strides_are_rejected_and_nothing_is_written():
    plan = posenc.RopePlan(8)
    x = np.random.default_rng(7).standard_normal((1, 4, 1, 8)).astype(np.float32)
    x0 = x.copy()
    rev = x[:, ::-1]
    with pytest.raises(ValueError, match=r"stride\(1\)=-8 must be >= 0"):
        posenc.apply_rope(rev, plan, out=rev)
    np.testing.assert_array_equal(x, x0)


def test_read_only_output_is_refused():
    x = np.zeros((1, 2, 1, 8), np.float32)
    x.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        posenc.apply_rope(x, posenc.RopePlan(8), out=x)
    posenc.apply_rope(x, posenc.RopePlan(8))  # a read-only input is fine


def test_other_dtype_output_rounds_once():
    """float32 q into a float16 KV cache: the float result rounded once (or, where it sits on a tie, a 16-bit
    ulp apart)."""
    plan = posenc.RopePlan(64)
    x = np.random.default_rng(8).standard_normal((1, 9, 4, 64)).astype(np.float32)
    y16 = posenc.apply_rope(x, plan, offset=100, out=np.empty(x.shape, np.float16))
    y32 = posenc.apply_rope(x, plan, offset=100)
    diff = np.abs(y16.astype(np.float64) - y32.astype(np.float16).astype(np.float64))
    ulp = np.spacing(np.abs(y32).astype(np.float16)).astype(np.float64)
    assert (diff <= ulp).all()
    assert (diff == 0).mean() > 0.99


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_dtypes_in_place_match_the_reference(dtype):
    plan = posenc.RopePlan(32, rotary_dim=16, rotary_offset=8)
    x = np.random.default_rng(9).uniform(-1, 1, (2, 3, 2, 32)).astype(dtype)
    ref = rope_ref(x, plan, positions(2, 3, 40))
    posenc.apply_rope(x, plan, offset=40, out=x)
    tol = {"float32": 2e-6, "float64": 1e-12, "float16": 1e-3}[dtype]
    np.testing.assert_allclose(x.astype(np.float64), ref, atol=tol)


def test_gil_is_released_while_the_kernel_runs():
    plan = posenc.RopePlan(128)
    x = np.ones((1, 4096, 32, 128), np.float32)
    done = threading.Event()
    count = 0

    def work():
        for _ in range(3):
            posenc.apply_rope(x, plan, out=x)
        done.set()

    t = threading.Thread(target=work)
    t.start()
    time.sleep(0)
    while not done.is_set():
        count += 1
    t.join()
    assert count > 1000, f"the main thread ran only {count} iterations while posenc worked"


def test_bfloat16_through_dlpack_in_place():
    """A bfloat16 DLPack array (tests/bf16.py: what torch.bfloat16 tensors export) is rotated in its memory."""
    from bf16 import BF16Array

    plan = posenc.RopePlan(16)
    x32 = np.random.default_rng(10).uniform(-1, 1, (1, 3, 2, 16)).astype(np.float32)
    xb = BF16Array.from_float(x32)
    a = address(xb.bits)
    want = posenc.apply_rope(xb.to_float(), plan, offset=5)
    assert posenc.apply_rope(xb, plan, offset=5, out=xb) is xb and address(xb.bits) == a
    np.testing.assert_allclose(xb.to_float(), want, atol=2e-6 + 2.0**-8)
    strided = BF16Array(np.zeros((1, 3, 4, 16), np.uint16)[:, :, ::2])  # every other head: strides 128, 32, 1
    posenc.apply_rope(BF16Array.from_float(x32), plan, offset=5, out=strided)
    np.testing.assert_allclose(strided.to_float(), want, atol=2e-6 + 2.0**-8)
    with pytest.raises(TypeError, match="pass out="):
        posenc.apply_rope(xb, plan)


def test_empty_arrays_and_foreign_byte_order():
    plan = posenc.RopePlan(8)
    for shape in ((0, 3, 1, 8), (2, 0, 1, 8), (1, 2, 0, 8)):
        assert posenc.apply_rope(np.zeros(shape, np.float32), plan).shape == shape
    with pytest.raises(TypeError, match="native byte order"):
        posenc.apply_rope(np.zeros((1, 2, 1, 8), ">f4"), plan)
    with pytest.raises(TypeError, match="dtype"):
        posenc.apply_rope(np.zeros((1, 2, 1, 8), object), plan)


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
def test_torch_tensors_zero_copy_and_bfloat16():
    import torch

    plan = posenc.RopePlan(64)
    x = torch.randn(2, 5, 4, 64)
    ptr = x.data_ptr()
    ref = posenc.apply_rope(x.numpy().copy(), plan, offset=3)
    assert posenc.apply_rope(x, plan, offset=3, out=x) is x and x.data_ptr() == ptr
    np.testing.assert_allclose(x.numpy(), ref, atol=2e-6)
    xb = torch.randn(2, 5, 4, 64).to(torch.bfloat16)
    yb = posenc.apply_rope(xb, plan)
    assert isinstance(yb, torch.Tensor) and yb.dtype == torch.bfloat16
    with pytest.raises(ValueError, match="requires grad"):
        posenc.apply_rope(torch.randn(1, 2, 1, 64, requires_grad=True), plan)
