// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// What reading a Hugging Face `config.json` takes and gives, without JSON: the options (hf_options) and the
// result (hf_rope_info). The readers are io/hf_config.hpp (nlohmann/json) and the Python package (a dict);
// both run the one reader of detail/hf_reader.hpp.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/enum_names.hpp"
#include "posenc/rope_plan.hpp"
#include "posenc/types.hpp"

POSENC_BEGIN_NAMESPACE

/// Which YaRN a `"yarn"` rope type becomes.
enum class hf_yarn_variant {
  by_model,  ///< rope_scaling::deepseek_yarn for DeepSeek-V2/V3 models (see rope_config_from_hf), else yarn
  yarn,      ///< always rope_scaling_type::yarn (Hugging Face `_compute_yarn_parameters`)
  deepseek,  ///< always rope_scaling_type::deepseek_yarn (magnitude ratio plus the softmax logit scale)
};
/// The spellings of hf_yarn_variant (posenc/enum_names.hpp: to_string, parse).
template <>
struct enum_names<hf_yarn_variant> {
  /// Canonical name first per value, then accepted aliases.
  static constexpr enum_name<hf_yarn_variant> list[] = {
      {hf_yarn_variant::by_model, "by_model"}, {hf_yarn_variant::yarn, "yarn"}, {hf_yarn_variant::deepseek, "deepseek"}};
};

/// Choices a `config.json` does not make, or that an engine makes differently from Hugging Face.
struct hf_options {
  /// Pair layout. Unset: interleaved for DeepSeek-V2/V3 (their checkpoints pair (x[2i], x[2i+1]); HF
  /// DeepseekV3 permutes q/k before rotate_half unless `rope_interleave` is false) and for GLM, GLM-4 and
  /// Llama 4 (their HF modeling files rotate adjacent pairs), half_split (HF rotate_half) for every other model. Set it to `interleaved` for weights permuted to Meta/GGUF layout.
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
  /// style: hf_options::style, else interleaved for DeepSeek-V2/V3 (unless `rope_interleave` is false) and
  ///   for model_type glm, glm4, llama4, llama4_text, else half_split. scaling: from the dict, see rope_config_from_hf. freq_factors: empty.
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

POSENC_END_NAMESPACE
