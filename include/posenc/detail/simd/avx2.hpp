// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private, include "posenc/detail/simd/vec.hpp"
//
// `vec<A, simd::avx2>`: 8 floats in a __m256 or 4 doubles in a __m256d, the op list of vec.hpp in its order,
// compiled inside the AVX2 target region (AVX2 + FMA + F16C) whatever the includer's flags.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "posenc/config.hpp"
#include "posenc/detail/simd/targets.hpp"

POSENC_BEGIN_TARGET_AVX2
POSENC_BEGIN_NAMESPACE
namespace detail::simd {

template <>
struct vec<float, avx2> {
  static constexpr int width = 8;
  __m256 v;
};
template <>
struct vec<double, avx2> {
  static constexpr int width = 4;
  __m256d v;
};

namespace avx2_detail {
// bfloat16 is the high half of a float: widening is a zero-extension and a 16-bit shift, exact.
inline __m128 bf16x4_to_ps(const void* p) {
  return _mm_castsi128_ps(_mm_slli_epi32(_mm_cvtepu16_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))), 16));
}
// Round to nearest even on the integer pattern (bits + 0x7fff + lsb of the kept part, then >> 16), as
// Eigen's float_to_bfloat16_rtne; NaN becomes the quiet NaN 0x7fc0 with its sign, so it cannot round to inf.
// Returns the 16-bit results in the low halves of the 32-bit lanes.
inline __m256i bf16_round(__m256 x) {
  const __m256i bits = _mm256_castps_si256(x);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(bits, _mm256_set1_epi32(0x7fff)), lsb), 16);
  const __m256i qnan = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(0x8000)),
                                       _mm256_set1_epi32(0x7fc0));
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
  return _mm256_blendv_epi8(rounded, qnan, nan);
}
inline __m128i bf16_round(__m128 x) {
  const __m128i bits = _mm_castps_si128(x);
  const __m128i lsb = _mm_and_si128(_mm_srli_epi32(bits, 16), _mm_set1_epi32(1));
  const __m128i rounded = _mm_srli_epi32(_mm_add_epi32(_mm_add_epi32(bits, _mm_set1_epi32(0x7fff)), lsb), 16);
  const __m128i qnan = _mm_or_si128(_mm_and_si128(_mm_srli_epi32(bits, 16), _mm_set1_epi32(0x8000)), _mm_set1_epi32(0x7fc0));
  const __m128i nan = _mm_castps_si128(_mm_cmpunord_ps(x, x));
  return _mm_blendv_epi8(rounded, qnan, nan);
}
// Eight lanes < 0x10000 to eight uint16: the unsigned-saturating pack is a plain narrowing.
inline void store_u16x8(__m256i r, void* p) {
  _mm_storeu_si128(static_cast<__m128i*>(p), _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)));
}
inline void store_u16x4(__m128i r, void* p) { _mm_storel_epi64(static_cast<__m128i*>(p), _mm_packus_epi32(r, r)); }
}  // namespace avx2_detail

// ---- load / store ----------------------------------------------------------------------------------------

inline vec<float, avx2> load(lanes<float, avx2>, const float* p) { return {_mm256_loadu_ps(p)}; }
template <class S, if_f16<S> = 0>
inline vec<float, avx2> load(lanes<float, avx2>, const S* p) {
  return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)))};
}
template <class S, if_bf16<S> = 0>
inline vec<float, avx2> load(lanes<float, avx2>, const S* p) {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return {_mm256_castsi256_ps(_mm256_slli_epi32(w, 16))};
}
inline vec<double, avx2> load(lanes<double, avx2>, const double* p) { return {_mm256_loadu_pd(p)}; }
inline vec<double, avx2> load(lanes<double, avx2>, const float* p) { return {_mm256_cvtps_pd(_mm_loadu_ps(p))}; }
template <class S, if_f16<S> = 0>
inline vec<double, avx2> load(lanes<double, avx2>, const S* p) {
  return {_mm256_cvtps_pd(_mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))))};
}
template <class S, if_bf16<S> = 0>
inline vec<double, avx2> load(lanes<double, avx2>, const S* p) {
  return {_mm256_cvtps_pd(avx2_detail::bf16x4_to_ps(p))};
}

