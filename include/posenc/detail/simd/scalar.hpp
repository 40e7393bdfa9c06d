// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private, include "posenc/detail/simd/vec.hpp"
//
// `vec<A, simd::scalar>`: one lane, the op list of vec.hpp in its order. The whole portable target, and the
// loop tails and strided rows of every vector target (compiled in no region: baseline code, which inlines
// into any target's functions). Loads and stores take any storage type (static_cast / store_as), so a
// kernel whose cos/sin type differs from its arithmetic type still runs here.
//
// fma and fnma are a*b + c and c - a*b, not std::fma: baseline x86-64 has no FMA instruction and a software
// fma costs ~100 cycles. The compiler may still contract them where the function's target has FMA (inlined
// into a vector target's tail), so a tail is fused exactly when its target's vector body is.
#pragma once

#include <cstdint>
#include <cstring>

#include "posenc/config.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail::simd {

template <>
struct vec<float, scalar> {
  static constexpr int width = 1;
  float v;
};
template <>
struct vec<double, scalar> {
  static constexpr int width = 1;
  double v;
};

// ---- load / store ----------------------------------------------------------------------------------------

template <class S>
inline vec<float, scalar> load(lanes<float, scalar>, const S* p) {
  return {load_as<float>(*p)};
}
template <class S>
inline vec<double, scalar> load(lanes<double, scalar>, const S* p) {
  return {load_as<double>(*p)};
}
template <class A, class S>
inline void store(vec<A, scalar> x, S* p) {
  *p = store_as<S>(x.v);
}
template <class A, class S>
inline void store2(vec<A, scalar> a, vec<A, scalar> b, S* p) {
  store(a, p);
  store(b, p + 1);
}
template <class A>
inline vec<A, scalar> load_dup_pairs(lanes<A, scalar>, const A* p) {
  return {*p};
}
inline vec<float, scalar> load_u16_bits(lanes<float, scalar>, const void* p) {
  std::uint16_t h = 0;
  std::memcpy(&h, p, sizeof h);
  const std::uint32_t w = h;
  float f = 0;
  std::memcpy(&f, &w, sizeof f);
  return {f};
}
inline void store_u16_bits(vec<float, scalar> x, void* p) {
  std::uint32_t w = 0;
  std::memcpy(&w, &x.v, sizeof w);
  const auto h = static_cast<std::uint16_t>(w);
  std::memcpy(p, &h, sizeof h);
}

// ---- arithmetic ------------------------------------------------------------------------------------------

template <class A>
inline vec<A, scalar> set1(lanes<A, scalar>, A x) {
  return {x};
}
template <class A>
inline vec<A, scalar> add(vec<A, scalar> a, vec<A, scalar> b) {
  return {a.v + b.v};
}
template <class A>
inline vec<A, scalar> sub(vec<A, scalar> a, vec<A, scalar> b) {
  return {a.v - b.v};
}
template <class A>
inline vec<A, scalar> mul(vec<A, scalar> a, vec<A, scalar> b) {
  return {a.v * b.v};
}
template <class A>
inline vec<A, scalar> div(vec<A, scalar> a, vec<A, scalar> b) {
  return {a.v / b.v};
}
template <class A>
inline vec<A, scalar> fma(vec<A, scalar> a, vec<A, scalar> b, vec<A, scalar> c) {
  return {a.v * b.v + c.v};
}
template <class A>
inline vec<A, scalar> fnma(vec<A, scalar> a, vec<A, scalar> b, vec<A, scalar> c) {
  return {c.v - a.v * b.v};
}
template <class A>
inline vec<A, scalar> min(vec<A, scalar> a, vec<A, scalar> b) {
  return {a.v < b.v ? a.v : b.v};
}
template <class A>
inline vec<A, scalar> max(vec<A, scalar> a, vec<A, scalar> b) {
  return {a.v > b.v ? a.v : b.v};
}

// ---- pairs and layout (one lane: zip and unzip are the identity pairing) -----------------------------------

template <class A>
inline vec<A, scalar> zip_lo(vec<A, scalar> a, vec<A, scalar>) {
  return a;
}
template <class A>
inline vec<A, scalar> zip_hi(vec<A, scalar>, vec<A, scalar> b) {
  return b;
}
template <class A>
inline vec<A, scalar> unzip_even(vec<A, scalar> a, vec<A, scalar>) {
  return a;
}
template <class A>
inline vec<A, scalar> unzip_odd(vec<A, scalar>, vec<A, scalar> b) {
  return b;
}

// ---- bits of double lanes --------------------------------------------------------------------------------

inline std::uint64_t bits_of(double x) {
  std::uint64_t u = 0;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
inline double double_of(std::uint64_t u) {
  double x = 0;
  std::memcpy(&x, &u, sizeof x);
  return x;
}
inline vec<double, scalar> set1_bits(lanes<double, scalar>, std::uint64_t b) { return {double_of(b)}; }
inline vec<double, scalar> and_bits(vec<double, scalar> a, vec<double, scalar> b) {
  return {double_of(bits_of(a.v) & bits_of(b.v))};
}
inline vec<double, scalar> xor_bits(vec<double, scalar> a, vec<double, scalar> b) {
  return {double_of(bits_of(a.v) ^ bits_of(b.v))};
}
inline vec<double, scalar> add_bits(vec<double, scalar> a, vec<double, scalar> b) {
  return {double_of(bits_of(a.v) + bits_of(b.v))};
}
template <int N>
inline vec<double, scalar> shl_bits(vec<double, scalar> a) {
  return {double_of(bits_of(a.v) << N)};
}
inline vec<double, scalar> blend_sign(vec<double, scalar> m, vec<double, scalar> a, vec<double, scalar> b) {
  return (bits_of(m.v) >> 63) != 0 ? b : a;
}

// ---- bits of float lanes ---------------------------------------------------------------------------------

inline std::uint32_t bits_of(float x) {
  std::uint32_t u = 0;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
inline float float_of(std::uint32_t u) {
  float x = 0;
  std::memcpy(&x, &u, sizeof x);
  return x;
}
inline vec<float, scalar> set1_bits(lanes<float, scalar>, std::uint32_t b) { return {float_of(b)}; }
inline vec<float, scalar> and_bits(vec<float, scalar> a, vec<float, scalar> b) {
  return {float_of(bits_of(a.v) & bits_of(b.v))};
}
inline vec<float, scalar> or_bits(vec<float, scalar> a, vec<float, scalar> b) {
  return {float_of(bits_of(a.v) | bits_of(b.v))};
}
inline vec<float, scalar> sub_bits(vec<float, scalar> a, vec<float, scalar> b) {
  return {float_of(bits_of(a.v) - bits_of(b.v))};
}
template <int N>
inline vec<float, scalar> shr_bits(vec<float, scalar> a) {
  return {float_of(bits_of(a.v) >> N)};
}
inline vec<float, scalar> blend_sign(vec<float, scalar> m, vec<float, scalar> a, vec<float, scalar> b) {
  return (bits_of(m.v) >> 31) != 0 ? b : a;
}
inline void store_u8_bits(vec<float, scalar> x, std::uint8_t* p) { *p = static_cast<std::uint8_t>(bits_of(x.v)); }
inline void store_u8_bits(vec<float, scalar> a, vec<float, scalar> b, vec<float, scalar> c, vec<float, scalar> d,
                          std::uint8_t* p) {
  store_u8_bits(a, p);
  store_u8_bits(b, p + 1);
  store_u8_bits(c, p + 2);
  store_u8_bits(d, p + 3);
}

}  // namespace detail::simd
POSENC_END_NAMESPACE
