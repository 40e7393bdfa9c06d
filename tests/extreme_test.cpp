// Extreme inputs, each with a defined and tested behaviour (issue "Hardening for long-running servers"):
// zero-size tensors are no-ops; views whose size overflows are rejected before anything is touched; positions
// up to 2^53 on the cache-free path (and past a cache: rejected); NaN and Inf propagate without crashing;
// huge and tiny bases and factors are rejected or give finite plans; denormal inputs rotate exactly like
// normal ones; zero and negative strides are accepted or rejected as documented, never undefined. The
// ISA-dependent checks run once per ISA this CPU has.
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>
#include <posenc/detail/check.hpp>
#include <posenc/posenc.hpp>

#include "test_util.hpp"

namespace {

using posenc::index_t;
using namespace posenc_test;
using ld = long double;

constexpr float kMarker = -7.25f;  // what "nothing written" leaves

posenc::rope_plan plan_of(index_t d, index_t r = 0, double base = 10000.0) {
  posenc::rope_config cfg;
  cfg.head_dim = d;
  cfg.rotary_dim = r;
  cfg.base = base;
  return posenc::make_rope_plan(cfg);
}

bool all_marked(const std::vector<float>& v) {
  for (float x : v)
    if (x != kMarker) return false;
  return true;
}

class Extreme : public IsaOnlyTest {};

// ---- zero-size tensors ----------------------------------------------------------------------------------------

// An empty batch, sequence, head count or key length is a no-op that succeeds: nothing is read or written.
TEST_P(Extreme, ZeroSizeTensorsAreNoOps) {
  const auto plan = plan_of(8);
  const posenc::rope_cache<float> cache(plan, 16);
  posenc::xpos_config xc;
  xc.head_dim = 8;
  const posenc::xpos_plan xp(xc);
  std::vector<float> buf(64, kMarker);
  for (const std::array<index_t, 4>& shape :
       {std::array<index_t, 4>{0, 3, 2, 8}, {2, 0, 2, 8}, {2, 3, 0, 8}}) {
    const posenc::strided_view<float, 4> v(buf.data(), shape);
    EXPECT_TRUE(posenc::try_apply_rope(plan, v, posenc::positions::offset(0)).ok());
    EXPECT_TRUE(posenc::try_apply_rope(cache, v, posenc::positions::offset(0)).ok());
    EXPECT_TRUE(posenc::try_apply_rope_backward(plan, v, posenc::positions::offset(0)).ok());
    EXPECT_TRUE(posenc::try_apply_xpos(xp, v, posenc::positions::offset(0), 0, posenc::xpos_mode::upscale).ok());
    EXPECT_TRUE(posenc::try_shift_rope(plan, v, 5).ok());
  }
  posenc::alibi_config ac;
  ac.num_heads = 4;
  for (const std::array<index_t, 4>& shape : {std::array<index_t, 4>{0, 4, 3, 3}, {1, 4, 0, 3}, {1, 4, 3, 0}})
    EXPECT_TRUE(posenc::try_add_alibi_bias(ac, posenc::strided_view<float, 4>(buf.data(), shape)).ok());
  const posenc::sinusoidal_config sc{8, 10000.0, posenc::sinusoidal_layout::interleaved, std::nullopt};
  EXPECT_TRUE(posenc::try_add_sinusoidal(sc, posenc::strided_view<float, 3>(buf.data(), {0, 4, 8}),
                                         posenc::positions::offset(0)).ok());
  EXPECT_TRUE(posenc::try_sinusoidal_table(sc, posenc::strided_view<float, 2>(buf.data(), {0, 8})).ok());
  posenc::learned_config lc;
  lc.max_positions = 4;
  lc.dim = 8;
  const posenc::learned_position_embedding<float> emb(lc);
  EXPECT_TRUE(emb.try_forward(posenc::strided_view<float, 3>(buf.data(), {3, 0, 8}), posenc::positions::offset(0)).ok());
  const posenc::t5_relative_bias<float> rel(2, {true, 8, 32});
  EXPECT_TRUE(rel.try_forward(posenc::strided_view<float, 3>(buf.data(), {2, 0, 5})).ok());
  EXPECT_TRUE(all_marked(buf));
}

// ---- sizes that overflow ------------------------------------------------------------------------------------

// A view whose element count or byte span does not fit in 63 bits is rejected by the checks, before any
// element is touched (its pointer is a real 64-float buffer: nothing may be written through it).
TEST(ExtremeSizes, OverflowingViewsRejectedBeforeAnything) {
  const auto plan = plan_of(8);
  std::vector<float> buf(64, kMarker);
  constexpr index_t big = index_t{1} << 40;
  const posenc::strided_view<float, 4> count_overflow(buf.data(), {big, big, 1, 8}, {0, 0, 0, 1});
  const posenc::status a = posenc::try_apply_rope(plan, posenc::strided_view<const float, 4>(count_overflow),
                                                  posenc::strided_view<float, 4>(buf.data() + 32, {1, 1, 1, 8}),
                                                  posenc::positions::offset(0));
  EXPECT_EQ(a.code(), posenc::errc::invalid_argument);
  EXPECT_NE(std::string(a.message()).find("more than 2^63 - 1 elements"), std::string::npos) << a.message();
  const posenc::strided_view<float, 4> span_overflow(buf.data(), {2, 2, 1, 8}, {index_t{1} << 62, 1 << 20, 8, 1});
  const posenc::status b = posenc::try_apply_rope(plan, span_overflow, posenc::positions::offset(0));
  EXPECT_EQ(b.code(), posenc::errc::invalid_argument);
  EXPECT_NE(std::string(b.message()).find("more than 2^63 - 1"), std::string::npos) << b.message();
  const posenc::strided_view<float, 4> bytes_overflow(buf.data(), {2, 1, 1, 8}, {index_t{1} << 62, 8, 8, 1});
  const posenc::status c = posenc::try_apply_rope(plan, bytes_overflow, posenc::positions::offset(0));
  EXPECT_NE(std::string(c.message()).find("more than 2^63 - 1 bytes"), std::string::npos) << c.message();
  EXPECT_TRUE(all_marked(buf));
}

// The one-pass probe the decode checks use (detail::probe_view) against the rules computed exactly in 128-bit
// integers: it never clears an invalid view, clears every valid view whose extents and strides are below 2^31
// and whose count and byte span are below 2^62 (the rest go to check_view's rule-by-rule pass, which this test
// also holds to the rules), and its byte range is the view's. Views at the boundaries: extents and strides 0, 1, 2^31 - 1, 2^31, 2^62, negative.
TEST(ExtremeSizes, ViewProbeAgreesWithTheExactRules) {
#if defined(__SIZEOF_INT128__)
  __extension__ typedef __int128 i128;  // NOLINT(modernize-use-using): __extension__ keeps -Wpedantic quiet
  const index_t values[] = {0, 1, 2, 3, 7, 8, 64, (index_t{1} << 31) - 1, index_t{1} << 31, index_t{1} << 40,
                            (index_t{1} << 62) - 1, index_t{1} << 62, std::numeric_limits<index_t>::max(), -1};
  constexpr std::size_t nv = sizeof(values) / sizeof(values[0]);
  std::vector<double> buf(8);
  std::uint64_t state = 12345;
  const auto pick = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return values[(state >> 33) % nv];
  };
  int cleared = 0, exact = 0;
  for (int trial = 0; trial < 200000; ++trial) {
    std::array<index_t, 4> e{}, st{};
    for (std::size_t d = 0; d < 4; ++d) {
      e[d] = pick();
      st[d] = pick();
    }
    const bool output = trial % 2 == 0;
    const double* data = trial % 97 == 0 ? nullptr : buf.data();
    const posenc::strided_view<const double, 4> v(data, e, st);
    // The rules, exactly.
    bool valid = true, empty = false, repeats = false, small = true;
    i128 count = 1, span = 1;
    for (std::size_t d = 0; d < 4; ++d) {
      valid = valid && e[d] >= 0 && st[d] >= 0;
      empty = empty || e[d] == 0;
      repeats = repeats || (st[d] == 0 && e[d] > 1);
      small = small && e[d] >= 0 && st[d] >= 0 && e[d] < (index_t{1} << 31) && st[d] < (index_t{1} << 31);
    }
    if (valid) {
      // Each factor is below 2^63: a count kept once it passes 2^63 (invalid from there on) and each span term
      // capped at 2^120 keep every value far inside 128 bits.
      const i128 cap = i128{1} << 120;
      for (std::size_t d = 0; d < 4; ++d) {
        count = count > (i128{1} << 63) ? count : count * e[d];
        const i128 term = i128{e[d] > 0 ? e[d] - 1 : 0} * st[d];
        span += term < cap ? term : cap;
      }
      if (output && repeats && !empty) valid = false;
      if (!empty) {
        const i128 limit = i128{std::numeric_limits<index_t>::max()};
        valid = valid && data != nullptr && count <= limit && span <= limit && span * 8 <= limit;
      }
    }
    const auto probe = posenc::detail::probe_view(v, output);
    ASSERT_FALSE(probe.ok && !valid) << "cleared an invalid view, trial " << trial;
    // Extents and strides below 2^31, and an element count and byte span below 2^62: the probe decides alone.
    if (small && valid && count < (i128{1} << 62) && span * 8 < (i128{1} << 62)) {
      ASSERT_TRUE(probe.ok) << "trial " << trial;
    }
    const bool checked = posenc::detail::check_view("f", "v", v, output).ok();
    ASSERT_EQ(checked, valid) << "check_view disagrees with the rules, trial " << trial;
    if (probe.ok) {
      ++cleared;
      const std::size_t bytes = empty ? 0 : static_cast<std::size_t>(span) * sizeof(double);
      ASSERT_EQ(probe.lo, reinterpret_cast<const char*>(data));
      ASSERT_EQ(static_cast<std::size_t>(probe.hi - probe.lo), bytes) << "trial " << trial;
    }
    exact += valid && !probe.ok;
  }
  // Both paths are taken (the sets above make each common).
  EXPECT_GT(cleared, 1000);
  EXPECT_GT(exact, 100);
#else
  GTEST_SKIP() << "needs a 128-bit integer type for the exact rules";
#endif
}

