// Run-time dispatch (posenc/dispatch.hpp) and the op list of every target (detail/simd/*.hpp) against values
// worked out by hand or in long double here, once per ISA of this architecture (Simd*/<isa>; an ISA the CPU
// lacks is skipped by name). The op code under test is compiled per target from simd_ops-inl.hpp, as the
// kernels are.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <posenc/posenc.hpp>
#include <posenc/detail/kernels/kernels.hpp>  // the kernels themselves, also under POSENC_SEPARATE_COMPILATION

#include "test_util.hpp"

namespace posenc_test_ops {

/// Array-level entry points of one target's ops (simd_ops-inl.hpp).
struct op_table {
  int width_f;
  int width_d;
  void (*arith_f)(const float*, const float*, const float*, float*, int);
  void (*arith_d)(const double*, const double*, const double*, double*, int);
  void (*convert_f)(const float*, Eigen::half*, Eigen::bfloat16*, float*, float*, int);
  void (*convert_d)(const double*, float*, Eigen::half*, Eigen::bfloat16*, double*, double*, double*, int);
  void (*bits16)(const std::uint16_t*, const std::uint16_t*, std::uint16_t*, std::uint16_t*, int);
  void (*bits_d)(const std::uint64_t*, const std::uint64_t*, const std::uint64_t*, std::uint64_t*, int);
  void (*bits_f)(const std::uint32_t*, const std::uint32_t*, const std::uint32_t*, std::uint32_t*, std::uint8_t*,
                 std::uint8_t*, int);
  void (*sincos_d)(const double*, double*, double*, int);
  void (*exp_d)(const double*, double*, int);
  // The same through the target's one-lane tail (simd::tail<isa>): what the kernels run past the last vector.
  void (*arith_tail_f)(const float*, const float*, const float*, float*, int);
  void (*arith_tail_d)(const double*, const double*, const double*, double*, int);
  void (*sincos_tail_d)(const double*, double*, double*, int);
  void (*exp_tail_d)(const double*, double*, int);
  // store_stream and stream_fence: a copy through the non-temporal stores (aligned output).
  void (*stream_f)(const float*, float*, int);
  void (*stream_d)(const double*, double*, int);
};

}  // namespace posenc_test_ops

#if POSENC_TARGET_SCALAR
#define POSENC_TEST_NS t_scalar
#define POSENC_TEST_ISA simd::scalar
#define POSENC_TEST_KERNEL_NS n_scalar
#include "simd_ops-inl.hpp"
#undef POSENC_TEST_NS
#undef POSENC_TEST_ISA
#undef POSENC_TEST_KERNEL_NS
#endif
#if POSENC_TARGET_AVX2
POSENC_BEGIN_TARGET_AVX2
#define POSENC_TEST_NS t_avx2
#define POSENC_TEST_ISA simd::avx2
#define POSENC_TEST_KERNEL_NS n_avx2
#include "simd_ops-inl.hpp"
#undef POSENC_TEST_NS
#undef POSENC_TEST_ISA
#undef POSENC_TEST_KERNEL_NS
POSENC_END_TARGET
#endif
#if POSENC_TARGET_AVX512
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
POSENC_BEGIN_TARGET_AVX512
#define POSENC_TEST_NS t_avx512
#define POSENC_TEST_ISA simd::avx512
#define POSENC_TEST_KERNEL_NS n_avx512
#include "simd_ops-inl.hpp"
#undef POSENC_TEST_NS
#undef POSENC_TEST_ISA
#undef POSENC_TEST_KERNEL_NS
POSENC_END_TARGET
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif
#if POSENC_TARGET_NEON
#define POSENC_TEST_NS t_neon
#define POSENC_TEST_ISA simd::neon
#define POSENC_TEST_KERNEL_NS n_neon
#include "simd_ops-inl.hpp"
#undef POSENC_TEST_NS
#undef POSENC_TEST_ISA
#undef POSENC_TEST_KERNEL_NS
#endif

