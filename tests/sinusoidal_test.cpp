// Sinusoidal encodings against tests/golden/sinusoidal.txt (gen_tables.py, mpmath) in every dtype; the
// addition equals x + table rows for every position form, layout and view kind; fairseq's padding
// convention; the module (buffer, eval, inverted dropout); every rejected input leaves the output unchanged;
// the try_ forms (no exceptions) fail with the throwing forms' messages and succeed with their exact results.
#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <posenc/error.hpp>
#include <posenc/sinusoidal.hpp>

#include "test_util.hpp"

namespace {

using posenc::index_t;
using namespace posenc_test;

const std::vector<golden_case>& golden() {
  static const std::vector<golden_case> cases = load_golden("sinusoidal.txt");
  return cases;
}

std::vector<std::string> table_cases() {
  return golden_case_names("sinusoidal.txt", "table");
}

class SinusoidalTableGolden : public IsaTest<std::string> {};

template <class T>
double check_table(const golden_case& c) {
  const auto cfg = sinusoidal_config_of(c);
  const index_t len = c.integer("length");
  const index_t offset = c.integer("offset");
  std::vector<T> t(static_cast<std::size_t>(len * cfg.dim), T(-7));
  posenc::sinusoidal_table(cfg, posenc::strided_view<T, 2>(t.data(), {len, cfg.dim}), offset);
  return expect_close(t, c.array("table"), c.name, sinusoid_angle_bound(offset + len, cfg.base));
}

TEST_P(SinusoidalTableGolden, AllDtypes) {
  const golden_case& c = find_case(golden(), param());
  RecordProperty("max_err_float", sci(check_table<float>(c)));
  RecordProperty("max_err_double", sci(check_table<double>(c)));
  RecordProperty("max_err_half", sci(check_table<Eigen::half>(c)));
  RecordProperty("max_err_bfloat16", sci(check_table<Eigen::bfloat16>(c)));
}

TEST_P(SinusoidalTableGolden, EigenTensorAndStridedView) {
  const golden_case& c = find_case(golden(), param());
  const auto cfg = sinusoidal_config_of(c);
  const index_t len = c.integer("length");
  const index_t offset = c.integer("offset");
  Eigen::Tensor<float, 2, Eigen::RowMajor> t(len, cfg.dim);
  posenc::sinusoidal_table(cfg, t, offset);
  std::vector<float> flat(t.data(), t.data() + t.size());
  expect_close(flat, c.array("table"), c.name + " Eigen", sinusoid_angle_bound(offset + len, cfg.base));
  // Transposed storage: element (l, d) at d * len + l.
  std::vector<double> col(static_cast<std::size_t>(len * cfg.dim), -7.0);
  posenc::sinusoidal_table(cfg, posenc::strided_view<double, 2>(col.data(), {len, cfg.dim}, {1, len}), offset);
  std::vector<double> back;
  for (index_t l = 0; l < len; ++l)
    for (index_t d = 0; d < cfg.dim; ++d) back.push_back(col[static_cast<std::size_t>(d * len + l)]);
  expect_close(back, c.array("table"), c.name + " strided", sinusoid_angle_bound(offset + len, cfg.base));
}

INSTANTIATE_TEST_SUITE_P(Golden, SinusoidalTableGolden,
                         ::testing::Combine(::testing::ValuesIn(table_cases()), ::testing::ValuesIn(all_isas())),
                         IsaParamName{});

template <class T>
double check_add_case(const golden_case& c, bool in_place) {
  const auto cfg = sinusoidal_config_of(c);
  const auto& xs = c.array("x");
  const std::array<index_t, 3> shape{xs.shape[0], xs.shape[1], xs.shape[2]};
  std::vector<std::int64_t> pos_ids = c.array("positions").ivalues;
  if (c.has("tokens")) {  // fairseq: the positions come from the tokens
    std::vector<std::int64_t> made(pos_ids.size(), -1);
    posenc::make_padded_positions(c.array("tokens").ivalues.data(), shape[0], shape[1], *cfg.padding_idx, made.data());
    EXPECT_EQ(made, pos_ids) << c.name;
  }
  const auto pos = posenc::positions::per_token(pos_ids.data(), shape[0], shape[1]);
  std::vector<T> x = to_storage<T>(xs);
  std::vector<T> y(x.size(), T(0));
  if (in_place) {
    posenc::add_sinusoidal(cfg, posenc::strided_view<T, 3>(x.data(), shape), pos);
  } else {
    posenc::add_sinusoidal(cfg, posenc::strided_view<const T, 3>(x.data(), shape),
                           posenc::strided_view<T, 3>(y.data(), shape), pos);
  }
  index_t max_pos = 0;
  for (auto p : pos_ids) max_pos = std::max<index_t>(max_pos, p);
  return expect_close(in_place ? x : y, c.array("y"), c.name + (in_place ? " in place" : " out of place"),
                      sinusoid_angle_bound(max_pos, cfg.base));
}

class SinusoidalAddGolden : public IsaOnlyTest {};

TEST_P(SinusoidalAddGolden, AllCasesAllDtypes) {
  int n = 0;
  for (const auto& c : golden()) {
    if (!c.has("y")) continue;
    ++n;
    for (bool in_place : {true, false}) {
      const double ef = check_add_case<float>(c, in_place);
      const double ed = check_add_case<double>(c, in_place);
      const double eh = check_add_case<Eigen::half>(c, in_place);
      const double eb = check_add_case<Eigen::bfloat16>(c, in_place);
      RecordProperty(c.name + (in_place ? "" : "_oop") + "_max_err",
                     sci(ef) + " " + sci(ed) + " " + sci(eh) + " " + sci(eb));
    }
  }
  EXPECT_EQ(n, 3);
}
INSTANTIATE_TEST_SUITE_P(Isa, SinusoidalAddGolden, ::testing::ValuesIn(all_isas()), isa_only_name);

// The addition equals x + the table rows of each token's position, for every position form and layout.
// Double: bit for bit (the same sin/cos, one addition); float: the double sum rounded once.
template <class T>
void check_add_matches_table(posenc::sinusoidal_layout layout) {
  constexpr index_t n = 3, l = 5, d = 12;
  posenc::sinusoidal_config cfg{d, 10000.0, layout, std::nullopt};
  const std::int64_t seq_off[n] = {0, 17, 4000};
  std::vector<std::int64_t> ids(static_cast<std::size_t>(n * l));
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<std::int64_t>((i * 7919) % 5003);
  std::vector<double> table(static_cast<std::size_t>(5004 * d));
  posenc::sinusoidal_table(cfg, posenc::strided_view<double, 2>(table.data(), {5004, d}));
  std::mt19937_64 gen(3);
  std::vector<T> x0(static_cast<std::size_t>(n * l * d));
  for (auto& v : x0) v = static_cast<T>(static_cast<float>(posenc::detail::math::uniform01(gen) * 2.0 - 1.0));

  const posenc::positions forms[] = {posenc::positions::offset(3), posenc::positions::per_sequence(seq_off, n),
                                     posenc::positions::per_token(ids.data(), n, l)};
  for (const auto& pos : forms) {
    std::vector<T> x = x0;
    posenc::add_sinusoidal(cfg, posenc::strided_view<T, 3>(x.data(), {n, l, d}), pos);
    for (index_t a = 0; a < n; ++a)
      for (index_t b = 0; b < l; ++b)
        for (index_t f = 0; f < d; ++f) {
          const auto i = static_cast<std::size_t>((a * l + b) * d + f);
          const double want = as_double(x0[i]) + table[static_cast<std::size_t>(pos.at(a, b) * d + f)];
          ASSERT_EQ(as_double(x[i]), as_double(static_cast<T>(want))) << "form " << static_cast<int>(pos.kind()) << " token (" << a << ", " << b << ") feature " << f;
        }
  }
}

TEST(AddSinusoidal, EqualsTableRowsEveryPositionForm) {
  for (auto layout : {posenc::sinusoidal_layout::interleaved, posenc::sinusoidal_layout::concat}) {
    check_add_matches_table<double>(layout);
    check_add_matches_table<float>(layout);
  }
}

TEST(AddSinusoidal, RankTwoEigenAndStrided) {
  constexpr index_t l = 4, d = 6;
  const posenc::sinusoidal_config cfg{d};
  Eigen::Tensor<double, 2, Eigen::RowMajor> x(l, d);
  x.setConstant(0.5);
  posenc::add_sinusoidal(cfg, x, posenc::positions::offset(9));
  std::vector<double> t(static_cast<std::size_t>(l * d));
  posenc::sinusoidal_table(cfg, posenc::strided_view<double, 2>(t.data(), {l, d}), 9);
  for (index_t i = 0; i < l * d; ++i) EXPECT_EQ(x.data()[i], 0.5 + t[static_cast<std::size_t>(i)]);

  // Rank 3 Eigen tensor and a strided view: every other token of a (1, 2L, D) buffer.
  Eigen::Tensor<double, 3, Eigen::RowMajor> y(1, l, d);
  y.setConstant(0.5);
  posenc::add_sinusoidal(cfg, y, posenc::positions::offset(9));
  for (index_t i = 0; i < l * d; ++i) EXPECT_EQ(y.data()[i], x.data()[i]);
  std::vector<double> buf(static_cast<std::size_t>(2 * l * d), 0.5);
  posenc::add_sinusoidal(cfg, posenc::strided_view<double, 3>(buf.data(), {1, l, d}, {0, 2 * d, 1}),
                         posenc::positions::offset(9));
  for (index_t a = 0; a < l; ++a)
    for (index_t f = 0; f < d; ++f) {
      EXPECT_EQ(buf[static_cast<std::size_t>(2 * a * d + f)], x(a, f));
      EXPECT_EQ(buf[static_cast<std::size_t>((2 * a + 1) * d + f)], 0.5);  // untouched
    }
}

TEST(SinusoidalTable, DimTwoLayoutsAgree) {
  // D = 2: w_0 = 1 in both conventions (tensor2tensor's guard for concat), so both give [sin p, cos p].
  std::vector<double> a(20), b(20);
  posenc::sinusoidal_table({2, 10000.0, posenc::sinusoidal_layout::interleaved}, posenc::strided_view<double, 2>(a.data(), {10, 2}));
  posenc::sinusoidal_table({2, 10000.0, posenc::sinusoidal_layout::concat}, posenc::strided_view<double, 2>(b.data(), {10, 2}));
  EXPECT_EQ(a, b);
  // The kernels' vector sin/cos: within 2 ulp of the (long double) value.
  for (int p = 0; p < 10; ++p) {
    EXPECT_NEAR(a[static_cast<std::size_t>(2 * p)], static_cast<double>(std::sin(static_cast<long double>(p))), 2 * DBL_EPSILON);
    EXPECT_NEAR(a[static_cast<std::size_t>(2 * p + 1)], static_cast<double>(std::cos(static_cast<long double>(p))), 2 * DBL_EPSILON);
  }
  const auto w = posenc::sinusoidal_frequencies({8, 10000.0, posenc::sinusoidal_layout::concat});
  ASSERT_EQ(w.size(), 4u);
  EXPECT_EQ(w[0], 1.0);
  EXPECT_NEAR(w[3], 1e-4, 1e-19);  // base^(-3/3)
}

TEST(MakePaddedPositions, FairseqAndHuggingFace) {
  const std::int64_t tok[] = {1, 1, 7, 9, 5, 1, 1, 8};  // padding_idx 1
  std::int64_t pos[8];
  posenc::make_padded_positions(tok, 2, 4, 1, pos);
  const std::int64_t want[] = {1, 1, 2, 3, 2, 1, 1, 3};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(pos[i], want[i]) << i;
  // HF create_position_ids_from_input_ids with past_key_values_length 5: (cumsum + past) * mask + padding_idx.
  const std::int32_t tok32[] = {1, 4, 4};
  std::int64_t pos32[3];
  posenc::make_padded_positions(tok32, 1, 3, 1, pos32, 5);
  EXPECT_EQ(pos32[0], 1);
  EXPECT_EQ(pos32[1], 7);
  EXPECT_EQ(pos32[2], 8);
  // Padding rows get nothing added.
  posenc::sinusoidal_config cfg{4, 10000.0, posenc::sinusoidal_layout::concat, 1};
  std::vector<float> x(32, 0.25f);
  posenc::add_sinusoidal(cfg, posenc::strided_view<float, 3>(x.data(), {2, 4, 4}), posenc::positions::per_token(pos, 2, 4));
  for (int t : {0, 1, 5, 6})
    for (int f = 0; f < 4; ++f) EXPECT_EQ(x[static_cast<std::size_t>(4 * t + f)], 0.25f) << "padding token " << t;
  EXPECT_NE(x[8], 0.25f);
  // Rejected: negative sizes, padding_idx, past_length; null arrays; overflow.
  std::int64_t out[2] = {-5, -5};
  EXPECT_THROW(posenc::make_padded_positions(tok, -1, 2, 1, out), posenc::argument_error);
  EXPECT_THROW(posenc::make_padded_positions(tok, 1, 2, -1, out), posenc::argument_error);
  EXPECT_THROW(posenc::make_padded_positions(tok, 1, 2, 1, out, -3), posenc::argument_error);
  EXPECT_THROW(posenc::make_padded_positions(static_cast<const std::int64_t*>(nullptr), 1, 2, 1, out), posenc::argument_error);
  EXPECT_THROW(posenc::make_padded_positions(tok, 1, 2, std::numeric_limits<index_t>::max() - 1, out), posenc::argument_error);
  EXPECT_EQ(out[0], -5);
  EXPECT_EQ(out[1], -5);
}

// Every rejected call throws argument_error and leaves its output untouched.
TEST(Sinusoidal, RejectsBadInputWritingNothing) {
  std::vector<float> x(2 * 3 * 8, 1.5f);
  const std::vector<float> orig = x;
  const posenc::strided_view<float, 3> v(x.data(), {2, 3, 8});
  const posenc::positions p0 = posenc::positions::offset(0);
  auto expect_rejected = [&](auto&& call, const char* what) {
    EXPECT_THROW(call(), posenc::argument_error) << what;
    EXPECT_EQ(x, orig) << what;
  };
  expect_rejected([&] { posenc::add_sinusoidal({7}, v, p0); }, "odd dim");
  expect_rejected([&] { posenc::add_sinusoidal({0}, v, p0); }, "zero dim");
  expect_rejected([&] { posenc::add_sinusoidal({6}, v, p0); }, "dim mismatch");
  expect_rejected([&] { posenc::add_sinusoidal({8, 1.0}, v, p0); }, "base 1");
  expect_rejected([&] { posenc::add_sinusoidal({8, std::nan("")}, v, p0); }, "NaN base");
  expect_rejected([&] { posenc::add_sinusoidal({8, 10000.0, posenc::sinusoidal_layout::concat, -1}, v, p0); }, "padding_idx");
  expect_rejected([&] { posenc::add_sinusoidal({8, 10000.0, static_cast<posenc::sinusoidal_layout>(7)}, v, p0); }, "layout");
  expect_rejected([&] { posenc::add_sinusoidal({8}, v, posenc::positions::offset(-1)); }, "negative offset");
  expect_rejected([&] { posenc::add_sinusoidal({8}, v, posenc::positions::offset(std::numeric_limits<index_t>::max())); },
                  "offset overflow");
  const std::int64_t seq[] = {0, 1, 2};
  expect_rejected([&] { posenc::add_sinusoidal({8}, v, posenc::positions::per_sequence(seq, 3)); }, "per_sequence count");
  std::int64_t ids[6] = {0, 1, 2, 3, -4, 5};
  expect_rejected([&] { posenc::add_sinusoidal({8}, v, posenc::positions::per_token(ids, 2, 3)); }, "negative id");
  expect_rejected([&] { posenc::add_sinusoidal({8}, posenc::strided_view<float, 3>(x.data(), {2, 3, 8}, {24, 8, -1}), p0); },
                  "negative stride");
  // Out of place: the output overlaps the input without being it.
  expect_rejected([&] {
    posenc::add_sinusoidal({8},
                           posenc::strided_view<const float, 3>(x.data(), {1, 2, 8}), posenc::strided_view<float, 3>(x.data() + 4, {1, 2, 8}), p0);
  }, "overlap");
  expect_rejected([&] {
    posenc::add_sinusoidal({8},
                           posenc::strided_view<const float, 3>(x.data(), {1, 2, 8}), posenc::strided_view<float, 3>(x.data() + 16, {1, 1, 8}), p0);
  }, "shape mismatch");
  // Tables.
  expect_rejected([&] { posenc::sinusoidal_table({8}, posenc::strided_view<float, 2>(x.data(), {6, 8}), -2); }, "table offset");
  expect_rejected([&] { posenc::sinusoidal_table({9}, posenc::strided_view<float, 2>(x.data(), {6, 8})); }, "table odd dim");
  expect_rejected([&] { posenc::sinusoidal_table({8}, posenc::strided_view<float, 2>(x.data(), {6, 8}, {0, 1})); },
                  "table zero stride output");
  EXPECT_THROW(posenc::sinusoidal_frequencies({3}), posenc::argument_error);
}

// ------------------------------------------------------------------------------------------------ module

TEST(SinusoidalEmbedding, BufferAndEvalForward) {
  const posenc::sinusoidal_embedding<> pe({16}, 50);
  ASSERT_EQ(pe.table().extent(0), 50);
  ASSERT_EQ(pe.table().extent(1), 16);
  std::vector<float> t(50 * 16);
  posenc::sinusoidal_table({16}, posenc::strided_view<float, 2>(t.data(), {50, 16}));
  for (index_t i = 0; i < 50 * 16; ++i) ASSERT_EQ(pe.table().data()[i], t[static_cast<std::size_t>(i)]);

  Eigen::Tensor<float, 3, Eigen::RowMajor> x(2, 7, 16);
  x.setConstant(0.75f);
  pe.forward(x);  // eval: x + pe[:L]
  for (index_t n = 0; n < 2; ++n)
    for (index_t l = 0; l < 7; ++l)
      for (index_t d = 0; d < 16; ++d) ASSERT_EQ(x(n, l, d), 0.75f + t[static_cast<std::size_t>(l * 16 + d)]);

  // Eval mode with a generator draws nothing.
  std::mt19937_64 rng(5), ref(5);
  const posenc::sinusoidal_embedding<> drop({16}, 50, 0.5);
  Eigen::Tensor<float, 3, Eigen::RowMajor> y(2, 7, 16);
  y.setConstant(0.75f);
  drop.forward(y, false, rng);
  EXPECT_EQ(rng(), ref());
  for (index_t i = 0; i < x.size(); ++i) ASSERT_EQ(y.data()[i], x.data()[i]);

  // Decoding: positions past the buffer are rejected, the rest is x + pe[p].
  std::vector<double> z(16, 0.0);
  const posenc::sinusoidal_embedding<double> pd({16}, 50);
  pd.forward(posenc::strided_view<double, 2>(z.data(), {1, 16}), posenc::positions::offset(49));
  EXPECT_EQ(z[1], std::cos(49.0));
  EXPECT_THROW(pd.forward(posenc::strided_view<double, 2>(z.data(), {1, 16}), posenc::positions::offset(50)), posenc::argument_error);
  EXPECT_EQ(z[1], std::cos(49.0));
}

TEST(SinusoidalEmbedding, DropoutStatisticsAndReproducibility) {
  constexpr index_t n = 10, l = 100, d = 100;  // 10^5 elements
  constexpr double p = 0.1;
  const posenc::sinusoidal_embedding<> pe({d}, l, p);
  Eigen::Tensor<float, 3, Eigen::RowMajor> x(n, l, d), y(n, l, d), eval(n, l, d);
  x.setConstant(2.0f);  // x + pe >= 1: never zero unless dropped
  y = x;
  eval = x;
  pe.forward(eval);
  std::mt19937_64 rng(2024);
  pe.forward(y, true, rng);
  index_t zeros = 0;
  const float keep = static_cast<float>(1.0 / (1.0 - p));
  for (index_t i = 0; i < y.size(); ++i) {
    if (y.data()[i] == 0.0f) {
      ++zeros;
    } else {
      ASSERT_EQ(y.data()[i], eval.data()[i] * keep) << i;  // kept: scaled by 1/(1-p), rounded once
    }
  }
  const double count = static_cast<double>(y.size());
  const double sigma = std::sqrt(count * p * (1 - p));
  EXPECT_NEAR(static_cast<double>(zeros), count * p, 3 * sigma);
  RecordProperty("dropout_zero_fraction", sci(static_cast<double>(zeros) / count));

  // The same seed gives the same mask; another seed another one.
  Eigen::Tensor<float, 3, Eigen::RowMajor> y2 = x, y3 = x;
  std::mt19937_64 again(2024), other(2025);
  pe.forward(y2, true, again);
  pe.forward(y3, true, other);
  index_t same = 0, diff = 0;
  for (index_t i = 0; i < y.size(); ++i) {
    same += y.data()[i] == y2.data()[i];
    diff += y.data()[i] != y3.data()[i];
  }
  EXPECT_EQ(same, y.size());
  EXPECT_GT(diff, 0);

  // p = 1 drops everything; p = 0 in training mode is the identity on x + pe.
  const posenc::sinusoidal_embedding<> all({d}, l, 1.0);
  Eigen::Tensor<float, 3, Eigen::RowMajor> z = x;
  all.forward(z, true, rng);
  for (index_t i = 0; i < z.size(); ++i) ASSERT_EQ(z.data()[i], 0.0f);
  const posenc::sinusoidal_embedding<> none({d}, l, 0.0);
  z = x;
  none.forward(z, true, rng);
  for (index_t i = 0; i < z.size(); ++i) ASSERT_EQ(z.data()[i], eval.data()[i]);
}

TEST(SinusoidalEmbedding, NarrowDtypesAndRejects) {
  const posenc::sinusoidal_embedding<> pe({8}, 10);
  std::vector<Eigen::half> h(3 * 8, Eigen::half(0.5f));
  pe.forward(posenc::strided_view<Eigen::half, 2>(h.data(), {3, 8}));
  for (index_t l = 0; l < 3; ++l)
    for (index_t d = 0; d < 8; ++d)
      EXPECT_EQ(static_cast<float>(h[static_cast<std::size_t>(l * 8 + d)]),
                static_cast<float>(Eigen::half(0.5f + pe.table()(l, d))));
  // The seed's checks: odd dim (its "emb_dim must be even"), bad dropout, negative length.
  EXPECT_THROW(posenc::sinusoidal_embedding<>({7}, 10), posenc::argument_error);
  EXPECT_THROW(posenc::sinusoidal_embedding<>({8}, 10, 1.5), posenc::argument_error);
  EXPECT_THROW(posenc::sinusoidal_embedding<>({8}, 10, -0.1), posenc::argument_error);
  EXPECT_THROW(posenc::sinusoidal_embedding<>({8}, -1), posenc::argument_error);
  std::vector<float> x(5 * 6, 1.0f);
  EXPECT_THROW(pe.forward(posenc::strided_view<float, 2>(x.data(), {5, 6})), posenc::argument_error);  // D mismatch
  std::vector<float> y(11 * 8, 1.0f);
  EXPECT_THROW(pe.forward(posenc::strided_view<float, 2>(y.data(), {11, 8})), posenc::argument_error);  // L > max_len
  for (float v : y) ASSERT_EQ(v, 1.0f);
}

// ------------------------------------------------------------------------------------------ try_ forms

TEST(SinusoidalTry, Frequencies) {
  const posenc::sinusoidal_config bad{3};
  std::vector<double> w = {1.5, 2.5};
  const auto w0 = w;
  static_assert(noexcept(posenc::try_sinusoidal_frequencies(bad, w)), "try_ forms are noexcept");
  expect_rejection(posenc::try_sinusoidal_frequencies(bad, w), thrown_message([&] { posenc::sinusoidal_frequencies(bad); }),
                     "odd dim");
  EXPECT_EQ(posenc::try_sinusoidal_frequencies(bad, w).message(), "posenc::sinusoidal_frequencies: dim=3 must be even and > 0");
  EXPECT_TRUE(same_bits(w, w0));
  for (auto layout : {posenc::sinusoidal_layout::interleaved, posenc::sinusoidal_layout::concat}) {
    const posenc::sinusoidal_config cfg{64, 500.0, layout};
    expect_ok(posenc::try_sinusoidal_frequencies(cfg, w), "frequencies");
    EXPECT_TRUE(same_bits(w, posenc::sinusoidal_frequencies(cfg)));
  }
  // Capacity is reused: a shorter request after a longer one does not allocate.
  const double* p = w.data();
  expect_ok(posenc::try_sinusoidal_frequencies({8}, w), "shorter");
  EXPECT_EQ(w.data(), p);
  EXPECT_TRUE(same_bits(w, posenc::sinusoidal_frequencies({8})));
}

TEST(SinusoidalTry, Table) {
  std::vector<float> t(6 * 8, -7.0f);
  const auto t0 = t;
  const posenc::strided_view<float, 2> v(t.data(), {6, 8});
  static_assert(noexcept(posenc::try_sinusoidal_table(posenc::sinusoidal_config{8}, v)), "try_ forms are noexcept");
  struct bad_case {
    const char* what;
    posenc::strided_view<float, 2> out;
    posenc::sinusoidal_config cfg;
    index_t offset;
  };
  const bad_case bad[] = {
      {"negative offset", v, {8}, -2},
      {"odd dim", v, {9}, 0},
      {"dim mismatch", v, {6}, 0},
      {"base", v, {8, 0.5}, 0},
      {"zero stride output", posenc::strided_view<float, 2>(t.data(), {6, 8}, {0, 1}), {8}, 0},
      {"offset overflow", v, {8}, std::numeric_limits<index_t>::max() - 2},
  };
  for (const auto& b : bad) {
    expect_rejection(posenc::try_sinusoidal_table(b.cfg, b.out, b.offset),
                       thrown_message([&] { posenc::sinusoidal_table(b.cfg, b.out, b.offset); }), b.what);
    EXPECT_TRUE(same_bits(t, t0)) << b.what;
  }
  EXPECT_EQ(posenc::try_sinusoidal_table({8}, v, -2).message(), "posenc::sinusoidal_table: positions offset=-2 must be >= 0");
  // Accepted: the throwing form's bits, in both layouts, with padding, through an Eigen tensor too.
  for (auto layout : {posenc::sinusoidal_layout::interleaved, posenc::sinusoidal_layout::concat}) {
    const posenc::sinusoidal_config cfg{8, 10000.0, layout, 2};
    std::vector<float> ref(t.size(), -7.0f);
    posenc::sinusoidal_table(cfg, posenc::strided_view<float, 2>(ref.data(), {6, 8}), 1);
    expect_ok(posenc::try_sinusoidal_table(cfg, v, 1), "table");
    EXPECT_TRUE(same_bits(t, ref));
    Eigen::Tensor<double, 2, Eigen::RowMajor> e(6, 8), eref(6, 8);
    posenc::sinusoidal_table(cfg, eref, 100000);
    expect_ok(posenc::try_sinusoidal_table(cfg, e, 100000), "eigen table");
    EXPECT_EQ(std::memcmp(e.data(), eref.data(), sizeof(double) * 48), 0);
  }
  std::vector<float> none;
  expect_ok(posenc::try_sinusoidal_table({8}, posenc::strided_view<float, 2>(none.data(), {0, 8})), "empty table");
}

TEST(SinusoidalTry, AddInPlaceAndOutOfPlace) {
  std::vector<float> x(2 * 3 * 8);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.25f + 0.01f * static_cast<float>(i);
  const auto x0 = x;
  const posenc::strided_view<float, 3> v(x.data(), {2, 3, 8});
  const posenc::positions p0 = posenc::positions::offset(0);
  static_assert(noexcept(posenc::try_add_sinusoidal(posenc::sinusoidal_config{8}, v, p0)), "try_ forms are noexcept");
  std::int64_t ids[6] = {0, 1, 2, 3, -4, 5};
  const std::int64_t seq[] = {0, 1, 2};
  struct bad_case {
    const char* what;
    posenc::sinusoidal_config cfg;
    posenc::positions pos;
  };
  const bad_case bad[] = {
      {"odd dim", {7}, p0},
      {"dim mismatch", {6}, p0},
      {"base 1", {8, 1.0}, p0},
      {"padding_idx", {8, 10000.0, posenc::sinusoidal_layout::concat, -1}, p0},
      {"layout", {8, 10000.0, static_cast<posenc::sinusoidal_layout>(7)}, p0},
      {"negative offset", {8}, posenc::positions::offset(-1)},
      {"per_sequence count", {8}, posenc::positions::per_sequence(seq, 3)},
      {"negative id", {8}, posenc::positions::per_token(ids, 2, 3)},
  };
  for (const auto& b : bad) {
    expect_rejection(posenc::try_add_sinusoidal(b.cfg, v, b.pos), thrown_message([&] { posenc::add_sinusoidal(b.cfg, v, b.pos); }),
                       b.what);
    EXPECT_TRUE(same_bits(x, x0)) << b.what;
  }
  EXPECT_EQ(posenc::try_add_sinusoidal({7}, v, p0).message(), "posenc::add_sinusoidal: dim=7 must be even and > 0");
  EXPECT_EQ(posenc::try_add_sinusoidal({8}, v, posenc::positions::per_token(ids, 2, 3)).message(),
            "posenc::add_sinusoidal: position[1, 1]=-4 must be >= 0");

  // Out of place: the output is checked too, and stays untouched on an error.
  std::vector<float> y(x.size(), -3.0f);
  const auto y0 = y;
  const posenc::strided_view<const float, 3> in(x.data(), {2, 3, 8});
  const posenc::strided_view<float, 3> out(y.data(), {2, 3, 8});
  const posenc::strided_view<float, 3> short_out(y.data(), {2, 2, 8});
  const posenc::strided_view<float, 3> overlap(x.data() + 4, {1, 2, 8});
  expect_rejection(posenc::try_add_sinusoidal({8}, in, short_out, p0),
                     thrown_message([&] { posenc::add_sinusoidal({8}, in, short_out, p0); }), "shape mismatch");
  EXPECT_EQ(posenc::try_add_sinusoidal({8}, in, short_out, p0).message(),
            "posenc::add_sinusoidal: out shape (2, 2, 8) does not match in shape (2, 3, 8)");
  const posenc::strided_view<const float, 3> in12(x.data(), {1, 2, 8});
  expect_rejection(posenc::try_add_sinusoidal({8}, in12, overlap, p0),
                     thrown_message([&] { posenc::add_sinusoidal({8}, in12, overlap, p0); }), "overlap");
  expect_rejection(posenc::try_add_sinusoidal({6}, in, out, p0), thrown_message([&] { posenc::add_sinusoidal({6}, in, out, p0); }),
                     "out of place dim");
  EXPECT_TRUE(same_bits(y, y0));
  EXPECT_TRUE(same_bits(x, x0));

  // Accepted: the throwing form's bits, every position form.
  std::int64_t good_ids[6] = {4, 0, 9, 1, 1, 3};
  const std::int32_t offs[2] = {7, 100};
  const posenc::sinusoidal_config cfg{8, 10000.0, posenc::sinusoidal_layout::concat, 1};
  for (const auto& pos : {posenc::positions::offset(5), posenc::positions::per_sequence(offs, 2),
                          posenc::positions::per_token(good_ids, 2, 3)}) {
    std::vector<float> a = x0, b = x0;
    posenc::add_sinusoidal(cfg, posenc::strided_view<float, 3>(a.data(), {2, 3, 8}), pos);
    expect_ok(posenc::try_add_sinusoidal(cfg, posenc::strided_view<float, 3>(b.data(), {2, 3, 8}), pos), "in place");
    EXPECT_TRUE(same_bits(a, b));
    std::vector<float> o(x0.size(), -3.0f), oref(x0.size(), -3.0f);
    posenc::add_sinusoidal(cfg, in, posenc::strided_view<float, 3>(oref.data(), {2, 3, 8}), pos);
    expect_ok(posenc::try_add_sinusoidal(cfg, in, posenc::strided_view<float, 3>(o.data(), {2, 3, 8}), pos), "out of place");
    EXPECT_TRUE(same_bits(o, oref));
    EXPECT_TRUE(same_bits(o, a));
  }
  // Rank 2 Eigen tensor of a 16-bit type.
  Eigen::Tensor<Eigen::half, 2, Eigen::RowMajor> h(3, 8), href(3, 8);
  h.setConstant(Eigen::half(0.5f));
  href = h;
  posenc::add_sinusoidal({8}, href, posenc::positions::offset(40));
  expect_ok(posenc::try_add_sinusoidal({8}, h, posenc::positions::offset(40)), "eigen half");
  EXPECT_EQ(std::memcmp(h.data(), href.data(), sizeof(Eigen::half) * 24), 0);
}

TEST(SinusoidalTry, MakePaddedPositions) {
  const std::int64_t tok[4] = {1, 1, 7, 9};
  const std::int32_t tok32[4] = {1, 1, 7, 9};
  std::int64_t out[4] = {-5, -5, -5, -5};
  static_assert(noexcept(posenc::try_make_padded_positions(tok, 1, 4, 1, out)), "try_ forms are noexcept");
  struct bad_case {
    const char* what;
    const std::int64_t* tokens;
    index_t batch, length, padding_idx, past;
  };
  const bad_case bad[] = {
      {"negative batch", tok, -1, 4, 1, 0},
      {"negative padding_idx", tok, 1, 4, -1, 0},
      {"negative past_length", tok, 1, 4, 1, -3},
      {"null tokens", nullptr, 1, 4, 1, 0},
      {"overflow", tok, 1, 4, std::numeric_limits<index_t>::max() - 1, 0},
  };
  for (const auto& b : bad) {
    expect_rejection(posenc::try_make_padded_positions(b.tokens, b.batch, b.length, b.padding_idx, out, b.past),
                       thrown_message([&] { posenc::make_padded_positions(b.tokens, b.batch, b.length, b.padding_idx, out, b.past); }),
                       b.what);
    for (std::int64_t o : out) EXPECT_EQ(o, -5) << b.what;
  }
  expect_rejection(posenc::try_make_padded_positions(tok32, 1, 4, 1, nullptr),
                     thrown_message([&] { posenc::make_padded_positions(tok32, 1, 4, 1, nullptr); }), "null out (int32)");
  EXPECT_EQ(posenc::try_make_padded_positions(tok, 1, 4, 1, out, -3).message(),
            "posenc::make_padded_positions: past_length=-3 must be >= 0");
  std::int64_t ref[4], ref32[4], out32[4];
  posenc::make_padded_positions(tok, 1, 4, 1, ref, 2);
  posenc::make_padded_positions(tok32, 1, 4, 1, ref32, 2);
  expect_ok(posenc::try_make_padded_positions(tok, 1, 4, 1, out, 2), "int64");
  expect_ok(posenc::try_make_padded_positions(tok32, 1, 4, 1, out32, 2), "int32");
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(out[i], ref[i]);
    EXPECT_EQ(out32[i], ref32[i]);
  }
  EXPECT_EQ(out[3], 5);  // 1 + 2 + 2
}

