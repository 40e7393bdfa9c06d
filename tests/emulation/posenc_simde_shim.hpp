// Test only: the x86 intrinsics of posenc's AVX2 and AVX-512 op files, from SIMDe's portable implementations
// (Debian libsimde-dev), so that those targets' code runs on any x86-64 host (tests/CMakeLists.txt,
// posenc_tests_emulated). The few SIMDe 0.7.4 lacks are written here from Intel's definitions, lane by lane.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <Eigen/Core>
#include <simde/x86/avx512.h>
#include <simde/x86/f16c.h>
#include <simde/x86/fma.h>

namespace posenc_simde {
template <class L, class V>
void to_lanes(const V& v, L* out) {
  std::memcpy(out, &v, sizeof v);
}
template <class V, class L>
V from_lanes(const L* in) {
  V v;
  std::memcpy(&v, in, sizeof v);
  return v;
}
inline float half_to_float(std::uint16_t h) { return static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(h)); }
// vcvtps2ph with round to nearest even: Eigen's conversion is that; NaN becomes a quiet NaN with its sign.
inline std::uint16_t float_to_half(float f) { return Eigen::numext::bit_cast<std::uint16_t>(Eigen::half(f)); }
}  // namespace posenc_simde

inline simde__m512 simde_mm512_cvtph_ps(simde__m256i a) {
  std::uint16_t h[16];
  float f[16];
  posenc_simde::to_lanes(a, h);
  for (int k = 0; k < 16; ++k) f[k] = posenc_simde::half_to_float(h[k]);
  return posenc_simde::from_lanes<simde__m512>(f);
}
inline simde__m256i simde_mm512_cvtps_ph(simde__m512 a, int) {
  float f[16];
  std::uint16_t h[16];
  posenc_simde::to_lanes(a, f);
  for (int k = 0; k < 16; ++k) h[k] = posenc_simde::float_to_half(f[k]);
  return posenc_simde::from_lanes<simde__m256i>(h);
}
// vmovntps / vmovntpd, 512 bits: the instruction faults unless mem_addr is 64-byte aligned, and so does this.
inline void simde_mm512_stream_ps(void* p, simde__m512 a) {
  if (reinterpret_cast<std::uintptr_t>(p) % 64 != 0) std::abort();
  std::memcpy(p, &a, sizeof a);
}
inline void simde_mm512_stream_pd(void* p, simde__m512d a) {
  if (reinterpret_cast<std::uintptr_t>(p) % 64 != 0) std::abort();
  std::memcpy(p, &a, sizeof a);
}
inline simde__m512d simde_mm512_cvtps_pd(simde__m256 a) {
  float f[8];
  double d[8];
  posenc_simde::to_lanes(a, f);
  for (int k = 0; k < 8; ++k) d[k] = static_cast<double>(f[k]);
  return posenc_simde::from_lanes<simde__m512d>(d);
}
inline simde__m256 simde_mm512_cvtpd_ps(simde__m512d a) {
  double d[8];
  float f[8];
  posenc_simde::to_lanes(a, d);
  for (int k = 0; k < 8; ++k) f[k] = static_cast<float>(d[k]);
  return posenc_simde::from_lanes<simde__m256>(f);
}
// vcvtps2dq: to the nearest integer by the current rounding mode (nearest even by default); the lanes here are
// in range (posenc rounds only values it has clamped or bounded).
inline simde__m512i simde_mm512_cvtps_epi32(simde__m512 a) {
  float f[16];
  std::int32_t w[16];
  posenc_simde::to_lanes(a, f);
  for (int k = 0; k < 16; ++k) w[k] = static_cast<std::int32_t>(std::nearbyint(f[k]));
  return posenc_simde::from_lanes<simde__m512i>(w);
}
inline simde__m512i simde_mm512_cvtepu16_epi32(simde__m256i a) {
  std::uint16_t h[16];
  std::uint32_t w[16];
  posenc_simde::to_lanes(a, h);
  for (int k = 0; k < 16; ++k) w[k] = h[k];
  return posenc_simde::from_lanes<simde__m512i>(w);
}
inline simde__m256i simde_mm512_cvtepi32_epi16(simde__m512i a) {  // vpmovdw: truncation
  std::uint32_t w[16];
  std::uint16_t h[16];
  posenc_simde::to_lanes(a, w);
  for (int k = 0; k < 16; ++k) h[k] = static_cast<std::uint16_t>(w[k]);
  return posenc_simde::from_lanes<simde__m256i>(h);
}
inline simde__m128i simde_mm256_cvtepi32_epi16(simde__m256i a) {
  std::uint32_t w[8];
  std::uint16_t h[8];
  posenc_simde::to_lanes(a, w);
  for (int k = 0; k < 8; ++k) h[k] = static_cast<std::uint16_t>(w[k]);
  return posenc_simde::from_lanes<simde__m128i>(h);
}
// vpermilps with an immediate: lane i of each 128-bit block takes element (imm >> 2(i mod 4)) & 3 of the block.
inline simde__m512 simde_mm512_permute_ps(simde__m512 a, int imm) {
  float x[16], y[16];
  posenc_simde::to_lanes(a, x);
  for (int i = 0; i < 16; ++i) y[i] = x[(i & ~3) + ((imm >> (2 * (i & 3))) & 3)];
  return posenc_simde::from_lanes<simde__m512>(y);
}
// vpermilpd with an immediate: lane j takes element (imm >> j) & 1 of its 128-bit block.
inline simde__m512d simde_mm512_permute_pd(simde__m512d a, int imm) {
  double x[8], y[8];
  posenc_simde::to_lanes(a, x);
  for (int j = 0; j < 8; ++j) y[j] = x[(j & ~1) + ((imm >> j) & 1)];
  return posenc_simde::from_lanes<simde__m512d>(y);
}

// vfmadd/vfnmadd round once; SIMDe without native FMA multiplies and adds (two roundings). Fused per lane here,
// so the emulation keeps the instructions' semantics (simd_test.cpp checks the single rounding).
namespace posenc_simde {
template <class V, class L, int N, bool Negate>
V fused(const V& a, const V& b, const V& c) {
  L x[N], y[N], z[N], r[N];
  to_lanes(a, x);
  to_lanes(b, y);
  to_lanes(c, z);
  for (int k = 0; k < N; ++k) r[k] = std::fma(Negate ? -x[k] : x[k], y[k], z[k]);
  return from_lanes<V>(r);
}
}  // namespace posenc_simde
#define simde_mm256_fmadd_ps(a, b, c) (posenc_simde::fused<simde__m256, float, 8, false>((a), (b), (c)))
#define simde_mm256_fnmadd_ps(a, b, c) (posenc_simde::fused<simde__m256, float, 8, true>((a), (b), (c)))
#define simde_mm256_fmadd_pd(a, b, c) (posenc_simde::fused<simde__m256d, double, 4, false>((a), (b), (c)))
#define simde_mm256_fnmadd_pd(a, b, c) (posenc_simde::fused<simde__m256d, double, 4, true>((a), (b), (c)))
#define simde_mm512_fmadd_ps(a, b, c) (posenc_simde::fused<simde__m512, float, 16, false>((a), (b), (c)))
#define simde_mm512_fnmadd_ps(a, b, c) (posenc_simde::fused<simde__m512, float, 16, true>((a), (b), (c)))
#define simde_mm512_fmadd_pd(a, b, c) (posenc_simde::fused<simde__m512d, double, 8, false>((a), (b), (c)))
#define simde_mm512_fnmadd_pd(a, b, c) (posenc_simde::fused<simde__m512d, double, 8, true>((a), (b), (c)))
