// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// RoPE configurations from Hugging Face `config.json` files. Optional: this header needs nlohmann/json
// (Debian `nlohmann-json3-dev`, vcpkg/Conan `nlohmann-json`; CMake `find_package(nlohmann_json 3 CONFIG)` and
// link `nlohmann_json::nlohmann_json`), so the umbrella posenc.hpp does not include it.
//
// The keys and their defaults follow Hugging Face transformers: `modeling_rope_utils.py` (v4 `rope_scaling`,
// v5 `rope_parameters` with `RotaryEmbeddingConfigMixin.standardize_rope_params`) and the model classes that
// read RoPE keys of their own (GPT-NeoX `rotary_pct` / `rotary_emb_base`, Phi-3's top-level
// `original_max_position_embeddings`, DeepSeek-V2/V3's `qk_rope_head_dim` and interleaved pairs). Where v4 and
// v5 disagree, v5 wins and the function documentation says so. This header only reads the JSON: where the keys
// are and their JSON types. What they mean is decided without JSON: which key wins and the model-specific
// defaults in detail/hf_mapping.hpp, the rest (rope types, scaling defaults, checks) by the rope_params mapping
// shared with the GGUF reader (rope_params.hpp).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "posenc/config.hpp"
#include "posenc/enum_names.hpp"
#include "posenc/detail/hf_mapping.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/error.hpp"
#include "posenc/rope_params.hpp"
#include "posenc/rope_plan.hpp"
#include "posenc/status.hpp"

POSENC_BEGIN_NAMESPACE

/// Which YaRN a `"yarn"` rope type becomes.
enum class hf_yarn_variant {
  by_model,  ///< rope_scaling::deepseek_yarn for DeepSeek-V2/V3 models (see rope_config_from_hf), else yarn
  yarn,      ///< always rope_scaling_type::yarn (Hugging Face `_compute_yarn_parameters`)
  deepseek,  ///< always rope_scaling_type::deepseek_yarn (magnitude ratio plus the softmax logit scale)
};
template <>
struct enum_names<hf_yarn_variant> {
  static constexpr enum_name<hf_yarn_variant> list[] = {
      {hf_yarn_variant::by_model, "by_model"}, {hf_yarn_variant::yarn, "yarn"}, {hf_yarn_variant::deepseek, "deepseek"}};
};

/// Choices a `config.json` does not make, or that an engine makes differently from Hugging Face.
struct hf_options {
  /// Pair layout. Unset: interleaved for DeepSeek-V2/V3 (their checkpoints pair (x[2i], x[2i+1]); HF
  /// DeepseekV3 permutes q/k before rotate_half unless `rope_interleave` is false), half_split (HF rotate_half)
  /// for every other model. Set it to `interleaved` for weights permuted to Meta/GGUF layout.
  std::optional<rope_style> style;
  /// Which YaRN a "yarn" rope type becomes; by_model: deepseek_yarn for DeepSeek-V2/V3 only.
  hf_yarn_variant yarn = hf_yarn_variant::by_model;
  /// Dynamic NTK: Hugging Face re-evaluates per current length; vLLM fixes the base at the maximum.
  dynamic_ntk_policy ntk_policy = dynamic_ntk_policy::per_length;
  /// LongRoPE: when the long factors apply (Hugging Face: sequence length > original_max_position_embeddings).
  longrope_policy long_policy = longrope_policy::per_length;
  /// transformers v5 per-layer `rope_parameters` (Gemma 3: {"full_attention": {...}, "sliding_attention":
  /// {...}}): the layer type to read. Required when the config has per-layer parameters, ignored otherwise.
  std::string layer_type;
  /// Multimodal configs (Qwen2.5-VL new format, Gemma 3, Llama 4) nest the language model under
  /// `text_config`; when true and that key holds an object, every key below is read from it.
  bool use_text_config = true;
};

