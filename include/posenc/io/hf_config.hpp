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
#include "posenc/detail/hf_layers.hpp"
#include "posenc/detail/hf_vision.hpp"
#include "posenc/detail/hf_reader.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/error.hpp"
#include "posenc/io/hf_rope_info.hpp"  // IWYU pragma: export
#include "posenc/model_plan.hpp"      // IWYU pragma: export
#include "posenc/vision_plan.hpp"     // IWYU pragma: export
#include "posenc/rope_params.hpp"
#include "posenc/rope_plan.hpp"
#include "posenc/status.hpp"

POSENC_BEGIN_NAMESPACE

namespace detail::hf {

using json = nlohmann::json;

/// detail/hf_reader.hpp's accessor over nlohmann::json (a node is a pointer into the parsed tree).
struct json_access {
  using node = const json*;
  static node find(node obj, const char* key) {
    const auto it = obj->find(key);
    return it == obj->end() ? nullptr : &*it;
  }
  static bool is_null(node v) { return v->is_null(); }
  static bool is_object(node v) { return v->is_object(); }
  static bool is_array(node v) { return v->is_array(); }
  static bool is_string(node v) { return v->is_string(); }
  static bool is_boolean(node v) { return v->is_boolean(); }
  static bool is_number(node v) { return v->is_number(); }
  static std::optional<index_t> as_integer(node v) {
    if (v->is_number_unsigned()) {
      const auto u = v->get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(std::numeric_limits<index_t>::max())) return std::nullopt;
      return static_cast<index_t>(u);
    }
    if (v->is_number_integer()) return static_cast<index_t>(v->get<std::int64_t>());
    if (v->is_number_float()) {
      const double d = v->get<double>();
      if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 0x1p62) return static_cast<index_t>(d);
    }
    return std::nullopt;
  }
  static double as_double(node v) { return v->get<double>(); }
  static bool as_bool(node v) { return v->get<bool>(); }
  static std::string as_string(node v) { return v->get<std::string>(); }
  static std::size_t size(node v) { return v->size(); }
  static node at(node v, std::size_t i) { return &(*v)[i]; }
  template <class F>
  static void for_each_member(node v, F&& f) {
    for (const auto& kv : v->items()) f(kv.key(), &kv.value());
  }
  static const char* type_name(node v) { return v->type_name(); }
  /// A value for an error message: its JSON text, shortened. Invalid UTF-8 is replaced rather than thrown on.
  static std::string shown(node v) {
    std::string s = v->dump(-1, ' ', false, json::error_handler_t::replace);
    if (s.size() > 64) s = s.substr(0, 61) + "...";
    return s;
  }
  static bool equal(node a, node b) { return *a == *b; }
};

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

/// Reads and parses the JSON file at `path`: io_error when it cannot be opened, invalid_file when it is not
/// valid JSON (with the parser's byte position when exceptions are enabled).
inline status read_json_file(const char* function, const std::string& path, nlohmann::json& config) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail_with(errc::io_error, function, "cannot open path=\"", path, "\"");
#if POSENC_HAS_EXCEPTIONS
  try {
    config = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    return fail_with(errc::invalid_file, function, "path=\"", path, "\" is not valid JSON: ", e.what());
  }
#else
  config = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded()) return fail_with(errc::invalid_file, function, "path=\"", path, "\" is not valid JSON");
#endif
  return {};
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
  return detail::hf::guarded(detail::hf::fn, [&] { return detail::hf::parse<detail::hf::json_access>(&config, options, out); });
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
    nlohmann::json config;
    POSENC_TRY(detail::hf::read_json_file(fn, path, config));
    return detail::hf::parse<detail::hf::json_access>(&config, options, out);
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

/// Every layer's positional treatment of a Hugging Face model from its parsed `config.json`, into `out`:
/// which layers rotate q and k and with which RoPE configuration (each as try_rope_config_from_hf reads it,
/// with the family's per-layer base where it has one), which have none (NoPE), each layer's attention kind and
/// window, and Llama 4's temperature factor on q in NoPE layers. The family rules and their sources are listed
/// in detail/hf_layers.hpp and docs/models.md; `layer_types` in the config wins over a family's default.
/// Returns ok, or (out unchanged) invalid_argument naming the key: num_hidden_layers missing, layer_types or
/// no_rope_layers of another length or with unknown entries, a sliding layer without sliding_window, and
/// every error of try_rope_config_from_hf; out_of_memory when an allocation fails.
///
/// **Example**
/// ```
/// posenc::model_positional_plan model;
/// if (posenc::status s = posenc::try_model_plan_from_hf(nlohmann::json::parse(text), model); !s) return s;
/// const posenc::layer_positional& l5 = model.layer(5);  // l5.rope, l5.config, l5.attention, l5.window
/// ```
inline status try_model_plan_from_hf(const nlohmann::json& config, model_positional_plan& out,
                                     const hf_options& options = {}) noexcept {
  return detail::hf::guarded(detail::hf::model_fn,
                             [&] { return detail::hf::parse_model<detail::hf::json_access>(&config, options, out); });
}