namespace {

using namespace posenc_test;
using posenc::isa;

/// The op table of `i`, or null when this build does not compile that target.
const posenc_test_ops::op_table* ops_of(isa i) {
  static const posenc_test_ops::op_table none{};
  switch (i) {
#if POSENC_TARGET_SCALAR
    case isa::scalar: {
      static const auto t = posenc_test_ops::t_scalar::table();
      return &t;
    }
#endif
#if POSENC_TARGET_AVX2
    case isa::avx2: {
      static const auto t = posenc_test_ops::t_avx2::table();
      return &t;
    }
#endif
#if POSENC_TARGET_AVX512
    case isa::avx512: {
      static const auto t = posenc_test_ops::t_avx512::table();
      return &t;
    }
#endif
#if POSENC_TARGET_NEON
    case isa::neon: {
      static const auto t = posenc_test_ops::t_neon::table();
      return &t;
    }
#endif
    default: break;
  }
  static_cast<void>(none);
  return nullptr;
}

std::uint16_t bits_of(Eigen::half h) { return Eigen::numext::bit_cast<std::uint16_t>(h); }
std::uint16_t bits_of(Eigen::bfloat16 h) { return Eigen::numext::bit_cast<std::uint16_t>(h); }
std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
std::uint64_t bits_of(double f) {
  std::uint64_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// ---- dispatch --------------------------------------------------------------------------------------------------

TEST(Dispatch, DefaultIsTheWidestSupported) {
  posenc::reset_isa();
  const char* env = std::getenv("POSENC_ISA");
  isa want = isa::scalar;
  for (isa i : all_isas())
    if (posenc::cpu_supports(i)) want = i;  // all_isas() is in rising order
  if (env == nullptr) {
    EXPECT_EQ(posenc::active_isa(), want);
  }
  EXPECT_TRUE(posenc::cpu_supports(isa::scalar));
  RecordProperty("active_isa", posenc::isa_name(posenc::active_isa()));
}

TEST(Dispatch, SetIsaCapsAndNeverFaults) {
  for (isa i : {isa::scalar, isa::avx2, isa::avx512, isa::neon}) {
    const isa got = posenc::set_isa(i);
    EXPECT_TRUE(posenc::cpu_supports(got)) << posenc::isa_name(i);
    EXPECT_EQ(posenc::active_isa(), got);
    EXPECT_LE(posenc::detail::isa_rank(got), posenc::detail::isa_rank(i)) << posenc::isa_name(i);
    EXPECT_EQ(got, posenc::supported_isa(i));
    if (posenc::cpu_supports(i)) {
      EXPECT_EQ(got, i);
    }
  }
  EXPECT_EQ(posenc::set_isa(isa::scalar), isa::scalar);
  posenc::reset_isa();
}

TEST(Dispatch, EnvironmentVariableCapsAndUnknownValuesAreIgnored) {
  const char* old = std::getenv("POSENC_ISA");
  const std::string saved = old ? old : "";
  ASSERT_EQ(setenv("POSENC_ISA", "scalar", 1), 0);
  EXPECT_EQ(posenc::reset_isa(), isa::scalar);
  EXPECT_EQ(posenc::active_isa(), isa::scalar);
  ASSERT_EQ(setenv("POSENC_ISA", "avx512", 1), 0);
  EXPECT_EQ(posenc::reset_isa(), posenc::supported_isa(isa::avx512));
  ASSERT_EQ(setenv("POSENC_ISA", "no-such-isa", 1), 0);
  EXPECT_EQ(posenc::reset_isa(), posenc::supported_isa(isa::avx512));
  if (old) setenv("POSENC_ISA", saved.c_str(), 1);
  else unsetenv("POSENC_ISA");
  posenc::reset_isa();
}

TEST(Dispatch, NamesRoundTrip) {
  for (isa i : {isa::scalar, isa::avx2, isa::avx512, isa::neon}) {
    isa back = isa::scalar;
    EXPECT_TRUE(posenc::detail::parse_isa(posenc::isa_name(i), back));
    EXPECT_EQ(back, i);
  }
  isa x = isa::avx2;
  EXPECT_FALSE(posenc::detail::parse_isa("AVX2", x));
  EXPECT_FALSE(posenc::detail::parse_isa(nullptr, x));
}

// ---- the op list, per ISA ----------------------------------------------------------------------------------------

class SimdOps : public IsaOnlyTest {
 protected:
  const posenc_test_ops::op_table& ops() const { return *ops_of(GetParam()); }
  void SetUp() override {
    IsaOnlyTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_NE(ops_of(GetParam()), nullptr) << posenc::isa_name(GetParam()) << " is not compiled in this build";
  }
};

template <class A>
void check_arith(int w, void (*fn)(const A*, const A*, const A*, A*, int)) {
  const int n = 4 * w;
  std::vector<A> a(static_cast<std::size_t>(n)), b(a.size()), c(a.size()), out(17 * a.size());
  for (int k = 0; k < n; ++k) {
    a[static_cast<std::size_t>(k)] = static_cast<A>(k) + A(0.5);
    b[static_cast<std::size_t>(k)] = A(2) - static_cast<A>(k) * A(0.75);
    c[static_cast<std::size_t>(k)] = A(1) / static_cast<A>(k + 3);
  }
  // Fused: (1 + 2^-p)^2 = 1 + 2^(1-p) + 2^-2p, whose last term a separate multiply rounds away.
  const int p = std::numeric_limits<A>::digits / 2 + 1;
  a[1] = b[1] = A(1) + std::ldexp(A(1), -p);
  c[1] = -(A(1) + std::ldexp(A(1), 1 - p));
  fn(a.data(), b.data(), c.data(), out.data(), n);
  const auto at = [&](int op, int k) { return out[static_cast<std::size_t>(op * n + k)]; };
  for (int k = 0; k < n; ++k) {
    const auto i = static_cast<std::size_t>(k);
    SCOPED_TRACE(testing::Message() << "lane " << k << " width " << w);
    EXPECT_EQ(at(0, k), a[i] + b[i]);
    EXPECT_EQ(at(1, k), a[i] - b[i]);
    EXPECT_EQ(at(2, k), a[i] * b[i]);
    EXPECT_EQ(at(3, k), a[i] / b[i]);
    if (w > 1 && k == 1) {
      EXPECT_EQ(at(4, k), std::ldexp(A(1), -2 * p));  // fused: one rounding
      EXPECT_EQ(at(5, k), std::fma(-a[i], b[i], c[i]));
    } else if (w > 1) {
      EXPECT_EQ(at(4, k), std::fma(a[i], b[i], c[i]));
      EXPECT_EQ(at(5, k), std::fma(-a[i], b[i], c[i]));
    } else {  // the scalar target: two roundings unless the compiler contracts
      EXPECT_NEAR(at(4, k), std::fma(a[i], b[i], c[i]), 4 * std::numeric_limits<A>::epsilon() * std::fabs(a[i] * b[i]));
    }
    EXPECT_EQ(at(6, k), std::min(a[i], b[i]));
    EXPECT_EQ(at(7, k), std::max(a[i], b[i]));
    EXPECT_EQ(at(8, k), a[0]);
    // zip/unzip inside each vector of w lanes: zip_lo/hi are lanes [0, w) / [w, 2w) of a0 b0 a1 b1 ...,
    // unzip_even/odd the even / odd lanes of a0 .. a{w-1} b0 .. b{w-1}.
    const int base = k / w * w, j = k % w;
    const auto inter = [&](int t) { return t % 2 == 0 ? a[static_cast<std::size_t>(base + t / 2)] : b[static_cast<std::size_t>(base + t / 2)]; };
    const auto concat = [&](int t) { return t < w ? a[static_cast<std::size_t>(base + t)] : b[static_cast<std::size_t>(base + t - w)]; };
    EXPECT_EQ(at(9, k), inter(j)) << "zip_lo";
    EXPECT_EQ(at(10, k), inter(w + j)) << "zip_hi";
    EXPECT_EQ(at(11, k), concat(2 * j)) << "unzip_even";
    EXPECT_EQ(at(12, k), concat(2 * j + 1)) << "unzip_odd";
    if (w >= 2) {
      EXPECT_EQ(at(13, k), a[static_cast<std::size_t>(k ^ 1)]) << "pair_swap";
      EXPECT_EQ(bits_of(at(14, k)), bits_of(k % 2 == 0 ? -a[i] : a[i])) << "sign_alternate";
      EXPECT_EQ(at(15, k), a[static_cast<std::size_t>(base / 2 + j / 2)]) << "load_dup_pairs";
    }
    A m = a[static_cast<std::size_t>(base)] * b[static_cast<std::size_t>(base)];  // a * b peaks at lane 1, inside
    for (int t = 1; t < w; ++t) m = std::max(m, a[static_cast<std::size_t>(base + t)] * b[static_cast<std::size_t>(base + t)]);
    EXPECT_EQ(at(16, k), m) << "reduce_max";
  }
  // min/max pass the second operand on NaN (the bound-first convention of the kernels), whichever is the NaN,
  // on every ISA (NEON's FMIN/FMAX would return the NaN).
  std::vector<A> na(a.size(), std::numeric_limits<A>::quiet_NaN()), one(a.size(), A(1));
  fn(one.data(), na.data(), c.data(), out.data(), n);
  EXPECT_TRUE(std::isnan(at(6, 0)));
  EXPECT_TRUE(std::isnan(at(7, 0)));
  fn(na.data(), one.data(), c.data(), out.data(), n);
  for (int k = 0; k < n; ++k) {
    EXPECT_EQ(at(6, k), A(1)) << "min(NaN, 1), lane " << k;
    EXPECT_EQ(at(7, k), A(1)) << "max(NaN, 1), lane " << k;
  }
}

TEST_P(SimdOps, ArithmeticPairsAndLayoutFloat) { check_arith<float>(ops().width_f, ops().arith_f); }
TEST_P(SimdOps, ArithmeticPairsAndLayoutDouble) { check_arith<double>(ops().width_d, ops().arith_d); }

struct narrow_case {
  float in;
  std::uint16_t half_bits;
  std::uint16_t bf16_bits;
};

// Worked out by hand: ties go to the even neighbour, overflow to inf, NaN stays NaN.
const narrow_case narrow_cases[] = {
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
    {1e-40f, 0x0000, 0x0001},                 // a float denormal: bf16 keeps it (no flush to zero)
    {std::numeric_limits<float>::infinity(), 0x7C00, 0x7F80},
    {-std::numeric_limits<float>::infinity(), 0xFC00, 0xFF80},
    {std::numeric_limits<float>::quiet_NaN(), 0x7E00, 0x7FC0},
    {-std::numeric_limits<float>::quiet_NaN(), 0xFE00, 0xFFC0},
};

TEST_P(SimdOps, FloatNarrowsToHalfAndBfloat16ByRoundToNearestEven) {
  const int w = ops().width_f;
  constexpr int m = static_cast<int>(sizeof narrow_cases / sizeof narrow_cases[0]);
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> u(-70000.0f, 70000.0f);
  std::uniform_int_distribution<std::uint32_t> any_bits;
  const int n = 64 * w;
  std::vector<float> in(static_cast<std::size_t>(n)), wh(in.size()), wb(in.size());
  std::vector<Eigen::half> h(in.size());
  std::vector<Eigen::bfloat16> bf(in.size());
  for (int k = 0; k < n; ++k) {
    float& f = in[static_cast<std::size_t>(k)];
    if (k < 2 * m) f = narrow_cases[k % m].in;
    else if (k % 2 == 0) f = u(gen) * std::ldexp(1.0f, -(k % 40));
    else {
      const std::uint32_t b = any_bits(gen);
      std::memcpy(&f, &b, sizeof b);
    }
  }
  ops().convert_f(in.data(), h.data(), bf.data(), wh.data(), wb.data(), n);
  for (int k = 0; k < n; ++k) {
    const auto i = static_cast<std::size_t>(k);
    SCOPED_TRACE(testing::Message() << "value " << in[i] << " bits " << std::hex << bits_of(in[i]));
    if (k < 2 * m) {
      const narrow_case& c = narrow_cases[k % m];
      if (std::isnan(c.in)) {
        EXPECT_TRUE(Eigen::numext::isnan(h[i]));
        EXPECT_EQ(bits_of(h[i]) & 0x8000, c.half_bits & 0x8000);
      } else {
        EXPECT_EQ(bits_of(h[i]), c.half_bits);
      }
      EXPECT_EQ(bits_of(bf[i]), c.bf16_bits);
    }
    if (std::isnan(in[i])) {
      EXPECT_TRUE(Eigen::numext::isnan(h[i]));
      EXPECT_TRUE(Eigen::numext::isnan(bf[i]));
      EXPECT_TRUE(std::isnan(wh[i]));
      EXPECT_TRUE(std::isnan(wb[i]));
      continue;
    }
    EXPECT_EQ(bits_of(h[i]), bits_of(Eigen::half(in[i])));  // Eigen's scalar round to nearest even
    EXPECT_EQ(bits_of(bf[i]), bits_of(Eigen::bfloat16(in[i])));
    EXPECT_EQ(bits_of(wh[i]), bits_of(static_cast<float>(h[i])));  // widening is exact
    EXPECT_EQ(bits_of(wb[i]), bits_of(static_cast<float>(bf[i])));
  }
}

TEST_P(SimdOps, DoubleNarrowsOnceToFloatAndThroughFloatToHalf) {
  const int w = ops().width_d;
  const int n = 64 * w;
  std::mt19937_64 gen(3);
  std::uniform_real_distribution<double> u(-1e5, 1e5);
  std::vector<double> in(static_cast<std::size_t>(n)), wf(in.size()), wh(in.size()), wb(in.size());
  std::vector<float> f(in.size());
  std::vector<Eigen::half> h(in.size());
  std::vector<Eigen::bfloat16> bf(in.size());
  for (int k = 0; k < n; ++k) in[static_cast<std::size_t>(k)] = u(gen) * std::ldexp(1.0, -(k % 60));
  in[0] = 1.0 + 0x1p-24;              // float tie -> even (1)
  in[1] = 1.0 + 0x1p-24 + 0x1p-40;    // just above the tie -> up
  in[2] = std::numeric_limits<double>::quiet_NaN();
  in[3] = 1e300;                      // overflow -> inf
  ops().convert_d(in.data(), f.data(), h.data(), bf.data(), wf.data(), wh.data(), wb.data(), n);
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[1], 1.0f + 0x1p-23f);
  EXPECT_TRUE(std::isnan(f[2]));
  EXPECT_EQ(f[3], std::numeric_limits<float>::infinity());
  for (int k = 0; k < n; ++k) {
    const auto i = static_cast<std::size_t>(k);
    if (std::isnan(in[i])) continue;
    SCOPED_TRACE(testing::Message() << "value " << in[i]);
    EXPECT_EQ(bits_of(f[i]), bits_of(static_cast<float>(in[i])));
    EXPECT_EQ(bits_of(h[i]), bits_of(Eigen::half(static_cast<float>(in[i]))));  // store_as: through float
    EXPECT_EQ(bits_of(bf[i]), bits_of(Eigen::bfloat16(static_cast<float>(in[i]))));
    EXPECT_EQ(wf[i], static_cast<double>(f[i]));
    EXPECT_EQ(wh[i], static_cast<double>(static_cast<float>(h[i])));
    EXPECT_EQ(wb[i], static_cast<double>(static_cast<float>(bf[i])));
  }
}

TEST_P(SimdOps, SixteenBitPatternsMoveBitForBit) {
  const int w = ops().width_f;
  const int n = 4 * w;
  std::vector<std::uint16_t> a(static_cast<std::size_t>(n)), b(a.size()), lo(a.size()), hi(a.size());
  for (int k = 0; k < n; ++k) {
    a[static_cast<std::size_t>(k)] = static_cast<std::uint16_t>(0x7C01 + 3 * k);  // signaling-NaN halves among them
    b[static_cast<std::size_t>(k)] = static_cast<std::uint16_t>(0xFFFF - 5 * k);
  }
  ops().bits16(a.data(), b.data(), lo.data(), hi.data(), n);
  for (int k = 0; k < n; ++k) {
    const int base = k / w * w, j = k % w;
    const auto i = static_cast<std::size_t>(k);
    const auto pick = [&](int idx) {
      const int src = base + idx / 2;
      return idx % 2 == 0 ? a[static_cast<std::size_t>(src)] : b[static_cast<std::size_t>(src)];
    };
    EXPECT_EQ(lo[i], pick(j)) << k;
    EXPECT_EQ(hi[i], pick(w + j)) << k;
  }
}

TEST_P(SimdOps, StreamingStoresWriteTheVectorsBitForBit) {
  // Output at a 64-byte boundary (the widest vector's alignment); every pattern, NaN payloads among them.
  const int n = 8 * ops().width_f;
  std::vector<float> in_f(static_cast<std::size_t>(n)), out_f(static_cast<std::size_t>(n) + 16, -1.0f);
  std::vector<double> in_d(static_cast<std::size_t>(n)), out_d(static_cast<std::size_t>(n) + 8, -1.0);
  for (int k = 0; k < n; ++k) {
    const std::uint32_t bf = 0x7f800001u + 0x01234567u * static_cast<std::uint32_t>(k);
    const std::uint64_t bd = 0x7ff0000000000001ull + 0x0123456789abcdefull * static_cast<std::uint64_t>(k);
    std::memcpy(&in_f[static_cast<std::size_t>(k)], &bf, sizeof bf);
    std::memcpy(&in_d[static_cast<std::size_t>(k)], &bd, sizeof bd);
  }
  const auto aligned = [](auto& v) {
    auto* p = v.data();
    while (reinterpret_cast<std::uintptr_t>(p) % 64 != 0) ++p;
    return p;
  };
  float* of = aligned(out_f);
  double* od = aligned(out_d);
  ops().stream_f(in_f.data(), of, n);
  ops().stream_d(in_d.data(), od, n);
  EXPECT_EQ(std::memcmp(of, in_f.data(), sizeof(float) * static_cast<std::size_t>(n)), 0);
  EXPECT_EQ(std::memcmp(od, in_d.data(), sizeof(double) * static_cast<std::size_t>(n)), 0);
  EXPECT_EQ(of[n], -1.0f) << "written past the end";
  EXPECT_EQ(od[n], -1.0) << "written past the end";
}

TEST_P(SimdOps, BitsOfDoubleLanes) {
  const int w = ops().width_d;
  const int n = 4 * w;
  std::mt19937_64 gen(11);
  std::vector<std::uint64_t> a(static_cast<std::size_t>(n)), b(a.size()), c(a.size()), out(7 * a.size());
  for (auto* v : {&a, &b, &c})
    for (auto& x : *v) x = gen();
  a[0] = 0x7FF0000000000000ull;  // patterns that are not ordinary doubles travel unchanged
  b[0] = 0xFFF8000000000001ull;
  ops().bits_d(a.data(), b.data(), c.data(), out.data(), n);
  for (int k = 0; k < n; ++k) {
    const auto i = static_cast<std::size_t>(k);
    const auto at = [&](int op) { return out[static_cast<std::size_t>(op * n + k)]; };
    EXPECT_EQ(at(0), a[i] & b[i]);
    EXPECT_EQ(at(1), a[i] ^ b[i]);
    EXPECT_EQ(at(2), a[i] + b[i]);
    EXPECT_EQ(at(3), a[i] << 52);
    EXPECT_EQ(at(4), a[i] << 63);
    EXPECT_EQ(at(5), (a[i] >> 63) != 0 ? c[i] : b[i]);
    EXPECT_EQ(at(6), a[static_cast<std::size_t>(k / w * w)]);
  }
}

TEST_P(SimdOps, BitsOfFloatLanes) {
  const int w = ops().width_f;
  const int n = std::max(4 * w, 16);  // a multiple of 4 widths, room for the ties below
  std::mt19937 gen(13);
  std::vector<std::uint32_t> a(static_cast<std::size_t>(n)), b(a.size()), c(a.size()), out(8 * a.size());
  std::vector<std::uint8_t> bytes(a.size() + 16, 0xA5), bytes4(a.size() + 16, 0xA5);
  for (auto* v : {&a, &b, &c})
    for (auto& x : *v) x = static_cast<std::uint32_t>(gen());
  a[0] = 0x7F800001u;  // a signalling NaN pattern and a negative zero travel unchanged
  b[0] = 0x80000000u;
  a[1] = 0x00000001u;  // wrapping subtraction
  b[1] = 0x00000002u;
  // nearest_int_bits of a * 2^-12: ties 0.5, 1.5, -0.5, -1.5, 2.5 go to the even neighbour
  const std::uint32_t ties[] = {0x800u, 0x1800u, 0xFFFFF800u, 0xFFFFE800u, 0x2800u};
  for (std::size_t t = 0; t < 5; ++t) a[2 + t] = ties[t];
  ops().bits_f(a.data(), b.data(), c.data(), out.data(), bytes.data(), bytes4.data(), n);
  for (int k = 0; k < n; ++k) {
    const auto i = static_cast<std::size_t>(k);
    const auto at = [&](int op) { return out[static_cast<std::size_t>(op * n + k)]; };
    EXPECT_EQ(at(0), a[i] & b[i]);
    EXPECT_EQ(at(1), a[i] | b[i]);
    EXPECT_EQ(at(2), a[i] - b[i]);
    EXPECT_EQ(at(3), a[i] >> 20);
    EXPECT_EQ(at(4), a[i] >> 31);
    EXPECT_EQ(at(5), (a[i] >> 31) != 0 ? c[i] : b[i]);
    EXPECT_EQ(at(6), a[static_cast<std::size_t>(k / w * w)]);
    const float v = static_cast<float>(static_cast<std::int32_t>(a[i])) * 0x1p-12f;
    EXPECT_EQ(at(7), static_cast<std::uint32_t>(static_cast<std::int32_t>(std::nearbyint(v)))) << "nearest_int_bits of " << v;
    EXPECT_EQ(bytes[i], static_cast<std::uint8_t>(a[i])) << "store_u8_bits";
    EXPECT_EQ(bytes4[i], static_cast<std::uint8_t>(a[i])) << "store_u8_bits of four vectors";
  }
  for (std::size_t i = a.size(); i < bytes.size(); ++i) {
    EXPECT_EQ(bytes[i], 0xA5) << "store_u8_bits wrote past its lanes";
    EXPECT_EQ(bytes4[i], 0xA5) << "store_u8_bits of four vectors wrote past its lanes";
  }
}

// The vector sin/cos of the cache-free path against long double: within 2 ulp of 1 up to |x| = 2^24 (the
// exact-reduction limit), including multiples of pi/2 where the reduction cancels.
TEST_P(SimdOps, SincosWithinTwoUlpUpToTwoToThe24) {
  const int w = ops().width_d;
  std::mt19937_64 gen(5);
  std::vector<double> x;
  for (int e = -30; e <= 24; ++e)
    for (int r = 0; r < 40; ++r) {
      const double v = std::ldexp(std::uniform_real_distribution<double>(1.0, 2.0)(gen), e - 1);
      x.push_back(r % 2 ? v : -v);
    }
  const long double half_pi = 1.5707963267948966192313216916397514L;
  for (long long k : {1LL, 2LL, 3LL, 4LL, 100LL, 12345LL, 6543210LL, 10680707LL})
    for (double toward : {0.0, 1e300}) x.push_back(std::nextafter(static_cast<double>(static_cast<long double>(k) * half_pi), toward));
  for (double v : {0.0, -0.0, 1.0, 0x1p24 - 1.0}) x.push_back(v);
  while (x.size() % static_cast<std::size_t>(w) != 0) x.push_back(0.5);
  std::vector<double> s(x.size()), c(x.size());
  ops().sincos_d(x.data(), s.data(), c.data(), static_cast<int>(x.size()));
  double worst = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const long double xl = x[i];
    const long double es = std::sin(xl), ec = std::cos(xl);
    const double err = static_cast<double>(std::max(std::fabs(es - s[i]), std::fabs(ec - c[i])));
    worst = std::max(worst, err);
    ASSERT_LE(err, 2 * DBL_EPSILON) << "x = " << x[i] << " sin " << s[i] << " cos " << c[i];
  }
  RecordProperty("max_abs_error", sci(worst));
}

