// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// GGUF metadata -> RoPE configuration. A small, hardened reader of GGUF files (versions 2 and 3, little-endian):
// the header, every metadata key/value (all value types, arrays included), the tensor directory, and no tensor
// data except the small RoPE factor tensors llama.cpp's converter writes (`rope_freqs.weight`, Phi-3's
// `rope_factors_long.weight` / `rope_factors_short.weight`). llama.cpp's keys are then mapped through the
// rope_params mapping shared with hf_config.hpp. Optional: not part of the umbrella posenc.hpp; needs neither
// Eigen nor nlohmann/json.
//
// The pieces: gguf_types.hpp (the value, metadata, options and result types), detail/gguf/reader.hpp (the
// binary reader; format: ggml docs/gguf.md, github.com/ggml-org/ggml), detail/gguf/rope_keys.hpp (llama.cpp's
// keys -> rope_params, as src/llama-model.cpp llama_model::load_hparams and src/llama-context.cpp read them)
// and detail/gguf/arch.hpp (llama.cpp's pair style per architecture). This header holds the entry points.
//
// Hardening: the parser runs over a byte source (a memory buffer, so it can be fuzzed, or a file read piece by
// piece, never whole). Every count and length is checked against the bytes left before anything is allocated
// for it, so a file can make the reader allocate only a small multiple of its own size. A bad file gives
// errc::invalid_file with a message naming the file, the entry and what is wrong (bad magic, unsupported or
// big-endian version, truncation, counts or lengths past the end, unknown value types, arrays of arrays,
// booleans other than 0/1, duplicate keys or tensor names, a bad alignment, more than 4 dimensions, extents
// whose product overflows, misaligned offsets, tensor data past the end, a known key of the wrong type, RoPE
// factor tensors of the wrong type or shape); an unreadable file gives errc::io_error.
#pragma once

#include <cstddef>
#include <string>

#include "posenc/config.hpp"
#include "posenc/detail/gguf/layer_keys.hpp"
#include "posenc/detail/gguf/reader.hpp"
#include "posenc/detail/gguf/rope_keys.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/io/gguf_types.hpp"
#include "posenc/model_plan.hpp"  // IWYU pragma: export
#include "posenc/status.hpp"

POSENC_BEGIN_NAMESPACE

namespace detail::gguf {

inline constexpr const char* metadata_fn = "read_gguf_metadata";
inline constexpr const char* rope_fn = "read_gguf_rope";
inline constexpr const char* model_fn = "read_gguf_model_plan";

/// The model plan of a byte source: metadata, the RoPE mapping, then the per-layer keys.
template <class Source>
status model_from_source(Source& src, const gguf_options& options, const std::string& what, model_positional_plan& out) {
  gguf_metadata m;
  POSENC_TRY(parse_metadata(src, model_fn, what, m));
  gguf_rope_info rope;
  POSENC_TRY(rope_from_metadata(m, src, options, model_fn, what, rope));
  return layers_from_metadata(m, rope, model_fn, what, out);
}

}  // namespace detail::gguf

/// Parses the header, metadata and tensor directory of a GGUF image in memory (versions 2 and 3,
/// little-endian; format: ggml docs/gguf.md), into `out`. `name` stands for the buffer in messages. Reads no
/// tensor data; checks that every tensor of a known ggml type lies inside the buffer.
/// Returns ok, or (out unchanged) invalid_file naming what is wrong (see the header comment for the list),
/// out_of_memory if an allocation fails.
inline status try_parse_gguf_metadata(const void* data, std::size_t size, gguf_metadata& out,
                                      const std::string& name = "buffer") noexcept {
  using namespace detail::gguf;
  return detail::guard_alloc(metadata_fn, [&] {
    memory_source src{static_cast<const unsigned char*>(data), size};
    return parse_metadata(src, metadata_fn, name, out);
  });
}

