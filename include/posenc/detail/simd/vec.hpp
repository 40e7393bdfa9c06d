// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// Instruction-set tags, the element conversions every kernel shares, and the op list of `vec<float, Isa>`.
// The ISA is a type, so a kernel instantiated for AVX2 in one translation unit and for scalar in another never
// share a mangled name. Each vector ISA file (avx2.hpp, avx512.hpp) implements exactly the op list below, in
// the same order under the same banners, and compiles to nothing unless the includer's flags enable it
// (POSENC_HAS_AVX2 / POSENC_HAS_AVX512 from config.hpp). Kernels are written once over these ops.
//
// The op list of `vec<float, Isa>` (V below; `Isa{}` is passed as a tag where no vector argument says which):
//   V::width                                   lanes per vector
//   -- load / store --
//   load(Isa, const float*)  -> V              unaligned load of width floats
//   load(Isa, const Eigen::half*) -> V         width halfs widened to float (F16C; scalar loop without it)
//   load(Isa, const Eigen::bfloat16*) -> V     width bfloat16 widened (bits shifted into the high half)
//   load_dup_pairs(Isa, const float*) -> V     width/2 floats, each duplicated: c0 c0 c1 c1 ...
//   store(V, float*)                           unaligned store
//   store(V, Eigen::half*)                     narrowed to half, round to nearest even
//   store(V, Eigen::bfloat16*)                 narrowed to bfloat16, round to nearest even, NaN kept quiet
//   -- arithmetic --
//   set1(Isa, float) -> V                      broadcast
//   add(V, V), sub(V, V), mul(V, V)            lane-wise
//   fma(a, b, c) = a*b + c, fnma(a, b, c) = c - a*b   fused, one rounding
//   -- interleaved pairs --
//   pair_swap(V)                               x1 x0 x3 x2 ...
//   sign_alternate(V)                          -x0 x1 -x2 x3 ...
// Loop tails (fewer than width elements left) and strided rows go to the scalar reference kernel.
#pragma once

#include <type_traits>

#include <Eigen/Core>

#include "posenc/config.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail::simd {

struct scalar {
  static constexpr const char* name = "scalar";
};
struct avx2 {
  static constexpr const char* name = "avx2";
};
struct avx512 {
  static constexpr const char* name = "avx512";
};

/// A SIMD vector of `T` for instruction set `Isa`; specialised only in the ISA files, for T = float.
template <class T, class Isa>
struct vec;

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

#include "posenc/detail/simd/avx2.hpp"    // IWYU pragma: export
#include "posenc/detail/simd/avx512.hpp"  // IWYU pragma: export

POSENC_BEGIN_NAMESPACE
namespace detail {

/// The widest instruction set the includer's flags enable: the static dispatch of every public call.
using best_isa = std::conditional_t<POSENC_HAS_AVX512 != 0, simd::avx512,
                                    std::conditional_t<POSENC_HAS_AVX2 != 0, simd::avx2, simd::scalar>>;

}  // namespace detail
POSENC_END_NAMESPACE
