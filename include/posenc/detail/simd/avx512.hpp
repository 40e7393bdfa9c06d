// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private, include "posenc/detail/simd/vec.hpp"
//
// `vec<A, simd::avx512>`: 16 floats in a __m512 or 8 doubles in a __m512d, the op list of vec.hpp in its
// order, compiled inside the AVX-512 target region (F/BW/VL/DQ) whatever the includer's flags. Half
// conversions are AVX512F's vcvtph2ps/vcvtps2ph. bfloat16 is narrowed with integer rounding, not
// AVX512_BF16's vcvtneps2bf16: that instruction flushes denormal inputs to zero, which would make results
// depend on the CPU (Eigen, PyTorch and the other targets keep them).
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "posenc/config.hpp"
#include "posenc/detail/simd/targets.hpp"

// GCC 12.1/12.2 warn inside their own AVX-512 intrinsics (the `__Y = __Y` of _mm512_undefined_*, GCC bug
// 105593, fixed in 12.3) wherever those are inlined; kernels.hpp repeats this around the kernels.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

POSENC_BEGIN_TARGET_AVX512
POSENC_BEGIN_NAMESPACE
namespace detail::simd {

template <>
struct vec<float, avx512> {
  static constexpr int width = 16;
  __m512 v;
};
template <>
struct vec<double, avx512> {
  static constexpr int width = 8;
  __m512d v;
};

namespace avx512_detail {
// Round to nearest even on the integer pattern, as Eigen's float_to_bfloat16_rtne (see avx2.hpp); NaN
// becomes the quiet NaN 0x7fc0 with its sign. 16-bit results in the low halves of the 32-bit lanes.
inline __m512i bf16_round(__m512 x) {
  const __m512i bits = _mm512_castps_si512(x);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0x7fff)), lsb), 16);
  const __m512i qnan = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(0x8000)),
                                       _mm512_set1_epi32(0x7fc0));
  return _mm512_mask_blend_epi32(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), rounded, qnan);
}
inline __m256i bf16_round(__m256 x) {
  const __m256i bits = _mm256_castps_si256(x);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(bits, _mm256_set1_epi32(0x7fff)), lsb), 16);
  const __m256i qnan = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(0x8000)),
                                       _mm256_set1_epi32(0x7fc0));
  return _mm256_mask_blend_epi32(_mm256_cmp_ps_mask(x, x, _CMP_UNORD_Q), rounded, qnan);
}
inline __m256 bf16x8_to_ps(const void* p) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
}
}  // namespace avx512_detail

// ---- load / store ----------------------------------------------------------------------------------------

inline vec<float, avx512> load(lanes<float, avx512>, const float* p) { return {_mm512_loadu_ps(p)}; }
template <class S, if_f16<S> = 0>
inline vec<float, avx512> load(lanes<float, avx512>, const S* p) {
  return {_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)))};
}
template <class S, if_bf16<S> = 0>
inline vec<float, avx512> load(lanes<float, avx512>, const S* p) {
  const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return {_mm512_castsi512_ps(_mm512_slli_epi32(w, 16))};
}
inline vec<double, avx512> load(lanes<double, avx512>, const double* p) { return {_mm512_loadu_pd(p)}; }
inline vec<double, avx512> load(lanes<double, avx512>, const float* p) { return {_mm512_cvtps_pd(_mm256_loadu_ps(p))}; }
template <class S, if_f16<S> = 0>
inline vec<double, avx512> load(lanes<double, avx512>, const S* p) {
  return {_mm512_cvtps_pd(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))))};
}
template <class S, if_bf16<S> = 0>
inline vec<double, avx512> load(lanes<double, avx512>, const S* p) {
  return {_mm512_cvtps_pd(avx512_detail::bf16x8_to_ps(p))};
}