inline void store(vec<float, avx2> x, float* p) { _mm256_storeu_ps(p, x.v); }
template <class S, if_f16<S> = 0>
inline void store(vec<float, avx2> x, S* p) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(x.v, _MM_FROUND_TO_NEAREST_INT));
}
template <class S, if_bf16<S> = 0>
inline void store(vec<float, avx2> x, S* p) { avx2_detail::store_u16x8(avx2_detail::bf16_round(x.v), p); }
inline void store(vec<double, avx2> x, double* p) { _mm256_storeu_pd(p, x.v); }
inline void store(vec<double, avx2> x, float* p) { _mm_storeu_ps(p, _mm256_cvtpd_ps(x.v)); }
template <class S, if_f16<S> = 0>
inline void store(vec<double, avx2> x, S* p) {
  _mm_storel_epi64(reinterpret_cast<__m128i*>(p), _mm_cvtps_ph(_mm256_cvtpd_ps(x.v), _MM_FROUND_TO_NEAREST_INT));
}
template <class S, if_bf16<S> = 0>
inline void store(vec<double, avx2> x, S* p) {
  avx2_detail::store_u16x4(avx2_detail::bf16_round(_mm256_cvtpd_ps(x.v)), p);
}

// Two vectors into 2 * width adjacent elements: two stores, except bfloat16, whose two rounded halves pack in
// one in-lane pack and one permute into a 256-bit store (one vector alone costs an extract and a pack).
template <class A, class S>
inline void store2(vec<A, avx2> a, vec<A, avx2> b, S* p) {
  store(a, p);
  store(b, p + vec<A, avx2>::width);
}
template <class S, if_bf16<S> = 0>
inline void store2(vec<float, avx2> a, vec<float, avx2> b, S* p) {
  const __m256i r = _mm256_packus_epi32(avx2_detail::bf16_round(a.v), avx2_detail::bf16_round(b.v));  // a0-3 b0-3 | a4-7 b4-7
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm256_permute4x64_epi64(r, 0xD8));
}
inline void store_stream(vec<float, avx2> x, float* p) { _mm256_stream_ps(p, x.v); }
inline void store_stream(vec<double, avx2> x, double* p) { _mm256_stream_pd(p, x.v); }
template <class A>
inline void stream_fence(lanes<A, avx2>) {
  _mm_sfence();
}

// A 128-bit broadcast load (no shuffle uop) and one in-lane permute: cross-lane vpermps/vpermpd cost 3 uops
// on AMD Zen 1 and 2, and an in-lane permute is one on every AVX2 core.
inline vec<float, avx2> load_dup_pairs(lanes<float, avx2>, const float* p) {
  const __m256i idx = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
  return {_mm256_permutevar_ps(_mm256_broadcast_ps(reinterpret_cast<const __m128*>(p)), idx)};
}
inline vec<double, avx2> load_dup_pairs(lanes<double, avx2>, const double* p) {
  return {_mm256_permute_pd(_mm256_broadcast_pd(reinterpret_cast<const __m128d*>(p)), 0xC)};
}
inline vec<float, avx2> load_u16_bits(lanes<float, avx2>, const void* p) {
  return {_mm256_castsi256_ps(_mm256_cvtepu16_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p))))};
}
inline void store_u16_bits(vec<float, avx2> x, void* p) { avx2_detail::store_u16x8(_mm256_castps_si256(x.v), p); }

// ---- arithmetic ------------------------------------------------------------------------------------------

