// The plain loops of plain.hpp: for each family a portable C++ loop (any CPU), an AVX2 + FMA + F16C loop
// with intrinsics (x86-64) and, for RoPE, a NEON loop (AArch64), chosen per call to match posenc's active ISA.
// Written as an engine developer would for one model: D a multiple of 16, no tails, no checks.
#include "plain.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <posenc/dispatch.hpp>
#include <posenc/detail/math/half.hpp>
#include <posenc/detail/math/quant.hpp>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PLAIN_X86 1
#include <immintrin.h>
#else
#define PLAIN_X86 0
#endif
#if defined(__aarch64__)
#define PLAIN_NEON 1
#include <arm_neon.h>
#else
#define PLAIN_NEON 0
#endif

namespace posenc_bench::plain {
namespace {

namespace math = posenc::detail::math;

enum class kind { portable, avx2, neon };

kind active() {
  if (posenc::active_isa() == posenc::isa::scalar) return kind::portable;
#if PLAIN_X86
  // posenc's avx2 target needs exactly what these loops use: AVX2, FMA and F16C (and the OS's YMM state).
  return posenc::cpu_supports(posenc::isa::avx2) ? kind::avx2 : kind::portable;
#elif PLAIN_NEON
  return kind::neon;
#else
  return kind::portable;
#endif
}

// ---- portable loops ------------------------------------------------------------------------------------------

inline float to_f(float x) { return x; }
inline double to_f(double x) { return x; }
inline float to_f(f16 x) { return math::half_bits_to_float(x.bits); }
inline float to_f(bf16 x) { return math::bf16_bits_to_float(x.bits); }
template <class T>
T from_f(float v) {
  if constexpr (std::is_same_v<T, f16>) {
    return {math::float_to_half_bits(v)};
  } else if constexpr (std::is_same_v<T, bf16>) {
    return {math::float_to_bf16_bits(v)};
  } else {
    return static_cast<T>(v);
  }
}
template <class T>
T from_f(double v) {
  return static_cast<T>(v);
}

template <class In, class Out, class C>
void rope_half_portable(const In* in, Out* out, index_t L, index_t H, index_t D, index_t ts, const C* cos, const C* sin,
                        index_t p0) {
  const index_t P = D / 2;
  for (index_t l = 0; l < L; ++l) {
    const C* c = cos + (p0 + l) * P;
    const C* s = sin + (p0 + l) * P;
    for (index_t h = 0; h < H; ++h) {
      const In* x = in + l * ts + h * D;
      Out* y = out + l * ts + h * D;
      for (index_t i = 0; i < P; ++i) {
        const auto a = to_f(x[i]), b = to_f(x[i + P]);
        y[i] = from_f<Out>(a * c[i] - b * s[i]);
        y[i + P] = from_f<Out>(b * c[i] + a * s[i]);
      }
    }
  }
}

template <class T, class C>
void rope_inter_portable(T* x, index_t L, index_t H, index_t D, index_t ts, const C* cos, const C* sin, index_t p0) {
  const index_t P = D / 2;
  for (index_t l = 0; l < L; ++l) {
    const C* c = cos + (p0 + l) * P;
    const C* s = sin + (p0 + l) * P;
    for (index_t h = 0; h < H; ++h) {
      T* r = x + l * ts + h * D;
      for (index_t i = 0; i < P; ++i) {
        const auto a = to_f(r[2 * i]), b = to_f(r[2 * i + 1]);
        r[2 * i] = from_f<T>(a * c[i] - b * s[i]);
        r[2 * i + 1] = from_f<T>(b * c[i] + a * s[i]);
      }
    }
  }
}

/// cos/sin of p * w_i in float (what ggml's rope cache forms per token).
void freq_row(index_t P, const float* inv_freq, float p, float* c, float* s) {
  for (index_t i = 0; i < P; ++i) {
    const float t = p * inv_freq[i];
    c[i] = std::cos(t);
    s[i] = std::sin(t);
  }
}

// ---- AVX2 + FMA + F16C -----------------------------------------------------------------------------------------
#if PLAIN_X86
#define PLAIN_AVX2 __attribute__((target("avx2,fma,f16c")))

PLAIN_AVX2 inline __m256 ld(const float* p) { return _mm256_loadu_ps(p); }
PLAIN_AVX2 inline __m256 ld(const f16* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
PLAIN_AVX2 inline __m256 ld(const bf16* p) {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}
PLAIN_AVX2 inline void st(float* p, __m256 v) { _mm256_storeu_ps(p, v); }
PLAIN_AVX2 inline void st(f16* p, __m256 v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}
// bfloat16 round to nearest even by integer add; a NaN keeps its top bits and is made quiet (ggml's rule).
PLAIN_AVX2 inline void st(bf16* p, __m256 v) {
  const __m256i b = _mm256_castps_si256(v);
  const __m256i hi = _mm256_srli_epi32(b, 16);
  const __m256i r = _mm256_srli_epi32(
      _mm256_add_epi32(b, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), _mm256_and_si256(hi, _mm256_set1_epi32(1)))), 16);
  const __m256i q = _mm256_or_si256(hi, _mm256_set1_epi32(0x40));
  const __m256i o = _mm256_blendv_epi8(r, q, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                   _mm_packus_epi32(_mm256_castsi256_si128(o), _mm256_extracti128_si256(o, 1)));
}

template <class T>
PLAIN_AVX2 void stream_avx2(T* x, index_t n, float a, float b) {
  const __m256 av = _mm256_set1_ps(a), bv = _mm256_set1_ps(b);
  for (index_t i = 0; i < n; i += 8) st(x + i, _mm256_fmadd_ps(ld(x + i), av, bv));
}

template <class In, class Out>
PLAIN_AVX2 void rope_half_avx2(const In* in, Out* out, index_t L, index_t H, index_t D, index_t ts, const float* cos,
                               const float* sin, index_t p0) {
  const index_t P = D / 2;
  for (index_t l = 0; l < L; ++l) {
    const float* c = cos + (p0 + l) * P;
    const float* s = sin + (p0 + l) * P;
    for (index_t h = 0; h < H; ++h) {
      const In* x = in + l * ts + h * D;
      Out* y = out + l * ts + h * D;
      for (index_t i = 0; i < P; i += 8) {
        const __m256 cv = _mm256_loadu_ps(c + i), sv = _mm256_loadu_ps(s + i);
        const __m256 a = ld(x + i), b = ld(x + i + P);
        st(y + i, _mm256_fmsub_ps(a, cv, _mm256_mul_ps(b, sv)));
        st(y + i + P, _mm256_fmadd_ps(b, cv, _mm256_mul_ps(a, sv)));
      }
    }
  }
}

PLAIN_AVX2 void rope_half_avx2(double* x, index_t L, index_t H, index_t D, index_t ts, const double* cos,
                               const double* sin, index_t p0) {
  const index_t P = D / 2;
  for (index_t l = 0; l < L; ++l) {
    const double* c = cos + (p0 + l) * P;
    const double* s = sin + (p0 + l) * P;
    for (index_t h = 0; h < H; ++h) {
      double* r = x + l * ts + h * D;
      for (index_t i = 0; i < P; i += 4) {
        const __m256d cv = _mm256_loadu_pd(c + i), sv = _mm256_loadu_pd(s + i);
        const __m256d a = _mm256_loadu_pd(r + i), b = _mm256_loadu_pd(r + i + P);
        _mm256_storeu_pd(r + i, _mm256_fmsub_pd(a, cv, _mm256_mul_pd(b, sv)));
        _mm256_storeu_pd(r + i + P, _mm256_fmadd_pd(b, cv, _mm256_mul_pd(a, sv)));
      }
    }
  }
}

// Interleaved: cos and sin of four pairs duplicated into eight lanes, the pair swapped in-lane, and fmaddsub
// gives (a c - b s, b c + a s).
template <class T>
PLAIN_AVX2 void rope_inter_avx2(T* x, index_t L, index_t H, index_t D, index_t ts, const float* cos, const float* sin,
                                index_t p0) {
  const index_t P = D / 2;
  const __m256i dup = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
  for (index_t l = 0; l < L; ++l) {
    const float* c = cos + (p0 + l) * P;
    const float* s = sin + (p0 + l) * P;
    for (index_t h = 0; h < H; ++h) {
      T* r = x + l * ts + h * D;
      for (index_t i = 0; i < P; i += 4) {
        const __m256 cv = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(c + i)), dup);
        const __m256 sv = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(s + i)), dup);
        const __m256 v = ld(r + 2 * i);
        st(r + 2 * i, _mm256_fmaddsub_ps(v, cv, _mm256_mul_ps(_mm256_permute_ps(v, 0xB1), sv)));
      }
    }
  }
}

