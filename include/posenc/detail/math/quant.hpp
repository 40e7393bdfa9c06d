// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// Scalar conversions of float32 values to the 8-bit codes of a quantised q/k or KV cache (issue #8, item 6):
// int8 (symmetric), fp8 E4M3 and fp8 E5M2, and the exact decoders of the two fp8 formats. The fused RoPE +
// quantisation kernels call these on the rotated float32 values; their loop tails and the CUDA kernels use the
// same functions, so every path gives the same codes. Ground truth: tests/golden/quant.txt, written by
// tests/golden/gen_quant.py from the rules below in exact arithmetic.
//
// The rules
// ---------
// int8, symmetric (model: vLLM scaled_int8_quant, csrc/quantization/compressed_tensors/int8_quant_kernels.cu):
//   inv = 1.0f / scale (float32 division); v = x * inv (float32 multiply, rounded to float32);
//   q = round-half-to-even(v) saturated to [-128, 127]; NaN -> 0 (+-inf saturate to 127 / -128).
//   Dynamic per-token-per-head scale: scale = absmax / 127.0f (float32 division) over the head's D values
//   (the rotated values, in float32); absmax == 0 gives scale 0 and inv = 0 (defined so), hence all codes 0.
//   Per-head (static) scale: given by the caller, finite and > 0.
//   vLLM differs in one float32 step each: its static kernel divides (x / scale) and its dynamic kernel
//   multiplies by 127.0f / absmax; either can move v by one ulp and change a code at a rounding tie. posenc
//   multiplies by the rounded reciprocal of the stored scale in both cases, so that a code depends only on x
//   and on the scale stored with it. The rounding itself is PTX cvt.rni.sat.s8.f32 (vLLM's float_to_int8_rn).
//
// fp8, given scale: v = x * (1.0f / scale) in float32, then rounded to nearest (ties to the even mantissa)
// into the format, saturating. Formats: OCP 8-bit Floating Point Specification (OFP8), Revision 1.0, 2023,
// table 1:
//   E4M3 ("E4M3FN"): bias 7, 3 mantissa bits, no infinities, NaN = S.1111.111, max S.1111.110 = 448, min
//     normal 2^-6, subnormals m * 2^-9.
//   E5M2: bias 15, 2 mantissa bits, IEEE-like: inf = S.11111.00, NaN = S.11111.{01,10,11}, max S.11110.11 =
//     57344, min normal 2^-14, subnormals m * 2^-16.
//   Saturation (OFP8's saturating conversion, NVIDIA __NV_SATFINITE): finite values at or beyond +-max after
//   rounding (including those that would round to E4M3's NaN pattern or to E5M2's inf) give +-max; +-inf
//   gives +-max. Subnormals of the format are produced, with round-to-nearest-even; underflow to zero keeps
//   the sign (0x80). NaN gives the canonical NaN with the input's sign bit: E4M3 0x7F | sign, E5M2
//   0x7E | sign (ml_dtypes' quiet NaN, mantissa 0b10). NVIDIA's cuda_fp8.hpp software path returns 0x7F for
//   every NaN input, sign dropped, in both formats: compare NaN codes as a class against it.
//
// Everything is integer arithmetic on the float32 bit pattern (std::memcpy for the bit cast): no libm call,
// no dependence on the rounding mode, FTZ/DAZ or x87 excess precision. The two scale helpers are one IEEE
// float32 division each, which needs FLT_EVAL_METHOD == 0 (SSE, NEON, CUDA; not x87) and no -ffast-math
// (which may turn x / 127.0f into x * (1 / 127.0f)).
#pragma once

#if defined(__FAST_MATH__)
#error "posenc: int8/fp8 quantisation rounds half to even and saturates by IEEE rules; this translation unit is built with -ffast-math (or -Ofast): build it without"
#endif

#include <cstdint>
#include <cstring>

#include "posenc/config.hpp"

POSENC_BEGIN_NAMESPACE