inline vec<float, avx2> set1(lanes<float, avx2>, float x) { return {_mm256_set1_ps(x)}; }
inline vec<double, avx2> set1(lanes<double, avx2>, double x) { return {_mm256_set1_pd(x)}; }
inline vec<float, avx2> add(vec<float, avx2> a, vec<float, avx2> b) { return {_mm256_add_ps(a.v, b.v)}; }
inline vec<double, avx2> add(vec<double, avx2> a, vec<double, avx2> b) { return {_mm256_add_pd(a.v, b.v)}; }
inline vec<float, avx2> sub(vec<float, avx2> a, vec<float, avx2> b) { return {_mm256_sub_ps(a.v, b.v)}; }
inline vec<double, avx2> sub(vec<double, avx2> a, vec<double, avx2> b) { return {_mm256_sub_pd(a.v, b.v)}; }
inline vec<float, avx2> mul(vec<float, avx2> a, vec<float, avx2> b) { return {_mm256_mul_ps(a.v, b.v)}; }
inline vec<double, avx2> mul(vec<double, avx2> a, vec<double, avx2> b) { return {_mm256_mul_pd(a.v, b.v)}; }
inline vec<float, avx2> div(vec<float, avx2> a, vec<float, avx2> b) { return {_mm256_div_ps(a.v, b.v)}; }
inline vec<double, avx2> div(vec<double, avx2> a, vec<double, avx2> b) { return {_mm256_div_pd(a.v, b.v)}; }
inline vec<float, avx2> fma(vec<float, avx2> a, vec<float, avx2> b, vec<float, avx2> c) {
  return {_mm256_fmadd_ps(a.v, b.v, c.v)};
}
inline vec<double, avx2> fma(vec<double, avx2> a, vec<double, avx2> b, vec<double, avx2> c) {
  return {_mm256_fmadd_pd(a.v, b.v, c.v)};
}
inline vec<float, avx2> fnma(vec<float, avx2> a, vec<float, avx2> b, vec<float, avx2> c) {
  return {_mm256_fnmadd_ps(a.v, b.v, c.v)};
}
inline vec<double, avx2> fnma(vec<double, avx2> a, vec<double, avx2> b, vec<double, avx2> c) {
  return {_mm256_fnmadd_pd(a.v, b.v, c.v)};
}
inline vec<float, avx2> min(vec<float, avx2> a, vec<float, avx2> b) { return {_mm256_min_ps(a.v, b.v)}; }
inline vec<double, avx2> min(vec<double, avx2> a, vec<double, avx2> b) { return {_mm256_min_pd(a.v, b.v)}; }
inline vec<float, avx2> max(vec<float, avx2> a, vec<float, avx2> b) { return {_mm256_max_ps(a.v, b.v)}; }
inline vec<double, avx2> max(vec<double, avx2> a, vec<double, avx2> b) { return {_mm256_max_pd(a.v, b.v)}; }
// Halves, then quarters, then pairs: three maxima, no trip through memory.
inline float reduce_max(vec<float, avx2> a) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(a.v), _mm256_extractf128_ps(a.v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}
inline double reduce_max(vec<double, avx2> a) {
  const __m128d m = _mm_max_pd(_mm256_castpd256_pd128(a.v), _mm256_extractf128_pd(a.v, 1));
  return _mm_cvtsd_f64(_mm_max_sd(m, _mm_unpackhi_pd(m, m)));
}

// ---- pairs and layout ------------------------------------------------------------------------------------

// In-lane shuffles (1 cycle, port 5), no cross-lane traffic: pairs never straddle a 128-bit lane.
inline vec<float, avx2> pair_swap(vec<float, avx2> x) { return {_mm256_permute_ps(x.v, 0xB1)}; }
inline vec<double, avx2> pair_swap(vec<double, avx2> x) { return {_mm256_permute_pd(x.v, 0x5)}; }
inline vec<float, avx2> sign_alternate(vec<float, avx2> x) {
  return {_mm256_xor_ps(x.v, _mm256_setr_ps(-0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f))};
}
inline vec<double, avx2> sign_alternate(vec<double, avx2> x) {
  return {_mm256_xor_pd(x.v, _mm256_setr_pd(-0.0, 0.0, -0.0, 0.0))};
}
// unpacklo/hi interleave within 128-bit lanes; one cross-lane permute puts the halves in order.
inline vec<float, avx2> zip_lo(vec<float, avx2> a, vec<float, avx2> b) {
  return {_mm256_permute2f128_ps(_mm256_unpacklo_ps(a.v, b.v), _mm256_unpackhi_ps(a.v, b.v), 0x20)};
}
inline vec<double, avx2> zip_lo(vec<double, avx2> a, vec<double, avx2> b) {
  return {_mm256_permute2f128_pd(_mm256_unpacklo_pd(a.v, b.v), _mm256_unpackhi_pd(a.v, b.v), 0x20)};
}
inline vec<float, avx2> zip_hi(vec<float, avx2> a, vec<float, avx2> b) {
  return {_mm256_permute2f128_ps(_mm256_unpacklo_ps(a.v, b.v), _mm256_unpackhi_ps(a.v, b.v), 0x31)};
}
inline vec<double, avx2> zip_hi(vec<double, avx2> a, vec<double, avx2> b) {
  return {_mm256_permute2f128_pd(_mm256_unpacklo_pd(a.v, b.v), _mm256_unpackhi_pd(a.v, b.v), 0x31)};
}
inline vec<float, avx2> unzip_even(vec<float, avx2> a, vec<float, avx2> b) {
  const __m256 s = _mm256_shuffle_ps(a.v, b.v, _MM_SHUFFLE(2, 0, 2, 0));  // a0 a2 b0 b2 | a4 a6 b4 b6
  return {_mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), _MM_SHUFFLE(3, 1, 2, 0)))};
}
inline vec<double, avx2> unzip_even(vec<double, avx2> a, vec<double, avx2> b) {
  return {_mm256_permute4x64_pd(_mm256_unpacklo_pd(a.v, b.v), _MM_SHUFFLE(3, 1, 2, 0))};
}
inline vec<float, avx2> unzip_odd(vec<float, avx2> a, vec<float, avx2> b) {
  const __m256 s = _mm256_shuffle_ps(a.v, b.v, _MM_SHUFFLE(3, 1, 3, 1));
  return {_mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(s), _MM_SHUFFLE(3, 1, 2, 0)))};
}
inline vec<double, avx2> unzip_odd(vec<double, avx2> a, vec<double, avx2> b) {
  return {_mm256_permute4x64_pd(_mm256_unpackhi_pd(a.v, b.v), _MM_SHUFFLE(3, 1, 2, 0))};
}