TEST_P(SimdOps, ExpWithinTwoUlpOverTheWholeRange) {
  const int w = ops().width_d;
  std::vector<double> x;
  for (double v = -760.0; v <= 720.0; v += 0.37) x.push_back(v);
  for (double v : {0.0, -0.0, 1e-300, 709.78, 709.79, -745.13, -745.14, -2000.0, 2000.0, 1e308, -1e308})
    x.push_back(v);
  x.push_back(std::numeric_limits<double>::quiet_NaN());
  while (x.size() % static_cast<std::size_t>(w) != 0) x.push_back(1.0);
  std::vector<double> y(x.size());
  ops().exp_d(x.data(), y.data(), static_cast<int>(x.size()));
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double want = std::exp(x[i]);
    if (std::isnan(x[i])) {
      EXPECT_TRUE(std::isnan(y[i]));
      continue;
    }
    if (std::isinf(want) || want == 0.0) {
      EXPECT_EQ(y[i], want) << "x = " << x[i];
      continue;
    }
    const double ulp = want < DBL_MIN ? std::numeric_limits<double>::denorm_min() : std::ldexp(DBL_EPSILON, std::ilogb(want));
    EXPECT_LE(std::fabs(y[i] - want), 2 * ulp) << "x = " << x[i] << " got " << y[i] << " want " << want;
  }
}

