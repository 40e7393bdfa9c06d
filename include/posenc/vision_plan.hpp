// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// The positional treatment of a vision encoder (the tower of a vision-language model): 2D RoPE over the
// rows and columns of the image's patches, and which blocks attend within windows. Two 2D RoPEs are in use;
// both give half of the pairs to the row and half to the column, and differ in the frequencies:
//   split        Qwen2-VL, Qwen2.5-VL (HF VisionRotaryEmbedding(head_dim / 2)): each axis is its own RoPE of
//                rotary dim D/2, pair j of an axis turning by pos * base^(-4j/D).
//   alternating  Pixtral, Mistral Small 3.x vision (HF PixtralRotaryEmbedding; mistral-inference
//                precompute_freqs_cis_2d): the D/2 frequencies of one RoPE of dim D dealt out alternately,
//                the row taking base^(-4j/D) (the even ones), the column base^(-(4j+2)/D) (the odd ones).
// A plan is an mrope_plan with sections {0, D/4, D/4} (the time axis is unused), applied with apply_mrope
// (CPU) or posenc/cuda/mrope.cuh, with positions (t = 0, h = patch row, w = patch column) per token, in the
// tower's token order (vision_positions). Read from a Hugging Face config.json by posenc/io/hf_config.hpp
// (try_vision_plan_from_hf); no JSON here.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/detail/check.hpp"
#include "posenc/detail/math/inv_freq.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/enum_names.hpp"
#include "posenc/mrope_plan.hpp"
#include "posenc/rope_plan.hpp"
#include "posenc/status.hpp"
#include "posenc/types.hpp"

POSENC_BEGIN_NAMESPACE

/// How a 2D vision RoPE gives frequencies to the row and column pairs (the file comment has both formulas).
enum class vision_rope_layout {
  split,        ///< Qwen2-VL / Qwen2.5-VL: each axis a RoPE of rotary dim D/2
  alternating,  ///< Pixtral / Mistral: the row takes the even, the column the odd frequencies of dim D
};
/// The spellings of vision_rope_layout (posenc/enum_names.hpp: to_string, parse).
template <>
struct enum_names<vision_rope_layout> {
  /// Canonical name first per value, then accepted aliases.
  static constexpr enum_name<vision_rope_layout> list[] = {{vision_rope_layout::split, "split"},
                                                            {vision_rope_layout::alternating, "alternating"}};
};

/// The 2D RoPE of a vision tower with head dim D (D % 4 == 0): pairs [0, D/4) turn by the patch row times
/// their frequency, pairs [D/4, D/2) by the column; the frequencies as `layout` (file comment; HF
/// VisionRotaryEmbedding for split, PixtralRotaryEmbedding for alternating). `style`: half_split for Hugging
/// Face checkpoints (rotate_half), interleaved for Mistral's own format (mistral-inference rotates adjacent
/// pairs as complex numbers, vLLM's Pixtral for params.json models). Into `out`; invalid_argument, `out`
/// unchanged, on a base not finite and > 1 or D not a positive multiple of 4; out_of_memory if the tables
/// cannot be allocated.
///
/// **Example**
/// ```
/// posenc::mrope_plan p;                                       // Pixtral-12B: D = 64, base 10000
/// posenc::try_make_vision_rope_plan(64, 10000.0, posenc::vision_rope_layout::alternating,
///                                   posenc::rope_style::half_split, p);
/// posenc::apply_mrope(p, q, posenc::mrope_positions::shared(ids.data(), L));  // ids from vision_positions
/// ```
inline status try_make_vision_rope_plan(index_t head_dim, double base, vision_rope_layout layout, rope_style style,
                                        mrope_plan& out) noexcept {
  constexpr const char* fn = "make_vision_rope_plan";
  POSENC_TRY(detail::check_base(fn, base));
  if (head_dim <= 0 || head_dim % 4 != 0)
    return detail::fail(fn, "head_dim=", head_dim, " must be a positive multiple of 4 (D/4 pairs per axis)");
  const index_t q = head_dim / 4;
  rope_plan freqs;
  if (layout == vision_rope_layout::split) {
    POSENC_TRY(try_make_sectioned_rope_plan(head_dim, base, {0, q, q}, style, freqs));
  } else {
    POSENC_TRY(detail::guard_alloc(fn, [&]() -> status {
      std::vector<double> w(static_cast<std::size_t>(2 * q));
      for (index_t j = 0; j < q; ++j) {
        w[static_cast<std::size_t>(j)] = detail::math::inv_freq(base, 2 * j, head_dim);
        w[static_cast<std::size_t>(q + j)] = detail::math::inv_freq(base, 2 * j + 1, head_dim);
      }
      return rope_plan::try_create(head_dim, std::move(w), style, 0, 1.0, 1.0, freqs);
    }));
  }
  return mrope_plan::try_create(std::move(freqs), {0, q, q}, mrope_layout::chunked, out);
}

/// The plan of try_make_vision_rope_plan; throws argument_error where that fails.
inline mrope_plan make_vision_rope_plan(index_t head_dim, double base, vision_rope_layout layout,
                                        rope_style style = rope_style::half_split) {
  mrope_plan p;
  detail::throw_if_error(try_make_vision_rope_plan(head_dim, base, layout, style, p));
  return p;
}

