"""ALiBi against tests/golden/alibi.txt (as the C++ suite AlibiGolden): slopes and bias tensors in every dtype
and ISA with tolerance<T>; add_alibi_bias onto zero scores equals the bias; explicit double slopes give the
configuration's bits; the fp32 arithmetic's cases bit for bit in float32."""

from __future__ import annotations

import numpy as np
import pytest

import posenc

from conftest import DTYPES, needs_golden
from golden import Case, as_double, expect_close, find, full, names

pytestmark = needs_golden


def shard(c: Case):
    kw = {"num_heads": c.int("num_heads"), "max_bias": c.num("max_bias")}
    if c.has("head_begin"):
        kw["head_begin"] = c.int("head_begin")
        kw["head_end"] = c.int("head_end")
    return kw


def zeros(shape, dtype):
    return full(shape, 0.0, dtype)


@pytest.mark.parametrize("name", names("alibi.txt"))
def test_alibi_golden(name, isa):
    c = find("alibi.txt", name)
    kw = shard(c)
    form = c.str("form") if c.has("form") else "linear"
    if c.has("slopes"):
        s = c.array("slopes")
        got = posenc.alibi_slopes(**kw)  # float64 by default: exp2 of an exact exponent, within 2 ulp
        np.testing.assert_allclose(got, s, rtol=4e-16, atol=0)
        for dtype in DTYPES:
            out = posenc.alibi_slopes(**kw, out=zeros(s.shape, dtype))
            expect_close(out, s, dtype, f"{name} alibi_slopes")
        return
    if c.has("arithmetic"):  # fp32: every value one float rounding, so float32 bit for bit; float64 refused
        x, y, bias = c.array("x"), c.array("y"), c.array("bias")
        offset = c.int("query_offset")
        b = posenc.alibi_bias(**kw, query_offset=offset, form=form, out=zeros(x.shape, "float32"), arithmetic="fp32")
        np.testing.assert_array_equal(b, bias.astype(np.float32), err_msg=f"{name} alibi_bias fp32")
        z = x.astype(np.float32).reshape((1,) + x.shape)
        posenc.add_alibi_bias(z, **kw, offset=offset, form=form, arithmetic="fp32")
        np.testing.assert_array_equal(z[0], y.astype(np.float32), err_msg=f"{name} add_alibi_bias fp32")
        w = x.astype(np.float32).reshape((1,) + x.shape)
        posenc.add_alibi_bias(w, slopes=posenc.alibi_slopes(**kw), offset=offset, form=form, arithmetic="fp32")
        np.testing.assert_array_equal(w, z, err_msg=f"{name} add_alibi_bias fp32, explicit slopes")
        d = x.reshape((1,) + x.shape).copy()
        with pytest.raises(ValueError, match="double scores"):
            posenc.add_alibi_bias(d, **kw, offset=offset, form=form, arithmetic="fp32")
        np.testing.assert_array_equal(d[0], x)
        return
    expected = c.array("bias")
    h, lq, lk = expected.shape
    offset = c.int("query_offset")
    for dtype in DTYPES:
        b = posenc.alibi_bias(**kw, query_offset=offset, form=form, out=zeros((h, lq, lk), dtype))
        expect_close(b, expected, dtype, f"{name} alibi_bias")
        z = zeros((1, h, lq, lk), dtype)
        assert posenc.add_alibi_bias(z, **kw, offset=offset, form=form) is z
        expect_close(z, expected, dtype, f"{name} add_alibi_bias")
        slopes = posenc.alibi_slopes(**kw)
        w = zeros((1, h, lq, lk), dtype)
        posenc.add_alibi_bias(w, slopes=slopes, offset=offset, form=form)
        assert (as_double(w) == as_double(z)).all() or np.array_equal(
            np.isnan(as_double(w)), np.isnan(as_double(z))), f"{name}: explicit slopes differ from the configuration"


def test_alibi_bias_allocates_and_masks():
    b = posenc.alibi_bias(4, 3, 5, query_offset=2, causal=True)
    assert b.shape == (4, 3, 5) and b.dtype == np.float32
    s = posenc.alibi_slopes(4)
    for i in range(3):
        for j in range(5):
            q = i + 2
            if j > q:
                assert np.all(np.isneginf(b[:, i, j]))
            else:
                np.testing.assert_allclose(b[:, i, j], (s * (j - q)).astype(np.float32))
