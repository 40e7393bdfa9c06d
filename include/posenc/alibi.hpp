// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// ALiBi, attention with linear biases (Press, Smith, Lewis 2022, "Train Short, Test Long: Attention with
// Linear Biases Enables Input Length Extrapolation"): no position enters q or k; instead head h adds
// slope_h * (j - i) to the attention score of query i and key j. Slopes for any head count (the paper's
// construction, generalised by max_bias as ggml does), a head range for tensor-parallel shards, the bias
// tensor, the symmetric -slope*|j - i| form for encoders, and in-place addition to strided attention scores
// with query offsets for KV caches, an optional causal mask and per-batch slopes.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <type_traits>
#include <utility>

#include "posenc/alibi_config.hpp"
#include "posenc/config.hpp"
#include "posenc/detail/check.hpp"
#include "posenc/detail/kernels/entries.hpp"
#include "posenc/detail/kernels/params.hpp"
#include "posenc/detail/math/alibi_slopes.hpp"
#include "posenc/detail/simd/base.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/positions.hpp"
#include "posenc/status.hpp"
#include "posenc/storage.hpp"
#include "posenc/tensor_view.hpp"

POSENC_BEGIN_NAMESPACE

// Every function below has a try_ form: noexcept, returning a status with the message the throwing form's
// argument_error carries (posenc/status.hpp); nothing is written when it is not ok.

/// The slope of global head `head` of `num_heads`, in double (Press et al. 2022, section 3 and the reference
/// `get_slopes`; ggml_soft_max_ext's max_bias generalisation; BLOOM / HF `build_alibi_tensor` for max_bias 8):
///   n = the largest power of two <= num_heads;
///   slope = 2^(-max_bias * (head + 1) / n)                for head < n,
///   slope = 2^(-max_bias * (2 * (head - n) + 1) / (2n))   otherwise (the odd terms of the 2n-head sequence).
/// Preconditions: num_heads > 0, 0 <= head < num_heads, max_bias finite and > 0.
/// Throws argument_error otherwise.
///
/// **Example**
/// ```
/// posenc::alibi_slope(0, 8);   // 0.5
/// posenc::alibi_slope(5, 6);   // 2^-3: n = 4, between the slopes of heads 0 and 1 (2^-2, 2^-4)
/// ```
///
/// try_alibi_slope (without exceptions): `out` is set on success, unchanged on error. No default arguments (the
/// output comes last).
inline status try_alibi_slope(index_t head, index_t num_heads, double max_bias, double& out) noexcept {
  constexpr const char* fn = "alibi_slope";
  if (num_heads <= 0) return detail::fail(fn, "num_heads=", num_heads, " must be > 0");
  if (!(std::isfinite(max_bias) && max_bias > 0.0))
    return detail::fail(fn, "max_bias=", max_bias, " must be finite and > 0");
  if (head < 0 || head >= num_heads)
    return detail::fail(fn, "head=", head, " is outside [0, num_heads=", num_heads, ")");
  out = detail::math::alibi_slope(head, num_heads, max_bias);
  return {};
}
inline double alibi_slope(index_t head, index_t num_heads, double max_bias = 8.0) {
  double out = 0.0;
  detail::throw_if_error(try_alibi_slope(head, num_heads, max_bias, out));
  return out;
}

/// The number of heads of the configuration's shard, head_end - head_begin (head_end -1 meaning num_heads):
/// the extent the slopes, bias and scores tensors must have along their head axis.
/// Throws argument_error if num_heads <= 0, max_bias is not finite and > 0, or the head range is empty or
/// outside [0, num_heads].
///
/// **Example**
/// ```
/// posenc::alibi_config cfg{40, 8.0, 10, 20};
/// posenc::alibi_local_heads(cfg);   // 10
/// ```
///
/// try_alibi_local_heads (without exceptions): `out` is set on success, unchanged on error.
inline status try_alibi_local_heads(const alibi_config& cfg, index_t& out) noexcept {
  std::array<index_t, 2> r{};
  POSENC_TRY(detail::check_alibi_config("alibi_local_heads", cfg, r));
  out = r[1] - r[0];
  return {};
}
inline index_t alibi_local_heads(const alibi_config& cfg) {
  index_t out = 0;
  detail::throw_if_error(try_alibi_local_heads(cfg, out));
  return out;
}