// Tables whose size overflows are rejected before any allocation, with a message (a size that fits the
// arithmetic but not the memory becomes an out_of_memory status through guard_alloc; not tried here, since
// AddressSanitizer's operator new aborts on a failed allocation instead of throwing).
TEST(ExtremeSizes, OverflowingTablesRejectedBeforeAllocation) {
  const auto plan = plan_of(128);
  posenc::rope_cache<float> cache;
  const posenc::status s = posenc::rope_cache<float>::try_create(plan, std::numeric_limits<index_t>::max(), cache);
  EXPECT_EQ(s.code(), posenc::errc::invalid_argument);
  EXPECT_NE(std::string(s.message()).find("overflows"), std::string::npos) << s.message();
  posenc::learned_config lc;
  lc.max_positions = index_t{1} << 40;
  lc.dim = index_t{1} << 30;
  posenc::learned_position_embedding<float> emb;
  const posenc::status e = posenc::learned_position_embedding<float>::try_create(lc, emb);
  EXPECT_EQ(e.code(), posenc::errc::invalid_argument);
  EXPECT_NE(std::string(e.message()).find("overflows"), std::string::npos) << e.message();
}

// ---- positions ------------------------------------------------------------------------------------------------

/// cos and sin of the exact product p * w (p < 2^53 and w are doubles): the product as hi + lo (two-product by
/// FMA, exact), cos(hi + lo) = cos hi cos lo - sin hi sin lo in long double (glibc reduces any argument exactly).
void exact_polar(index_t p, double w, ld& c, ld& s) {
  const double pd = static_cast<double>(p);
  const double hi = pd * w, lo = std::fma(pd, w, -hi);
  const ld ch = std::cos(static_cast<ld>(hi)), sh = std::sin(static_cast<ld>(hi));
  const ld cl = std::cos(static_cast<ld>(lo)), sl = std::sin(static_cast<ld>(lo));
  c = ch * cl - sh * sl;
  s = sh * cl + ch * sl;
}

