// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private, include "posenc/detail/simd/vec.hpp"
//
// `vec<A, simd::neon>`: 4 floats in a float32x4_t or 2 doubles in a float64x2_t, the op list of vec.hpp in
// its order. AArch64 Advanced SIMD is baseline (no target region); its half conversions (FCVTL/FCVTN) are
// too. FCVTN rounds by FPCR, round to nearest even unless the program changed it, as the x86 conversions
// follow MXCSR.
#pragma once

#include <arm_neon.h>

#include <cstdint>
#include <cstring>

#include "posenc/config.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail::simd {

template <>
struct vec<float, neon> {
  static constexpr int width = 4;
  float32x4_t v;
};
template <>
struct vec<double, neon> {
  static constexpr int width = 2;
  float64x2_t v;
};

namespace neon_detail {
inline uint16x4_t load_u16x2(const void* p) {
  std::uint32_t w;
  std::memcpy(&w, p, sizeof w);
  return vreinterpret_u16_u32(vdup_n_u32(w));
}
inline void store_u16x2(uint16x4_t r, void* p) {
  const std::uint32_t w = vget_lane_u32(vreinterpret_u32_u16(r), 0);
  std::memcpy(p, &w, sizeof w);
}
// Round to nearest even on the integer pattern, as Eigen's float_to_bfloat16_rtne (see avx2.hpp); NaN
// becomes the quiet NaN 0x7fc0 with its sign.
inline uint16x4_t bf16_round(float32x4_t x) {
  const uint32x4_t bits = vreinterpretq_u32_f32(x);
  const uint32x4_t lsb = vandq_u32(vshrq_n_u32(bits, 16), vdupq_n_u32(1));
  const uint32x4_t rounded = vshrq_n_u32(vaddq_u32(vaddq_u32(bits, vdupq_n_u32(0x7fff)), lsb), 16);
  const uint32x4_t qnan = vorrq_u32(vandq_u32(vshrq_n_u32(bits, 16), vdupq_n_u32(0x8000)), vdupq_n_u32(0x7fc0));
  const uint32x4_t is_num = vceqq_f32(x, x);
  return vmovn_u32(vbslq_u32(is_num, rounded, qnan));
}
inline float32x4_t half4_to_ps(uint16x4_t h) { return vcvt_f32_f16(vreinterpret_f16_u16(h)); }
inline uint16x4_t ps_to_half4(float32x4_t x) { return vreinterpret_u16_f16(vcvt_f16_f32(x)); }
inline float32x4_t bf16x4_to_ps(uint16x4_t h) { return vreinterpretq_f32_u32(vshll_n_u16(h, 16)); }
}  // namespace neon_detail

// ---- load / store ----------------------------------------------------------------------------------------

inline vec<float, neon> load(lanes<float, neon>, const float* p) { return {vld1q_f32(p)}; }
template <class S, if_f16<S> = 0>
inline vec<float, neon> load(lanes<float, neon>, const S* p) {
  return {neon_detail::half4_to_ps(vld1_u16(reinterpret_cast<const std::uint16_t*>(p)))};
}
template <class S, if_bf16<S> = 0>
inline vec<float, neon> load(lanes<float, neon>, const S* p) {
  return {neon_detail::bf16x4_to_ps(vld1_u16(reinterpret_cast<const std::uint16_t*>(p)))};
}
inline vec<double, neon> load(lanes<double, neon>, const double* p) { return {vld1q_f64(p)}; }
inline vec<double, neon> load(lanes<double, neon>, const float* p) { return {vcvt_f64_f32(vld1_f32(p))}; }
template <class S, if_f16<S> = 0>
inline vec<double, neon> load(lanes<double, neon>, const S* p) {
  return {vcvt_f64_f32(vget_low_f32(neon_detail::half4_to_ps(neon_detail::load_u16x2(p))))};
}
template <class S, if_bf16<S> = 0>
inline vec<double, neon> load(lanes<double, neon>, const S* p) {
  return {vcvt_f64_f32(vget_low_f32(neon_detail::bf16x4_to_ps(neon_detail::load_u16x2(p))))};
}

