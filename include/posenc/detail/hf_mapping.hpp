// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// What the RoPE keys of a Hugging Face config.json mean, with no JSON in sight: hf_config.hpp finds each key
// and checks its JSON type; this header decides which key wins when several can give a value and what an
// absent one means (transformers `modeling_rope_utils.py`, v5 `standardize_rope_params`, and the model classes
// with keys of their own: GPT-NeoX `rotary_pct` / `rotary_emb_base`, Phi-3's top-level
// `original_max_position_embeddings`, DeepSeek-V2/V3's `qk_rope_head_dim`, interleaved pairs and YaRN). The
// result is a rope_params, which the mapping shared with the GGUF reader (rope_params.hpp) turns into a
// rope_config: rope type names, the defaults of beta_fast / beta_slow / mscale, the attention factor, the checks.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/io/hf_rope_info.hpp"
#include "posenc/rope_params.hpp"
#include "posenc/rope_plan.hpp"
#include "posenc/status.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail::hf {

inline constexpr const char* fn = "rope_config_from_hf";

/// One key as the JSON layer found it: absent (not in the file, or null, which Hugging Face treats as unset),
/// a value, or an error (a value of the wrong JSON type or range; the message names the key). The mapping
/// reports an error only for a key it uses, as Hugging Face reads `rotary_pct` only when no
/// `partial_rotary_factor` is given.
template <class T>
struct config_key {
  config_key() = default;
  explicit config_key(std::string key_name) : name(std::move(key_name)) {}

  std::string name;  ///< the key as messages name it, e.g. "rope_scaling.factor"
  std::optional<T> value;
  status error;

  bool given() const noexcept { return value.has_value() || !error.ok(); }
};

/// Keys of the model: the root's, or `text_config`'s for multimodal configs (Qwen2.5-VL, Gemma 3, Llama 4).
struct model_keys {
  config_key<index_t> num_attention_heads{"num_attention_heads"};
  config_key<index_t> num_key_value_heads{"num_key_value_heads"};
  config_key<index_t> max_position_embeddings{"max_position_embeddings"};
  config_key<index_t> qk_rope_head_dim{"qk_rope_head_dim"};
  config_key<index_t> head_dim{"head_dim"};
  config_key<index_t> hidden_size{"hidden_size"};
  config_key<double> partial_rotary_factor{"partial_rotary_factor"};
  config_key<double> rotary_pct{"rotary_pct"};
  config_key<double> rope_theta{"rope_theta"};
  config_key<double> rotary_emb_base{"rotary_emb_base"};
  config_key<bool> rope_interleave{"rope_interleave"};
  config_key<index_t> original_max_position_embeddings{"original_max_position_embeddings"};
};

/// Keys of the scaling dict: `rope_parameters` (v5) or `rope_scaling` (v4); one layer type's when per layer.
struct scaling_keys {
  config_key<double> partial_rotary_factor{"partial_rotary_factor"};
  config_key<double> rope_theta{"rope_theta"};
  config_key<std::string> rope_type{"rope_type"};
  config_key<std::string> type{"type"};  ///< the legacy name of rope_type
  config_key<index_t> original_max_position_embeddings{"original_max_position_embeddings"};
  config_key<double> factor{"factor"};
  config_key<double> beta_fast{"beta_fast"};
  config_key<double> beta_slow{"beta_slow"};
  config_key<double> mscale{"mscale"};
  config_key<double> mscale_all_dim{"mscale_all_dim"};
  config_key<double> attention_factor{"attention_factor"};
  config_key<bool> truncate{"truncate"};
  config_key<double> low_freq_factor{"low_freq_factor"};
  config_key<double> high_freq_factor{"high_freq_factor"};
  config_key<std::vector<double>> short_factor{"short_factor"};
  config_key<std::vector<double>> long_factor{"long_factor"};
  config_key<std::vector<index_t>> mrope_section{"mrope_section"};
  config_key<bool> mrope_interleaved{"mrope_interleaved"};
};

