// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// Frequencies of the sinusoidal (absolute) position encoding, both conventions in use.
#pragma once

#include <cmath>
#include <cstdint>

#include "posenc/config.hpp"
#include "posenc/detail/math/inv_freq.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail::math {

/// Frequency of pair i of a sinusoidal table of `dim` features.
/// interleaved (Vaswani et al. 2017, "Attention Is All You Need", sec. 3.5): w_i = base^(-2i/D), the RoPE
/// frequency.
/// concat (tensor2tensor `get_timing_signal_1d`, fairseq `SinusoidalPositionalEmbedding.get_embedding`):
/// w_i = base^(-i/(D/2-1)). At D = 2 the exponent is 0/0: tensor2tensor divides by max(D/2-1, 1) and gets
/// w_0 = 1 (fairseq gets NaN); posenc follows tensor2tensor, so D = 2 gives [sin p | cos p] in both layouts.
/// Double throughout; the exponent's rounding moves w by up to ~|exponent| * ln(base) * 2^-53 relative.
POSENC_HOST_DEVICE inline double sinusoid_inv_freq(double base, std::int64_t pair, std::int64_t dim, bool concat) {
  if (!concat) return inv_freq(base, pair, dim);
  const std::int64_t half = dim / 2;
  const std::int64_t den = half > 1 ? half - 1 : 1;
  return std::pow(base, -static_cast<double>(pair) / static_cast<double>(den));
}

}  // namespace detail::math
POSENC_END_NAMESPACE
