// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// llama.cpp's RoPE keys -> rope_params: which `<arch>.*` keys and factor tensors hold what, read as
// llama_model::load_hparams (src/llama-model.cpp) and llama_context (src/llama-context.cpp) read them, then
// mapped by the rope_params mapping shared with hf_config.hpp. Key names: llama.cpp src/llama-arch.cpp
// (LLM_KV_NAMES). Works on a parsed gguf_metadata (reader.hpp) and the byte source for the factor tensors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/detail/gguf/arch.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/io/gguf_types.hpp"
#include "posenc/rope_params.hpp"
#include "posenc/rope_plan.hpp"
#include "posenc/status.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail::gguf {

/// Typed access to the metadata for the RoPE mapping: a key of the wrong type is an invalid_file naming it.
class rope_keys {
 public:
  rope_keys(const gguf_metadata& m, const char* fn, const std::string& what) : m_(m), fn_(fn), what_(what) {}

  template <class... Parts>
  status bad(const Parts&... parts) const {
    return fail_with(errc::invalid_file, fn_, what_, ": ", parts...);
  }
  status wrong_type(const std::string& key, const gguf_value& v, const char* expected) const {
    return bad(key, " has type ", v.type_name(), ", expected ", expected);
  }

  status string(const std::string& key, std::optional<std::string>& out) const {
    const gguf_value* v = m_.find(key);
    if (v == nullptr) return {};
    if (v->type != gguf_type::string) return wrong_type(key, *v, "string");
    out = v->string;
    return {};
  }
  /// A count or length: an integer >= 0. llama.cpp writes uint32; any integer type is accepted.
  status count(const std::string& key, std::optional<index_t>& out) const {
    const gguf_value* v = m_.find(key);
    if (v == nullptr) return {};
    if (!v->is_integer()) return wrong_type(key, *v, "an unsigned integer (uint32)");
    const auto i = v->to_int();
    if (!i) return bad(key, "=", v->bits, " is too large");
    if (*i < 0) return bad(key, "=", *i, " must be >= 0");
    out = *i;
    return {};
  }
  /// A count that llama.cpp also accepts per layer (get_key_or_arr): a scalar, or an array whose first non-zero
  /// entry is taken (hybrid models list 0 heads for their recurrent layers).
  status count_or_array(const std::string& key, std::optional<index_t>& out) const {
    const gguf_value* v = m_.find(key);
    if (v == nullptr || !v->is_array()) return count(key, out);
    if (!is_integer_type(v->element_type)) return wrong_type(key, *v, "an unsigned integer or an array of them");
    for (std::uint64_t i = 0; i < v->count; ++i) {
      const auto e = v->int_at(i);
      if (!e || *e < 0) return bad(key, "[", i, "] must be an integer >= 0");
      if (*e != 0) {
        out = *e;
        return {};
      }
    }
    out = 0;
    return {};
  }
  /// A number: llama.cpp writes float32; any integer or float type is accepted.
  status number(const std::string& key, std::optional<double>& out) const {
    const gguf_value* v = m_.find(key);
    if (v == nullptr) return {};
    if (!v->is_number()) return wrong_type(key, *v, "a number (float32)");
    out = v->to_double();
    return {};
  }
  status integers(const std::string& key, std::vector<index_t>& out) const {
    const gguf_value* v = m_.find(key);
    if (v == nullptr) return {};
    if (!v->is_array() || !is_integer_type(v->element_type)) return wrong_type(key, *v, "an array of integers (int32)");
    out.clear();
    for (std::uint64_t i = 0; i < v->count; ++i) {
      const auto e = v->int_at(i);
      if (!e || *e < 0) return bad(key, "[", i, "] must be an integer >= 0");
      out.push_back(*e);
    }
    return {};
  }

 private:
  const gguf_metadata& m_;
  const char* fn_;
  const std::string& what_;
};

