// Hugging Face config.json -> rope_config (include/posenc/io/hf_config.hpp): small configs shaped like those of
// Llama 3.1, Qwen2, Qwen3 (YaRN, transformers v5 layout), Phi-3 (LongRoPE), DeepSeek-V3 (YaRN), GPT-NeoX
// (partial rotary) and Qwen2-VL (MRoPE) in tests/data/hf/, plus inline configs for the other rope types and
// every rejected input. Each resulting config is compared field by field, builds a plan, and the plans are
// checked against an independent long double evaluation of the published formulas. Also the no-throw forms,
// the shared rope_params mapping, and agreement with the GGUF conversions of the same models.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <posenc/error.hpp>
#include <posenc/io/gguf.hpp>
#include <posenc/io/hf_config.hpp>
#include <posenc/mrope.hpp>
#include <posenc/rope_params.hpp>

#include "messages.hpp"
#include "scratch.hpp"

#ifndef POSENC_HF_DATA_DIR
#define POSENC_HF_DATA_DIR "tests/data/hf"  // the build defines this as an absolute path
#endif

namespace {

using posenc::index_t;
using nlohmann::json;

constexpr long double kPi = 3.141592653589793238462643383279502884L;
// The plan is formed in double (pow, then the scaling); the reference in long double.
constexpr double kRelTol = 1e-14;

std::string data(const char* name) { return std::string(POSENC_HF_DATA_DIR) + "/" + name; }

posenc::hf_rope_info load(const char* name, const posenc::hf_options& opt = {}) {
  return posenc::rope_config_from_hf_file(data(name), opt);
}

/// The message of the argument_error `f` throws; a test failure if it throws nothing.
std::string error_of(const std::function<void()>& f) { return posenc_test::thrown_message(f); }

using posenc_test::expect_contains;

/// Every field of two scalings.
void expect_scaling_eq(const posenc::rope_scaling& got, const posenc::rope_scaling& want) {
  EXPECT_EQ(got.type, want.type);
  EXPECT_EQ(got.factor, want.factor);
  EXPECT_EQ(got.original_max_positions, want.original_max_positions);
  EXPECT_EQ(got.ntk_policy, want.ntk_policy);
  EXPECT_EQ(got.beta_fast, want.beta_fast);
  EXPECT_EQ(got.beta_slow, want.beta_slow);
  EXPECT_EQ(got.truncate, want.truncate);
  EXPECT_EQ(got.mscale, want.mscale);
  EXPECT_EQ(got.mscale_all_dim, want.mscale_all_dim);
  EXPECT_EQ(got.attention_factor, want.attention_factor);
  EXPECT_EQ(got.low_freq_factor, want.low_freq_factor);
  EXPECT_EQ(got.high_freq_factor, want.high_freq_factor);
  EXPECT_EQ(got.short_factor, want.short_factor);
  EXPECT_EQ(got.long_factor, want.long_factor);
  EXPECT_EQ(got.long_policy, want.long_policy);
}

/// Every field of two configs.
void expect_config_eq(const posenc::rope_config& got, const posenc::rope_config& want) {
  EXPECT_EQ(got.head_dim, want.head_dim);
  EXPECT_EQ(got.rotary_dim, want.rotary_dim);
  EXPECT_EQ(got.rotary_offset, want.rotary_offset);
  EXPECT_EQ(got.base, want.base);
  EXPECT_EQ(got.style, want.style);
  EXPECT_EQ(got.freq_factors, want.freq_factors);
  expect_scaling_eq(got.scaling, want.scaling);
}

posenc::rope_config make_config(index_t head_dim, index_t rotary_dim, double base, posenc::rope_scaling s,
                                posenc::rope_style style = posenc::rope_style::half_split) {
  posenc::rope_config c;
  c.head_dim = head_dim;
  c.rotary_dim = rotary_dim;
  c.base = base;
  c.style = style;
  c.scaling = std::move(s);
  return c;
}

/// w_i = base^(-2i/R) in long double.
long double ref_inv_freq(long double base, index_t i, index_t r) {
  return std::pow(base, -2.0L * static_cast<long double>(i) / static_cast<long double>(r));
}

void expect_freqs(const posenc::rope_plan& plan, const std::vector<long double>& ref, const char* what) {
  ASSERT_EQ(static_cast<std::size_t>(plan.pairs()), ref.size()) << what;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const auto r = static_cast<double>(ref[i]);
    EXPECT_NEAR(plan.inv_freq()[i], r, kRelTol * r) << what << " pair " << i;
  }
}

std::vector<double> json_numbers(const char* file, const char* key) {
  std::ifstream in(data(file));
  return json::parse(in)["rope_scaling"][key].get<std::vector<double>>();
}

// ---------------------------------------------------------------------------------------------- model files

