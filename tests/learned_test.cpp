// Learned absolute positions: lookup (GPT-2 past offsets, OPT's offset of 2, every position form), layer norm
// against tests/golden/learned.txt (mpmath forward and mpmath-differentiated gradients), the backward pass
// against finite differences in double (with and without layer norm and dropout), sparse accumulated table
// gradients, dropout statistics and reproducibility, deterministic initialisation, rejected inputs; the try_
// forms (no exceptions) fail with the throwing forms' messages, changing nothing, and succeed with their bits.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <posenc/error.hpp>
#include <posenc/learned.hpp>

#include "test_util.hpp"

namespace {

using posenc::index_t;
using namespace posenc_test;

// Values with 8 significant bits in [-1, 1]: sums of two of them and halves are exact in float.
std::vector<double> bf16_values(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<double> v(n);
  for (auto& x : v) x = std::ldexp(std::round(std::ldexp(posenc::detail::math::uniform01(g) * 2 - 1, 8)), -8);
  return v;
}

// ----------------------------------------------------------------------------------------------- lookup

class LearnedLookup : public IsaOnlyTest {};

TEST_P(LearnedLookup, Gpt2PastAndOptOffset) {
  for (index_t offset : {index_t{0}, index_t{2}}) {  // GPT-2, OPT
    posenc::learned_config cfg;
    cfg.max_positions = 12;
    cfg.dim = 5;
    cfg.scale = 0.5;
    cfg.position_offset = offset;
    posenc::learned_position_embedding<> m(cfg);
    ASSERT_EQ(m.rows(), 12 + offset);
    const auto table = bf16_values(static_cast<std::size_t>(m.rows() * 5), 1);
    fill_table(m, table);
    const auto x0 = bf16_values(2 * 3 * 5, 2);
    auto expect_rows = [&](const std::vector<float>& y, const posenc::positions& pos, const char* what) {
      for (index_t n = 0; n < 2; ++n)
        for (index_t l = 0; l < 3; ++l)
          for (index_t d = 0; d < 5; ++d) {
            const auto i = static_cast<std::size_t>((n * 3 + l) * 5 + d);
            const double want = x0[i] + 0.5 * table[static_cast<std::size_t>((pos.at(n, l) + offset) * 5 + d)];
            ASSERT_EQ(y[i], static_cast<float>(want)) << what << " offset " << offset << " (" << n << ", " << l << ", " << d << ")";
          }
    };
    const std::int64_t seq[] = {0, 9};
    const std::int64_t ids[] = {11, 0, 4, 4, 7, 1};
    const posenc::positions forms[] = {posenc::positions::offset(9),  // GPT-2: past_length 9 + arange(3)
                                       posenc::positions::per_sequence(seq, 2), posenc::positions::per_token(ids, 2, 3)};
    for (const auto& pos : forms) {
      std::vector<float> y(x0.begin(), x0.end());
      m.forward(posenc::strided_view<float, 3>(y.data(), {2, 3, 5}), pos);
      expect_rows(y, pos, "in place");
      std::vector<float> in(x0.begin(), x0.end()), out(y.size(), 0.0f);
      m.forward(posenc::strided_view<const float, 3>(in.data(), {2, 3, 5}), posenc::strided_view<float, 3>(out.data(), {2, 3, 5}), pos);
      expect_rows(out, pos, "out of place");
    }
    // Positions past the table: max_positions itself is rejected (OPT's extra rows are not positions).
    std::vector<float> y(x0.begin(), x0.end());
    const auto before = y;
    posenc::learned_cache cache;
    std::mt19937_64 rng(1);
    EXPECT_THROW(m.forward(posenc::strided_view<float, 3>(y.data(), {2, 3, 5}), posenc::positions::offset(10)), posenc::argument_error);
    EXPECT_THROW(m.forward(posenc::strided_view<float, 3>(y.data(), {2, 3, 5}), posenc::positions::offset(10), true, rng, cache),
                 posenc::argument_error);
    EXPECT_EQ(y, before);
    EXPECT_FALSE(cache.filled());
  }
}
INSTANTIATE_TEST_SUITE_P(Isa, LearnedLookup, ::testing::ValuesIn(all_isas()), isa_only_name);

// ------------------------------------------------------------------------------------- golden layer norm

template <class T, class C>
double check_ln_forward(const ln_case& g) {
  const auto m = g.template module<C>();
  const auto& xs = g.c.array("x");
  std::vector<T> x = to_storage<T>(xs);
  m.forward(posenc::strided_view<T, 3>(x.data(), {xs.shape[0], xs.shape[1], xs.shape[2]}),
            posenc::positions::offset(g.c.integer("past_length")));
  return expect_close(x, g.c.array("y"), "layer_norm forward");
}

TEST(LearnedGolden, LayerNormForwardAllDtypes) {
  const ln_case& g = golden_ln();
  RecordProperty("max_err_float", sci(check_ln_forward<float, float>(g)));
  RecordProperty("max_err_double", sci(check_ln_forward<double, double>(g)));
  RecordProperty("max_err_half", sci(check_ln_forward<Eigen::half, float>(g)));
  RecordProperty("max_err_bfloat16", sci(check_ln_forward<Eigen::bfloat16, float>(g)));
}

template <class C>
void check_ln_backward(const ln_case& g, double tol) {
  auto m = g.template module<C>();
  const auto& xs = g.c.array("x");
  const std::array<index_t, 3> shape{xs.shape[0], xs.shape[1], xs.shape[2]};
  std::vector<C> x = to_storage<C>(xs);
  std::vector<C> go = to_storage<C>(g.c.array("grad_out"));
  posenc::learned_cache cache;
  std::mt19937_64 rng(0);
  m.forward(posenc::strided_view<C, 3>(x.data(), shape), posenc::positions::offset(g.c.integer("past_length")), true, rng, cache);
  expect_close(x, g.c.array("y"), "layer_norm training forward");
  std::vector<C> gx(go.size());
  m.backward(posenc::strided_view<const C, 3>(go.data(), shape), posenc::strided_view<C, 3>(gx.data(), shape), cache);
  auto near = [&](const C* got, const golden_array& want, const char* what) {
    double max_err = 0;
    for (std::size_t i = 0; i < want.values.size(); ++i) {
      const double err = std::fabs(static_cast<double>(got[i]) - want.values[i]);
      max_err = std::max(max_err, err);
      EXPECT_LE(err, tol * std::max(1.0, std::fabs(want.values[i]))) << what << " " << i;
    }
    ::testing::Test::RecordProperty(std::string("max_err_") + what + "_" + dtype_info<C>::name, sci(max_err));
  };
  near(gx.data(), g.c.array("grad_x"), "grad_x");
  near(m.table_grad().data(), g.c.array("grad_table"), "grad_table");
  near(m.gamma_grad().data(), g.c.array("grad_gamma"), "grad_gamma");
  near(m.beta_grad().data(), g.c.array("grad_beta"), "grad_beta");
  // Rows 0 .. past+offset-1 are never used: their gradient is exactly zero, and they are not listed.
  const index_t first = g.c.integer("past_length") + g.cfg.position_offset;
  for (index_t i = 0; i < first * g.cfg.dim; ++i) EXPECT_EQ(m.table_grad().data()[i], C(0));
  std::vector<index_t> touched = m.touched_rows();
  std::sort(touched.begin(), touched.end());
  EXPECT_EQ(touched, (std::vector<index_t>{first, first + 1, first + 2}));
}

TEST(LearnedGolden, LayerNormBackwardMatchesMpmathDerivatives) {
  check_ln_backward<double>(golden_ln(), 1e-12);
  check_ln_backward<float>(golden_ln(), 2e-5);
}

// --------------------------------------------------------------------------------- finite differences

// Loss = sum(w * y) over one forward in double; the rng is reseeded per evaluation so that every evaluation
// uses the same dropout mask as the analytic backward.
struct fd_problem {
  posenc::learned_config cfg;
  index_t n = 2, l = 4;
  std::vector<std::int64_t> ids{3, 5, 3, 0, 5, 5, 1, 3};  // repeats: rows accumulate
  std::vector<double> x, w;
  std::uint64_t seed = 77;

