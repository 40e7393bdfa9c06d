// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// Rotated float head rows to 8-bit codes (posenc/quantize.hpp), compiled once per target (no include guard:
// kernels.hpp includes this inside each target's region and namespace). The rules are detail/math/quant.hpp's;
// int8 rounds with nearbyint inside the vector targets (one roundss, and loops the compiler can vectorise)
// and with the exact integer version in the portable target, where nearbyint would be a libm call.

POSENC_BEGIN_NAMESPACE
namespace detail {
namespace POSENC_TARGET_NS {

/// round-half-even(v) saturated to [-128, 127], NaN -> 0: clamping first gives the same code (every v past a
/// bound rounds to it or beyond), and keeps the conversion to int defined.
inline std::int8_t quant_int8(float v) {
  if constexpr (std::is_same_v<isa_tag, simd::scalar>) {
    return math::quantize_int8(v);
  } else {
    const float c = v == v ? (v < -128.0f ? -128.0f : (v > 127.0f ? 127.0f : v)) : 0.0f;
    return static_cast<std::int8_t>(static_cast<int>(std::nearbyint(c)));
  }
}

/// Rows h0 .. h0+hn-1 of one token: x (hn rows of d floats) to codes at out + h * ho + e * so, with the
/// dynamic int8 scale of each row written to scale_out + h * sso.
template <class Code>
void quantize_rows(target, const quant_format fmt, const float* scales, index_t scale_stride, index_t h0, index_t hn,
                   const float* x, index_t d, Code* out, index_t ho, index_t so, float* scale_out, index_t sso) {
  for (index_t h = 0; h < hn; ++h) {
    const float* r = x + h * d;
    float scale = 0.0f;
    if (scales == nullptr) {
      float m = 0.0f;
      for (index_t e = 0; e < d; ++e) m = std::fabs(r[e]) > m ? std::fabs(r[e]) : m;  // NaN ignored
      scale = math::int8_dynamic_scale(m);
      scale_out[h * sso] = scale;
    } else {
      scale = scales[(h0 + h) * scale_stride];
    }
    const float inv = math::quant_inverse_scale(scale);
    Code* o = out + h * ho;
    if constexpr (std::is_same_v<Code, std::int8_t>) {
      static_cast<void>(fmt);
      if (so == 1) {
        for (index_t e = 0; e < d; ++e) o[e] = quant_int8(r[e] * inv);
      } else {
        for (index_t e = 0; e < d; ++e) o[e * so] = quant_int8(r[e] * inv);
      }
    } else if (fmt == quant_format::fp8_e4m3) {
      for (index_t e = 0; e < d; ++e) o[e * so] = math::float_to_e4m3(r[e] * inv);
    } else {
      for (index_t e = 0; e < d; ++e) o[e * so] = math::float_to_e5m2(r[e] * inv);
    }
  }
}

}  // namespace POSENC_TARGET_NS
}  // namespace detail
POSENC_END_NAMESPACE
