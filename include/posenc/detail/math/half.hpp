// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// IEEE binary16 and bfloat16 bit patterns to and from float, exactly and without Eigen: the scalar path and
// loop tails of every kernel, and the storage traits of an engine's own 16-bit types. Round to nearest even,
// as F16C's vcvtps2ph, Eigen's float_to_half_rtne and float_to_bfloat16_rtne, and the vector stores.
#pragma once

#include <cstdint>
#include <cstring>

#include "posenc/config.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail::math {

POSENC_HOST_DEVICE inline std::uint32_t float_bits(float f) {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
POSENC_HOST_DEVICE inline float bits_float(std::uint32_t u) {
  float f = 0;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// binary16 to float in integer arithmetic, exact (every half is a float); NaN payloads kept.
POSENC_HOST_DEVICE inline float half_bits_to_float_soft(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t man = h & 0x3ffu;
  if (exp == 0) {
    const float sub = static_cast<float>(man) * 0x1.0p-24f;  // zero or subnormal: man * 2^-24, exact
    return bits_float(float_bits(sub) | sign);
  }
  if (exp == 31) return bits_float(sign | 0x7f800000u | (man << 13));  // inf, NaN
  return bits_float(sign | ((exp + 112u) << 23) | (man << 13));
}

/// float to binary16 in integer arithmetic, round to nearest even; overflow (|x| >= 65520) to inf; NaN to a
/// quiet NaN with the top payload bits and the sign (vcvtps2ph's result).
POSENC_HOST_DEVICE inline std::uint16_t float_to_half_bits_soft(float f) {
  const std::uint32_t x = float_bits(f);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0u));
  if (ax >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // 65520 = max + half an ulp: even is inf
  if (ax < 0x38800000u) {                                                    // below 2^-14: a subnormal half or zero
    if (ax < 0x33000000u) return sign;                                       // below 2^-25: rounds to zero
    const std::uint32_t e = ax >> 23;                                        // 102 .. 112
    const std::uint32_t m = (ax & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126u - e;                                    // units of 2^-24
    std::uint32_t r = m >> shift;
    const std::uint32_t rem = m & ((1u << shift) - 1u);
    const std::uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (r & 1u))) ++r;  // may carry into the smallest normal, 0x400: right
    return static_cast<std::uint16_t>(sign | r);
  }
  std::uint32_t r = (ax >> 13) - (112u << 10);  // rebias 127 -> 15
  const std::uint32_t rem = ax & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;
  return static_cast<std::uint16_t>(sign | r);
}

/// bfloat16 is the high half of a float: exact.
POSENC_HOST_DEVICE inline float bf16_bits_to_float(std::uint16_t h) { return bits_float(static_cast<std::uint32_t>(h) << 16); }

/// float to bfloat16 in integer arithmetic, round to nearest even on the pattern; NaN to the quiet NaN 0x7fc0
/// with its sign.
POSENC_HOST_DEVICE inline std::uint16_t float_to_bf16_bits_soft(float f) {
  const std::uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>(((x >> 16) & 0x8000u) | 0x7fc0u);
  return static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// The conversions every kernel uses. On a CUDA device the cvt instructions (one each, round to nearest even,
// overflow to inf, subnormals kept) give the integer code's bits for every non-NaN input, which
// tests/cuda/rope_cuda_test.cpp checks over all 2^16 halves and all 2^32 floats on the device; NaNs, whose
// payload PTX does not promise, keep the integer code so that every backend returns the same NaN.

/// binary16 to float, exact; NaN payloads kept.
POSENC_HOST_DEVICE inline float half_bits_to_float(std::uint16_t h) {
#if defined(__CUDA_ARCH__)
  if ((h & 0x7fffu) <= 0x7c00u) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
  }
#endif
  return half_bits_to_float_soft(h);
}

/// float to binary16, round to nearest even (as float_to_half_bits_soft).
POSENC_HOST_DEVICE inline std::uint16_t float_to_half_bits(float f) {
#if defined(__CUDA_ARCH__)
  if ((float_bits(f) & 0x7fffffffu) <= 0x7f800000u) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
  }
#endif
  return float_to_half_bits_soft(f);
}

/// float to bfloat16, round to nearest even (as float_to_bf16_bits_soft); the instruction needs sm_80.
POSENC_HOST_DEVICE inline std::uint16_t float_to_bf16_bits(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if ((float_bits(f) & 0x7fffffffu) <= 0x7f800000u) {
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
  }
#endif
  return float_to_bf16_bits_soft(f);
}

}  // namespace detail::math
POSENC_END_NAMESPACE