  double loss(const posenc::learned_position_embedding<double>& m, const std::vector<double>& xin) const {
    std::vector<double> y = xin;
    posenc::learned_cache cache;
    std::mt19937_64 rng(seed);
    m.forward(posenc::strided_view<double, 3>(y.data(), {n, l, cfg.dim}), posenc::positions::per_token(ids.data(), n, l), true, rng, cache);
    double s = 0;
    for (std::size_t i = 0; i < y.size(); ++i) s += w[i] * y[i];
    return s;
  }
};

void check_finite_differences(bool layer_norm, double dropout) {
  fd_problem pb;
  pb.cfg.max_positions = 6;
  pb.cfg.dim = 7;
  pb.cfg.scale = 0.8;
  pb.cfg.layer_norm = layer_norm;
  pb.cfg.dropout = dropout;
  pb.cfg.position_offset = 2;
  posenc::learned_position_embedding<double> m(pb.cfg);
  m.init_normal(5, 0.5);
  std::mt19937_64 g(8);
  for (index_t d = 0; d < pb.cfg.dim; ++d) {
    m.gamma()(d) = 0.5 + posenc::detail::math::uniform01(g);
    m.beta()(d) = posenc::detail::math::uniform01(g) - 0.5;
  }
  const auto count = static_cast<std::size_t>(pb.n * pb.l * pb.cfg.dim);
  pb.x.resize(count);
  pb.w.resize(count);
  for (auto& v : pb.x) v = posenc::detail::math::uniform01(g) * 2 - 1;
  for (auto& v : pb.w) v = posenc::detail::math::uniform01(g) * 2 - 1;

  // Analytic.
  std::vector<double> y = pb.x;
  posenc::learned_cache cache;
  std::mt19937_64 rng(pb.seed);
  const std::array<index_t, 3> shape{pb.n, pb.l, pb.cfg.dim};
  m.forward(posenc::strided_view<double, 3>(y.data(), shape), posenc::positions::per_token(pb.ids.data(), pb.n, pb.l), true, rng, cache);
  if (dropout > 0) {
    ASSERT_EQ(cache.keep().size(), count);
    for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(y[i] == 0.0, cache.keep()[i] == 0) << i;
  }
  std::vector<double> gx = pb.w;  // in place: grad_in = grad_out
  m.backward(posenc::strided_view<double, 3>(gx.data(), shape), posenc::strided_view<double, 3>(gx.data(), shape), cache);

  const double h = 1e-6;
  const double tol = 2e-8;
  double max_err = 0;
  auto central = [&](const std::function<double(double)>& f) { return (f(h) - f(-h)) / (2 * h); };
  for (std::size_t i = 0; i < count; ++i) {
    const double fd = central([&](double e) {
      std::vector<double> xp = pb.x;
      xp[i] += e;
      return pb.loss(m, xp);
    });
    max_err = std::max(max_err, std::fabs(fd - gx[i]));
    EXPECT_NEAR(gx[i], fd, tol) << "grad_x " << i;
  }
  for (index_t r = 0; r < m.rows(); ++r)
    for (index_t d = 0; d < pb.cfg.dim; ++d) {
      const double fd = central([&](double e) {
        const double keep = m.table()(r, d);
        m.table()(r, d) = keep + e;
        const double v = pb.loss(m, pb.x);
        m.table()(r, d) = keep;
        return v;
      });
      max_err = std::max(max_err, std::fabs(fd - m.table_grad()(r, d)));
      EXPECT_NEAR(m.table_grad()(r, d), fd, tol) << "grad_table (" << r << ", " << d << ")";
    }
  if (layer_norm) {
    for (index_t d = 0; d < pb.cfg.dim; ++d) {
      for (int which = 0; which < 2; ++which) {
        const double fd = central([&](double e) {
          double& p = which == 0 ? m.gamma()(d) : m.beta()(d);
          const double keep = p;
          p = keep + e;
          const double v = pb.loss(m, pb.x);
          p = keep;
          return v;
        });
        const double got = which == 0 ? m.gamma_grad()(d) : m.beta_grad()(d);
        max_err = std::max(max_err, std::fabs(fd - got));
        EXPECT_NEAR(got, fd, tol) << (which == 0 ? "grad_gamma " : "grad_beta ") << d;
      }
    }
  }
  ::testing::Test::RecordProperty("max_fd_err", sci(max_err));
}

TEST(LearnedBackward, FiniteDifferencesPlain) { check_finite_differences(false, 0.0); }
TEST(LearnedBackward, FiniteDifferencesLayerNorm) { check_finite_differences(true, 0.0); }
TEST(LearnedBackward, FiniteDifferencesLayerNormDropout) { check_finite_differences(true, 0.3); }
TEST(LearnedBackward, FiniteDifferencesDropout) { check_finite_differences(false, 0.3); }

TEST(LearnedBackward, SparseAccumulationAndZeroGrad) {
  posenc::learned_config cfg;
  cfg.max_positions = 100;
  cfg.dim = 4;
  cfg.scale = 2.0;
  posenc::learned_position_embedding<> m(cfg);
  const std::int64_t ids[] = {7, 7, 50, 7};
  std::vector<float> x(16, 0.0f), g(16);
  for (std::size_t i = 0; i < 16; ++i) g[i] = static_cast<float>(i) * 0.25f;
  posenc::learned_cache cache;
  std::mt19937_64 rng(0);
  const auto pos = posenc::positions::per_token(ids, 1, 4);
  m.forward(posenc::strided_view<float, 2>(x.data(), {4, 4}), pos, true, rng, cache);
  std::vector<float> gx(16, -1.0f);
  m.backward(posenc::strided_view<const float, 2>(g.data(), {4, 4}), posenc::strided_view<float, 2>(gx.data(), {4, 4}), cache);
  EXPECT_EQ(gx, g);  // no layer norm, no dropout: the identity
  for (index_t d = 0; d < 4; ++d) {
    EXPECT_EQ(m.table_grad()(7, d), 2.0f * (g[static_cast<std::size_t>(d)] + g[static_cast<std::size_t>(4 + d)] + g[static_cast<std::size_t>(12 + d)]));
    EXPECT_EQ(m.table_grad()(50, d), 2.0f * g[static_cast<std::size_t>(8 + d)]);
  }
  EXPECT_EQ(m.touched_rows(), (std::vector<index_t>{7, 50}));
  float total = 0;
  for (index_t i = 0; i < 400; ++i) total += std::fabs(m.table_grad().data()[i]);
  EXPECT_EQ(total, 2.0f * 30.0f);  // only the two rows: 2 * sum(g) = 2 * 0.25 * (0 + ... + 15)
  // Accumulated across calls.
  m.backward(posenc::strided_view<const float, 2>(g.data(), {4, 4}), posenc::strided_view<float, 2>(gx.data(), {4, 4}), cache);
  EXPECT_EQ(m.table_grad()(50, 3), 4.0f * g[11]);
  EXPECT_EQ(m.touched_rows().size(), 2u);
  m.zero_grad();
  for (index_t i = 0; i < 400; ++i) ASSERT_EQ(m.table_grad().data()[i], 0.0f);
  EXPECT_TRUE(m.touched_rows().empty());
}

// ------------------------------------------------------------------------------------------------ dropout

TEST(LearnedDropout, StatisticsAndReproducibility) {
  posenc::learned_config cfg;
  cfg.max_positions = 100;
  cfg.dim = 100;
  cfg.dropout = 0.25;
  posenc::learned_position_embedding<> m(cfg);
  m.init_normal(3);
  Eigen::Tensor<float, 3, Eigen::RowMajor> x(10, 100, 100), y(10, 100, 100), eval(10, 100, 100);
  x.setConstant(1.0f);
  eval = x;
  m.forward(eval, posenc::positions::offset(0));
  y = x;
  posenc::learned_cache cache;
  std::mt19937_64 rng(42);
  m.forward(y, posenc::positions::offset(0), true, rng, cache);
  index_t zeros = 0;
  for (index_t i = 0; i < y.size(); ++i) {
    const bool kept = cache.keep()[static_cast<std::size_t>(i)] != 0;
    if (!kept) {
      ++zeros;
      ASSERT_EQ(y.data()[i], 0.0f);
    } else {
      ASSERT_EQ(y.data()[i], eval.data()[i] * static_cast<float>(1.0 / 0.75)) << i;
    }
  }
  const double n = 1e5, p = 0.25;
  EXPECT_NEAR(static_cast<double>(zeros), n * p, 3 * std::sqrt(n * p * (1 - p)));
  RecordProperty("dropout_zero_fraction", sci(static_cast<double>(zeros) / n));
  // Same seed, same output and mask; the eval-mode cached forward draws nothing.
  Eigen::Tensor<float, 3, Eigen::RowMajor> y2 = x;
  posenc::learned_cache cache2;
  std::mt19937_64 rng2(42);
  m.forward(y2, posenc::positions::offset(0), true, rng2, cache2);
  EXPECT_EQ(cache.keep(), cache2.keep());
  for (index_t i = 0; i < y.size(); ++i) ASSERT_EQ(y.data()[i], y2.data()[i]);
  std::mt19937_64 a(1), b(1);
  Eigen::Tensor<float, 3, Eigen::RowMajor> y3 = x;
  m.forward(y3, posenc::positions::offset(0), false, a, cache2);
  EXPECT_EQ(a(), b());
  EXPECT_TRUE(cache2.keep().empty());
  // The mask rule itself: draws of std::mt19937_64(42) map to 0.7552, 0.6390, 0.7521 (computed independently
  // in Python): with p = 0.7 the second element alone is dropped.
  posenc::learned_config c3;
  c3.max_positions = 1;
  c3.dim = 3;
  c3.dropout = 0.7;
  posenc::learned_position_embedding<double> m3(c3);
  std::vector<double> v3{1.0, 1.0, 1.0};
  posenc::learned_cache k3;
  std::mt19937_64 r3(42);
  m3.forward(posenc::strided_view<double, 2>(v3.data(), {1, 3}), posenc::positions::offset(0), true, r3, k3);
  EXPECT_EQ(k3.keep(), (std::vector<unsigned char>{1, 0, 1}));
  EXPECT_NEAR(v3[0], 1.0 / 0.3, 1e-15);
  EXPECT_EQ(v3[1], 0.0);
}

// --------------------------------------------------------------------------------------------------- init

TEST(LearnedInit, NormalIsDeterministicWithStd002) {
  posenc::learned_config cfg;
  cfg.max_positions = 1024;
  cfg.dim = 64;
  posenc::learned_position_embedding<double> a(cfg), b(cfg), c(cfg);
  a.init_normal(1234);
  b.init_normal(1234);
  c.init_normal(1235);
  double sum = 0, sq = 0;
  int differ = 0;
  const index_t count = a.table().size();
  for (index_t i = 0; i < count; ++i) {
    const double v = a.table().data()[i];
    ASSERT_EQ(v, b.table().data()[i]);
    differ += v != c.table().data()[i];
    sum += v;
    sq += v * v;
  }
  EXPECT_EQ(differ, count);
  const double mean = sum / static_cast<double>(count);
  const double sd = std::sqrt(sq / static_cast<double>(count) - mean * mean);
  EXPECT_NEAR(mean, 0.0, 4 * 0.02 / std::sqrt(static_cast<double>(count)));
  EXPECT_NEAR(sd, 0.02, 4 * 0.02 / std::sqrt(2.0 * static_cast<double>(count)));
  // std::mt19937_64 is the standard's engine (its 10000th output is fixed by [rand.predef]).
  std::mt19937_64 e;
  e.discard(9999);
  EXPECT_EQ(e(), 9981545732273789042ull);
  // The first values from seed 1234, computed independently in Python (an MT19937-64 written from the
  // standard's definition, whose 10000th output matches, and the same Box-Muller mapping with math.log/cos/sin).
  const double want[4] = {0.3117089594015782, 0.10611690443837636, 0.21498597680926076, -0.07625971499015324};
  posenc::detail::math::normal_generator gen(1234);
  for (double w : want) EXPECT_NEAR(gen(), w, 4e-16 * std::fabs(w));
  for (index_t d = 0; d < 4; ++d) EXPECT_NEAR(a.table()(0, d), 0.02 * want[d], 1e-17);
  EXPECT_THROW(a.init_normal(1, std::nan("")), posenc::argument_error);
}

// -------------------------------------------------------------------------------------------------- rejects

TEST(LearnedEmbedding, RejectsBadInputChangingNothing) {
  auto make = [](auto mutate) {
    posenc::learned_config cfg;
    cfg.max_positions = 8;
    cfg.dim = 4;
    mutate(cfg);
    return posenc::learned_position_embedding<>(cfg);
  };
  EXPECT_THROW(make([](auto& c) { c.max_positions = 0; }), posenc::argument_error);
  EXPECT_THROW(make([](auto& c) { c.dim = 0; }), posenc::argument_error);
  EXPECT_THROW(make([](auto& c) { c.position_offset = -2; }), posenc::argument_error);
  EXPECT_THROW(make([](auto& c) { c.scale = INFINITY; }), posenc::argument_error);
  EXPECT_THROW(make([](auto& c) { c.layer_norm = true; c.eps = 0; }), posenc::argument_error);
  EXPECT_THROW(make([](auto& c) { c.dropout = 1.01; }), posenc::argument_error);
  EXPECT_THROW(make([](auto& c) { c.max_positions = std::numeric_limits<index_t>::max(); }), posenc::argument_error);

  auto m = make([](auto& c) { c.layer_norm = true; });
  auto other = make([](auto&) {});
  std::vector<float> x(2 * 3 * 4, 0.5f);
  const auto x0 = x;
  const posenc::strided_view<float, 3> v(x.data(), {2, 3, 4});
  posenc::learned_cache cache;
  std::mt19937_64 rng(3);
  EXPECT_THROW(m.forward(posenc::strided_view<float, 3>(x.data(), {2, 4, 3}), posenc::positions::offset(0)), posenc::argument_error);
  EXPECT_THROW(m.forward(v, posenc::positions::offset(-1), true, rng, cache), posenc::argument_error);
  EXPECT_THROW(m.forward(v, posenc::positions::offset(6), true, rng, cache), posenc::argument_error);  // 6 + 3 > 8
  EXPECT_THROW(m.forward(posenc::strided_view<const float, 3>(x.data(), {1, 3, 4}), posenc::strided_view<float, 3>(x.data() + 2, {1, 3, 4}),
                         posenc::positions::offset(0)), posenc::argument_error);  // overlap
  EXPECT_EQ(x, x0);
  EXPECT_FALSE(cache.filled());
  std::mt19937_64 fresh(3);
  EXPECT_EQ(rng(), fresh());  // no draws on a rejected call
  std::vector<float> g(x.size(), 1.0f);
  EXPECT_THROW(m.backward(v, v, cache), posenc::argument_error);  // empty cache
  m.forward(v, posenc::positions::offset(0), true, rng, cache);
  const auto y = x;
  EXPECT_THROW(other.backward(v, v, cache), posenc::argument_error);  // another module's cache
  EXPECT_THROW(m.backward(posenc::strided_view<float, 3>(g.data(), {1, 3, 4}), posenc::strided_view<float, 3>(g.data(), {1, 3, 4}), cache),
               posenc::argument_error);  // shape differs from the cached forward
  EXPECT_EQ(x, y);
  for (float e : g) ASSERT_EQ(e, 1.0f);
  for (index_t i = 0; i < m.table_grad().size(); ++i) ASSERT_EQ(m.table_grad().data()[i], 0.0f);
  EXPECT_TRUE(m.touched_rows().empty());
}

// ------------------------------------------------------------------------------------------ try_ forms

template <class V>
std::vector<std::remove_const_t<typename V::element_type>> copy_of(const V& v) {
  return {v.data(), v.data() + v.size()};
}

// Everything a module holds, to check that a rejected call changed nothing.
template <class C>
struct module_state {
  index_t rows = 0, dim = 0, max_positions = 0, offset = 0;
  bool layer_norm = false;
  double scale = 0, dropout = 0;
  std::vector<C> table, grad, gamma, beta, gamma_grad, beta_grad;
  std::vector<index_t> touched;