TEST(HfConfig, Llama31) {
  const auto info = load("llama3.1.json");
  expect_config_eq(info.config, make_config(128, 128, 500000.0, posenc::rope_scaling::llama3(8.0, 1.0, 4.0, 8192)));
  EXPECT_EQ(info.model_type, "llama");
  EXPECT_EQ(info.rope_type, "llama3");
  EXPECT_EQ(info.partial_rotary_factor, 1.0);
  EXPECT_EQ(info.max_position_embeddings, 131072);
  EXPECT_EQ(info.num_attention_heads, 32);
  EXPECT_EQ(info.num_key_value_heads, 8);
  EXPECT_TRUE(info.mrope_section.empty());
  EXPECT_FALSE(info.mrope_interleaved);

  // Meta's apply_scaling (Llama 3.1 reference) in long double: wavelength bands at M/high = 2048 and
  // M/low = 8192 positions; keep w below the first, w/8 above the second, blend between.
  const posenc::rope_plan plan = posenc::make_rope_plan(info.config);
  std::vector<long double> ref;
  int high = 0, mid = 0, low = 0;
  for (index_t i = 0; i < 64; ++i) {
    const long double w = ref_inv_freq(500000.0L, i, 128);
    const long double wavelen = 2.0L * kPi / w;
    if (wavelen < 8192.0L / 4.0L) {
      ref.push_back(w);
      ++high;
    } else if (wavelen > 8192.0L / 1.0L) {
      ref.push_back(w / 8.0L);
      ++low;
    } else {
      const long double s = (8192.0L / wavelen - 1.0L) / (4.0L - 1.0L);
      ref.push_back((1.0L - s) * w / 8.0L + s * w);
      ++mid;
    }
  }
  EXPECT_GT(high, 0);
  EXPECT_GT(mid, 0);
  EXPECT_GT(low, 0);
  expect_freqs(plan, ref, "llama3.1");
  EXPECT_EQ(plan.magnitude(), 1.0);
  EXPECT_EQ(plan.logit_scale(), 1.0);
  EXPECT_EQ(plan.style(), posenc::rope_style::half_split);
  EXPECT_EQ(plan.rotary_dim(), 128);
}

TEST(HfConfig, Llama31TransformersV5LayoutReadsTheSame) {
  const auto v4 = load("llama3.1.json");
  const auto v5 = load("llama3.1_v5.json");
  expect_config_eq(v5.config, v4.config);
  EXPECT_EQ(v5.rope_type, "llama3");
  EXPECT_EQ(v5.max_position_embeddings, v4.max_position_embeddings);
  EXPECT_EQ(v5.num_key_value_heads, v4.num_key_value_heads);
  EXPECT_EQ(posenc::make_rope_plan(v5.config).inv_freq(), posenc::make_rope_plan(v4.config).inv_freq());
}

TEST(HfConfig, Qwen2) {
  const auto info = load("qwen2.json");
  expect_config_eq(info.config, make_config(128, 128, 1000000.0, posenc::rope_scaling{}));
  EXPECT_EQ(info.model_type, "qwen2");
  EXPECT_EQ(info.rope_type, "default");
  EXPECT_EQ(info.max_position_embeddings, 131072);
  EXPECT_EQ(info.num_attention_heads, 28);
  EXPECT_EQ(info.num_key_value_heads, 4);
  const posenc::rope_plan plan = posenc::make_rope_plan(info.config);
  std::vector<long double> ref;
  for (index_t i = 0; i < 64; ++i) ref.push_back(ref_inv_freq(1000000.0L, i, 128));
  expect_freqs(plan, ref, "qwen2");
  EXPECT_EQ(plan.magnitude(), 1.0);
  EXPECT_EQ(plan.logit_scale(), 1.0);
}

TEST(HfConfig, Qwen3YarnTransformersV5) {
  const auto info = load("qwen3_yarn_v5.json");
  posenc::rope_scaling want = posenc::rope_scaling::yarn(4.0, 32768, 32.0, 1.0);
  expect_config_eq(info.config, make_config(128, 128, 1000000.0, want));
  EXPECT_EQ(info.model_type, "qwen3");
  EXPECT_EQ(info.rope_type, "yarn");
  EXPECT_EQ(info.num_key_value_heads, 8);

  // HF _compute_yarn_parameters in long double: ramp between floor(d(32)) and ceil(d(1)),
  // d(r) = R ln(M / (2 pi r)) / (2 ln base), clamped to [0, R-1]; magnitude 0.1 ln F + 1.
  const auto dim = [](long double rot) { return 128.0L * std::log(32768.0L / (rot * 2.0L * kPi)) / (2.0L * std::log(1e6L)); };
  const long double lo = std::max(0.0L, std::floor(dim(32.0L)));
  const long double hi = std::min(127.0L, std::ceil(dim(1.0L)));
  std::vector<long double> ref;
  for (index_t i = 0; i < 64; ++i) {
    const long double w = ref_inv_freq(1e6L, i, 128);
    const long double ramp = std::min(1.0L, std::max(0.0L, (static_cast<long double>(i) - lo) / (hi - lo)));
    ref.push_back(w / 4.0L * ramp + w * (1.0L - ramp));
  }
  const posenc::rope_plan plan = posenc::make_rope_plan(info.config);
  expect_freqs(plan, ref, "qwen3 yarn");
  const auto mag = static_cast<double>(0.1L * std::log(4.0L) + 1.0L);
  EXPECT_NEAR(plan.magnitude(), mag, 1e-15);
  EXPECT_EQ(plan.logit_scale(), 1.0);
}

