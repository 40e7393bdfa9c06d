// GGUF metadata -> rope_config (include/posenc/io/gguf.hpp) and the shared rope_params mapping
// (include/posenc/rope_params.hpp). The files in tests/data/gguf/ are written by make_gguf.py from the
// published format; each test recomputes what a file should give from the parameters it was written with
// (base, dims, pair style, the factor formulas) and compares rope_config field by field and the plans'
// frequencies with plans built here, independently. Malformed files must give a status naming the file and
// the defect, and the throwing forms argument_error with the same message. The Hugging Face key mapping
// (include/posenc/detail/hf_mapping.hpp) is tested here too, from plain values: this binary has no nlohmann/json.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <posenc/detail/hf_mapping.hpp>
#include <posenc/error.hpp>
#include <posenc/io/gguf.hpp>
#include <posenc/model_plan.hpp>
#include <posenc/mrope.hpp>
#include <posenc/rope_params.hpp>

#include "messages.hpp"
#include "scratch.hpp"

#ifndef POSENC_GGUF_DATA_DIR
#define POSENC_GGUF_DATA_DIR "tests/data/gguf"  // the build defines this as an absolute path
#endif

namespace {

using posenc::index_t;

constexpr long double kPi = 3.141592653589793238462643383279502884L;

std::string data(const std::string& name) { return std::string(POSENC_GGUF_DATA_DIR) + "/" + name; }

std::vector<unsigned char> file_bytes(const std::string& name) { return posenc_test::read_bytes(data(name)); }

float to_f32(double v) { return static_cast<float>(v); }

using posenc_test::expect_contains;

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
                                posenc::rope_style style) {
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

void expect_freqs_near(const posenc::rope_plan& plan, const std::vector<long double>& ref, double rel, const char* what) {
  ASSERT_EQ(static_cast<std::size_t>(plan.pairs()), ref.size()) << what;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const auto r = static_cast<double>(ref[i]);
    EXPECT_NEAR(plan.inv_freq()[i], r, rel * r) << what << " pair " << i;
  }
}

/// HF `_compute_yarn_parameters` in long double: the ramp between floor(d(beta_fast)) and ceil(d(beta_slow)),
/// d(r) = R ln(M / (2 pi r)) / (2 ln base), clamped to [0, R-1].
std::vector<long double> ref_yarn(long double base, index_t r, long double factor, long double m) {
  const auto dim = [&](long double rot) {
    return static_cast<long double>(r) * std::log(m / (rot * 2.0L * kPi)) / (2.0L * std::log(base));
  };
  const long double lo = std::max(0.0L, std::floor(dim(32.0L)));
  const long double hi = std::min(static_cast<long double>(r - 1), std::ceil(dim(1.0L)));
  std::vector<long double> out;
  for (index_t i = 0; i < r / 2; ++i) {
    const long double w = ref_inv_freq(base, i, r);
    const long double ramp = std::min(1.0L, std::max(0.0L, (static_cast<long double>(i) - lo) / (hi - lo)));
    out.push_back(w / factor * ramp + w * (1.0L - ramp));
  }
  return out;
}

// ----------------------------------------------------------------------------------------------- valid files

// Llama 3.1 shape: interleaved pairs (llama.cpp permutes Llama's q/k), the 3.1 wavelength bands baked into
// rope_freqs.weight by the converter as per-pair divisors.
TEST(Gguf, Llama3RopeFreqs) {
  const posenc::gguf_rope_info info = posenc::read_gguf_rope(data("llama3.gguf"));
  EXPECT_EQ(info.version, 3u);
  EXPECT_EQ(info.architecture, "llama");
  EXPECT_EQ(info.name, "posenc test Llama-3.1-8B-shaped");
  EXPECT_EQ(info.rope_type, "norm");
  EXPECT_EQ(info.file_scaling_type, "");
  EXPECT_EQ(info.scaling_type, "default");
  EXPECT_EQ(info.context_length, 131072);
  EXPECT_EQ(info.embedding_length, 4096);
  EXPECT_EQ(info.head_count, 32);
  EXPECT_EQ(info.head_count_kv, 8);
  EXPECT_EQ(info.freq_factors_tensor, "rope_freqs.weight");
  EXPECT_TRUE(info.mrope_sections.empty());

  // convert_hf_to_gguf.py's factors, recomputed: 1 for wavelengths < M/high, F for > M/low, the blend's
  // reciprocal 1/((1-s)/F + s) between; stored as float32.
  std::vector<double> want_factors;
  int bands[3] = {0, 0, 0};
  for (index_t i = 0; i < 64; ++i) {
    const long double w = ref_inv_freq(500000.0L, i, 128);
    const long double wavelen = 2.0L * kPi / w;
    long double f = 1.0L;
    if (wavelen < 8192.0L / 4.0L) {
      ++bands[0];
    } else if (wavelen > 8192.0L / 1.0L) {
      f = 8.0L;
      ++bands[2];
    } else {
      const long double s = (8192.0L / wavelen - 1.0L) / (4.0L - 1.0L);
      f = 1.0L / ((1.0L - s) / 8.0L + s);
      ++bands[1];
    }
    want_factors.push_back(static_cast<double>(to_f32(static_cast<double>(f))));
  }
  EXPECT_GT(bands[0], 0);
  EXPECT_GT(bands[1], 0);
  EXPECT_GT(bands[2], 0);
  posenc::rope_config want = make_config(128, 128, 500000.0, posenc::rope_scaling{}, posenc::rope_style::interleaved);
  want.freq_factors = want_factors;
  expect_config_eq(info.config, want);

  // The plan equals the one built here from the same factors, and the Hugging Face llama3 plan (Meta's
  // apply_scaling) up to the float32 rounding of the factors.
  const posenc::rope_plan plan = posenc::make_rope_plan(info.config);
  EXPECT_EQ(plan.inv_freq(), posenc::make_rope_plan(want).inv_freq());
  EXPECT_EQ(plan.style(), posenc::rope_style::interleaved);
  EXPECT_EQ(plan.magnitude(), 1.0);
  const posenc::rope_plan hf = posenc::make_rope_plan(make_config(128, 128, 500000.0,
                                                                  posenc::rope_scaling::llama3(8.0, 1.0, 4.0, 8192),
                                                                  posenc::rope_style::interleaved));
  std::vector<long double> ref(hf.inv_freq().begin(), hf.inv_freq().end());
  expect_freqs_near(plan, ref, 1.2e-7, "llama3 vs HF llama3");
}

TEST(Gguf, Qwen2YarnHalfSplit) {
  const posenc::gguf_rope_info info = posenc::read_gguf_rope(data("qwen2_yarn.gguf"));
  EXPECT_EQ(info.architecture, "qwen2");
  EXPECT_EQ(info.rope_type, "neox");
  EXPECT_EQ(info.file_scaling_type, "yarn");
  EXPECT_EQ(info.scaling_type, "yarn");
  EXPECT_EQ(info.original_context_length, 32768);
  EXPECT_EQ(info.head_count_kv, 4);
  // head_dim = embedding_length / head_count = 3584 / 28 (no key_length, no dimension_count).
  const posenc::rope_config want =
      make_config(128, 128, 1000000.0, posenc::rope_scaling::yarn(4.0, 32768), posenc::rope_style::half_split);
  expect_config_eq(info.config, want);
  const posenc::rope_plan plan = posenc::make_rope_plan(info.config);
  EXPECT_EQ(plan.inv_freq(), posenc::make_rope_plan(want).inv_freq());
  expect_freqs_near(plan, ref_yarn(1e6L, 128, 4.0L, 32768.0L), 1e-14, "qwen2 yarn");
  EXPECT_NEAR(plan.magnitude(), static_cast<double>(0.1L * std::log(4.0L) + 1.0L), 1e-15);
  EXPECT_EQ(plan.style(), posenc::rope_style::half_split);
}