  explicit module_state(const posenc::learned_position_embedding<C>& m)
      : rows(m.rows()), dim(m.dim()), max_positions(m.config().max_positions), offset(m.config().position_offset),
        layer_norm(m.config().layer_norm), scale(m.config().scale), dropout(m.config().dropout),
        table(copy_of(m.table())), grad(copy_of(m.table_grad())), gamma(copy_of(m.gamma())), beta(copy_of(m.beta())),
        gamma_grad(copy_of(m.gamma_grad())), beta_grad(copy_of(m.beta_grad())), touched(m.touched_rows()) {}
  bool operator==(const module_state& o) const {
    return rows == o.rows && dim == o.dim && max_positions == o.max_positions && offset == o.offset &&
           layer_norm == o.layer_norm && scale == o.scale && dropout == o.dropout && same_bits(table, o.table) &&
           same_bits(grad, o.grad) && same_bits(gamma, o.gamma) && same_bits(beta, o.beta) &&
           same_bits(gamma_grad, o.gamma_grad) && same_bits(beta_grad, o.beta_grad) && touched == o.touched;
  }
};

// A cache's visible contents.
struct cache_state {
  bool filled;
  index_t n, l, d;
  std::vector<index_t> rows;
  std::vector<unsigned char> keep;
  explicit cache_state(const posenc::learned_cache& c)
      : filled(c.filled()), n(c.batch()), l(c.length()), d(c.dim()), rows(c.rows()), keep(c.keep()) {}
  bool operator==(const cache_state& o) const {
    return filled == o.filled && n == o.n && l == o.l && d == o.d && rows == o.rows && keep == o.keep;
  }
};

posenc::learned_config small_config(bool layer_norm, double dropout) {
  posenc::learned_config cfg;
  cfg.max_positions = 8;
  cfg.dim = 4;
  cfg.scale = 1.5;
  cfg.layer_norm = layer_norm;
  cfg.dropout = dropout;
  cfg.position_offset = 2;
  return cfg;
}

std::vector<float> ramp(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = 0.25f + 0.01f * static_cast<float>(i);
  return v;
}

TEST(LearnedTry, Create) {
  posenc::learned_position_embedding<> m(small_config(false, 0.0));
  m.init_normal(5);
  const module_state<float> before(m);
  const posenc::learned_config good = small_config(false, 0.0);
  static_assert(noexcept(posenc::learned_position_embedding<>::try_create(good, m)), "try_ forms are noexcept");
  const std::vector<std::pair<const char*, std::function<void(posenc::learned_config&)>>> bad = {
      {"max_positions 0", [](auto& c) { c.max_positions = 0; }},
      {"dim 0", [](auto& c) { c.dim = 0; }},
      {"negative offset", [](auto& c) { c.position_offset = -2; }},
      {"scale inf", [](auto& c) { c.scale = std::numeric_limits<double>::infinity(); }},
      {"eps 0", [](auto& c) { c.layer_norm = true; c.eps = 0; }},
      {"dropout", [](auto& c) { c.dropout = 1.01; }},
      {"overflow", [](auto& c) { c.max_positions = std::numeric_limits<index_t>::max(); }},
  };
  for (const auto& b : bad) {
    posenc::learned_config cfg = small_config(true, 0.1);
    b.second(cfg);
    expect_rejection(posenc::learned_position_embedding<>::try_create(cfg, m),
                       thrown_message([&] { posenc::learned_position_embedding<> x(cfg); }), b.first);
    EXPECT_TRUE(module_state<float>(m) == before) << b.first;
  }
  posenc::learned_config odd = small_config(false, 0.0);
  odd.dropout = 2.0;
  EXPECT_EQ(posenc::learned_position_embedding<>::try_create(odd, m).message(),
            "posenc::learned_position_embedding: dropout=2 must be in [0, 1]");

  // Accepted: the constructor's module.
  for (bool ln : {false, true}) {
    const posenc::learned_config cfg = small_config(ln, 0.25);
    const posenc::learned_position_embedding<double> ref(cfg);
    posenc::learned_position_embedding<double> e;
    EXPECT_EQ(e.rows(), 0);
    expect_ok(posenc::learned_position_embedding<double>::try_create(cfg, e), "create");
    EXPECT_EQ(e.rows(), 10);
    EXPECT_TRUE(module_state<double>(e) == module_state<double>(ref));
  }
}

TEST(LearnedTry, InitNormal) {
  posenc::learned_position_embedding<> a(small_config(false, 0.0)), b(small_config(false, 0.0));
  a.init_normal(3);
  b.init_normal(3);
  const module_state<float> before(b);
  static_assert(noexcept(b.try_init_normal(1, 0.5)), "try_ forms are noexcept");
  for (double sd : {std::nan(""), -1.0, std::numeric_limits<double>::infinity()}) {
    expect_rejection(b.try_init_normal(9, sd), thrown_message([&] { a.init_normal(9, sd); }), "stddev");
    EXPECT_TRUE(module_state<float>(b) == before);
  }
  EXPECT_EQ(b.try_init_normal(9, -1.0).message(), "posenc::learned_position_embedding::init_normal: stddev=-1 must be finite and >= 0");
  a.init_normal(1234, 0.5);
  expect_ok(b.try_init_normal(1234, 0.5), "init");
  EXPECT_TRUE(module_state<float>(a) == module_state<float>(b));
  a.init_normal(77);
  expect_ok(b.try_init_normal(77), "default stddev");
  EXPECT_TRUE(module_state<float>(a) == module_state<float>(b));
}

TEST(LearnedTry, ForwardEveryOverload) {
  for (bool ln : {false, true}) {
    const std::string tag = ln ? "layer norm" : "plain";
    posenc::learned_position_embedding<> m(small_config(ln, 0.3));
    m.init_normal(21, 0.5);
    const module_state<float> mstate(m);
    std::vector<float> x = ramp(2 * 3 * 4);
    const auto x0 = x;
    std::vector<float> y(x.size(), -9.0f);
    const auto y0 = y;
    const posenc::strided_view<float, 3> vx(x.data(), {2, 3, 4});
    const posenc::strided_view<const float, 3> in(x.data(), {2, 3, 4});
    const posenc::strided_view<float, 3> out(y.data(), {2, 3, 4});
    const posenc::strided_view<float, 3> wrong_dim(x.data(), {2, 4, 3});
    const posenc::strided_view<float, 3> short_out(y.data(), {1, 3, 4});
    const posenc::strided_view<float, 3> overlap(x.data() + 2, {2, 2, 4});
    const posenc::strided_view<const float, 3> in_overlap(x.data(), {2, 2, 4});
    const auto p0 = posenc::positions::offset(0);
    const auto past = posenc::positions::offset(6);  // positions 6 .. 8 of L = 3; the table has 8
    const auto neg = posenc::positions::offset(-1);
    posenc::learned_cache cache;
    std::mt19937_64 rng(3);
    static_assert(noexcept(m.try_forward(vx, p0)), "try_ forms are noexcept");
    static_assert(noexcept(m.try_forward(in, out, p0)), "try_ forms are noexcept");
    static_assert(noexcept(m.try_forward(vx, p0, true, rng, cache)), "try_ forms are noexcept");
    static_assert(noexcept(m.try_forward(in, out, p0, true, rng, cache)), "try_ forms are noexcept");

    auto unchanged = [&](const std::string& what, const cache_state& c0) {
      EXPECT_TRUE(same_bits(x, x0)) << tag << ": " << what;
      EXPECT_TRUE(same_bits(y, y0)) << tag << ": " << what;
      EXPECT_TRUE(cache_state(cache) == c0) << tag << ": " << what;
      std::mt19937_64 fresh(3);
      EXPECT_EQ(rng, fresh) << tag << ": " << what;  // no draws on a rejected call
      EXPECT_TRUE(module_state<float>(m) == mstate) << tag << ": " << what;
    };
    // Rejected, with an empty cache, then with a filled one (a rejected call keeps what it held).
    for (int filled = 0; filled < 2; ++filled) {
      if (filled) {
        std::vector<float> z = ramp(5 * 4);
        std::mt19937_64 other(17);
        m.forward(posenc::strided_view<float, 2>(z.data(), {5, 4}), posenc::positions::offset(1), true, other, cache);
      }
      const cache_state c0(cache);
      expect_rejection(m.try_forward(wrong_dim, p0), thrown_message([&] { m.forward(wrong_dim, p0); }), "D mismatch");
      expect_rejection(m.try_forward(vx, past), thrown_message([&] { m.forward(vx, past); }), "past the table");
      expect_rejection(m.try_forward(in, short_out, p0), thrown_message([&] { m.forward(in, short_out, p0); }), "shape");
      expect_rejection(m.try_forward(in_overlap, overlap, p0), thrown_message([&] { m.forward(in_overlap, overlap, p0); }),
                         "overlap");
      expect_rejection(m.try_forward(vx, neg, true, rng, cache), thrown_message([&] { m.forward(vx, neg, true, rng, cache); }),
                         "negative");
      expect_rejection(m.try_forward(vx, past, true, rng, cache), thrown_message([&] { m.forward(vx, past, true, rng, cache); }),
                         "train past");
      expect_rejection(m.try_forward(in, short_out, p0, true, rng, cache),
                         thrown_message([&] { m.forward(in, short_out, p0, true, rng, cache); }), "train shape");
      expect_rejection(m.try_forward(in, out, past, false, rng, cache),
                         thrown_message([&] { m.forward(in, out, past, false, rng, cache); }), "eval past");
      unchanged(filled ? "filled cache" : "empty cache", c0);
    }
    EXPECT_EQ(m.try_forward(vx, past).message(),
              "posenc::learned_position_embedding::forward: position 8 is past the table of max_positions=8");
    EXPECT_EQ(m.try_forward(in, short_out, p0).message(),
              "posenc::learned_position_embedding::forward: out shape (1, 3, 4) does not match in shape (2, 3, 4)");

    // Accepted: the throwing form's bits, generator state and cache, every overload.
    const std::int64_t ids[6] = {7, 0, 3, 3, 5, 1};
    const auto pos = posenc::positions::per_token(ids, 2, 3);
    std::vector<float> a = x0, b = x0;
    m.forward(posenc::strided_view<float, 3>(a.data(), {2, 3, 4}), pos);
    expect_ok(m.try_forward(posenc::strided_view<float, 3>(b.data(), {2, 3, 4}), pos), "eval in place");
    EXPECT_TRUE(same_bits(a, b)) << tag;
    std::vector<float> oa(x0.size(), -1.0f), ob(x0.size(), -1.0f);
    m.forward(in, posenc::strided_view<float, 3>(oa.data(), {2, 3, 4}), pos);
    expect_ok(m.try_forward(in, posenc::strided_view<float, 3>(ob.data(), {2, 3, 4}), pos), "eval out of place");
    EXPECT_TRUE(same_bits(oa, ob)) << tag;
    EXPECT_TRUE(same_bits(oa, a)) << tag;
    for (bool train : {false, true}) {
      std::mt19937_64 ra(8), rb(8);
      posenc::learned_cache ca, cb;
      a = x0;
      b = x0;
      m.forward(posenc::strided_view<float, 3>(a.data(), {2, 3, 4}), pos, train, ra, ca);
      expect_ok(m.try_forward(posenc::strided_view<float, 3>(b.data(), {2, 3, 4}), pos, train, rb, cb), "cached in place");
      EXPECT_TRUE(same_bits(a, b)) << tag << train;
      EXPECT_EQ(ra, rb) << tag << train;
      EXPECT_TRUE(cache_state(ca) == cache_state(cb)) << tag << train;
      EXPECT_TRUE(cb.filled());
      std::fill(oa.begin(), oa.end(), -1.0f);
      std::fill(ob.begin(), ob.end(), -1.0f);
      m.forward(in, posenc::strided_view<float, 3>(oa.data(), {2, 3, 4}), pos, train, ra, ca);
      expect_ok(m.try_forward(in, posenc::strided_view<float, 3>(ob.data(), {2, 3, 4}), pos, train, rb, cb), "cached out of place");
      EXPECT_TRUE(same_bits(oa, ob)) << tag << train;
      EXPECT_EQ(ra, rb) << tag << train;
      EXPECT_TRUE(cache_state(ca) == cache_state(cb)) << tag << train;
    }
  }
}

TEST(LearnedTry, Backward) {
  for (bool ln : {false, true}) {
    const std::string tag = ln ? "layer norm" : "plain";
    posenc::learned_position_embedding<> a(small_config(ln, 0.3)), other(small_config(ln, 0.3));
    a.init_normal(4, 0.5);
    auto b = a;  // a copy: its touched-rows vector lacks the reserved room, try_backward makes it
    const std::int64_t ids[6] = {7, 0, 3, 3, 5, 3};
    const auto pos = posenc::positions::per_token(ids, 2, 3);
    std::vector<float> xa = ramp(24), xb = ramp(24);
    std::mt19937_64 ra(6), rb(6);
    posenc::learned_cache ca, cb, empty;
    a.forward(posenc::strided_view<float, 3>(xa.data(), {2, 3, 4}), pos, true, ra, ca);
    expect_ok(b.try_forward(posenc::strided_view<float, 3>(xb.data(), {2, 3, 4}), pos, true, rb, cb), "forward");

    std::vector<float> g = ramp(24), gx(24, -2.0f);
    const auto g0 = g;
    const auto gx0 = gx;
    const posenc::strided_view<const float, 3> go(g.data(), {2, 3, 4});
    const posenc::strided_view<float, 3> gi(gx.data(), {2, 3, 4});
    const posenc::strided_view<const float, 3> go_short(g.data(), {1, 3, 4});
    const posenc::strided_view<float, 3> gi_short(gx.data(), {1, 3, 4});
    const posenc::strided_view<const float, 3> go_dim(g.data(), {2, 4, 3});
    const posenc::strided_view<float, 3> gi_dim(gx.data(), {2, 4, 3});
    const posenc::strided_view<float, 3> gi_overlap(g.data() + 1, {2, 3, 4});
    static_assert(noexcept(b.try_backward(go, gi, cb)), "try_ forms are noexcept");
    const module_state<float> before(b);
    struct bad_case {
      const char* what;
      posenc::strided_view<const float, 3> go;
      posenc::strided_view<float, 3> gi;
      const posenc::learned_cache* cache;
    };
    const bad_case bad[] = {
        {"empty cache", go, gi, &empty},
        {"another module's cache", go, gi, &ca},
        {"(N, L) differs from the forward", go_short, gi_short, &cb},
        {"D mismatch", go_dim, gi_dim, &cb},
        {"overlap", go, gi_overlap, &cb},
    };
    for (const auto& bc : bad) {
      expect_rejection(b.try_backward(bc.go, bc.gi, *bc.cache),
                         thrown_message([&] { b.backward(bc.go, bc.gi, *bc.cache); }), bc.what);
      EXPECT_TRUE(module_state<float>(b) == before) << tag << ": " << bc.what;
      EXPECT_TRUE(same_bits(g, g0)) << tag << ": " << bc.what;
      EXPECT_TRUE(same_bits(gx, gx0)) << tag << ": " << bc.what;
    }
    EXPECT_EQ(b.try_backward(go, gi, empty).message(),
              "posenc::learned_position_embedding::backward: cache is empty (no forward with this cache)");
    EXPECT_EQ(b.try_backward(go, gi, ca).message(), "posenc::learned_position_embedding::backward: cache was filled by another module");
    EXPECT_FALSE(other.try_backward(go, gi, cb).ok());

    // Accepted: the throwing form's bits (input gradient, table/gamma/beta gradients, touched rows), twice
    // (accumulation), out of place and in place.
    std::vector<float> gxa(24, -2.0f);
    a.backward(go, posenc::strided_view<float, 3>(gxa.data(), {2, 3, 4}), ca);
    expect_ok(b.try_backward(go, gi, cb), "backward");
    EXPECT_TRUE(same_bits(gx, gxa)) << tag;
    EXPECT_TRUE(module_state<float>(a) == module_state<float>(b)) << tag;
    EXPECT_EQ(b.touched_rows(), (std::vector<index_t>{9, 2, 5, 7})) << tag;  // position + offset 2, first use
    std::vector<float> ga = g0, gb = g0;
    a.backward(posenc::strided_view<float, 3>(ga.data(), {2, 3, 4}), posenc::strided_view<float, 3>(ga.data(), {2, 3, 4}), ca);
    expect_ok(b.try_backward(posenc::strided_view<float, 3>(gb.data(), {2, 3, 4}), posenc::strided_view<float, 3>(gb.data(), {2, 3, 4}), cb),
              "in place");
    EXPECT_TRUE(same_bits(ga, gb)) << tag;
    EXPECT_TRUE(module_state<float>(a) == module_state<float>(b)) << tag;
  }
}

}  // namespace