/// What rope_config_from_hf read: the RoPE configuration and the model facts an engine needs next to it.
/// Keys are named as in config.json; "dict" is the scaling object: `rope_parameters` (v5) or `rope_scaling` (v4).
struct hf_rope_info {
  /// head_dim: `qk_rope_head_dim` (DeepSeek-V2/V3 MLA: the rotary part is its own head) if present, else
  ///   `head_dim` if present and not null, else `hidden_size / num_attention_heads` (integer division, as HF).
  /// rotary_dim: int(head_dim * partial_rotary_factor), always set explicitly (never 0); rotary_offset: 0.
  /// base: dict `rope_theta`, else `rope_theta`, else `rotary_emb_base` (GPT-NeoX), else 10000.
  /// style: hf_options::style, else interleaved for DeepSeek-V2/V3 (unless `rope_interleave` is false), else
  ///   half_split. scaling: from the dict, see rope_config_from_hf. freq_factors: empty.
  rope_config config;
  /// `model_type` ("" when absent; the root's when `text_config` lacks one).
  std::string model_type;
  /// The dict's `rope_type` (or legacy `type`), normalised: "default" when absent or null, "longrope" for
  /// legacy "su", "default" for Qwen2-VL's legacy "mrope".
  std::string rope_type = "default";
  /// dict `partial_rotary_factor`, else `partial_rotary_factor`, else `rotary_pct` (GPT-NeoX), else 1.
  double partial_rotary_factor = 1.0;
  /// `max_position_embeddings`; 0 when absent.
  index_t max_position_embeddings = 0;
  /// `num_attention_heads`; 0 when absent.
  index_t num_attention_heads = 0;
  /// `num_key_value_heads`, else num_attention_heads (HF default: no GQA).
  index_t num_key_value_heads = 0;
  /// dict `mrope_section` (Qwen2-VL / Qwen2.5-VL / Qwen3-VL: pairs per temporal, height, width axis, summing
  /// to rotary_dim/2); empty when absent. Pass it to mrope_plan with the layout below.
  std::vector<index_t> mrope_section;
  /// dict `mrope_interleaved` (Qwen3-VL): true means mrope_layout::interleaved, false mrope_layout::chunked.
  bool mrope_interleaved = false;
};

namespace detail::hf {

using json = nlohmann::json;

/// A value for an error message: its JSON text, shortened. Invalid UTF-8 is replaced rather than thrown on.
inline std::string shown(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 64) s = s.substr(0, 61) + "...";
  return s;
}

/// A JSON object and the dotted name its keys are reported under ("" for the root, "rope_scaling.", ...). The
/// readers never throw: a key of the wrong JSON type comes back as a config_key holding the error, which the
/// mapping (detail/hf_mapping.hpp) reports if it uses the key.
struct section {
  const json* obj = nullptr;  // null: an absent section, every key absent
  std::string prefix;

  std::string name(const char* key) const { return prefix + key; }

  /// The key's value, or null when the key is absent or JSON null (HF treats both as "not set").
  const json* get(const char* key) const {
    if (obj == nullptr) return nullptr;
    const auto it = obj->find(key);
    return it == obj->end() || it->is_null() ? nullptr : &*it;
  }

  template <class T, class... Parts>
  config_key<T> bad(const char* key, const Parts&... parts) const {
    config_key<T> k(name(key));
    k.error = fail(fn, name(key), parts...);
    return k;
  }
  template <class T>
  config_key<T> found(const char* key, T value) const {
    config_key<T> k(name(key));
    k.value = std::move(value);
    return k;
  }

  config_key<double> number(const char* key) const {
    const json* v = get(key);
    if (v == nullptr) return config_key<double>(name(key));
    if (!v->is_number()) return bad<double>(key, "=", shown(*v), " must be a number, got ", v->type_name());
    return found(key, v->get<double>());
  }

