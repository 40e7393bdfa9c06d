// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// Reproducible random numbers for dropout and initialisation. std::mt19937_64 is specified bit for bit by
// the C++ standard; the distributions are not (std::normal_distribution and std::uniform_real_distribution
// give different values under libstdc++, libc++ and MSVC), so posenc maps the raw 64-bit draws itself.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>

#include "posenc/config.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail::math {

/// Uniform in [0, 1): the top 53 bits of one draw times 2^-53 (exact, no rounding).
inline double uniform01(std::mt19937_64& g) { return static_cast<double>(g() >> 11) * 0x1.0p-53; }

/// Standard normal values by the Box-Muller transform (Box & Muller 1958) over std::mt19937_64(seed): each
/// pair of draws u1 = (a + 1) * 2^-53 in (0, 1], u2 = b * 2^-53 in [0, 1) (a, b the top 53 bits of two
/// consecutive draws) gives r cos(2 pi u2) and then r sin(2 pi u2), r = sqrt(-2 ln u1). The stream of draws is
/// identical everywhere; the values depend on the platform's log/cos/sin only within their last bit (glibc's
/// are correctly rounded in practice), which disappears once scaled and rounded to float.
class normal_generator {
 public:
  explicit normal_generator(std::uint64_t seed) : g_(seed) {}

  double operator()() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    constexpr double two_pi = 6.283185307179586476925286766559;
    const double u1 = static_cast<double>((g_() >> 11) + 1) * 0x1.0p-53;
    const double u2 = static_cast<double>(g_() >> 11) * 0x1.0p-53;
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(two_pi * u2);
    has_spare_ = true;
    return r * std::cos(two_pi * u2);
  }

 private:
  std::mt19937_64 g_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

}  // namespace detail::math
POSENC_END_NAMESPACE
