// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// A Hugging Face config.json -> model_positional_plan: the layer structure (layer_types or the family's rule,
// NoPE layers, windows, Llama 4's temperature tuning) over the accessor of detail/hf_reader.hpp, whose parse
// gives each layer's RoPE configuration. Sources, per family (transformers' configuration_*.py defaults and
// modeling_*.py attention classes):
//   layer_types given: its entries ("full_attention", "sliding_attention", "chunked_attention"), any family.
//   gemma2: layer i slides when (i + 1) % 2 != 0; one RoPE for all.
//   gemma3, gemma3_text: slides when (i + 1) % sliding_window_pattern != 0 (default 6); sliding layers rotate
//     with base rope_local_base_freq (default 10000) and no scaling, full ones with rope_theta and rope_scaling;
//     v5 per-layer rope_parameters ({"full_attention": ..., "sliding_attention": ...}) instead when given.
//   llama4, llama4_text: no_rope_layers[i] (1 = RoPE; default (i + 1) % no_rope_layer_interval != 0, interval
//     4); layer_types default chunked_attention for RoPE layers (attention_chunk_size, default 8192), full for
//     NoPE ones; temperature tuning on NoPE layers (attn_temperature_tuning default true, floor_scale 8192,
//     attn_scale 0.1); interleaved pairs (detail/hf_mapping.hpp).
//   smollm3: no_rope_layers as Llama 4; slides only NoPE layers and only with use_sliding_window.
//   gpt_oss: slides when (i + 1) % 2 != 0.
//   qwen2, qwen2_moe, qwen3, qwen3_moe: slides when use_sliding_window, sliding_window and i >= max_window_layers
//     (default 28).
//   modernbert: global (full) when i % global_attn_every_n_layers == 0 (default 3), else local (sliding,
//     local_attention tokens, default 128, half on each side); global layers base global_rope_theta (default
//     160000), local ones local_rope_theta (default 10000; null: the global base).
//   any other: every layer slides when sliding_window is set and use_sliding_window is not false (Mistral,
//     Phi-3), else every layer is full; one RoPE for all.
//   any family whose RoPE dict has llama_4_scaling_beta (Ministral 3, modeling_ministral3.py): every layer
//     multiplies q by 1 + beta * ln(floor(p / original_max_position_embeddings) + 1) after the rotation.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/detail/hf_reader.hpp"
#include "posenc/model_plan.hpp"
#include "posenc/status.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail::hf {

inline constexpr const char* model_fn = "model_plan_from_hf";

enum class layer_family { other, gemma2, gemma3, llama4, smollm3, gpt_oss, qwen, modernbert };

inline layer_family family_of(const std::string& t) {
  if (t == "gemma2") return layer_family::gemma2;
  if (t == "gemma3" || t == "gemma3_text") return layer_family::gemma3;
  if (t == "llama4" || t == "llama4_text") return layer_family::llama4;
  if (t == "smollm3") return layer_family::smollm3;
  if (t == "gpt_oss") return layer_family::gpt_oss;
  if (t == "qwen2" || t == "qwen2_moe" || t == "qwen3" || t == "qwen3_moe") return layer_family::qwen;
  if (t == "modernbert") return layer_family::modernbert;
  return layer_family::other;
}

/// `key` of `s` as an optional integer with a default: absent or null gives `def`; a non-integer or a value
/// <= 0 is an error naming the key.
template <class A>
status positive_or(const section<A>& s, const char* key, index_t def, index_t& out) {
  const config_key<index_t> k = s.positive(key);
  POSENC_TRY(k.error);
  out = k.value.value_or(def);
  return {};
}
template <class A>
status number_or(const section<A>& s, const char* key, double def, double& out) {
  const config_key<double> k = s.number(key);
  POSENC_TRY(k.error);
  out = k.value.value_or(def);
  return {};
}