  /// Integers; a float with an integral value (4096.0) is accepted, as Python's int() of a config would.
  static std::optional<index_t> as_integer(const json& v) {
    if (v.is_number_unsigned()) {
      const auto u = v.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(std::numeric_limits<index_t>::max())) return std::nullopt;
      return static_cast<index_t>(u);
    }
    if (v.is_number_integer()) return static_cast<index_t>(v.get<std::int64_t>());
    if (v.is_number_float()) {
      const double d = v.get<double>();
      if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 0x1p62) return static_cast<index_t>(d);
    }
    return std::nullopt;
  }
  /// A count or length: an integer > 0.
  config_key<index_t> positive(const char* key) const {
    const json* v = get(key);
    if (v == nullptr) return config_key<index_t>(name(key));
    const auto i = as_integer(*v);
    if (!i) return bad<index_t>(key, "=", shown(*v), " must be an integer");
    if (*i <= 0) return bad<index_t>(key, "=", *i, " must be > 0");
    return found(key, *i);
  }

  config_key<bool> boolean(const char* key) const {
    const json* v = get(key);
    if (v == nullptr) return config_key<bool>(name(key));
    if (!v->is_boolean()) return bad<bool>(key, "=", shown(*v), " must be true or false");
    return found(key, v->get<bool>());
  }

  config_key<std::string> string(const char* key) const {
    const json* v = get(key);
    if (v == nullptr) return config_key<std::string>(name(key));
    if (!v->is_string()) return bad<std::string>(key, "=", shown(*v), " must be a string, got ", v->type_name());
    return found(key, v->get<std::string>());
  }

  config_key<std::vector<double>> numbers(const char* key) const {
    using list = std::vector<double>;
    const json* v = get(key);
    if (v == nullptr) return config_key<list>(name(key));
    if (!v->is_array()) return bad<list>(key, "=", shown(*v), " must be an array of numbers");
    list out;
    out.reserve(v->size());
    for (std::size_t i = 0; i < v->size(); ++i) {
      const json& e = (*v)[i];
      if (!e.is_number()) return bad<list>(key, "[", i, "]=", shown(e), " must be a number");
      out.push_back(e.get<double>());
    }
    return found(key, std::move(out));
  }

  config_key<std::vector<index_t>> integers(const char* key) const {
    using list = std::vector<index_t>;
    const json* v = get(key);
    if (v == nullptr) return config_key<list>(name(key));
    if (!v->is_array()) return bad<list>(key, "=", shown(*v), " must be an array of integers");
    list out;
    for (std::size_t i = 0; i < v->size(); ++i) {
      const auto e = as_integer((*v)[i]);
      if (!e || *e < 0) return bad<list>(key, "[", i, "]=", shown((*v)[i]), " must be an integer >= 0");
      out.push_back(*e);
    }
    return found(key, std::move(out));
  }

  /// The string entries of an array (`architectures`); other entries, or another type, are left out.
  void strings(const char* key, std::vector<std::string>& out) const {
    const json* v = get(key);
    if (v == nullptr || !v->is_array()) return;
    for (const json& e : *v)
      if (e.is_string()) out.push_back(e.get<std::string>());
  }

  /// A JSON object value (or null: absent) into `out`; another type is an error naming the key.
  status object_or_null(const char* key, const json*& out) const {
    const json* v = get(key);
    if (v != nullptr && !v->is_object())
      return fail(fn, name(key), "=", shown(*v), " must be an object or null, got ", v->type_name());
    out = v;
    return {};
  }
};

/// v5 per-layer rope_parameters: a non-empty object whose values are all objects or null (a flat dict always
/// holds at least one number or string: rope_type, rope_theta, factor...).
inline bool is_per_layer(const json& dict) {
  if (dict.empty() || dict.contains("rope_type") || dict.contains("type")) return false;
  for (const auto& kv : dict.items())
    if (!(kv.value().is_object() || kv.value().is_null())) return false;
  return true;
}

inline std::string layer_list(const json& dict) {
  std::string s;
  for (const auto& kv : dict.items()) s += (s.empty() ? "" : ", ") + kv.key();
  return s;
}

