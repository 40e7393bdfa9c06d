// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// What the baseline code and the kernels share about SIMD without any intrinsics: the instruction-set tags,
// lane descriptors, the arithmetic type of a storage type, and the scalar element conversions (load_as,
// store_as). detail/simd/vec.hpp adds the vector types of each ISA on top; public headers include only this.
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

struct portable {};
struct avx2 {};
struct avx512 {};
struct neon {};

/// One lane of target Isa (Highway's CappedTag<T, 1>): the loop tails and strided rows of Isa's kernels. Its
/// ops are Isa's arithmetic on one element, fma fused where Isa's vectors fuse (scalar.hpp), so a tail rounds
/// as the body does and a row's result never depends on where a vector ends.
template <class Isa>
struct one {};
/// The portable target: one lane of no vector unit (its fma is not fused, see scalar.hpp).
using scalar = one<portable>;

template <class Isa>
struct tail_of {
  using type = one<Isa>;
};
template <class Isa>
struct tail_of<one<Isa>> {
  using type = one<Isa>;
};
/// The one-lane ISA of target Isa's tails (the portable target is its own tail).
template <class Isa>
using tail = typename tail_of<Isa>::type;

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