/// The throwing form of try_model_plan_from_hf: argument_error with the same message.
inline model_positional_plan model_plan_from_hf(const nlohmann::json& config, const hf_options& options = {}) {
  model_positional_plan m;
  detail::throw_if_error(try_model_plan_from_hf(config, m, options));
  return m;
}

/// Reads `path` (a model's config.json) as try_model_plan_from_hf, into `out`; io_error and invalid_file as
/// try_rope_config_from_hf_file.
inline status try_model_plan_from_hf_file(const std::string& path, model_positional_plan& out,
                                          const hf_options& options = {}) noexcept {
  constexpr const char* fn = "model_plan_from_hf_file";
  return detail::hf::guarded(fn, [&]() -> status {
    nlohmann::json config;
    POSENC_TRY(detail::hf::read_json_file(fn, path, config));
    return detail::hf::parse_model<detail::hf::json_access>(&config, options, out);
  });
}

/// The throwing form of try_model_plan_from_hf_file.
inline model_positional_plan model_plan_from_hf_file(const std::string& path, const hf_options& options = {}) {
  model_positional_plan m;
  detail::throw_if_error(try_model_plan_from_hf_file(path, m, options));
  return m;
}

/// The vision tower of a Hugging Face vision-language model from its parsed `config.json` (`vision_config`,
/// or a bare Pixtral config), into `out`: its 2D RoPE (head dim, base, how the row and column share the
/// frequencies, pair style: half_split unless hf_options::style says otherwise) and each block's attention
/// (Qwen2.5-VL windows). Families and their keys: Qwen2-VL, Qwen2.5-VL, Pixtral / Mistral Small 3.x
/// (detail/hf_vision.hpp, docs/models.md). Returns ok, or (out unchanged) invalid_argument naming the key: no
/// vision tower posenc knows, a key of the wrong type or <= 0, a head dim not a multiple of 4, a
/// fullatt_block_indexes entry past the depth, a window smaller than one merged unit; out_of_memory.
///
/// **Example**
/// ```
/// posenc::vision_positional_plan v;
/// if (posenc::status s = posenc::try_vision_plan_from_hf(nlohmann::json::parse(text), v); !s) return s;
/// const posenc::mrope_plan rope = v.make_rope();   // apply_mrope with vision_positions(...)
/// ```
inline status try_vision_plan_from_hf(const nlohmann::json& config, vision_positional_plan& out,
                                      const hf_options& options = {}) noexcept {
  return detail::hf::guarded(detail::hf::vision_fn,
                             [&] { return detail::hf::parse_vision<detail::hf::json_access>(&config, options, out); });
}

/// The throwing form of try_vision_plan_from_hf: argument_error with the same message.
inline vision_positional_plan vision_plan_from_hf(const nlohmann::json& config, const hf_options& options = {}) {
  vision_positional_plan v;
  detail::throw_if_error(try_vision_plan_from_hf(config, v, options));
  return v;
}

/// Reads `path` (a model's config.json) as try_vision_plan_from_hf, into `out`; io_error and invalid_file as
/// try_rope_config_from_hf_file.
inline status try_vision_plan_from_hf_file(const std::string& path, vision_positional_plan& out,
                                           const hf_options& options = {}) noexcept {
  constexpr const char* fn = "vision_plan_from_hf_file";
  return detail::hf::guarded(fn, [&]() -> status {
    nlohmann::json config;
    POSENC_TRY(detail::hf::read_json_file(fn, path, config));
    return detail::hf::parse_vision<detail::hf::json_access>(&config, options, out);
  });
}

/// The throwing form of try_vision_plan_from_hf_file.
inline vision_positional_plan vision_plan_from_hf_file(const std::string& path, const hf_options& options = {}) {
  vision_positional_plan v;
  detail::throw_if_error(try_vision_plan_from_hf_file(path, v, options));
  return v;
}

POSENC_END_NAMESPACE