inline void store(vec<float, avx512> x, float* p) { _mm512_storeu_ps(p, x.v); }
template <class S, if_f16<S> = 0>
inline void store(vec<float, avx512> x, S* p) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(x.v, _MM_FROUND_TO_NEAREST_INT));
}
template <class S, if_bf16<S> = 0>
inline void store(vec<float, avx512> x, S* p) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(avx512_detail::bf16_round(x.v)));
}
inline void store(vec<double, avx512> x, double* p) { _mm512_storeu_pd(p, x.v); }
inline void store(vec<double, avx512> x, float* p) { _mm256_storeu_ps(p, _mm512_cvtpd_ps(x.v)); }
template <class S, if_f16<S> = 0>
inline void store(vec<double, avx512> x, S* p) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(_mm512_cvtpd_ps(x.v), _MM_FROUND_TO_NEAREST_INT));
}
template <class S, if_bf16<S> = 0>
inline void store(vec<double, avx512> x, S* p) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtepi32_epi16(avx512_detail::bf16_round(_mm512_cvtpd_ps(x.v))));
}

// One half-width load and a cross-lane permute: cheaper than a broadcast per pair.
// Two vectors into 2 * width adjacent elements (two stores).
template <class A, class S>
inline void store2(vec<A, avx512> a, vec<A, avx512> b, S* p) {
  store(a, p);
  store(b, p + vec<A, avx512>::width);
}
inline void store_stream(vec<float, avx512> x, float* p) { _mm512_stream_ps(p, x.v); }
inline void store_stream(vec<double, avx512> x, double* p) { _mm512_stream_pd(p, x.v); }
template <class A>
inline void stream_fence(lanes<A, avx512>) {
  _mm_sfence();
}

inline vec<float, avx512> load_dup_pairs(lanes<float, avx512>, const float* p) {
  const __m512i idx = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  return {_mm512_permutexvar_ps(idx, _mm512_castps256_ps512(_mm256_loadu_ps(p)))};
}
inline vec<double, avx512> load_dup_pairs(lanes<double, avx512>, const double* p) {
  const __m512i idx = _mm512_setr_epi64(0, 0, 1, 1, 2, 2, 3, 3);
  return {_mm512_permutexvar_pd(idx, _mm512_castpd256_pd512(_mm256_loadu_pd(p)))};
}
inline vec<float, avx512> load_u16_bits(lanes<float, avx512>, const void* p) {
  return {_mm512_castsi512_ps(_mm512_cvtepu16_epi32(_mm256_loadu_si256(static_cast<const __m256i*>(p))))};
}
inline void store_u16_bits(vec<float, avx512> x, void* p) {
  _mm256_storeu_si256(static_cast<__m256i*>(p), _mm512_cvtepi32_epi16(_mm512_castps_si512(x.v)));
}

// ---- arithmetic ------------------------------------------------------------------------------------------

inline vec<float, avx512> set1(lanes<float, avx512>, float x) { return {_mm512_set1_ps(x)}; }
inline vec<double, avx512> set1(lanes<double, avx512>, double x) { return {_mm512_set1_pd(x)}; }
inline vec<float, avx512> add(vec<float, avx512> a, vec<float, avx512> b) { return {_mm512_add_ps(a.v, b.v)}; }
inline vec<double, avx512> add(vec<double, avx512> a, vec<double, avx512> b) { return {_mm512_add_pd(a.v, b.v)}; }
inline vec<float, avx512> sub(vec<float, avx512> a, vec<float, avx512> b) { return {_mm512_sub_ps(a.v, b.v)}; }
inline vec<double, avx512> sub(vec<double, avx512> a, vec<double, avx512> b) { return {_mm512_sub_pd(a.v, b.v)}; }
inline vec<float, avx512> mul(vec<float, avx512> a, vec<float, avx512> b) { return {_mm512_mul_ps(a.v, b.v)}; }
inline vec<double, avx512> mul(vec<double, avx512> a, vec<double, avx512> b) { return {_mm512_mul_pd(a.v, b.v)}; }
inline vec<float, avx512> div(vec<float, avx512> a, vec<float, avx512> b) { return {_mm512_div_ps(a.v, b.v)}; }
inline vec<double, avx512> div(vec<double, avx512> a, vec<double, avx512> b) { return {_mm512_div_pd(a.v, b.v)}; }
inline vec<float, avx512> fma(vec<float, avx512> a, vec<float, avx512> b, vec<float, avx512> c) {
  return {_mm512_fmadd_ps(a.v, b.v, c.v)};
}
inline vec<double, avx512> fma(vec<double, avx512> a, vec<double, avx512> b, vec<double, avx512> c) {
  return {_mm512_fmadd_pd(a.v, b.v, c.v)};
}
inline vec<float, avx512> fnma(vec<float, avx512> a, vec<float, avx512> b, vec<float, avx512> c) {
  return {_mm512_fnmadd_ps(a.v, b.v, c.v)};
}
inline vec<double, avx512> fnma(vec<double, avx512> a, vec<double, avx512> b, vec<double, avx512> c) {
  return {_mm512_fnmadd_pd(a.v, b.v, c.v)};
}
inline vec<float, avx512> min(vec<float, avx512> a, vec<float, avx512> b) { return {_mm512_min_ps(a.v, b.v)}; }
inline vec<double, avx512> min(vec<double, avx512> a, vec<double, avx512> b) { return {_mm512_min_pd(a.v, b.v)}; }
inline vec<float, avx512> max(vec<float, avx512> a, vec<float, avx512> b) { return {_mm512_max_ps(a.v, b.v)}; }
inline vec<double, avx512> max(vec<double, avx512> a, vec<double, avx512> b) { return {_mm512_max_pd(a.v, b.v)}; }
// Halves down to one lane, as avx2.hpp's (the _mm512_reduce_max_* sequences are compiler-specific helpers).
inline float reduce_max(vec<float, avx512> a) {
  const __m256 h = _mm256_max_ps(_mm512_castps512_ps256(a.v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a.v), 1)));
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}
inline double reduce_max(vec<double, avx512> a) {
  const __m256d h = _mm256_max_pd(_mm512_castpd512_pd256(a.v), _mm512_extractf64x4_pd(a.v, 1));
  const __m128d m = _mm_max_pd(_mm256_castpd256_pd128(h), _mm256_extractf128_pd(h, 1));
  return _mm_cvtsd_f64(_mm_max_sd(m, _mm_unpackhi_pd(m, m)));
}

