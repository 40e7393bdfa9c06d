"""posenc.model_layers and RopePlan.from_hf_config(layer=...) on the hand-written model configs of
tests/data/hf/models, posenc.gguf_model_layers and RopePlan.from_gguf(layer=...) on the GGUF files of
tests/data/gguf/models.json, against tests/golden/models.txt (gen_models.py: each family's layer rules and
frequencies from its reference implementation or llama.cpp's loader, in mpmath), as the C++ test
model_plan_test.cpp does; MropePlan.from_hf_vision and vision_positions against tests/golden/vision.txt
(gen_vision.py), as vision_plan_test.cpp."""
from __future__ import annotations

import math

import numpy as np
import pytest

import posenc

from golden import data_dir, load

MODELS = data_dir("hf")
GGUF = data_dir("gguf")
KINDS = ["full_attention", "sliding_attention", "chunked_attention"]

pytestmark = pytest.mark.skipif(MODELS is None, reason="tests/data/hf is not next to this checkout")


def cases():
    return load("models.txt") if MODELS is not None else []


@pytest.mark.parametrize("case", cases(), ids=lambda c: c.name)
def test_every_layer_matches_the_golden_file(case):
    gguf = case.has("gguf")
    path = GGUF / case.str("gguf") if gguf else MODELS / "models" / case.str("config")
    layers = posenc.gguf_model_layers(path) if gguf else posenc.model_layers(path)

    def layer_plan(i):
        if gguf:
            return posenc.RopePlan.from_gguf(path, layer=i, seq_len=8192)
        return posenc.RopePlan.from_hf_config(path, layer=i, seq_len=8192)

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
            got = 1.0 if t is None else 1 + t["attn_scale"] * math.log(math.floor((p + t["offset"]) / t["floor_scale"]) + 1)
            assert got == pytest.approx(want, rel=1e-15, abs=0)
        if plan_of[i] < 0:
            with pytest.raises(ValueError, match="has no RoPE"):
                layer_plan(i)
            continue
        plan = layer_plan(i)
        k = int(plan_of[i])
        assert plan.info["layer"]["attention"] == layer["attention"]
        assert plan.rotary_dim == int(case.array("plan_rotary_dim")[k])
        assert plan.magnitude == pytest.approx(float(case.array("plan_magnitude")[k]), rel=1e-15)
        want = inv[k][: plan.rotary_dim // 2]
        np.testing.assert_allclose(plan.inv_freq, want, rtol=4e-15, atol=0)


def test_layer_out_of_range_is_rejected():
    with pytest.raises(ValueError, match=r"layer 42 is not in \[0, 42\)"):
        posenc.RopePlan.from_hf_config(MODELS / "models" / "gemma2_9b.json", layer=42)


def vision_cases():
    return load("vision.txt") if MODELS is not None else []


@pytest.mark.parametrize("case", vision_cases(), ids=lambda c: c.name)
def test_vision_tower_matches_the_golden_file(case):
    m = posenc.MropePlan.from_hf_vision(MODELS / "models" / case.str("config"))
    info = m.info
    assert info["head_dim"] == case.int("head_dim")
    assert info["base"] == float(case.str("base"))
    assert info["layout"] == ["split", "alternating"][case.int("layout")]
    assert info["spatial_merge_size"] == case.int("merge")
    assert info["max_patches_per_side"] == case.int("max_side")
    assert [b["windowed"] for b in info["layers"]] == [bool(v) for v in case.array("windowed")]
    assert [b["window"] for b in info["layers"]] == [int(v) for v in case.array("window")]
    assert m.sections == (0, case.int("head_dim") // 4, case.int("head_dim") // 4)
    np.testing.assert_array_equal(m.axis, case.array("axis"))
    np.testing.assert_allclose(m.plan.inv_freq, case.array("inv_freq"), rtol=4e-15, atol=0)
    frames, gh, gw = (int(v) for v in case.array("grid"))
    np.testing.assert_array_equal(posenc.vision_positions(frames, gh, gw, info["spatial_merge_size"]),
                                  case.array("positions"))
    # One head at each sample (row, column), float64, against HF's rotation.
    x, rp = case.array("x"), case.array("rot_pos")
    k, d = rp.shape[0], x.shape[0]
    q = np.tile(x, (k, 1)).reshape(1, k, 1, d).copy()
    ids = np.zeros((3, k), dtype=np.int64)
    ids[1], ids[2] = rp[:, 0], rp[:, 1]
    posenc.apply_mrope(q, m, ids, out=q)
    np.testing.assert_allclose(q.reshape(k, d), case.array("rotated"), rtol=0, atol=1e-12)


def test_vision_rejections():
    with pytest.raises(ValueError, match="has no vision tower posenc reads"):
        posenc.MropePlan.from_hf_vision(MODELS / "models" / "gemma3_4b.json")
    with pytest.raises(ValueError, match="grid 5x4 is not divisible by merge=2"):
        posenc.vision_positions(1, 5, 4, 2)
    m = posenc.MropePlan.from_hf_vision(MODELS / "models" / "pixtral_12b.json", style="interleaved")
    assert m.plan.style == "interleaved"


def test_gguf_layer_rejections():
    with pytest.raises(ValueError, match="layer 3 of llama4 has no RoPE"):
        posenc.RopePlan.from_gguf(GGUF / "model_llama4_layers.gguf", layer=3)
    with pytest.raises(ValueError, match=r"layer 48 is not in \[0, 48\)"):
        posenc.RopePlan.from_gguf(GGUF / "model_llama4_layers.gguf", layer=48)
    assert posenc.RopePlan.from_gguf(GGUF / "model_gemma3_4b.gguf", layer=0).info["layer"]["window"] == 1024
