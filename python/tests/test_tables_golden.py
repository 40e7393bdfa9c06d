"""Sinusoidal tables and additions (tests/golden/sinusoidal.txt), T5 buckets (t5.txt), xPos (xpos.txt) and
MRoPE (mrope.txt) against the golden files, as the C++ suites, with their tolerances."""

from __future__ import annotations

import math

import numpy as np
import pytest

import posenc

from conftest import DTYPES, needs_golden
from golden import (MANTISSA, Case, as_double, copy, expect_close, find, full, is_numpy, load, names, out_like,
                    sinusoid_angle_bound, to_storage, tolerance)

pytestmark = needs_golden


def empty(shape, dtype):
    return full(shape, -7.0, dtype)


# ------------------------------------------------------------------------------------------------ sinusoidal


def sin_kw(c: Case):
    kw = {"base": c.num("base"), "style": c.str("layout")}
    if c.has("padding_idx"):
        kw["padding_idx"] = c.int("padding_idx")
    return kw


TABLE_CASES = [c.name for c in load("sinusoidal.txt") if c.has("table")] if names("sinusoidal.txt") else []


@pytest.mark.parametrize("name", TABLE_CASES)
def test_sinusoidal_table(name, isa):
    c = find("sinusoidal.txt", name)
    length, dim, offset = c.int("length"), c.int("dim"), c.int("offset")
    bound = sinusoid_angle_bound(offset + length, c.num("base"))
    for dtype in DTYPES:
        t = posenc.sinusoidal_table(out=empty((length, dim), dtype), offset=offset, **sin_kw(c))
        expect_close(t, c.array("table"), dtype, name, bound)
    # Allocated, and into transposed (column-major) storage: element (l, d) at d * L + l.
    t = posenc.sinusoidal_table(length, dim, offset=offset, dtype=np.float64, **sin_kw(c))
    expect_close(t, c.array("table"), "float64", name + " allocated", bound)
    col = np.full((dim, length), -7.0)
    posenc.sinusoidal_table(out=col.T, offset=offset, **sin_kw(c))
    expect_close(col.T, c.array("table"), "float64", name + " strided", bound)


ADD_CASES = [c.name for c in load("sinusoidal.txt") if c.has("y")] if names("sinusoidal.txt") else []


@pytest.mark.parametrize("name", ADD_CASES)
def test_add_sinusoidal(name, isa):
    c = find("sinusoidal.txt", name)
    pos = c.array("positions")
    if c.has("tokens"):  # fairseq: the positions come from the tokens
        np.testing.assert_array_equal(posenc.make_padded_positions(c.array("tokens"), c.int("padding_idx")), pos)
    bound = sinusoid_angle_bound(int(pos.max()), c.num("base"))
    for dtype in DTYPES:
        for in_place in (True, False):
            x = to_storage(c.array("x"), dtype)
            x0 = copy(x)
            y = posenc.add_sinusoidal(x, pos, out=x if in_place else out_like(x), **sin_kw(c))
            assert (y is x) == in_place
            if not in_place:
                assert (x == x0).all()
            expect_close(y, c.array("y"), dtype, f"{name} {'in place' if in_place else 'out of place'}", bound)


# ------------------------------------------------------------------------------------------------ T5


def t5_kw(c: Case):
    return {"bidirectional": c.int("bidirectional") != 0, "num_buckets": c.int("num_buckets"),
            "max_distance": c.int("max_distance")}


def test_t5_buckets_at_every_boundary():
    cases = [c for c in load("t5.txt") if c.has("relative")]
    assert len(cases) == 8
    for c in cases:
        rel, want = c.array("relative"), c.array("bucket")
        np.testing.assert_array_equal(posenc.t5_relative_bucket(rel, **t5_kw(c)), want, err_msg=c.name)
        for r, b in zip(rel.tolist(), want.tolist()):
            assert posenc.t5_relative_bucket(r, **t5_kw(c)) == b, f"{c.name} relative position {r}"


def test_t5_bucket_tables():
    cases = [c for c in load("t5.txt") if c.has("buckets")]
    assert len(cases) == 6
    for c in cases:
        lq, lk, off = c.int("query_len"), c.int("key_len"), c.int("query_offset")
        want = c.array("buckets")
        np.testing.assert_array_equal(posenc.t5_bucket_table(lq, lk, off, **t5_kw(c)), want, err_msg=c.name)
        b32 = posenc.t5_bucket_table(out=np.full((lq, lk), -1, np.int32), query_offset=off, **t5_kw(c))
        assert b32.dtype == np.int32
        np.testing.assert_array_equal(b32, want, err_msg=c.name + " int32")


# ------------------------------------------------------------------------------------------------ xPos


