// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// Instruction-set tags, lane descriptors, the element conversions every kernel shares, and the op list of
// `vec<A, Isa>` (A = float or double). Each ISA file (scalar.hpp, avx2.hpp, avx512.hpp, neon.hpp) implements
// exactly this list, in this order, under the same banners; the vector files inside their target region
// (targets.hpp). Kernels (detail/kernels/*-inl.hpp) are written once over these ops and compiled once per
// target; the ISA is part of every vector type, so no two targets share a mangled name.
//
// Descriptors: `lanes<A, Isa>` names "the vectors of A of Isa"; ops that create a vector take one (Highway's
// Simd<T, N> tags), ops on vectors find the ISA from their arguments by argument-dependent lookup.
//   V::width                                    lanes per vector
//   -- load / store --
//   load(lanes<float, I>, const S*)   -> V      S = float or a 16-bit type (storage.hpp): width elements, widened
//   load(lanes<double, I>, const S*)  -> V      S = double, float, 16-bit                            (exact)
//   store(V, S*)                                 the same S: round to nearest even (double to half/bfloat16
//                                                through float, as store_as), NaN stays NaN, overflow to inf
//   load_dup_pairs(lanes<A, I>, const A*) -> V  width/2 values, each twice: c0 c0 c1 c1 ...
//   load_u16_bits(lanes<float, I>, const void*) width 16-bit patterns zero-extended into the lanes' bits
//   store_u16_bits(V, void*)                     the low 16 bits of each lane back (bit-exact permutations)
//   -- arithmetic --
//   set1(lanes<A, I>, A) -> V
//   add, sub, mul, div(V, V)
//   fma(a, b, c) = a*b + c, fnma(a, b, c) = c - a*b   fused, one rounding (scalar: two roundings, see there)
//   min(a, b), max(a, b)                         b where either is NaN (x86 minpd's rule: pass the bound first)
//   -- pairs and layout --
//   pair_swap(V)                                 x1 x0 x3 x2 ...        (width >= 2: not in scalar.hpp)
//   sign_alternate(V)                            -x0 x1 -x2 x3 ...      (width >= 2: not in scalar.hpp)
//   zip_lo(a, b), zip_hi(a, b)                   first / last width lanes of a0 b0 a1 b1 ...
//   unzip_even(a, b), unzip_odd(a, b)            even / odd lanes of a0 .. a{w-1} b0 .. b{w-1}
//   -- bits of double lanes (vector sincos and exp, detail/kernels/vmath-inl.hpp) --
//   set1_bits(lanes<double, I>, uint64) -> V
//   and_bits(V, V), xor_bits(V, V), add_bits(V, V) (uint64 add, wrapping), shl_bits<N>(V)
//   blend_sign(m, a, b)                          b in the lanes where m's sign bit is set, a elsewhere
// Every target also uses the 1-lane scalar vectors for its loop tails and strided rows (Highway's
// CappedTag<T, 1>): the tail runs the same body, so a row's result never depends on where a vector ends.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "posenc/config.hpp"
#include "posenc/detail/math/half.hpp"
#include "posenc/detail/simd/targets.hpp"
#include "posenc/storage.hpp"

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
struct neon {
  static constexpr const char* name = "neon";
};

/// Descriptor of the vectors of lane type A (float or double) of instruction set Isa.
template <class A, class Isa>
struct lanes {
  using lane_type = A;
  using isa = Isa;
};

/// A SIMD vector of A for Isa; specialised by the ISA files for A = float and double.
template <class A, class Isa>
struct vec;

/// Arithmetic type of a kernel over storage type T: double for double, float for everything narrower
/// (16-bit types are widened on load and rounded once on store).
template <class T>
using acc_t = std::conditional_t<std::is_same_v<std::remove_cv_t<T>, double>, double, float>;

/// Arithmetic type of a kernel reading In and writing Out: double if either is double.
template <class In, class Out>
using acc2_t = std::conditional_t<std::is_same_v<acc_t<In>, double> || std::is_same_v<acc_t<Out>, double>, double, float>;

/// 16-bit storage (storage_format f16 or bf16, posenc/storage.hpp).
template <class T>
inline constexpr bool is_narrow_float_v = detail::is_f16_v<T> || detail::is_bf16_v<T>;

/// The storage types the vector ops load and store.
template <class T>
inline constexpr bool is_storage_v = detail::is_storage_v<T>;

/// Constraints of the ISA files' 16-bit load/store overloads: any type declared f16 or bf16 in storage_traits.
template <class S>
using if_f16 = std::enable_if_t<detail::is_f16_v<S>, int>;
template <class S>
using if_bf16 = std::enable_if_t<detail::is_bf16_v<S>, int>;

template <class A, class T>
POSENC_HOST_DEVICE inline A load_as(const T& v) {
  if constexpr (detail::is_f16_v<T>) {
    return static_cast<A>(math::half_bits_to_float(bits16(v)));
  } else if constexpr (detail::is_bf16_v<T>) {
    return static_cast<A>(math::bf16_bits_to_float(bits16(v)));
  } else {
    return static_cast<A>(v);
  }
}

/// Double to a 16-bit type rounds through float (two roundings, as Eigen's half(double) and the vector stores).
template <class T, class A>
POSENC_HOST_DEVICE inline T store_as(A v) {
  if constexpr (detail::is_f16_v<T>) {
    return from_bits16<T>(math::float_to_half_bits(static_cast<float>(v)));
  } else if constexpr (detail::is_bf16_v<T>) {
    return from_bits16<T>(math::float_to_bf16_bits(static_cast<float>(v)));
  } else {
    return static_cast<T>(v);
  }
}

}  // namespace detail::simd
POSENC_END_NAMESPACE

#include "posenc/detail/simd/scalar.hpp"  // IWYU pragma: export
#if POSENC_TARGET_AVX2
#include "posenc/detail/simd/avx2.hpp"  // IWYU pragma: export
#endif
#if POSENC_TARGET_AVX512
#include "posenc/detail/simd/avx512.hpp"  // IWYU pragma: export
#endif
#if POSENC_TARGET_NEON
#include "posenc/detail/simd/neon.hpp"  // IWYU pragma: export
#endif
