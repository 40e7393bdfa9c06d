"""RopePlan.from_hf_config and RopePlan.from_gguf on the C++ tests' model files (tests/data/hf, tests/data/gguf),
with the C++ tests' expectations (tests/hf_config_test.cpp, tests/gguf_test.cpp) and error messages."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import posenc

from golden import data_dir

HF = data_dir("hf")
GGUF = data_dir("gguf")
needs_hf = pytest.mark.skipif(HF is None, reason="tests/data/hf is not next to python/")
needs_gguf = pytest.mark.skipif(GGUF is None, reason="tests/data/gguf is not next to python/")


def ref_inv_freq(base, r):
    return base ** (-2.0 * np.arange(r // 2) / r)


def scaling(plan):
    return plan.config["scaling"]


def error_of(f) -> str:
    with pytest.raises(ValueError) as e:
        f()
    return str(e.value)


# ---------------------------------------------------------------------------------------------- model files


@needs_hf
def test_llama31():
    plan = posenc.RopePlan.from_hf_config(HF / "llama3.1.json")
    assert plan.config["head_dim"] == 128 and plan.config["rotary_dim"] == 128 and plan.config["base"] == 500000.0
    assert scaling(plan) == {"type": "llama3", "factor": 8.0, "original_max_positions": 8192,
                             "low_freq_factor": 1.0, "high_freq_factor": 4.0}
    info = plan.info
    assert info["model_type"] == "llama" and info["rope_type"] == "llama3"
    assert info["max_position_embeddings"] == 131072
    assert (info["num_attention_heads"], info["num_key_value_heads"]) == (32, 8)
    # Meta's apply_scaling: keep w below wavelength 2048, w/8 above 8192, blend between.
    w = ref_inv_freq(500000.0, 128)
    wavelen = 2 * math.pi / w
    s = (8192.0 / wavelen - 1.0) / 3.0
    ref = np.where(wavelen < 2048, w, np.where(wavelen > 8192, w / 8, (1 - s) * w / 8 + s * w))
    np.testing.assert_allclose(plan.inv_freq, ref, rtol=1e-14)
    assert plan.magnitude == 1.0 and plan.logit_scale == 1.0 and plan.style == "half_split"
    v5 = posenc.RopePlan.from_hf_config(HF / "llama3.1_v5.json")
    assert v5.config == plan.config
    np.testing.assert_array_equal(v5.inv_freq, plan.inv_freq)
    # A parsed dict reads the same as the file.
    with open(HF / "llama3.1.json") as f:
        assert posenc.RopePlan.from_hf_config(json.load(f)).config == plan.config


@needs_hf
def test_qwen3_yarn_v5_and_qwen2():
    plan = posenc.RopePlan.from_hf_config(str(HF / "qwen3_yarn_v5.json"))
    s = scaling(plan)
    assert (s["type"], s["factor"], s["original_max_positions"], s["beta_fast"], s["beta_slow"]) == ("yarn", 4.0, 32768, 32.0, 1.0)
    assert plan.magnitude == pytest.approx(0.1 * math.log(4.0) + 1.0, abs=1e-15)
    q2 = posenc.RopePlan.from_hf_config(HF / "qwen2.json")
    np.testing.assert_allclose(q2.inv_freq, ref_inv_freq(1e6, 128), rtol=1e-14)
    assert q2.info["rope_type"] == "default"


@needs_hf
def test_phi3_longrope_switches_with_the_length():
    with open(HF / "phi3.json") as f:
        cfg = json.load(f)
    sf = np.array(cfg["rope_scaling"]["short_factor"])
    lf = np.array(cfg["rope_scaling"]["long_factor"])
    with pytest.raises(ValueError, match=r"longrope \(policy per_length\) depends on the sequence length"):
        posenc.RopePlan.from_hf_config(HF / "phi3.json")  # short or long factors: the length decides
    plan = posenc.RopePlan.from_hf_config(HF / "phi3.json", seq_len=1)
    s = scaling(plan)
    assert (s["factor"], s["original_max_positions"]) == (32.0, 4096)  # 131072 / 4096, top-level M
    mag = math.sqrt(1 + math.log(32) / math.log(4096))
    for n in (1, 4096, 4097, 131072):
        p = plan.with_seq_len(n)
        np.testing.assert_allclose(p.inv_freq, ref_inv_freq(10000.0, 96) / (lf if n > 4096 else sf), rtol=1e-14)
        assert p.magnitude == pytest.approx(mag, abs=1e-15)
        assert p.seq_len == n
    assert posenc.RopePlan.from_hf_config(HF / "phi3_su.json", seq_len=1).config == plan.config
    assert scaling(posenc.RopePlan.from_hf_config(HF / "phi3.json", longrope_policy="always_long"))["longrope_policy"] == "always_long"


@needs_hf
def test_deepseek_v3_and_overrides():
    plan = posenc.RopePlan.from_hf_config(HF / "deepseek_v3.json")
    assert plan.head_dim == 64 and plan.style == "interleaved"
    assert scaling(plan)["type"] == "deepseek_yarn"
    assert plan.magnitude == 1.0
    assert plan.logit_scale == pytest.approx((0.1 * math.log(40.0) + 1.0) ** 2, abs=1e-15)
    plain = posenc.RopePlan.from_hf_config(HF / "deepseek_v3.json", yarn_variant="yarn")
    assert scaling(plain)["type"] == "yarn" and plain.logit_scale == 1.0
    with open(HF / "deepseek_v3.json") as f:
        c = json.load(f)
    c["rope_interleave"] = False
    assert posenc.RopePlan.from_hf_config(c).style == "half_split"
    del c["rope_interleave"]
    c["model_type"] = "kimi_k2"  # found by architecture
    assert scaling(posenc.RopePlan.from_hf_config(c))["type"] == "deepseek_yarn"
    c["architectures"] = ["SomethingElse"]
    assert scaling(posenc.RopePlan.from_hf_config(c))["type"] == "yarn"
    assert posenc.RopePlan.from_hf_config(HF / "llama3.1.json", style="interleaved").style == "interleaved"


@needs_hf
def test_gptneox_partial_rotary_and_qwen2vl_sections():
    plan = posenc.RopePlan.from_hf_config(HF / "gptneox.json")
    assert (plan.head_dim, plan.rotary_dim) == (96, 24)
    assert plan.info["partial_rotary_factor"] == 0.25 and plan.info["num_key_value_heads"] == 64
    vl = posenc.RopePlan.from_hf_config(HF / "qwen2_vl.json")
    assert vl.info["mrope_section"] == [16, 24, 24] and vl.info["mrope_interleaved"] is False
    assert posenc.MropePlan(vl, vl.info["mrope_section"]).plan.pairs == 64


# ---------------------------------------------------------------------------------------------- inline configs


def test_inline_configs():
    base = {"hidden_size": 256, "num_attention_heads": 4, "max_position_embeddings": 2048}
    lin = posenc.RopePlan.from_hf_config({**base, "rope_scaling": {"type": "linear", "factor": 4}})
    np.testing.assert_allclose(lin.inv_freq, ref_inv_freq(10000.0, 64) / 4, rtol=1e-14)
    dyn = posenc.RopePlan.from_hf_config({**base, "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}, seq_len=4096)
    b = 10000.0 * (2.0 * 4096 / 2048 - 1.0) ** (64 / 62)
    np.testing.assert_allclose(dyn.inv_freq, ref_inv_freq(b, 64), rtol=1e-14)
    for s in (None, {}, {"rope_type": "default"}, {"type": "default"}, {"rope_type": None}):
        p = posenc.RopePlan.from_hf_config({"hidden_size": 512, "num_attention_heads": 8, "rope_theta": 20000, "rope_scaling": s})
        assert (p.head_dim, p.config["base"], scaling(p)["type"], p.info["rope_type"]) == (64, 20000.0, "none", "default")
    assert posenc.RopePlan.from_hf_config({"head_dim": None, "hidden_size": 4096, "num_attention_heads": 32}).head_dim == 128
    phi2 = posenc.RopePlan.from_hf_config({"hidden_size": 2560, "num_attention_heads": 32, "partial_rotary_factor": 0.4})
    assert (phi2.head_dim, phi2.rotary_dim) == (80, 32)
    v5 = posenc.RopePlan.from_hf_config({"hidden_size": 2048, "num_attention_heads": 16, "rope_theta": 10000,
                                         "rope_parameters": {"rope_type": "default", "rope_theta": 25000.0,
                                                             "partial_rotary_factor": 0.5}})
    assert (v5.config["base"], v5.rotary_dim, v5.info["partial_rotary_factor"]) == (25000.0, 64, 0.5)
    implied = posenc.RopePlan.from_hf_config({"head_dim": 64, "max_position_embeddings": 65536, "rope_scaling": {
        "rope_type": "yarn", "original_max_position_embeddings": 16384, "beta_fast": None, "beta_slow": 0}})
    s = scaling(implied)
    assert (s["factor"], s["original_max_positions"], s["beta_fast"], s["beta_slow"]) == (4.0, 16384, 32.0, 1.0)
    gemma = {"model_type": "gemma3_text", "head_dim": 256, "max_position_embeddings": 131072,
             "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
                                 "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}}
    full = posenc.RopePlan.from_hf_config(gemma, layer_type="full_attention")
    assert scaling(full) == {"type": "linear", "factor": 8.0} and full.config["base"] == 1e6
    assert "rope_parameters is per layer type (full_attention, sliding_attention)" in error_of(
        lambda: posenc.RopePlan.from_hf_config(gemma))
    assert 'layer_type="chunked_attention" is not in' in error_of(
        lambda: posenc.RopePlan.from_hf_config(gemma, layer_type="chunked_attention"))
    vl = {"model_type": "qwen2_5_vl", "text_config": {"hidden_size": 2048, "num_attention_heads": 16,
          "num_key_value_heads": 2, "rope_theta": 1e6, "rope_scaling": {"rope_type": "default",
          "mrope_section": [16, 24, 24], "mrope_interleaved": True}}}
    p = posenc.RopePlan.from_hf_config(vl)
    assert (p.head_dim, p.info["model_type"], p.info["num_key_value_heads"], p.info["mrope_interleaved"]) == (
        128, "qwen2_5_vl", 2, True)
    assert "hidden_size is missing" in error_of(lambda: posenc.RopePlan.from_hf_config(vl, use_text_config=False))


# ---------------------------------------------------------------------------------------------- rejected input

REJECTED = [
    ('{"head_dim": 64, "rope_scaling": {"type": "ntk-by-parts"}}', 'rope_scaling.type="ntk-by-parts" is not supported'),
    ('{"head_dim": 64, "rope_scaling": {"rope_type": "linear"}}', "rope_scaling.factor is missing"),
    ('{"head_dim": 64, "rope_scaling": {"rope_type": "llama3", "factor": 8, "low_freq_factor": 1, '
     '"original_max_position_embeddings": 8192}}', "rope_scaling.high_freq_factor is missing"),
    ('{"head_dim": 64, "rope_scaling": {"rope_type": "dynamic", "factor": 2}}', "max_position_embeddings is missing"),
    ('{"head_dim": 64, "rope_scaling": {"rope_type": "yarn", "factor": 2}}',
     "rope_scaling.original_max_position_embeddings is missing"),
    ('{"head_dim": 64, "max_position_embeddings": 4096, "rope_scaling": {"rope_type": "mrope"}}',
     "rope_scaling.mrope_section is missing"),
    ('{"num_attention_heads": 32}', "hidden_size is missing"),
    ('{"hidden_size": 4096}', "num_attention_heads is missing"),
    ('{"head_dim": 64, "rope_theta": "1e4"}', 'rope_theta="1e4" must be a number, got string'),
    ('{"head_dim": 64.5}', "head_dim=64.5 must be an integer"),
    ('{"head_dim": true}', "head_dim=true must be an integer"),
    ('{"head_dim": 64, "rope_scaling": "llama3"}', 'rope_scaling="llama3" must be an object or null'),
    ('{"head_dim": 64, "rope_scaling": {"rope_type": 3}}', "rope_scaling.rope_type=3 must be a string"),
    ('{"head_dim": 32, "max_position_embeddings": 4096, "rope_scaling": {"rope_type": "longrope", '
     '"short_factor": 1.0, "long_factor": [1.0]}}', "rope_scaling.short_factor=1.0 must be an array"),
    ('{"head_dim": 4, "max_position_embeddings": 4096, "rope_scaling": {"rope_type": "longrope", '
     '"short_factor": [1.0, "2"], "long_factor": [1.0, 2.0]}}', 'rope_scaling.short_factor[1]="2" must be a number'),
    ('{"head_dim": 64, "rope_scaling": {"rope_type": "yarn", "factor": 4, "original_max_position_embeddings": 16, '
     '"truncate": "no"}}', 'rope_scaling.truncate="no" must be true or false'),
    ('{"head_dim": 64, "text_config": []}', "text_config=[] must be an object or null"),
    ('{"hidden_size": 4096, "num_attention_heads": 0}', "num_attention_heads=0 must be > 0"),
    ('{"head_dim": -64}', "head_dim=-64 must be > 0"),
    ('{"head_dim": 64, "partial_rotary_factor": 1.5}', "partial_rotary_factor=1.5 must be in (0, 1]"),
    ('{"head_dim": 64, "rotary_pct": 0}', "rotary_pct=0 must be in (0, 1]"),
    ('{"head_dim": 10, "partial_rotary_factor": 0.5}', "int(10 * 0.5) = 5 must be even"),
    ('{"head_dim": 8, "max_position_embeddings": 4096, "rope_scaling": {"rope_type": "longrope", '
     '"short_factor": [1, 1, 1], "long_factor": [1, 1, 1, 1]}}', "rope_scaling.short_factor has 3 entries, rotary_dim/2=4"),
    ('{"head_dim": 128, "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 16]}}',
     "rope_scaling.mrope_section=[16,24,16] must be 3 sections summing to rotary_dim/2=64"),
    ('{"head_dim": 64, "rope_scaling": {"rope_type": "linear", "factor": 2}, "rope_parameters": {"rope_type": '
     '"linear", "factor": 4}}', "rope_scaling and rope_parameters are both given and differ"),
    ('{"head_dim": 64, "rope_theta": 1.0}', "posenc::make_rope_plan: base=1"),
    ('{"head_dim": 64, "rope_scaling": {"rope_type": "llama3", "factor": 8, "low_freq_factor": 4, '
     '"high_freq_factor": 1, "original_max_position_embeddings": 8192}}', "low_freq_factor=4 exceeds high_freq_factor=1"),
    ('{"head_dim": 64, "rope_scaling": {"rope_type": "linear", "factor": -2}}', "scaling.factor=-2"),
    ("[]", "must be a JSON object, got array"),
]


@pytest.mark.parametrize("config,message", REJECTED)
def test_rejected_configs_carry_the_cpp_message(config, message):
    msg = error_of(lambda: posenc.RopePlan.from_hf_config(json.loads(config)))
    assert message in msg
    assert msg.startswith("posenc::")


@needs_hf
def test_rejected_files(tmp_path):
    msg = error_of(lambda: posenc.RopePlan.from_hf_config(HF / "bad_unknown_type.json"))
    assert 'posenc::rope_config_from_hf: rope_scaling.rope_type="foo" is not supported' in msg
    assert "known: default, linear, dynamic, yarn, longrope, llama3" in msg
    assert 'rope_scaling.long_factor is missing (required for rope_type="longrope")' in error_of(
        lambda: posenc.RopePlan.from_hf_config(HF / "bad_missing_key.json"))
    assert 'rope_scaling.factor="8" must be a number' in error_of(
        lambda: posenc.RopePlan.from_hf_config(HF / "bad_wrong_type.json"))
    with pytest.raises(OSError, match='cannot open path=".*no_such_config.json"'):
        posenc.RopePlan.from_hf_config(tmp_path / "no_such_config.json")
    bad = tmp_path / "not_json.json"
    bad.write_text('{"head_dim": 64,')
    assert "is not valid JSON" in error_of(lambda: posenc.RopePlan.from_hf_config(bad))


# ---------------------------------------------------------------------------------------------- GGUF


@needs_gguf
def test_gguf_models():
    llama = posenc.RopePlan.from_gguf(GGUF / "llama3.gguf")
    info = llama.info
    assert (info["version"], info["architecture"], info["rope_type"], info["scaling_type"]) == (3, "llama", "norm", "default")
    assert (info["context_length"], info["head_count"], info["head_count_kv"]) == (131072, 32, 8)
    assert info["freq_factors_tensor"] == "rope_freqs.weight"
    assert llama.style == "interleaved" and llama.head_dim == 128 and llama.config["base"] == 500000.0
    assert len(llama.config["freq_factors"]) == 64
    assert posenc.RopePlan.from_gguf(str(GGUF / "llama3.gguf"), style="half_split").style == "half_split"

    qwen = posenc.RopePlan.from_gguf(GGUF / "qwen2_yarn.gguf")
    assert qwen.style == "half_split" and qwen.info["original_context_length"] == 32768
    s = scaling(qwen)
    assert (s["type"], s["factor"], s["original_max_positions"]) == ("yarn", 4.0, 32768)

    neox = posenc.RopePlan.from_gguf(GGUF / "gptneox.gguf")
    assert (neox.info["version"], neox.head_dim, neox.rotary_dim) == (2, 96, 24)

    phi = posenc.RopePlan.from_gguf(GGUF / "phi3_longrope.gguf", seq_len=4096)
    assert phi.info["scaling_type"] == "longrope" and scaling(phi)["type"] == "longrope"

    vl = posenc.RopePlan.from_gguf(GGUF / "qwen2vl_mrope.gguf")
    assert vl.info["rope_type"] == "mrope" and vl.info["mrope_sections"] == [16, 24, 24, 0]

    ds = posenc.RopePlan.from_gguf(GGUF / "deepseek2_yarn.gguf")
    assert ds.style == "interleaved" and scaling(ds)["type"] == "deepseek_yarn" and ds.magnitude == 1.0
    assert ds.logit_scale == pytest.approx((0.1 * math.log(40.0) + 1.0) ** 2, abs=1e-15)


@needs_gguf
@pytest.mark.parametrize("name,needle", [
    ("bad_magic.gguf", 'not a GGUF file: bad magic "GGUG"'),
    ("bad_version.gguf", "GGUF version 1 (32-bit counts) is not supported"),
    ("bad_wrong_type.gguf", "llama.rope.freq_base has type string, expected a number"),
    ("bad_rope_freqs_type.gguf", 'tensor "rope_freqs.weight" has ggml type F16, expected F32'),
    ("bad_missing_architecture.gguf", "general.architecture is missing"),
    ("bad_unknown_architecture.gguf", 'architecture "mystery" is not in posenc\'s table'),
])
def test_gguf_rejected(name, needle):
    msg = error_of(lambda: posenc.RopePlan.from_gguf(GGUF / name))
    assert msg.startswith("posenc::read_gguf_rope: path=")
    assert needle in msg


@needs_gguf
def test_gguf_missing_file_is_oserror(tmp_path):
    with pytest.raises(OSError, match="posenc::read_gguf_rope: cannot open path="):
        posenc.RopePlan.from_gguf(tmp_path / "no_such_model.gguf")
    p = posenc.RopePlan.from_gguf(GGUF / "bad_unknown_architecture.gguf", style="half_split")
    assert p.info["architecture"] == "mystery" and p.info["rope_type"] == "override"
