// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
#pragma once

#include <cmath>
#include <cstdint>

#include "posenc/config.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail::math {

/// xPos zeta_i = (2i/R + gamma) / (1 + gamma) (Sun et al. 2022, eq. 9; torchscale XPOS:
/// (arange(0, R, 2) + 0.4 R) / (1.4 R)).
POSENC_HOST_DEVICE inline double xpos_zeta(std::int64_t pair, std::int64_t rotary_dim, double gamma) {
  return (2.0 * static_cast<double>(pair) / static_cast<double>(rotary_dim) + gamma) / (1.0 + gamma);
}

/// ln of the xPos scale zeta^((p - C)/scale_base), formed relative to the centre C in double so that neither
/// zeta^p nor zeta^-p is ever materialised: the scale only over- or underflows where the true value does.
POSENC_HOST_DEVICE inline double xpos_log_scale(double log_zeta, std::int64_t position, std::int64_t center,
                                                double scale_base) {
  // The difference is taken in integers: both are >= 0, so it cannot overflow, and it stays exact.
  return log_zeta * static_cast<double>(position - center) / scale_base;
}

}  // namespace detail::math
POSENC_END_NAMESPACE