// A kernel's tail (the elements past its last full vector, and strided rows) runs the target's one-lane ops;
// they must round exactly as the vectors (fma fused on every vector target, whatever the compiler contracts),
// so a row's result
// never depends on where a vector ends. Bit for bit on random operands, the fused case of check_arith, and the
// sincos / exp inputs.
template <class A>
void check_tail_matches_body(int w, void (*body)(const A*, const A*, const A*, A*, int),
                             void (*tail)(const A*, const A*, const A*, A*, int)) {
  const int n = 64 * w;
  std::mt19937_64 gen(11);
  std::uniform_real_distribution<double> u(-4.0, 4.0);
  std::vector<A> a(static_cast<std::size_t>(n)), b(a.size()), c(a.size()), ob(17 * a.size()), ot(17 * a.size());
  for (std::size_t k = 0; k < a.size(); ++k) {
    a[k] = static_cast<A>(u(gen));
    b[k] = static_cast<A>(u(gen));
    c[k] = static_cast<A>(u(gen));
  }
  const int p = std::numeric_limits<A>::digits / 2 + 1;
  a[1] = b[1] = A(1) + std::ldexp(A(1), -p);
  c[1] = -(A(1) + std::ldexp(A(1), 1 - p));
  body(a.data(), b.data(), c.data(), ob.data(), n);
  tail(a.data(), b.data(), c.data(), ot.data(), n);
  const char* names[] = {"add", "sub", "mul", "div", "fma", "fnma", "min", "max", "set1",
                         "zip_lo", "zip_hi", "unzip_even", "unzip_odd"};
  int fused_differs = 0;
  for (int op = 0; op < 13; ++op) {
    if (op >= 8 && w > 1) continue;  // set1 and the pairings depend on the vector's lanes, not on rounding
    for (int k = 0; k < n; ++k) {
      const auto i = static_cast<std::size_t>(op * n + k);
      ASSERT_EQ(bits_of(ot[i]), bits_of(ob[i])) << names[op] << " lane " << k << ": tail " << ot[i] << " body " << ob[i];
    }
  }
  // The operands distinguish a fused from an unfused tail: their two-rounding results differ somewhere. The
  // product goes through a volatile so that the compiler cannot contract this reference into an FMA itself
  // (GCC does in C++ wherever the target has one, AArch64's baseline included).
  for (int k = 0; k < n; ++k) {
    const auto i = static_cast<std::size_t>(k);
    volatile A product = a[i] * b[i];
    if (std::fma(a[i], b[i], c[i]) != product + c[i]) ++fused_differs;
  }
  EXPECT_GT(fused_differs, 0);
}