TEST(Gguf, GptNeoXVersion2PartialRotary) {
  const posenc::gguf_rope_info info = posenc::read_gguf_rope(data("gptneox.gguf"));
  EXPECT_EQ(info.version, 2u);
  EXPECT_EQ(info.architecture, "gptneox");
  EXPECT_EQ(info.rope_type, "neox");
  EXPECT_EQ(info.context_length, 2048);  // written as uint64
  // 6144 / 64 = 96, rope.dimension_count 24; no freq_base: llama.cpp's default 10000.
  const posenc::rope_config want = make_config(96, 24, 10000.0, posenc::rope_scaling{}, posenc::rope_style::half_split);
  expect_config_eq(info.config, want);
  const posenc::rope_plan plan = posenc::make_rope_plan(info.config);
  std::vector<long double> ref;
  for (index_t i = 0; i < 12; ++i) ref.push_back(ref_inv_freq(10000.0L, i, 24));
  expect_freqs_near(plan, ref, 1e-15, "gpt-neox");
  EXPECT_EQ(plan.head_dim(), 96);
  EXPECT_EQ(plan.rotary_dim(), 24);

  // Alignment 64: the data section and every tensor sit on it.
  const posenc::gguf_metadata m = posenc::read_gguf_metadata(data("gptneox.gguf"));
  EXPECT_EQ(m.alignment, 64u);
  EXPECT_EQ(m.data_offset % 64, 0u);
  ASSERT_EQ(m.tensors.size(), 2u);
  EXPECT_EQ(m.tensors[0].file_offset, m.data_offset);
  EXPECT_EQ(m.tensors[1].offset, 384u);  // 96 F32 = 384 bytes, already a multiple of 64
  EXPECT_EQ(m.tensors[1].nbytes, 96u * 3u * 2u);
  const posenc::gguf_value* eps = m.find("gptneox.attention.layer_norm_epsilon");
  ASSERT_NE(eps, nullptr);
  EXPECT_EQ(eps->type, posenc::gguf_type::float64);
  EXPECT_EQ(eps->to_double(), 1e-5);
  const posenc::gguf_value* par = m.find("gptneox.use_parallel_residual");
  ASSERT_NE(par, nullptr);
  EXPECT_EQ(par->type, posenc::gguf_type::boolean);
  EXPECT_EQ(par->bits, 1u);
}

TEST(Gguf, Phi3LongRopeTensors) {
  const posenc::gguf_rope_info info = posenc::read_gguf_rope(data("phi3_longrope.gguf"));
  EXPECT_EQ(info.rope_type, "neox");
  EXPECT_EQ(info.file_scaling_type, "");  // older converters write no type: the factor tensors decide
  EXPECT_EQ(info.scaling_type, "longrope");
  std::vector<double> sf, lf;
  for (int i = 0; i < 48; ++i) {
    sf.push_back(1.0 + i / 64.0);
    lf.push_back(1.0 + i / 2.0);
  }
  // M from original_context_length; factor = context_length / M (HF); the magnitude is llama.cpp's
  // rope.scaling.attn_factor, which the converter set to HF's sqrt(1 + ln F / ln M) (stored as float32).
  const double attn = static_cast<double>(to_f32(std::sqrt(1.0 + std::log(32.0) / std::log(4096.0))));
  posenc::rope_scaling s = posenc::rope_scaling::longrope(sf, lf, 4096, 32.0);
  s.attention_factor = attn;
  expect_config_eq(info.config, make_config(96, 96, 10000.0, s, posenc::rope_style::half_split));
  for (index_t n : {index_t{1}, index_t{4096}, index_t{4097}, index_t{131072}}) {
    const posenc::rope_plan plan = posenc::make_rope_plan(info.config, n);
    const std::vector<double>& ext = n > 4096 ? lf : sf;
    std::vector<long double> ref;
    for (index_t i = 0; i < 48; ++i)
      ref.push_back(ref_inv_freq(10000.0L, i, 96) / static_cast<long double>(ext[static_cast<std::size_t>(i)]));
    expect_freqs_near(plan, ref, 1e-15, n > 4096 ? "phi3 long" : "phi3 short");
    EXPECT_NEAR(plan.magnitude(), std::sqrt(17.0 / 12.0), 1e-7);
  }
  posenc::gguf_options opt;
  opt.long_policy = posenc::longrope_policy::always_long;
  EXPECT_EQ(posenc::read_gguf_rope(data("phi3_longrope.gguf"), opt).config.scaling.long_policy,
            posenc::longrope_policy::always_long);
}

TEST(Gguf, Qwen2VlMropeSections) {
  const posenc::gguf_rope_info info = posenc::read_gguf_rope(data("qwen2vl_mrope.gguf"));
  EXPECT_EQ(info.rope_type, "mrope");
  EXPECT_EQ(info.mrope_sections, (std::vector<index_t>{16, 24, 24, 0}));
  expect_config_eq(info.config, make_config(128, 128, 1000000.0, posenc::rope_scaling{}, posenc::rope_style::half_split));
  const auto& s = info.mrope_sections;
  const posenc::mrope_plan mp(posenc::make_rope_plan(info.config), {s[0], s[1], s[2]}, posenc::mrope_layout::chunked);
  EXPECT_EQ(mp.plan().pairs(), 64);
}

TEST(Gguf, DeepSeek2YarnLogMultiplier) {
  const posenc::gguf_rope_info info = posenc::read_gguf_rope(data("deepseek2_yarn.gguf"));
  EXPECT_EQ(info.rope_type, "norm");
  // The rotary part of MLA is its own 64-dim head (rope.dimension_count), interleaved; yarn_log_multiplier
  // 0.1 (float32) = 0.1 * mscale_all_dim.
  const posenc::rope_config& c = info.config;
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.rotary_dim, 64);
  EXPECT_EQ(c.style, posenc::rope_style::interleaved);
  EXPECT_EQ(c.scaling.type, posenc::rope_scaling_type::deepseek_yarn);
  EXPECT_EQ(c.scaling.factor, 40.0);
  EXPECT_EQ(c.scaling.original_max_positions, 4096);
  EXPECT_EQ(c.scaling.beta_fast, 32.0);
  EXPECT_EQ(c.scaling.beta_slow, 1.0);
  EXPECT_EQ(c.scaling.mscale_all_dim, 1.0);  // float32 0.1 / 0.1f, as llama.cpp
  EXPECT_EQ(c.scaling.mscale, c.scaling.mscale_all_dim);
  const posenc::rope_plan plan = posenc::make_rope_plan(c);
  EXPECT_EQ(plan.magnitude(), 1.0);
  const long double m = 0.1L * std::log(40.0L) + 1.0L;
  EXPECT_NEAR(plan.logit_scale(), static_cast<double>(m * m), 1e-15);
  expect_freqs_near(plan, ref_yarn(10000.0L, 64, 40.0L, 4096.0L), 1e-14, "deepseek2");
}