PLAIN_AVX2 void rope_inter_avx2(double* x, index_t L, index_t H, index_t D, index_t ts, const double* cos,
                                const double* sin, index_t p0) {
  const index_t P = D / 2;
  for (index_t l = 0; l < L; ++l) {
    const double* c = cos + (p0 + l) * P;
    const double* s = sin + (p0 + l) * P;
    for (index_t h = 0; h < H; ++h) {
      double* r = x + l * ts + h * D;
      for (index_t i = 0; i < P; i += 2) {
        const __m256d cv = _mm256_permute4x64_pd(_mm256_castpd128_pd256(_mm_loadu_pd(c + i)), 0x50);
        const __m256d sv = _mm256_permute4x64_pd(_mm256_castpd128_pd256(_mm_loadu_pd(s + i)), 0x50);
        const __m256d v = _mm256_loadu_pd(r + 2 * i);
        _mm256_storeu_pd(r + 2 * i, _mm256_fmaddsub_pd(v, cv, _mm256_mul_pd(_mm256_permute_pd(v, 0x5), sv)));
      }
    }
  }
}

/// Eight floats to eight int8 codes, v = x * inv rounded to nearest even (the default MXCSR mode), saturated.
PLAIN_AVX2 inline void store_int8x32(std::int8_t* p, __m256 a, __m256 b, __m256 c, __m256 d) {
  const __m256i ab = _mm256_packs_epi32(_mm256_cvtps_epi32(a), _mm256_cvtps_epi32(b));
  const __m256i cd = _mm256_packs_epi32(_mm256_cvtps_epi32(c), _mm256_cvtps_epi32(d));
  const __m256i q = _mm256_packs_epi16(ab, cd);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm256_permutevar8x32_epi32(q, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

/// One head row of D floats to int8 with its dynamic scale.
PLAIN_AVX2 float int8_row_avx2(const float* r, index_t D, std::int8_t* out) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 m = _mm256_setzero_ps();
  for (index_t e = 0; e < D; e += 8) m = _mm256_max_ps(m, _mm256_and_ps(_mm256_loadu_ps(r + e), abs_mask));
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
  const float scale = _mm_cvtss_f32(m4) / 127.0f;
  const __m256 inv = _mm256_set1_ps(scale == 0.0f ? 0.0f : 1.0f / scale);
  for (index_t e = 0; e < D; e += 32)
    store_int8x32(out + e, _mm256_mul_ps(_mm256_loadu_ps(r + e), inv), _mm256_mul_ps(_mm256_loadu_ps(r + e + 8), inv),
                  _mm256_mul_ps(_mm256_loadu_ps(r + e + 16), inv), _mm256_mul_ps(_mm256_loadu_ps(r + e + 24), inv));
  return scale;
}

/// One head row rotated (half-split) from x into the float row y.
PLAIN_AVX2 inline void rotate_row_avx2(const float* x, float* y, index_t P, const float* c, const float* s) {
  for (index_t i = 0; i < P; i += 8) {
    const __m256 cv = _mm256_loadu_ps(c + i), sv = _mm256_loadu_ps(s + i);
    const __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + P);
    _mm256_storeu_ps(y + i, _mm256_fmsub_ps(a, cv, _mm256_mul_ps(b, sv)));
    _mm256_storeu_ps(y + i + P, _mm256_fmadd_ps(b, cv, _mm256_mul_ps(a, sv)));
  }
}