/// Whether `key` is on: a boolean, or a number (nonzero: on; Llama 4 checkpoints write 4); `def` when absent.
template <class A>
status flag_or(const section<A>& s, const char* key, bool def, bool& out) {
  const typename A::node v = s.get(key);
  if (!v) {
    out = def;
    return {};
  }
  if (A::is_boolean(v)) out = A::as_bool(v);
  else if (A::is_number(v)) out = A::as_double(v) != 0.0;
  else return fail(model_fn, s.name(key), "=", A::shown(v), " must be true, false or a number");
  return {};
}

/// `layer_types` (one known name per layer) into kinds; `given` false when absent or null.
template <class A>
status read_layer_types(const section<A>& top, index_t layers, std::vector<attention_kind>& kinds, bool& given) {
  const typename A::node v = top.get("layer_types");
  given = v != typename A::node{};
  if (!given) return {};
  if (!A::is_array(v)) return fail(model_fn, top.name("layer_types"), "=", A::shown(v), " must be an array of strings");
  if (static_cast<index_t>(A::size(v)) != layers)
    return fail(model_fn, top.name("layer_types"), " has ", A::size(v), " entries; num_hidden_layers=", layers);
  kinds.assign(static_cast<std::size_t>(layers), attention_kind::full);
  for (std::size_t i = 0; i < A::size(v); ++i) {
    const typename A::node e = A::at(v, i);
    attention_kind k{};
    if (!A::is_string(e) || !parse(A::as_string(e), k))
      return fail(model_fn, top.name("layer_types"), "[", i, "]=", A::shown(e), " is not supported (known: ",
                  enum_choices<attention_kind>().c_str(), ")");
    kinds[i] = k;
  }
  return {};
}

/// `no_rope_layers` (Llama 4, SmolLM3): 1 = the layer rotates; absent, null or empty (HF's `if no_rope_layers
/// else`): the default of every no_rope_layer_interval-th layer without RoPE.
template <class A>
status read_rope_layers(const section<A>& top, index_t layers, std::vector<bool>& rope) {
  const config_key<std::vector<index_t>> k = top.integers("no_rope_layers");
  POSENC_TRY(k.error);
  index_t interval = 4;
  POSENC_TRY(positive_or(top, "no_rope_layer_interval", 4, interval));
  rope.assign(static_cast<std::size_t>(layers), true);
  if (!k.value || k.value->empty()) {
    for (index_t i = 0; i < layers; ++i) rope[static_cast<std::size_t>(i)] = (i + 1) % interval != 0;
    return {};
  }
  if (static_cast<index_t>(k.value->size()) != layers)
    return fail(model_fn, k.name, " has ", k.value->size(), " entries; num_hidden_layers=", layers);
  for (std::size_t i = 0; i < k.value->size(); ++i) {
    if ((*k.value)[i] > 1) return fail(model_fn, k.name, "[", i, "]=", (*k.value)[i], " must be 0 (NoPE) or 1 (RoPE)");
    rope[i] = (*k.value)[i] == 1;
  }
  return {};
}

/// The model's RoPE configuration for layers of `layer_type` (the per-layer dict's key; "" for a flat dict).
/// `model`, when not null, receives the model-level facts of the parse (the MRoPE sections).
template <class A>
status layer_rope(typename A::node root, const hf_options& opt, const std::string& layer_type, rope_config& out,
                  model_positional_plan* model = nullptr) {
  hf_options o = opt;
  o.layer_type = layer_type;
  hf_rope_info info;
  POSENC_TRY(parse<A>(root, o, info));
  out = std::move(info.config);
  if (model != nullptr) {
    model->mrope_section = std::move(info.mrope_section);
    model->mrope_interleaved = info.mrope_interleaved;
  }
  return {};
}