/// try_parse_gguf_metadata of the file at `path`, read piece by piece (never whole). io_error when the file
/// cannot be opened or read.
///
/// **Example**
/// ```
/// posenc::gguf_metadata meta;
/// if (posenc::status s = posenc::try_read_gguf_metadata("model.gguf", meta); !s) return s;
/// if (const posenc::gguf_value* v = meta.find("general.architecture")) std::puts(v->string.c_str());
/// ```
inline status try_read_gguf_metadata(const std::string& path, gguf_metadata& out) noexcept {
  using namespace detail::gguf;
  return detail::guard_alloc(metadata_fn, [&]() -> status {
    const std::string what = path_what(path);
    file_source src;
    POSENC_TRY(open_file(path, metadata_fn, what, src));
    return parse_metadata(src, metadata_fn, what, out);
  });
}

/// The throwing form of try_read_gguf_metadata: argument_error with the same message.
inline gguf_metadata read_gguf_metadata(const std::string& path) {
  gguf_metadata m;
  detail::throw_if_error(try_read_gguf_metadata(path, m));
  return m;
}

/// The RoPE configuration of a GGUF model image in memory; see try_read_gguf_rope.
inline status try_parse_gguf_rope(const void* data, std::size_t size, gguf_rope_info& out, const gguf_options& options = {},
                                  const std::string& name = "buffer") noexcept {
  using namespace detail::gguf;
  return detail::guard_alloc(rope_fn, [&]() -> status {
    memory_source src{static_cast<const unsigned char*>(data), size};
    gguf_metadata m;
    POSENC_TRY(parse_metadata(src, rope_fn, name, m));
    return rope_from_metadata(m, src, options, rope_fn, name, out);
  });
}

/// Reads the RoPE configuration of the GGUF model at `path`, into `out`: the metadata (try_read_gguf_metadata)
/// mapped as llama.cpp's llama_model::load_hparams and llama_context read it, through the rope_params mapping
/// shared with hf_config.hpp (try_rope_config_from_params documents its rules). `<arch>` = general.architecture.
/// - Geometry: see gguf_rope_info::config. Pair style: gguf_options::style, else llama.cpp's
///   llama_model_rope_type of the architecture (NORM -> interleaved: Llama family, whose q/k weights the
///   converter permutes; NEOX and MROPE -> half_split: Qwen2, GPT-NeoX, Phi-3, Falcon, Gemma, ...).
/// - `<arch>.rope.scaling.type`: absent means "linear" when `rope.scaling.factor` (or the old
///   `rope.scale_linear`) is given and not 0, else none. "linear": w_i / factor (none without a factor, as
///   llama.cpp reads it). "yarn": factor (1 when absent, as llama.cpp),
///   original_context_length (default context_length), yarn_beta_fast/slow (default 32/1), yarn_ext_factor
///   (must be 1), yarn_attn_factor (HF attention_factor), rope.scaling.attn_factor (multiplies the magnitude);
///   for deepseek2 yarn_log_multiplier = 0.1 * mscale_all_dim gives rope_scaling::deepseek_yarn.
///   "longrope" (or no type with the tensors present): Phi-3's `rope_factors_short.weight` and
///   `rope_factors_long.weight` (F32, [R/2]), M = original_context_length, magnitude rope.scaling.attn_factor.
/// - `rope_freqs.weight` (F32, [R/2]; Llama 3's converter bakes its wavelength bands into it): freq_factors,
///   w_i / f_i, as ggml_rope_ext divides by them.
/// - `<arch>.rope.dimension_sections` (MRoPE): reported in gguf_rope_info::mrope_sections, checked against R/2.
/// Returns ok, or (out unchanged): io_error (cannot open or read); invalid_file naming the file and the key or
/// tensor (everything try_read_gguf_metadata rejects; general.architecture missing; a known key of the wrong
/// type; missing head dims; factor tensors of a type other than F32 or a shape other than [R/2]; values the
/// mapping rejects, such as base <= 1, a yarn_ext_factor other than 1 or an attn_factor without YaRN or
/// LongRoPE); invalid_argument for an architecture without RoPE or not in the table (set gguf_options::style)
/// and for a yarn_log_multiplier outside deepseek2 (converters of other architectures disagree on its scale).
///
/// **Example**
/// ```
/// posenc::gguf_rope_info info;
/// if (posenc::status s = posenc::try_read_gguf_rope("Llama-3.1-8B-Q4_K_M.gguf", info); !s) return s;
/// const posenc::rope_plan plan = posenc::make_rope_plan(info.config, seq_len);   // interleaved, rope_freqs
/// ```
inline status try_read_gguf_rope(const std::string& path, gguf_rope_info& out, const gguf_options& options = {}) noexcept {
  using namespace detail::gguf;
  return detail::guard_alloc(rope_fn, [&]() -> status {
    const std::string what = path_what(path);
    file_source src;
    POSENC_TRY(open_file(path, rope_fn, what, src));
    gguf_metadata m;
    POSENC_TRY(parse_metadata(src, rope_fn, what, m));
    return rope_from_metadata(m, src, options, rope_fn, what, out);
  });
}