template <class T>
PLAIN_AVX2 void append_avx2(const float* k, const float* v, index_t L, index_t Hk, index_t D, index_t ts, T* kc, T* vc,
                            const std::int64_t* slots, const float* cos, const float* sin, index_t p0) {
  const index_t P = D / 2;
  for (index_t l = 0; l < L; ++l) {
    const float* c = cos + (p0 + l) * P;
    const float* s = sin + (p0 + l) * P;
    T* ko = kc + slots[l] * Hk * D;
    T* vo = vc + slots[l] * Hk * D;
    for (index_t h = 0; h < Hk; ++h) {
      const float* x = k + l * ts + h * D;
      T* y = ko + h * D;
      for (index_t i = 0; i < P; i += 8) {
        const __m256 cv = _mm256_loadu_ps(c + i), sv = _mm256_loadu_ps(s + i);
        const __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + P);
        st(y + i, _mm256_fmsub_ps(a, cv, _mm256_mul_ps(b, sv)));
        st(y + i + P, _mm256_fmadd_ps(b, cv, _mm256_mul_ps(a, sv)));
      }
      const float* w = v + l * ts + h * D;
      for (index_t e = 0; e < D; e += 8) st(vo + h * D + e, _mm256_loadu_ps(w + e));
    }
  }
}

PLAIN_AVX2 void append_int8_avx2(const float* k, const float* v, index_t L, index_t Hk, index_t D, index_t ts,
                                 std::int8_t* kc, std::int8_t* vc, float* ks, float* vs, const std::int64_t* slots,
                                 const float* cos, const float* sin, index_t p0) {
  const index_t P = D / 2;
  alignas(32) float row[4096];
  for (index_t l = 0; l < L; ++l) {
    const float* c = cos + (p0 + l) * P;
    const float* s = sin + (p0 + l) * P;
    const index_t slot = slots[l];
    for (index_t h = 0; h < Hk; ++h) {
      rotate_row_avx2(k + l * ts + h * D, row, P, c, s);
      ks[slot * Hk + h] = int8_row_avx2(row, D, kc + (slot * Hk + h) * D);
      vs[slot * Hk + h] = int8_row_avx2(v + l * ts + h * D, D, vc + (slot * Hk + h) * D);
    }
  }
}

PLAIN_AVX2 void append_e4m3_avx2(const float* k, const float* v, index_t L, index_t Hk, index_t D, index_t ts,
                                 std::uint8_t* kc, std::uint8_t* vc, float k_scale, float v_scale,
                                 const std::int64_t* slots, const float* cos, const float* sin, index_t p0) {
  const index_t P = D / 2;
  const float ki = 1.0f / k_scale, vi = 1.0f / v_scale;
  alignas(32) float row[4096];
  for (index_t l = 0; l < L; ++l) {
    const float* c = cos + (p0 + l) * P;
    const float* s = sin + (p0 + l) * P;
    const index_t slot = slots[l];
    for (index_t h = 0; h < Hk; ++h) {
      rotate_row_avx2(k + l * ts + h * D, row, P, c, s);
      std::uint8_t* ko = kc + (slot * Hk + h) * D;
      std::uint8_t* vo = vc + (slot * Hk + h) * D;
      const float* w = v + l * ts + h * D;
      for (index_t e = 0; e < D; ++e) ko[e] = math::float_to_e4m3(row[e] * ki);
      for (index_t e = 0; e < D; ++e) vo[e] = math::float_to_e4m3(w[e] * vi);
    }
  }
}

/// Rotation of one token's heads from float cos/sin rows (half-split), in place.
PLAIN_AVX2 void rotate_token_avx2(float* x, index_t H, index_t D, const float* c, const float* s) {
  for (index_t h = 0; h < H; ++h) rotate_row_avx2(x + h * D, x + h * D, D / 2, c, s);
}