// ------------------------------------------------------------------------------------------ metadata reader

TEST(GgufMetadata, EveryValueAndTheTensorDirectory) {
  const posenc::gguf_metadata m = posenc::read_gguf_metadata(data("llama3.gguf"));
  EXPECT_EQ(m.version, 3u);
  EXPECT_EQ(m.kv.size(), 17u);
  EXPECT_EQ(m.alignment, 32u);
  EXPECT_EQ(m.file_size, file_bytes("llama3.gguf").size());
  EXPECT_EQ(m.kv.front().key, "general.architecture");
  const posenc::gguf_value* base = m.find("llama.rope.freq_base");
  ASSERT_NE(base, nullptr);
  EXPECT_EQ(base->type, posenc::gguf_type::float32);
  EXPECT_EQ(base->to_double(), 500000.0);
  EXPECT_FALSE(base->to_int().has_value());
  const posenc::gguf_value* ctx = m.find("llama.context_length");
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(ctx->type, posenc::gguf_type::uint32);
  EXPECT_EQ(ctx->to_int(), 131072);
  const posenc::gguf_value* tokens = m.find("tokenizer.ggml.tokens");
  ASSERT_NE(tokens, nullptr);
  EXPECT_EQ(tokens->type_name(), "array of string");
  EXPECT_EQ(tokens->strings, (std::vector<std::string>{"<|begin_of_text|>", "Hello", " world", "\xc3\xa9t\xc3\xa9"}));
  const posenc::gguf_value* types = m.find("tokenizer.ggml.token_type");
  ASSERT_NE(types, nullptr);
  EXPECT_EQ(types->count, 4u);
  EXPECT_EQ(types->int_at(0), 3);
  EXPECT_EQ(types->number_at(3), 1.0);
  EXPECT_FALSE(types->int_at(4).has_value());
  EXPECT_EQ(m.find("no.such.key"), nullptr);

  ASSERT_EQ(m.tensors.size(), 3u);
  const posenc::gguf_tensor_info* q = m.find_tensor("blk.0.attn_q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->dims, (std::vector<std::int64_t>{64, 2}));
  EXPECT_EQ(posenc::ggml_type_name(q->type), "Q8_0");
  EXPECT_EQ(q->nbytes, 4u * 34u);  // 128 elements in Q8_0 blocks of 32 (34 bytes)
  EXPECT_EQ(q->elements(), 128);
  const posenc::gguf_tensor_info* f = m.find_tensor("rope_freqs.weight");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->offset, 512u);
  EXPECT_EQ(f->file_offset, m.data_offset + 512u);
  EXPECT_EQ(m.data_offset % 32, 0u);
  EXPECT_EQ(posenc::ggml_type_name(99), "type 99");
}

TEST(GgufMetadata, MemoryBufferReadsAsTheFile) {
  for (const char* name : {"llama3.gguf", "qwen2_yarn.gguf", "gptneox.gguf", "phi3_longrope.gguf"}) {
    const std::vector<unsigned char> bytes = file_bytes(name);
    posenc::gguf_rope_info mem;
    const posenc::status s = posenc::try_parse_gguf_rope(bytes.data(), bytes.size(), mem, {}, name);
    ASSERT_TRUE(s.ok()) << s.message();
    expect_config_eq(mem.config, posenc::read_gguf_rope(data(name)).config);
  }
}

// Every proper prefix of a valid file is rejected as truncated (or as a tensor past the end), never read out
// of bounds; every single-byte corruption either parses or gives a status.
TEST(GgufMetadata, EveryPrefixAndByteFlip) {
  const std::vector<unsigned char> bytes = file_bytes("llama3.gguf");
  ASSERT_GT(bytes.size(), 1000u);
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    posenc::gguf_rope_info info;
    const posenc::status s = posenc::try_parse_gguf_rope(bytes.data(), n, info);
    ASSERT_FALSE(s.ok()) << n;
    EXPECT_EQ(s.code(), posenc::errc::invalid_file) << n << ": " << s.message();
  }
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    std::vector<unsigned char> b = bytes;
    b[i] = static_cast<unsigned char>(b[i] ^ 0xa5);
    posenc::gguf_rope_info info;
    const posenc::status s = posenc::try_parse_gguf_rope(b.data(), b.size(), info);
    if (!s.ok()) {
      EXPECT_NE(s.message().find("posenc::read_gguf_rope: buffer: "), std::string::npos) << s.message();
    }
  }
}

// ------------------------------------------------------------------------------------------ rejected files

struct bad_file {
  const char* name;
  posenc::errc code;
  std::vector<std::string> needles;
};

TEST(GgufErrors, MalformedFiles) {
  using posenc::errc;
  const std::vector<bad_file> cases = {
      {"bad_magic.gguf", errc::invalid_file, {"not a GGUF file: bad magic \"GGUG\""}},
      {"bad_version.gguf", errc::invalid_file, {"GGUF version 1 (32-bit counts) is not supported"}},
      {"bad_big_endian.gguf", errc::invalid_file, {"big-endian GGUF (version 3, byte-swapped) is not supported"}},
      {"bad_truncated.gguf", errc::invalid_file, {"metadata entry 10: the key: string length 38 runs past the end of the file (6 bytes left at offset 444)"}},
      {"bad_huge_kv_count.gguf", errc::invalid_file, {"metadata count 4611686018427387904 cannot fit in the"}},
      {"bad_huge_tensor_count.gguf", errc::invalid_file, {"tensor count 1099511627776 cannot fit in the"}},
      {"bad_string_past_end.gguf", errc::invalid_file, {"metadata entry 0: the key: string length 1099511627776 runs past"}},
      {"bad_wrong_type.gguf", errc::invalid_file, {"llama.rope.freq_base has type string, expected a number"}},
      {"bad_nested_array.gguf", errc::invalid_file, {"(\"posenc.nested\"): arrays of arrays are not supported"}},
      {"bad_value_type.gguf", errc::invalid_file, {"(\"posenc.odd\"): value type 13 is not a GGUF type"}},
      {"bad_bool.gguf", errc::invalid_file, {"(\"posenc.flag\"): bool value 2 is neither 0 nor 1"}},
      {"bad_duplicate_key.gguf", errc::invalid_file, {"duplicate metadata key \"llama.rope.freq_base\""}},
      {"bad_alignment.gguf", errc::invalid_file, {"general.alignment=48 must be a power of two"}},
      {"bad_too_many_dims.gguf", errc::invalid_file, {"tensor 0 (\"token_embd.weight\"): 5 dimensions"}},
      {"bad_dims_overflow.gguf", errc::invalid_file, {"(\"token_embd.weight\"): the element count overflows int64"}},
      {"bad_misaligned_offset.gguf", errc::invalid_file,
       {"(\"rope_freqs.weight\"): data offset 516 is not a multiple of the alignment 32"}},
      {"bad_rope_freqs_past_end.gguf", errc::invalid_file,
       {"(\"rope_freqs.weight\"): data offset 1048576", "lies past the end of the file (1928 bytes)"}},
      {"bad_rope_freqs_type.gguf", errc::invalid_file, {"tensor \"rope_freqs.weight\" has ggml type F16, expected F32"}},
      {"bad_rope_freqs_shape.gguf", errc::invalid_file,
       {"tensor \"rope_freqs.weight\" has extents [32], expected [64] (rotary_dim/2"}},
      {"bad_missing_architecture.gguf", errc::invalid_file, {"general.architecture is missing"}},
      {"bad_unknown_architecture.gguf", errc::invalid_argument,
       {"architecture \"mystery\" is not in posenc's table", "gguf_options::style"}},
  };
  for (const bad_file& c : cases) {
    SCOPED_TRACE(c.name);
    posenc::gguf_rope_info info;
    info.architecture = "untouched";
    const posenc::status s = posenc::try_read_gguf_rope(data(c.name), info);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), c.code);
    expect_contains(s.message(), {"posenc::read_gguf_rope: path=\"" + data(c.name) + "\": "});
    for (const std::string& n : c.needles) expect_contains(s.message(), {n});
    EXPECT_EQ(info.architecture, "untouched");  // out is left as it was
    try {
      static_cast<void>(posenc::read_gguf_rope(data(c.name)));
      ADD_FAILURE() << "read_gguf_rope did not throw";
    } catch (const posenc::argument_error& e) {
      EXPECT_EQ(e.what(), s.message());
    }
  }
}

