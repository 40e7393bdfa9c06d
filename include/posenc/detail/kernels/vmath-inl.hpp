// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// Vector sin/cos and exp in double, written once over the op list of detail/simd/vec.hpp for any lane
// descriptor D (this target's vectors or the 1-lane tail). No include guard: kernels.hpp includes it once per
// target, inside the target's region and namespace.
//
// Accuracy: within ~2 ulp of the double result for |x| < 2^24 (sincos; callers send larger angles to libm,
// see sincos_exact_limit) and for all finite x (exp, overflow to inf and gradual underflow to 0 as std::exp).
// Rounded to float afterwards, they give the float result of the exactly formed angle.

POSENC_BEGIN_NAMESPACE
namespace detail {
namespace POSENC_TARGET_NS {

template <class D>
using vec_of = simd::vec<typename D::lane_type, typename D::isa>;

/// sin and cos of x (|x| < 2^24), both at once. Reduction: k = round(x * 2/pi) by the 1.5*2^52 trick (k sits
/// in the low mantissa bits of kd), r = x - k*C1 - k*C2 - k*C3 with pi/2 = C1 + C2 + C3 (C1, C2 of 27 and 29
/// bits: the products are exact for k < 2^24, FMA or not); then Taylor polynomials on |r| <= pi/4 through r^15
/// (sin) and r^16 (cos), whose truncation error is below 2^-56; the quadrant k mod 4 swaps and negates.
/// Constants derived with mpmath (pi/2 truncated to 27 bits, the rest to 29, the rest rounded to 53).
template <class D>
inline void vsincos(D d, vec_of<D> x, vec_of<D>& sin_out, vec_of<D>& cos_out) {
  const auto magic = set1(d, 0x1.8p52);
  const auto kd = fma(x, set1(d, 0x1.45f306dc9c883p-1), magic);  // x * 2/pi + 1.5*2^52: round to nearest
  const auto k = sub(kd, magic);
  auto r = fnma(k, set1(d, 0x1.921fb54000000p+0), x);
  r = fnma(k, set1(d, 0x1.10b4611000000p-30), r);
  r = fnma(k, set1(d, 0x1.4c4c6628b80dcp-59), r);
  const auto z = mul(r, r);
  // sin r = r + r z (-1/3! + z (1/5! - ... - z/15!))
  auto ps = set1(d, -1.0 / 1307674368000.0);
  ps = fma(ps, z, set1(d, 1.0 / 6227020800.0));
  ps = fma(ps, z, set1(d, -1.0 / 39916800.0));
  ps = fma(ps, z, set1(d, 1.0 / 362880.0));
  ps = fma(ps, z, set1(d, -1.0 / 5040.0));
  ps = fma(ps, z, set1(d, 1.0 / 120.0));
  ps = fma(ps, z, set1(d, -1.0 / 6.0));
  const auto s = fma(mul(r, z), ps, r);
  // cos r = 1 + z (-1/2 + z (1/4! - ... + z/16!))
  auto pc = set1(d, 1.0 / 20922789888000.0);
  pc = fma(pc, z, set1(d, -1.0 / 87178291200.0));
  pc = fma(pc, z, set1(d, 1.0 / 479001600.0));
  pc = fma(pc, z, set1(d, -1.0 / 3628800.0));
  pc = fma(pc, z, set1(d, 1.0 / 40320.0));
  pc = fma(pc, z, set1(d, -1.0 / 720.0));
  pc = fma(pc, z, set1(d, 1.0 / 24.0));
  pc = fma(pc, z, set1(d, -0.5));
  const auto c = fma(z, pc, set1(d, 1.0));
  // Quadrant q = k mod 4 (the low bits of kd, two's complement for negative k): odd q swaps sin and cos;
  // sin is negated for q = 2, 3 (bit 1 of q), cos for q = 1, 2 (bit 1 of q + 1).
  const auto two = set1_bits(d, 2);
  const auto swap = simd::shl_bits<63>(kd);
  const auto sin_neg = simd::shl_bits<62>(and_bits(kd, two));
  const auto cos_neg = simd::shl_bits<62>(and_bits(add(kd, set1(d, 1.0)), two));
  sin_out = xor_bits(blend_sign(swap, s, c), sin_neg);
  cos_out = xor_bits(blend_sign(swap, c, s), cos_neg);
}

/// e^x for every x: clamped to [-1400, 1400] (far past overflow and total underflow, NaN kept), k =
/// round(x / ln 2), r = x - k ln2_hi - k ln2_lo (ln2_hi of 32 bits: k ln2_hi exact for |k| < 2^21), Taylor
/// through r^13 on |r| <= ln2/2 (truncation below 2^-57), then times 2^k1 * 2^k2 with k1 = round(k/2), k2 =
/// k - k1, both built in the exponent field: each factor is a normal double, and the last product rounds
/// once, into the subnormals where the result is that small.
template <class D>
inline vec_of<D> vexp(D d, vec_of<D> x) {
  const auto magic = set1(d, 0x1.8p52);
  x = max(set1(d, -1400.0), min(set1(d, 1400.0), x));
  const auto kd = fma(x, set1(d, 0x1.71547652b82fep+0), magic);  // x / ln 2 + 1.5*2^52
  const auto k = sub(kd, magic);
  auto r = fnma(k, set1(d, 0x1.62e42fee00000p-1), x);
  r = fnma(k, set1(d, 0x1.a39ef35793c76p-33), r);
  auto p = set1(d, 1.0 / 6227020800.0);
  p = fma(p, r, set1(d, 1.0 / 479001600.0));
  p = fma(p, r, set1(d, 1.0 / 39916800.0));
  p = fma(p, r, set1(d, 1.0 / 3628800.0));
  p = fma(p, r, set1(d, 1.0 / 362880.0));
  p = fma(p, r, set1(d, 1.0 / 40320.0));
  p = fma(p, r, set1(d, 1.0 / 5040.0));
  p = fma(p, r, set1(d, 1.0 / 720.0));
  p = fma(p, r, set1(d, 1.0 / 120.0));
  p = fma(p, r, set1(d, 1.0 / 24.0));
  p = fma(p, r, set1(d, 1.0 / 6.0));
  p = fma(p, r, set1(d, 0.5));
  p = fma(p, r, set1(d, 1.0));
  p = fma(p, r, set1(d, 1.0));
  // k1 = round(k / 2) (exact halving, then the same rounding trick); 2^k1 = (k1 + 1023) << 52, where k1 sits
  // in the low bits of k1d (|k1| <= 1010, so k1 + 1023 is a normal exponent; the magic's own bits shift out).
  const auto k1d = fma(k, set1(d, 0.5), magic);
  const auto k1 = sub(k1d, magic);
  const auto k2d = add(sub(k, k1), magic);
  const auto bias = set1_bits(d, 1023);
  const auto two_k1 = simd::shl_bits<52>(add_bits(k1d, bias));
  const auto two_k2 = simd::shl_bits<52>(add_bits(k2d, bias));
  return mul(mul(p, two_k1), two_k2);
}

}  // namespace POSENC_TARGET_NS
}  // namespace detail
POSENC_END_NAMESPACE