PLAIN_AVX2 void rotate_token_inter_avx2(float* x, index_t H, index_t D, const float* c, const float* s) {
  const __m256i dup = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
  for (index_t h = 0; h < H; ++h) {
    float* r = x + h * D;
    for (index_t i = 0; i < D / 2; i += 4) {
      const __m256 cv = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(c + i)), dup);
      const __m256 sv = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(s + i)), dup);
      const __m256 v = _mm256_loadu_ps(r + 2 * i);
      _mm256_storeu_ps(r + 2 * i, _mm256_fmaddsub_ps(v, cv, _mm256_mul_ps(_mm256_permute_ps(v, 0xB1), sv)));
    }
  }
}

PLAIN_AVX2 void alibi_avx2(float* scores, index_t H, index_t Lq, index_t Lk, const float* slopes, index_t q0, bool causal) {
  const __m256 iota = _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256 eight = _mm256_set1_ps(8.0f);
  const __m256 ninf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  for (index_t h = 0; h < H; ++h) {
    const __m256 sl = _mm256_set1_ps(slopes[h]);
    for (index_t i = 0; i < Lq; ++i) {
      float* r = scores + (h * Lq + i) * Lk;
      const index_t q = q0 + i;
      const index_t end = causal ? std::min(Lk, (q + 8) / 8 * 8) : Lk;  // whole vectors up to the query
      __m256 dist = _mm256_add_ps(_mm256_set1_ps(static_cast<float>(-q)), iota);
      index_t j = 0;
      for (; j < end; j += 8) {
        __m256 y = _mm256_fmadd_ps(sl, dist, _mm256_loadu_ps(r + j));
        if (causal) y = _mm256_blendv_ps(y, ninf, _mm256_cmp_ps(dist, _mm256_setzero_ps(), _CMP_GT_OQ));
        _mm256_storeu_ps(r + j, y);
        dist = _mm256_add_ps(dist, eight);
      }
      for (; j < Lk; j += 8) _mm256_storeu_ps(r + j, ninf);
    }
  }
}

PLAIN_AVX2 void alibi_exact_avx2(float* scores, index_t H, index_t Lq, index_t Lk, const double* slopes, index_t q0,
                                 bool causal) {
  const __m256d iota = _mm256_setr_pd(0, 1, 2, 3);
  const __m256d four = _mm256_set1_pd(4.0);
  for (index_t h = 0; h < H; ++h) {
    const __m256d sl = _mm256_set1_pd(slopes[h]);
    for (index_t i = 0; i < Lq; ++i) {
      float* r = scores + (h * Lq + i) * Lk;
      const index_t q = q0 + i;
      const index_t end = causal ? std::min(Lk, (q + 4) / 4 * 4) : Lk;
      __m256d dist = _mm256_add_pd(_mm256_set1_pd(static_cast<double>(-q)), iota);
      index_t j = 0;
      for (; j < end; j += 4) {
        const __m256d y = _mm256_fmadd_pd(sl, dist, _mm256_cvtps_pd(_mm_loadu_ps(r + j)));
        __m128 f = _mm256_cvtpd_ps(y);
        if (causal) f = _mm_blendv_ps(f, _mm_set1_ps(-std::numeric_limits<float>::infinity()),
                                      _mm256_cvtpd_ps(_mm256_cmp_pd(dist, _mm256_setzero_pd(), _CMP_GT_OQ)));
        _mm_storeu_ps(r + j, f);
        dist = _mm256_add_pd(dist, four);
      }
      for (; j < Lk; j += 4) _mm_storeu_ps(r + j, _mm_set1_ps(-std::numeric_limits<float>::infinity()));
    }
  }
}

PLAIN_AVX2 void add_row_avx2(float* x, const float* row, index_t D, __m256 scale) {
  for (index_t e = 0; e < D; e += 8) _mm256_storeu_ps(x + e, _mm256_fmadd_ps(scale, _mm256_loadu_ps(row + e), _mm256_loadu_ps(x + e)));
}

PLAIN_AVX2 void add_row_avx2(float* x, const float* row, index_t D) { add_row_avx2(x, row, D, _mm256_set1_ps(1.0f)); }

PLAIN_AVX2 void table_add_avx2(float* x, index_t N, index_t L, index_t D, const float* table, float scale, index_t p0) {
  const __m256 sc = _mm256_set1_ps(scale);
  for (index_t n = 0; n < N; ++n)
    for (index_t l = 0; l < L; ++l) add_row_avx2(x + (n * L + l) * D, table + (p0 + l) * D, D, sc);
}

PLAIN_AVX2 void layout_avx2(const float* in, float* out, index_t rows, index_t D) {
  const index_t P = D / 2;
  for (index_t r = 0; r < rows; ++r) {
    const float* x = in + r * D;
    float* y = out + r * D;
    for (index_t i = 0; i < P; i += 8) {
      const __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + P + i);
      const __m256 lo = _mm256_unpacklo_ps(a, b), hi = _mm256_unpackhi_ps(a, b);
      _mm256_storeu_ps(y + 2 * i, _mm256_permute2f128_ps(lo, hi, 0x20));
      _mm256_storeu_ps(y + 2 * i + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
    }
  }
}
#endif  // PLAIN_X86