// Up to 2^53 on the cache-free path, in float and double: the rotation is by an angle within |p w| 2^-51 of the
// exact p * w_i (the angle is formed in double: exact wherever p * w_i is, e.g. w_0 = 1 at every position), so
// positions below 2^24 are exact to ~1e-8 rad and larger ones degrade as documented, never to NaN or Inf.
template <class T>
void check_huge_positions() {
  const index_t d = 16, half = d / 2;
  const auto plan = plan_of(d, 0, 10000.0);
  const std::vector<std::int64_t> ids = {(index_t{1} << 53) - 1, index_t{1} << 53, (index_t{1} << 52) + 12345,
                                         (index_t{1} << 40) + 7, (index_t{1} << 24) + 5, 1000000007};
  const index_t l = static_cast<index_t>(ids.size());
  std::vector<T> x(static_cast<std::size_t>(l * d));
  for (std::size_t k = 0; k < x.size(); ++k) x[k] = static_cast<T>(static_cast<int>(k % 7) - 3) / T(4);
  std::vector<T> y = x;
  posenc::apply_rope(plan, posenc::strided_view<T, 4>(y.data(), {1, l, 1, d}), posenc::positions::per_token(ids.data(), 1, l));
  const double storage_eps = std::is_same_v<T, float> ? 0x1p-23 : 0x1p-50;
  for (index_t t = 0; t < l; ++t)
    for (index_t i = 0; i < half; ++i) {
      const index_t p = ids[static_cast<std::size_t>(t)];
      const double w = plan.inv_freq()[static_cast<std::size_t>(i)];
      ld c, s;
      exact_polar(p, w, c, s);
      const auto ka = static_cast<std::size_t>(t * d + i), kb = ka + static_cast<std::size_t>(half);
      const ld a = x[ka], b = x[kb];
      const double angle_err = std::fabs(static_cast<double>(p) * w) * 0x1p-51;
      const double tol = static_cast<double>(std::fabs(a) + std::fabs(b)) * angle_err + 2.0 * storage_eps;
      EXPECT_NEAR(static_cast<double>(y[ka]), static_cast<double>(a * c - b * s), tol) << "position " << p << " pair " << i;
      EXPECT_NEAR(static_cast<double>(y[kb]), static_cast<double>(b * c + a * s), tol) << "position " << p << " pair " << i;
      if (i == 0) {  // w_0 = 1: the angle p is exact at every position
        EXPECT_NEAR(static_cast<double>(y[ka]), static_cast<double>(a * c - b * s), 2.0 * storage_eps) << p;
      }
    }
}

