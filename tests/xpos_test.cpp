// xPos against tests/golden/xpos.txt (torchscale XPOS in mpmath) on every dtype, through the rank-3
// (N, L, D) input of torchscale via as_nlhd(x, layout::nld), in place and out of place; and its properties:
// backward(forward(x)) = s^2 x per pair (the backward is the transpose), the q.k score depends only on m - n
// and not on the centre, and max_safe_distance<T>() follows its formula. Out of place from float into half,
// bfloat16, float and double (a KV cache) against the formula in long double, one rounding. The try_ forms
// (no-throw API): a rejected input gives the throwing form's message as an invalid_argument status and
// writes nothing, an accepted one gives the throwing form's bits.
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <posenc/posenc.hpp>

#include "test_util.hpp"

namespace {

using posenc::index_t;
using posenc::rope_style;
using posenc::xpos_mode;
using namespace posenc_test;

template <class T>
using RowMajor3 = Eigen::Tensor<T, 3, Eigen::RowMajor>;

// ------------------------------------------------------------------------------------------ golden

class XposGolden : public IsaTest<std::string> {};

std::vector<std::string> xpos_case_names() {
  return golden_case_names("xpos.txt");
}

template <class T>
void run_golden(const golden_case& c, const posenc::xpos_plan& plan, index_t center) {
  const auto& xs = c.array("x");
  const index_t n_batch = xs.shape[0], n_len = xs.shape[1], d = xs.shape[2];
  const auto pos = posenc::positions::offset(c.integer("offset"));
  const xpos_mode mode = c.integer("downscale") != 0 ? xpos_mode::downscale : xpos_mode::upscale;
  const std::vector<T> x0 = to_storage<T>(xs);
  {  // In place.
    std::vector<T> x = x0;
    Eigen::TensorMap<RowMajor3<T>> t(x.data(), n_batch, n_len, d);
    posenc::apply_xpos(plan, posenc::as_nlhd(t, posenc::layout::nld), pos, center, mode);
    expect_xpos_close(x, c, c.name + " in place");
  }
  {  // Out of place: the input is untouched.
    std::vector<T> x = x0;
    std::vector<T> y(x.size(), T(0));
    Eigen::TensorMap<RowMajor3<T>> tx(x.data(), n_batch, n_len, d);
    Eigen::TensorMap<RowMajor3<T>> ty(y.data(), n_batch, n_len, d);
    posenc::apply_xpos(plan, posenc::as_nlhd(tx, posenc::layout::nld), posenc::as_nlhd(ty, posenc::layout::nld), pos, center,
                       mode);
    expect_xpos_close(y, c, c.name + " out of place");
    for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(as_double(x[i]), as_double(x0[i])) << c.name << ": input modified";
  }
}

TEST_P(XposGolden, AllDtypes) {
  const auto cases = load_golden("xpos.txt");
  const golden_case& c = find_case(cases, param());
  const posenc::xpos_plan plan(xpos_config_of(c));
  const index_t p0 = c.integer("offset");
  const index_t n_len = c.array("x").shape[1];
  index_t center = c.integer("center");
  if (c.integer("center_default") != 0) {
    center = posenc::xpos_default_center(n_len, p0);
    EXPECT_EQ(center, c.integer("center")) << "xpos_default_center(" << n_len << ", " << p0 << ")";
  }
  run_golden<float>(c, plan, center);
  run_golden<double>(c, plan, center);
  run_golden<Eigen::bfloat16>(c, plan, center);

  // Eigen::half: its normal range is [6.1e-5, 65504], so zeta_0^(+-|p - C|/scale_base) stays inside it only for
  // |p - C| <= max_safe_distance<Eigen::half>() (about 3966 positions at gamma 0.4, scale_base 512). The far_*
  // cases put the tokens ~30000 positions from the centre: their outputs (~1e-32 / ~1e+32) do not exist in
  // half, so half is skipped there, and only there.
  index_t distance = 0;
  for (index_t l = 0; l < n_len; ++l) distance = std::max<index_t>(distance, std::abs(p0 + l - center));
  const double half_limit = plan.max_safe_distance<Eigen::half>();
  const bool far = c.str("tolerance_mode") == "relative";
  EXPECT_EQ(static_cast<double>(distance) > half_limit, far)
      << c.name << ": |p - C| up to " << distance << ", half's safe distance " << half_limit;
  if (static_cast<double>(distance) <= half_limit) run_golden<Eigen::half>(c, plan, center);
}

INSTANTIATE_TEST_SUITE_P(Golden, XposGolden,
                         ::testing::Combine(::testing::ValuesIn(xpos_case_names()), ::testing::ValuesIn(all_isas())),
                         IsaParamName{});

// torchscale: min_pos = -(L + P0) // 2 (floor division), the centre is -min_pos.
TEST(XposDefaultCenter, IsTorchscaleMinPos) {
  for (index_t n = 0; n <= 9; ++n)
    for (index_t p0 : {0, 1, 2, 3, 4090, 1000001}) {
      const index_t total = n + p0;
      const index_t floor_div = -total / 2 - ((-total) % 2 != 0 ? 1 : 0);  // Python's (-total) // 2
      EXPECT_EQ(posenc::xpos_default_center(n, p0), -floor_div) << "L=" << n << " P0=" << p0;
    }
}

// ------------------------------------------------------------------------------------------ properties

double zeta(index_t i, index_t d, double gamma) {
  return (2.0 * static_cast<double>(i) / static_cast<double>(d) + gamma) / (1.0 + gamma);
}

// The backward pass rotates by -theta with the same scale s, so backward(forward(x)) = s^2 x for each pair,
// s = zeta_i^((p - C)/scale_base) for upscale and its reciprocal for downscale.
template <class T>
void check_backward(rope_style style, xpos_mode mode, double rel_tol) {
  constexpr index_t N = 2, L = 6, D = 16;
  constexpr index_t p0 = 1500, center = 300;
  posenc::xpos_config cfg;
  cfg.head_dim = D;
  cfg.style = style;
  const posenc::xpos_plan plan(cfg);
  const std::vector<T> x = random_values<T>(static_cast<std::size_t>(N * L * D), 17);
  std::vector<T> y = x;
  Eigen::TensorMap<RowMajor3<T>> t(y.data(), N, L, D);
  const auto pos = posenc::positions::offset(p0);
  posenc::apply_xpos(plan, posenc::as_nlhd(t, posenc::layout::nld), pos, center, mode);
  posenc::apply_xpos_backward(plan, posenc::as_nlhd(t, posenc::layout::nld), pos, center, mode);
  const std::string what = std::string(style == rope_style::interleaved ? "interleaved" : "half_split") +
                           (mode == xpos_mode::upscale ? " up " : " down ") + dtype_info<T>::name;
  for (index_t n = 0; n < N; ++n)
    for (index_t l = 0; l < L; ++l)
      for (index_t i = 0; i < D / 2; ++i) {
        double s = std::pow(zeta(i, D, cfg.gamma), static_cast<double>(p0 + l - center) / cfg.scale_base);
        if (mode == xpos_mode::downscale) s = 1.0 / s;
        for (index_t f : pair_features(style, D, i)) {
          const std::size_t e = static_cast<std::size_t>((n * L + l) * D + f);
          const double want = s * s * static_cast<double>(x[e]);
          EXPECT_NEAR(static_cast<double>(y[e]), want, rel_tol * std::max(std::fabs(want), s * s)) << what << " element " << e;
        }
      }
}

TEST(XposProperties, BackwardOfForwardIsScaleSquared) {
  for (rope_style style : {rope_style::interleaved, rope_style::half_split})
    for (xpos_mode mode : {xpos_mode::upscale, xpos_mode::downscale}) {
      check_backward<double>(style, mode, 1e-13);
      check_backward<float>(style, mode, 1e-6);
    }
}

// <xpos_up(q, m), xpos_down(k, n)> = sum_i zeta_i^((m-n)/scale_base) * <R(m w_i) q_i, R(n w_i) k_i>, which
// depends on m - n only; the centre cancels. Checked against that formula for centres 0, 1000 and 100000
// at positions around 100000 (where zeta^(+-p/512) reaches 1e+-106: double storage). The error bound is the
// angle error (p+1)*2^-52 per rotation times |q||k|, and ~1e-12 relative for the scale's exp.
TEST(XposProperties, ScoreDependsOnlyOnDistanceNotCentre) {
  constexpr index_t D = 32;
  for (rope_style style : {rope_style::interleaved, rope_style::half_split}) {
    posenc::xpos_config cfg;
    cfg.head_dim = D;
    cfg.style = style;
    const posenc::xpos_plan plan(cfg);
    const std::vector<double> q0 = random_values<double>(D, 91);
    const std::vector<double> k0 = random_values<double>(D, 92);
    double qq = 0.0, kk = 0.0;
    for (index_t f = 0; f < D; ++f) {
      qq += q0[static_cast<std::size_t>(f)] * q0[static_cast<std::size_t>(f)];
      kk += k0[static_cast<std::size_t>(f)] * k0[static_cast<std::size_t>(f)];
    }
    const auto expected = [&](index_t m, index_t n) {  // the formula, from the definition
      double s = 0.0;
      for (index_t i = 0; i < D / 2; ++i) {
        const auto ab = pair_features(style, D, i);
        const double qa = q0[static_cast<std::size_t>(ab[0])], qb = q0[static_cast<std::size_t>(ab[1])];
        const double ka = k0[static_cast<std::size_t>(ab[0])], kb = k0[static_cast<std::size_t>(ab[1])];
        const double phi = static_cast<double>(n - m) * std::pow(10000.0, -2.0 * static_cast<double>(i) / D);
        const double rot = qa * (ka * std::cos(phi) - kb * std::sin(phi)) + qb * (kb * std::cos(phi) + ka * std::sin(phi));
        s += std::pow(zeta(i, D, 0.4), static_cast<double>(m - n) / 512.0) * rot;
      }
      return s;
    };
    const auto score = [&](index_t m, index_t n, index_t center, bool qk_call) {
      std::vector<double> q = q0;
      std::vector<double> k = k0;
      posenc::strided_view<double, 4> vq(q.data(), {1, 1, 1, D});
      posenc::strided_view<double, 4> vk(k.data(), {1, 1, 1, D});
      if (qk_call) {  // one call, q up and k down; needs m == n (one position per token)
        posenc::apply_xpos_qk(plan, vq, vk, posenc::positions::offset(m), center);
      } else {
        posenc::apply_xpos(plan, vq, posenc::positions::offset(m), center, xpos_mode::upscale);
        posenc::apply_xpos(plan, vk, posenc::positions::offset(n), center, xpos_mode::downscale);
      }
      double s = 0.0;
      for (std::size_t f = 0; f < q.size(); ++f) s += q[f] * k[f];
      return s;
    };
    const double qk = std::sqrt(qq * kk);
    const std::string sname = style == rope_style::interleaved ? "interleaved" : "half_split";
    for (index_t center : {0, 1000, 100000}) {
      for (const auto& [m, n] : {std::array<index_t, 2>{100003, 100001}, {100000, 100000}, {99990, 100030},
                                 {100700, 100000}}) {
        const double tol = qk * (4.0 * static_cast<double>(m + n + 2) * std::ldexp(1.0, -52) + 1e-12) *
                           std::pow(zeta(0, D, 0.4), -std::fabs(static_cast<double>(m - n)) / 512.0);
        EXPECT_NEAR(score(m, n, center, false), expected(m, n), tol)
            << sname << " C=" << center << " (m, n)=(" << m << ", " << n << ")";
      }
      // apply_xpos_qk (q up, k down in one call) equals the two separate calls.
      EXPECT_NEAR(score(100005, 100005, center, true), score(100005, 100005, center, false), 1e-13 * qk) << sname << " C=" << center;
    }
    // And across centres directly (the same distance at different absolute positions).
    const double ref = score(100003, 100001, 0, false);
    EXPECT_NEAR(score(100023, 100021, 100000, false), ref, 1e-9 * qk) << sname;
    EXPECT_NEAR(score(3, 1, 1000, false), ref, 1e-9 * qk) << sname;
    EXPECT_GT(std::fabs(score(100004, 100001, 0, false) - ref), 1e-3) << sname << ": the score must depend on m - n";
  }
}

// max_safe_distance<T>() = scale_base * min(ln max(T), -ln min(T)) / ln(1/zeta_0), zeta_0 = gamma/(1+gamma).
template <class T>
double safe_distance_formula(double scale_base, double gamma) {
  const double lmax = std::log(static_cast<double>(static_cast<float>(std::numeric_limits<T>::max())));
  const double lmin = -std::log(static_cast<double>(static_cast<float>(std::numeric_limits<T>::min())));
  return scale_base * std::min(lmax, lmin) / std::log((1.0 + gamma) / gamma);
}
template <>
double safe_distance_formula<double>(double scale_base, double gamma) {
  const double lmax = std::log(std::numeric_limits<double>::max());
  const double lmin = -std::log(std::numeric_limits<double>::min());
  return scale_base * std::min(lmax, lmin) / std::log((1.0 + gamma) / gamma);
}

TEST(XposPlan, MaxSafeDistance) {
  for (const auto& [scale_base, gamma] : {std::array<double, 2>{512.0, 0.4}, {256.0, 0.8}, {2048.0, 0.1}}) {
    posenc::xpos_config cfg;
    cfg.head_dim = 64;
    cfg.scale_base = scale_base;
    cfg.gamma = gamma;
    const posenc::xpos_plan plan(cfg);
    const std::string what = "scale_base " + std::to_string(scale_base) + " gamma " + std::to_string(gamma);
    EXPECT_NEAR(plan.max_safe_distance<float>(), safe_distance_formula<float>(scale_base, gamma), 1e-9) << what;
    EXPECT_NEAR(plan.max_safe_distance<Eigen::half>(), safe_distance_formula<Eigen::half>(scale_base, gamma), 1e-9) << what;
    EXPECT_NEAR(plan.max_safe_distance<Eigen::bfloat16>(), safe_distance_formula<Eigen::bfloat16>(scale_base, gamma), 1e-9)
        << what;
    EXPECT_NEAR(plan.max_safe_distance<double>(), safe_distance_formula<double>(scale_base, gamma), 1e-8) << what;
  }
  // The defaults quoted in xpos.hpp (gamma 0.4, scale_base 512).
  posenc::xpos_config cfg;
  cfg.head_dim = 16;
  const posenc::xpos_plan plan(cfg);
  EXPECT_NEAR(plan.max_safe_distance<float>(), 35694.15, 0.01);
  EXPECT_NEAR(plan.max_safe_distance<Eigen::bfloat16>(), 35694.15, 0.01);
  EXPECT_NEAR(plan.max_safe_distance<Eigen::half>(), 3966.02, 0.01);
  EXPECT_NEAR(plan.max_safe_distance<double>(), 289519.23, 0.01);
}

}  // namespace

