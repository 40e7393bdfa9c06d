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
#include <cstring>

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
/// `n` is alibi_pow2_floor(num_heads); the divisions are multiplications by the exact reciprocals of powers of
/// two (the same values, without a divider's latency).
POSENC_HOST_DEVICE inline double alibi_slope_exponent_n(std::int64_t head, std::int64_t n, double max_bias) {
  if (head < n) return -max_bias * static_cast<double>(head + 1) * (1.0 / static_cast<double>(n));
  return -max_bias * static_cast<double>(2 * (head - n) + 1) * (0.5 / static_cast<double>(n));
}
POSENC_HOST_DEVICE inline double alibi_slope_exponent(std::int64_t head, std::int64_t num_heads, double max_bias) {
  return alibi_slope_exponent_n(head, alibi_pow2_floor(num_heads), max_bias);
}

/// v * 2^k for v in [1, 2) and an integral k <= 0: exact while the result is normal (a multiplication by the
/// power of two built from its bits), std::ldexp's rounding below.
POSENC_HOST_DEVICE inline double alibi_scale(double v, double k) {
  if (k < -1022.0) return std::ldexp(v, k < -2000.0 ? -2000 : static_cast<int>(k));
  const auto bits = static_cast<std::uint64_t>(static_cast<std::int64_t>(k) + 1023) << 52;
  double p = 0.0;
  std::memcpy(&p, &bits, sizeof p);
  return v * p;
}

/// The ALiBi slope of global head h of num_heads, in double: 2^x for x = alibi_slope_exponent, evaluated as
/// exp2(f) * 2^k with k = floor(x) and f = x - k in [0, 1) (both exact), so that heads whose exponents share a
/// fractional part share one exp2 (alibi_slopes_into: 4 calls for 32 heads of max_bias 8). It depends only on
/// (h, num_heads, max_bias), so every tensor-parallel shard computes the same bits for its heads as an
/// unsharded run. Preconditions (checked by the public entries): num_heads >= 1, 0 <= head < num_heads,
/// max_bias finite > 0.
POSENC_HOST_DEVICE inline double alibi_slope(std::int64_t head, std::int64_t num_heads, double max_bias) {
  const double x = alibi_slope_exponent(head, num_heads, max_bias);
  const double k = std::floor(x);
  return alibi_scale(std::exp2(x - k), k);
}

/// alibi_slope of global heads [head0, head0 + count) into out, one exp2 per distinct fractional part of their
/// exponents among the last eight seen: the same bits as alibi_slope per head.
inline void alibi_slopes_into(std::int64_t head0, std::int64_t count, std::int64_t num_heads, double max_bias,
                              double* out) {
  const std::int64_t n = alibi_pow2_floor(num_heads);
  double frac[8] = {};
  double value[8] = {};
  int seen = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    const double x = alibi_slope_exponent_n(head0 + i, n, max_bias);
    const double k = std::floor(x);
    const double f = x - k;
    int m = 0;
    while (m < seen && m < 8 && frac[m] != f) ++m;
    if (m == seen || m == 8) {
      m = seen % 8;
      frac[m] = f;
      value[m] = std::exp2(f);
      ++seen;
    }
    out[i] = alibi_scale(value[m], k);
  }
}

/// The bias of key position j seen from query position q: slope * (j - q), or -slope * |j - q| (symmetric).
/// The distance is formed in int64 (exact: both are >= 0, so no overflow) and multiplied in double.
POSENC_HOST_DEVICE inline double alibi_bias_value(double slope, std::int64_t key, std::int64_t query, bool symmetric) {
  const std::int64_t d = key - query;
  return slope * static_cast<double>(symmetric && d > 0 ? -d : d);
}

}  // namespace detail::math
POSENC_END_NAMESPACE