TEST(HfConfig, Phi3LongRope) {
  const auto info = load("phi3.json");
  const std::vector<double> sf = json_numbers("phi3.json", "short_factor");
  const std::vector<double> lf = json_numbers("phi3.json", "long_factor");
  ASSERT_EQ(sf.size(), 48u);
  ASSERT_EQ(lf.size(), 48u);
  // Phi-3: M is the top-level original_max_position_embeddings; factor = 131072 / 4096.
  expect_config_eq(info.config, make_config(96, 96, 10000.0, posenc::rope_scaling::longrope(sf, lf, 4096, 32.0)));
  EXPECT_EQ(info.model_type, "phi3");
  EXPECT_EQ(info.rope_type, "longrope");
  EXPECT_EQ(info.max_position_embeddings, 131072);
  EXPECT_EQ(info.num_key_value_heads, 32);

  // sqrt(1 + ln F / ln M) = sqrt(1 + ln 32 / ln 4096) = sqrt(17/12).
  const auto mag = static_cast<double>(std::sqrt(1.0L + std::log(32.0L) / std::log(4096.0L)));
  for (index_t n : {index_t{1}, index_t{4096}, index_t{4097}, index_t{131072}}) {
    const posenc::rope_plan plan = posenc::make_rope_plan(info.config, n);
    const std::vector<double>& ext = n > 4096 ? lf : sf;  // HF: long once the length passes M
    std::vector<long double> ref;
    for (index_t i = 0; i < 48; ++i)
      ref.push_back(ref_inv_freq(10000.0L, i, 96) / static_cast<long double>(ext[static_cast<std::size_t>(i)]));
    expect_freqs(plan, ref, n > 4096 ? "phi3 long" : "phi3 short");
    EXPECT_NEAR(plan.magnitude(), mag, 1e-15);
    EXPECT_EQ(plan.logit_scale(), 1.0);
  }
}

TEST(HfConfig, Phi3LegacySuIsLongRope) {
  const auto su = load("phi3_su.json");
  const auto longrope = load("phi3.json");
  EXPECT_EQ(su.rope_type, "longrope");
  expect_config_eq(su.config, longrope.config);
}

TEST(HfConfig, DeepSeekV3) {
  const auto info = load("deepseek_v3.json");
  // The rotary part of MLA is its own 64-dim head; DeepSeek checkpoints pair (x[2i], x[2i+1]).
  expect_config_eq(info.config, make_config(64, 64, 10000.0, posenc::rope_scaling::deepseek_yarn(40.0, 4096, 1.0, 1.0, 32.0, 1.0),
                                            posenc::rope_style::interleaved));
  EXPECT_EQ(info.model_type, "deepseek_v3");
  EXPECT_EQ(info.rope_type, "yarn");
  EXPECT_EQ(info.max_position_embeddings, 163840);
  EXPECT_EQ(info.num_attention_heads, 128);
  EXPECT_EQ(info.num_key_value_heads, 128);

  const posenc::rope_plan plan = posenc::make_rope_plan(info.config);
  // mscale(40, 1) / mscale(40, 1) = 1 on cos/sin; the softmax scale (0.1 ln 40 + 1)^2.
  EXPECT_EQ(plan.magnitude(), 1.0);
  const long double m = 0.1L * std::log(40.0L) + 1.0L;
  EXPECT_NEAR(plan.logit_scale(), static_cast<double>(m * m), 1e-15);
  const auto dim = [](long double rot) { return 64.0L * std::log(4096.0L / (rot * 2.0L * kPi)) / (2.0L * std::log(10000.0L)); };
  const long double lo = std::max(0.0L, std::floor(dim(32.0L)));
  const long double hi = std::min(63.0L, std::ceil(dim(1.0L)));
  std::vector<long double> ref;
  for (index_t i = 0; i < 32; ++i) {
    const long double w = ref_inv_freq(10000.0L, i, 64);
    const long double ramp = std::min(1.0L, std::max(0.0L, (static_cast<long double>(i) - lo) / (hi - lo)));
    ref.push_back(w / 40.0L * ramp + w * (1.0L - ramp));
  }
  expect_freqs(plan, ref, "deepseek_v3");
}

