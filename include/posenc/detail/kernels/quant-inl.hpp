// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// RoPE then 8-bit codes (posenc/quantize.hpp), compiled once per target (no include guard: kernels.hpp includes
// this inside each target's region and namespace). One kernel call walks every token: its heads rotated (K, by
// the rope-inl.hpp rows) or widened (V) into float scratch rows, then each row quantised with vector ops. The
// rules are detail/math/quant.hpp's; the vector forms below give the same code for every float (the tests
// sweep them against the scalar functions), by float operations that round to nearest even by themselves:
//   int8: clamp to [-128, 127], then a conversion to the nearest integer (nearest_int_bits), whose low byte is
//         the two's-complement code.
//   fp8:  |v| rounded to the format's spacing u (2^(e - mantissa bits) for |v| in [2^e, 2^(e+1)), the
//         subnormal spacing below the smallest normal) by (|v| + M) - M with M = 1.5 * 2^23 * u, whose own
//         ulp is u; then saturated, and its float32 pattern shifted into the code (rebias by subtraction), or
//         for subnormal codes the multiple of u itself (r / u + 1.5 * 2^23, whose low bits hold it).
//         Every product here is exact (a power of two times a constant), so a compiler that contracts
//         a * b + c into an FMA (GCC does, across inlined functions) cannot change a code.
// No intermediate is subnormal, so FTZ/DAZ modes do not change a code; x87 evaluation (FLT_EVAL_METHOD != 0)
// would, and posenc's targets have none.