/// Writes the slopes of the shard's heads: out[k] = alibi_slope(head_begin + k, num_heads, max_bias), formed
/// in double and rounded to T once. Concatenating the outputs of shards that partition [0, num_heads) gives
/// the unsharded slopes bit for bit.
/// `out`: strided_view<T, 1> or a rank-1 Eigen tensor of length alibi_local_heads(cfg); T float, double,
/// Eigen::half or Eigen::bfloat16.
/// Throws argument_error, writing nothing, on a bad configuration (see alibi_local_heads) or a wrong length.
///
/// **Example**
/// ```
/// std::vector<float> s(12);
/// posenc::alibi_slopes({12}, posenc::strided_view<float, 1>(s.data(), {12}));
/// // 2^-1, 2^-2, ..., 2^-8, then 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5
/// ```
template <class X>
status try_alibi_slopes(const alibi_config& cfg, X&& out) noexcept {
  constexpr const char* fn = "alibi_slopes";
  auto v = as_view(std::forward<X>(out));
  using V = decltype(v);
  using T = typename V::element_type;
  static_assert(V::rank == 1, "posenc::alibi_slopes: the output is a rank-1 [H_local] tensor");
  static_assert(!std::is_const_v<T>, "posenc::alibi_slopes: the output must be writable");
  static_assert(detail::is_alibi_dtype_v<T>, "posenc::alibi_slopes: float, double or a 16-bit storage type");
  std::array<index_t, 2> r{};
  POSENC_TRY(detail::check_alibi_config(fn, cfg, r));
  POSENC_TRY(detail::check_view(fn, "out", v, true));
  if (v.extent(0) != r[1] - r[0])
    return detail::fail(fn, "out length=", v.extent(0), " does not match the ", r[1] - r[0], " local heads [", r[0],
                        ", ", r[1], ")");
  for (index_t k = 0; k < v.extent(0); ++k)
    v(k) = detail::simd::store_as<T>(detail::math::alibi_slope(r[0] + k, cfg.num_heads, cfg.max_bias));
  return {};
}
template <class X>
void alibi_slopes(const alibi_config& cfg, X&& out) {
  detail::throw_if_error(try_alibi_slopes(cfg, out));
}

namespace detail {
/// What every CPU ALiBi entry does once its own arguments are checked: the scores against the shard's head count
/// and the query positions (check_alibi_scores), then the rows (Add: added to the scores, else written).
template <bool Add, class T, class Slopes>
status alibi_checked_rows(const char* fn, const char* name, const strided_view<T, 4>& v, index_t heads,
                          const Slopes& slopes, const positions& pos, alibi_form form, alibi_mask mask,
                          alibi_arithmetic arithmetic) {
  index_t max_q = -1;
  POSENC_TRY(check_alibi_scores(fn, name, v, heads, pos, max_q));
  if (max_q < 0) return {};
  run_alibi_rows(std::bool_constant<Add>{}, v, slopes, pos, max_q, form == alibi_form::symmetric,
                 mask == alibi_mask::causal, arithmetic == alibi_arithmetic::fp32);
  return {};
}
}  // namespace detail

/// Writes the ALiBi bias tensor of the shard's heads for Lq queries at positions q(i) = query_pos.at(0, i) and
/// Lk keys at positions j. The bias has no batch dimension, so query_pos describes one sequence: an offset
/// (positions::offset(P): q(i) = P + i; a KV cache of Lk entries with the new queries at its end: P = Lk - Lq),
/// or one id per query (per_token with batch 1), as add_alibi_bias takes them:
///   linear:    out[h, i, j] = slope_h * (j - q(i))
///   symmetric: out[h, i, j] = -slope_h * |j - q(i)|
///   mask causal: out[h, i, j] = -infinity where j > q(i).
/// The distance is formed in int64 and multiplied by the double slope; one rounding to T (cfg.arithmetic fp32:
/// float slope times float distance, see alibi_arithmetic). Source: Press et
/// al. 2022 (ALiBi). llama.cpp's KQ mask holds -|q - j| for ALiBi models and ggml_soft_max_ext scales it by
/// the slope: the same values (the symmetric form where attention is not causal). BLOOM / HF
/// `build_alibi_tensor` adds slope * j instead, dropping the per-row constant -slope * q that softmax
/// ignores; posenc keeps the relative form, so a bias row does not depend on the cache length.
/// `out`: strided_view<T, 3> or a rank-3 Eigen tensor [alibi_local_heads(cfg), Lq, Lk], any strides.
/// Throws argument_error, writing nothing, on a bad configuration, a head extent other than the local head
/// count, query positions that are negative, overflow or do not describe one sequence of Lq queries, a bad
/// mask, or a double output with arithmetic fp32.
///
/// **Example**
/// ```
/// Eigen::Tensor<float, 3, Eigen::RowMajor> bias(6, 1, 18);            // one decode step after 17 tokens
/// posenc::alibi_bias({6}, bias, posenc::positions::offset(17));
/// ```
template <class X>
status try_alibi_bias(const alibi_config& cfg, X&& out, const positions& query_pos = positions::offset(0),
                      alibi_mask mask = alibi_mask::none) noexcept {
  constexpr const char* fn = "alibi_bias";
  const auto v = as_view(std::forward<X>(out));
  static_assert(decltype(v)::rank == 3, "posenc::alibi_bias: the output is a rank-3 [H_local, Lq, Lk] tensor");
  std::array<index_t, 2> r{};
  constexpr bool double_scores = detail::is_double_scores_v<typename decltype(v)::element_type>;
  POSENC_TRY(detail::check_alibi_config(fn, cfg, r, double_scores));
  POSENC_TRY(detail::check_alibi_mask(fn, mask));
  POSENC_TRY(detail::check_view(fn, "out", v, true));
  return detail::alibi_checked_rows<false>(fn, "out", detail::as_scores_view(v), r[1] - r[0],
                                           detail::alibi_formula_slopes{cfg.num_heads, r[0], cfg.max_bias}, query_pos,
                                           cfg.form, mask, cfg.arithmetic);
}
template <class X>
void alibi_bias(const alibi_config& cfg, X&& out, const positions& query_pos = positions::offset(0),
                alibi_mask mask = alibi_mask::none) {
  detail::throw_if_error(try_alibi_bias<X&>(cfg, out, query_pos, mask));
}