TEST(HfConfig, GptNeoXPartialRotary) {
  const auto info = load("gptneox.json");
  // rotary_pct 0.25 of head_dim 6144/64 = 96; rotary_emb_base is the base.
  expect_config_eq(info.config, make_config(96, 24, 10000.0, posenc::rope_scaling{}));
  EXPECT_EQ(info.model_type, "gpt_neox");
  EXPECT_EQ(info.partial_rotary_factor, 0.25);
  EXPECT_EQ(info.max_position_embeddings, 2048);
  EXPECT_EQ(info.num_attention_heads, 64);
  EXPECT_EQ(info.num_key_value_heads, 64);  // absent: one KV head per query head
  const posenc::rope_plan plan = posenc::make_rope_plan(info.config);
  std::vector<long double> ref;
  for (index_t i = 0; i < 12; ++i) ref.push_back(ref_inv_freq(10000.0L, i, 24));
  expect_freqs(plan, ref, "gpt-neox");
  EXPECT_EQ(plan.head_dim(), 96);
  EXPECT_EQ(plan.rotary_dim(), 24);
}

TEST(HfConfig, Qwen2VlMropeSections) {
  const auto info = load("qwen2_vl.json");
  expect_config_eq(info.config, make_config(128, 128, 1000000.0, posenc::rope_scaling{}));
  EXPECT_EQ(info.rope_type, "default");
  EXPECT_EQ(info.mrope_section, (std::vector<index_t>{16, 24, 24}));
  EXPECT_FALSE(info.mrope_interleaved);
  const auto& s = info.mrope_section;
  const posenc::mrope_plan mp(posenc::make_rope_plan(info.config), {s[0], s[1], s[2]}, posenc::mrope_layout::chunked);
  EXPECT_EQ(mp.plan().pairs(), 64);
}

// ---------------------------------------------------------------------------------------------- inline configs

TEST(HfConfig, LinearAndDynamic) {
  const json base = json::parse(R"({"hidden_size": 256, "num_attention_heads": 4, "max_position_embeddings": 2048})");
  json lin = base;
  lin["rope_scaling"] = {{"type", "linear"}, {"factor", 4}};
  const auto l = posenc::rope_config_from_hf(lin);
  expect_config_eq(l.config, make_config(64, 64, 10000.0, posenc::rope_scaling::linear(4.0)));
  std::vector<long double> ref;
  for (index_t i = 0; i < 32; ++i) ref.push_back(ref_inv_freq(10000.0L, i, 64) / 4.0L);
  expect_freqs(posenc::make_rope_plan(l.config), ref, "linear");

  json dyn = base;
  dyn["rope_scaling"] = {{"rope_type", "dynamic"}, {"factor", 2.0}};
  const auto d = posenc::rope_config_from_hf(dyn);
  expect_config_eq(d.config, make_config(64, 64, 10000.0, posenc::rope_scaling::dynamic_ntk(2.0, 2048)));
  // HF _compute_dynamic_ntk_parameters at n = 4096: base * (F n / M - (F - 1))^(R/(R-2)).
  const long double b = 10000.0L * std::pow(2.0L * 4096.0L / 2048.0L - 1.0L, 64.0L / 62.0L);
  ref.clear();
  for (index_t i = 0; i < 32; ++i) ref.push_back(ref_inv_freq(b, i, 64));
  expect_freqs(posenc::make_rope_plan(d.config, 4096), ref, "dynamic");

  posenc::hf_options vllm;
  vllm.ntk_policy = posenc::dynamic_ntk_policy::fixed_at_max;
  EXPECT_EQ(posenc::rope_config_from_hf(dyn, vllm).config.scaling.ntk_policy, posenc::dynamic_ntk_policy::fixed_at_max);
}

TEST(HfConfig, DefaultSpellings) {
  for (const char* scaling : {R"(null)", R"({})", R"({"rope_type": "default"})", R"({"type": "default"})",
                              R"({"rope_type": null})"}) {
    json c = json::parse(R"({"hidden_size": 512, "num_attention_heads": 8, "rope_theta": 20000})");
    c["rope_scaling"] = json::parse(scaling);
    const auto info = posenc::rope_config_from_hf(c);
    expect_config_eq(info.config, make_config(64, 64, 20000.0, posenc::rope_scaling{}));
    EXPECT_EQ(info.rope_type, "default") << scaling;
  }
  // No RoPE key at all: base 10000, as HF.
  const auto bare = posenc::rope_config_from_hf(json::parse(R"({"head_dim": 32})"));
  expect_config_eq(bare.config, make_config(32, 32, 10000.0, posenc::rope_scaling{}));
  EXPECT_EQ(bare.num_attention_heads, 0);
  EXPECT_EQ(bare.max_position_embeddings, 0);
}

