// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// ALiBi on NVIDIA GPUs (Press et al. 2022; formulas, forms, masks and the tensor-parallel head range as
// posenc/alibi.hpp): the bias tensor and in-place addition to attention scores in device memory, on the
// caller's stream. Per-block work: detail/gpu/alibi_body.hpp (tested on the CPU by tests/gpu_body_test.cpp);
// checks: posenc/alibi_config.hpp, the CPU API's. Query positions and slopes in device memory are checked for
// shape and pointers only (their values stay on the device).
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <climits>
#include <cstddef>
#include <type_traits>

#include "posenc/alibi_config.hpp"
#include "posenc/config.hpp"
#include "posenc/cuda/common.cuh"
#include "posenc/detail/check.hpp"
#include "posenc/detail/gpu/alibi_body.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/positions.hpp"
#include "posenc/status.hpp"
#include "posenc/tensor_view.hpp"

POSENC_BEGIN_NAMESPACE
namespace cuda {
namespace detail {

/// One launch over the rows of a checked [N, H, Lq, Lk] view.
template <class T, class Slopes>
status alibi_launch(const char* fn, const strided_view<T, 4>& v, const Slopes& slopes, const positions& pos, bool add,
                    bool symmetric, bool causal, alibi_arithmetic arithmetic, cudaStream_t stream) {
  using P = posenc::detail::gpu::alibi_params<T, Slopes>;
  const P p{posenc::detail::gpu::pod_of(v), slopes, pos, add, symmetric, causal, arithmetic == alibi_arithmetic::fp32};
  return launch_blocks(fn, &body_kernel<P, &posenc::detail::gpu::alibi_block<T, Slopes>>, p, v.extent(0) * v.extent(1) * v.extent(2), body_threads, "N * H * Lq",
                       "rows", stream);
}

}  // namespace detail

/// Writes the bias [H_local, Lq, Lk] (device memory) of the shard's heads for queries at q(i) = query_pos.at(0, i):
/// slope_h * (j - q(i)), -slope_h * |...| in the symmetric form, -infinity after the query under
/// a causal mask; formed in double, rounded once (cfg.arithmetic fp32: in float). As posenc::alibi_bias; returns invalid_argument (nothing
/// launched) or device_error.
template <class T>
status try_alibi_bias(const alibi_config& cfg, strided_view<T, 3> out, const positions& query_pos = positions::offset(0),
                      alibi_mask mask = alibi_mask::none, cudaStream_t stream = nullptr) noexcept {
  constexpr const char* fn = "cuda::alibi_bias";
  std::array<index_t, 2> r{};
  POSENC_TRY(posenc::detail::check_alibi_config(fn, cfg, r, posenc::detail::is_double_scores_v<T>));
  POSENC_TRY(posenc::detail::check_alibi_mask(fn, mask));
  POSENC_TRY(posenc::detail::check_view(fn, "out", out, true));
  const strided_view<T, 4> v = posenc::detail::as_scores_view(out);
  const positions& pos = query_pos;
  index_t max_q = -1;
  POSENC_TRY(posenc::detail::check_alibi_scores(fn, "out", v, r[1] - r[0], pos, max_q, false));
  if (max_q < 0) return {};
  return detail::alibi_launch(fn, v, posenc::detail::alibi_formula_slopes{cfg.num_heads, r[0], cfg.max_bias}, pos, false,
                              cfg.form == alibi_form::symmetric, mask == alibi_mask::causal, cfg.arithmetic, stream);
}

/// Adds the bias to attention scores [N, H_local, Lq, Lk] (or [H_local, Lq, Lk]) in device memory, in place:
/// fma(slope_h, j - q(n, i), score) in double, rounded once (cfg.arithmetic fp32: in float); -infinity after the
/// query under a causal mask.
/// Query positions: any posenc::positions form (arrays in device memory). As posenc::add_alibi_bias.
template <class T, std::size_t R>
status try_add_alibi_bias(const alibi_config& cfg, strided_view<T, R> scores, const positions& query_pos = positions::offset(0),
                          alibi_mask mask = alibi_mask::none, cudaStream_t stream = nullptr) noexcept {
  constexpr const char* fn = "cuda::add_alibi_bias";
  std::array<index_t, 2> r{};
  POSENC_TRY(posenc::detail::check_alibi_config(fn, cfg, r, posenc::detail::is_double_scores_v<T>));
  POSENC_TRY(posenc::detail::check_alibi_mask(fn, mask));
  POSENC_TRY(posenc::detail::check_view(fn, "scores", scores, true));
  const strided_view<T, 4> v = posenc::detail::as_scores_view(scores);
  index_t max_q = -1;
  POSENC_TRY(posenc::detail::check_alibi_scores(fn, "scores", v, r[1] - r[0], query_pos, max_q, false));
  if (max_q < 0) return {};
  return detail::alibi_launch(fn, v, posenc::detail::alibi_formula_slopes{cfg.num_heads, r[0], cfg.max_bias}, query_pos,
                              true, cfg.form == alibi_form::symmetric, mask == alibi_mask::causal, cfg.arithmetic,
                              stream);
}

/// add_alibi_bias with explicit slopes in device memory: [N, H_local] (per batch row) or [H_local], any storage
/// type. Their shape is checked; their values are not read on the host (the CPU form also rejects non-finite
/// slopes).
template <class S, std::size_t RS, class T, std::size_t R>
status try_add_alibi_bias(strided_view<const S, RS> slopes, strided_view<T, R> scores,
                          const positions& query_pos = positions::offset(0), alibi_mask mask = alibi_mask::none,
                          alibi_form form = alibi_form::linear,
                          alibi_arithmetic arithmetic = alibi_arithmetic::exact, cudaStream_t stream = nullptr) noexcept {
  static_assert(RS == 1 || RS == 2, "posenc::cuda::add_alibi_bias: slopes are [H_local] or [N, H_local]");
  constexpr const char* fn = "cuda::add_alibi_bias";
  POSENC_TRY(posenc::detail::check_alibi_mask(fn, mask));
  POSENC_TRY(posenc::detail::check_alibi_form(fn, form));
  POSENC_TRY(posenc::detail::check_alibi_arithmetic(fn, arithmetic, posenc::detail::is_double_scores_v<T>));
  POSENC_TRY(posenc::detail::check_view(fn, "scores", scores, true));
  POSENC_TRY(posenc::detail::check_view(fn, "slopes", slopes, false));
  const strided_view<T, 4> v = posenc::detail::as_scores_view(scores);
  posenc::detail::alibi_view_slopes<S> sv{slopes.data(), {0, 0}};
  if constexpr (RS == 1) {
    if (slopes.extent(0) != v.extent(1))
      return detail::fail(fn, "slopes length=", slopes.extent(0), " does not match the scores' ", v.extent(1), " heads");
    sv.stride[1] = slopes.stride(0);
  } else {
    if (slopes.extent(0) != v.extent(0) || slopes.extent(1) != v.extent(1))
      return detail::fail(fn, "slopes shape (", slopes.extent(0), ", ", slopes.extent(1),
                          ") does not match scores (N, H)=(", v.extent(0), ", ", v.extent(1), ")");
    sv.stride[0] = slopes.stride(0);
    sv.stride[1] = slopes.stride(1);
  }
  if (posenc::detail::spans_overlap(slopes, v)) return detail::fail(fn, "slopes overlap the scores");
  index_t max_q = -1;
  POSENC_TRY(posenc::detail::check_alibi_scores(fn, "scores", v, v.extent(1), query_pos, max_q, false));
  if (max_q < 0) return {};
  return detail::alibi_launch(fn, v, sv, query_pos, true, form == alibi_form::symmetric, mask == alibi_mask::causal,
                              arithmetic, stream);
}

/// try_alibi_bias, throwing argument_error or device_error.
template <class T>
void alibi_bias(const alibi_config& cfg, strided_view<T, 3> out, const positions& query_pos = positions::offset(0),
                alibi_mask mask = alibi_mask::none, cudaStream_t stream = nullptr) {
  posenc::detail::throw_if_error(try_alibi_bias(cfg, out, query_pos, mask, stream));
}
/// try_add_alibi_bias (configuration), throwing.
template <class T, std::size_t R>
void add_alibi_bias(const alibi_config& cfg, strided_view<T, R> scores, const positions& query_pos = positions::offset(0),
                    alibi_mask mask = alibi_mask::none, cudaStream_t stream = nullptr) {
  posenc::detail::throw_if_error(try_add_alibi_bias(cfg, scores, query_pos, mask, stream));
}
/// try_add_alibi_bias (explicit slopes), throwing.
template <class S, std::size_t RS, class T, std::size_t R>
void add_alibi_bias(strided_view<const S, RS> slopes, strided_view<T, R> scores,
                    const positions& query_pos = positions::offset(0), alibi_mask mask = alibi_mask::none,
                    alibi_form form = alibi_form::linear, alibi_arithmetic arithmetic = alibi_arithmetic::exact,
                    cudaStream_t stream = nullptr) {
  posenc::detail::throw_if_error(try_add_alibi_bias(slopes, scores, query_pos, mask, form, arithmetic, stream));
}

}  // namespace cuda
POSENC_END_NAMESPACE