TEST(GgufErrors, MetadataReaderRejectsTheStructuralDefects) {
  posenc::gguf_metadata m;
  m.version = 77;
  const posenc::status s = posenc::try_read_gguf_metadata(data("bad_nested_array.gguf"), m);
  EXPECT_EQ(s.code(), posenc::errc::invalid_file);
  expect_contains(s.message(), {"posenc::read_gguf_metadata: path=\"", "arrays of arrays"});
  EXPECT_EQ(m.version, 77u);
  // A file whose RoPE keys are wrong is still fine metadata.
  EXPECT_TRUE(posenc::try_read_gguf_metadata(data("bad_wrong_type.gguf"), m).ok());
  EXPECT_THROW(posenc::read_gguf_metadata(data("bad_magic.gguf")), posenc::argument_error);
}

TEST(GgufErrors, MissingFileIsAnIoError) {
  posenc::gguf_rope_info info;
  const posenc::status s = posenc::try_read_gguf_rope(data("no_such_model.gguf"), info);
  EXPECT_EQ(s.code(), posenc::errc::io_error);
  expect_contains(s.message(), {"posenc::read_gguf_rope: cannot open path=\"", "no_such_model.gguf\""});
  posenc::gguf_metadata m;
  EXPECT_EQ(posenc::try_read_gguf_metadata(data("no_such_model.gguf"), m).code(), posenc::errc::io_error);
}

TEST(GgufErrors, StyleOptionCoversUnknownArchitectures) {
  posenc::gguf_options opt;
  opt.style = posenc::rope_style::half_split;
  const posenc::gguf_rope_info info = posenc::read_gguf_rope(data("bad_unknown_architecture.gguf"), opt);
  EXPECT_EQ(info.architecture, "mystery");
  EXPECT_EQ(info.rope_type, "override");
  EXPECT_EQ(info.config.style, posenc::rope_style::half_split);
  opt.style = posenc::rope_style::half_split;
  EXPECT_EQ(posenc::read_gguf_rope(data("llama3.gguf"), opt).config.style, posenc::rope_style::half_split);
}

// ------------------------------------------------------------------------------- llama.cpp's keys, in memory

/// A GGUF v3 image with metadata only, written here from the format (little-endian), for the key cases the
/// committed files do not cover.
class gguf_image {
 public:
  gguf_image& str(const std::string& key, const std::string& v) { return entry(key, 8, [&] { string(v); }); }
  gguf_image& u32(const std::string& key, std::uint32_t v) { return entry(key, 4, [&] { le(v, 4); }); }
  gguf_image& f32(const std::string& key, float v) {
    std::uint32_t bits;
    std::memcpy(&bits, &v, 4);
    return entry(key, 6, [&] { le(bits, 4); });
  }
  gguf_image& u32_array(const std::string& key, const std::vector<std::uint32_t>& v) {
    return entry(key, 9, [&] {
      le(4, 4);
      le(v.size(), 8);
      for (std::uint32_t e : v) le(e, 4);
    });
  }
  gguf_image& bool_array(const std::string& key, const std::vector<bool>& v) {
    return entry(key, 9, [&] {
      le(7, 4);
      le(v.size(), 8);
      for (bool e : v) le(e ? 1 : 0, 1);
    });
  }
  posenc::status read(posenc::gguf_rope_info& out) const {
    const std::vector<unsigned char> b = bytes();
    return posenc::try_parse_gguf_rope(b.data(), b.size(), out);
  }
  posenc::status read(posenc::model_positional_plan& out) const {
    const std::vector<unsigned char> b = bytes();
    return posenc::try_parse_gguf_model_plan(b.data(), b.size(), out);
  }

 private:
  template <class F>
  gguf_image& entry(const std::string& key, std::uint32_t type, F&& value) {
    string(key);
    le(type, 4);
    value();
    ++n_;
    return *this;
  }
  void le(std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) kv_.push_back(static_cast<unsigned char>(v >> (8 * i)));
  }
  void string(const std::string& s) {
    le(s.size(), 8);
    kv_.insert(kv_.end(), s.begin(), s.end());
  }
  std::vector<unsigned char> bytes() const {
    std::vector<unsigned char> b{'G', 'G', 'U', 'F', 3, 0, 0, 0};
    for (int i = 0; i < 8; ++i) b.push_back(0);  // no tensors
    for (int i = 0; i < 8; ++i) b.push_back(static_cast<unsigned char>(n_ >> (8 * i)));
    b.insert(b.end(), kv_.begin(), kv_.end());
    return b;
  }
  std::vector<unsigned char> kv_;
  std::uint64_t n_ = 0;
};

gguf_image qwen2_base() {
  gguf_image g;
  g.str("general.architecture", "qwen2").u32("qwen2.embedding_length", 256).u32("qwen2.context_length", 8192);
  g.u32_array("qwen2.attention.head_count", {0, 4, 4});  // per layer: the first non-zero, as llama.cpp's n_head()
  return g;
}

/// A model of `arch` with `layers` layers of head dim 64 and base 1e6.
gguf_image model_base(const std::string& arch, std::uint32_t layers) {
  gguf_image g;
  g.str("general.architecture", arch).u32(arch + ".block_count", layers).u32(arch + ".embedding_length", 256);
  g.u32(arch + ".attention.head_count", 4).u32(arch + ".context_length", 8192).f32(arch + ".rope.freq_base", 1e6f);
  return g;
}

std::vector<int> kinds(const posenc::model_positional_plan& m) {
  std::vector<int> k;
  for (const auto& l : m.layers) k.push_back(static_cast<int>(l.attention));
  return k;
}
std::vector<int> ropes(const posenc::model_positional_plan& m) {
  std::vector<int> k;
  for (const auto& l : m.layers) k.push_back(l.rope ? 1 : 0);
  return k;
}