/// The 8-bit code: int8 codes are std::int8_t, fp8 codes std::uint8_t (the OFP8 bit pattern).
enum class quant_format {
  int8,      ///< symmetric int8
  fp8_e4m3,  ///< OCP E4M3 ("E4M3FN": bias 7, no infinities, max 448)
  fp8_e5m2,  ///< OCP E5M2 (bias 15, max 57344)
};

POSENC_END_NAMESPACE

POSENC_BEGIN_NAMESPACE
namespace detail::math {

/// Largest finite values and canonical NaN codes (positive sign) of the two fp8 formats (OFP8 table 1).
constexpr float e4m3_max = 448.0f;
constexpr float e5m2_max = 57344.0f;
constexpr std::uint8_t e4m3_max_code = 0x7e;
constexpr std::uint8_t e5m2_max_code = 0x7b;
constexpr std::uint8_t e4m3_nan_code = 0x7f;
constexpr std::uint8_t e5m2_nan_code = 0x7e;

POSENC_HOST_DEVICE inline std::uint32_t quant_bits_of(float f) {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
POSENC_HOST_DEVICE inline float quant_float_of(std::uint32_t u) {
  float f = 0;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// inv = 1.0f / scale (one float32 division), the factor every value of a head is multiplied by; scale 0 (the
/// dynamic scale of an all-zero head) gives inv = 0, so that every code is 0. Precondition otherwise: scale
/// finite and > 0.
POSENC_HOST_DEVICE inline float quant_inverse_scale(float scale) { return scale == 0.0f ? 0.0f : 1.0f / scale; }

/// The dynamic int8 scale of one token's head: absmax / 127.0f (float32 division), absmax = max |y| over the
/// head's D rotated float32 values (>= 0, finite).
POSENC_HOST_DEVICE inline float int8_dynamic_scale(float absmax) { return absmax / 127.0f; }

/// int8 code of v = x * inv (already multiplied): round half to even, saturated to [-128, 127], NaN -> 0.
/// As PTX cvt.rni.sat.s8.f32.
POSENC_HOST_DEVICE inline std::int8_t quantize_int8(float v) {
  const std::uint32_t u = quant_bits_of(v);
  const std::uint32_t a = u & 0x7fffffffu;
  const bool neg = (u >> 31) != 0u;
  if (a > 0x7f800000u) return 0;                                          // NaN
  if (a >= 0x43000000u) return static_cast<std::int8_t>(neg ? -128 : 127);  // |v| >= 128, inf
  if (a <= 0x3f000000u) return 0;                                         // |v| <= 0.5 (0.5 ties to 0)
  // 0.5 < |v| < 128: |v| = m * 2^(e - 150) with the 24-bit significand m; keep the bits above 2^0.
  const std::uint32_t e = a >> 23;                 // 126 .. 133
  const std::uint32_t m = (a & 0x7fffffu) | 0x800000u;
  const std::uint32_t shift = 150u - e;            // 17 .. 24
  std::uint32_t q = m >> shift;
  const std::uint32_t rem = m & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1u);
  q += (rem > half || (rem == half && (q & 1u) != 0u)) ? 1u : 0u;  // q <= 128
  const std::int32_t s = neg ? -static_cast<std::int32_t>(q) : static_cast<std::int32_t>(q);
  return static_cast<std::int8_t>(s > 127 ? 127 : s);             // 127.5 .. 128 rounds to 128: saturate
}

/// float32 -> OFP8 code with Man mantissa bits and exponent bias Bias: nearest even, saturating to MaxCode,
/// NaN to NanCode, the sign bit kept everywhere (E4M3: <3, 7, 0x7e, 0x7f>, E5M2: <2, 15, 0x7b, 0x7e>).
template <std::uint32_t Man, std::uint32_t Bias, std::uint32_t MaxCode, std::uint32_t NanCode>
POSENC_HOST_DEVICE inline std::uint8_t float_to_fp8(float v) {
  const std::uint32_t u = quant_bits_of(v);
  const std::uint32_t sign = (u >> 24) & 0x80u;
  const std::uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<std::uint8_t>(NanCode | sign);
  constexpr std::uint32_t min_normal = (128u - Bias) << 23;  // 2^(1 - Bias) as a float32 pattern
  std::uint32_t r = 0;
  if (a >= min_normal) {
    // Normal in the format: round the pattern to Man mantissa bits, nearest even (a carry out of the mantissa
    // moves into the exponent, which is right), then rebias 127 -> Bias.
    constexpr std::uint32_t sh = 23u - Man;
    r = (a + ((1u << (sh - 1u)) - 1u) + ((a >> sh) & 1u)) >> sh;
    r -= (127u - Bias) << Man;
    // Past max: values that round beyond it, to E4M3's NaN pattern or E5M2's inf, and inf itself.
    if (r > MaxCode) r = MaxCode;
  } else {
    // Subnormal or zero in the format: the multiple of 2^(1 - Bias - Man) nearest |v| = m * 2^(e - 150).
    // float32 zeros and subnormals (e = 0) take the capped shift and give 0.
    const std::uint32_t e = a >> 23;  // <= 127 - Bias
    const std::uint32_t m = (a & 0x7fffffu) | 0x800000u;
    std::uint32_t shift = (151u - Bias - Man) - e;  // >= 24 - Man
    if (shift > 25u) shift = 25u;                    // m < 2^24 = half: rounds to 0 from here on
    r = m >> shift;
    const std::uint32_t rem = m & ((1u << shift) - 1u);
    const std::uint32_t half = 1u << (shift - 1u);
    r += (rem > half || (rem == half && (r & 1u) != 0u)) ? 1u : 0u;  // 2^Man is the smallest normal: right
  }
  return static_cast<std::uint8_t>(r | sign);
}

/// float32 -> fp8 E4M3 (OFP8 "E4M3FN") code: nearest even, saturating to +-448 (+-inf too), subnormals down to
/// 2^-9, underflow keeps the sign, NaN -> 0x7F | sign.
POSENC_HOST_DEVICE inline std::uint8_t float_to_e4m3(float v) {
  return float_to_fp8<3u, 7u, e4m3_max_code, e4m3_nan_code>(v);
}

/// float32 -> fp8 E5M2 code: nearest even, saturating to +-57344 (+-inf too), subnormals down to 2^-16,
/// underflow keeps the sign, NaN -> 0x7E | sign.
POSENC_HOST_DEVICE inline std::uint8_t float_to_e5m2(float v) {
  return float_to_fp8<2u, 15u, e5m2_max_code, e5m2_nan_code>(v);
}

/// fp8 E4M3 code -> float32, exact (every code is a float). 0x7F / 0xFF give a quiet NaN with that sign.
POSENC_HOST_DEVICE inline float e4m3_to_float(std::uint8_t c) {
  const std::uint32_t sign = static_cast<std::uint32_t>(c & 0x80u) << 24;
  const std::uint32_t e = (c >> 3) & 0xfu;
  const std::uint32_t m = c & 0x7u;
  if ((c & 0x7fu) == 0x7fu) return quant_float_of(sign | 0x7fc00000u);
  if (e == 0u) return quant_float_of(quant_bits_of(static_cast<float>(m) * 0x1.0p-9f) | sign);  // exact
  return quant_float_of(sign | ((e + 120u) << 23) | (m << 20));
}

/// fp8 E5M2 code -> float32, exact. S.11111.00 gives +-inf; the NaN codes give a quiet NaN with the sign and
/// the two mantissa bits on top of the float's payload.
POSENC_HOST_DEVICE inline float e5m2_to_float(std::uint8_t c) {
  const std::uint32_t sign = static_cast<std::uint32_t>(c & 0x80u) << 24;
  const std::uint32_t e = (c >> 2) & 0x1fu;
  const std::uint32_t m = c & 0x3u;
  if (e == 0x1fu) return quant_float_of(sign | 0x7f800000u | (m << 21) | (m != 0u ? 0x400000u : 0u));
  if (e == 0u) return quant_float_of(quant_bits_of(static_cast<float>(m) * 0x1.0p-16f) | sign);  // exact
  return quant_float_of(sign | ((e + 112u) << 23) | (m << 21));
}

}  // namespace detail::math
POSENC_END_NAMESPACE
