// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// llama.cpp's per-layer keys -> model_positional_plan: which layers attend within a window, which rotate with
// another base, which rotate not at all, and the factor on q. Read as llama.cpp's per-architecture loaders
// read them (src/models/<arch>.cpp load_arch_hparams in 2026; src/llama-model.cpp llama_model::load_hparams
// before), with llama_hparams::set_swa_pattern (src/llama-hparams.cpp) for the layer pattern and the graphs
// (src/models/<arch>.cpp build) for NoPE layers and the temperature. Key names: src/llama-arch.cpp.
#pragma once

#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/detail/gguf/rope_keys.hpp"
#include "posenc/io/gguf_types.hpp"
#include "posenc/model_plan.hpp"
#include "posenc/status.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail::gguf {

/// How an architecture's loader gets its window.
enum class window_rule {
  required,       ///< `attention.sliding_window` must be there
  or_default,     ///< the key, else `window`
  when_present,   ///< SWA only when the key is there and > 0
  llama4,         ///< chunks of `window` (8192, no key) unless the key is there and 0 (no chunking at all)
  exaone4,        ///< SWA only with 64 layers (EXAONE 4.0 32B); the key, else `window`
  none,           ///< no SWA (SmolLM3: its loader reads no window key)
};
/// Which layers skip RoPE (the graph's use_rope).
enum class nope_rule { none, every_4th, full_layers };

/// One architecture's per-layer reading; `period` and `dense_first` are set_swa_pattern's defaults.
struct layer_rule {
  const char* arch;
  index_t period;
  bool dense_first;
  window_rule window_from;
  index_t window;
  attention_kind kind;   ///< sliding (ModernBERT, EmbeddingGemma: window/2 on each side) or chunked
  bool local_base;       ///< SWA layers: rope.freq_base_swa, else 10000, without scaling
  bool plain_swa;        ///< SWA layers: the main base (or rope.freq_base_swa) without scaling (Olmo 3)
  nope_rule nope;
};

/// The architectures whose loaders read per-layer keys. Phi-3 follows Hugging Face (every layer slides when
/// the window is set); llama.cpp turns Phi SWA off ("Phi SWA is currently disabled").
inline const layer_rule* find_layer_rule(const std::string& arch) {
  using a = attention_kind;
  static constexpr layer_rule rules[] = {
      {"gemma2", 2, false, window_rule::or_default, 4096, a::sliding, false, false, nope_rule::none},
      {"gemma3", 6, false, window_rule::when_present, 0, a::sliding, true, false, nope_rule::none},
      {"gemma3n", 5, false, window_rule::required, 0, a::sliding, true, false, nope_rule::none},
      {"gemma-embedding", 6, false, window_rule::required, 0, a::sliding, true, false, nope_rule::none},
      {"cohere2", 4, false, window_rule::required, 0, a::sliding, false, false, nope_rule::full_layers},
      {"llama4", 4, false, window_rule::llama4, 8192, a::chunked, false, false, nope_rule::every_4th},
      {"gpt-oss", 2, false, window_rule::required, 0, a::sliding, false, false, nope_rule::none},
      {"exaone4", 4, false, window_rule::exaone4, 4096, a::sliding, false, false, nope_rule::full_layers},
      {"olmo2", 4, false, window_rule::when_present, 0, a::sliding, false, true, nope_rule::none},
      {"modern-bert", 3, true, window_rule::when_present, 0, a::sliding, true, false, nope_rule::none},
      {"phi3", 0, false, window_rule::when_present, 0, a::sliding, false, false, nope_rule::none},
      {"smollm3", 1, false, window_rule::none, 0, a::full, false, false, nope_rule::every_4th},
  };
  for (const layer_rule& r : rules)
    if (arch == r.arch) return &r;
  return nullptr;
}

/// set_swa_pattern: every period-th layer is full, the last of each period (the first with dense_first);
/// period 0: every layer slides, 1: none.
inline bool swa_layer(index_t il, index_t period, bool dense_first) {
  if (period == 0) return true;
  return dense_first ? il % period != 0 : il % period < period - 1;
}

