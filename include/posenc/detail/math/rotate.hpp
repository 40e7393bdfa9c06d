// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
#pragma once

#include "posenc/config.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail::math {

/// Rotation of one pair (a, b) by the angle whose (magnitude-scaled) cosine and sine are c and s:
/// a' = a c - b s, b' = b c + a s (RoFormer eq. 34). The inverse passes -s.
template <class A>
POSENC_HOST_DEVICE inline void rotate_pair(A a, A b, A c, A s, A& out_a, A& out_b) {
  out_a = a * c - b * s;
  out_b = b * c + a * s;
}

}  // namespace detail::math
POSENC_END_NAMESPACE