// ---- pairs and layout ------------------------------------------------------------------------------------

// In-lane shuffles, no cross-lane traffic: pairs never straddle a 128-bit lane.
inline vec<float, avx512> pair_swap(vec<float, avx512> x) { return {_mm512_permute_ps(x.v, 0xB1)}; }
inline vec<double, avx512> pair_swap(vec<double, avx512> x) { return {_mm512_permute_pd(x.v, 0x55)}; }
// AVX512DQ's vxorps/vxorpd on zmm.
inline vec<float, avx512> sign_alternate(vec<float, avx512> x) {
  return {_mm512_xor_ps(x.v, _mm512_setr_ps(-0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f, -0.0f,
                                            0.0f, -0.0f, 0.0f, -0.0f, 0.0f))};
}
inline vec<double, avx512> sign_alternate(vec<double, avx512> x) {
  return {_mm512_xor_pd(x.v, _mm512_setr_pd(-0.0, 0.0, -0.0, 0.0, -0.0, 0.0, -0.0, 0.0))};
}
// Two-source permutes (vpermt2ps/pd, one instruction each): index k < width takes a[k], else b[k - width].
inline vec<float, avx512> zip_lo(vec<float, avx512> a, vec<float, avx512> b) {
  const __m512i idx = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  return {_mm512_permutex2var_ps(a.v, idx, b.v)};
}
inline vec<double, avx512> zip_lo(vec<double, avx512> a, vec<double, avx512> b) {
  return {_mm512_permutex2var_pd(a.v, _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11), b.v)};
}
inline vec<float, avx512> zip_hi(vec<float, avx512> a, vec<float, avx512> b) {
  const __m512i idx = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  return {_mm512_permutex2var_ps(a.v, idx, b.v)};
}
inline vec<double, avx512> zip_hi(vec<double, avx512> a, vec<double, avx512> b) {
  return {_mm512_permutex2var_pd(a.v, _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15), b.v)};
}
inline vec<float, avx512> unzip_even(vec<float, avx512> a, vec<float, avx512> b) {
  const __m512i idx = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  return {_mm512_permutex2var_ps(a.v, idx, b.v)};
}
inline vec<double, avx512> unzip_even(vec<double, avx512> a, vec<double, avx512> b) {
  return {_mm512_permutex2var_pd(a.v, _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14), b.v)};
}
inline vec<float, avx512> unzip_odd(vec<float, avx512> a, vec<float, avx512> b) {
  const __m512i idx = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  return {_mm512_permutex2var_ps(a.v, idx, b.v)};
}
inline vec<double, avx512> unzip_odd(vec<double, avx512> a, vec<double, avx512> b) {
  return {_mm512_permutex2var_pd(a.v, _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15), b.v)};
}