/// `<arch>.attention.sliding_window_pattern`: a period (uint32, set_swa_pattern's argument) or one boolean
/// per layer (true: SWA; the converters of Gemma 3n, EXAONE 4, Olmo 3 write it from layer_types). llama.cpp
/// reads only the period for these architectures and keeps its default for an array; posenc takes the array,
/// the model's own layer_types.
inline status read_pattern(const gguf_metadata& m, const rope_keys& k, const std::string& key, index_t layers,
                           index_t& period, std::vector<bool>& per_layer) {
  const gguf_value* v = m.find(key);
  if (v == nullptr) return {};
  if (!v->is_array()) {
    std::optional<index_t> p;
    POSENC_TRY(k.count(key, p));
    period = *p;
    return {};
  }
  if (v->element_type != gguf_type::boolean && !is_integer_type(v->element_type))
    return k.wrong_type(key, *v, "a period (uint32) or an array of booleans, one per layer");
  if (v->count != static_cast<std::uint64_t>(layers))
    return k.bad(key, " has ", v->count, " entries; block_count=", layers);
  per_layer.assign(static_cast<std::size_t>(layers), false);
  for (std::uint64_t i = 0; i < v->count; ++i) {
    const auto e = v->element_type == gguf_type::boolean ? std::optional<std::int64_t>(v->bytes[i] != 0) : v->int_at(i);
    if (!e || *e < 0 || *e > 1) return k.bad(key, "[", i, "] must be 0 or 1 (1: a sliding-window layer)");
    per_layer[static_cast<std::size_t>(i)] = *e == 1;
  }
  return {};
}

