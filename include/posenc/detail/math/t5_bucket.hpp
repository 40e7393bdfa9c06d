// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// T5's relative-position buckets (Raffel et al. 2020; reference: Mesh TensorFlow
// `_relative_position_bucket`, Hugging Face `T5Attention._relative_position_bucket`), bit for bit.
#pragma once

// The bucket of a distance is floor(log(d / e) / log(M / e) * (nb - e)) in IEEE float32 and double, exactly as
// the reference rounds it; -ffast-math (-Ofast) lets the compiler reorder and contract that arithmetic, which
// moves distances across bucket boundaries. Refuse such a build rather than return other buckets.
#if defined(__FAST_MATH__)
#error "posenc: T5 relative-position buckets depend on IEEE rounding; this translation unit is built with -ffast-math (or -Ofast): build it without"
#endif

#include <cmath>
#include <cstdint>

#include "posenc/config.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail::math {

/// The bucket of a relative position r = key - query, with the reference's float32 arithmetic:
///   bidirectional: nb = num_buckets / 2 (floor), offset nb if r > 0, n = |r|;  causal: nb = num_buckets,
///   n = max(-r, 0). e = nb / 2. n < e: bucket n. Otherwise
///   e + trunc(logf(float(n) / float(e)) / float(log(double(max_distance) / e)) * float(nb - e)),
///   capped at nb - 1.
/// Every step is a float32 operation as in the reference (PyTorch: int64 -> float32, float32 division by the
/// Python int e, torch.log in float32, float32 division by the Python float log(max_distance/e) and
/// multiplication by the int nb - e, .to(long) truncates). These roundings decide the bucket where the exact
/// value is an integer (n = 16, 32, 64 for the defaults).
/// logf is taken as the correctly rounded float32 logarithm, float(log(double(q))). glibc's logf is not
/// correctly rounded everywhere, but gives the same bucket for every num_buckets <= 128, max_distance <= 1024
/// and n <= max_distance (checked exhaustively while writing this). CUDA PyTorch divides by a scalar as a
/// multiplication by its float32 reciprocal, which changes boundary buckets of some non-default
/// configurations (e.g. num_buckets 4 causal, max_distance 72, n 12: 3 here, 2 there); posenc follows the CPU
/// reference. Needs FLT_EVAL_METHOD == 0 (SSE, NEON; not x87) and no -ffast-math.
struct t5_bucketer {
  std::int64_t nb = 0;           ///< buckets per direction
  std::int64_t exact = 0;        ///< e = nb / 2, the exact buckets (>= 1)
  bool bidirectional = true;
  float exact_f = 0.0f;          ///< float(e)
  float log_ratio = 0.0f;        ///< float(log(double(max_distance) / double(e))), Python's double then float32
  float span = 0.0f;             ///< float(nb - e)

  /// Preconditions (checked by the public entries): num_buckets / (bidirectional ? 2 : 1) >= 2,
  /// max_distance > e.
  t5_bucketer(bool bidir, std::int64_t num_buckets, std::int64_t max_distance)
      : nb(bidir ? num_buckets / 2 : num_buckets),
        exact(nb / 2),
        bidirectional(bidir),
        exact_f(static_cast<float>(exact)),
        log_ratio(static_cast<float>(std::log(static_cast<double>(max_distance) / static_cast<double>(exact)))),
        span(static_cast<float>(nb - exact)) {}

  POSENC_HOST_DEVICE std::int64_t operator()(std::int64_t r) const {
    std::int64_t base = 0;
    std::uint64_t n = 0;  // |r| without overflow at INT64_MIN
    const std::uint64_t mag = r < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(r) : static_cast<std::uint64_t>(r);
    if (bidirectional) {
      if (r > 0) base = nb;
      n = mag;
    } else {
      n = r < 0 ? mag : 0;
    }
    if (n < static_cast<std::uint64_t>(exact)) return base + static_cast<std::int64_t>(n);
    const float q = static_cast<float>(n) / exact_f;
    const float l = static_cast<float>(std::log(static_cast<double>(q)));
    const float v = l / log_ratio * span;
    // min(e + trunc(v), nb - 1): decided before the conversion so that a huge v never overflows int64.
    if (static_cast<double>(v) >= static_cast<double>(nb - 1 - exact)) return base + nb - 1;
    return base + exact + static_cast<std::int64_t>(v);
  }
};

}  // namespace detail::math
POSENC_END_NAMESPACE