// ---- bits of double lanes --------------------------------------------------------------------------------

inline vec<double, avx2> set1_bits(lanes<double, avx2>, std::uint64_t b) {
  return {_mm256_castsi256_pd(_mm256_set1_epi64x(static_cast<long long>(b)))};
}
inline vec<double, avx2> and_bits(vec<double, avx2> a, vec<double, avx2> b) { return {_mm256_and_pd(a.v, b.v)}; }
inline vec<double, avx2> xor_bits(vec<double, avx2> a, vec<double, avx2> b) { return {_mm256_xor_pd(a.v, b.v)}; }
inline vec<double, avx2> add_bits(vec<double, avx2> a, vec<double, avx2> b) {
  return {_mm256_castsi256_pd(_mm256_add_epi64(_mm256_castpd_si256(a.v), _mm256_castpd_si256(b.v)))};
}
template <int N>
inline vec<double, avx2> shl_bits(vec<double, avx2> a) {
  return {_mm256_castsi256_pd(_mm256_slli_epi64(_mm256_castpd_si256(a.v), N))};
}
inline vec<double, avx2> blend_sign(vec<double, avx2> m, vec<double, avx2> a, vec<double, avx2> b) {
  return {_mm256_blendv_pd(a.v, b.v, m.v)};
}

// ---- bits of float lanes ---------------------------------------------------------------------------------

inline vec<float, avx2> set1_bits(lanes<float, avx2>, std::uint32_t b) {
  return {_mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(b)))};
}
inline vec<float, avx2> and_bits(vec<float, avx2> a, vec<float, avx2> b) { return {_mm256_and_ps(a.v, b.v)}; }
inline vec<float, avx2> or_bits(vec<float, avx2> a, vec<float, avx2> b) { return {_mm256_or_ps(a.v, b.v)}; }
inline vec<float, avx2> sub_bits(vec<float, avx2> a, vec<float, avx2> b) {
  return {_mm256_castsi256_ps(_mm256_sub_epi32(_mm256_castps_si256(a.v), _mm256_castps_si256(b.v)))};
}
template <int N>
inline vec<float, avx2> shr_bits(vec<float, avx2> a) {
  return {_mm256_castsi256_ps(_mm256_srli_epi32(_mm256_castps_si256(a.v), N))};
}
inline vec<float, avx2> blend_sign(vec<float, avx2> m, vec<float, avx2> a, vec<float, avx2> b) {
  return {_mm256_blendv_ps(a.v, b.v, m.v)};
}
// vcvtps2dq rounds by MXCSR: to nearest even in the default mode, which posenc's float rounding assumes throughout.
inline vec<float, avx2> nearest_int_bits(vec<float, avx2> a) { return {_mm256_castsi256_ps(_mm256_cvtps_epi32(a.v))}; }
// Masked to a byte, then two unsigned-saturating packs (plain narrowings) 32 -> 16 -> 8 bits.
inline void store_u8_bits(vec<float, avx2> x, std::uint8_t* p) {
  const __m256i v = _mm256_and_si256(_mm256_castps_si256(x.v), _mm256_set1_epi32(0xff));
  const __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(p), _mm_packus_epi16(w, w));
}
// Four vectors at once: three in-lane packs and one permute for 32 bytes (the one-vector form costs twice that).
inline void store_u8_bits(vec<float, avx2> a, vec<float, avx2> b, vec<float, avx2> c, vec<float, avx2> d, std::uint8_t* p) {
  const __m256i m = _mm256_set1_epi32(0xff);
  const __m256i ab = _mm256_packus_epi32(_mm256_and_si256(_mm256_castps_si256(a.v), m), _mm256_and_si256(_mm256_castps_si256(b.v), m));
  const __m256i cd = _mm256_packus_epi32(_mm256_and_si256(_mm256_castps_si256(c.v), m), _mm256_and_si256(_mm256_castps_si256(d.v), m));
  const __m256i q = _mm256_packus_epi16(ab, cd);  // a0-3 b0-3 c0-3 d0-3 | a4-7 b4-7 c4-7 d4-7
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm256_permutevar8x32_epi32(q, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

}  // namespace detail::simd
POSENC_END_NAMESPACE
POSENC_END_TARGET