/// Finds the RoPE keys of `root` (where the model and the scaling dict are, each key's JSON type); what they
/// mean is map_config's (detail/hf_mapping.hpp). `result` is assigned only on success.
inline status parse(const json& root, const hf_options& opt, hf_rope_info& result) {
  if (!root.is_object()) return fail(fn, "the config must be a JSON object, got ", root.type_name());
  const section root_s{&root, ""};
  const json* text = nullptr;
  if (opt.use_text_config) POSENC_TRY(root_s.object_or_null("text_config", text));
  const section top{text != nullptr ? text : &root, text != nullptr ? "text_config." : ""};

  config_keys k;
  config_key<std::string> model_type = top.string("model_type");
  if (!model_type.given() && text != nullptr) model_type = root_s.string("model_type");
  POSENC_TRY(model_type.error);
  k.model_type = model_type.value.value_or("");
  top.strings("architectures", k.architectures);
  if (text != nullptr) root_s.strings("architectures", k.architectures);

  // The scaling dict: v5 rope_parameters or v4 rope_scaling (the same object under two names; transformers
  // v5 takes either). Both given and different is ambiguous.
  const json* rs = nullptr;
  const json* rp = nullptr;
  POSENC_TRY(top.object_or_null("rope_scaling", rs));
  POSENC_TRY(top.object_or_null("rope_parameters", rp));
  if (rs != nullptr && rp != nullptr && *rs != *rp)
    return fail(fn, top.name("rope_scaling"), " and ", top.name("rope_parameters"), " are both given and differ; keep one");
  section dict{rp != nullptr ? rp : rs, top.name(rp != nullptr ? "rope_parameters" : "rope_scaling") + "."};
  if (dict.obj != nullptr && is_per_layer(*dict.obj)) {
    const std::string prefix = dict.prefix;
    if (opt.layer_type.empty())
      return fail(fn, prefix.substr(0, prefix.size() - 1), " is per layer type (", layer_list(*dict.obj),
                  "): set hf_options::layer_type");
    const auto it = dict.obj->find(opt.layer_type);
    if (it == dict.obj->end())
      return fail(fn, "hf_options::layer_type=\"", opt.layer_type, "\" is not in ", prefix.substr(0, prefix.size() - 1),
                  " (", layer_list(*dict.obj), ")");
    dict = section{it->is_null() ? nullptr : &*it, prefix + opt.layer_type + "."};
  }

  model_keys& m = k.top;
  m.num_attention_heads = top.positive("num_attention_heads");
  m.num_key_value_heads = top.positive("num_key_value_heads");
  m.max_position_embeddings = top.positive("max_position_embeddings");
  m.qk_rope_head_dim = top.positive("qk_rope_head_dim");
  m.head_dim = top.positive("head_dim");
  m.hidden_size = top.positive("hidden_size");
  m.partial_rotary_factor = top.number("partial_rotary_factor");
  m.rotary_pct = top.number("rotary_pct");
  m.rope_theta = top.number("rope_theta");
  m.rotary_emb_base = top.number("rotary_emb_base");
  m.rope_interleave = top.boolean("rope_interleave");
  m.original_max_position_embeddings = top.positive("original_max_position_embeddings");

  scaling_keys& d = k.dict;
  d.partial_rotary_factor = dict.number("partial_rotary_factor");
  d.rope_theta = dict.number("rope_theta");
  d.rope_type = dict.string("rope_type");
  d.type = dict.string("type");
  d.original_max_position_embeddings = dict.positive("original_max_position_embeddings");
  d.factor = dict.number("factor");
  d.beta_fast = dict.number("beta_fast");
  d.beta_slow = dict.number("beta_slow");
  d.mscale = dict.number("mscale");
  d.mscale_all_dim = dict.number("mscale_all_dim");
  d.attention_factor = dict.number("attention_factor");
  d.low_freq_factor = dict.number("low_freq_factor");
  d.high_freq_factor = dict.number("high_freq_factor");
  d.truncate = dict.boolean("truncate");
  d.short_factor = dict.numbers("short_factor");
  d.long_factor = dict.numbers("long_factor");
  d.mrope_section = dict.integers("mrope_section");
  d.mrope_interleaved = dict.boolean("mrope_interleaved");

  choices c;
  c.style = opt.style;
  if (opt.yarn == hf_yarn_variant::yarn) c.yarn = rope_yarn_variant::yarn;
  if (opt.yarn == hf_yarn_variant::deepseek) c.yarn = rope_yarn_variant::deepseek;
  c.ntk_policy = opt.ntk_policy;
  c.long_policy = opt.long_policy;

  mapped out;
  POSENC_TRY(map_config(k, c, out));
  hf_rope_info info;
  info.config = std::move(out.config);
  info.model_type = std::move(k.model_type);
  info.rope_type = std::move(out.rope_type);
  info.partial_rotary_factor = out.partial_rotary_factor;
  info.max_position_embeddings = out.max_position_embeddings;
  info.num_attention_heads = out.num_attention_heads;
  info.num_key_value_heads = out.num_key_value_heads;
  info.mrope_section = std::move(out.mrope_section);
  info.mrope_interleaved = out.mrope_interleaved;
  result = std::move(info);
  return {};
}

