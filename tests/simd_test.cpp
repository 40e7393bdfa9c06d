// The SIMD layer: the compiled-in instruction set, the op list of vec<float, Isa> against values worked out
// by hand, and the vector RoPE row kernel against the scalar reference. Built into every test binary
// (posenc_tests_scalar/_avx2/_avx512); a binary whose ISA the CPU lacks skips all its tests.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>
#include <posenc/dispatch.hpp>
#include <posenc/posenc.hpp>

// Helpers with external linkage: the scalar binary instantiates none of the op checks that use them.
namespace posenc_simd_test {

std::uint16_t bits_of(Eigen::half h) { return Eigen::numext::bit_cast<std::uint16_t>(h); }
std::uint16_t bits_of(Eigen::bfloat16 h) { return Eigen::numext::bit_cast<std::uint16_t>(h); }
template <class T>
T from_bits(std::uint16_t b) {
  return Eigen::numext::bit_cast<T>(b);
}
std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

struct narrow_case {
  float in;
  std::uint16_t half_bits;
  std::uint16_t bf16_bits;
};

// Worked out by hand: ties go to the even neighbour, overflow to inf, NaN stays NaN.
inline const narrow_case narrow_cases[] = {
    {1.0f, 0x3C00, 0x3F80},
    {-2.0f, 0xC000, 0xC000},
    {0.0f, 0x0000, 0x0000},
    {-0.0f, 0x8000, 0x8000},
    {1.0f + 0x1p-11f, 0x3C00, 0x3F80},        // half tie -> even (1); bf16: 1 + 2^-11 < half ulp -> 1
    {1.0f + 3 * 0x1p-11f, 0x3C02, 0x3F80},    // half tie between odd 0x3C01 and even 0x3C02
    {1.0f + 0x1p-8f, 0x3C04, 0x3F80},         // bf16 tie -> even (1)
    {1.0f + 3 * 0x1p-8f, 0x3C0C, 0x3F82},     // bf16 tie between odd 0x3F81 and even 0x3F82
    {65504.0f, 0x7BFF, 0x4780},               // largest half; bf16 65504 -> 65536 (0x4780)
    {65520.0f, 0x7C00, 0x4780},               // half tie between 65504 and 65536 (inf) -> even = inf
    {0x1p-24f, 0x0001, 0x3380},               // smallest half subnormal
    {0x1p-25f, 0x0000, 0x3300},               // half tie between 0 and 2^-24 -> 0
    {FLT_MAX, 0x7C00, 0x7F80},                // rounds to inf in both
    {std::numeric_limits<float>::infinity(), 0x7C00, 0x7F80},
    {-std::numeric_limits<float>::infinity(), 0xFC00, 0xFF80},
    {std::numeric_limits<float>::quiet_NaN(), 0x7E00, 0x7FC0},
    {-std::numeric_limits<float>::quiet_NaN(), 0xFE00, 0xFFC0},
};

}  // namespace posenc_simd_test

namespace {

using namespace posenc_simd_test;
namespace simd = posenc::detail::simd;
using posenc::index_t;
using best = posenc::detail::best_isa;
constexpr bool has_vec = !std::is_same_v<best, simd::scalar>;

// Skips every test of the binary when the CPU cannot run the instructions it was compiled for.
class IsaEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    if (!posenc::cpu_supports(posenc::compiled_isa()))
      GTEST_SKIP() << "CPU lacks " << posenc::isa_name(posenc::compiled_isa());
  }
};
const ::testing::Environment* const isa_env = ::testing::AddGlobalTestEnvironment(new IsaEnvironment);

TEST(Simd, CompiledIsaMatchesFlags) {
  EXPECT_STREQ(posenc::isa_name(posenc::compiled_isa()), POSENC_TEST_EXPECTED_ISA);
  EXPECT_STREQ(best::name, POSENC_TEST_EXPECTED_ISA);
  EXPECT_TRUE(posenc::cpu_supports(posenc::isa::scalar));
  EXPECT_STREQ(posenc::isa_name(posenc::isa::avx512), "avx512");
}

// ---- op list ----------------------------------------------------------------------------------------------