TEST_P(Extreme, PositionsUpTo2Pow53OnTheCacheFreePath) {
  check_huge_positions<float>();
  check_huge_positions<double>();
}

// Past a cache: the whole call is rejected, naming the position, and nothing is written.
TEST_P(Extreme, PositionPastTheCacheRejected) {
  const posenc::rope_cache<float> cache(plan_of(8), 100);
  std::vector<float> x(2 * 8, kMarker);
  const std::int64_t ids[] = {5, 100};
  const posenc::status s = posenc::try_apply_rope(cache, posenc::strided_view<float, 4>(x.data(), {1, 2, 1, 8}),
                                                  posenc::positions::per_token(ids, 1, 2));
  EXPECT_EQ(s.code(), posenc::errc::invalid_argument);
  EXPECT_NE(std::string(s.message()).find("100"), std::string::npos) << s.message();
  EXPECT_TRUE(all_marked(x));
}

// ---- NaN, Inf, denormals ---------------------------------------------------------------------------------------

// A NaN or an infinity in x reaches only its own pair's outputs (which are then not finite); every other
// output is the same as without it, and ALiBi carries NaN scores through.
TEST_P(Extreme, NanAndInfStayInTheirPair) {
  const index_t d = 32;
  const auto plan = plan_of(d);
  std::vector<float> clean(static_cast<std::size_t>(3 * d));
  for (std::size_t k = 0; k < clean.size(); ++k) clean[k] = static_cast<float>(k % 11) / 8.0f - 0.5f;
  std::vector<float> dirty = clean;
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity()};
  const std::size_t where[] = {3, d + 20, 2 * d + 9};  // features of pairs 3, 4 and 9 of tokens 0, 1, 2
  for (int k = 0; k < 3; ++k) dirty[where[k]] = specials[k];
  for (auto* v : {&clean, &dirty})
    posenc::apply_rope(plan, posenc::strided_view<float, 4>(v->data(), {1, 3, 1, d}), posenc::positions::offset(1000));
  const index_t half = d / 2;
  for (index_t t = 0; t < 3; ++t)
    for (index_t f = 0; f < d; ++f) {
      const auto k = static_cast<std::size_t>(t * d + f);
      const index_t pair = f % half, hit = static_cast<index_t>(where[t] % static_cast<std::size_t>(d)) % half;
      if (pair == hit) {
        EXPECT_FALSE(std::isfinite(dirty[k])) << "token " << t << " feature " << f;
      } else {
        EXPECT_EQ(dirty[k], clean[k]) << "token " << t << " feature " << f;
      }
    }
  posenc::alibi_config ac;
  ac.num_heads = 2;
  std::vector<float> scores(2 * 2 * 3, 0.5f);
  scores[4] = std::numeric_limits<float>::quiet_NaN();
  posenc::add_alibi_bias(ac, posenc::strided_view<float, 4>(scores.data(), {1, 2, 2, 3}));
  EXPECT_TRUE(std::isnan(scores[4]));
  for (std::size_t k = 0; k < scores.size(); ++k) {
    EXPECT_EQ(std::isfinite(scores[k]), k != 4) << k;
  }
}