/// The (3, L) positions of `frames` frames of a grid_h x grid_w patch grid, L = frames * grid_h * grid_w, in
/// the tower's token order: t = 0, h = the patch row, w = the patch column. merge = 1: row-major (Pixtral,
/// HF position_ids_in_meshgrid). merge = m > 1: in m x m blocks, block rows, then block columns, then the
/// block's rows and columns (HF Qwen2-VL / Qwen2.5-VL rot_pos_emb, so that the merger's m*m neighbours are
/// consecutive); every frame repeats the grid. Into `out` (resized); invalid_argument, `out` unchanged, on a
/// count <= 0, grid sides not divisible by merge, or L past 2^40 tokens.
inline status try_vision_positions(index_t frames, index_t grid_h, index_t grid_w, index_t merge,
                                   std::vector<std::int64_t>& out) noexcept {
  constexpr const char* fn = "vision_positions";
  if (frames <= 0 || grid_h <= 0 || grid_w <= 0 || merge <= 0)
    return detail::fail(fn, "frames=", frames, ", grid_h=", grid_h, ", grid_w=", grid_w, ", merge=", merge,
                        " must all be > 0");
  if (grid_h % merge != 0 || grid_w % merge != 0)
    return detail::fail(fn, "grid ", grid_h, "x", grid_w, " is not divisible by merge=", merge);
  constexpr index_t cap = index_t{1} << 40;
  if (grid_h > cap / grid_w || frames > cap / (grid_h * grid_w))
    return detail::fail(fn, "frames*grid_h*grid_w exceeds 2^40 tokens");
  const index_t per_frame = grid_h * grid_w, l = frames * per_frame;
  return detail::guard_alloc(fn, [&]() -> status {
    std::vector<std::int64_t> ids(static_cast<std::size_t>(3 * l), 0);
    index_t k = 0;
    for (index_t bh = 0; bh < grid_h / merge; ++bh)
      for (index_t bw = 0; bw < grid_w / merge; ++bw)
        for (index_t i = 0; i < merge; ++i)
          for (index_t j = 0; j < merge; ++j, ++k) {
            ids[static_cast<std::size_t>(l + k)] = bh * merge + i;
            ids[static_cast<std::size_t>(2 * l + k)] = bw * merge + j;
          }
    for (index_t f = 1; f < frames; ++f)
      for (index_t a = 1; a < 3; ++a)
        for (index_t i = 0; i < per_frame; ++i)
          ids[static_cast<std::size_t>(a * l + f * per_frame + i)] = ids[static_cast<std::size_t>(a * l + i)];
    out = std::move(ids);
    return {};
  });
}

/// One block of a vision tower.
struct vision_layer {
  /// Attention within windows of window x window patches (Qwen2.5-VL: the blocks not in
  /// `fullatt_block_indexes`); false: every patch of the image (or frame) attends to every other.
  bool windowed = false;
  /// The window's side in patches (Qwen2.5-VL: window_size / spatial_merge_size / patch_size merged units of
  /// spatial_merge_size patches each, HF get_window_index); 0 when not windowed.
  index_t window = 0;
};

/// A vision tower's positional treatment, from try_vision_plan_from_hf. Every block rotates q and k with the
/// same 2D RoPE (make_rope); the blocks differ only in their attention.
///
/// **Example**
/// ```
/// posenc::vision_positional_plan v;
/// if (posenc::status s = posenc::try_vision_plan_from_hf_file("config.json", v); !s) return s;
/// const posenc::mrope_plan rope = v.make_rope();
/// std::vector<std::int64_t> ids = posenc::vision_positions(1, grid_h, grid_w, v.spatial_merge_size);
/// ```
struct vision_positional_plan {
  /// The family: "qwen2_vl", "qwen2_5_vl" or "pixtral".
  std::string model_type;
  /// D, the head dim of the tower's attention.
  index_t head_dim = 0;
  /// The RoPE base (Pixtral `rope_theta`; Qwen's towers fix 10000).
  double base = 10000.0;
  /// How the row and column share the frequencies.
  vision_rope_layout layout = vision_rope_layout::split;
  /// Pair style of the checkpoint (half_split for Hugging Face weights).
  rope_style style = rope_style::half_split;
  /// Pixels per patch side (`patch_size`).
  index_t patch_size = 0;
  /// Patches per merged token side (`spatial_merge_size`; 1 without a merger): the positions' block order.
  index_t spatial_merge_size = 1;
  /// The largest grid side the reference's table covers (Pixtral image_size / patch_size); 0: unbounded.
  index_t max_patches_per_side = 0;
  /// One entry per block (`depth` or `num_hidden_layers`).
  std::vector<vision_layer> layers;

  /// The number of blocks.
  index_t num_layers() const noexcept { return static_cast<index_t>(layers.size()); }
  /// ok when i is a block, else invalid_argument naming i and the count.
  status check_layer(index_t i) const {
    if (i < 0 || i >= num_layers())
      return detail::fail("posenc::vision_positional_plan::layer", "layer ", i, " is not in [0, ", num_layers(), ")");
    return {};
  }
  /// Block i; throws argument_error when i is not in [0, num_layers()).
  const vision_layer& layer(index_t i) const {
    detail::throw_if_error(check_layer(i));
    return layers[static_cast<std::size_t>(i)];
  }
  /// The tower's 2D RoPE (try_make_vision_rope_plan of its head dim, base, layout and style).
  status try_make_rope(mrope_plan& out) const noexcept {
    return try_make_vision_rope_plan(head_dim, base, layout, style, out);
  }
  /// try_make_rope; throws argument_error where that fails.
  mrope_plan make_rope() const { return make_vision_rope_plan(head_dim, base, layout, style); }
};

/// try_vision_positions; throws argument_error where that fails.
inline std::vector<std::int64_t> vision_positions(index_t frames, index_t grid_h, index_t grid_w, index_t merge = 1) {
  std::vector<std::int64_t> ids;
  detail::throw_if_error(try_vision_positions(frames, grid_h, grid_w, merge, ids));
  return ids;
}

POSENC_END_NAMESPACE