template <class Isa>
void check_arithmetic() {
  using V = simd::vec<float, Isa>;
  constexpr int w = V::width;
  float x[w], y[w], out[w];
  for (int k = 0; k < w; ++k) {
    x[k] = static_cast<float>(k) + 0.5f;
    y[k] = 2.0f - static_cast<float>(k);
  }
  const V a = load(Isa{}, x), b = load(Isa{}, y);
  store(a, out);
  for (int k = 0; k < w; ++k) EXPECT_EQ(out[k], x[k]);
  store(add(a, b), out);
  for (int k = 0; k < w; ++k) EXPECT_EQ(out[k], x[k] + y[k]);
  store(sub(a, b), out);
  for (int k = 0; k < w; ++k) EXPECT_EQ(out[k], x[k] - y[k]);
  store(mul(a, b), out);
  for (int k = 0; k < w; ++k) EXPECT_EQ(out[k], x[k] * y[k]);
  store(set1(Isa{}, -3.25f), out);
  for (int k = 0; k < w; ++k) EXPECT_EQ(out[k], -3.25f);
  // Fused: (1 + 2^-13)^2 = 1 + 2^-12 + 2^-26, whose last term a separate multiply rounds away.
  const V u = set1(Isa{}, 1.0f + 0x1p-13f), c = set1(Isa{}, 1.0f + 0x1p-12f);
  store(fma(u, u, set1(Isa{}, -(1.0f + 0x1p-12f))), out);
  for (int k = 0; k < w; ++k) EXPECT_EQ(out[k], 0x1p-26f);
  store(fnma(u, u, c), out);
  for (int k = 0; k < w; ++k) EXPECT_EQ(out[k], -0x1p-26f);
  // Pairs.
  store(pair_swap(a), out);
  for (int k = 0; k < w; ++k) EXPECT_EQ(out[k], x[k ^ 1]);
  store(sign_alternate(a), out);
  for (int k = 0; k < w; ++k) EXPECT_EQ(bits_of(out[k]), bits_of(k % 2 == 0 ? -x[k] : x[k]));
  store(load_dup_pairs(Isa{}, x), out);
  for (int k = 0; k < w; ++k) EXPECT_EQ(out[k], x[k / 2]);
}

TEST(Simd, ArithmeticOps) {
  if constexpr (has_vec) check_arithmetic<best>();
  else GTEST_SKIP() << "no vector ISA compiled in";
}