// ---- NEON (RoPE on float) --------------------------------------------------------------------------------------
#if PLAIN_NEON
void rope_half_neon(float* x, index_t L, index_t H, index_t D, index_t ts, const float* cos, const float* sin, index_t p0) {
  const index_t P = D / 2;
  for (index_t l = 0; l < L; ++l) {
    const float* c = cos + (p0 + l) * P;
    const float* s = sin + (p0 + l) * P;
    for (index_t h = 0; h < H; ++h) {
      float* r = x + l * ts + h * D;
      for (index_t i = 0; i < P; i += 4) {
        const float32x4_t cv = vld1q_f32(c + i), sv = vld1q_f32(s + i);
        const float32x4_t a = vld1q_f32(r + i), b = vld1q_f32(r + i + P);
        vst1q_f32(r + i, vfmsq_f32(vmulq_f32(a, cv), b, sv));
        vst1q_f32(r + i + P, vfmaq_f32(vmulq_f32(b, cv), a, sv));
      }
    }
  }
}
void rope_inter_neon(float* x, index_t L, index_t H, index_t D, index_t ts, const float* cos, const float* sin, index_t p0) {
  const index_t P = D / 2;
  for (index_t l = 0; l < L; ++l) {
    const float* c = cos + (p0 + l) * P;
    const float* s = sin + (p0 + l) * P;
    for (index_t h = 0; h < H; ++h) {
      float* r = x + l * ts + h * D;
      for (index_t i = 0; i < P; i += 4) {
        const float32x4x2_t v = vld2q_f32(r + 2 * i);  // deinterleaves a and b
        const float32x4_t cv = vld1q_f32(c + i), sv = vld1q_f32(s + i);
        float32x4x2_t y;
        y.val[0] = vfmsq_f32(vmulq_f32(v.val[0], cv), v.val[1], sv);
        y.val[1] = vfmaq_f32(vmulq_f32(v.val[1], cv), v.val[0], sv);
        vst2q_f32(r + 2 * i, y);
      }
    }
  }
}
#endif

template <class F>
void per_token_rows(float* x, index_t L, index_t H, index_t D, index_t ts, index_t P, F&& row_of, bool interleaved) {
  alignas(32) float c[2048];
  alignas(32) float s[2048];
  for (index_t l = 0; l < L; ++l) {
    row_of(l, c, s);
#if PLAIN_X86
    if (active() == kind::avx2) {
      if (interleaved) rotate_token_inter_avx2(x + l * ts, H, D, c, s);
      else rotate_token_avx2(x + l * ts, H, D, c, s);
      continue;
    }
#endif
    if (interleaved) rope_inter_portable(x + l * ts, 1, H, D, ts, c, s, 0);
    else rope_half_portable(x + l * ts, x + l * ts, 1, H, D, ts, c, s, 0);
    static_cast<void>(P);
  }
}

}  // namespace

#if PLAIN_X86
#define PLAIN_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))

PLAIN_AVX512 void rope_half_avx512(float* x, index_t L, index_t H, index_t D, index_t ts, const float* cos,
                                   const float* sin, index_t p0) {
  const index_t P = D / 2;
  for (index_t l = 0; l < L; ++l) {
    const float* c = cos + (p0 + l) * P;
    const float* s = sin + (p0 + l) * P;
    for (index_t h = 0; h < H; ++h) {
      float* r = x + l * ts + h * D;
      for (index_t i = 0; i < P; i += 16) {
        const __m512 cv = _mm512_loadu_ps(c + i), sv = _mm512_loadu_ps(s + i);
        const __m512 a = _mm512_loadu_ps(r + i), b = _mm512_loadu_ps(r + i + P);
        _mm512_storeu_ps(r + i, _mm512_fmsub_ps(a, cv, _mm512_mul_ps(b, sv)));
        _mm512_storeu_ps(r + i + P, _mm512_fmadd_ps(b, cv, _mm512_mul_ps(a, sv)));
      }
    }
  }
}

PLAIN_AVX512 void table_add_avx512_loop(float* x, index_t N, index_t L, index_t D, const float* table, float scale,
                                        index_t p0) {
  const __m512 sc = _mm512_set1_ps(scale);
  for (index_t n = 0; n < N; ++n)
    for (index_t l = 0; l < L; ++l) {
      float* r = x + (n * L + l) * D;
      const float* row = table + (p0 + l) * D;
      for (index_t e = 0; e < D; e += 16)
        _mm512_storeu_ps(r + e, _mm512_fmadd_ps(sc, _mm512_loadu_ps(row + e), _mm512_loadu_ps(r + e)));
    }
}
#endif  // PLAIN_X86

const char* isa() {
  switch (active()) {
    case kind::avx2: return "avx2";
    case kind::neon: return "neon";
    case kind::portable: break;
  }
  return "scalar";
}

// Each entry: the ISA's loop where one is written, else the portable one.
#if PLAIN_X86
#define PLAIN_IF_AVX2(call) \
  if (active() == kind::avx2) return call
#else
#define PLAIN_IF_AVX2(call)
#endif
#if PLAIN_NEON
#define PLAIN_IF_NEON(call) \
  if (active() == kind::neon) return call
#else
#define PLAIN_IF_NEON(call)
#endif