TEST_P(SimdOps, TailRoundsAsTheBodyFloat) { check_tail_matches_body<float>(ops().width_f, ops().arith_f, ops().arith_tail_f); }
TEST_P(SimdOps, TailRoundsAsTheBodyDouble) {
  check_tail_matches_body<double>(ops().width_d, ops().arith_d, ops().arith_tail_d);
}
TEST_P(SimdOps, TailSincosAndExpMatchTheBody) {
  const int w = ops().width_d;
  std::mt19937_64 gen(13);
  std::vector<double> x;
  for (int e = -30; e <= 24; ++e)
    for (int r = 0; r < 8; ++r) x.push_back(std::ldexp(std::uniform_real_distribution<double>(-2.0, 2.0)(gen), e));
  while (x.size() % static_cast<std::size_t>(w) != 0) x.push_back(0.5);
  const int n = static_cast<int>(x.size());
  std::vector<double> sb(x.size()), cb(x.size()), st(x.size()), ct(x.size()), eb(x.size()), et(x.size());
  ops().sincos_d(x.data(), sb.data(), cb.data(), n);
  ops().sincos_tail_d(x.data(), st.data(), ct.data(), n);
  std::vector<double> ex(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) ex[i] = std::fmod(x[i], 700.0);
  ops().exp_d(ex.data(), eb.data(), n);
  ops().exp_tail_d(ex.data(), et.data(), n);
  for (std::size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(bits_of(st[i]), bits_of(sb[i])) << "sin x = " << x[i];
    ASSERT_EQ(bits_of(ct[i]), bits_of(cb[i])) << "cos x = " << x[i];
    ASSERT_EQ(bits_of(et[i]), bits_of(eb[i])) << "exp x = " << ex[i];
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, SimdOps, ::testing::ValuesIn(all_isas()), isa_only_name);

}  // namespace
