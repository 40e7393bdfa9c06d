// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
#pragma once

#include <cmath>
#include <cstdint>

#include "posenc/config.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail::math {

/// w_i = base^(-2i/R), the RoFormer frequency of pair i (Su et al. 2021, eq. 15). Double throughout: Hugging
/// Face forms it in float32, which moves the angle by up to ~0.05 rad at position 10^6 (docs/exactness.md).
POSENC_HOST_DEVICE inline double inv_freq(double base, std::int64_t pair, std::int64_t rotary_dim) {
  return std::pow(base, -2.0 * static_cast<double>(pair) / static_cast<double>(rotary_dim));
}

/// theta = p * w in double. Exact to ~p*w*2^-53 rad; positions past 2^53 are accepted and lose low bits the
/// way any double frequency would.
POSENC_HOST_DEVICE inline double angle(std::int64_t position, double w) { return static_cast<double>(position) * w; }

}  // namespace detail::math
POSENC_END_NAMESPACE