/// Reads a small F32 tensor of `pairs` elements (shape [pairs], trailing extents of 1 allowed) from the source.
template <class Source>
status read_factor_tensor(Source& src, const gguf_tensor_info& t, index_t pairs, const rope_keys& k,
                          const char* fn, const std::string& what, std::vector<double>& out) {
  if (t.type != 0) return k.bad("tensor \"", t.name, "\" has ggml type ", ggml_type_name(t.type), ", expected F32");
  bool shape_ok = !t.dims.empty() && t.dims[0] == pairs;
  for (std::size_t d = 1; d < t.dims.size(); ++d) shape_ok = shape_ok && t.dims[d] == 1;
  if (!shape_ok) {
    std::string dims;
    for (std::size_t d = 0; d < t.dims.size(); ++d) dims += (d ? ", " : "") + std::to_string(t.dims[d]);
    return k.bad("tensor \"", t.name, "\" has extents [", dims, "], expected [", pairs, "] (rotary_dim/2 per-pair factors)");
  }
  // Bounds were checked with the directory (nbytes of an F32 tensor is known); pairs is small.
  std::vector<unsigned char> raw(static_cast<std::size_t>(pairs) * 4);
  if (!src.read(t.file_offset, raw.data(), raw.size()))
    return fail_with(errc::io_error, fn, what, ": read of tensor \"", t.name, "\" at offset ", t.file_offset, " failed");
  out.resize(static_cast<std::size_t>(pairs));
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto bits = static_cast<std::uint32_t>(load_le(raw.data() + 4 * i, 4));
    float f = 0;
    std::memcpy(&f, &bits, sizeof f);
    out[i] = static_cast<double>(f);
  }
  return {};
}

