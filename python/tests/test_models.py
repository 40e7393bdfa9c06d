"""posenc.model_layers and RopePlan.from_hf_config(layer=...) on the hand-written model configs of
tests/data/hf/models against tests/golden/models.txt (gen_models.py: each family's layer rules and frequencies
from its reference implementation, in mpmath), as the C++ test model_plan_test.cpp does."""
from __future__ import annotations

import math

import numpy as np
import pytest

import posenc

from golden import data_dir, load

MODELS = data_dir("hf")
KINDS = ["full_attention", "sliding_attention", "chunked_attention"]

pytestmark = pytest.mark.skipif(MODELS is None, reason="tests/data/hf is not next to this checkout")


def cases():
    return load("models.txt") if MODELS is not None else []


@pytest.mark.parametrize("case", cases(), ids=lambda c: c.name)
def test_every_layer_matches_the_golden_file(case):
    path = MODELS / "models" / case.str("config")
    layers = posenc.model_layers(path)
    assert len(layers) == case.int("layers")
    rope, attention, window = case.array("rope"), case.array("attention"), case.array("window")
    plan_of, inv = case.array("plan"), case.array("plan_inv_freq")
    positions, scales = case.array("temp_positions"), case.array("temp_scale")
    for i, layer in enumerate(layers):
        assert layer["rope"] == bool(rope[i]), i
        assert layer["attention"] == KINDS[int(attention[i])], i
        assert layer["window"] == int(window[i]), i
        t = layer["temperature"]
        for p, want in zip(positions, scales[i]):
            got = 1.0 if t is None else 1 + t["attn_scale"] * math.log(math.floor((p + 1) / t["floor_scale"]) + 1)
            assert got == pytest.approx(want, rel=1e-15, abs=0)
        if plan_of[i] < 0:
            with pytest.raises(ValueError, match="has no RoPE"):
                posenc.RopePlan.from_hf_config(path, layer=i, seq_len=8192)
            continue
        plan = posenc.RopePlan.from_hf_config(path, layer=i, seq_len=8192)
        k = int(plan_of[i])
        assert plan.info["layer"]["attention"] == layer["attention"]
        assert plan.rotary_dim == int(case.array("plan_rotary_dim")[k])
        assert plan.magnitude == pytest.approx(float(case.array("plan_magnitude")[k]), rel=1e-15)
        want = inv[k][: plan.rotary_dim // 2]
        np.testing.assert_allclose(plan.inv_freq, want, rtol=4e-15, atol=0)


def test_layer_out_of_range_is_rejected():
    with pytest.raises(ValueError, match=r"layer 42 is not in \[0, 42\)"):
        posenc.RopePlan.from_hf_config(MODELS / "models" / "gemma2_9b.json", layer=42)
