"""RoPE against tests/golden/rope_basic.txt and rope_scaling.txt (mpmath references), as the C++ suite
RopeGolden: every case, every dtype, plan / float cache / double cache, in place and out of place, every ISA
the CPU has, with the C++ tolerances (tolerance<T> + the angle bound). The plan of each case is built through
the Python API (RopePlan with a Hugging Face-style scaling dict), so the dict mapping is checked too."""

from __future__ import annotations

import numpy as np
import pytest

import posenc

from conftest import DTYPES, needs_golden
from golden import Case, angle_error_bound, copy, expect_close, find, names, out_like, to_storage

pytestmark = needs_golden

FILES = ["rope_basic.txt", "rope_scaling.txt"]
CASES = [(f, n) for f in FILES for n in names(f)]


def scaling_of(c: Case):
    """The RopePlan arguments of a case (test_util.hpp's rope_config_of, in the Python API's terms)."""
    kind = c.str("scaling") if c.has("scaling") else "none"
    if kind == "none":
        return None, None
    if kind == "linear":
        return {"rope_type": "linear", "factor": c.num("factor")}, None
    if kind == "ntk":
        return {"rope_type": "ntk", "factor": c.num("base_rescale_factor")}, None
    if kind == "dynamic_ntk":
        return {
            "rope_type": "dynamic",
            "factor": c.num("factor"),
            "max_position_embeddings": c.int("original_max_positions"),
            "dynamic_policy": "per_length" if c.str("policy") == "hf" else "fixed_at_max",
        }, None
    if kind in ("yarn", "deepseek_yarn"):
        s = {
            "rope_type": kind,
            "factor": c.num("factor"),
            "original_max_position_embeddings": c.int("original_max_positions"),
            "beta_fast": c.num("beta_fast"),
            "beta_slow": c.num("beta_slow"),
            "mscale": c.num("mscale"),
            "mscale_all_dim": c.num("mscale_all_dim"),
            "truncate": c.int("truncate") != 0,
        }
        if c.has("attention_factor"):
            s["attention_factor"] = c.num("attention_factor")
        return s, None
    if kind == "llama3":
        return {
            "rope_type": "llama3",
            "factor": c.num("factor"),
            "low_freq_factor": c.num("low_freq_factor"),
            "high_freq_factor": c.num("high_freq_factor"),
            "original_max_position_embeddings": c.int("original_max_positions"),
        }, None
    if kind == "longrope":
        return {
            "rope_type": "longrope",
            "short_factor": c.array("short_factor").tolist(),
            "long_factor": c.array("long_factor").tolist(),
            "original_max_position_embeddings": c.int("original_max_positions"),
            "factor": c.num("factor"),
        }, None
    if kind == "freq_factors":
        return None, c.array("freq_factors")
    raise AssertionError(f"{c.name}: unknown scaling {kind}")


def plan_of(c: Case) -> posenc.RopePlan:
    scaling, freq_factors = scaling_of(c)
    return posenc.RopePlan(
        c.int("head_dim"),
        base=c.num("base"),
        style=c.str("style"),
        rotary_dim=c.int("rotary_dim"),
        rotary_offset=c.int("rotary_offset"),
        scaling=scaling,
        seq_len=c.int("seq_len"),
        freq_factors=freq_factors,
    )


def positions_of(c: Case):
    """The case's position keywords: offset, per-sequence starts or per-token ids."""
    form = c.str("pos_form")
    if form == "offset":
        return {"offset": c.int("offset")}
    if form == "per_sequence":
        return {"starts": c.array("seq_offsets")}
    return {"positions": c.array("positions")}


@pytest.mark.parametrize("file,name", CASES)
def test_plan_matches(file, name):
    c = find(file, name)
    plan = plan_of(c)
    w = c.array("inv_freq")
    assert plan.pairs == w.size
    np.testing.assert_allclose(plan.inv_freq, w, rtol=1e-14, atol=0)
    assert plan.magnitude == pytest.approx(c.num("magnitude"), rel=1e-15, abs=0)
    assert plan.logit_scale == pytest.approx(c.num("logit_scale"), rel=1e-15, abs=0)
    assert plan.rotary_dim == c.int("rotary_dim")
    assert plan.rotary_offset == c.int("rotary_offset")


@pytest.mark.parametrize("file,name", CASES)
def test_all_dtypes_and_paths(file, name, isa):
    c = find(file, name)
    plan = plan_of(c)
    max_pos = int(c.array("positions").max())
    sources = {
        "plan": plan,
        "cache<float>": posenc.RopeCache(plan, max_pos + 1, "float32"),
        "cache<double>": posenc.RopeCache(plan, max_pos + 1, "float64"),
    }
    pos_kw = positions_of(c)
    inverse = c.str("direction") == "inverse"
    bound = angle_error_bound(c)
    for dtype in DTYPES:
        for path, src in sources.items():
            for in_place in (True, False):
                x = to_storage(c.array("x"), dtype)
                x0 = copy(x)
                what = f"{name} {path} {'in place' if in_place else 'out of place'} [{isa}]"
                y = posenc.apply_rope(x, src, **pos_kw, inverse=inverse, out=x if in_place else out_like(x))
                if in_place:
                    assert y is x
                else:
                    assert y is not x
                    assert (x == x0).all(), f"{what}: input modified"
                tol = "float32" if dtype == "float64" and path == "cache<float>" else None
                expect_close(y, c.array("y"), dtype, what, bound, tol_dtype=tol)
