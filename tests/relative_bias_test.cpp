// T5 relative-position buckets against tests/golden/t5.txt (gen_tables.py: the reference's float32
// arithmetic emulated with numpy.float32), around every bucket boundary; the bias module's forward in every
// dtype and its backward (counts x gradient into the right rows); rejected inputs leave outputs unchanged.
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <posenc/relative_bias.hpp>

#include "test_util.hpp"

namespace {

using posenc::index_t;
using namespace posenc_test;

const std::vector<golden_case>& golden() {
  static const std::vector<golden_case> cases = load_golden("t5.txt");
  return cases;
}

posenc::t5_bucket_config config_of(const golden_case& c) {
  return {c.integer("bidirectional") != 0, c.integer("num_buckets"), c.integer("max_distance")};
}

TEST(T5Golden, BucketsAtEveryBoundary) {
  int cases = 0;
  for (const auto& c : golden()) {
    if (!c.has("relative")) continue;
    ++cases;
    const auto cfg = config_of(c);
    const auto& rel = c.array("relative").ivalues;
    const auto& want = c.array("bucket").ivalues;
    ASSERT_EQ(rel.size(), want.size());
    for (std::size_t i = 0; i < rel.size(); ++i)
      EXPECT_EQ(posenc::t5_relative_bucket(rel[i], cfg.bidirectional, cfg.num_buckets, cfg.max_distance), want[i])
          << c.name << " relative position " << rel[i];
  }
  EXPECT_EQ(cases, 8);
}

TEST(T5Golden, BucketTables) {
  int cases = 0;
  for (const auto& c : golden()) {
    if (!c.has("buckets")) continue;
    ++cases;
    const auto cfg = config_of(c);
    const index_t lq = c.integer("query_len"), lk = c.integer("key_len"), off = c.integer("query_offset");
    const auto& want = c.array("buckets").ivalues;
    std::vector<std::int64_t> b(static_cast<std::size_t>(lq * lk), -1);
    posenc::t5_bucket_table(posenc::strided_view<std::int64_t, 2>(b.data(), {lq, lk}), cfg, off);
    EXPECT_EQ(b, want) << c.name;
    Eigen::Tensor<std::int32_t, 2, Eigen::RowMajor> b32(lq, lk);
    posenc::t5_bucket_table(b32, cfg, off);
    for (std::size_t i = 0; i < want.size(); ++i) ASSERT_EQ(b32.data()[i], want[i]) << c.name << " int32 " << i;
  }
  EXPECT_EQ(cases, 6);
}

// The boundaries the issue names, for 16 buckets per direction (e = 8) and max_distance 128: exact values
// log(n/8)/log(16)*8 = 2, 4, 6 at n = 16, 32, 64 land on their bucket in float32.
TEST(T5Buckets, NamedBoundaries) {
  const std::map<std::int64_t, std::int64_t> want{{8, 8},    {12, 9},   {16, 10},  {31, 11},  {32, 12},
                                                  {64, 14},  {127, 15}, {128, 15}, {1000, 15}};
  for (const auto& [n, b] : want) {
    EXPECT_EQ(posenc::t5_relative_bucket(-n, false, 16, 128), b) << "causal n=" << n;
    EXPECT_EQ(posenc::t5_relative_bucket(-n, true, 32, 128), b) << "bidirectional past n=" << n;
    EXPECT_EQ(posenc::t5_relative_bucket(n, true, 32, 128), 16 + b) << "bidirectional future n=" << n;
  }
  EXPECT_EQ(posenc::t5_relative_bucket(5, false), 0);  // causal: the future shares bucket 0
  EXPECT_EQ(posenc::t5_relative_bucket(0, true), 0);
  // Extremes: |INT64_MIN| does not overflow.
  EXPECT_EQ(posenc::t5_relative_bucket(std::numeric_limits<std::int64_t>::min(), true), 15);
  EXPECT_EQ(posenc::t5_relative_bucket(std::numeric_limits<std::int64_t>::min(), false), 31);
  EXPECT_EQ(posenc::t5_relative_bucket(std::numeric_limits<std::int64_t>::max(), true), 31);
}

// Cross-check with the platform's float32 logf (glibc), the way PyTorch's scalar path computes it.
std::int64_t bucket_with_logf(std::int64_t r, bool bidir, std::int64_t num_buckets, std::int64_t max_distance) {
  std::int64_t ret = 0, nb = num_buckets, n = 0;
  if (bidir) {
    nb /= 2;
    if (r > 0) ret += nb;
    n = r < 0 ? -r : r;
  } else {
    n = r < 0 ? -r : 0;
  }
  const std::int64_t e = nb / 2;
  if (n < e) return ret + n;
  const float q = static_cast<float>(n) / static_cast<float>(e);
  const float v = std::log(q) / static_cast<float>(std::log(static_cast<double>(max_distance) / static_cast<double>(e))) *
                  static_cast<float>(nb - e);
  const std::int64_t b = e + static_cast<std::int64_t>(v);
  return ret + (b < nb - 1 ? b : nb - 1);
}

TEST(T5Buckets, AgreesWithPlatformLogf) {
  const std::int64_t configs[][2] = {{32, 128}, {16, 64}, {64, 256}, {12, 50}, {8, 20}, {128, 1024}, {33, 100}};
  for (const auto& cfg : configs)
    for (bool bidir : {true, false})
      for (std::int64_t r = -3000; r <= 3000; ++r)
        ASSERT_EQ(posenc::t5_relative_bucket(r, bidir, cfg[0], cfg[1]), bucket_with_logf(r, bidir, cfg[0], cfg[1]))
            << "num_buckets " << cfg[0] << " max_distance " << cfg[1] << " bidirectional " << bidir << " r " << r;
}

// ------------------------------------------------------------------------------------------------- module

template <class T>
void check_forward(const posenc::t5_relative_bias<float>& rel, index_t lq, index_t lk, index_t off) {
  const index_t h = rel.num_heads();
  std::vector<T> bias(static_cast<std::size_t>(h * lq * lk), T(-9));
  rel.forward(posenc::strided_view<T, 3>(bias.data(), {h, lq, lk}), off);
  const auto& cfg = rel.config();
  for (index_t a = 0; a < h; ++a)
    for (index_t i = 0; i < lq; ++i)
      for (index_t j = 0; j < lk; ++j) {
        const auto b = posenc::t5_relative_bucket(j - (i + off), cfg.bidirectional, cfg.num_buckets, cfg.max_distance);
        const T want = static_cast<T>(rel.table()(b, a));
        ASSERT_EQ(as_double(bias[static_cast<std::size_t>((a * lq + i) * lk + j)]), as_double(want))
            << dtype_info<T>::name << " head " << a << " (" << i << ", " << j << ")";
      }
}

class T5Forward : public IsaOnlyTest {};

TEST_P(T5Forward, EveryDtype) {
  for (bool bidir : {true, false}) {
    posenc::t5_relative_bias<> rel(4, {bidir, 32, 128});
    rel.init_normal(11, 0.5);
    for (index_t off : {index_t{0}, index_t{37}, index_t{300}}) {
      check_forward<float>(rel, 5, 180, off);
      check_forward<double>(rel, 5, 180, off);
      check_forward<Eigen::half>(rel, 5, 180, off);
      check_forward<Eigen::bfloat16>(rel, 5, 180, off);
    }
  }
  // An Eigen tensor and the golden table: bias[h] = table[buckets, h].
  const golden_case& c = find_case(golden(), "table_causal_32_128_offset");
  posenc::t5_relative_bias<double> rel(3, config_of(c));
  rel.init_normal(5);
  const index_t lq = c.integer("query_len"), lk = c.integer("key_len");
  Eigen::Tensor<double, 3, Eigen::RowMajor> bias(3, lq, lk);
  rel.forward(bias, c.integer("query_offset"));
  const auto& want = c.array("buckets").ivalues;
  for (index_t a = 0; a < 3; ++a)
    for (index_t i = 0; i < lq; ++i)
      for (index_t j = 0; j < lk; ++j)
        ASSERT_EQ(bias(a, i, j), rel.table()(want[static_cast<std::size_t>(i * lk + j)], a));
}
INSTANTIATE_TEST_SUITE_P(Isa, T5Forward, ::testing::ValuesIn(all_isas()), isa_only_name);

TEST(T5RelativeBias, BackwardAccumulatesCountsTimesGradient) {
  const index_t h = 3, lq = 7, lk = 150, off = 20;
  posenc::t5_relative_bias<> rel(h, {true, 32, 128});
  // A gradient constant per head, g_h = h + 0.5: each table entry gets count(bucket) * g_h.
  std::vector<float> g(static_cast<std::size_t>(h * lq * lk));
  for (index_t a = 0; a < h; ++a)
    for (index_t k = 0; k < lq * lk; ++k) g[static_cast<std::size_t>(a * lq * lk + k)] = static_cast<float>(a) + 0.5f;
  rel.backward(posenc::strided_view<const float, 3>(g.data(), {h, lq, lk}), off);
  std::vector<double> count(32, 0.0);
  for (index_t i = 0; i < lq; ++i)
    for (index_t j = 0; j < lk; ++j) count[static_cast<std::size_t>(posenc::t5_relative_bucket(j - (i + off), true))] += 1;
  for (index_t b = 0; b < 32; ++b)
    for (index_t a = 0; a < h; ++a)
      EXPECT_EQ(rel.table_grad()(b, a), count[static_cast<std::size_t>(b)] * (static_cast<double>(a) + 0.5)) << b << " " << a;
  // Accumulates across calls until zero_grad.
  rel.backward(posenc::strided_view<const float, 3>(g.data(), {h, lq, lk}), off);
  EXPECT_EQ(rel.table_grad()(0, 2), 2 * count[0] * 2.5);
  rel.zero_grad();
  for (index_t k = 0; k < 32 * h; ++k) ASSERT_EQ(rel.table_grad().data()[k], 0.0f);

  // Random gradients against a sum in double; the gradient of sum(g * bias) is what forward implies.
  std::mt19937_64 gen(9);
  std::vector<double> gd(static_cast<std::size_t>(h * lq * lk));
  for (auto& v : gd) v = posenc::detail::math::uniform01(gen) - 0.5;
  posenc::t5_relative_bias<double> reld(h, {false, 16, 64});
  reld.backward(posenc::strided_view<const double, 3>(gd.data(), {h, lq, lk}), off);
  std::vector<double> want(static_cast<std::size_t>(16 * h), 0.0);
  for (index_t a = 0; a < h; ++a)
    for (index_t i = 0; i < lq; ++i)
      for (index_t j = 0; j < lk; ++j)
        want[static_cast<std::size_t>(posenc::t5_relative_bucket(j - (i + off), false, 16, 64) * h + a)] +=
            gd[static_cast<std::size_t>((a * lq + i) * lk + j)];
  for (index_t k = 0; k < 16 * h; ++k) EXPECT_NEAR(reld.table_grad().data()[k], want[static_cast<std::size_t>(k)], 1e-12);
}

TEST(T5RelativeBias, InitIsDeterministic) {
  posenc::t5_relative_bias<> a(8), b(8), c(8);
  a.init_normal(123, 0.1);
  b.init_normal(123, 0.1);
  c.init_normal(124, 0.1);
  int differ = 0;
  for (index_t k = 0; k < 32 * 8; ++k) {
    ASSERT_EQ(a.table().data()[k], b.table().data()[k]);
    differ += a.table().data()[k] != c.table().data()[k];
  }
  EXPECT_GT(differ, 200);
}

TEST(T5, RejectsBadInputWritingNothing) {
  EXPECT_THROW(posenc::t5_relative_bucket(1, true, 3, 128), posenc::argument_error);   // 1 bucket per direction
  EXPECT_THROW(posenc::t5_relative_bucket(1, false, 1, 128), posenc::argument_error);
  EXPECT_THROW(posenc::t5_relative_bucket(1, true, 32, 8), posenc::argument_error);    // max_distance <= e
  EXPECT_THROW(posenc::t5_relative_bucket(1, true, -32, 128), posenc::argument_error);
  EXPECT_NO_THROW(posenc::t5_relative_bucket(1, true, 32, 9));
  EXPECT_NO_THROW(posenc::t5_relative_bucket(1, true, 4, 2));

  std::vector<std::int64_t> b(12, -3);
  const std::vector<std::int64_t> b0 = b;
  const posenc::strided_view<std::int64_t, 2> vb(b.data(), {3, 4});
  EXPECT_THROW(posenc::t5_bucket_table(vb, {true, 32, 128}, -1), posenc::argument_error);
  EXPECT_THROW(posenc::t5_bucket_table(vb, {true, 2, 128}), posenc::argument_error);
  EXPECT_THROW(posenc::t5_bucket_table(vb, {true, 32, 128}, std::numeric_limits<index_t>::max() - 1), posenc::argument_error);
  EXPECT_THROW(posenc::t5_bucket_table(posenc::strided_view<std::int64_t, 2>(b.data(), {3, 4}, {0, 1}), {}), posenc::argument_error);
  EXPECT_EQ(b, b0);

  EXPECT_THROW(posenc::t5_relative_bias<>(0), posenc::argument_error);
  EXPECT_THROW(posenc::t5_relative_bias<>(2, {false, 1, 128}), posenc::argument_error);
  posenc::t5_relative_bias<> rel(2);
  rel.init_normal(1);
  std::vector<float> bias(3 * 4 * 5, 7.0f);
  const std::vector<float> bias0 = bias;
  EXPECT_THROW(rel.forward(posenc::strided_view<float, 3>(bias.data(), {3, 4, 5})), posenc::argument_error);  // heads
  EXPECT_THROW(rel.forward(posenc::strided_view<float, 3>(bias.data(), {2, 4, 5}), -2), posenc::argument_error);
  EXPECT_EQ(bias, bias0);
  EXPECT_THROW(rel.backward(posenc::strided_view<const float, 3>(bias.data(), {3, 4, 5})), posenc::argument_error);
  EXPECT_THROW(rel.backward(posenc::strided_view<const float, 3>(bias.data(), {2, 4, 5}), -1), posenc::argument_error);
  for (index_t k = 0; k < 64; ++k) ASSERT_EQ(rel.table_grad().data()[k], 0.0f);
  EXPECT_THROW(rel.init_normal(1, -1.0), posenc::argument_error);
}

}  // namespace