TEST(HfConfig, HeadDimNullFallsBackToHiddenOverHeads) {
  const auto a = posenc::rope_config_from_hf(json::parse(R"({"head_dim": null, "hidden_size": 4096, "num_attention_heads": 32})"));
  EXPECT_EQ(a.config.head_dim, 128);
  // An explicit head_dim wins (Gemma, Qwen3: head_dim * heads != hidden_size).
  const auto b = posenc::rope_config_from_hf(json::parse(R"({"head_dim": 256, "hidden_size": 2304, "num_attention_heads": 8})"));
  EXPECT_EQ(b.config.head_dim, 256);
  EXPECT_EQ(b.config.rotary_dim, 256);
  // Phi-2: partial_rotary_factor 0.4 of 80 = int(32.000000000000004) = 32.
  const auto c = posenc::rope_config_from_hf(
      json::parse(R"({"hidden_size": 2560, "num_attention_heads": 32, "partial_rotary_factor": 0.4})"));
  EXPECT_EQ(c.config.head_dim, 80);
  EXPECT_EQ(c.config.rotary_dim, 32);
}

TEST(HfConfig, RopeParametersCarryThetaAndPartialFactor) {
  const auto info = posenc::rope_config_from_hf(json::parse(R"({
    "hidden_size": 2048, "num_attention_heads": 16, "rope_theta": 10000, "partial_rotary_factor": 1.0,
    "rope_parameters": {"rope_type": "default", "rope_theta": 25000.0, "partial_rotary_factor": 0.5}})"));
  EXPECT_EQ(info.config.base, 25000.0);
  EXPECT_EQ(info.config.rotary_dim, 64);
  EXPECT_EQ(info.partial_rotary_factor, 0.5);
  // The same object under both names is fine.
  const auto both = posenc::rope_config_from_hf(json::parse(R"({"head_dim": 64,
    "rope_scaling": {"rope_type": "linear", "factor": 2.0}, "rope_parameters": {"rope_type": "linear", "factor": 2.0}})"));
  EXPECT_EQ(both.config.scaling.type, posenc::rope_scaling_type::linear);
}

TEST(HfConfig, YarnDefaultsAndExplicitKeys) {
  // v5: no factor -> max_position_embeddings / M; no original -> max_position_embeddings is M (factor 1).
  const auto implied = posenc::rope_config_from_hf(json::parse(R"({"head_dim": 64, "max_position_embeddings": 65536,
    "rope_scaling": {"rope_type": "yarn", "original_max_position_embeddings": 16384, "beta_fast": null, "beta_slow": 0}})"));
  expect_scaling_eq(implied.config.scaling, posenc::rope_scaling::yarn(4.0, 16384));
  // gpt-oss style: every key given.
  const auto all = posenc::rope_config_from_hf(json::parse(R"({"head_dim": 64, "max_position_embeddings": 131072,
    "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096, "beta_fast": 16,
                     "beta_slow": 2, "truncate": false, "attention_factor": 1.25, "mscale": 0.5, "mscale_all_dim": 0.25}})"));
  posenc::rope_scaling want = posenc::rope_scaling::yarn(32.0, 4096, 16.0, 2.0);
  want.truncate = false;
  want.attention_factor = 1.25;
  want.mscale = 0.5;
  want.mscale_all_dim = 0.25;
  expect_scaling_eq(all.config.scaling, want);
  EXPECT_EQ(posenc::make_rope_plan(all.config).magnitude(), 1.25);
}

TEST(HfConfig, OptionsOverrideStyleYarnVariantAndPolicies) {
  posenc::hf_options opt;
  opt.style = posenc::rope_style::interleaved;  // e.g. GGUF / Meta layout weights
  EXPECT_EQ(load("llama3.1.json", opt).config.style, posenc::rope_style::interleaved);

  opt = {};
  opt.yarn = posenc::hf_yarn_variant::deepseek;
  const auto qd = load("qwen3_yarn_v5.json", opt);
  expect_scaling_eq(qd.config.scaling, posenc::rope_scaling::deepseek_yarn(4.0, 32768, 1.0, 0.0));
  EXPECT_EQ(posenc::make_rope_plan(qd.config).logit_scale(), 1.0);  // mscale_all_dim 0: no softmax scale

  opt.yarn = posenc::hf_yarn_variant::yarn;
  const auto dy = load("deepseek_v3.json", opt);
  posenc::rope_scaling plain = posenc::rope_scaling::yarn(40.0, 4096);
  plain.mscale = 1.0;
  plain.mscale_all_dim = 1.0;
  expect_scaling_eq(dy.config.scaling, plain);
  const posenc::rope_plan p = posenc::make_rope_plan(dy.config);
  EXPECT_EQ(p.magnitude(), 1.0);
  EXPECT_EQ(p.logit_scale(), 1.0);

  opt = {};
  opt.long_policy = posenc::longrope_policy::always_long;
  EXPECT_EQ(load("phi3.json", opt).config.scaling.long_policy, posenc::longrope_policy::always_long);
}