/// Adds the ALiBi bias to attention scores in place, before the softmax:
///   scores[n, h, i, j] += slope_h * (j - q(n, i))        (symmetric form: -slope_h * |j - q(n, i)|)
/// where q(n, i) = query_pos.at(n, i) is the position of query i of batch row n and key j sits at position
/// j. With mask causal, scores with j > q(n, i) are set to -infinity instead. Each element is widened to
/// double, updated as fma(slope_h, j - q, score) with one rounding (the AVX2, AVX-512 and NEON kernels; the
/// portable kernel of a CPU without FMA rounds the product first, at most 1 ulp of double apart), and rounded
/// to T once. With cfg.arithmetic = alibi_arithmetic::fp32 (float and 16-bit scores): fma(float(slope_h),
/// float(j - q), score) in float, one rounding, the same bits on every target: what a float32 engine computes,
/// at twice the lanes.
/// Query positions: positions::offset(P) (a KV cache of P entries before the Lq new queries, the same for
/// every row), positions::per_sequence (continuous batching: row n has its own cache length) or
/// positions::per_token (an explicit position per query, e.g. speculative decoding trees). Only j - q matters,
/// so a sliding-window cache whose first entry is position p0 passes positions shifted by -p0.
/// Source: Press et al. 2022 (ALiBi); llama.cpp / ggml_soft_max_ext (scores + slope * mask, the mask holding
/// -|q - j| and -inf after the query under causal attention).
/// `scores`: strided_view<T, 4> [N, H_local, Lq, Lk] (any strides: e.g. a padded Lk row stride) or [H_local,
/// Lq, Lk] (N = 1), or an Eigen tensor of rank 4 or 3; only the viewed elements are read and written.
/// Throws argument_error, writing nothing, on a bad configuration or mask, a head extent other than the local
/// head count, positions that are negative, overflow, or do not match (N, Lq), or double scores with
/// arithmetic fp32.
///
/// **Example**
/// ```
/// // decode: Lq = 1 new query per sequence after `past` cached tokens, scores [N, H, 1, past + 1]
/// posenc::add_alibi_bias(cfg, scores, posenc::positions::offset(past), posenc::alibi_mask::causal);
/// ```
template <class X>
status try_add_alibi_bias(const alibi_config& cfg, X&& scores, const positions& query_pos = positions::offset(0),
                          alibi_mask mask = alibi_mask::none) noexcept {
  constexpr const char* fn = "add_alibi_bias";
  const auto sv = as_view(std::forward<X>(scores));
  std::array<index_t, 2> r{};
  constexpr bool double_scores = detail::is_double_scores_v<typename decltype(sv)::element_type>;
  POSENC_TRY(detail::check_alibi_config(fn, cfg, r, double_scores));
  POSENC_TRY(detail::check_alibi_mask(fn, mask));
  POSENC_TRY(detail::check_view(fn, "scores", sv, true));
  return detail::alibi_checked_rows<true>(fn, "scores", detail::as_scores_view(sv), r[1] - r[0],
                                          detail::alibi_formula_slopes{cfg.num_heads, r[0], cfg.max_bias}, query_pos,
                                          cfg.form, mask, cfg.arithmetic);
}
template <class X>
void add_alibi_bias(const alibi_config& cfg, X&& scores, const positions& query_pos = positions::offset(0),
                    alibi_mask mask = alibi_mask::none) {
  detail::throw_if_error(try_add_alibi_bias<X&>(cfg, scores, query_pos, mask));
}