/// The throwing form of try_read_gguf_rope: argument_error with the same message.
///
/// **Example**
/// ```
/// const posenc::gguf_rope_info info = posenc::read_gguf_rope("qwen2.5-7b-instruct-q4_k_m.gguf");
/// const posenc::rope_plan plan = posenc::make_rope_plan(info.config);
/// ```
inline gguf_rope_info read_gguf_rope(const std::string& path, const gguf_options& options = {}) {
  gguf_rope_info info;
  detail::throw_if_error(try_read_gguf_rope(path, info, options));
  return info;
}

/// Every layer's positional treatment of a GGUF model image in memory; see try_read_gguf_model_plan.
inline status try_parse_gguf_model_plan(const void* data, std::size_t size, model_positional_plan& out,
                                        const gguf_options& options = {}, const std::string& name = "buffer") noexcept {
  using namespace detail::gguf;
  return detail::guard_alloc(model_fn, [&]() -> status {
    memory_source src{static_cast<const unsigned char*>(data), size};
    return model_from_source(src, options, name, out);
  });
}

/// Every layer's positional treatment of the GGUF model at `path`, into `out`, as llama.cpp's loader of the
/// architecture reads it (detail/gguf/layer_keys.hpp; docs/models.md has the table): the model's RoPE as
/// try_read_gguf_rope; `<arch>.block_count` layers; `<arch>.attention.sliding_window` and the architecture's
/// pattern (llama_hparams::set_swa_pattern: every period-th layer full, its default period per architecture;
/// `<arch>.attention.sliding_window_pattern` as a period, or one boolean per layer); the sliding layers' base
/// `<arch>.rope.freq_base_swa` (Gemma 3, 3n, EmbeddingGemma, ModernBERT: else 10000 without scaling; others:
/// else the main base with the main scaling; Olmo 3: without scaling); NoPE layers (Llama 4, SmolLM3: every
/// 4th; Cohere 2, EXAONE 4: the full layers); Llama 4's chunks of 8192 and its temperature on NoPE layers;
/// Ministral 3's `<arch>.attention.temperature_scale` on every layer. Returns ok, or (out unchanged) every
/// error of try_read_gguf_rope; invalid_file naming the key for block_count missing or past 512, a key of the wrong type,
/// a pattern array of another length; invalid_argument for a key posenc does not read yet (per-layer head
/// dims `attention.key_length_swa`, `rope.dimension_count_swa`, ...) and for sliding-window keys of an
/// architecture without a per-layer rule.
///
/// **Example**
/// ```
/// posenc::model_positional_plan model;
/// if (posenc::status s = posenc::try_read_gguf_model_plan("gemma-3-4b-it-Q4_K_M.gguf", model); !s) return s;
/// const posenc::layer_positional& l0 = model.layer(0);  // sliding_attention, window 1024, base 10000
/// ```
inline status try_read_gguf_model_plan(const std::string& path, model_positional_plan& out,
                                       const gguf_options& options = {}) noexcept {
  using namespace detail::gguf;
  return detail::guard_alloc(model_fn, [&]() -> status {
    const std::string what = path_what(path);
    file_source src;
    POSENC_TRY(open_file(path, model_fn, what, src));
    return model_from_source(src, options, what, out);
  });
}

/// The throwing form of try_read_gguf_model_plan: argument_error with the same message.
inline model_positional_plan read_gguf_model_plan(const std::string& path, const gguf_options& options = {}) {
  model_positional_plan m;
  detail::throw_if_error(try_read_gguf_model_plan(path, m, options));
  return m;
}

POSENC_END_NAMESPACE