TEST(HfConfig, DeepSeekDetectionAndRopeInterleave) {
  std::ifstream in(data("deepseek_v3.json"));
  json c = json::parse(in);
  c["rope_interleave"] = false;  // HF DeepseekV3: plain rotate_half
  EXPECT_EQ(posenc::rope_config_from_hf(c).config.style, posenc::rope_style::half_split);
  // Kimi K2 and other DeepSeek-V3 derivatives are found by architecture.
  c.erase("rope_interleave");
  c["model_type"] = "kimi_k2";
  const auto k = posenc::rope_config_from_hf(c);
  EXPECT_EQ(k.config.scaling.type, posenc::rope_scaling_type::deepseek_yarn);
  EXPECT_EQ(k.config.style, posenc::rope_style::interleaved);
  c["architectures"] = json::array({"SomethingElse"});
  EXPECT_EQ(posenc::rope_config_from_hf(c).config.scaling.type, posenc::rope_scaling_type::yarn);
}

TEST(HfConfig, LongRopeWithoutTopLevelOriginal) {
  // No top-level original_max_position_embeddings: M and factor come from the dict.
  std::vector<double> ones(16, 1.0), twos(16, 2.0);
  json c = {{"head_dim", 32}, {"max_position_embeddings", 32768},
            {"rope_scaling", {{"rope_type", "longrope"}, {"short_factor", ones}, {"long_factor", twos},
                              {"original_max_position_embeddings", 8192}, {"factor", 4.0}, {"attention_factor", 1.5}}}};
  const auto info = posenc::rope_config_from_hf(c);
  posenc::rope_scaling want = posenc::rope_scaling::longrope(ones, twos, 8192, 4.0);
  want.attention_factor = 1.5;
  expect_scaling_eq(info.config.scaling, want);
  EXPECT_EQ(posenc::make_rope_plan(info.config, 1).magnitude(), 1.5);
}

TEST(HfConfig, PerLayerRopeParameters) {
  const json c = json::parse(R"({"model_type": "gemma3_text", "head_dim": 256, "hidden_size": 2560,
    "num_attention_heads": 8, "num_key_value_heads": 4, "max_position_embeddings": 131072,
    "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
                        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}})");
  posenc::hf_options opt;
  opt.layer_type = "full_attention";
  expect_config_eq(posenc::rope_config_from_hf(c, opt).config,
                   make_config(256, 256, 1000000.0, posenc::rope_scaling::linear(8.0)));
  opt.layer_type = "sliding_attention";
  expect_config_eq(posenc::rope_config_from_hf(c, opt).config, make_config(256, 256, 10000.0, posenc::rope_scaling{}));

  expect_contains(error_of([&] { posenc::rope_config_from_hf(c); }),
                  {"rope_parameters is per layer type (full_attention, sliding_attention)", "hf_options::layer_type"});
  opt.layer_type = "chunked_attention";
  expect_contains(error_of([&] { posenc::rope_config_from_hf(c, opt); }), {"layer_type=\"chunked_attention\" is not in"});
}

TEST(HfConfig, TextConfigOfMultimodalModels) {
  const json c = json::parse(R"({"model_type": "qwen2_5_vl", "architectures": ["Qwen2_5_VLForConditionalGeneration"],
    "text_config": {"hidden_size": 2048, "num_attention_heads": 16, "num_key_value_heads": 2,
                    "max_position_embeddings": 128000, "rope_theta": 1000000.0,
                    "rope_scaling": {"rope_type": "default", "mrope_section": [16, 24, 24], "mrope_interleaved": true}},
    "vision_config": {"hidden_size": 1280}})");
  const auto info = posenc::rope_config_from_hf(c);
  expect_config_eq(info.config, make_config(128, 128, 1000000.0, posenc::rope_scaling{}));
  EXPECT_EQ(info.model_type, "qwen2_5_vl");  // text_config has none: the root's
  EXPECT_EQ(info.num_key_value_heads, 2);
  EXPECT_EQ(info.mrope_section, (std::vector<index_t>{16, 24, 24}));
  EXPECT_TRUE(info.mrope_interleaved);

  posenc::hf_options root_only;
  root_only.use_text_config = false;
  expect_contains(error_of([&] { posenc::rope_config_from_hf(c, root_only); }), {"hidden_size is missing"});
}

// ---------------------------------------------------------------------------------------------- rejected input

TEST(HfConfigErrors, UnknownRopeType) {
  const std::string msg = error_of([] { load("bad_unknown_type.json"); });
  expect_contains(msg, {"posenc::rope_config_from_hf: ", "rope_scaling.rope_type=\"foo\" is not supported",
                        "known: default, linear, dynamic, yarn, longrope, llama3"});
  expect_contains(error_of([] { posenc::rope_config_from_hf(json::parse(R"({"head_dim": 64, "rope_scaling": {"type": "ntk-by-parts"}})")); }),
                  {"rope_scaling.type=\"ntk-by-parts\" is not supported"});
}

