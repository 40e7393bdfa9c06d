// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// Instruction-set tags and the element conversions every kernel shares. The ISA is a type, so a kernel
// instantiated for AVX2 in one translation unit and for scalar in another never share a mangled name.
// Only the scalar backend exists so far; the vector backends implement the same kernels' op list.
#pragma once

#include <type_traits>

#include <Eigen/Core>

#include "posenc/config.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail::simd {

struct scalar {
  static constexpr const char* name = "scalar";
};

/// Arithmetic type of the kernels for storage type T: double for double, float for everything narrower
/// (Eigen::half and Eigen::bfloat16 are widened on load and rounded once on store).
template <class T>
using acc_t = std::conditional_t<std::is_same_v<std::remove_cv_t<T>, double>, double, float>;

template <class T>
inline constexpr bool is_narrow_float_v =
    std::is_same_v<std::remove_cv_t<T>, Eigen::half> || std::is_same_v<std::remove_cv_t<T>, Eigen::bfloat16>;

template <class A, class T>
POSENC_HOST_DEVICE inline A load_as(const T& v) {
  if constexpr (is_narrow_float_v<T>) {
    return static_cast<A>(static_cast<float>(v));
  } else {
    return static_cast<A>(v);
  }
}

template <class T, class A>
POSENC_HOST_DEVICE inline T store_as(A v) {
  if constexpr (is_narrow_float_v<T>) {
    return T(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

}  // namespace detail::simd
POSENC_END_NAMESPACE