/// The RoPE keys of one config.json, as plain values.
struct config_keys {
  std::string model_type;                  ///< "" when absent
  std::vector<std::string> architectures;  ///< the string entries of `architectures` (text_config's, the root's)
  model_keys top;
  scaling_keys dict;
};

/// What the caller decides (hf_options as plain values).
struct choices {
  std::optional<rope_style> style;        ///< unset: interleaved for DeepSeek (unless rope_interleave is false)
  std::optional<rope_yarn_variant> yarn;  ///< unset: deepseek for DeepSeek-V2/V3 models, else yarn
  dynamic_ntk_policy ntk_policy = dynamic_ntk_policy::per_length;
  longrope_policy long_policy = longrope_policy::per_length;
};

/// DeepSeek-V2/V3 (and models built on them, e.g. Kimi K2): by model_type or by architecture class name.
inline bool is_deepseek(const std::string& model_type, const std::vector<std::string>& architectures) {
  if (model_type == "deepseek_v2" || model_type == "deepseek_v3") return true;
  for (const std::string& a : architectures)
    if (a.rfind("DeepseekV2", 0) == 0 || a.rfind("DeepseekV3", 0) == 0) return true;
  return false;
}

/// Families whose reference implementation pairs (x[2i], x[2i+1]): GLM, GLM-4, Llama 4.
inline bool interleaved_family(const std::string& model_type) {
  return model_type == "glm" || model_type == "glm4" || model_type == "llama4" || model_type == "llama4_text";
}

