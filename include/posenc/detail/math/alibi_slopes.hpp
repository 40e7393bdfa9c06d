// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// ALiBi head slopes (Press, Smith, Lewis 2022, "Train Short, Test Long: Attention with Linear Biases Enables
// Input Length Extrapolation", section 3 and its reference `get_slopes` in github.com/ofirpress/attention_with_linear_biases),
// generalised by max_bias as ggml does (ggml_soft_max_ext: m0 = 2^(-max_bias/n), m1 = 2^(-max_bias/2/n),
// slope_h = m0^(h+1) for h < n, else m1^(2(h-n)+1)). BLOOM / Hugging Face `build_alibi_tensor` computes the same
// values for max_bias 8 (base 2^(-8/n), extra_base 2^(-4/n), odd powers of extra_base for the remaining heads).
#pragma once

#include <cmath>
#include <cstdint>

#include "posenc/config.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail::math {

/// The largest power of two <= num_heads (num_heads >= 1): the paper's `closest_power_of_2`.
POSENC_HOST_DEVICE inline std::int64_t alibi_pow2_floor(std::int64_t num_heads) {
  std::int64_t n = 1;
  while (n <= num_heads / 2) n *= 2;  // n*2 <= num_heads without forming n*2 (no overflow near INT64_MAX)
  return n;
}

/// The base-2 exponent of the slope of global head h (0 <= h < num_heads), n = alibi_pow2_floor(num_heads):
///   h < n:  -max_bias * (h + 1) / n           (the geometric sequence of a power-of-two head count)
///   h >= n: -max_bias * (2(h - n) + 1) / (2n)  (every other slope of the 2n-head sequence, interleaving
///                                              between the first n: the paper's `get_slopes(2n)[0::2]`)
/// Both divisions are by powers of two, so the exponent is exact whenever max_bias * (h + 1) and
/// max_bias * (2(h - n) + 1) are (max_bias 8, 16, 1.5, ... and h < 2^49): the slope is then exp2 of an exact
/// argument, one rounding from the true 2^x.
POSENC_HOST_DEVICE inline double alibi_slope_exponent(std::int64_t head, std::int64_t num_heads, double max_bias) {
  const std::int64_t n = alibi_pow2_floor(num_heads);
  if (head < n) return -max_bias * static_cast<double>(head + 1) / static_cast<double>(n);
  return -max_bias * static_cast<double>(2 * (head - n) + 1) / static_cast<double>(2 * n);
}

/// The ALiBi slope of global head h of num_heads, in double. It depends only on (h, num_heads, max_bias), so
/// every tensor-parallel shard computes the same bits for its heads as an unsharded run.
/// Preconditions (checked by the public entries): num_heads >= 1, 0 <= head < num_heads, max_bias finite > 0.
POSENC_HOST_DEVICE inline double alibi_slope(std::int64_t head, std::int64_t num_heads, double max_bias) {
  return std::exp2(alibi_slope_exponent(head, num_heads, max_bias));
}

/// The bias of key position j seen from query position q: slope * (j - q), or -slope * |j - q| (symmetric).
/// The distance is formed in int64 (exact: both are >= 0, so no overflow) and multiplied in double.
POSENC_HOST_DEVICE inline double alibi_bias_value(double slope, std::int64_t key, std::int64_t query, bool symmetric) {
  const std::int64_t d = key - query;
  return slope * static_cast<double>(symmetric && d > 0 ? -d : d);
}

}  // namespace detail::math
POSENC_END_NAMESPACE