// Denormal inputs rotate like any others (no flush to zero on any ISA): the result is the long double rotation
// of the same values, within one float ulp of the smallest normal.
TEST_P(Extreme, DenormalInputsRotateExactly) {
  const index_t d = 16;
  const auto plan = plan_of(d);
  std::vector<float> x(static_cast<std::size_t>(2 * d));
  for (std::size_t k = 0; k < x.size(); ++k)
    x[k] = std::numeric_limits<float>::denorm_min() * static_cast<float>(static_cast<int>(k * 977 % 4093) - 2046);
  std::vector<float> y = x;
  posenc::apply_rope(plan, posenc::strided_view<float, 4>(y.data(), {1, 2, 1, d}), posenc::positions::offset(3));
  bool some_nonzero = false;
  const index_t half = d / 2;
  for (index_t t = 0; t < 2; ++t)
    for (index_t i = 0; i < half; ++i) {
      const ld theta = static_cast<ld>(static_cast<double>(3 + t) * plan.inv_freq()[static_cast<std::size_t>(i)]);
      const ld a = x[static_cast<std::size_t>(t * d + i)], b = x[static_cast<std::size_t>(t * d + i + half)];
      const ld ya = a * std::cos(theta) - b * std::sin(theta), yb = b * std::cos(theta) + a * std::sin(theta);
      const double tol = 2.0 * static_cast<double>(std::numeric_limits<float>::denorm_min());
      EXPECT_NEAR(y[static_cast<std::size_t>(t * d + i)], static_cast<double>(ya), tol);
      EXPECT_NEAR(y[static_cast<std::size_t>(t * d + i + half)], static_cast<double>(yb), tol);
      some_nonzero = some_nonzero || y[static_cast<std::size_t>(t * d + i)] != 0.0f;
    }
  EXPECT_TRUE(some_nonzero) << "denormals were flushed to zero";
}

INSTANTIATE_TEST_SUITE_P(Isa, Extreme, ::testing::ValuesIn(all_isas()), isa_only_name);

// ---- bases and factors ----------------------------------------------------------------------------------------