inline void store(vec<float, neon> x, float* p) { vst1q_f32(p, x.v); }
template <class S, if_f16<S> = 0>
inline void store(vec<float, neon> x, S* p) {
  vst1_u16(reinterpret_cast<std::uint16_t*>(p), neon_detail::ps_to_half4(x.v));
}
template <class S, if_bf16<S> = 0>
inline void store(vec<float, neon> x, S* p) {
  vst1_u16(reinterpret_cast<std::uint16_t*>(p), neon_detail::bf16_round(x.v));
}
inline void store(vec<double, neon> x, double* p) { vst1q_f64(p, x.v); }
inline void store(vec<double, neon> x, float* p) { vst1_f32(p, vcvt_f32_f64(x.v)); }
template <class S, if_f16<S> = 0>
inline void store(vec<double, neon> x, S* p) {
  const float32x2_t f = vcvt_f32_f64(x.v);
  neon_detail::store_u16x2(neon_detail::ps_to_half4(vcombine_f32(f, f)), p);
}
template <class S, if_bf16<S> = 0>
inline void store(vec<double, neon> x, S* p) {
  const float32x2_t f = vcvt_f32_f64(x.v);
  neon_detail::store_u16x2(neon_detail::bf16_round(vcombine_f32(f, f)), p);
}

// Two vectors into 2 * width adjacent elements (two stores).
template <class A, class S>
inline void store2(vec<A, neon> a, vec<A, neon> b, S* p) {
  store(a, p);
  store(b, p + vec<A, neon>::width);
}
// AArch64's non-temporal store (STNP) has no intrinsic: a store.
template <class A>
inline void store_stream(vec<A, neon> x, A* p) {
  store(x, p);
}
template <class A>
inline void stream_fence(lanes<A, neon>) {}

inline vec<float, neon> load_dup_pairs(lanes<float, neon>, const float* p) {
  const float32x2_t c = vld1_f32(p);
  return {vzip1q_f32(vcombine_f32(c, c), vcombine_f32(c, c))};
}
inline vec<double, neon> load_dup_pairs(lanes<double, neon>, const double* p) { return {vld1q_dup_f64(p)}; }
inline vec<float, neon> load_u16_bits(lanes<float, neon>, const void* p) {
  return {vreinterpretq_f32_u32(vmovl_u16(vld1_u16(static_cast<const std::uint16_t*>(p))))};
}
inline void store_u16_bits(vec<float, neon> x, void* p) {
  vst1_u16(static_cast<std::uint16_t*>(p), vmovn_u32(vreinterpretq_u32_f32(x.v)));
}

// ---- arithmetic ------------------------------------------------------------------------------------------

