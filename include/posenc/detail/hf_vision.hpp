// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// A Hugging Face config.json -> vision_positional_plan, over the accessor of detail/hf_reader.hpp. Sources
// (transformers configuration_*.py defaults, modeling_*.py vision towers):
//   qwen2_vl (Qwen2VisionTransformerPretrainedModel): vision_config depth (32), embed_dim (1280), num_heads
//     (16), patch_size (14), spatial_merge_size (2); head_dim = embed_dim // num_heads; split 2D RoPE with base
//     10000 (VisionRotaryEmbedding(head_dim // 2)); every block attends per image.
//   qwen2_5_vl (Qwen2_5_VisionTransformerPretrainedModel): depth (32), hidden_size (3584), num_heads (16),
//     patch_size (14), spatial_merge_size (2), window_size (112), fullatt_block_indexes ([7, 15, 23, 31]);
//     head_dim = hidden_size // num_heads; blocks outside fullatt_block_indexes attend within windows of
//     window_size // spatial_merge_size // patch_size merged units (get_window_index).
//   pixtral (PixtralVisionModel; vision_config of llava / mistral3, or a bare pixtral config):
//     num_hidden_layers (24), head_dim (default hidden_size (1024) // num_attention_heads (16)), rope_theta
//     (10000; v5 rope_parameters.rope_theta), image_size (1024), patch_size (16); alternating 2D RoPE
//     (PixtralRotaryEmbedding); tokens row-major (the mistral3 merger runs after the tower); attention per image.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/detail/hf_layers.hpp"
#include "posenc/detail/hf_reader.hpp"
#include "posenc/status.hpp"
#include "posenc/vision_plan.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail::hf {

inline constexpr const char* vision_fn = "vision_plan_from_hf";

/// Reads the vision tower of `root` into `result` (assigned only on success); see the file comment.
template <class A>
status parse_vision(typename A::node root, const hf_options& opt, vision_positional_plan& result) {
  using node = typename A::node;
  if (!A::is_object(root)) return fail(vision_fn, "the config must be a JSON object, got ", A::type_name(root));
  const section<A> top{root, ""};
  const config_key<std::string> root_type = top.string("model_type");
  POSENC_TRY(root_type.error);
  node vc{};
  POSENC_TRY(top.object_or_null("vision_config", vc));
  // A bare vision config (Pixtral's own) is its own tower.
  const section<A> v = vc ? section<A>{vc, "vision_config."} : top;
  const config_key<std::string> vision_type = v.string("model_type");
  POSENC_TRY(vision_type.error);
  const std::string rt = root_type.value.value_or(""), vt = vision_type.value.value_or("");

  vision_positional_plan p;
  if (rt == "qwen2_vl" || rt == "qwen2_5_vl") p.model_type = rt;
  else if (vt == "pixtral" || (!vc && rt == "pixtral")) p.model_type = "pixtral";
  else if (!vc && rt.empty() && vt.empty())
    return fail(vision_fn, "the config has no vision_config (and no model_type naming a vision tower)");
  else
    return fail(vision_fn, "model_type=\"", rt, "\"", vc ? " with vision_config.model_type=\"" + vt + "\"" : std::string(),
                " has no vision tower posenc reads (known: qwen2_vl, qwen2_5_vl, pixtral; docs/models.md)");

  index_t layers = 0, heads = 16;
  if (p.model_type == "pixtral") {
    index_t hidden = 1024, image = 1024;
    POSENC_TRY(positive_or(v, "num_hidden_layers", 24, layers));
    POSENC_TRY(positive_or(v, "hidden_size", 1024, hidden));
    POSENC_TRY(positive_or(v, "num_attention_heads", 16, heads));
    POSENC_TRY(positive_or(v, "head_dim", hidden / heads, p.head_dim));
    POSENC_TRY(positive_or(v, "image_size", 1024, image));
    POSENC_TRY(positive_or(v, "patch_size", 16, p.patch_size));
    node rp{};
    POSENC_TRY(v.object_or_null("rope_parameters", rp));
    const section<A> params{rp, v.name("rope_parameters.")};
    const config_key<double> theta = params.number("rope_theta");
    POSENC_TRY(theta.error);
    POSENC_TRY(number_or(v, "rope_theta", 10000.0, p.base));
    if (theta.value) p.base = *theta.value;
    p.layout = vision_rope_layout::alternating;
    p.max_patches_per_side = image / p.patch_size;
    p.spatial_merge_size = 1;
  } else {
    const bool v25 = p.model_type == "qwen2_5_vl";
    index_t width = 0;
    POSENC_TRY(positive_or(v, "depth", 32, layers));
    POSENC_TRY(positive_or(v, v25 ? "hidden_size" : "embed_dim", v25 ? 3584 : 1280, width));
    POSENC_TRY(positive_or(v, "num_heads", 16, heads));
    POSENC_TRY(positive_or(v, "patch_size", 14, p.patch_size));
    POSENC_TRY(positive_or(v, "spatial_merge_size", 2, p.spatial_merge_size));
    p.head_dim = width / heads;
    p.layout = vision_rope_layout::split;
  }
  if (opt.style) p.style = *opt.style;
  if (p.head_dim <= 0 || p.head_dim % 4 != 0)
    return fail(vision_fn, v.name("head_dim"), "=", p.head_dim, " must be a positive multiple of 4 (2D RoPE)");
  if (!(p.base > 1.0)) return fail(vision_fn, "the vision RoPE base=", p.base, " must be > 1");
  p.layers.resize(static_cast<std::size_t>(layers));

  if (p.model_type == "qwen2_5_vl") {
    index_t window_size = 112;
    POSENC_TRY(positive_or(v, "window_size", 112, window_size));
    const index_t units = window_size / p.spatial_merge_size / p.patch_size;
    if (units == 0)
      return fail(vision_fn, v.name("window_size"), "=", window_size, " is smaller than one merged unit (",
                  p.spatial_merge_size, " x ", p.patch_size, " pixels)");
    const config_key<std::vector<index_t>> full = v.integers("fullatt_block_indexes");
    POSENC_TRY(full.error);
    const std::vector<index_t> full_blocks = full.value.value_or(std::vector<index_t>{7, 15, 23, 31});
    for (vision_layer& l : p.layers) {
      l.windowed = true;
      l.window = units * p.spatial_merge_size;
    }
    for (std::size_t i = 0; i < full_blocks.size(); ++i) {
      if (full_blocks[i] >= layers)
        return fail(vision_fn, full.name, "[", i, "]=", full_blocks[i], " is not a block (depth=", layers, ")");
      p.layers[static_cast<std::size_t>(full_blocks[i])] = vision_layer{};
    }
  }
  result = std::move(p);
  return {};
}

}  // namespace detail::hf
POSENC_END_NAMESPACE