/// Runs `f` (which returns a status) in a try_ form: allocation failures and any nlohmann::json exception a
/// missed case could raise become statuses instead of escaping a noexcept function.
template <class F>
status guarded(const char* function, F&& f) noexcept {
#if POSENC_HAS_EXCEPTIONS
  // Both kinds in one try: a JSON error must not pass through guard_alloc, whose noexcept would terminate.
  try {
    return std::forward<F>(f)();
  } catch (const nlohmann::json::exception& e) {
    return fail(function, "JSON error: ", e.what());
  } catch (const std::bad_alloc&) {
    return out_of_memory(function);
  }
#else
  return guard_alloc(function, std::forward<F>(f));
#endif
}

}  // namespace detail::hf

/// Reads the RoPE configuration of a Hugging Face model from its parsed `config.json`, into `out`.
///
/// Sources: transformers `modeling_rope_utils.py` (`ROPE_INIT_FUNCTIONS`, v5 `standardize_rope_params`) and
/// the model classes; each field's key is listed at hf_rope_info. The keys are found here and mapped by the
/// shared rope_params mapping (try_rope_config_from_params, which documents every rule). The scaling dict is
/// `rope_parameters` (v5, may carry rope_theta and partial_rotary_factor too; per layer type for Gemma 3, see
/// hf_options::layer_type) or `rope_scaling` (v4); its type is `rope_type`, else the legacy `type`. M below is
/// the pretraining context: top-level `original_max_position_embeddings` (Phi-3), else the dict's, else
/// `max_position_embeddings` (v5 semantics; v4 required the dict key for llama3 and ignored a top-level one).
/// - absent / null / "default" (and Qwen2-VL's legacy "mrope"): rope_scaling_type::none.
/// - "linear": linear(factor).
/// - "dynamic": dynamic_ntk(factor, max_position_embeddings, hf_options::ntk_policy): HF uses
///   max_position_embeddings as M here.
/// - "yarn": factor (default max_position_embeddings / M, v5), M, beta_fast (32 when absent, null or 0, as HF's
///   `or`), beta_slow (1 likewise), mscale, mscale_all_dim, attention_factor, truncate (default true). DeepSeek
///   models (model_type deepseek_v2 / deepseek_v3, or an `architectures` entry starting DeepseekV2/DeepseekV3)
///   get rope_scaling::deepseek_yarn with DeepSeek's defaults (mscale 1, mscale_all_dim 0), whose plan carries
///   the softmax logit scale mscale(F, mscale_all_dim)^2 that HF DeepseekV3Attention folds into its `scaling`;
///   hf_options::yarn overrides the choice.
/// - "longrope" (legacy "su"): short_factor and long_factor (rotary_dim/2 entries each), M, factor (default
///   max_position_embeddings / M: Phi-3's ratio 131072/4096 = 32; v4 always used that ratio when the config
///   had a top-level original_max_position_embeddings, v5 prefers the dict's factor), attention_factor,
///   hf_options::long_policy.
/// - "llama3": factor, low_freq_factor, high_freq_factor, M.
/// Also `mrope_section` / `mrope_interleaved` from the dict (Qwen2-VL family), reported in hf_rope_info.
///
/// Returns ok, or (out unchanged) an invalid_argument status naming the key and its value: a rope type not in
/// the list above (`rope_scaling.rope_type="foo" is not supported (known: ...)`); a required key missing
/// (`longrope` without long_factor, no head_dim and no hidden_size, ...); a key of the wrong JSON type; counts
/// <= 0; partial_rotary_factor outside (0, 1] or giving an odd rotary dim; longrope factor lists or
/// mrope_section of the wrong length; `rope_scaling` and `rope_parameters` both given and different; per-layer
/// parameters without hf_options::layer_type; and anything make_rope_plan rejects in the result (so the config
/// in `out` always builds a plan). out_of_memory when an allocation fails.
///
/// **Example**
/// ```
/// posenc::hf_rope_info info;
/// if (posenc::status s = posenc::try_rope_config_from_hf(nlohmann::json::parse(text), info); !s) return s;
/// posenc::rope_plan plan = posenc::make_rope_plan(info.config, seq_len);
/// ```
inline status try_rope_config_from_hf(const nlohmann::json& config, hf_rope_info& out,
                                      const hf_options& options = {}) noexcept {
  return detail::hf::guarded(detail::hf::fn, [&] { return detail::hf::parse(config, options, out); });
}