inline vec<float, neon> set1(lanes<float, neon>, float x) { return {vdupq_n_f32(x)}; }
inline vec<double, neon> set1(lanes<double, neon>, double x) { return {vdupq_n_f64(x)}; }
inline vec<float, neon> add(vec<float, neon> a, vec<float, neon> b) { return {vaddq_f32(a.v, b.v)}; }
inline vec<double, neon> add(vec<double, neon> a, vec<double, neon> b) { return {vaddq_f64(a.v, b.v)}; }
inline vec<float, neon> sub(vec<float, neon> a, vec<float, neon> b) { return {vsubq_f32(a.v, b.v)}; }
inline vec<double, neon> sub(vec<double, neon> a, vec<double, neon> b) { return {vsubq_f64(a.v, b.v)}; }
inline vec<float, neon> mul(vec<float, neon> a, vec<float, neon> b) { return {vmulq_f32(a.v, b.v)}; }
inline vec<double, neon> mul(vec<double, neon> a, vec<double, neon> b) { return {vmulq_f64(a.v, b.v)}; }
inline vec<float, neon> div(vec<float, neon> a, vec<float, neon> b) { return {vdivq_f32(a.v, b.v)}; }
inline vec<double, neon> div(vec<double, neon> a, vec<double, neon> b) { return {vdivq_f64(a.v, b.v)}; }
inline vec<float, neon> fma(vec<float, neon> a, vec<float, neon> b, vec<float, neon> c) { return {vfmaq_f32(c.v, a.v, b.v)}; }
inline vec<double, neon> fma(vec<double, neon> a, vec<double, neon> b, vec<double, neon> c) {
  return {vfmaq_f64(c.v, a.v, b.v)};
}
inline vec<float, neon> fnma(vec<float, neon> a, vec<float, neon> b, vec<float, neon> c) { return {vfmsq_f32(c.v, a.v, b.v)}; }
inline vec<double, neon> fnma(vec<double, neon> a, vec<double, neon> b, vec<double, neon> c) {
  return {vfmsq_f64(c.v, a.v, b.v)};
}
// FMIN/FMAX return NaN if either operand is; the callers pass the bound first, so a NaN in b comes out.
// x86's rule (b where either is NaN, and for -0 against +0), which the kernels rely on: FMIN/FMAX return the NaN.
inline vec<float, neon> min(vec<float, neon> a, vec<float, neon> b) { return {vbslq_f32(vcltq_f32(a.v, b.v), a.v, b.v)}; }
inline vec<double, neon> min(vec<double, neon> a, vec<double, neon> b) { return {vbslq_f64(vcltq_f64(a.v, b.v), a.v, b.v)}; }
inline vec<float, neon> max(vec<float, neon> a, vec<float, neon> b) { return {vbslq_f32(vcgtq_f32(a.v, b.v), a.v, b.v)}; }
inline vec<double, neon> max(vec<double, neon> a, vec<double, neon> b) { return {vbslq_f64(vcgtq_f64(a.v, b.v), a.v, b.v)}; }
inline float reduce_max(vec<float, neon> a) { return vmaxvq_f32(a.v); }
inline double reduce_max(vec<double, neon> a) { return vmaxvq_f64(a.v); }

// ---- pairs and layout ------------------------------------------------------------------------------------

inline vec<float, neon> pair_swap(vec<float, neon> x) { return {vrev64q_f32(x.v)}; }
inline vec<double, neon> pair_swap(vec<double, neon> x) { return {vextq_f64(x.v, x.v, 1)}; }
inline vec<float, neon> sign_alternate(vec<float, neon> x) {
  const uint32x4_t m = {0x80000000u, 0u, 0x80000000u, 0u};
  return {vreinterpretq_f32_u32(veorq_u32(vreinterpretq_u32_f32(x.v), m))};
}
inline vec<double, neon> sign_alternate(vec<double, neon> x) {
  const uint64x2_t m = {0x8000000000000000ull, 0ull};
  return {vreinterpretq_f64_u64(veorq_u64(vreinterpretq_u64_f64(x.v), m))};
}
inline vec<float, neon> zip_lo(vec<float, neon> a, vec<float, neon> b) { return {vzip1q_f32(a.v, b.v)}; }
inline vec<double, neon> zip_lo(vec<double, neon> a, vec<double, neon> b) { return {vzip1q_f64(a.v, b.v)}; }
inline vec<float, neon> zip_hi(vec<float, neon> a, vec<float, neon> b) { return {vzip2q_f32(a.v, b.v)}; }
inline vec<double, neon> zip_hi(vec<double, neon> a, vec<double, neon> b) { return {vzip2q_f64(a.v, b.v)}; }
inline vec<float, neon> unzip_even(vec<float, neon> a, vec<float, neon> b) { return {vuzp1q_f32(a.v, b.v)}; }
inline vec<double, neon> unzip_even(vec<double, neon> a, vec<double, neon> b) { return {vuzp1q_f64(a.v, b.v)}; }
inline vec<float, neon> unzip_odd(vec<float, neon> a, vec<float, neon> b) { return {vuzp2q_f32(a.v, b.v)}; }
inline vec<double, neon> unzip_odd(vec<double, neon> a, vec<double, neon> b) { return {vuzp2q_f64(a.v, b.v)}; }

// ---- bits of double lanes --------------------------------------------------------------------------------