def xpos_relative_tolerance(dtype: str) -> float:
    return 1e-12 if dtype == "float64" else 2e-6 + math.ldexp(1.0, -MANTISSA[dtype] - 1)


def expect_xpos_close(got, c: Case, dtype: str, what: str) -> None:
    """expect_xpos_close of test_util.hpp: absolute or relative tolerance, plus the angle bound times the
    pair's norm."""
    y = c.array("y")
    g = as_double(got).reshape(y.shape)
    d = c.int("head_dim")
    angle_err = 1.5 * math.ldexp(float(c.int("offset") + y.shape[1]), -52)
    if c.str("style") == "interleaved":
        a, b = np.arange(0, d, 2), np.arange(1, d, 2)
    else:
        a, b = np.arange(d // 2), np.arange(d // 2, d)
    norm = np.zeros_like(y)
    pn = np.hypot(y[..., a], y[..., b])
    norm[..., a] = pn
    norm[..., b] = pn
    err = np.abs(g - y)
    rel = c.str("tolerance_mode") == "relative"
    tol = (xpos_relative_tolerance(dtype) * np.abs(y) if rel else tolerance(dtype, y)) + angle_err * norm
    bad = np.flatnonzero(~(err <= tol))
    assert bad.size == 0, f"{what} [{dtype}]: {bad.size} elements past tolerance, first at {bad[:3].tolist()}"


@pytest.mark.parametrize("name", names("xpos.txt"))
def test_xpos_golden(name, isa):
    c = find("xpos.txt", name)
    plan = posenc.XposPlan(c.int("head_dim"), c.num("scale_base"), c.num("gamma"), c.num("base"), c.str("style"))
    p0, n_len = c.int("offset"), c.array("x").shape[1]
    center = None
    if c.int("center_default") != 0:
        assert posenc.xpos_default_center(n_len, p0) == c.int("center")
    else:
        center = c.int("center")
    down = c.int("downscale") != 0
    distance = max(abs(p0 + l - c.int("center")) for l in range(n_len))
    far = c.str("tolerance_mode") == "relative"
    assert (distance > plan.max_safe_distance("float16")) == far
    for dtype in DTYPES:
        if dtype == "float16" and far:
            continue  # the outputs (~1e+-32) do not exist in half: skipped there, as in the C++ suite
        x = to_storage(c.array("x"), dtype)
        x0 = copy(x)
        y = posenc.apply_xpos(x, plan, offset=p0, center=center, downscale=down, out=out_like(x), layout="NLD")
        assert (x == x0).all()
        expect_xpos_close(y, c, dtype, name + " out of place")
        posenc.apply_xpos(x, plan, offset=p0, center=center, downscale=down, out=x, layout="NLD")
        expect_xpos_close(x, c, dtype, name + " in place")
        # The transpose undoes the rotation and applies the same scale again: s^2 x for the forward's s.
        if is_numpy(y):
            back = posenc.apply_xpos(y, plan, offset=p0, center=center, downscale=down, inverse=True, layout="NLD")
            assert back is not y


# ------------------------------------------------------------------------------------------------ MRoPE


@pytest.mark.parametrize("name", names("mrope.txt"))
def test_mrope_golden(name, isa):
    c = find("mrope.txt", name)
    d = c.int("head_dim")
    sections = [int(s) for s in c.str("sections").split(",")]
    layout = c.str("mrope_layout")
    if c.str("freq_mode") == "sectioned":
        rp = posenc.RopePlan.sectioned(d, sections, base=c.num("base"))
    else:
        rp = posenc.RopePlan(d, base=c.num("base"), rotary_dim=c.int("rotary_dim"))
    plan = posenc.MropePlan(rp, sections, layout)
    np.testing.assert_array_equal(plan.axis, c.array("axis"))
    np.testing.assert_allclose(rp.inv_freq, c.array("inv_freq"), rtol=1e-14, atol=0)
    pos = c.array("positions")
    bound = 1.5 * math.ldexp(float(pos.max() + 1), -52)
    for dtype in DTYPES:
        x = to_storage(c.array("x"), dtype)
        x0 = copy(x)
        y = posenc.apply_mrope(x, plan, pos, out=out_like(x))
        assert (x == x0).all()
        expect_close(y, c.array("y"), dtype, name + " out of place", bound)
        assert posenc.apply_mrope(x, plan, pos, out=x) is x
        expect_close(x, c.array("y"), dtype, name + " in place", bound)
        back = posenc.apply_mrope(y, plan, pos, inverse=True, out=y)
        expect_close(back, c.array("x"), dtype, name + " inverse", 2 * bound + 2 * float(tolerance(dtype, np.ones(1))[0]))