// The per-layer rules of llama.cpp's loaders (src/models/<arch>.cpp) and set_swa_pattern, case by case; the
// golden files (ModelPlanGolden in posenc_tests_hf_config) cover whole models.
TEST(GgufLayers, PatternsAndWindows) {
  posenc::model_positional_plan m;
  // Gemma 3 without rope.freq_base_swa: the local layers' base is 10000, without the global linear scaling.
  ASSERT_TRUE(model_base("gemma3", 6).u32("gemma3.attention.sliding_window", 512).str("gemma3.rope.scaling.type", "linear")
                  .f32("gemma3.rope.scaling.factor", 8.0f).read(m).ok());
  EXPECT_EQ(kinds(m), (std::vector<int>{1, 1, 1, 1, 1, 0}));
  EXPECT_EQ(m.layer(0).window, 512);
  EXPECT_EQ(m.layer(0).config.base, 10000.0);
  EXPECT_EQ(m.layer(0).config.scaling.type, posenc::rope_scaling_type::none);
  EXPECT_EQ(m.layer(5).config.base, 1e6);
  EXPECT_EQ(m.layer(5).config.scaling.type, posenc::rope_scaling_type::linear);
  // Gemma 3 without a window (1B-style converters: sliding_window_pattern 1): every layer full.
  ASSERT_TRUE(model_base("gemma3", 3).read(m).ok());
  EXPECT_EQ(kinds(m), (std::vector<int>{0, 0, 0}));
  // A scalar pattern is the period; a boolean array is the layers themselves.
  ASSERT_TRUE(model_base("gemma2", 6).u32("gemma2.attention.sliding_window_pattern", 3).read(m).ok());
  EXPECT_EQ(kinds(m), (std::vector<int>{1, 1, 0, 1, 1, 0}));
  EXPECT_EQ(m.layer(0).window, 4096);  // Gemma 2's default window
  ASSERT_TRUE(model_base("gemma2", 4).bool_array("gemma2.attention.sliding_window_pattern", {false, true, true, false})
                  .u32("gemma2.attention.sliding_window", 256).read(m).ok());
  EXPECT_EQ(kinds(m), (std::vector<int>{0, 1, 1, 0}));
  EXPECT_EQ(m.layer(1).window, 256);
  // ModernBERT: dense first (layers 0, 3, ... full).
  ASSERT_TRUE(model_base("modern-bert", 4).u32("modern-bert.attention.sliding_window", 128).read(m).ok());
  EXPECT_EQ(kinds(m), (std::vector<int>{0, 1, 1, 0}));
  EXPECT_EQ(m.layer(1).config.base, 10000.0);
  // Phi-3 slides on every layer when the window is set (as Hugging Face; llama.cpp disables Phi SWA).
  ASSERT_TRUE(model_base("phi3", 2).u32("phi3.attention.sliding_window", 2047).read(m).ok());
  EXPECT_EQ(kinds(m), (std::vector<int>{1, 1}));
}

TEST(GgufLayers, NoPeLayersAndTemperature) {
  posenc::model_positional_plan m;
  // Llama 4: chunks of 8192 on RoPE layers, every 4th layer NoPE with the temperature.
  ASSERT_TRUE(model_base("llama4", 8).read(m).ok());
  EXPECT_EQ(kinds(m), (std::vector<int>{2, 2, 2, 0, 2, 2, 2, 0}));
  EXPECT_EQ(ropes(m), (std::vector<int>{1, 1, 1, 0, 1, 1, 1, 0}));
  EXPECT_EQ(m.layer(0).window, 8192);
  EXPECT_TRUE(m.layer(3).temperature.enabled);
  EXPECT_FALSE(m.layer(2).temperature.enabled);
  EXPECT_DOUBLE_EQ(m.layer(3).temperature.scale(8191), 1.0 + 0.1 * std::log(2.0));
  // sliding_window = 0 (MobileLLM-R1's converter): no chunks, RoPE everywhere, no temperature.
  ASSERT_TRUE(model_base("llama4", 4).u32("llama4.attention.sliding_window", 0).read(m).ok());
  EXPECT_EQ(kinds(m), (std::vector<int>{0, 0, 0, 0}));
  EXPECT_EQ(ropes(m), (std::vector<int>{1, 1, 1, 1}));
  EXPECT_FALSE(m.layer(3).temperature.enabled);
  // SmolLM3: every 4th layer NoPE, no window.
  ASSERT_TRUE(model_base("smollm3", 4).read(m).ok());
  EXPECT_EQ(ropes(m), (std::vector<int>{1, 1, 1, 0}));
  EXPECT_EQ(kinds(m), (std::vector<int>{0, 0, 0, 0}));
  // EXAONE 4: SWA (period 4, window 4096) and NoPE full layers only with 64 layers.
  ASSERT_TRUE(model_base("exaone4", 64).read(m).ok());
  EXPECT_EQ(m.layer(0).window, 4096);
  EXPECT_EQ(ropes(m)[3], 0);
  EXPECT_EQ(ropes(m)[2], 1);
  ASSERT_TRUE(model_base("exaone4", 30).read(m).ok());
  EXPECT_EQ(kinds(m), std::vector<int>(30, 0));
  EXPECT_EQ(ropes(m), std::vector<int>(30, 1));
}

TEST(GgufLayers, RejectedFilesNameTheKey) {
  posenc::model_positional_plan m;
  m.model_type = "untouched";
  const auto expect_error = [&](const gguf_image& g, posenc::errc code, std::initializer_list<std::string_view> parts) {
    const posenc::status s = g.read(m);
    EXPECT_EQ(s.code(), code) << s.message();
    expect_contains(s.message(), parts);
    EXPECT_EQ(m.model_type, "untouched") << "the output changed on a rejected file";
  };
  expect_error(model_base("gpt-oss", 2), posenc::errc::invalid_file,
               {"posenc::read_gguf_model_plan: buffer: gpt-oss.attention.sliding_window is missing"});
  gguf_image no_blocks;
  no_blocks.str("general.architecture", "qwen2").u32("qwen2.embedding_length", 256).u32("qwen2.attention.head_count", 4);
  expect_error(no_blocks, posenc::errc::invalid_file, {"qwen2.block_count is missing"});
  expect_error(model_base("gemma3", 2).u32("gemma3.attention.sliding_window", 8).f32("gemma3.rope.freq_base_swa", 0.5f),
               posenc::errc::invalid_file, {"gemma3.rope.freq_base_swa=0.5 must be finite and > 1"});
  expect_error(model_base("qwen2", 513), posenc::errc::invalid_file,
               {"qwen2.block_count=513 exceeds 512 layers (llama.cpp's LLAMA_MAX_LAYERS)"});
  expect_error(model_base("gemma2", 3).bool_array("gemma2.attention.sliding_window_pattern", {true, false}),
               posenc::errc::invalid_file, {"gemma2.attention.sliding_window_pattern has 2 entries; block_count=3"});
  expect_error(model_base("gemma2", 2).f32("gemma2.attention.sliding_window_pattern", 2.0f), posenc::errc::invalid_file,
               {"gemma2.attention.sliding_window_pattern has type float32"});
  expect_error(model_base("gemma3", 2).u32("gemma3.attention.key_length_swa", 256), posenc::errc::invalid_argument,
               {"gemma3.attention.key_length_swa is not read by posenc yet"});
  expect_error(model_base("llama", 2).u32("llama.attention.sliding_window", 4096), posenc::errc::invalid_argument,
               {"architecture \"llama\" has sliding-window keys", "but no per-layer rule in posenc"});
  expect_error(model_base("qwen2", 2).f32("qwen2.attention.temperature_scale", 0.1f), posenc::errc::invalid_argument,
               {"qwen2.attention.temperature_scale is read for mistral3 only"});
  expect_error(model_base("cohere2", 2).u32("cohere2.attention.sliding_window", 0), posenc::errc::invalid_file,
               {"cohere2.attention.sliding_window is 0 for a sliding-window layer"});
}