template <class Isa>
void check_conversions() {
  using V = simd::vec<float, Isa>;
  constexpr int w = V::width;
  constexpr int n = static_cast<int>(sizeof narrow_cases / sizeof narrow_cases[0]);
  for (int start = 0; start < n; start += w) {
    float f[w];
    Eigen::half h[w];
    Eigen::bfloat16 bf[w];
    for (int k = 0; k < w; ++k) f[k] = narrow_cases[(start + k) % n].in;
    store(load(Isa{}, f), h);
    store(load(Isa{}, f), bf);
    for (int k = 0; k < w; ++k) {
      const narrow_case& c = narrow_cases[(start + k) % n];
      SCOPED_TRACE(testing::Message() << "value " << c.in);
      if (std::isnan(c.in)) {
        EXPECT_TRUE(Eigen::numext::isnan(h[k]));
        EXPECT_EQ(bits_of(h[k]) & 0x8000, c.half_bits & 0x8000);
      } else {
        EXPECT_EQ(bits_of(h[k]), c.half_bits);
      }
      EXPECT_EQ(bits_of(bf[k]), c.bf16_bits);
      EXPECT_EQ(bits_of(h[k]), bits_of(Eigen::half(c.in)));  // agrees with Eigen's scalar conversion
      EXPECT_EQ(bits_of(bf[k]), bits_of(Eigen::bfloat16(c.in)));
    }
    // Widening is exact: the narrow values come back as the floats they denote.
    float wh[w], wb[w];
    store(load(Isa{}, h), wh);
    store(load(Isa{}, bf), wb);
    for (int k = 0; k < w; ++k) {
      const float eh = static_cast<float>(h[k]), eb = static_cast<float>(bf[k]);
      if (std::isnan(eh)) {
        EXPECT_TRUE(std::isnan(wh[k]));
      } else {
        EXPECT_EQ(bits_of(wh[k]), bits_of(eh));
      }
      if (std::isnan(eb)) {
        EXPECT_TRUE(std::isnan(wb[k]));
      } else {
        EXPECT_EQ(bits_of(wb[k]), bits_of(eb));
      }
    }
  }
  // Fixed patterns widen as specified.
  Eigen::half h[w];
  Eigen::bfloat16 bf[w];
  const std::uint16_t hp[] = {0x3C00, 0x7C00, 0xFC00, 0x0001, 0x7E00};
  const std::uint16_t bp[] = {0x3F80, 0x7F80, 0xFF80, 0x0001, 0x7FC0};
  for (int k = 0; k < w; ++k) {
    h[k] = from_bits<Eigen::half>(hp[k % 5]);
    bf[k] = from_bits<Eigen::bfloat16>(bp[k % 5]);
  }
  float wh[w], wb[w];
  store(load(Isa{}, h), wh);
  store(load(Isa{}, bf), wb);
  for (int k = 0; k < w; ++k) {
    switch (k % 5) {
      case 0: EXPECT_EQ(wh[k], 1.0f); EXPECT_EQ(wb[k], 1.0f); break;
      case 1: EXPECT_EQ(wh[k], INFINITY); EXPECT_EQ(wb[k], INFINITY); break;
      case 2: EXPECT_EQ(wh[k], -INFINITY); EXPECT_EQ(wb[k], -INFINITY); break;
      case 3: EXPECT_EQ(wh[k], 0x1p-24f); EXPECT_EQ(wb[k], std::ldexp(1.0f, -133)); break;
      default: EXPECT_TRUE(std::isnan(wh[k])); EXPECT_TRUE(std::isnan(wb[k])); break;
    }
  }
  // Random values: narrowing equals Eigen's scalar round-to-nearest-even everywhere.
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> u(-70000.0f, 70000.0f);
  std::uniform_int_distribution<std::uint32_t> any_bits;
  for (int rep = 0; rep < 200; ++rep) {
    float f[w];
    for (int k = 0; k < w; ++k) {
      if (rep % 2 == 0) {
        f[k] = u(gen) * std::ldexp(1.0f, -rep / 8);
      } else {
        const std::uint32_t b = any_bits(gen);
        std::memcpy(&f[k], &b, sizeof b);
      }
    }
    store(load(Isa{}, f), h);
    store(load(Isa{}, f), bf);
    for (int k = 0; k < w; ++k) {
      if (std::isnan(f[k])) {
        EXPECT_TRUE(Eigen::numext::isnan(h[k]));
      } else {
        EXPECT_EQ(bits_of(h[k]), bits_of(Eigen::half(f[k]))) << f[k];
      }
      EXPECT_EQ(bits_of(bf[k]), bits_of(Eigen::bfloat16(f[k]))) << f[k];
    }
  }
}

TEST(Simd, HalfAndBfloat16Conversions) {
  if constexpr (has_vec) check_conversions<best>();
  else GTEST_SKIP() << "no vector ISA compiled in";
}

// ---- the vector RoPE kernel against the scalar one ----------------------------------------------------------

template <class T>
double storage_eps() {
  if constexpr (std::is_same_v<T, Eigen::half>) return 0x1p-11;
  else if constexpr (std::is_same_v<T, Eigen::bfloat16>) return 0x1p-8;
  else return 0.0;
}