/// The model plan of parsed metadata whose RoPE configuration `rope` already holds; into `out` on success.
inline status layers_from_metadata(const gguf_metadata& m, const gguf_rope_info& rope, const char* fn,
                                   const std::string& what, model_positional_plan& out) {
  const rope_keys k(m, fn, what);
  const std::string a = rope.architecture + ".";
  std::optional<index_t> blocks, window_key;
  std::optional<double> base_swa, temp_scale;
  POSENC_TRY(k.count(a + "block_count", blocks));
  if (!blocks || *blocks == 0) return k.bad(a, "block_count is ", blocks ? "0" : "missing", " (the number of layers)");
  const index_t layers = *blocks;
  // Every layer holds its own rope_config: bound what a file can make the reader copy (a real model's factor
  // tensors are a few hundred bytes; llama.cpp itself stops at LLAMA_MAX_LAYERS = 512 layers).
  if (layers > 512) return k.bad(a, "block_count=", layers, " exceeds 512 layers (llama.cpp's LLAMA_MAX_LAYERS)");
  const rope_config& main = rope.config;
  const std::size_t factor_bytes =
      sizeof(double) * (main.freq_factors.size() + main.scaling.short_factor.size() + main.scaling.long_factor.size());
  if (factor_bytes * static_cast<std::size_t>(layers) > (std::size_t{64} << 20))
    return k.bad("the per-layer plans would copy ", factor_bytes, " bytes of RoPE factors into each of ", layers,
                 " layers (more than 64 MiB)");
  POSENC_TRY(k.count(a + "attention.sliding_window", window_key));
  POSENC_TRY(k.number(a + "rope.freq_base_swa", base_swa));
  POSENC_TRY(k.number(a + "attention.temperature_scale", temp_scale));
  if (base_swa && !(std::isfinite(*base_swa) && *base_swa > 1.0))
    return k.bad(a, "rope.freq_base_swa=", *base_swa, " must be finite and > 1");
  if (temp_scale && !std::isfinite(*temp_scale)) return k.bad(a, "attention.temperature_scale=", *temp_scale, " must be finite");
  const layer_rule* rule = find_layer_rule(rope.architecture);
  const std::string pattern_key = a + "attention.sliding_window_pattern";

  // Keys that change a layer's positional treatment and that posenc does not read for this architecture: an
  // error naming them, never a plan that quietly leaves them out.
  const char* unread[] = {"attention.key_length_swa", "attention.value_length_swa", "rope.dimension_count_swa",
                          "attention.temperature_length"};
  for (const char* key : unread)
    if (m.find(a + key) != nullptr)
      return fail(fn, what, ": ", a, key, " is not read by posenc yet (architecture \"", rope.architecture, "\")");
  const bool swa_keys = (window_key && *window_key > 0) || m.find(pattern_key) != nullptr || base_swa;
  if ((rule == nullptr || rule->window_from == window_rule::none) && swa_keys)
    return fail(fn, what, ": architecture \"", rope.architecture, "\" has sliding-window keys (", a,
                "attention.sliding_window*, rope.freq_base_swa) but no per-layer rule in posenc (docs/models.md)");
  if (temp_scale && rope.architecture != "mistral3")
    return fail(fn, what, ": ", a, "attention.temperature_scale is read for mistral3 only (architecture \"",
                rope.architecture, "\")");

  // Which layers slide, and their window.
  std::vector<bool> swa(static_cast<std::size_t>(layers), false);
  index_t window = 0;
  bool swa_on = false;
  if (rule != nullptr) {
    switch (rule->window_from) {
      case window_rule::required:
        if (!window_key) return k.bad(a, "attention.sliding_window is missing (", rope.architecture, " slides)");
        swa_on = true;
        window = *window_key;
        break;
      case window_rule::or_default:
        swa_on = true;
        window = window_key.value_or(rule->window);
        break;
      case window_rule::when_present:
        swa_on = window_key && *window_key > 0;
        window = window_key.value_or(0);
        break;
      case window_rule::llama4:
        swa_on = !(window_key && *window_key == 0);
        window = rule->window;
        break;
      case window_rule::exaone4:
        swa_on = layers == 64;
        window = window_key.value_or(rule->window);
        break;
      case window_rule::none: break;
    }
    if (swa_on && window == 0) return k.bad(a, "attention.sliding_window is 0 for a sliding-window layer");
  }
  if (swa_on) {
    index_t period = rule->period;
    std::vector<bool> given;
    POSENC_TRY(read_pattern(m, k, pattern_key, layers, period, given));
    for (index_t i = 0; i < layers; ++i)
      swa[static_cast<std::size_t>(i)] = given.empty() ? swa_layer(i, period, rule->dense_first) : given[static_cast<std::size_t>(i)];
  }

  // The sliding layers' RoPE.
  rope_config local = rope.config;
  if (rule != nullptr && (rule->local_base || rule->plain_swa)) {
    local.scaling = rope_scaling{};
    if (rule->local_base) local.base = 10000.0;
  }
  if (base_swa) local.base = *base_swa;

  model_positional_plan plan;
  plan.model_type = rope.architecture;
  plan.mrope_section = rope.mrope_sections;  // llama.cpp pads [t, h, w] with a zero to 4 entries
  while (plan.mrope_section.size() > 3 && plan.mrope_section.back() == 0) plan.mrope_section.pop_back();
  plan.layers.resize(static_cast<std::size_t>(layers));
  for (index_t i = 0; i < layers; ++i) {
    layer_positional& l = plan.layers[static_cast<std::size_t>(i)];
    const bool s = swa[static_cast<std::size_t>(i)];
    l.attention = s ? rule->kind : attention_kind::full;
    l.window = s ? window : 0;
    l.config = s ? local : rope.config;
    if (rule != nullptr && rule->nope == nope_rule::every_4th) l.rope = (i + 1) % 4 != 0;
    if (rule != nullptr && rule->nope == nope_rule::full_layers && swa_on) l.rope = s;
    // Llama 4 (hard-coded in its loader): 1 + 0.1 ln(floor((p + 1) / 8192) + 1) on q in NoPE layers.
    if (rule != nullptr && rule->window_from == window_rule::llama4 && swa_on && !l.rope)
      l.temperature = attn_temperature{true, 8192.0, 0.1, 1.0};
    // Ministral 3: 1 + s ln(floor(p / n_ctx_orig_yarn) + 1) on q in every layer.
    if (temp_scale && *temp_scale != 0.0) {
      const index_t floor = rope.original_context_length > 0 ? rope.original_context_length : rope.context_length;
      if (floor <= 0)
        return k.bad(a, "attention.temperature_scale needs ", a, "rope.scaling.original_context_length or ", a,
                     "context_length (the factor's floor)");
      l.temperature = attn_temperature{true, static_cast<double>(floor), *temp_scale, 0.0};
    }
  }
  if (rule != nullptr && rule->window_from == window_rule::llama4 && !swa_on)
    for (layer_positional& l : plan.layers) l.rope = true;  // the loader's "always use rope" (step = n_layer)
  out = std::move(plan);
  return {};
}

}  // namespace detail::gguf
POSENC_END_NAMESPACE
