// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private, include "posenc/detail/simd/vec.hpp"
//
// `vec<float, simd::avx512>`: 16 floats in a __m512, the op list of vec.hpp in its order. Compiled only
// when the includer's flags enable AVX-512 F/BW/VL/DQ; half conversions are AVX512F's vcvtph2ps/vcvtps2ph.
#pragma once

#include "posenc/config.hpp"

#if POSENC_HAS_AVX512

#include <immintrin.h>

#include <Eigen/Core>

// GCC 12.1/12.2 warn inside their own AVX-512 intrinsics (the `__Y = __Y` of _mm512_undefined_*, GCC bug
// 105593, fixed in 12.3) wherever those are inlined; the pragma covers the inlining context of this file.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

POSENC_BEGIN_NAMESPACE
namespace detail::simd {

template <>
struct vec<float, avx512> {
  static constexpr int width = 16;
  __m512 v;
};

// ---- load / store ----------------------------------------------------------------------------------------

inline vec<float, avx512> load(avx512, const float* p) { return {_mm512_loadu_ps(p)}; }

inline vec<float, avx512> load(avx512, const Eigen::half* p) {
  return {_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)))};
}

// bfloat16 is the high half of a float: widening is a zero-extension and a 16-bit shift, exact.
inline vec<float, avx512> load(avx512, const Eigen::bfloat16* p) {
  const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return {_mm512_castsi512_ps(_mm512_slli_epi32(w, 16))};
}

// One 256-bit load and a cross-lane permute: cheaper than two broadcasts per pair.
inline vec<float, avx512> load_dup_pairs(avx512, const float* p) {
  const __m512i idx = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  return {_mm512_permutexvar_ps(idx, _mm512_castps256_ps512(_mm256_loadu_ps(p)))};
}

inline void store(vec<float, avx512> x, float* p) { _mm512_storeu_ps(p, x.v); }

inline void store(vec<float, avx512> x, Eigen::half* p) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(x.v, _MM_FROUND_TO_NEAREST_INT));
}

// Round to nearest even on the integer pattern (bits + 0x7fff + lsb of the kept part, then >> 16), as
// Eigen's float_to_bfloat16_rtne; NaN becomes the quiet NaN 0x7fc0 with its sign, so it cannot round to inf.
inline void store(vec<float, avx512> x, Eigen::bfloat16* p) {
  const __m512i bits = _mm512_castps_si512(x.v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(bits, _mm512_set1_epi32(0x7fff)), lsb), 16);
  const __m512i qnan = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(0x8000)),
                                       _mm512_set1_epi32(0x7fc0));
  const __mmask16 nan = _mm512_cmp_ps_mask(x.v, x.v, _CMP_UNORD_Q);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(nan, rounded, qnan)));
}

// ---- arithmetic ------------------------------------------------------------------------------------------

inline vec<float, avx512> set1(avx512, float x) { return {_mm512_set1_ps(x)}; }
inline vec<float, avx512> add(vec<float, avx512> a, vec<float, avx512> b) { return {_mm512_add_ps(a.v, b.v)}; }
inline vec<float, avx512> sub(vec<float, avx512> a, vec<float, avx512> b) { return {_mm512_sub_ps(a.v, b.v)}; }
inline vec<float, avx512> mul(vec<float, avx512> a, vec<float, avx512> b) { return {_mm512_mul_ps(a.v, b.v)}; }
inline vec<float, avx512> fma(vec<float, avx512> a, vec<float, avx512> b, vec<float, avx512> c) {
  return {_mm512_fmadd_ps(a.v, b.v, c.v)};
}
inline vec<float, avx512> fnma(vec<float, avx512> a, vec<float, avx512> b, vec<float, avx512> c) {
  return {_mm512_fnmadd_ps(a.v, b.v, c.v)};
}

// ---- interleaved pairs -----------------------------------------------------------------------------------

// In-lane shuffle, no cross-lane traffic: pairs never straddle a 128-bit lane.
inline vec<float, avx512> pair_swap(vec<float, avx512> x) { return {_mm512_permute_ps(x.v, 0xB1)}; }
// AVX512DQ's vxorps on zmm.
inline vec<float, avx512> sign_alternate(vec<float, avx512> x) {
  return {_mm512_xor_ps(x.v, _mm512_setr_ps(-0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f, -0.0f,
                                            0.0f, -0.0f, 0.0f, -0.0f, 0.0f))};
}

}  // namespace detail::simd
POSENC_END_NAMESPACE

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#endif  // POSENC_HAS_AVX512