TEST(GgufKeys, ScalingAsLlamaCppReadsIt) {
  posenc::gguf_rope_info info;
  ASSERT_TRUE(qwen2_base().f32("qwen2.rope.scale_linear", 2.0f).read(info).ok());  // the old key: linear
  expect_config_eq(info.config, make_config(64, 64, 10000.0, posenc::rope_scaling::linear(2.0), posenc::rope_style::half_split));
  EXPECT_EQ(info.head_count, 4);
  ASSERT_TRUE(qwen2_base().str("qwen2.rope.scaling.type", "linear").read(info).ok());  // no factor: none
  EXPECT_EQ(info.config.scaling.type, posenc::rope_scaling_type::none);
  ASSERT_TRUE(qwen2_base().str("qwen2.rope.scaling.type", "none").f32("qwen2.rope.scaling.factor", 4.0f).read(info).ok());
  EXPECT_EQ(info.config.scaling.type, posenc::rope_scaling_type::none);
  // YaRN: no factor is 1 (llama.cpp); M defaults to context_length; attention factors.
  ASSERT_TRUE(qwen2_base().str("qwen2.rope.scaling.type", "yarn").read(info).ok());
  expect_scaling_eq(info.config.scaling, posenc::rope_scaling::yarn(1.0, 8192));
  ASSERT_TRUE(qwen2_base().str("qwen2.rope.scaling.type", "yarn").f32("qwen2.rope.scaling.factor", 4.0f)
                  .f32("qwen2.rope.scaling.yarn_attn_factor", 1.25f).read(info).ok());
  EXPECT_EQ(info.config.scaling.attention_factor, 1.25);  // HF's attention_factor, as the converter wrote it
  ASSERT_TRUE(qwen2_base().str("qwen2.rope.scaling.type", "yarn").f32("qwen2.rope.scaling.factor", 4.0f)
                  .f32("qwen2.rope.scaling.attn_factor", 1.5f).read(info).ok());
  ASSERT_TRUE(info.config.scaling.attention_factor.has_value());
  EXPECT_DOUBLE_EQ(*info.config.scaling.attention_factor, 1.5 * (0.1 * std::log(4.0) + 1.0));  // times the derived
}

TEST(GgufKeys, WhatPosencCannotExpress) {
  posenc::gguf_rope_info info;
  posenc::status s = qwen2_base().str("qwen2.rope.scaling.type", "yarn").f32("qwen2.rope.scaling.factor", 4.0f)
                         .f32("qwen2.rope.scaling.yarn_ext_factor", 0.5f).read(info);
  EXPECT_EQ(s.code(), posenc::errc::invalid_file);
  expect_contains(s.message(), {"posenc::read_gguf_rope: buffer: qwen2.rope.scaling.yarn_ext_factor=0.5 is not supported"});
  s = qwen2_base().str("qwen2.rope.scaling.type", "yarn").f32("qwen2.rope.scaling.factor", 4.0f)
          .f32("qwen2.rope.scaling.yarn_log_multiplier", 0.1f).read(info);
  EXPECT_EQ(s.code(), posenc::errc::invalid_argument);
  expect_contains(s.message(), {"yarn_log_multiplier=", "only understood for deepseek2"});
  s = qwen2_base().f32("qwen2.rope.scaling.attn_factor", 2.0f).read(info);
  EXPECT_EQ(s.code(), posenc::errc::invalid_file);
  expect_contains(s.message(), {"qwen2.rope.scaling.attn_factor=2 needs a YaRN or LongRoPE scaling"});
  s = qwen2_base().str("qwen2.rope.scaling.type", "dynamic-ish").read(info);
  expect_contains(s.message(), {"qwen2.rope.scaling.type=\"dynamic-ish\" is not supported"});
  s = qwen2_base().f32("qwen2.rope.freq_base", 1.0f).read(info);
  expect_contains(s.message(), {"buffer: posenc::make_rope_plan: base=1 must be finite and > 1"});
  gguf_image gpt2;
  gpt2.str("general.architecture", "gpt2").u32("gpt2.embedding_length", 768).u32("gpt2.attention.head_count", 12);
  s = gpt2.read(info);
  EXPECT_EQ(s.code(), posenc::errc::invalid_argument);
  expect_contains(s.message(), {"architecture \"gpt2\" uses no RoPE"});
  gguf_image headless;
  headless.str("general.architecture", "llama").u32("llama.embedding_length", 4096);
  expect_contains(headless.read(info).message(), {"llama.attention.head_count is missing"});
}

// ------------------------------------------------------------------------------ the shared rope_params mapping

TEST(RopeParams, MapsEveryScalingType) {
  posenc::rope_params p;
  p.head_dim = 64;
  EXPECT_EQ(posenc::rope_config_from_params(p).scaling.type, posenc::rope_scaling_type::none);
  p.scaling_type = "linear";
  p.factor = 2.0;
  EXPECT_EQ(posenc::rope_config_from_params(p).scaling.type, posenc::rope_scaling_type::linear);
  p.scaling_type = "dynamic";
  p.max_position_embeddings = 2048;
  expect_scaling_eq(posenc::rope_config_from_params(p).scaling, posenc::rope_scaling::dynamic_ntk(2.0, 2048));
  p.scaling_type = "llama3";
  p.low_freq_factor = 1.0;
  p.high_freq_factor = 4.0;
  p.original_max_positions = 1024;
  expect_scaling_eq(posenc::rope_config_from_params(p).scaling, posenc::rope_scaling::llama3(2.0, 1.0, 4.0, 1024));
  p.scaling_type = "yarn";
  p.factor.reset();  // max_position_embeddings / M
  expect_scaling_eq(posenc::rope_config_from_params(p).scaling, posenc::rope_scaling::yarn(2.0, 1024));
  p.yarn_variant = posenc::rope_yarn_variant::deepseek;
  expect_scaling_eq(posenc::rope_config_from_params(p).scaling, posenc::rope_scaling::deepseek_yarn(2.0, 1024, 1.0, 0.0));
  p.scaling_type = "su";
  p.short_factor.assign(32, 1.0);
  p.long_factor.assign(32, 2.0);
  expect_scaling_eq(posenc::rope_config_from_params(p).scaling,
                    posenc::rope_scaling::longrope(p.short_factor, p.long_factor, 1024, 2.0));
  // llama.cpp's attn_factor multiplies the magnitude LongRoPE derives.
  p.attn_factor = 1.5;
  const posenc::rope_config c = posenc::rope_config_from_params(p);
  ASSERT_TRUE(c.scaling.attention_factor.has_value());
  EXPECT_DOUBLE_EQ(*c.scaling.attention_factor, 1.5 * std::sqrt(1.0 + std::log(2.0) / std::log(1024.0)));
  // Partial rotary, sections, freq_factors.
  posenc::rope_params q;
  q.head_dim = 80;
  q.partial_rotary_factor = 0.4;  // int(32.000000000000004) = 32
  q.mrope_section = {4, 6, 6};
  q.freq_factors.assign(16, 2.0);
  const posenc::rope_config d = posenc::rope_config_from_params(q);
  EXPECT_EQ(d.rotary_dim, 32);
  EXPECT_EQ(d.freq_factors, std::vector<double>(16, 2.0));
}