/// The throwing form of try_rope_config_from_hf: argument_error with the same message.
///
/// **Example**
/// ```
/// const auto info = posenc::rope_config_from_hf(nlohmann::json::parse(text));
/// posenc::rope_plan plan = posenc::make_rope_plan(info.config, seq_len);
/// ```
inline hf_rope_info rope_config_from_hf(const nlohmann::json& config, const hf_options& options = {}) {
  hf_rope_info info;
  detail::throw_if_error(try_rope_config_from_hf(config, info, options));
  return info;
}

/// Reads `path` (a model's config.json), parses it and maps it as try_rope_config_from_hf, into `out`.
/// Returns io_error when the file cannot be opened, invalid_file when it is not valid JSON (with the parser's
/// byte position when exceptions are enabled), and every status try_rope_config_from_hf returns.
inline status try_rope_config_from_hf_file(const std::string& path, hf_rope_info& out,
                                           const hf_options& options = {}) noexcept {
  constexpr const char* fn = "rope_config_from_hf_file";
  return detail::hf::guarded(fn, [&]() -> status {
    std::ifstream in(path, std::ios::binary);
    if (!in) return detail::fail_with(errc::io_error, fn, "cannot open path=\"", path, "\"");
    nlohmann::json config;
#if POSENC_HAS_EXCEPTIONS
    try {
      config = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      return detail::fail_with(errc::invalid_file, fn, "path=\"", path, "\" is not valid JSON: ", e.what());
    }
#else
    config = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (config.is_discarded()) return detail::fail_with(errc::invalid_file, fn, "path=\"", path, "\" is not valid JSON");
#endif
    return detail::hf::parse(config, options, out);
  });
}

/// The throwing form of try_rope_config_from_hf_file: argument_error with the same message.
///
/// **Example**
/// ```
/// const auto info = posenc::rope_config_from_hf_file("Llama-3.1-8B/config.json");
/// const posenc::rope_plan plan = posenc::make_rope_plan(info.config, 8192);
/// ```
inline hf_rope_info rope_config_from_hf_file(const std::string& path, const hf_options& options = {}) {
  hf_rope_info info;
  detail::throw_if_error(try_rope_config_from_hf_file(path, info, options));
  return info;
}

POSENC_END_NAMESPACE