void stream_fma(f16* x, index_t n, float a, float b) {
  PLAIN_IF_AVX2(stream_avx2(x, n, a, b));
  for (index_t i = 0; i < n; ++i) x[i] = from_f<f16>(to_f(x[i]) * a + b);
}
void stream_fma(bf16* x, index_t n, float a, float b) {
  PLAIN_IF_AVX2(stream_avx2(x, n, a, b));
  for (index_t i = 0; i < n; ++i) x[i] = from_f<bf16>(to_f(x[i]) * a + b);
}

void rope_half_split(float* x, index_t L, index_t H, index_t D, index_t ts, const float* cos, const float* sin, index_t p0) {
  PLAIN_IF_AVX2(rope_half_avx2(x, x, L, H, D, ts, cos, sin, p0));
  PLAIN_IF_NEON(rope_half_neon(x, L, H, D, ts, cos, sin, p0));
  rope_half_portable(x, x, L, H, D, ts, cos, sin, p0);
}
void rope_half_split(f16* x, index_t L, index_t H, index_t D, index_t ts, const float* cos, const float* sin, index_t p0) {
  PLAIN_IF_AVX2(rope_half_avx2(x, x, L, H, D, ts, cos, sin, p0));
  rope_half_portable(x, x, L, H, D, ts, cos, sin, p0);
}
void rope_half_split(bf16* x, index_t L, index_t H, index_t D, index_t ts, const float* cos, const float* sin, index_t p0) {
  PLAIN_IF_AVX2(rope_half_avx2(x, x, L, H, D, ts, cos, sin, p0));
  rope_half_portable(x, x, L, H, D, ts, cos, sin, p0);
}
void rope_half_split(double* x, index_t L, index_t H, index_t D, index_t ts, const double* cos, const double* sin,
                     index_t p0) {
  PLAIN_IF_AVX2(rope_half_avx2(x, L, H, D, ts, cos, sin, p0));
  rope_half_portable(x, x, L, H, D, ts, cos, sin, p0);
}
void rope_interleaved(float* x, index_t L, index_t H, index_t D, index_t ts, const float* cos, const float* sin, index_t p0) {
  PLAIN_IF_AVX2(rope_inter_avx2(x, L, H, D, ts, cos, sin, p0));
  PLAIN_IF_NEON(rope_inter_neon(x, L, H, D, ts, cos, sin, p0));
  rope_inter_portable(x, L, H, D, ts, cos, sin, p0);
}
void rope_interleaved(f16* x, index_t L, index_t H, index_t D, index_t ts, const float* cos, const float* sin, index_t p0) {
  PLAIN_IF_AVX2(rope_inter_avx2(x, L, H, D, ts, cos, sin, p0));
  rope_inter_portable(x, L, H, D, ts, cos, sin, p0);
}
void rope_interleaved(bf16* x, index_t L, index_t H, index_t D, index_t ts, const float* cos, const float* sin, index_t p0) {
  PLAIN_IF_AVX2(rope_inter_avx2(x, L, H, D, ts, cos, sin, p0));
  rope_inter_portable(x, L, H, D, ts, cos, sin, p0);
}
void rope_interleaved(double* x, index_t L, index_t H, index_t D, index_t ts, const double* cos, const double* sin,
                      index_t p0) {
  PLAIN_IF_AVX2(rope_inter_avx2(x, L, H, D, ts, cos, sin, p0));
  rope_inter_portable(x, L, H, D, ts, cos, sin, p0);
}
void rope_half_split(const float* in, f16* out, index_t L, index_t H, index_t D, const float* cos, const float* sin,
                     index_t p0) {
  PLAIN_IF_AVX2(rope_half_avx2(in, out, L, H, D, H * D, cos, sin, p0));
  rope_half_portable(in, out, L, H, D, H * D, cos, sin, p0);
}
void rope_half_split(const float* in, bf16* out, index_t L, index_t H, index_t D, const float* cos, const float* sin,
                     index_t p0) {
  PLAIN_IF_AVX2(rope_half_avx2(in, out, L, H, D, H * D, cos, sin, p0));
  rope_half_portable(in, out, L, H, D, H * D, cos, sin, p0);
}

void rope_half_split_freq(float* x, index_t L, index_t H, index_t D, index_t ts, const float* inv_freq, index_t p0) {
  const index_t P = D / 2;
  per_token_rows(
      x, L, H, D, ts, P, [&](index_t l, float* c, float* s) { freq_row(P, inv_freq, static_cast<float>(p0 + l), c, s); },
      false);
}
void rope_interleaved_freq(float* x, index_t L, index_t H, index_t D, index_t ts, const float* inv_freq, index_t p0) {
  const index_t P = D / 2;
  per_token_rows(
      x, L, H, D, ts, P, [&](index_t l, float* c, float* s) { freq_row(P, inv_freq, static_cast<float>(p0 + l), c, s); },
      true);
}

void mrope_half_split(float* x, index_t L, index_t H, index_t D, const float* inv_freq, const std::uint8_t* axis,
                      const std::int64_t* thw) {
  const index_t P = D / 2;
  per_token_rows(
      x, L, H, D, H * D, P,
      [&](index_t l, float* c, float* s) {
        for (index_t i = 0; i < P; ++i) {
          const float t = static_cast<float>(thw[axis[i] * L + l]) * inv_freq[i];
          c[i] = std::cos(t);
          s[i] = std::sin(t);
        }
      },
      false);
}