TEST(SinusoidalTry, EmbeddingCreate) {
  posenc::sinusoidal_embedding<> pe({4}, 3);
  const std::vector<float> t0(pe.table().data(), pe.table().data() + 12);
  static_assert(noexcept(posenc::sinusoidal_embedding<>::try_create({8}, 10, 0.5, pe)), "try_ forms are noexcept");
  struct bad_case {
    const char* what;
    posenc::sinusoidal_config cfg;
    index_t max_len;
    double dropout;
  };
  const bad_case bad[] = {
      {"odd dim", {7}, 10, 0.0},
      {"dropout above 1", {8}, 10, 1.5},
      {"dropout NaN", {8}, 10, std::nan("")},
      {"negative max_len", {8}, -1, 0.0},
      {"size overflows", {8}, std::numeric_limits<index_t>::max() / 2, 0.0},
  };
  for (const auto& b : bad) {
    expect_rejection(posenc::sinusoidal_embedding<>::try_create(b.cfg, b.max_len, b.dropout, pe),
                       thrown_message([&] { posenc::sinusoidal_embedding<>(b.cfg, b.max_len, b.dropout); }), b.what);
    ASSERT_EQ(pe.max_len(), 3) << b.what;  // unchanged
    ASSERT_EQ(pe.config().dim, 4) << b.what;
    EXPECT_EQ(pe.dropout(), 0.0) << b.what;
    EXPECT_TRUE(same_bits(std::vector<float>(pe.table().data(), pe.table().data() + 12), t0)) << b.what;
  }
  expect_rejection(posenc::sinusoidal_embedding<>::try_create({8}, -1, pe),
                     thrown_message([&] { posenc::sinusoidal_embedding<>({8}, -1); }), "no dropout overload");
  EXPECT_EQ(posenc::sinusoidal_embedding<>::try_create({8}, 10, 1.5, pe).message(),
            "posenc::sinusoidal_embedding: dropout=1.5 must be in [0, 1]");

  // Accepted: the constructor's module.
  const posenc::sinusoidal_config cfg{16, 10000.0, posenc::sinusoidal_layout::concat, 0};
  const posenc::sinusoidal_embedding<double> ref(cfg, 50, 0.25);
  posenc::sinusoidal_embedding<double> e;
  EXPECT_EQ(e.max_len(), 0);
  expect_ok(posenc::sinusoidal_embedding<double>::try_create(cfg, 50, 0.25, e), "create");
  EXPECT_EQ(e.max_len(), 50);
  EXPECT_EQ(e.dropout(), 0.25);
  EXPECT_EQ(e.config().dim, 16);
  EXPECT_EQ(e.config().layout, posenc::sinusoidal_layout::concat);
  EXPECT_EQ(std::memcmp(e.table().data(), ref.table().data(), sizeof(double) * 50 * 16), 0);
  expect_ok(posenc::sinusoidal_embedding<>::try_create({4}, 0, pe), "empty table");
  EXPECT_EQ(pe.max_len(), 0);
}