POSENC_BEGIN_NAMESPACE
namespace detail {
namespace POSENC_TARGET_NS {

/// Lanes with the sign bit set where v is NaN: |v|'s pattern exceeds infinity's.
template <class D>
vec_of<D> nan_lanes(D d, vec_of<D> v) {
  return sub_bits(set1_bits(d, 0x7f800000u), and_bits(v, set1_bits(d, 0x7fffffffu)));
}

/// int8 codes of v (already multiplied by the inverse scale) in the low byte of each lane: round half to even,
/// saturated to [-128, 127], NaN -> 0 (math::quantize_int8). Clamping first gives the same code: every v past a
/// bound rounds to it or beyond. Unchecked: for lanes with |v| <= 127.5 or NaN (a row by its own dynamic scale,
/// unless that is subnormal), where the rounding alone gives the code (a NaN's pattern has the low byte 0).
/// The rounding is a conversion (nearest_int_bits), not v + 1.5 * 2^23: GCC contracts x * inv + 1.5 * 2^23 into
/// one FMA, which rounds the exact product instead of the float v (a code one off where v is a tie and x * inv
/// is not: 56 in 25.6M random dynamic-int8 values).
template <bool Checked, class D>
vec_of<D> int8_codes(D d, vec_of<D> v) {
  if constexpr (Checked) {
    const auto c = min(max(v, set1(d, -128.0f)), set1(d, 127.0f));
    v = blend_sign(nan_lanes(d, v), c, set1(d, 0.0f));
  }
  return nearest_int_bits(v);
}

/// OFP8 codes of v with Man mantissa bits and exponent bias Bias (math::float_to_fp8<Man, Bias, MaxCode,
/// NanCode>): nearest even, saturating to the largest finite value max_finite, NaN to NanCode, the sign kept.
/// `bound` (a power of two past max_finite) caps |v| first, so that M stays finite for infinities.
template <std::uint32_t Man, std::uint32_t Bias, std::uint32_t NanCode, class D>
vec_of<D> fp8_codes(D d, vec_of<D> v, float max_finite, float bound) {
  constexpr float min_normal = static_cast<float>(1.0 / static_cast<double>(1u << (Bias - 1)));  // 2^(1 - Bias)
  constexpr float spacing_to_m = static_cast<float>(1.5 * static_cast<double>(1u << (23 - Man)));
  constexpr float sub_scale = static_cast<float>(1u << (Bias - 1 + Man));  // 1 / the subnormal spacing
  const auto sign = simd::shr_bits<24>(and_bits(v, set1_bits(d, 0x80000000u)));  // 0x80 or 0 in the low byte
  const auto a = min(and_bits(v, set1_bits(d, 0x7fffffffu)), set1(d, bound));
  const auto e = max(and_bits(a, set1_bits(d, 0x7f800000u)), set1(d, min_normal));  // 2^floor(log2 a), >= min normal
  const auto m = mul(e, set1(d, spacing_to_m));
  const auto r = min(sub(add(a, m), m), set1(d, max_finite));
  const auto normal = sub_bits(simd::shr_bits<23 - Man>(r), set1_bits(d, (127u - Bias) << Man));
  const auto subnormal = add(mul(r, set1(d, sub_scale)), set1(d, 12582912.0f));
  const auto code = or_bits(blend_sign(sub(r, set1(d, min_normal)), normal, subnormal), sign);
  return blend_sign(nan_lanes(d, v), code, or_bits(set1_bits(d, NanCode), sign));
}

template <class D, class Code>
index_t codes_body(D d, const Code& code, const float* x, index_t i, index_t n, float inv, std::uint8_t* out) {
  constexpr index_t W = vec_of<D>::width;
  const auto s = set1(d, inv);
  const auto at = [&](index_t k) { return code(d, mul(load(d, x + k), s)); };
  for (; i + 4 * W <= n; i += 4 * W) store_u8_bits(at(i), at(i + W), at(i + 2 * W), at(i + 3 * W), out + i);
  for (; i + W <= n; i += W) store_u8_bits(at(i), out + i);
  return i;
}

/// out[e * so] = code(x[e] * inv) for e < n; the tail and strided rows through 1-lane vectors of the same ops.
template <class Code>
void code_row(const Code& code, const float* x, index_t n, float inv, std::uint8_t* out, index_t so) {
  index_t e = 0;
  if (so == 1) e = codes_body(simd::lanes<float, isa_tag>{}, code, x, 0, n, inv, out);
  const simd::lanes<float, simd::tail<isa_tag>> d1;
  for (; e < n; ++e) store_u8_bits(code(d1, mul(load(d1, x + e), set1(d1, inv))), out + e * so);
}

/// One row of codes by `fmt`; int8 rows known finite and scaled by their own normal dynamic scale skip the
/// clamp and the NaN test (`checked` false).
inline void quantize_row(quant_format fmt, bool checked, const float* x, index_t n, float inv, std::uint8_t* out,
                         index_t so) {
  switch (fmt) {
    case quant_format::fp8_e4m3:
      return code_row([](auto d, auto v) { return fp8_codes<3u, 7u, math::e4m3_nan_code>(d, v, math::e4m3_max, 512.0f); },
                      x, n, inv, out, so);
    case quant_format::fp8_e5m2:
      return code_row([](auto d, auto v) { return fp8_codes<2u, 15u, math::e5m2_nan_code>(d, v, math::e5m2_max, 65536.0f); },
                      x, n, inv, out, so);
    case quant_format::int8: break;
  }
  if (checked) return code_row([](auto d, auto v) { return int8_codes<true>(d, v); }, x, n, inv, out, so);
  code_row([](auto d, auto v) { return int8_codes<false>(d, v); }, x, n, inv, out, so);
}

template <class D>
index_t absmax_body(D d, const float* x, index_t n, float& m) {
  constexpr index_t W = vec_of<D>::width;
  if (n < 2 * W) return 0;
  // Two chains, so that a row's pass is bound by its loads rather than by a max's latency. max passes its
  // second operand where either is NaN: a NaN lane never enters the maxima, an infinity does.
  const auto abs_mask = set1_bits(d, 0x7fffffffu);
  auto m0 = set1(d, 0.0f), m1 = m0;
  index_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    m0 = max(and_bits(load(d, x + i), abs_mask), m0);
    m1 = max(and_bits(load(d, x + i + W), abs_mask), m1);
  }
  m = reduce_max(max(m0, m1));
  return i;
}

/// max |x[e]| over e < n, NaN ignored (math::int8_dynamic_scale's absmax; 0 when every x[e] is NaN).
inline float absmax(const float* x, index_t n) {
  float m = 0.0f;
  index_t e = absmax_body(simd::lanes<float, isa_tag>{}, x, n, m);
  for (; e < n; ++e) m = std::fabs(x[e]) > m ? std::fabs(x[e]) : m;
  return m;
}

/// One token's rows of one leg, (n, l) into its code rows at (o0, o1): rotated by `rows` first (K) or, with
/// rows null, only widened (V), in groups of heads that fit the float scratch row, then quantised row by row.
/// Dynamic int8 (scales null) writes each row's scale to scale_out at (o0, o1, h); given scales are read per head.
template <class Rows, class In>
void quant_token(Rows* rows, const quant_leg<In>& g, index_t p, index_t n, index_t l, index_t o0, index_t o1,
                 index_t offset, index_t pairs, float* scratch) {
  const index_t heads = g.in.extent(2);
  const index_t dim = g.in.extent(3);
  const index_t group = quant_scratch / dim < heads ? quant_scratch / dim : heads;
  const quant_params& q = g.q;
  for (index_t h0 = 0; h0 < heads; h0 += group) {
    const index_t hn = group < heads - h0 ? group : heads - h0;
    const In* x = &g.in(n, l, h0, 0);
    // V of float, contiguous: quantised straight from the input (no copy into the scratch).
    bool direct = false;
    if constexpr (!std::is_same_v<Rows, std::nullptr_t>) {
      // K: the group's rows rotated into the scratch (features outside the window copied).
      copy_outside_window(x, g.in.stride(2), g.in.stride(3), scratch, dim, index_t{1}, hn, dim, offset, pairs);
      for (index_t b = 0; b < pairs; b += rope_chunk) {
        const index_t e = b + rope_chunk < pairs ? b + rope_chunk : pairs;
        rows->at(p, b, e);
        rows->rotate(0, x + offset * g.in.stride(3), g.in.stride(2), g.in.stride(3), scratch + offset, dim, index_t{1}, hn,
                     pairs, b, e);
      }
    } else {
      if constexpr (std::is_same_v<In, float>) direct = g.in.stride(3) == 1;
      if (!direct)
        for (index_t h = 0; h < hn; ++h) copy_span(x + h * g.in.stride(2), g.in.stride(3), scratch + h * dim, index_t{1}, dim);
    }
    const auto row = [&](index_t h) -> const float* {
      if constexpr (std::is_same_v<In, float>) {
        if (direct) return x + h * g.in.stride(2);
      }
      return scratch + h * dim;
    };
    // The scales of a batch of heads first, then their codes: each dynamic scale is two divisions on its
    // absmax (absmax / 127, then 1 / scale), whose latency a row's codes would otherwise wait for.
    constexpr index_t batch = 8;
    for (index_t h1 = 0; h1 < hn; h1 += batch) {
      const index_t hb = batch < hn - h1 ? batch : hn - h1;
      float inv[batch] = {};
      bool checked[batch] = {};
      for (index_t h = 0; h < hb; ++h) {
        float scale = 0.0f;
        checked[h] = true;
        if (q.scales == nullptr) {
          scale = math::int8_dynamic_scale(absmax(row(h1 + h), dim));
          q.scale_out[o0 * q.scale_out_stride[0] + o1 * q.scale_out_stride[1] + (h0 + h1 + h) * q.scale_out_stride[2]] = scale;
          // Only a subnormal scale needs the clamp. A normal one bounds |x * inv| by 127 (1 + 2^-22); an infinite
          // or zero one gives inv = 0, and x * 0 is 0 or (for an infinity) NaN; a NaN lane converts to a
          // pattern whose low byte is the code 0 (nearest_int_bits), the NaN rule of math::quantize_int8.
          checked[h] = scale != 0.0f && scale < std::numeric_limits<float>::min();
        } else {
          scale = q.scales[(h0 + h1 + h) * q.scale_stride];
        }
        inv[h] = math::quant_inverse_scale(scale);
      }
      for (index_t h = 0; h < hb; ++h)
        quantize_row(q.format, checked[h], row(h1 + h), dim, inv[h], &g.out(o0, o1, h0 + h1 + h, 0), g.out.stride(3));
    }
  }
}

/// Every token of `first` rotated by `src` (K; src null: only widened, V) and of `second` (V; absent when its
/// input is empty) widened, each into its 8-bit code rows through `map`: K and V of a token in one pass, as
/// append_rows does (they sit side by side in a fused QKV buffer). Validated by the public entry.
template <class Source, class In>
void rope_quant_rows(target, const Source* src, const positions& pos, rope_style style, index_t offset, index_t pairs,
                     const quant_leg<In>& first, const quant_leg<In>& second, const token_map& map) {
  using A = rope_acc_t<Source, In, float>;
  // NOLINTNEXTLINE(cppcoreguidelines-pro-type-member-init): every row is written before it is read
  alignas(64) float scratch[quant_scratch];
  const bool with_second = !second.in.empty();
  // K's rows of the next token prefetched as a token's rotate, when the call streams (append_rows).
  const index_t token_bytes = (first.in.extent(2) * first.in.extent(3) + second.in.extent(2) * second.in.extent(3)) *
                              index_t{sizeof(In) + 1};
  const bool prefetch = streams(first.in.extent(0) * first.in.extent(1) * token_bytes);
  const auto run = [&](auto* rows) {
    for (index_t l = 0; l < first.in.extent(1); ++l)
      for (index_t n = 0; n < first.in.extent(0); ++n) {
        index_t o0 = 0, o1 = 0;
        if (!map.at(n, l, o0, o1)) continue;
        const index_t p = rows != nullptr ? pos.at(n, l) : 0;
        if constexpr (!std::is_same_v<decltype(rows), std::nullptr_t*>)
          rows->ahead(next_token_bytes(prefetch, first.in, n, l));
        quant_token(rows, first, p, n, l, o0, o1, offset, pairs, scratch);
        if (with_second) quant_token(static_cast<std::nullptr_t*>(nullptr), second, p, n, l, o0, o1, offset, pairs, scratch);
      }
  };
  if (src != nullptr) {
    source_rows<Source, A> rows(*src, style, pairs, A(1));
    run(&rows);
  } else {
    run(static_cast<std::nullptr_t*>(nullptr));
  }
}

}  // namespace POSENC_TARGET_NS
}  // namespace detail
POSENC_END_NAMESPACE