void shift_half_split(float* x, index_t L, index_t H, index_t D, const float* inv_freq, index_t delta) {
  const index_t P = D / 2;
  alignas(32) float c0[2048];
  alignas(32) float s0[2048];
  freq_row(P, inv_freq, static_cast<float>(delta), c0, s0);
  per_token_rows(
      x, L, H, D, H * D, P,
      [&](index_t, float* c, float* s) {
        std::memcpy(c, c0, static_cast<std::size_t>(P) * sizeof(float));
        std::memcpy(s, s0, static_cast<std::size_t>(P) * sizeof(float));
      },
      false);
}

void xpos_interleaved(float* x, index_t L, index_t H, index_t D, const float* cos, const float* sin, const float* zeta,
                      float scale_base, index_t center, index_t p0) {
  const index_t P = D / 2;
  per_token_rows(
      x, L, H, D, H * D, P,
      [&](index_t l, float* c, float* s) {
        const index_t p = p0 + l;
        const float e = static_cast<float>(p - center) / scale_base;
        for (index_t i = 0; i < P; ++i) {
          const float sc = std::pow(zeta[i], e);
          c[i] = cos[p * P + i] * sc;
          s[i] = sin[p * P + i] * sc;
        }
      },
      true);
}

template <class T>
void append_portable(const float* k, const float* v, index_t L, index_t Hk, index_t D, index_t ts, T* kc, T* vc,
                     const std::int64_t* slots, const float* cos, const float* sin, index_t p0) {
  const index_t P = D / 2;
  for (index_t l = 0; l < L; ++l) {
    T* ko = kc + slots[l] * Hk * D;
    T* vo = vc + slots[l] * Hk * D;
    const float* c = cos + (p0 + l) * P;
    const float* s = sin + (p0 + l) * P;
    for (index_t h = 0; h < Hk; ++h) {
      const float* x = k + l * ts + h * D;
      for (index_t i = 0; i < P; ++i) {
        ko[h * D + i] = from_f<T>(x[i] * c[i] - x[i + P] * s[i]);
        ko[h * D + i + P] = from_f<T>(x[i + P] * c[i] + x[i] * s[i]);
      }
      for (index_t e = 0; e < D; ++e) vo[h * D + e] = from_f<T>(v[l * ts + h * D + e]);
    }
  }
}

void rope_append_kv(const float* k, const float* v, index_t L, index_t Hk, index_t D, index_t ts, f16* kc, f16* vc,
                    const std::int64_t* slots, const float* cos, const float* sin, index_t p0) {
  PLAIN_IF_AVX2(append_avx2(k, v, L, Hk, D, ts, kc, vc, slots, cos, sin, p0));
  append_portable(k, v, L, Hk, D, ts, kc, vc, slots, cos, sin, p0);
}
void rope_append_kv(const float* k, const float* v, index_t L, index_t Hk, index_t D, index_t ts, bf16* kc, bf16* vc,
                    const std::int64_t* slots, const float* cos, const float* sin, index_t p0) {
  PLAIN_IF_AVX2(append_avx2(k, v, L, Hk, D, ts, kc, vc, slots, cos, sin, p0));
  append_portable(k, v, L, Hk, D, ts, kc, vc, slots, cos, sin, p0);
}
void rope_append_kv(const float* k, const float* v, index_t L, index_t Hk, index_t D, index_t ts, float* kc, float* vc,
                    const std::int64_t* slots, const float* cos, const float* sin, index_t p0) {
  PLAIN_IF_AVX2(append_avx2(k, v, L, Hk, D, ts, kc, vc, slots, cos, sin, p0));
  append_portable(k, v, L, Hk, D, ts, kc, vc, slots, cos, sin, p0);
}

namespace {
float int8_row_portable(const float* r, index_t D, std::int8_t* out) {
  float m = 0.0f;
  for (index_t e = 0; e < D; ++e) m = std::max(m, std::fabs(r[e]));
  const float scale = m / 127.0f;
  const float inv = scale == 0.0f ? 0.0f : 1.0f / scale;
  for (index_t e = 0; e < D; ++e) out[e] = static_cast<std::int8_t>(std::clamp(std::nearbyint(r[e] * inv), -128.0f, 127.0f));
  return scale;
}
}  // namespace

void rope_append_kv_int8(const float* k, const float* v, index_t L, index_t Hk, index_t D, index_t ts, std::int8_t* kc,
                         std::int8_t* vc, float* ks, float* vs, const std::int64_t* slots, const float* cos,
                         const float* sin, index_t p0) {
  PLAIN_IF_AVX2(append_int8_avx2(k, v, L, Hk, D, ts, kc, vc, ks, vs, slots, cos, sin, p0));
  const index_t P = D / 2;
  float row[4096];
  for (index_t l = 0; l < L; ++l) {
    const index_t slot = slots[l];
    for (index_t h = 0; h < Hk; ++h) {
      rope_half_portable(k + l * ts + h * D, row, 1, 1, D, D, cos + (p0 + l) * P, sin + (p0 + l) * P, 0);
      ks[slot * Hk + h] = int8_row_portable(row, D, kc + (slot * Hk + h) * D);
      vs[slot * Hk + h] = int8_row_portable(v + l * ts + h * D, D, vc + (slot * Hk + h) * D);
    }
  }
}