// ------------------------------------------------------------------------------------------ out of place between types

namespace {

/// Half an ulp of T at |v| (normal numbers; the subnormal range has the ulp of the smallest normal).
template <class T>
double half_ulp(double v) {
  const double min_normal = static_cast<double>(static_cast<float>(std::numeric_limits<T>::min()));
  int e = 0;
  std::frexp(std::max(std::fabs(v), min_normal), &e);  // in [2^(e-1), 2^e)
  return std::ldexp(1.0, e - 2 - dtype_info<T>::mantissa);
}

/// float q/k into a KV cache of type Out: x (N, L, H, D) float, the cache (N, Lmax, H, D) of Out written at
/// tokens [past, past + L) through a strided view. Each result must be the xPos formula, evaluated in long
/// double here from its definition, rounded once to Out: within half an ulp of Out, plus the error of
/// posenc's double arithmetic (the angle p*w_i in double is off by up to (p+1)*2^-53 rad; the scale
/// exp(ln(zeta)*(p-C)/scale_base) by ~1e-15 relative).
template <class Out>
void check_into(rope_style style, xpos_mode mode) {
  constexpr index_t N = 2, L = 5, H = 3, D = 12, Lmax = 9, past = 3;
  constexpr index_t p0 = 2040, center = 2000;
  posenc::xpos_config cfg;
  cfg.head_dim = D;
  cfg.style = style;
  cfg.scale_base = 64;  // a strong scale: zeta_0^(+-(p-C)/64) reaches ~4 on these positions
  const posenc::xpos_plan plan(cfg);
  const std::vector<float> x = random_values<float>(static_cast<std::size_t>(N * L * H * D), 61);
  const Out sentinel = static_cast<Out>(-3.0f);
  std::vector<Out> cache(static_cast<std::size_t>(N * Lmax * H * D), sentinel);
  const posenc::strided_view<const float, 4> in(x.data(), {N, L, H, D});
  const posenc::strided_view<Out, 4> out(cache.data() + past * H * D, {N, L, H, D}, {Lmax * H * D, H * D, D, 1});
  const auto pos = posenc::positions::offset(p0);
  posenc::apply_xpos(plan, in, out, pos, center, mode);

  const std::string what = std::string(dtype_info<Out>::name) + (style == rope_style::interleaved ? " interleaved" : " half_split") +
                           (mode == xpos_mode::upscale ? " up" : " down");
  int reported = 0;
  for (index_t n = 0; n < N; ++n)
    for (index_t l = 0; l < Lmax; ++l)
      for (index_t h = 0; h < H; ++h) {
        const std::size_t row = static_cast<std::size_t>(((n * Lmax + l) * H + h) * D);
        if (l < past || l >= past + L) {  // outside the window of this call: untouched
          for (index_t f = 0; f < D; ++f)
            EXPECT_EQ(as_double(cache[row + static_cast<std::size_t>(f)]), as_double(sentinel)) << what << " wrote outside";
          continue;
        }
        const index_t p = p0 + l - past;
        const std::size_t xrow = static_cast<std::size_t>(((n * L + (l - past)) * H + h) * D);
        for (index_t i = 0; i < D / 2; ++i) {
          const auto ab = pair_features(style, D, i);
          // The definition: w_i = base^(-2i/D), zeta_i = (2i/D + gamma)/(1 + gamma), s = zeta_i^((p - C)/scale_base)
          // (upscale) or its reciprocal, y = s * R(p*w_i) (x_a, x_b).
          const long double w = std::pow(10000.0L, -2.0L * i / D);
          const long double zeta = (2.0L * i / D + 0.4L) / 1.4L;
          long double s = std::pow(zeta, static_cast<long double>(p - center) / 64.0L);
          if (mode == xpos_mode::downscale) s = 1.0L / s;
          const long double theta = static_cast<long double>(p) * w;
          const long double xa = x[xrow + static_cast<std::size_t>(ab[0])], xb = x[xrow + static_cast<std::size_t>(ab[1])];
          const long double ya = s * (xa * std::cos(theta) - xb * std::sin(theta));
          const long double yb = s * (xb * std::cos(theta) + xa * std::sin(theta));
          const double pair_norm = static_cast<double>(s * std::sqrt(xa * xa + xb * xb));
          const double arith = pair_norm * (static_cast<double>(p + 1) * 0x1p-52 + 1e-14);
          for (const auto& [f, want] : {std::pair<index_t, long double>{ab[0], ya}, {ab[1], yb}}) {
            const double got = as_double(cache[row + static_cast<std::size_t>(f)]);
            const double err = static_cast<double>(std::fabs(static_cast<long double>(got) - want));
            const double tol = half_ulp<Out>(static_cast<double>(want)) + arith;
            if (!(err <= tol) && reported++ < 5)
              ADD_FAILURE() << what << ": (n, l, h, f)=(" << n << ", " << l << ", " << h << ", " << f << ") got " << got
                            << " want " << static_cast<double>(want) << " error " << err << " > " << tol;
          }
        }
      }
}

class XposIntoOtherType : public IsaOnlyTest {};

TEST_P(XposIntoOtherType, FloatIntoHalfBfloat16FloatDoubleOneRounding) {
  for (rope_style style : {rope_style::interleaved, rope_style::half_split})
    for (xpos_mode mode : {xpos_mode::upscale, xpos_mode::downscale}) {
      check_into<Eigen::half>(style, mode);
      check_into<Eigen::bfloat16>(style, mode);
      check_into<float>(style, mode);
      check_into<double>(style, mode);
    }
}

// Float into float out of place gives the bits of the in-place call (the same double arithmetic, one
// rounding to float), and the try_ form the bits of the throwing one.
TEST_P(XposIntoOtherType, FloatIntoFloatEqualsInPlace) {
  posenc::xpos_config cfg;
  cfg.head_dim = 16;
  const posenc::xpos_plan plan(cfg);
  const std::vector<float> x = random_values<float>(2 * 3 * 16, 62);
  std::vector<float> in_place = x, out(x.size(), 0.0f);
  const auto pos = posenc::positions::offset(777);
  posenc::apply_xpos(plan, posenc::strided_view<float, 4>(in_place.data(), {2, 3, 1, 16}), pos, 100, xpos_mode::downscale);
  ASSERT_TRUE(posenc::try_apply_xpos(plan, posenc::strided_view<const float, 4>(x.data(), {2, 3, 1, 16}),
                                     posenc::strided_view<float, 4>(out.data(), {2, 3, 1, 16}), pos, 100, xpos_mode::downscale)
                  .ok());
  EXPECT_EQ(std::memcmp(in_place.data(), out.data(), out.size() * sizeof(float)), 0);
}

INSTANTIATE_TEST_SUITE_P(Isa, XposIntoOtherType, ::testing::ValuesIn(all_isas()), isa_only_name);

// ------------------------------------------------------------------------------------------ try_ forms


bool same_plan(const posenc::xpos_plan& a, const posenc::xpos_plan& b) {
  const auto& ca = a.config();
  const auto& cb = b.config();
  return ca.head_dim == cb.head_dim && ca.scale_base == cb.scale_base && ca.gamma == cb.gamma && ca.base == cb.base &&
         ca.style == cb.style && same_bits(a.inv_freq(), b.inv_freq()) && same_bits(a.log_zeta(), b.log_zeta());
}

posenc::xpos_config xpos_cfg(index_t head_dim) {
  posenc::xpos_config c;
  c.head_dim = head_dim;
  return c;
}

using V4 = posenc::strided_view<float, 4>;
using C4 = posenc::strided_view<const float, 4>;
using P = const posenc::positions&;

static_assert(noexcept(posenc::xpos_plan::try_create(posenc::xpos_config{}, std::declval<posenc::xpos_plan&>())));
static_assert(noexcept(posenc::try_apply_xpos(std::declval<const posenc::xpos_plan&>(), std::declval<V4>(), std::declval<P>(), 0,
                                              xpos_mode::upscale)));
static_assert(noexcept(posenc::try_apply_xpos(std::declval<const posenc::xpos_plan&>(), std::declval<C4>(),
                                              std::declval<posenc::strided_view<Eigen::half, 4>>(), std::declval<P>(), 0,
                                              xpos_mode::upscale)));
static_assert(noexcept(posenc::try_apply_xpos_qk(std::declval<const posenc::xpos_plan&>(), std::declval<V4>(), std::declval<V4>(),
                                                 std::declval<P>(), 0)));
static_assert(noexcept(posenc::try_apply_xpos_backward(std::declval<const posenc::xpos_plan&>(), std::declval<V4>(),
                                                       std::declval<P>(), 0, xpos_mode::upscale)));

TEST(TryXposPlan, RejectsLikeConstructorAndLeavesOutUnchanged) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<posenc::xpos_config> bad;
  for (index_t d : {0, -2, 15}) bad.push_back(xpos_cfg(d));
  for (double v : {0.0, -1.0, kNaN, kInf}) {
    bad.push_back(xpos_cfg(16));
    bad.back().scale_base = v;
    bad.push_back(xpos_cfg(16));
    bad.back().gamma = v;
  }
  for (double v : {1.0, 0.5, kNaN, kInf}) {
    bad.push_back(xpos_cfg(16));
    bad.back().base = v;
  }
  posenc::xpos_config good_cfg = xpos_cfg(8);
  good_cfg.gamma = 0.8;
  const posenc::xpos_plan good(good_cfg);
  for (const auto& c : bad) {
    const std::string what = "head_dim " + std::to_string(c.head_dim) + " scale_base " + std::to_string(c.scale_base) + " gamma " +
                             std::to_string(c.gamma) + " base " + std::to_string(c.base);
    posenc::xpos_plan out = good;
    expect_rejection(posenc::xpos_plan::try_create(c, out), thrown_message([&] { posenc::xpos_plan p(c); }), what);
    EXPECT_TRUE(same_plan(out, good)) << what << ": out changed";
  }
}

