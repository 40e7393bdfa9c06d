// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private, include "posenc/detail/simd/vec.hpp"
//
// `vec<float, simd::avx2>`: 8 floats in a __m256, the op list of vec.hpp in its order. Compiled only when
// the includer's flags enable AVX2 and FMA; half conversions use F16C when __F16C__ is also set (every AVX2
// CPU has it, but -mavx2 alone does not enable it) and a scalar loop otherwise.
#pragma once

#include "posenc/config.hpp"

#if POSENC_HAS_AVX2

#include <immintrin.h>

#include <Eigen/Core>

POSENC_BEGIN_NAMESPACE
namespace detail::simd {

template <>
struct vec<float, avx2> {
  static constexpr int width = 8;
  __m256 v;
};

// ---- load / store ----------------------------------------------------------------------------------------

inline vec<float, avx2> load(avx2, const float* p) { return {_mm256_loadu_ps(p)}; }

inline vec<float, avx2> load(avx2, const Eigen::half* p) {
#if defined(__F16C__)
  return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)))};
#else
  alignas(32) float f[8];
  for (int k = 0; k < 8; ++k) f[k] = static_cast<float>(p[k]);
  return {_mm256_load_ps(f)};
#endif
}

// bfloat16 is the high half of a float: widening is a zero-extension and a 16-bit shift, exact.
inline vec<float, avx2> load(avx2, const Eigen::bfloat16* p) {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return {_mm256_castsi256_ps(_mm256_slli_epi32(w, 16))};
}

// One 128-bit load and a cross-lane permute: cheaper than two broadcasts per pair.
inline vec<float, avx2> load_dup_pairs(avx2, const float* p) {
  const __m256i idx = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
  return {_mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(p)), idx)};
}

inline void store(vec<float, avx2> x, float* p) { _mm256_storeu_ps(p, x.v); }

inline void store(vec<float, avx2> x, Eigen::half* p) {
#if defined(__F16C__)
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(x.v, _MM_FROUND_TO_NEAREST_INT));
#else
  alignas(32) float f[8];
  _mm256_store_ps(f, x.v);
  for (int k = 0; k < 8; ++k) p[k] = Eigen::half(f[k]);
#endif
}

// Round to nearest even on the integer pattern (bits + 0x7fff + lsb of the kept part, then >> 16), as
// Eigen's float_to_bfloat16_rtne; NaN becomes the quiet NaN 0x7fc0 with its sign, so it cannot round to inf.
inline void store(vec<float, avx2> x, Eigen::bfloat16* p) {
  const __m256i bits = _mm256_castps_si256(x.v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(bits, _mm256_set1_epi32(0x7fff)), lsb), 16);
  const __m256i qnan = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(0x8000)),
                                       _mm256_set1_epi32(0x7fc0));
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(x.v, x.v, _CMP_UNORD_Q));
  const __m256i r = _mm256_blendv_epi8(rounded, qnan, nan);
  // Every lane is < 0x10000, so the unsigned-saturating pack is a plain narrowing.
  const __m128i packed = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), packed);
}

// ---- arithmetic ------------------------------------------------------------------------------------------

inline vec<float, avx2> set1(avx2, float x) { return {_mm256_set1_ps(x)}; }
inline vec<float, avx2> add(vec<float, avx2> a, vec<float, avx2> b) { return {_mm256_add_ps(a.v, b.v)}; }
inline vec<float, avx2> sub(vec<float, avx2> a, vec<float, avx2> b) { return {_mm256_sub_ps(a.v, b.v)}; }
inline vec<float, avx2> mul(vec<float, avx2> a, vec<float, avx2> b) { return {_mm256_mul_ps(a.v, b.v)}; }
inline vec<float, avx2> fma(vec<float, avx2> a, vec<float, avx2> b, vec<float, avx2> c) {
  return {_mm256_fmadd_ps(a.v, b.v, c.v)};
}
inline vec<float, avx2> fnma(vec<float, avx2> a, vec<float, avx2> b, vec<float, avx2> c) {
  return {_mm256_fnmadd_ps(a.v, b.v, c.v)};
}

// ---- interleaved pairs -----------------------------------------------------------------------------------

// In-lane shuffle (1 cycle, port 5), no cross-lane traffic: pairs never straddle a 128-bit lane.
inline vec<float, avx2> pair_swap(vec<float, avx2> x) { return {_mm256_permute_ps(x.v, 0xB1)}; }
inline vec<float, avx2> sign_alternate(vec<float, avx2> x) {
  return {_mm256_xor_ps(x.v, _mm256_setr_ps(-0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f))};
}

}  // namespace detail::simd
POSENC_END_NAMESPACE

#endif  // POSENC_HAS_AVX2