TEST(RopeParams, RejectsWithStatusAndLeavesOutUnchanged) {
  struct bad {
    std::function<void(posenc::rope_params&)> edit;
    const char* needle;
  };
  const std::vector<bad> cases = {
      {[](posenc::rope_params& p) { p.head_dim = 0; }, "head_dim=0 must be > 0"},
      {[](posenc::rope_params& p) { p.head_dim = index_t{1} << 40; }, "head_dim=1099511627776 exceeds 65536"},
      {[](posenc::rope_params& p) { p.scaling_type = "linear"; }, "factor is missing (required for scaling_type=\"linear\")"},
      {[](posenc::rope_params& p) { p.scaling_type = "ntk-by-parts"; },
       "scaling_type=\"ntk-by-parts\" is not supported (known: default, linear, dynamic, yarn, longrope, llama3"},
      {[](posenc::rope_params& p) { p.scaling_type = "yarn"; p.factor = 2.0; },
       "original_max_positions is missing (required for scaling_type=\"yarn\" without max_position_embeddings)"},
      {[](posenc::rope_params& p) { p.scaling_type = "yarn"; p.factor = 2.0; p.original_max_positions = 16; p.ext_factor = 0.5; },
       "ext_factor=0.5 is not supported"},
      {[](posenc::rope_params& p) { p.attn_factor = 2.0; }, "attn_factor=2 needs a YaRN or LongRoPE scaling"},
      {[](posenc::rope_params& p) { p.partial_rotary_factor = 1.5; }, "partial_rotary_factor=1.5 must be in (0, 1]"},
      {[](posenc::rope_params& p) { p.mrope_section = {1, 2}; }, "mrope_section=[1,2] must be 3 sections summing to rotary_dim/2=32"},
      {[](posenc::rope_params& p) { p.freq_factors.assign(3, 1.0); }, "freq_factors has 3 entries, rotary_dim/2=32 needed"},
      {[](posenc::rope_params& p) { p.base = 0.5; }, "posenc::make_rope_plan: base=0.5 must be finite and > 1"},
  };
  for (const bad& c : cases) {
    posenc::rope_params p;
    p.head_dim = 64;
    c.edit(p);
    posenc::rope_config out;
    out.head_dim = 12345;
    const posenc::status s = posenc::try_rope_config_from_params(p, out);
    ASSERT_FALSE(s.ok()) << c.needle;
    EXPECT_EQ(s.code(), posenc::errc::invalid_argument);
    expect_contains(s.message(), {c.needle});
    if (std::string(c.needle).rfind("posenc::", 0) != 0)
      expect_contains(s.message(), {"posenc::rope_config_from_params: "});
    EXPECT_EQ(out.head_dim, 12345);
    EXPECT_THROW(posenc::rope_config_from_params(p), posenc::argument_error);
  }
}

TEST(RopeParams, HugeMropeSectionsAreRejectedWithoutOverflow) {
  // Found by the GGUF fuzzer: two sections whose int64 sum overflows.
  posenc::rope_params p;
  p.head_dim = 16;
  p.mrope_section = {3345165479976147656, 7815496250147959040, 0};
  posenc::rope_config cfg;
  const posenc::status s = posenc::try_rope_config_from_params(p, cfg);
  EXPECT_EQ(s.code(), posenc::errc::invalid_argument);
  EXPECT_NE(s.message().find("must be 3 sections summing to rotary_dim/2=8"), std::string::npos) << s.message();
}

TEST(RopeParams, ModelHeadDimLooksUpAsBothReaders) {
  using posenc::detail::head_dim_source;
  using opt = std::optional<index_t>;
  index_t d = -1;
  EXPECT_EQ(posenc::detail::model_head_dim(opt(64), opt(192), opt(7168), opt(128), d), head_dim_source::rotary_head);
  EXPECT_EQ(d, 64);
  EXPECT_EQ(posenc::detail::model_head_dim({}, opt(128), opt(5120), opt(64), d), head_dim_source::head_dim);
  EXPECT_EQ(d, 128);
  EXPECT_EQ(posenc::detail::model_head_dim({}, {}, opt(4096), opt(32), d), head_dim_source::width_over_heads);
  EXPECT_EQ(d, 128);
  EXPECT_EQ(posenc::detail::model_head_dim({}, {}, opt(3), opt(4), d), head_dim_source::width_over_heads);
  EXPECT_EQ(d, 0);  // the caller reports a width smaller than the heads
  d = -1;
  EXPECT_EQ(posenc::detail::model_head_dim({}, {}, {}, opt(32), d), head_dim_source::no_width);
  EXPECT_EQ(posenc::detail::model_head_dim({}, {}, opt(4096), {}, d), head_dim_source::no_heads);
  EXPECT_EQ(posenc::detail::model_head_dim({}, {}, opt(4096), opt(0), d), head_dim_source::no_heads);
  EXPECT_EQ(d, -1);
}

// ------------------------------------------------------------- the Hugging Face key mapping, without JSON

namespace hf = posenc::detail::hf;

template <class T>
void set(hf::config_key<T>& key, T value) {
  key.value = std::move(value);
}

template <class T>
void set_error(hf::config_key<T>& key) {
  key.error = posenc::status(posenc::errc::invalid_argument, key.name + " is bad");
}

hf::config_keys llama31_keys() {
  hf::config_keys k;
  k.model_type = "llama";
  set(k.top.num_attention_heads, index_t{32});
  set(k.top.num_key_value_heads, index_t{8});
  set(k.top.hidden_size, index_t{4096});
  set(k.top.max_position_embeddings, index_t{131072});
  set(k.top.rope_theta, 500000.0);
  set(k.dict.rope_type, std::string("llama3"));
  set(k.dict.factor, 8.0);
  set(k.dict.low_freq_factor, 1.0);
  set(k.dict.high_freq_factor, 4.0);
  set(k.dict.original_max_position_embeddings, index_t{8192});
  return k;
}