/// Ministral 3's factor on q from a RoPE dict: `llama_4_scaling_beta` with the dict's
/// `original_max_position_embeddings` (get_llama_4_attn_scale); `out` untouched when the dict lacks the beta.
template <class A>
status read_l4_scaling(const section<A>& dict, attn_temperature& out) {
  const config_key<double> beta = dict.number("llama_4_scaling_beta");
  POSENC_TRY(beta.error);
  if (!beta.value) return {};
  const config_key<index_t> orig = dict.positive("original_max_position_embeddings");
  POSENC_TRY(orig.error);
  if (!orig.value)
    return fail(model_fn, beta.name, " needs ", dict.name("original_max_position_embeddings"), " (the factor's floor)");
  out.enabled = true;
  out.attn_scale = *beta.value;
  out.floor_scale = static_cast<double>(*orig.value);
  out.offset = 0.0;
  return {};
}

/// Reads the layer structure of `root` into `result` (assigned only on success); see the file comment.
template <class A>
status parse_model(typename A::node root, const hf_options& opt, model_positional_plan& result) {
  using node = typename A::node;
  model_root<A> where;
  POSENC_TRY(where.find(model_fn, root, opt));
  const section<A>& top = where.top;

  model_positional_plan m;
  m.model_type = where.model_type;
  const layer_family family = family_of(m.model_type);
  const config_key<index_t> n_layers = top.positive("num_hidden_layers");
  POSENC_TRY(n_layers.error);
  if (!n_layers.value) return fail(model_fn, top.name("num_hidden_layers"), " is missing (the number of layers)");
  const index_t layers = *n_layers.value;

  // Which layers rotate.
  std::vector<bool> rope(static_cast<std::size_t>(layers), true);
  if (family == layer_family::llama4 || family == layer_family::smollm3) POSENC_TRY(read_rope_layers(top, layers, rope));

  // Each layer's attention.
  std::vector<attention_kind> kinds;
  bool types_given = false;
  POSENC_TRY(read_layer_types(top, layers, kinds, types_given));
  const config_key<index_t> window = top.positive("sliding_window");
  POSENC_TRY(window.error);
  // use_sliding_window: absent means on for every family but SmolLM3 (its config's default is false).
  bool use_window = true;
  POSENC_TRY(flag_or(top, "use_sliding_window", family != layer_family::smollm3, use_window));
  if (!types_given) {
    kinds.assign(static_cast<std::size_t>(layers), attention_kind::full);
    index_t pattern = 2, max_window_layers = 28, every = 3;
    if (family == layer_family::gemma3) POSENC_TRY(positive_or(top, "sliding_window_pattern", 6, pattern));
    if (family == layer_family::qwen) POSENC_TRY(positive_or(top, "max_window_layers", 28, max_window_layers));
    if (family == layer_family::modernbert) POSENC_TRY(positive_or(top, "global_attn_every_n_layers", 3, every));
    for (index_t i = 0; i < layers; ++i) {
      const auto u = static_cast<std::size_t>(i);
      bool slide = false;
      switch (family) {
        case layer_family::gemma2:
        case layer_family::gpt_oss: slide = (i + 1) % 2 != 0; break;
        case layer_family::gemma3: slide = (i + 1) % pattern != 0; break;
        case layer_family::llama4: kinds[u] = rope[u] ? attention_kind::chunked : attention_kind::full; continue;
        case layer_family::smollm3: slide = use_window && window.value && !rope[u]; break;
        case layer_family::qwen: slide = use_window && window.value && i >= max_window_layers; break;
        case layer_family::modernbert: slide = i % every != 0; break;
        case layer_family::other: slide = use_window && window.value; break;
      }
      kinds[u] = slide ? attention_kind::sliding : attention_kind::full;
    }
  }

  // Windows: sliding_window (ModernBERT: local_attention), attention_chunk_size.
  index_t local = 128, chunk = 8192;
  if (family == layer_family::modernbert) POSENC_TRY(positive_or(top, "local_attention", 128, local));
  POSENC_TRY(positive_or(top, "attention_chunk_size", 8192, chunk));

  // RoPE configurations: per layer type when the v5 dict is per layer, Gemma 3's local base, ModernBERT's two.
  node rp{}, rs{};
  POSENC_TRY(top.object_or_null("rope_parameters", rp));
  POSENC_TRY(top.object_or_null("rope_scaling", rs));
  const bool per_type = (rp && is_per_layer<A>(rp)) || (rs && is_per_layer<A>(rs));
  rope_config global, local_config;
  if (!per_type) {
    POSENC_TRY(layer_rope<A>(root, opt, "", global, &m));
    local_config = global;
    if (family == layer_family::gemma3) {
      local_config.scaling = rope_scaling{};
      POSENC_TRY(number_or(top, "rope_local_base_freq", 10000.0, local_config.base));
    } else if (family == layer_family::modernbert) {
      POSENC_TRY(number_or(top, "global_rope_theta", 160000.0, global.base));
      // local_rope_theta: absent gives HF's default 10000, JSON null the global base (ModernBertAttention).
      const bool local_null = A::find(top.obj, "local_rope_theta") && !top.get("local_rope_theta");
      POSENC_TRY(number_or(top, "local_rope_theta", 10000.0, local_config.base));
      if (local_null) local_config.base = global.base;
    }
  }

  bool tuning = false;
  attn_temperature temp;
  if (family == layer_family::llama4) {
    POSENC_TRY(flag_or(top, "attn_temperature_tuning", true, tuning));
    POSENC_TRY(number_or(top, "floor_scale", 8192.0, temp.floor_scale));
    POSENC_TRY(number_or(top, "attn_scale", 0.1, temp.attn_scale));
    if (!(temp.floor_scale > 0)) return fail(model_fn, top.name("floor_scale"), "=", temp.floor_scale, " must be > 0");
  }

  // Ministral 3: a factor on q in every layer, from the (flat or per-layer-type) RoPE dict.
  attn_temperature l4_flat, l4_kind[3];
  const section<A> dict{rp ? rp : rs, top.name(rp ? "rope_parameters." : "rope_scaling.")};
  if (!per_type) POSENC_TRY(read_l4_scaling(dict, l4_flat));

  rope_config by_kind[3];
  bool parsed[3] = {false, false, false};
  m.layers.resize(static_cast<std::size_t>(layers));
  for (index_t i = 0; i < layers; ++i) {
    const auto u = static_cast<std::size_t>(i);
    layer_positional& l = m.layers[u];
    l.attention = kinds[u];
    l.rope = rope[u];
    if (l.attention == attention_kind::sliding) {
      if (family == layer_family::modernbert) {
        l.window = local;
      } else if (window.value) {
        l.window = *window.value;
      } else {
        return fail(model_fn, "layer ", i, " is sliding_attention but ", top.name("sliding_window"), " is missing");
      }
    }
    if (l.attention == attention_kind::chunked) l.window = chunk;
    if (per_type) {  // one parse per attention kind, not per layer
      const auto kind = static_cast<std::size_t>(l.attention);
      if (!parsed[kind]) {
        const std::string name = to_string(l.attention);
        POSENC_TRY(layer_rope<A>(root, opt, name, by_kind[kind]));
        node sub{};
        POSENC_TRY(dict.object_or_null(name.c_str(), sub));
        POSENC_TRY(read_l4_scaling(section<A>{sub, dict.name(name.c_str()) + "."}, l4_kind[kind]));
        parsed[kind] = true;
      }
      l.config = by_kind[kind];
      l.temperature = l4_kind[kind];
    } else {
      l.config = l.attention == attention_kind::sliding ? local_config : global;
      l.temperature = l4_flat;
    }
    if (tuning && !l.rope) {
      l.temperature = temp;
      l.temperature.enabled = true;
    }
  }
  result = std::move(m);
  return {};
}

}  // namespace detail::hf
POSENC_END_NAMESPACE