// Every base or factor is either rejected with a message naming it, or gives a plan of frequencies in
// [0, 2^960] (so p * w is finite at every position < 2^63) and a finite magnitude, whose rotation of finite
// values is finite even at position 2^62.
TEST(ExtremeParameters, HugeAndTinyBasesAndFactorsRejectedOrFinite) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<posenc::rope_config> configs;
  for (double base : {1e308, 1.0 + 1e-15, 1.0, 0.5, 0.0, -10.0, inf, nan, 1e-300}) {
    posenc::rope_config c;
    c.head_dim = 16;
    c.base = base;
    configs.push_back(c);
  }
  for (double f : {1e300, 1e-300, 0.0, -2.0, inf, nan, 1.0 + 1e-16}) {
    posenc::rope_config c;
    c.head_dim = 16;
    for (const posenc::rope_scaling& s :
         {posenc::rope_scaling::linear(f), posenc::rope_scaling::ntk(f), posenc::rope_scaling::dynamic_ntk(f, 4096),
          posenc::rope_scaling::yarn(f, 4096), posenc::rope_scaling::deepseek_yarn(f, 4096, f, f),
          posenc::rope_scaling::llama3(f, 1.0, 4.0, 8192), posenc::rope_scaling::llama3(8.0, f, f, 8192)}) {
      c.scaling = s;
      configs.push_back(c);
    }
    c.scaling = {};
    c.freq_factors.assign(8, f);
    configs.push_back(c);
  }
  int rejected = 0, accepted = 0;
  for (const auto& c : configs) {
    posenc::rope_plan plan;
    const posenc::status s = posenc::try_make_rope_plan(c, 1 << 20, plan);
    if (!s.ok()) {
      ++rejected;
      EXPECT_EQ(s.code(), posenc::errc::invalid_argument);
      EXPECT_FALSE(std::string(s.message()).empty());
      continue;
    }
    ++accepted;
    for (double w : plan.inv_freq()) EXPECT_TRUE(w >= 0.0 && w <= 0x1p960) << w << " base " << c.base;
    EXPECT_TRUE(std::isfinite(plan.magnitude()) && plan.magnitude() > 0.0);
    std::vector<float> x(16, 0.75f);
    posenc::apply_rope(plan, posenc::strided_view<float, 4>(x.data(), {1, 1, 1, 16}),
                       posenc::positions::offset(index_t{1} << 62));
    for (float v : x) EXPECT_TRUE(std::isfinite(v)) << "base " << c.base;
    // A rotation keeps each pair's norm (times the magnitude) however large the angle: half-split pairs (i, i + 8)
    // of 0.75 each have norm 0.75 * sqrt(2) * m, to float rounding of the two products and sum.
    const double want = 0.75 * std::sqrt(2.0) * plan.magnitude();
    for (int i = 0; i < 8; ++i)
      EXPECT_NEAR(std::hypot(double{x[static_cast<std::size_t>(i)]}, double{x[static_cast<std::size_t>(i + 8)]}), want,
                  1e-6 * want)
          << "pair " << i << " base " << c.base;
  }
  EXPECT_GT(rejected, 10);
  EXPECT_GT(accepted, 5);
}

// ---- strides --------------------------------------------------------------------------------------------------

// A negative stride is rejected (posenc's views address forward only); a zero stride is accepted on an input
// (a broadcast: every token reads one row) and rejected on an output with extent > 1 (one element written
// several times). Nothing is written on a rejection.
TEST(ExtremeStrides, ZeroAndNegativeStrides) {
  const auto plan = plan_of(8);
  std::vector<float> buf(64, kMarker);
  const posenc::status neg = posenc::try_apply_rope(
      plan, posenc::strided_view<float, 4>(buf.data() + 32, {1, 2, 1, 8}, {16, -8, 8, 1}), posenc::positions::offset(0));
  EXPECT_NE(std::string(neg.message()).find("x.stride(1)=-8 must be >= 0"), std::string::npos) << neg.message();
  const posenc::status zero_out = posenc::try_apply_rope(
      plan, posenc::strided_view<float, 4>(buf.data(), {1, 3, 1, 8}, {24, 0, 8, 1}), posenc::positions::offset(0));
  EXPECT_NE(std::string(zero_out.message()).find("x.stride(1)=0 with extent 3 writes one element several times"),
            std::string::npos)
      << zero_out.message();
  EXPECT_TRUE(all_marked(buf));
  // Broadcast input: one row read by three tokens at positions 0, 1, 2 equals rotating three copies.
  std::vector<float> row(8);
  for (std::size_t k = 0; k < row.size(); ++k) row[k] = static_cast<float>(k) / 8.0f - 0.4f;
  std::vector<float> out(24, kMarker), copies;
  for (int t = 0; t < 3; ++t) copies.insert(copies.end(), row.begin(), row.end());
  posenc::apply_rope(plan, posenc::strided_view<const float, 4>(row.data(), {1, 3, 1, 8}, {0, 0, 8, 1}),
                     posenc::strided_view<float, 4>(out.data(), {1, 3, 1, 8}), posenc::positions::offset(0));
  posenc::apply_rope(plan, posenc::strided_view<float, 4>(copies.data(), {1, 3, 1, 8}), posenc::positions::offset(0));
  EXPECT_EQ(out, copies);
}

}  // namespace