/// llama.cpp's keys -> rope_params -> rope_config (the shared mapping), into `out` (assigned only on success).
template <class Source>
status rope_from_metadata(const gguf_metadata& m, Source& src, const gguf_options& opt, const char* fn,
                          const std::string& what, gguf_rope_info& out) {
  const rope_keys k(m, fn, what);
  gguf_rope_info info;
  info.version = m.version;

  std::optional<std::string> arch, name;
  POSENC_TRY(k.string("general.architecture", arch));
  if (!arch) return k.bad("general.architecture is missing");
  POSENC_TRY(k.string("general.name", name));
  info.architecture = *arch;
  info.name = name.value_or("");
  const std::string a = *arch + ".";

  // Style: llama.cpp's table, unless the caller decides.
  const arch_rope kind = arch_rope_type(*arch);
  rope_params p;
  if (opt.style) {
    p.style = *opt.style;
    info.rope_type = "override";
  } else if (kind == arch_rope::norm || kind == arch_rope::neox || kind == arch_rope::mrope) {
    p.style = kind == arch_rope::norm ? rope_style::interleaved : rope_style::half_split;
    info.rope_type = kind == arch_rope::norm ? "norm" : kind == arch_rope::neox ? "neox" : "mrope";
  } else if (kind == arch_rope::none) {
    return fail(fn, what, ": architecture \"", *arch, "\" uses no RoPE (llama.cpp llama_model_rope_type: LLAMA_ROPE_TYPE_NONE)");
  } else {
    return fail(fn, what, ": architecture \"", *arch,
                "\" is not in posenc's table of llama.cpp pair styles: set gguf_options::style (interleaved for "
                "LLAMA_ROPE_TYPE_NORM, half_split for LLAMA_ROPE_TYPE_NEOX)");
  }

  // Head and rotary dims (llama_model::load_hparams).
  std::optional<index_t> ctx, emb, heads, heads_kv, key_len, rot, orig;
  POSENC_TRY(k.count(a + "context_length", ctx));
  POSENC_TRY(k.count(a + "embedding_length", emb));
  POSENC_TRY(k.count_or_array(a + "attention.head_count", heads));
  POSENC_TRY(k.count_or_array(a + "attention.head_count_kv", heads_kv));
  POSENC_TRY(k.count(a + "attention.key_length", key_len));
  POSENC_TRY(k.count(a + "rope.dimension_count", rot));
  POSENC_TRY(k.count(a + "rope.scaling.original_context_length", orig));
  info.context_length = ctx.value_or(0);
  info.embedding_length = emb.value_or(0);
  info.head_count = heads.value_or(0);
  info.head_count_kv = heads_kv.value_or(info.head_count);
  info.original_context_length = orig.value_or(0);
  // MLA (deepseek2): q/k = [nope | rope]; the rope part is its own head, as hf_config.hpp reads qk_rope_head_dim.
  const bool mla = *arch == "deepseek2";
  if (mla && !rot) return k.bad(a, "rope.dimension_count is missing (the rotary head of deepseek2's MLA)");
  const head_dim_source head_from =
      model_head_dim(mla ? rot : std::optional<index_t>{}, key_len, emb, heads, p.head_dim);
  if (head_from == head_dim_source::no_width)
    return k.bad(a, "embedding_length is missing (needed for the head dim: no ", a, "attention.key_length)");
  if (head_from == head_dim_source::no_heads)
    return k.bad(a, "attention.head_count is ", heads ? "0" : "missing", " (needed for the head dim: no ", a,
                 "attention.key_length)");
  p.rotary_dim = rot.value_or(p.head_dim);
  if (p.head_dim <= 0) return k.bad("the head dim is 0");
  if (p.rotary_dim <= 0) return k.bad(a, "rope.dimension_count is 0");
  const index_t pairs = p.rotary_dim / 2;

  std::optional<double> base;
  POSENC_TRY(k.number(a + "rope.freq_base", base));
  p.base = base.value_or(10000.0);

  // Scaling (load_hparams): the type defaults to "linear" with factor 0 meaning 1, i.e. none.
  std::optional<std::string> type;
  POSENC_TRY(k.string(a + "rope.scaling.type", type));
  info.file_scaling_type = type.value_or("");
  std::optional<double> factor, scale_linear, attn, yarn_attn, ext, beta_fast, beta_slow, log_mul;
  POSENC_TRY(k.number(a + "rope.scaling.factor", factor));
  POSENC_TRY(k.number(a + "rope.scale_linear", scale_linear));  // the key's old name
  POSENC_TRY(k.number(a + "rope.scaling.attn_factor", attn));
  POSENC_TRY(k.number(a + "rope.scaling.yarn_attn_factor", yarn_attn));
  POSENC_TRY(k.number(a + "rope.scaling.yarn_ext_factor", ext));
  POSENC_TRY(k.number(a + "rope.scaling.yarn_beta_fast", beta_fast));
  POSENC_TRY(k.number(a + "rope.scaling.yarn_beta_slow", beta_slow));
  POSENC_TRY(k.number(a + "rope.scaling.yarn_log_multiplier", log_mul));
  const std::string factor_key = a + (factor ? "rope.scaling.factor" : "rope.scale_linear");
  if (!factor) factor = scale_linear;
  if (factor && *factor == 0.0) factor.reset();  // llama.cpp: 0 means no scaling

  rope_param_names n;
  n.function = fn;
  n.context = what + ": ";
  n.head_dim = a + (head_from == head_dim_source::rotary_head ? "rope.dimension_count"
                    : head_from == head_dim_source::head_dim  ? "attention.key_length"
                                                              : "embedding_length/head_count");
  n.rotary_dim = a + "rope.dimension_count";
  n.scaling_type = n.scaling_label = a + "rope.scaling.type";
  n.factor = factor_key;
  n.original_max_positions = a + "rope.scaling.original_context_length";
  n.max_position_embeddings = a + "context_length";
  n.beta_fast = a + "rope.scaling.yarn_beta_fast";
  n.beta_slow = a + "rope.scaling.yarn_beta_slow";
  n.ext_factor = a + "rope.scaling.yarn_ext_factor";
  n.attention_factor = a + "rope.scaling.yarn_attn_factor";
  n.attn_factor = a + "rope.scaling.attn_factor";
  n.mscale_all_dim = a + "rope.scaling.yarn_log_multiplier";
  n.short_factor = "rope_factors_short.weight";
  n.long_factor = "rope_factors_long.weight";
  n.freq_factors = "rope_freqs.weight";
  n.mrope_section = a + "rope.dimension_sections";

  p.max_position_embeddings = info.context_length;
  p.original_max_positions = info.original_context_length;
  p.factor = factor;
  p.long_policy = opt.long_policy;

  const gguf_tensor_info* freqs = m.find_tensor("rope_freqs.weight");
  const gguf_tensor_info* longf = m.find_tensor("rope_factors_long.weight");
  const gguf_tensor_info* shortf = m.find_tensor("rope_factors_short.weight");
  const std::string t = type.value_or(factor ? "linear" : "none");
  p.scaling_type = t;
  if (longf != nullptr || shortf != nullptr || t == "longrope") {
    // Phi-3 LongRoPE: the per-pair factors are tensors; older converters write no scaling type. llama.cpp
    // scales cos/sin by rope.scaling.attn_factor alone (1 when absent), which the converter sets to HF's
    // attention factor sqrt(1 + ln F / ln M).
    if (t != "none" && t != "longrope")
      return k.bad("rope_factors_long/short.weight are present with ", n.scaling_type, "=\"", t, "\"");
    if (longf == nullptr || shortf == nullptr)
      return k.bad(longf == nullptr ? "rope_factors_long.weight" : "rope_factors_short.weight",
                   " is missing (LongRoPE needs both factor tensors)");
    if (factor && *factor != 1.0)
      return k.bad(factor_key, "=", *factor, " with LongRoPE factors is not supported (llama.cpp would add linear scaling)");
    p.scaling_type = "longrope";
    // HF's factor (context_length / M) only sets the default magnitude, which attn_factor replaces below.
    p.factor.reset();
    if (info.context_length == 0) p.factor = 1.0;
    POSENC_TRY(read_factor_tensor(src, *longf, pairs, k, fn, what, p.long_factor));
    POSENC_TRY(read_factor_tensor(src, *shortf, pairs, k, fn, what, p.short_factor));
    p.attention_factor = attn.value_or(1.0);
    n.attention_factor = n.attn_factor;
  } else if (freqs != nullptr) {
    // Llama 3 and others: ggml divides each frequency by its factor (rope_freqs.weight, [R/2] F32).
    POSENC_TRY(read_factor_tensor(src, *freqs, pairs, k, fn, what, p.freq_factors));
    info.freq_factors_tensor = freqs->name;
  }
  // llama.cpp reads an absent factor as 1 (freq_scale 1): linear is then no scaling, YaRN a factor of 1
  // (Hugging Face would derive context_length / M instead; the file is llama.cpp's).
  if (p.scaling_type == "linear" && !p.factor) p.scaling_type = "none";
  if (p.scaling_type == "yarn" && !p.factor) p.factor = 1.0;
  if (p.scaling_type == "yarn") {
    p.beta_fast = beta_fast;
    p.beta_slow = beta_slow;
    p.ext_factor = ext;
    // The converter writes HF's attention_factor here (convert_hf_to_gguf.py). llama.cpp itself has read it
    // in two ways (times 0.1 ln F + 1 before llama.cpp PR 17945, ignored for YaRN after it): posenc keeps HF's.
    p.attention_factor = yarn_attn;
    p.attn_factor = attn;
    if (log_mul && *log_mul != 0.0) {
      // DeepSeek-V2/V3: the converter writes 0.1 * mscale_all_dim; llama.cpp (llama-context.cpp) takes
      // mscale = mscale_all_dim for DeepSeek-V2 configs and 1 otherwise, which for every DeepSeek config gives
      // a magnitude of 1 and the softmax scale mscale(F, mscale_all_dim)^2: deepseek_yarn with both equal.
      if (*arch != "deepseek2")
        return fail(fn, what, ": ", n.mscale_all_dim, "=", *log_mul,
                    " is only understood for deepseek2 (its scale differs between converters of other architectures)");
      p.yarn_variant = rope_yarn_variant::deepseek;
      // In float32, as llama.cpp's hparams hold it: 0.1f / 0.1f is exactly 1.
      p.mscale_all_dim = static_cast<double>(static_cast<float>(*log_mul) / 0.1f);
      p.mscale = p.mscale_all_dim;
    }
  } else if (p.scaling_type != "longrope") {
    p.attn_factor = attn;
    p.ext_factor = ext;
  }

  // MRoPE sections: llama.cpp pads [t, h, w] to 4 entries with zeros.
  POSENC_TRY(k.integers(a + "rope.dimension_sections", info.mrope_sections));
  if (!info.mrope_sections.empty()) {
    std::vector<index_t> s = info.mrope_sections;
    while (s.size() > 3 && s.back() == 0) s.pop_back();
    p.mrope_section = std::move(s);
  }

  std::string canonical;
  const status st = rope_params_to_config(p, n, info.config, &canonical);
  // A value the mapping rejects is the file's fault here: report it as such, with the mapping's message.
  if (!st.ok()) return status(st.code() == errc::invalid_argument ? errc::invalid_file : st.code(), st.message());
  info.scaling_type = canonical;
  out = std::move(info);
  return {};
}

}  // namespace detail::gguf
POSENC_END_NAMESPACE