// Per element, the vector kernel fuses the two products of a rotated value (one rounding fewer), so it
// agrees with the scalar kernel to within 2 float epsilons of the two products' magnitudes, plus one unit
// of the storage type where that difference straddles a narrow rounding boundary.
template <class T>
void compare_kernels(posenc::rope_style style, index_t pairs, index_t begin, index_t in_stride, unsigned seed,
                     int& exact, int& total) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f), angle(-3.2f, 3.2f);
  const index_t n = 2 * pairs * in_stride;
  std::vector<T> in(static_cast<std::size_t>(n)), out_vec(in.size()), out_ref(in.size()), inplace;
  for (T& v : in) v = T(u(gen));
  inplace = in;
  std::vector<float> cos(static_cast<std::size_t>(pairs - begin)), sin(cos.size());
  for (std::size_t i = 0; i < cos.size(); ++i) {
    const float t = angle(gen);
    cos[i] = std::cos(t);
    sin[i] = std::sin(t);
  }
  const float sign = seed % 2 == 0 ? 1.0f : -1.0f;
  posenc::detail::rope_row_kernel<best>::run<float>(style, in.data(), in_stride, out_vec.data(), in_stride, pairs,
                                                    begin, pairs, cos.data(), sin.data(), sign);
  posenc::detail::rope_row_kernel<best>::run<float>(style, inplace.data(), in_stride, inplace.data(), in_stride, pairs,
                                                    begin, pairs, cos.data(), sin.data(), sign);
  posenc::detail::rope_row_kernel<simd::scalar>::run<float>(style, in.data(), in_stride, out_ref.data(), in_stride,
                                                            pairs, begin, pairs, cos.data(), sin.data(), sign);
  for (index_t i = begin; i < pairs; ++i) {
    const index_t ia = (style == posenc::rope_style::interleaved ? 2 * i : i) * in_stride;
    const index_t ib = (style == posenc::rope_style::interleaved ? 2 * i + 1 : i + pairs) * in_stride;
    const double a = static_cast<double>(static_cast<float>(in[ia])), b = static_cast<double>(static_cast<float>(in[ib]));
    const double c = cos[i - begin], s = sin[i - begin];
    for (index_t k : {ia, ib}) {
      const double ref = static_cast<double>(static_cast<float>(out_ref[k]));
      const double got = static_cast<double>(static_cast<float>(out_vec[k]));
      const double products = k == ia ? std::abs(a * c) + std::abs(b * s) : std::abs(b * c) + std::abs(a * s);
      const double tol = 2.0 * FLT_EPSILON * products +
                         storage_eps<T>() * 2.0 * std::max(std::abs(ref), 0x1p-14);
      EXPECT_LE(std::abs(got - ref), tol) << "pair " << i << " of " << pairs << " begin " << begin;
      EXPECT_EQ(static_cast<float>(inplace[k]), static_cast<float>(out_vec[k])) << "in place differs at " << k;
      exact += got == ref;
      ++total;
    }
  }
  // Untouched: the pairs before `begin` and the features between strided elements.
  for (index_t k = 0; k < n; ++k) {
    const bool rotated = [&] {
      if (k % in_stride != 0) return false;
      const index_t f = k / in_stride;
      const index_t pair = style == posenc::rope_style::interleaved ? f / 2 : f % pairs;
      return pair >= begin;
    }();
    if (!rotated) {
      EXPECT_EQ(static_cast<float>(out_vec[k]), 0.0f) << k;
    }
  }
}

template <class T>
void compare_all(const char* dtype) {
  int exact = 0, total = 0;
  unsigned seed = 1;
  for (auto style : {posenc::rope_style::half_split, posenc::rope_style::interleaved}) {
    for (index_t pairs = 1; pairs <= 67; ++pairs) {
      compare_kernels<T>(style, pairs, 0, 1, seed++, exact, total);
      compare_kernels<T>(style, pairs, pairs / 3, 1, seed++, exact, total);  // a later chunk of the row
    }
    for (index_t pairs : {1, 8, 17, 64}) compare_kernels<T>(style, pairs, 0, 3, seed++, exact, total);  // strided
  }
  ::testing::Test::RecordProperty(std::string("exact_") + dtype, exact);
  ::testing::Test::RecordProperty(std::string("total_") + dtype, total);
  EXPECT_GT(exact, total / 2) << dtype;  // most elements are bit-identical; the rest differ by the fused rounding
}

TEST(Simd, RopeKernelMatchesScalarFloat) { compare_all<float>("float"); }
TEST(Simd, RopeKernelMatchesScalarHalf) { compare_all<Eigen::half>("half"); }
TEST(Simd, RopeKernelMatchesScalarBfloat16) { compare_all<Eigen::bfloat16>("bfloat16"); }

// Double keeps the scalar kernel in every binary: bit-identical.
TEST(Simd, RopeKernelDoubleIsScalar) {
  const index_t pairs = 19;
  std::vector<double> in(2 * pairs), a(in.size()), b(in.size()), cos(pairs), sin(pairs);
  for (index_t i = 0; i < 2 * pairs; ++i) in[static_cast<std::size_t>(i)] = 0.1 * static_cast<double>(i) - 1.0;
  for (index_t i = 0; i < pairs; ++i) {
    cos[static_cast<std::size_t>(i)] = std::cos(0.3 * static_cast<double>(i));
    sin[static_cast<std::size_t>(i)] = std::sin(0.3 * static_cast<double>(i));
  }
  posenc::detail::rope_row_kernel<best>::run<double>(posenc::rope_style::half_split, in.data(), 1, a.data(), 1, pairs, 0,
                                                     pairs, cos.data(), sin.data(), 1.0);
  posenc::detail::rope_row_kernel<simd::scalar>::run<double>(posenc::rope_style::half_split, in.data(), 1, b.data(), 1,
                                                             pairs, 0, pairs, cos.data(), sin.data(), 1.0);
  EXPECT_EQ(a, b);
}

}  // namespace