void rope_append_kv_e4m3(const float* k, const float* v, index_t L, index_t Hk, index_t D, index_t ts, std::uint8_t* kc,
                         std::uint8_t* vc, float k_scale, float v_scale, const std::int64_t* slots, const float* cos,
                         const float* sin, index_t p0) {
  PLAIN_IF_AVX2(append_e4m3_avx2(k, v, L, Hk, D, ts, kc, vc, k_scale, v_scale, slots, cos, sin, p0));
  const index_t P = D / 2;
  const float ki = 1.0f / k_scale, vi = 1.0f / v_scale;
  float row[4096];
  for (index_t l = 0; l < L; ++l) {
    const index_t slot = slots[l];
    for (index_t h = 0; h < Hk; ++h) {
      rope_half_portable(k + l * ts + h * D, row, 1, 1, D, D, cos + (p0 + l) * P, sin + (p0 + l) * P, 0);
      for (index_t e = 0; e < D; ++e) kc[(slot * Hk + h) * D + e] = math::float_to_e4m3(row[e] * ki);
      for (index_t e = 0; e < D; ++e) vc[(slot * Hk + h) * D + e] = math::float_to_e4m3(v[l * ts + h * D + e] * vi);
    }
  }
}

void alibi_add(float* scores, index_t H, index_t Lq, index_t Lk, const float* slopes, index_t q0, bool causal) {
  PLAIN_IF_AVX2(alibi_avx2(scores, H, Lq, Lk, slopes, q0, causal));
  for (index_t h = 0; h < H; ++h)
    for (index_t i = 0; i < Lq; ++i) {
      float* r = scores + (h * Lq + i) * Lk;
      const index_t q = q0 + i;
      for (index_t j = 0; j < Lk; ++j)
        r[j] = causal && j > q ? -std::numeric_limits<float>::infinity() : r[j] + slopes[h] * static_cast<float>(j - q);
    }
}

void alibi_add_exact(float* scores, index_t H, index_t Lq, index_t Lk, const double* slopes, index_t q0, bool causal) {
  PLAIN_IF_AVX2(alibi_exact_avx2(scores, H, Lq, Lk, slopes, q0, causal));
  for (index_t h = 0; h < H; ++h)
    for (index_t i = 0; i < Lq; ++i) {
      float* r = scores + (h * Lq + i) * Lk;
      const index_t q = q0 + i;
      for (index_t j = 0; j < Lk; ++j)
        r[j] = causal && j > q ? -std::numeric_limits<float>::infinity()
                               : static_cast<float>(std::fma(slopes[h], static_cast<double>(j - q), static_cast<double>(r[j])));
    }
}

void sinusoidal_add(float* x, index_t N, index_t L, index_t D, const float* inv_freq, index_t p0) {
  const index_t P = D / 2;
  alignas(32) float row[4096];
  for (index_t l = 0; l < L; ++l) {
    const float p = static_cast<float>(p0 + l);
    for (index_t i = 0; i < P; ++i) {
      row[2 * i] = std::sin(p * inv_freq[i]);
      row[2 * i + 1] = std::cos(p * inv_freq[i]);
    }
    for (index_t n = 0; n < N; ++n) {
      float* r = x + (n * L + l) * D;
#if PLAIN_X86
      if (active() == kind::avx2) {
        add_row_avx2(r, row, D);
        continue;
      }
#endif
      for (index_t e = 0; e < D; ++e) r[e] += row[e];
    }
  }
}

void table_add(float* x, index_t N, index_t L, index_t D, const float* table, float scale, index_t p0) {
  PLAIN_IF_AVX2(table_add_avx2(x, N, L, D, table, scale, p0));
  for (index_t n = 0; n < N; ++n)
    for (index_t l = 0; l < L; ++l)
      for (index_t e = 0; e < D; ++e) x[(n * L + l) * D + e] += scale * table[(p0 + l) * D + e];
}

bool has_avx512() { return posenc::cpu_supports(posenc::isa::avx512); }

void rope_half_split_avx512(float* x, index_t L, index_t H, index_t D, index_t ts, const float* cos, const float* sin,
                            index_t p0) {
#if PLAIN_X86
  if (has_avx512()) rope_half_avx512(x, L, H, D, ts, cos, sin, p0);
#else
  (void)x, (void)L, (void)H, (void)D, (void)ts, (void)cos, (void)sin, (void)p0;
#endif
}

void table_add_avx512(float* x, index_t N, index_t L, index_t D, const float* table, float scale, index_t p0) {
#if PLAIN_X86
  if (has_avx512()) table_add_avx512_loop(x, N, L, D, table, scale, p0);
#else
  (void)x, (void)N, (void)L, (void)D, (void)table, (void)scale, (void)p0;
#endif
}

void half_split_to_interleaved(const float* in, float* out, index_t rows, index_t D) {
  PLAIN_IF_AVX2(layout_avx2(in, out, rows, D));
  const index_t P = D / 2;
  for (index_t r = 0; r < rows; ++r)
    for (index_t i = 0; i < P; ++i) {
      out[r * D + 2 * i] = in[r * D + i];
      out[r * D + 2 * i + 1] = in[r * D + P + i];
    }
}

}  // namespace posenc_bench::plain
