// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// The ALiBi kernel, written once over the storage type: one driver walks (batch, head, query) rows of a
// [N, H, Lq, Lk] view and writes or adds slope * (j - q) along the key axis, with q the query's position.
// Writing a bias tensor and adding to attention scores are the same loop (Add = false / true).
#pragma once

#include <cstdint>
#include <limits>

#include "posenc/config.hpp"
#include "posenc/detail/math/alibi_slopes.hpp"
#include "posenc/detail/simd/vec.hpp"
#include "posenc/positions.hpp"
#include "posenc/tensor_view.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail {

/// Slopes from the formula: local head h of a shard is global head head_begin + h; the batch row is ignored.
struct alibi_formula_slopes {
  index_t num_heads;
  index_t head_begin;
  double max_bias;
  double operator()(index_t, index_t h) const { return math::alibi_slope(head_begin + h, num_heads, max_bias); }
};

/// Slopes read from a caller's [N, H] view (a [H] view is passed with batch stride 0), widened to double.
template <class S>
struct alibi_view_slopes {
  strided_view<const S, 2> slopes;
  double operator()(index_t n, index_t h) const { return simd::load_as<double>(slopes(n, h)); }
};

/// Keys [begin, end) of one row: e = slope * (j - query) (Add = false) or e = e + that (Add = true), in
/// double, rounded to T once (Eigen::half and bfloat16 through float, as simd::store_as does everywhere).
/// The symmetric form passes -slope for the keys after the query. Each product is the one
/// math::alibi_bias_value forms; while the distances fit int32 they are converted from int32, which
/// baseline x86-64 (SSE2) converts four at a time (int64 -> double needs AVX-512DQ), so the contiguous
/// branch vectorises.
template <bool Add, class T>
inline void alibi_span(T* row, index_t stride, index_t begin, index_t end, double slope, index_t query) {
  const auto put = [](T& e, double b) {
    if constexpr (Add) {
      e = simd::store_as<T>(simd::load_as<double>(e) + b);
    } else {
      e = simd::store_as<T>(b);
    }
  };
  if (begin >= end) return;
  constexpr index_t lo = std::numeric_limits<std::int32_t>::min();
  constexpr index_t hi = std::numeric_limits<std::int32_t>::max();
  const index_t d0 = begin - query;
  const index_t d1 = end - 1 - query;
  if (stride == 1 && d0 >= lo && d1 <= hi) {
    const auto first = static_cast<std::int32_t>(d0);
    const auto count = static_cast<std::int32_t>(end - begin);
    T* r = row + begin;
    for (std::int32_t k = 0; k < count; ++k) put(r[k], slope * static_cast<double>(first + k));
    return;
  }
  for (index_t j = begin; j < end; ++j) put(row[j * stride], math::alibi_bias_value(slope, j, query, false));
}

/// out[n, h, i, j] (=|+=) slope(n, h) * (j - q), q = pos.at(n, i); -slope * |j - q| when symmetric; -inf where
/// j > q when causal. Each row splits at the query: keys j <= q take the same bias in both forms, keys after it
/// are masked, mirrored (symmetric) or continued (linear), so the inner loops carry no mask test.
/// Preconditions: everything validated by the public entry (extents, positions >= 0, finite slopes).
template <bool Add, class T, class Slopes>
void alibi_apply(const strided_view<T, 4>& out, const Slopes& slopes, const positions& pos, bool symmetric,
                 bool causal) {
  const index_t lk = out.extent(3);
  const index_t sk = out.stride(3);
  constexpr double neg_inf = -std::numeric_limits<double>::infinity();
  for (index_t n = 0; n < out.extent(0); ++n) {
    for (index_t h = 0; h < out.extent(1); ++h) {
      const double slope = slopes(n, h);
      for (index_t i = 0; i < out.extent(2); ++i) {
        T* row = out.data() + n * out.stride(0) + h * out.stride(1) + i * out.stride(2);
        const index_t q = pos.at(n, i);
        const index_t split = q < lk ? q + 1 : lk;  // keys at or before the query
        alibi_span<Add>(row, sk, 0, split, slope, q);  // d <= 0: both forms are slope * d
        if (causal) {
          for (index_t j = split; j < lk; ++j) row[j * sk] = simd::store_as<T>(neg_inf);
        } else {
          alibi_span<Add>(row, sk, split, lk, symmetric ? -slope : slope, q);  // symmetric: -slope * |d|
        }
      }
    }
  }
}

}  // namespace detail
POSENC_END_NAMESPACE
