// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private, include "posenc/detail/simd/vec.hpp"
//
// `vec<A, one<Isa>>`: one lane, the op list of vec.hpp in its order. `one<portable>` (= `scalar`) is the whole
// portable target; `one<avx2>`, `one<avx512>`, `one<neon>` are the loop tails and strided rows of the vector
// targets. Loads and stores take any storage type (static_cast / store_as), so a kernel whose cos/sin type
// differs from its arithmetic type still runs here.
//
// fma and fnma: a vector target's tail fuses them (std::fma, one rounding, as the target's vector FMA; inlined
// into the target's functions it is the target's scalar FMA instruction), so a tail rounds exactly as its body
// whatever the compiler contracts (GCC 12 did not contract a*b + c of these baseline functions inlined into an
// AVX2 region: the tails rounded twice where the body rounded once). The portable target's are a*b + c and
// c - a*b: baseline x86-64 has no FMA instruction and a software fma costs ~100 cycles (where the baseline has
// one, as AArch64, the compiler may contract them).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "posenc/config.hpp"

#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#endif

POSENC_BEGIN_NAMESPACE
namespace detail::simd {

template <class I>
struct vec<float, one<I>> {
  static constexpr int width = 1;
  float v;
};
template <class I>
struct vec<double, one<I>> {
  static constexpr int width = 1;
  double v;
};

// ---- load / store ----------------------------------------------------------------------------------------

template <class I, class S>
inline vec<float, one<I>> load(lanes<float, one<I>>, const S* p) {
  return {load_as<float>(*p)};
}
template <class I, class S>
inline vec<double, one<I>> load(lanes<double, one<I>>, const S* p) {
  return {load_as<double>(*p)};
}
template <class A, class I, class S>
inline void store(vec<A, one<I>> x, S* p) {
  *p = store_as<S>(x.v);
}
template <class A, class I, class S>
inline void store2(vec<A, one<I>> a, vec<A, one<I>> b, S* p) {
  store(a, p);
  store(b, p + 1);
}
template <class A, class I>
inline void store_stream(vec<A, one<I>> x, A* p) {
  *p = x.v;
}
template <class A, class I>
inline void stream_fence(lanes<A, one<I>>) {}
template <class A, class I>
inline vec<A, one<I>> load_dup_pairs(lanes<A, one<I>>, const A* p) {
  return {*p};
}
template <class I>
inline vec<float, one<I>> load_u16_bits(lanes<float, one<I>>, const void* p) {
  std::uint16_t h = 0;
  std::memcpy(&h, p, sizeof h);
  const std::uint32_t w = h;
  float f = 0;
  std::memcpy(&f, &w, sizeof f);
  return {f};
}
template <class I>
inline void store_u16_bits(vec<float, one<I>> x, void* p) {
  std::uint32_t w = 0;
  std::memcpy(&w, &x.v, sizeof w);
  const auto h = static_cast<std::uint16_t>(w);
  std::memcpy(p, &h, sizeof h);
}

// ---- arithmetic ------------------------------------------------------------------------------------------

template <class A, class I>
inline vec<A, one<I>> set1(lanes<A, one<I>>, A x) {
  return {x};
}
template <class A, class I>
inline vec<A, one<I>> add(vec<A, one<I>> a, vec<A, one<I>> b) {
  return {a.v + b.v};
}
template <class A, class I>
inline vec<A, one<I>> sub(vec<A, one<I>> a, vec<A, one<I>> b) {
  return {a.v - b.v};
}
template <class A, class I>
inline vec<A, one<I>> mul(vec<A, one<I>> a, vec<A, one<I>> b) {
  return {a.v * b.v};
}
template <class A, class I>
inline vec<A, one<I>> div(vec<A, one<I>> a, vec<A, one<I>> b) {
  return {a.v / b.v};
}
template <class A, class I>
inline vec<A, one<I>> fma(vec<A, one<I>> a, vec<A, one<I>> b, vec<A, one<I>> c) {
  return {std::fma(a.v, b.v, c.v)};
}
template <class A, class I>
inline vec<A, one<I>> fnma(vec<A, one<I>> a, vec<A, one<I>> b, vec<A, one<I>> c) {
  return {std::fma(-a.v, b.v, c.v)};
}
// The portable target (more specialised, so chosen for one<portable>): two roundings, see above.
template <class A>
inline vec<A, scalar> fma(vec<A, scalar> a, vec<A, scalar> b, vec<A, scalar> c) {
  return {a.v * b.v + c.v};
}
template <class A>
inline vec<A, scalar> fnma(vec<A, scalar> a, vec<A, scalar> b, vec<A, scalar> c) {
  return {c.v - a.v * b.v};
}
template <class A, class I>
inline vec<A, one<I>> min(vec<A, one<I>> a, vec<A, one<I>> b) {
  return {a.v < b.v ? a.v : b.v};
}
template <class A, class I>
inline vec<A, one<I>> max(vec<A, one<I>> a, vec<A, one<I>> b) {
  return {a.v > b.v ? a.v : b.v};
}
template <class A, class I>
inline A reduce_max(vec<A, one<I>> a) {
  return a.v;
}

// ---- pairs and layout (one lane: zip and unzip are the identity pairing) -----------------------------------

template <class A, class I>
inline vec<A, one<I>> zip_lo(vec<A, one<I>> a, vec<A, one<I>>) {
  return a;
}
template <class A, class I>
inline vec<A, one<I>> zip_hi(vec<A, one<I>>, vec<A, one<I>> b) {
  return b;
}
template <class A, class I>
inline vec<A, one<I>> unzip_even(vec<A, one<I>> a, vec<A, one<I>>) {
  return a;
}
template <class A, class I>
inline vec<A, one<I>> unzip_odd(vec<A, one<I>>, vec<A, one<I>> b) {
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
template <class I>
inline vec<double, one<I>> set1_bits(lanes<double, one<I>>, std::uint64_t b) { return {double_of(b)}; }
template <class I>
inline vec<double, one<I>> and_bits(vec<double, one<I>> a, vec<double, one<I>> b) {
  return {double_of(bits_of(a.v) & bits_of(b.v))};
}
template <class I>
inline vec<double, one<I>> xor_bits(vec<double, one<I>> a, vec<double, one<I>> b) {
  return {double_of(bits_of(a.v) ^ bits_of(b.v))};
}
template <class I>
inline vec<double, one<I>> add_bits(vec<double, one<I>> a, vec<double, one<I>> b) {
  return {double_of(bits_of(a.v) + bits_of(b.v))};
}
template <int N, class I>
inline vec<double, one<I>> shl_bits(vec<double, one<I>> a) {
  return {double_of(bits_of(a.v) << N)};
}
template <class I>
inline vec<double, one<I>> blend_sign(vec<double, one<I>> m, vec<double, one<I>> a, vec<double, one<I>> b) {
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
template <class I>
inline vec<float, one<I>> set1_bits(lanes<float, one<I>>, std::uint32_t b) { return {float_of(b)}; }
template <class I>
inline vec<float, one<I>> and_bits(vec<float, one<I>> a, vec<float, one<I>> b) {
  return {float_of(bits_of(a.v) & bits_of(b.v))};
}
template <class I>
inline vec<float, one<I>> or_bits(vec<float, one<I>> a, vec<float, one<I>> b) {
  return {float_of(bits_of(a.v) | bits_of(b.v))};
}
template <class I>
inline vec<float, one<I>> sub_bits(vec<float, one<I>> a, vec<float, one<I>> b) {
  return {float_of(bits_of(a.v) - bits_of(b.v))};
}
template <int N, class I>
inline vec<float, one<I>> shr_bits(vec<float, one<I>> a) {
  return {float_of(bits_of(a.v) >> N)};
}
template <class I>
inline vec<float, one<I>> blend_sign(vec<float, one<I>> m, vec<float, one<I>> a, vec<float, one<I>> b) {
  return (bits_of(m.v) >> 31) != 0 ? b : a;
}
// cvtss2si on x86-64 (baseline SSE2: rounds by MXCSR, as the vector targets' conversions), where std::nearbyint
// is a libm call below SSE4.1; elsewhere nearbyint (one instruction on AArch64).
template <class I>
inline vec<float, one<I>> nearest_int_bits(vec<float, one<I>> a) {
#if defined(__SSE2__) || defined(_M_X64)
  const std::int32_t r = _mm_cvtss_si32(_mm_set_ss(a.v));
#else
  const auto r = a.v == a.v ? static_cast<std::int32_t>(std::nearbyint(a.v)) : 0;  // NaN: 0, as NEON's FCVTNS
#endif
  return {float_of(static_cast<std::uint32_t>(r))};
}
template <class I>
inline void store_u8_bits(vec<float, one<I>> x, std::uint8_t* p) { *p = static_cast<std::uint8_t>(bits_of(x.v)); }
template <class I>
inline void store_u8_bits(vec<float, one<I>> a, vec<float, one<I>> b, vec<float, one<I>> c, vec<float, one<I>> d,
                          std::uint8_t* p) {
  store_u8_bits(a, p);
  store_u8_bits(b, p + 1);
  store_u8_bits(c, p + 2);
  store_u8_bits(d, p + 3);
}

}  // namespace detail::simd
POSENC_END_NAMESPACE