TEST(HfConfigErrors, MissingRequiredKey) {
  expect_contains(error_of([] { load("bad_missing_key.json"); }),
                  {"rope_scaling.long_factor is missing (required for rope_type=\"longrope\")"});
  const char* cases[][2] = {
      {R"({"head_dim": 64, "rope_scaling": {"rope_type": "linear"}})", "rope_scaling.factor is missing"},
      {R"({"head_dim": 64, "rope_scaling": {"rope_type": "llama3", "factor": 8, "low_freq_factor": 1,
          "original_max_position_embeddings": 8192}})", "rope_scaling.high_freq_factor is missing"},
      {R"({"head_dim": 64, "rope_scaling": {"rope_type": "dynamic", "factor": 2}})", "max_position_embeddings is missing"},
      {R"({"head_dim": 64, "rope_scaling": {"rope_type": "yarn", "factor": 2}})",
       "rope_scaling.original_max_position_embeddings is missing"},
      {R"({"head_dim": 64, "max_position_embeddings": 4096, "rope_scaling": {"rope_type": "mrope"}})",
       "rope_scaling.mrope_section is missing"},
      {R"({"num_attention_heads": 32})", "hidden_size is missing"},
      {R"({"hidden_size": 4096})", "num_attention_heads is missing"},
  };
  for (const auto& c : cases) expect_contains(error_of([&] { posenc::rope_config_from_hf(json::parse(c[0])); }), {c[1]});
}

TEST(HfConfigErrors, WrongJsonType) {
  expect_contains(error_of([] { load("bad_wrong_type.json"); }), {"rope_scaling.factor=\"8\" must be a number"});
  const char* cases[][2] = {
      {R"({"head_dim": 64, "rope_theta": "1e4"})", "rope_theta=\"1e4\" must be a number, got string"},
      {R"({"head_dim": 64.5})", "head_dim=64.5 must be an integer"},
      {R"({"head_dim": true})", "head_dim=true must be an integer"},
      {R"({"head_dim": 64, "rope_scaling": "llama3"})", "rope_scaling=\"llama3\" must be an object or null"},
      {R"({"head_dim": 64, "rope_scaling": {"rope_type": 3}})", "rope_scaling.rope_type=3 must be a string"},
      {R"({"head_dim": 32, "max_position_embeddings": 4096, "rope_scaling": {"rope_type": "longrope",
          "short_factor": 1.0, "long_factor": [1.0]}})", "rope_scaling.short_factor=1.0 must be an array"},
      {R"({"head_dim": 4, "max_position_embeddings": 4096, "rope_scaling": {"rope_type": "longrope",
          "short_factor": [1.0, "2"], "long_factor": [1.0, 2.0]}})", "rope_scaling.short_factor[1]=\"2\" must be a number"},
      {R"({"head_dim": 64, "rope_scaling": {"rope_type": "yarn", "factor": 4, "original_max_position_embeddings": 16,
          "truncate": "no"}})", "rope_scaling.truncate=\"no\" must be true or false"},
      {R"({"head_dim": 64, "text_config": []})", "text_config=[] must be an object or null"},
  };
  for (const auto& c : cases) expect_contains(error_of([&] { posenc::rope_config_from_hf(json::parse(c[0])); }), {c[1]});
  expect_contains(error_of([] { posenc::rope_config_from_hf(json::array()); }), {"must be a JSON object, got array"});
}

TEST(HfConfigErrors, BadValues) {
  const char* cases[][2] = {
      {R"({"hidden_size": 4096, "num_attention_heads": 0})", "num_attention_heads=0 must be > 0"},
      {R"({"head_dim": -64})", "head_dim=-64 must be > 0"},
      {R"({"head_dim": 64, "partial_rotary_factor": 1.5})", "partial_rotary_factor=1.5 must be in (0, 1]"},
      {R"({"head_dim": 64, "rotary_pct": 0})", "rotary_pct=0 must be in (0, 1]"},
      {R"({"head_dim": 10, "partial_rotary_factor": 0.5})", "int(10 * 0.5) = 5 must be even"},
      {R"({"head_dim": 8, "max_position_embeddings": 4096, "rope_scaling": {"rope_type": "longrope",
          "short_factor": [1, 1, 1], "long_factor": [1, 1, 1, 1]}})", "rope_scaling.short_factor has 3 entries, rotary_dim/2=4"},
      {R"({"head_dim": 128, "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 16]}})",
       "rope_scaling.mrope_section=[16,24,16] must be 3 sections summing to rotary_dim/2=64"},
      {R"({"head_dim": 64, "rope_scaling": {"rope_type": "linear", "factor": 2}, "rope_parameters": {"rope_type": "linear",
          "factor": 4}})", "rope_scaling and rope_parameters are both given and differ"},
      // What make_rope_plan rejects is reported by the loader.
      {R"({"head_dim": 64, "rope_theta": 1.0})", "posenc::make_rope_plan: base=1"},
      {R"({"head_dim": 64, "rope_scaling": {"rope_type": "llama3", "factor": 8, "low_freq_factor": 4,
          "high_freq_factor": 1, "original_max_position_embeddings": 8192}})", "low_freq_factor=4 exceeds high_freq_factor=1"},
      {R"({"head_dim": 64, "rope_scaling": {"rope_type": "linear", "factor": -2}})", "scaling.factor=-2"},
  };
  for (const auto& c : cases) expect_contains(error_of([&] { posenc::rope_config_from_hf(json::parse(c[0])); }), {c[1]});
}