TEST(TryXposPlan, AcceptedEqualsConstructor) {
  posenc::xpos_plan out;
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(out.max_safe_distance<float>(), 0.0);
  posenc::xpos_config cfg = xpos_cfg(64);
  cfg.scale_base = 256;
  cfg.gamma = 0.7;
  cfg.base = 500000;
  cfg.style = rope_style::half_split;
  expect_ok(posenc::xpos_plan::try_create(cfg, out), "create");
  EXPECT_FALSE(out.empty());
  EXPECT_TRUE(same_plan(out, posenc::xpos_plan(cfg)));
  // Rebuilt from its own config (the argument aliases out's).
  expect_ok(posenc::xpos_plan::try_create(out.config(), out), "rebuild from own config");
  EXPECT_TRUE(same_plan(out, posenc::xpos_plan(cfg)));
}

TEST(TryApplyXpos, RejectsLikeThrowingFormAndWritesNothing) {
  const posenc::xpos_plan plan(xpos_cfg(16));
  const posenc::xpos_plan empty;
  const std::vector<float> x0 = random_values<float>(2 * 2 * 16, 71);
  std::vector<float> x = x0, y = x0, k = x0;
  std::vector<Eigen::half> yh(x0.size(), Eigen::half(2.0f));
  const std::vector<Eigen::half> yh0 = yh;
  const V4 vx(x.data(), {1, 2, 2, 16}), vy(y.data(), {1, 2, 2, 16}), vk(k.data(), {1, 2, 2, 16});
  const auto pos = posenc::positions::offset(0);
  const auto neg = posenc::positions::offset(-1);
  const std::int64_t ids[] = {4, 5, 6};
  const auto wrong_shape = posenc::positions::per_token(ids, 1, 3);
  const auto untouched = [&](const std::string& what) {
    EXPECT_TRUE(same_bits(x, x0)) << what << ": x was written";
    EXPECT_TRUE(same_bits(y, x0)) << what << ": y was written";
    EXPECT_TRUE(same_bits(k, x0)) << what << ": k was written";
    EXPECT_TRUE(same_bits(yh, yh0)) << what << ": the half output was written";
  };
  const auto in_place = [&](const posenc::xpos_plan& p, const V4& v, const posenc::positions& q, index_t c, const std::string& what) {
    expect_rejection(posenc::try_apply_xpos(p, v, q, c, xpos_mode::upscale),
                     thrown_message([&] { posenc::apply_xpos(p, v, q, c, xpos_mode::upscale); }), what);
    untouched(what);
  };
  in_place(plan, vx, pos, -1, "center");
  in_place(plan, V4(x.data(), {1, 2, 4, 8}), pos, 0, "head dim");
  in_place(plan, vx, neg, 0, "negative offset");
  in_place(plan, vx, wrong_shape, 0, "positions shape");
  in_place(empty, vx, pos, 0, "empty plan");
  in_place(plan, V4(x.data(), {1, 2, 2, 16}, {64, 32, 0, 1}), pos, 0, "zero stride");
  const auto out_of_place = [&](const C4& a, const auto& b, const posenc::positions& q, index_t c, const std::string& what) {
    expect_rejection(posenc::try_apply_xpos(plan, a, b, q, c, xpos_mode::downscale),
                     thrown_message([&] { posenc::apply_xpos(plan, a, b, q, c, xpos_mode::downscale); }), what);
    untouched(what);
  };
  const C4 cx(x.data(), {1, 2, 2, 16});
  const posenc::strided_view<Eigen::half, 4> vh(yh.data(), {1, 2, 2, 16});
  out_of_place(cx, vy, pos, -2, "out of place: center");
  out_of_place(cx, vh, pos, -2, "out of place into half: center");
  out_of_place(cx, vh, neg, 0, "out of place into half: negative offset");
  out_of_place(cx, posenc::strided_view<Eigen::half, 4>(yh.data(), {1, 2, 1, 16}), pos, 0, "out of place into half: shape");
  out_of_place(cx, V4(x.data() + 8, {1, 2, 2, 16}), pos, 0, "out of place: overlap");
  out_of_place(C4(x.data(), {1, 2, 2, 8}), V4(y.data(), {1, 2, 2, 8}), pos, 0, "out of place: head dim");
  const auto qk = [&](const V4& a, const V4& b, const posenc::positions& q, index_t c, const std::string& what) {
    expect_rejection(posenc::try_apply_xpos_qk(plan, a, b, q, c), thrown_message([&] { posenc::apply_xpos_qk(plan, a, b, q, c); }),
                     what);
    untouched(what);
  };
  qk(vx, vk, pos, -3, "qk: center");
  qk(vx, vx, pos, 0, "qk: same tensor");
  qk(vx, V4(k.data(), {1, 1, 4, 16}), pos, 0, "qk: (N, L)");
  qk(vx, vk, neg, 0, "qk: negative offset");
  const auto backward = [&](const posenc::xpos_plan& p, const V4& v, const posenc::positions& q, index_t c, const std::string& what) {
    expect_rejection(posenc::try_apply_xpos_backward(p, v, q, c, xpos_mode::downscale),
                     thrown_message([&] { posenc::apply_xpos_backward(p, v, q, c, xpos_mode::downscale); }), what);
    untouched(what);
  };
  backward(plan, vx, pos, -4, "backward: center");
  backward(plan, V4(x.data(), {1, 2, 1, 32}), pos, 0, "backward: head dim");
  backward(plan, vx, wrong_shape, 0, "backward: positions shape");
  backward(empty, vx, pos, 0, "backward: empty plan");
}

