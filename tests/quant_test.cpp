// The scalar quantisation conversions (include/posenc/detail/math/quant.hpp) against tests/golden/quant.txt
// (written by gen_quant.py in exact arithmetic): every conversion, scaled and fused case, code for code; every
// fp8 code decoded and re-encoded; monotonicity and the nearest-value property over a sweep of float32 values.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <posenc/detail/math/quant.hpp>

#include "golden.hpp"

namespace {

namespace pm = posenc::detail::math;
using posenc_test::golden_array;
using posenc_test::golden_case;

float float_of_bits(std::int64_t b) {
  const auto u = static_cast<std::uint32_t>(b);
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// A golden f64 value that must be a float32 (scales, rotated values): converted exactly.
float exact_float(const golden_case& c, double d) {
  const auto f = static_cast<float>(d);
  if (static_cast<double>(f) != d) c.fail("value " + std::to_string(d) + " is not a float32");
  return f;
}

const std::vector<golden_case>& quant_cases() {
  static const std::vector<golden_case> cases = posenc_test::load_golden("quant.txt");
  return cases;
}

std::string hex(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

// Compares the three conversions of v with the golden codes at index i; counts and reports at most 5 misses.
struct code_checker {
  const golden_case& c;
  int reported = 0;
  std::size_t checked = 0;

  void expect(const char* what, std::int64_t got, const golden_array& want, std::size_t i, float v) {
    ++checked;
    if (got == want.ivalues[i]) return;
    if (reported++ < 5)
      ADD_FAILURE() << c.name << " " << what << "[" << i << "]: v = " << v << " (" << hex(bits_of(v)) << "): got "
                    << got << ", golden " << want.ivalues[i];
  }
  void all_three(const golden_case& gc, std::size_t i, float v) {
    expect("int8", pm::quantize_int8(v), gc.array("int8"), i, v);
    expect("e4m3", pm::float_to_e4m3(v), gc.array("e4m3"), i, v);
    expect("e5m2", pm::float_to_e5m2(v), gc.array("e5m2"), i, v);
  }
};

TEST(QuantGolden, Conversions) {
  std::size_t total = 0;
  int cases = 0;
  for (const golden_case& c : quant_cases()) {
    if (c.str("kind") != "conversion") continue;
    ++cases;
    const golden_array& v = c.array("v_bits");
    code_checker chk{c};
    for (std::size_t i = 0; i < v.ivalues.size(); ++i) chk.all_three(c, i, float_of_bits(v.ivalues[i]));
    total += chk.checked;
  }
  EXPECT_GE(cases, 7);
  RecordProperty("codes_checked", static_cast<int>(total));
}

TEST(QuantGolden, ScaledByInverse) {
  int cases = 0;
  for (const golden_case& c : quant_cases()) {
    if (c.str("kind") != "scaled") continue;
    ++cases;
    const float scale = exact_float(c, c.num("scale"));
    const float inv = pm::quant_inverse_scale(scale);
    EXPECT_EQ(static_cast<double>(inv), c.num("inv")) << c.name;
    const golden_array& x = c.array("x_bits");
    code_checker chk{c};
    for (std::size_t i = 0; i < x.ivalues.size(); ++i) chk.all_three(c, i, float_of_bits(x.ivalues[i]) * inv);
    // The case holds inputs where x / scale gives another code than x * inv: dividing must fail here.
    int divide_misses = 0;
    for (std::size_t i = 0; i < x.ivalues.size(); ++i) {
      const float d = float_of_bits(x.ivalues[i]) / scale;
      divide_misses += pm::quantize_int8(d) != c.array("int8").ivalues[i] ||
                       pm::float_to_e4m3(d) != c.array("e4m3").ivalues[i] ||
                       pm::float_to_e5m2(d) != c.array("e5m2").ivalues[i];
    }
    EXPECT_EQ(divide_misses, c.integer("divide_differs")) << c.name;
  }
  EXPECT_EQ(cases, 4);
}

// The quantisation half of the fused cases, on the golden rotated values y (the RoPE half is the fused
// kernel's test): dynamic int8 scale and codes, per-head int8, e4m3 and e5m2.
TEST(QuantGolden, FusedCasesFromRotatedValues) {
  int cases = 0;
  for (const golden_case& c : quant_cases()) {
    if (c.str("kind") != "fused") continue;
    ++cases;
    const golden_array& y = c.array("y");
    const auto H = static_cast<std::size_t>(y.shape[2]);
    const auto D = static_cast<std::size_t>(y.shape[3]);
    const std::size_t rows = y.size() / D;  // (token, head) rows
    code_checker chk{c};
    int zero_heads = 0;
    for (std::size_t r = 0; r < rows; ++r) {
      const std::size_t h = r % H;
      float absmax = 0.0f;
      for (std::size_t d = 0; d < D; ++d) absmax = std::fmax(absmax, std::fabs(exact_float(c, y.values[r * D + d])));
      const float dyn = pm::int8_dynamic_scale(absmax);
      EXPECT_EQ(static_cast<double>(dyn), c.array("int8_dyn_scale").values[r]) << c.name << " row " << r;
      zero_heads += dyn == 0.0f;
      const float inv_dyn = pm::quant_inverse_scale(dyn);
      const float inv8 = pm::quant_inverse_scale(exact_float(c, c.array("int8_scale").values[h]));
      const float inv4 = pm::quant_inverse_scale(exact_float(c, c.array("e4m3_scale").values[h]));
      const float inv5 = pm::quant_inverse_scale(exact_float(c, c.array("e5m2_scale").values[h]));
      for (std::size_t d = 0; d < D; ++d) {
        const std::size_t i = r * D + d;
        const float v = exact_float(c, y.values[i]);
        chk.expect("int8_dyn", pm::quantize_int8(v * inv_dyn), c.array("int8_dyn"), i, v);
        chk.expect("int8", pm::quantize_int8(v * inv8), c.array("int8"), i, v);
        chk.expect("e4m3", pm::float_to_e4m3(v * inv4), c.array("e4m3"), i, v);
        chk.expect("e5m2", pm::float_to_e5m2(v * inv5), c.array("e5m2"), i, v);
      }
    }
    if (D == 8) {
      EXPECT_EQ(zero_heads, 1) << c.name << ": the all-zero head";
    }
  }
  EXPECT_EQ(cases, 4);
}

// The exact value of every positive finite code (golden case fp8_exact_values holds them, ascending, e4m3's
// then e5m2's merged): decoding gives exactly one of those values, and each code maps back to itself.
TEST(QuantFp8, DecodeGivesGoldenExactValues) {
  const golden_case& c = posenc_test::find_case(quant_cases(), "fp8_exact_values");
  std::vector<std::uint32_t> exact;
  for (std::int64_t b : c.array("v_bits").ivalues) exact.push_back(static_cast<std::uint32_t>(b));
  auto listed = [&](float f) {
    for (std::uint32_t b : exact)
      if (b == bits_of(f)) return true;
    return false;
  };
  int e4 = 0, e5 = 0;
  for (unsigned code = 0; code < 0x80; ++code) {
    const auto k = static_cast<std::uint8_t>(code);
    const float f4 = pm::e4m3_to_float(k);
    if (!std::isnan(f4)) {
      ++e4;
      EXPECT_TRUE(listed(f4)) << "e4m3 code " << code << " decodes to " << f4;
    }
    const float f5 = pm::e5m2_to_float(k);
    if (std::isfinite(f5)) {
      ++e5;
      EXPECT_TRUE(listed(f5)) << "e5m2 code " << code << " decodes to " << f5;
    }
  }
  EXPECT_EQ(e4, 127);  // 0x00 .. 0x7E
  EXPECT_EQ(e5, 124);  // 0x00 .. 0x7B
  EXPECT_EQ(pm::e4m3_to_float(0x7e), pm::e4m3_max);
  EXPECT_EQ(pm::e5m2_to_float(0x7b), pm::e5m2_max);
  EXPECT_EQ(pm::e4m3_to_float(0x01), 0x1.0p-9f);
  EXPECT_EQ(pm::e5m2_to_float(0x01), 0x1.0p-16f);
  EXPECT_EQ(pm::e4m3_to_float(0x08), 0x1.0p-6f);
  EXPECT_EQ(pm::e5m2_to_float(0x04), 0x1.0p-14f);
  EXPECT_EQ(pm::e5m2_to_float(0x7c), INFINITY);
  EXPECT_EQ(pm::e5m2_to_float(0xfc), -INFINITY);
}

// Every one of the 256 codes decodes and re-encodes to itself, except: NaN codes give the canonical NaN with
// their sign; E5M2's +-inf saturate to +-max.
TEST(QuantFp8, RoundTripAllCodes) {
  for (unsigned code = 0; code < 256; ++code) {
    const auto k = static_cast<std::uint8_t>(code);
    const unsigned sign = code & 0x80u;
    const float f4 = pm::e4m3_to_float(k);
    const unsigned want4 = (code & 0x7fu) == 0x7fu ? (pm::e4m3_nan_code | sign) : code;
    EXPECT_EQ(std::isnan(f4), (code & 0x7fu) == 0x7fu) << code;
    EXPECT_EQ(std::signbit(f4), sign != 0) << code;
    EXPECT_EQ(pm::float_to_e4m3(f4), want4) << "e4m3 code " << code;

    const float f5 = pm::e5m2_to_float(k);
    const unsigned mag = code & 0x7fu;
    const unsigned want5 = mag > 0x7cu ? (pm::e5m2_nan_code | sign) : mag == 0x7cu ? (pm::e5m2_max_code | sign) : code;
    EXPECT_EQ(std::isnan(f5), mag > 0x7cu) << code;
    // decoded NaNs are quiet (a signalling NaN may trap or be quietened differently on the way)
    EXPECT_TRUE(!std::isnan(f4) || (bits_of(f4) & 0x400000u) != 0u) << "e4m3 code " << code;
    EXPECT_TRUE(!std::isnan(f5) || (bits_of(f5) & 0x400000u) != 0u) << "e5m2 code " << code;
    EXPECT_EQ(std::signbit(f5), sign != 0) << code;
    EXPECT_EQ(pm::float_to_e5m2(f5), want5) << "e5m2 code " << code;
  }
  for (int q = -128; q <= 127; ++q) EXPECT_EQ(pm::quantize_int8(static_cast<float>(q)), q);
}

TEST(QuantConvert, SpecialValues) {
  EXPECT_EQ(pm::float_to_e4m3(INFINITY), 0x7e);
  EXPECT_EQ(pm::float_to_e4m3(-INFINITY), 0xfe);
  EXPECT_EQ(pm::float_to_e5m2(INFINITY), 0x7b);
  EXPECT_EQ(pm::float_to_e5m2(-INFINITY), 0xfb);
  EXPECT_EQ(pm::float_to_e4m3(NAN), 0x7f);
  EXPECT_EQ(pm::float_to_e4m3(-NAN), 0xff);
  EXPECT_EQ(pm::float_to_e5m2(NAN), 0x7e);
  EXPECT_EQ(pm::float_to_e5m2(-NAN), 0xfe);
  EXPECT_EQ(pm::float_to_e4m3(-0.0f), 0x80);
  EXPECT_EQ(pm::float_to_e5m2(-0.0f), 0x80);
  EXPECT_EQ(pm::float_to_e4m3(-0x1.0p-11f), 0x80);  // underflow keeps the sign
  EXPECT_EQ(pm::float_to_e4m3(464.0f), 0x7e);       // tie between 448 and (480): even, and saturated
  EXPECT_EQ(pm::float_to_e4m3(0x1.0p-10f), 0x00);   // tie between 0 and 2^-9: even
  EXPECT_EQ(pm::float_to_e4m3(0x1.8p-9f), 0x02);    // tie between 2^-9 and 2^-8: even
  EXPECT_EQ(pm::quantize_int8(NAN), 0);
  EXPECT_EQ(pm::quantize_int8(127.5f), 127);
  EXPECT_EQ(pm::quantize_int8(-128.5f), -128);
  EXPECT_EQ(pm::quantize_int8(-0.5f), 0);
  EXPECT_EQ(pm::quantize_int8(2.5f), 2);
  EXPECT_EQ(pm::quant_inverse_scale(0.0f), 0.0f);    // all-zero head: scale 0, inv 0, codes 0
  EXPECT_EQ(pm::quantize_int8(5.0f * pm::quant_inverse_scale(0.0f)), 0);
  EXPECT_EQ(pm::int8_dynamic_scale(0.0f), 0.0f);
  EXPECT_EQ(pm::int8_dynamic_scale(127.0f), 1.0f);
}

// Over a sweep of float32 patterns in increasing order (-inf .. +inf, every 257th pattern): codes never
// decrease in value, +-max beyond the range, and each code is a nearest value of the format.
constexpr std::uint64_t kStride = 257;  // prime: the low mantissa bits take every value along the sweep

// Calls visit(v) for every kStride-th float32 pattern from -inf up to -0, then from +0 up to +inf (increasing).
template <class Visit>
void sweep_floats(Visit&& visit) {
  auto at = [](std::uint64_t b) { return float_of_bits(static_cast<std::int64_t>(b)); };
  for (std::uint64_t b = 0xff800000u; b >= 0x80000000u; b -= kStride) visit(at(b));
  for (std::uint64_t b = 0; b <= 0x7f800000u; b += kStride) visit(at(b));
}

float decode4(std::uint8_t c) { return pm::e4m3_to_float(c); }
float decode5(std::uint8_t c) { return pm::e5m2_to_float(c); }

template <class Enc, class Dec>
void sweep(const char* name, Enc enc, Dec dec, float max) {
  float prev = -INFINITY;
  int reported = 0;
  std::size_t n = 0;
  auto visit = [&](float v) {
    ++n;
    const std::uint8_t k = enc(v);
    const float d = dec(k);
    if (!(d >= prev) && reported++ < 5) ADD_FAILURE() << name << ": not monotone at " << v;
    prev = d;
    if (std::fabs(v) >= max) {
      if (d != std::copysign(max, v) && reported++ < 5) ADD_FAILURE() << name << ": no saturation at " << v;
      return;
    }
    // nearest: the neighbours of k (same sign side; codes are ordered by magnitude) are no closer
    const double err = std::fabs(static_cast<double>(v) - static_cast<double>(d));
    const unsigned mag = k & 0x7fu, sign = k & 0x80u;
    for (int step : {-1, 1}) {
      const int m = static_cast<int>(mag) + step;
      if (m < 0) continue;
      const float o = dec(static_cast<std::uint8_t>(static_cast<unsigned>(m) | sign));
      if (!std::isfinite(o)) continue;
      const double oerr = std::fabs(static_cast<double>(v) - static_cast<double>(o));
      if (oerr < err && reported++ < 5)
        ADD_FAILURE() << name << ": " << v << " -> " << d << " but " << o << " is nearer";
    }
    if ((v < 0) != std::signbit(d) && reported++ < 5) ADD_FAILURE() << name << ": sign lost at " << v;
  };
  // negative patterns from -inf up to -0, then positive from +0 to +inf
  sweep_floats(visit);
  EXPECT_GT(n, std::size_t{0xff000000u} / kStride);
}

TEST(QuantFp8, MonotoneAndNearestOverSweep) {
  sweep("e4m3", [](float v) { return pm::float_to_e4m3(v); }, decode4, pm::e4m3_max);
  sweep("e5m2", [](float v) { return pm::float_to_e5m2(v); }, decode5, pm::e5m2_max);
}

TEST(QuantInt8, MonotoneAndNearestOverSweep) {
  int prev = -128;
  int reported = 0;
  auto visit = [&](float v) {
    const int q = pm::quantize_int8(v);
    if (q < prev && reported++ < 5) ADD_FAILURE() << "int8 not monotone at " << v;
    prev = q;
    const double want = std::fmin(127.0, std::fmax(-128.0, std::nearbyint(static_cast<double>(v))));
    if (q != static_cast<int>(want) && reported++ < 5) ADD_FAILURE() << "int8(" << v << ") = " << q;
  };
  sweep_floats(visit);
}

}  // namespace