/// The keys -> rope_params (and the names its fields are reported under) -> rope_config by the shared mapping,
/// and what they mean as hf_rope_info (which documents each field). The first error among the keys used, in the
/// order used, is the result; `out` is assigned only on success.
inline status map_config(const config_keys& k, const choices& c, hf_rope_info& out) {
  const model_keys& top = k.top;
  const scaling_keys& dict = k.dict;
  status err;
  const auto use = [&err](const auto& key) {
    if (err.ok() && !key.error.ok()) err = key.error;
    return key.value;
  };
  const auto missing = [](const std::string& name, const char* why) {
    return fail(fn, name, " is missing (required for ", why, ")");
  };

  hf_rope_info m;
  m.model_type = k.model_type;
  rope_params p;
  rope_param_names names;
  names.function = fn;

  // Head dim and the model facts. hidden_size counts (its error too) only without a stated head dim.
  const std::optional<index_t> heads = use(top.num_attention_heads);
  m.num_attention_heads = heads.value_or(0);
  m.num_key_value_heads = use(top.num_key_value_heads).value_or(m.num_attention_heads);  // HF: no GQA
  m.max_position_embeddings = use(top.max_position_embeddings).value_or(0);
  const std::optional<index_t> qk_rope = use(top.qk_rope_head_dim);
  const std::optional<index_t> explicit_head = use(top.head_dim);
  POSENC_TRY(err);
  const head_dim_source head_from = model_head_dim(qk_rope, explicit_head, top.hidden_size.value, heads, p.head_dim);
  if (head_from != head_dim_source::rotary_head && head_from != head_dim_source::head_dim) {
    use(top.hidden_size);
    POSENC_TRY(err);
  }
  if (head_from == head_dim_source::no_width)
    return missing(top.hidden_size.name, "the head dimension: no head_dim in the config");
  if (head_from == head_dim_source::no_heads)
    return missing(top.num_attention_heads.name, "the head dimension: no head_dim in the config");
  if (head_from == head_dim_source::width_over_heads && p.head_dim == 0)
    return fail(fn, top.hidden_size.name, "=", *top.hidden_size.value, " is smaller than num_attention_heads=", *heads);
  names.head_dim = "head_dim";

  // Rotary fraction: the dict's partial_rotary_factor, the model's, else GPT-NeoX's rotary_pct.
  const config_key<double>& prf = dict.partial_rotary_factor.given() ? dict.partial_rotary_factor
                                  : top.partial_rotary_factor.given() ? top.partial_rotary_factor
                                                                      : top.rotary_pct;
  names.partial_rotary_factor = prf.name;
  p.partial_rotary_factor = m.partial_rotary_factor = use(prf).value_or(1.0);

  if (const auto t = use(dict.rope_theta)) p.base = *t;
  else if (const auto t2 = use(top.rope_theta)) p.base = *t2;
  else p.base = use(top.rotary_emb_base).value_or(10000.0);
  // DeepSeek checkpoints pair (x[2i], x[2i+1]); HF DeepseekV3 permutes q/k unless rope_interleave is false.
  // GLM / GLM-4 (modeling_glm*.py: rotate_half over x[0::2], x[1::2], cos repeat_interleave'd) and Llama 4
  // (modeling_llama4.py: view_as_complex of adjacent pairs) rotate interleaved pairs too.
  const bool deepseek = is_deepseek(k.model_type, k.architectures);
  const bool interleave = (deepseek && use(top.rope_interleave).value_or(true)) || interleaved_family(k.model_type);
  p.style = c.style.value_or(interleave ? rope_style::interleaved : rope_style::half_split);

  // The rope type: `rope_type`, else the legacy `type`.
  const config_key<std::string>& type = dict.rope_type.given() ? dict.rope_type : dict.type;
  p.scaling_type = use(type).value_or("default");
  names.scaling_type = type.name;
  names.scaling_label = "rope_type";

  // M: a top-level original_max_position_embeddings wins (Phi-3; HF v5 standardize_rope_params), then the
  // dict's; the mapping falls back to max_position_embeddings.
  names.original_max_positions = dict.original_max_position_embeddings.name;
  if (const auto m1 = use(top.original_max_position_embeddings)) {
    p.original_max_positions = *m1;
    names.original_max_positions = top.original_max_position_embeddings.name;
  } else if (const auto m2 = use(dict.original_max_position_embeddings)) {
    p.original_max_positions = *m2;
  }
  p.max_position_embeddings = m.max_position_embeddings;
  names.max_position_embeddings = top.max_position_embeddings.name;

  // The scaling keys, each as the dict names it.
  p.factor = use(dict.factor);
  p.beta_fast = use(dict.beta_fast);
  p.beta_slow = use(dict.beta_slow);
  p.mscale = use(dict.mscale);
  p.mscale_all_dim = use(dict.mscale_all_dim);
  p.attention_factor = use(dict.attention_factor);
  p.truncate = use(dict.truncate).value_or(true);
  p.low_freq_factor = use(dict.low_freq_factor);
  p.high_freq_factor = use(dict.high_freq_factor);
  p.short_factor = use(dict.short_factor).value_or(std::vector<double>{});
  p.long_factor = use(dict.long_factor).value_or(std::vector<double>{});
  p.mrope_section = use(dict.mrope_section).value_or(std::vector<index_t>{});
  p.mrope_interleaved = use(dict.mrope_interleaved).value_or(false);
  POSENC_TRY(err);
  p.yarn_variant = c.yarn.value_or(deepseek ? rope_yarn_variant::deepseek : rope_yarn_variant::yarn);
  p.ntk_policy = c.ntk_policy;
  p.long_policy = c.long_policy;
  names.factor = dict.factor.name;
  names.beta_fast = dict.beta_fast.name;
  names.beta_slow = dict.beta_slow.name;
  names.mscale = dict.mscale.name;
  names.mscale_all_dim = dict.mscale_all_dim.name;
  names.attention_factor = dict.attention_factor.name;
  names.low_freq_factor = dict.low_freq_factor.name;
  names.high_freq_factor = dict.high_freq_factor.name;
  names.short_factor = dict.short_factor.name;
  names.long_factor = dict.long_factor.name;
  names.mrope_section = dict.mrope_section.name;

  POSENC_TRY(rope_params_to_config(p, names, m.config, &m.rope_type));
  m.mrope_section = std::move(p.mrope_section);
  m.mrope_interleaved = p.mrope_interleaved;
  out = std::move(m);
  return {};
}

}  // namespace detail::hf
POSENC_END_NAMESPACE