TEST(TryApplyXpos, AcceptedEqualsThrowingForm) {
  posenc::xpos_config cfg = xpos_cfg(16);
  cfg.style = rope_style::half_split;
  const posenc::xpos_plan plan(cfg);
  const std::array<index_t, 4> shape{2, 3, 2, 16};
  const std::vector<float> x0 = random_values<float>(2 * 3 * 2 * 16, 72);
  const std::int64_t starts[] = {10, 5000};
  const auto pos = posenc::positions::per_sequence(starts, 2);
  const index_t center = 2500;
  for (xpos_mode mode : {xpos_mode::upscale, xpos_mode::downscale}) {
    const std::string m = mode == xpos_mode::upscale ? "up" : "down";
    {
      std::vector<float> a = x0, b = x0;
      expect_ok(posenc::try_apply_xpos(plan, V4(a.data(), shape), pos, center, mode), "in place " + m);
      posenc::apply_xpos(plan, V4(b.data(), shape), pos, center, mode);
      EXPECT_TRUE(same_bits(a, b)) << m;
      EXPECT_FALSE(same_bits(a, x0)) << m << ": nothing was rotated";
    }
    {
      std::vector<Eigen::half> a(x0.size()), b(x0.size());
      expect_ok(posenc::try_apply_xpos(plan, C4(x0.data(), shape), posenc::strided_view<Eigen::half, 4>(a.data(), shape), pos,
                                       center, mode),
                "out of place into half " + m);
      posenc::apply_xpos(plan, C4(x0.data(), shape), posenc::strided_view<Eigen::half, 4>(b.data(), shape), pos, center, mode);
      EXPECT_TRUE(same_bits(a, b)) << m;
    }
    {
      std::vector<float> a = x0, b = x0;
      expect_ok(posenc::try_apply_xpos_backward(plan, V4(a.data(), shape), pos, center, mode), "backward " + m);
      posenc::apply_xpos_backward(plan, V4(b.data(), shape), pos, center, mode);
      EXPECT_TRUE(same_bits(a, b)) << m;
    }
  }
  std::vector<float> qa = x0, ka = x0, qb = x0, kb = x0;
  expect_ok(posenc::try_apply_xpos_qk(plan, V4(qa.data(), shape), V4(ka.data(), shape), pos, center), "qk");
  posenc::apply_xpos_qk(plan, V4(qb.data(), shape), V4(kb.data(), shape), pos, center);
  EXPECT_TRUE(same_bits(qa, qb));
  EXPECT_TRUE(same_bits(ka, kb));
  EXPECT_FALSE(same_bits(qa, ka)) << "q up and k down differ";
}

}  // namespace