inline vec<double, neon> set1_bits(lanes<double, neon>, std::uint64_t b) {
  return {vreinterpretq_f64_u64(vdupq_n_u64(b))};
}
inline vec<double, neon> and_bits(vec<double, neon> a, vec<double, neon> b) {
  return {vreinterpretq_f64_u64(vandq_u64(vreinterpretq_u64_f64(a.v), vreinterpretq_u64_f64(b.v)))};
}
inline vec<double, neon> xor_bits(vec<double, neon> a, vec<double, neon> b) {
  return {vreinterpretq_f64_u64(veorq_u64(vreinterpretq_u64_f64(a.v), vreinterpretq_u64_f64(b.v)))};
}
inline vec<double, neon> add_bits(vec<double, neon> a, vec<double, neon> b) {
  return {vreinterpretq_f64_u64(vaddq_u64(vreinterpretq_u64_f64(a.v), vreinterpretq_u64_f64(b.v)))};
}
template <int N>
inline vec<double, neon> shl_bits(vec<double, neon> a) {
  return {vreinterpretq_f64_u64(vshlq_n_u64(vreinterpretq_u64_f64(a.v), N))};
}
inline vec<double, neon> blend_sign(vec<double, neon> m, vec<double, neon> a, vec<double, neon> b) {
  return {vbslq_f64(vcltzq_s64(vreinterpretq_s64_f64(m.v)), b.v, a.v)};
}

// ---- bits of float lanes ---------------------------------------------------------------------------------

inline vec<float, neon> set1_bits(lanes<float, neon>, std::uint32_t b) { return {vreinterpretq_f32_u32(vdupq_n_u32(b))}; }
inline vec<float, neon> and_bits(vec<float, neon> a, vec<float, neon> b) {
  return {vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(a.v), vreinterpretq_u32_f32(b.v)))};
}
inline vec<float, neon> or_bits(vec<float, neon> a, vec<float, neon> b) {
  return {vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(a.v), vreinterpretq_u32_f32(b.v)))};
}
inline vec<float, neon> sub_bits(vec<float, neon> a, vec<float, neon> b) {
  return {vreinterpretq_f32_u32(vsubq_u32(vreinterpretq_u32_f32(a.v), vreinterpretq_u32_f32(b.v)))};
}
template <int N>
inline vec<float, neon> shr_bits(vec<float, neon> a) {
  return {vreinterpretq_f32_u32(vshrq_n_u32(vreinterpretq_u32_f32(a.v), N))};
}
inline vec<float, neon> blend_sign(vec<float, neon> m, vec<float, neon> a, vec<float, neon> b) {
  return {vbslq_f32(vcltzq_s32(vreinterpretq_s32_f32(m.v)), b.v, a.v)};
}
inline vec<float, neon> nearest_int_bits(vec<float, neon> a) { return {vreinterpretq_f32_s32(vcvtnq_s32_f32(a.v))}; }
// Two narrowings 32 -> 16 -> 8 bits keep the low byte of each lane.
inline void store_u8_bits(vec<float, neon> x, std::uint8_t* p) {
  const uint16x4_t h = vmovn_u32(vreinterpretq_u32_f32(x.v));
  const uint8x8_t b = vmovn_u16(vcombine_u16(h, h));
  const std::uint32_t w = vget_lane_u32(vreinterpret_u32_u8(b), 0);
  std::memcpy(p, &w, sizeof w);
}
inline void store_u8_bits(vec<float, neon> a, vec<float, neon> b, vec<float, neon> c, vec<float, neon> d, std::uint8_t* p) {
  const uint16x8_t ab = vcombine_u16(vmovn_u32(vreinterpretq_u32_f32(a.v)), vmovn_u32(vreinterpretq_u32_f32(b.v)));
  const uint16x8_t cd = vcombine_u16(vmovn_u32(vreinterpretq_u32_f32(c.v)), vmovn_u32(vreinterpretq_u32_f32(d.v)));
  vst1q_u8(p, vcombine_u8(vmovn_u16(ab), vmovn_u16(cd)));
}

}  // namespace detail::simd
POSENC_END_NAMESPACE