/// add_alibi_bias with explicit slopes instead of a configuration: `slopes` is [N, H_local] (per batch row,
/// e.g. requests of different models or head subsets batched together) or [H_local] (the same for every
/// row: slopes a checkpoint stores, or any custom set), of float, double, Eigen::half or Eigen::bfloat16.
/// Everything else as the configuration overload; `form` picks linear or symmetric, `arithmetic` exact or fp32
/// (the slope rounded to float first: exact for float slopes).
/// Throws argument_error, writing nothing, if the slopes' shape does not match (N, H_local) or H_local, a
/// slope is not finite, the slopes overlap the scores, or as the configuration overload.
///
/// **Example**
/// ```
/// float s[2][4] = {{0.5f, 0.25f, 0.125f, 0.0625f}, {0.25f, 0.0625f, 0.015625f, 0.00390625f}};
/// posenc::add_alibi_bias(posenc::strided_view<const float, 2>(&s[0][0], {2, 4}), scores /* [2, 4, Lq, Lk] */,
///                        posenc::positions::per_sequence(past, 2), posenc::alibi_mask::causal);
/// ```
template <class S, class X, class = std::enable_if_t<!std::is_same_v<std::decay_t<S>, alibi_config>>>
status try_add_alibi_bias(S&& slopes, X&& scores, const positions& query_pos = positions::offset(0),
                          alibi_mask mask = alibi_mask::none, alibi_form form = alibi_form::linear,
                          alibi_arithmetic arithmetic = alibi_arithmetic::exact) noexcept {
  constexpr const char* fn = "add_alibi_bias";
  const auto scores_view = as_view(std::forward<X>(scores));
  const auto v = detail::as_scores_view(scores_view);
  const auto sv = as_view(std::forward<S>(slopes));
  using SV = decltype(sv);
  using E = std::remove_const_t<typename SV::element_type>;
  static_assert(SV::rank == 1 || SV::rank == 2, "posenc::add_alibi_bias: slopes are [H_local] or [N, H_local]");
  static_assert(detail::is_alibi_dtype_v<E>, "posenc::add_alibi_bias: slopes of float, double, half or bfloat16");
  POSENC_TRY(detail::check_alibi_mask(fn, mask));
  POSENC_TRY(detail::check_alibi_form(fn, form));
  constexpr bool double_scores = detail::is_double_scores_v<typename decltype(scores_view)::element_type>;
  POSENC_TRY(detail::check_alibi_arithmetic(fn, arithmetic, double_scores));
  POSENC_TRY(detail::check_view(fn, "scores", scores_view, true));
  POSENC_TRY(detail::check_view(fn, "slopes", sv, false));
  using A = std::array<index_t, 2>;
  strided_view<const E, 2> s2;
  if constexpr (SV::rank == 1) {
    if (sv.extent(0) != v.extent(1))
      return detail::fail(fn, "slopes length=", sv.extent(0), " does not match the scores' ", v.extent(1), " heads");
    s2 = strided_view<const E, 2>(sv.data(), A{1, sv.extent(0)}, A{0, sv.stride(0)});
  } else {
    if (sv.extent(0) != v.extent(0) || sv.extent(1) != v.extent(1))
      return detail::fail(fn, "slopes shape (", sv.extent(0), ", ", sv.extent(1), ") does not match scores (N, H)=(",
                          v.extent(0), ", ", v.extent(1), ")");
    s2 = sv;
  }
  for (index_t n = 0; n < s2.extent(0); ++n)
    for (index_t h = 0; h < s2.extent(1); ++h) {
      const double x = detail::simd::load_as<double>(s2(n, h));
      if (!std::isfinite(x)) return detail::fail(fn, "slopes[", n, ", ", h, "]=", x, " is not finite");
    }
  if (detail::spans_overlap(s2, v)) return detail::fail(fn, "slopes overlap the scores");
  // [H_local] slopes have batch row stride 0 (s2 above), so every row reads the same slopes.
  return detail::alibi_checked_rows<true>(fn, "scores", v, v.extent(1),
                                          detail::alibi_view_slopes<E>{s2.data(), {s2.stride(0), s2.stride(1)}},
                                          query_pos, form, mask, arithmetic);
}
template <class S, class X, class = std::enable_if_t<!std::is_same_v<std::decay_t<S>, alibi_config>>>
void add_alibi_bias(S&& slopes, X&& scores, const positions& query_pos = positions::offset(0),
                    alibi_mask mask = alibi_mask::none, alibi_form form = alibi_form::linear,
                    alibi_arithmetic arithmetic = alibi_arithmetic::exact) {
  detail::throw_if_error(try_add_alibi_bias<S&, X&, void>(slopes, scores, query_pos, mask, form, arithmetic));
}

POSENC_END_NAMESPACE