// ---- bits of double lanes --------------------------------------------------------------------------------

inline vec<double, avx512> set1_bits(lanes<double, avx512>, std::uint64_t b) {
  return {_mm512_castsi512_pd(_mm512_set1_epi64(static_cast<long long>(b)))};
}
inline vec<double, avx512> and_bits(vec<double, avx512> a, vec<double, avx512> b) { return {_mm512_and_pd(a.v, b.v)}; }
inline vec<double, avx512> xor_bits(vec<double, avx512> a, vec<double, avx512> b) { return {_mm512_xor_pd(a.v, b.v)}; }
inline vec<double, avx512> add_bits(vec<double, avx512> a, vec<double, avx512> b) {
  return {_mm512_castsi512_pd(_mm512_add_epi64(_mm512_castpd_si512(a.v), _mm512_castpd_si512(b.v)))};
}
template <int N>
inline vec<double, avx512> shl_bits(vec<double, avx512> a) {
  return {_mm512_castsi512_pd(_mm512_slli_epi64(_mm512_castpd_si512(a.v), N))};
}
// AVX512DQ's vpmovq2m moves the sign bits into a mask.
inline vec<double, avx512> blend_sign(vec<double, avx512> m, vec<double, avx512> a, vec<double, avx512> b) {
  return {_mm512_mask_blend_pd(_mm512_movepi64_mask(_mm512_castpd_si512(m.v)), a.v, b.v)};
}

// ---- bits of float lanes ---------------------------------------------------------------------------------

inline vec<float, avx512> set1_bits(lanes<float, avx512>, std::uint32_t b) {
  return {_mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>(b)))};
}
inline vec<float, avx512> and_bits(vec<float, avx512> a, vec<float, avx512> b) { return {_mm512_and_ps(a.v, b.v)}; }
inline vec<float, avx512> or_bits(vec<float, avx512> a, vec<float, avx512> b) { return {_mm512_or_ps(a.v, b.v)}; }
inline vec<float, avx512> sub_bits(vec<float, avx512> a, vec<float, avx512> b) {
  return {_mm512_castsi512_ps(_mm512_sub_epi32(_mm512_castps_si512(a.v), _mm512_castps_si512(b.v)))};
}
template <int N>
inline vec<float, avx512> shr_bits(vec<float, avx512> a) {
  return {_mm512_castsi512_ps(_mm512_srli_epi32(_mm512_castps_si512(a.v), N))};
}
inline vec<float, avx512> blend_sign(vec<float, avx512> m, vec<float, avx512> a, vec<float, avx512> b) {
  return {_mm512_mask_blend_ps(_mm512_movepi32_mask(_mm512_castps_si512(m.v)), a.v, b.v)};
}
inline vec<float, avx512> nearest_int_bits(vec<float, avx512> a) { return {_mm512_castsi512_ps(_mm512_cvtps_epi32(a.v))}; }
// The low byte of each lane, sign-extended so that the signed-saturating vpmovsdb keeps it (vpmovdb, which
// truncates, is not in every SIMDe the emulated tests build with).
inline void store_u8_bits(vec<float, avx512> x, std::uint8_t* p) {
  const __m512i b = _mm512_and_si512(_mm512_castps_si512(x.v), _mm512_set1_epi32(0xff));
  const __m512i low = _mm512_sub_epi32(_mm512_xor_si512(b, _mm512_set1_epi32(0x80)), _mm512_set1_epi32(0x80));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_cvtsepi32_epi8(low));
}
inline void store_u8_bits(vec<float, avx512> a, vec<float, avx512> b, vec<float, avx512> c, vec<float, avx512> d,
                          std::uint8_t* p) {
  store_u8_bits(a, p);
  store_u8_bits(b, p + 16);
  store_u8_bits(c, p + 32);
  store_u8_bits(d, p + 48);
}

}  // namespace detail::simd
POSENC_END_NAMESPACE
POSENC_END_TARGET

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
