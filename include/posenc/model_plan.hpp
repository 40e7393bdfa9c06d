// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// A model's positional treatment layer by layer: which layers rotate q and k (and with which RoPE
// configuration: Gemma 3 and ModernBERT give local and global layers different bases), which have no
// positional encoding (Llama 4 and SmolLM3 NoPE layers), what attention each layer runs (full, sliding window,
// chunked) and the per-position factor Llama 4 puts on q in its NoPE layers. Read from a Hugging Face
// config.json by posenc/io/hf_config.hpp (try_model_plan_from_hf); no JSON here.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/enum_names.hpp"
#include "posenc/rope_plan.hpp"
#include "posenc/status.hpp"
#include "posenc/types.hpp"

POSENC_BEGIN_NAMESPACE

/// The attention a layer runs, as Hugging Face's `layer_types` names it.
enum class attention_kind {
  full,     ///< every earlier token ("full_attention")
  sliding,  ///< the last `window` tokens ("sliding_attention"; ModernBERT: window/2 on each side)
  chunked,  ///< the tokens of the same chunk of `window` positions ("chunked_attention", Llama 4)
};
/// The spellings of attention_kind: the config's layer_types values.
template <>
struct enum_names<attention_kind> {
  /// Canonical name first per value, then accepted aliases.
  static constexpr enum_name<attention_kind> list[] = {{attention_kind::full, "full_attention"},
                                                       {attention_kind::sliding, "sliding_attention"},
                                                       {attention_kind::chunked, "chunked_attention"}};
};

/// A per-position factor on q ("attention temperature"), 1 + attn_scale * ln(floor((p + offset) / floor_scale)
/// + 1) at position p (0-based), which is 1 below floor_scale - offset. Llama 4 puts it on its NoPE layers
/// (HF modeling_llama4.py Llama4TextAttention, after "Scalable-Softmax", arXiv 2501.19399: offset 1,
/// `floor_scale`, `attn_scale`); Ministral 3 on every layer after the rotation (HF modeling_ministral3.py
/// get_llama_4_attn_scale: offset 0, floor_scale = rope_parameters.original_max_position_embeddings, attn_scale =
/// llama_4_scaling_beta; llama.cpp reads it from `<arch>.attention.temperature_scale`).
struct attn_temperature {
  bool enabled = false;        ///< the layer multiplies q by the factor
  double floor_scale = 8192;   ///< Llama 4 `floor_scale`; Ministral 3 the original context
  double attn_scale = 0.1;     ///< Llama 4 `attn_scale`; Ministral 3 `llama_4_scaling_beta`
  double offset = 1.0;         ///< added to p: 1 for Llama 4 (HF cache_position + 1), 0 for Ministral 3
  /// The factor on q at position p (0-based, HF's cache_position); 1 when not enabled.
  double scale(index_t p) const noexcept {
    if (!enabled) return 1.0;
    return 1.0 + attn_scale * std::log(std::floor((static_cast<double>(p) + offset) / floor_scale) + 1.0);
  }
};

/// The positional treatment of one layer.
struct layer_positional {
  /// The config's name of the layer's attention (`layer_types` entry, or the family's rule).
  attention_kind attention = attention_kind::full;
  /// Tokens a sliding layer sees (`sliding_window`; ModernBERT `local_attention`) or a chunk's length
  /// (`attention_chunk_size`); 0 for full attention.
  index_t window = 0;
  /// False for a NoPE layer: q and k are not rotated (`config` is then the model's, unused).
  bool rope = true;
  /// The layer's RoPE configuration (base, scaling, pair style, rotary dim); build with make_rope_plan.
  rope_config config;
  /// A per-position factor on q (Llama 4 NoPE layers, every Ministral 3 layer); disabled elsewhere.
  attn_temperature temperature;
};

/// Every layer's positional treatment, from try_model_plan_from_hf. Ask it per layer index.
///
/// **Example**
/// ```
/// posenc::model_positional_plan model;
/// if (posenc::status s = posenc::try_model_plan_from_hf_file("config.json", model); !s) return s;
/// for (posenc::index_t i = 0; i < model.num_layers(); ++i)
///   if (model.layer(i).rope) plans.push_back(posenc::make_rope_plan(model.layer(i).config, max_len));
/// ```
struct model_positional_plan {
  /// `model_type` (the text model's for a multimodal config).
  std::string model_type;
  /// One entry per layer (`num_hidden_layers`).
  std::vector<layer_positional> layers;
  /// Multimodal RoPE of every rotating layer (Qwen2-VL, Qwen2.5-VL, Qwen3-VL `mrope_section`): pairs per
  /// temporal, height and width axis; empty for plain RoPE. Build a layer's with
  /// mrope_plan(make_rope_plan(layer(i).config), {s[0], s[1], s[2]}, layout) (posenc/mrope_plan.hpp).
  std::vector<index_t> mrope_section;
  /// `mrope_interleaved` (Qwen3-VL): the interleaved layout; false: chunked.
  bool mrope_interleaved = false;

  /// The number of layers.
  index_t num_layers() const noexcept { return static_cast<index_t>(layers.size()); }
  /// ok when i is a layer, else invalid_argument naming i and the count.
  status check_layer(index_t i) const {
    if (i < 0 || i >= num_layers())
      return detail::fail("posenc::model_positional_plan::layer", "layer ", i, " is not in [0, ", num_layers(), ")");
    return {};
  }
  /// Layer i; throws argument_error when i is not in [0, num_layers()) (check_layer first in no-throw code).
  const layer_positional& layer(index_t i) const {
    detail::throw_if_error(check_layer(i));
    return layers[static_cast<std::size_t>(i)];
  }
};

POSENC_END_NAMESPACE