TEST(HfConfigErrors, FileErrors) {
  expect_contains(error_of([] { posenc::rope_config_from_hf_file(data("no_such_config.json")); }),
                  {"posenc::rope_config_from_hf_file: cannot open path=\"", "no_such_config.json\""});
  const std::string path = posenc_test::scratch_path("not_json.json");
  posenc_test::write_text(path, "{\"head_dim\": 64,");
  expect_contains(error_of([&] { posenc::rope_config_from_hf_file(path); }),
                  {"posenc::rope_config_from_hf_file: path=\"", "\" is not valid JSON: ", "parse error"});
  std::remove(path.c_str());
}

// ------------------------------------------------------------------------------ no-throw forms, shared mapping

TEST(HfConfigTry, StatusFormsCarryTheSameMessage) {
  posenc::hf_rope_info info;
  info.model_type = "untouched";
  const json bad = json::parse(R"({"head_dim": 64, "rope_scaling": {"rope_type": "linear"}})");
  const posenc::status s = posenc::try_rope_config_from_hf(bad, info);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), posenc::errc::invalid_argument);
  expect_contains(s.message(), {"posenc::rope_config_from_hf: rope_scaling.factor is missing"});
  EXPECT_EQ(info.model_type, "untouched");
  EXPECT_EQ(error_of([&] { posenc::rope_config_from_hf(bad); }), s.message());

  EXPECT_EQ(posenc::try_rope_config_from_hf_file(data("no_such_config.json"), info).code(), posenc::errc::io_error);
  const std::string path = posenc_test::scratch_path("try_not_json.json");
  posenc_test::write_text(path, "[1, 2");
  EXPECT_EQ(posenc::try_rope_config_from_hf_file(path, info).code(), posenc::errc::invalid_file);
  std::remove(path.c_str());
  EXPECT_EQ(info.model_type, "untouched");

  ASSERT_TRUE(posenc::try_rope_config_from_hf_file(data("qwen2.json"), info).ok());
  EXPECT_EQ(info.model_type, "qwen2");
}

// The loader only finds the keys: the same values put into rope_params by hand map to the same config.
TEST(HfConfigTry, SameMappingAsRopeParams) {
  posenc::rope_params p;
  p.head_dim = 128;
  p.base = 1000000.0;
  p.scaling_type = "yarn";
  p.factor = 4.0;
  p.original_max_positions = 32768;
  p.max_position_embeddings = 131072;
  expect_config_eq(load("qwen3_yarn_v5.json").config, posenc::rope_config_from_params(p));
}

// The same models from their GGUF conversions (tests/data/gguf, written by make_gguf.py): DeepSeek-V3 maps to
// the same config; Llama 3.1's GGUF pairs interleaved (the converter permutes q/k) with the llama3 bands baked
// into rope_freqs.weight, whose frequencies equal HF's up to the float32 rounding of the stored factors.
TEST(HfConfigTry, AgreesWithTheGgufConversions) {
  const std::string gguf_dir = std::string(POSENC_HF_DATA_DIR) + "/../gguf/";
  expect_config_eq(posenc::read_gguf_rope(gguf_dir + "deepseek2_yarn.gguf").config, load("deepseek_v3.json").config);

  const posenc::rope_plan hf = posenc::make_rope_plan(load("llama3.1.json").config);
  const posenc::rope_config g = posenc::read_gguf_rope(gguf_dir + "llama3.gguf").config;
  EXPECT_EQ(g.style, posenc::rope_style::interleaved);
  EXPECT_EQ(hf.style(), posenc::rope_style::half_split);
  const posenc::rope_plan gp = posenc::make_rope_plan(g);
  ASSERT_EQ(gp.pairs(), hf.pairs());
  for (index_t i = 0; i < hf.pairs(); ++i) {
    const double w = hf.inv_freq()[static_cast<std::size_t>(i)];
    EXPECT_NEAR(gp.inv_freq()[static_cast<std::size_t>(i)], w, 1.2e-7 * w) << "pair " << i;
  }
}

}  // namespace