TEST(HfMapping, PlainValuesGiveTheRopeConfig) {
  posenc::hf_rope_info m;
  ASSERT_TRUE(hf::map_config(llama31_keys(), {}, m).ok());
  EXPECT_EQ(m.config.head_dim, 128);
  EXPECT_EQ(m.config.rotary_dim, 128);
  EXPECT_EQ(m.config.base, 500000.0);
  EXPECT_EQ(m.config.style, posenc::rope_style::half_split);
  expect_scaling_eq(m.config.scaling, posenc::rope_scaling::llama3(8.0, 1.0, 4.0, 8192));
  EXPECT_EQ(m.rope_type, "llama3");
  EXPECT_EQ(m.num_attention_heads, 32);
  EXPECT_EQ(m.num_key_value_heads, 8);
  EXPECT_EQ(m.max_position_embeddings, 131072);
  EXPECT_EQ(m.partial_rotary_factor, 1.0);

  // Defaults: no GQA, base 10000, no scaling, "default".
  hf::config_keys bare;
  set(bare.top.num_attention_heads, index_t{16});
  set(bare.top.head_dim, index_t{64});
  ASSERT_TRUE(hf::map_config(bare, {}, m).ok());
  EXPECT_EQ(m.num_key_value_heads, 16);
  EXPECT_EQ(m.config.base, 10000.0);
  EXPECT_EQ(m.config.scaling.type, posenc::rope_scaling_type::none);
  EXPECT_EQ(m.rope_type, "default");
}

TEST(HfMapping, WhichKeyWins) {
  posenc::hf_rope_info m;
  // partial_rotary_factor: the dict's, else the model's, else GPT-NeoX's rotary_pct.
  hf::config_keys k = llama31_keys();
  set(k.top.rotary_pct, 0.25);
  ASSERT_TRUE(hf::map_config(k, {}, m).ok());
  EXPECT_EQ(m.config.rotary_dim, 32);
  set(k.top.partial_rotary_factor, 0.5);
  ASSERT_TRUE(hf::map_config(k, {}, m).ok());
  EXPECT_EQ(m.config.rotary_dim, 64);
  set(k.dict.partial_rotary_factor, 0.75);
  ASSERT_TRUE(hf::map_config(k, {}, m).ok());
  EXPECT_EQ(m.config.rotary_dim, 96);
  EXPECT_EQ(m.partial_rotary_factor, 0.75);
  // rope_theta: the dict's, else the model's, else rotary_emb_base.
  k = llama31_keys();
  k.top.rope_theta = {};
  set(k.top.rotary_emb_base, 20000.0);
  ASSERT_TRUE(hf::map_config(k, {}, m).ok());
  EXPECT_EQ(m.config.base, 20000.0);
  set(k.dict.rope_theta, 30000.0);
  ASSERT_TRUE(hf::map_config(k, {}, m).ok());
  EXPECT_EQ(m.config.base, 30000.0);
  // M: a top-level original_max_position_embeddings (Phi-3) wins over the dict's.
  set(k.top.original_max_position_embeddings, index_t{4096});
  ASSERT_TRUE(hf::map_config(k, {}, m).ok());
  EXPECT_EQ(m.config.scaling.original_max_positions, 4096);
  // rope_type, else the legacy type; qk_rope_head_dim over head_dim over hidden_size / heads.
  k = llama31_keys();
  k.dict.rope_type = {};
  set(k.dict.type, std::string("linear"));
  set(k.top.head_dim, index_t{96});
  ASSERT_TRUE(hf::map_config(k, {}, m).ok());
  EXPECT_EQ(m.config.scaling.type, posenc::rope_scaling_type::linear);
  EXPECT_EQ(m.config.head_dim, 96);
  set(k.top.qk_rope_head_dim, index_t{64});
  ASSERT_TRUE(hf::map_config(k, {}, m).ok());
  EXPECT_EQ(m.config.head_dim, 64);
}

TEST(HfMapping, ReportsTheFirstErrorOfTheKeysItUses) {
  posenc::hf_rope_info m;
  // hidden_size counts only without a head_dim, and rotary_pct only without a partial_rotary_factor.
  hf::config_keys k = llama31_keys();
  set(k.top.head_dim, index_t{128});
  k.top.hidden_size.value.reset();
  set_error(k.top.hidden_size);
  set(k.top.partial_rotary_factor, 1.0);
  set_error(k.top.rotary_pct);
  EXPECT_TRUE(hf::map_config(k, {}, m).ok());
  k.top.head_dim = {};
  posenc::status s = hf::map_config(k, {}, m);
  EXPECT_EQ(s.message(), "hidden_size is bad");
  // In the order used: the head counts before the scaling keys.
  k = llama31_keys();
  set_error(k.dict.factor);
  k.top.num_key_value_heads.value.reset();
  set_error(k.top.num_key_value_heads);
  EXPECT_EQ(hf::map_config(k, {}, m).message(), "num_key_value_heads is bad");
  // Missing keys are named as the JSON layer names them.
  k = llama31_keys();
  k.top.hidden_size = hf::config_key<index_t>("text_config.hidden_size");
  s = hf::map_config(k, {}, m);
  EXPECT_EQ(s.message(), "posenc::rope_config_from_hf: text_config.hidden_size is missing (required for the head "
                         "dimension: no head_dim in the config)");
  k = llama31_keys();
  set(k.top.hidden_size, index_t{16});
  EXPECT_EQ(hf::map_config(k, {}, m).message(),
            "posenc::rope_config_from_hf: hidden_size=16 is smaller than num_attention_heads=32");
  k = llama31_keys();
  k.dict.factor = hf::config_key<double>("rope_scaling.factor");
  EXPECT_EQ(hf::map_config(k, {}, m).message(),
            "posenc::rope_config_from_hf: rope_scaling.factor is missing (required for rope_type=\"llama3\")");
}

TEST(HfMapping, DeepSeekByModelTypeOrArchitecture) {
  EXPECT_TRUE(hf::is_deepseek("deepseek_v3", {}));
  EXPECT_TRUE(hf::is_deepseek("kimi_k2", {"DeepseekV3ForCausalLM"}));
  EXPECT_FALSE(hf::is_deepseek("llama", {"LlamaForCausalLM"}));

  hf::config_keys k;
  k.model_type = "deepseek_v3";
  set(k.top.num_attention_heads, index_t{128});
  set(k.top.qk_rope_head_dim, index_t{64});
  set(k.top.max_position_embeddings, index_t{163840});
  set(k.dict.rope_type, std::string("yarn"));
  set(k.dict.factor, 40.0);
  set(k.dict.original_max_position_embeddings, index_t{4096});
  set(k.dict.mscale_all_dim, 1.0);
  posenc::hf_rope_info m;
  ASSERT_TRUE(hf::map_config(k, {}, m).ok());
  EXPECT_EQ(m.config.style, posenc::rope_style::interleaved);
  expect_scaling_eq(m.config.scaling, posenc::rope_scaling::deepseek_yarn(40.0, 4096, 1.0, 1.0));
  // rope_interleave=false keeps HF's rotate_half; the caller's choices win over the model.
  set(k.top.rope_interleave, false);
  hf::choices c;
  c.yarn = posenc::rope_yarn_variant::yarn;
  ASSERT_TRUE(hf::map_config(k, c, m).ok());
  EXPECT_EQ(m.config.style, posenc::rope_style::half_split);
  EXPECT_EQ(m.config.scaling.type, posenc::rope_scaling_type::yarn);
  c.style = posenc::rope_style::interleaved;
  ASSERT_TRUE(hf::map_config(k, c, m).ok());
  EXPECT_EQ(m.config.style, posenc::rope_style::interleaved);
}

}  // namespace