TEST(SinusoidalTry, EmbeddingForward) {
  const posenc::sinusoidal_embedding<> pe({8}, 10, 0.5);
  std::vector<float> x(2 * 3 * 8);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 1.0f + 0.01f * static_cast<float>(i);
  const auto x0 = x;
  const posenc::strided_view<float, 3> v(x.data(), {2, 3, 8});
  std::mt19937_64 rng(11);
  static_assert(noexcept(pe.try_forward(v)), "try_ forms are noexcept");
  static_assert(noexcept(pe.try_forward(v, true, rng)), "try_ forms are noexcept");
  const posenc::strided_view<float, 3> wrong_dim(x.data(), {2, 4, 6});
  const posenc::positions past = posenc::positions::offset(8);  // 8 + 2 >= 10
  expect_rejection(pe.try_forward(wrong_dim), thrown_message([&] { pe.forward(wrong_dim); }), "D mismatch");
  expect_rejection(pe.try_forward(v, past), thrown_message([&] { pe.forward(v, past); }), "past max_len");
  EXPECT_EQ(pe.try_forward(v, past).message(), "posenc::sinusoidal_embedding::forward: position 10 is past the table of max_len=10");
  expect_rejection(pe.try_forward(v, true, rng, past), thrown_message([&] { pe.forward(v, true, rng, past); }), "train past");
  expect_rejection(pe.try_forward(v, true, rng, posenc::positions::offset(-1)),
                     thrown_message([&] { pe.forward(v, true, rng, posenc::positions::offset(-1)); }), "train negative");
  EXPECT_TRUE(same_bits(x, x0));
  std::mt19937_64 fresh(11);
  EXPECT_EQ(rng, fresh);  // no draws on a rejected call

  // Accepted: bits and generator state of the throwing form, eval and training.
  std::vector<float> a = x0;
  pe.forward(posenc::strided_view<float, 3>(a.data(), {2, 3, 8}), posenc::positions::offset(2));
  expect_ok(pe.try_forward(v, posenc::positions::offset(2)), "eval");
  EXPECT_TRUE(same_bits(x, a));
  std::mt19937_64 r1(99), r2(99);
  a = x0;
  x = x0;
  pe.forward(posenc::strided_view<float, 3>(a.data(), {2, 3, 8}), true, r1, posenc::positions::offset(1));
  expect_ok(pe.try_forward(v, true, r2, posenc::positions::offset(1)), "train");
  EXPECT_TRUE(same_bits(x, a));
  EXPECT_EQ(r1, r2);
  a = x0;
  x = x0;
  pe.forward(posenc::strided_view<float, 3>(a.data(), {2, 3, 8}), false, r1);
  expect_ok(pe.try_forward(v, false, r2), "eval with generator");
  EXPECT_TRUE(same_bits(x, a));
  EXPECT_EQ(r1, r2);
  // An empty module accepts only empty inputs.
  const posenc::sinusoidal_embedding<> empty;
  expect_ok(empty.try_forward(posenc::strided_view<float, 3>(x.data(), {2, 0, 0})), "empty x");
  EXPECT_FALSE(empty.try_forward(v).ok());
}

}  // namespace
