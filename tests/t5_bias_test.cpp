// T5 relative-position buckets against tests/golden/t5.txt (gen_tables.py: the reference's float32
// arithmetic emulated with numpy.float32), around every bucket boundary; the bias module's forward in every
// dtype and its backward (counts x gradient into the right rows); add_t5_bias into strided scores with
// per-sequence query offsets against a reference written here from Hugging Face's formula; rejected inputs
// leave outputs unchanged; the try_ forms report what the throwing forms throw.
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>
#include <posenc/error.hpp>
#include <posenc/t5_bias.hpp>

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

// ------------------------------------------------------------------------------------------ add_t5_bias

/// Scores uniform in [-4, 4), rounded to T.
template <class T>
std::vector<T> random_scores(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-4.0, 4.0);
  std::vector<T> v(n);
  for (T& x : v) x = T(static_cast<float>(u(gen)));
  if constexpr (std::is_same_v<T, double>)
    for (T& x : v) x = u(gen);
  return v;
}

/// old + table value in float (double if either is double), rounded to T once (16-bit types from float,
/// round to nearest even: Eigen's conversions).
template <class T, class C>
T added_in_acc(T old, C value) {
  using A = std::conditional_t<std::is_same_v<T, double> || std::is_same_v<C, double>, double, float>;
  const A sum = static_cast<A>(as_double(old)) + static_cast<A>(value);
  if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>) {
    return static_cast<T>(sum);
  } else {
    return T(static_cast<float>(sum));
  }
}

/// One add_t5_bias call on a buffer of `size` elements viewed as [N, H, Lq, Lk] with strides `st`, against
/// the reference: scores[n, h, i, j] += table[bucket(j - q(n, i)), h], the bucket from bucket_with_logf (Hugging
/// Face `_relative_position_bucket`, relative_position = memory_position - context_position). Every element
/// of the buffer is compared bit for bit: the viewed ones changed by the bias, the others untouched.
template <class T, class C, class Q>
void check_add(const posenc::t5_relative_bias<C>& rel, std::array<index_t, 4> ext, std::array<index_t, 4> st,
               std::size_t size, const Q& q_of, const posenc::positions& pos, unsigned seed, const std::string& what) {
  std::vector<T> buf = random_scores<T>(size, seed);
  std::vector<T> want = buf;
  const auto& cfg = rel.config();
  for (index_t n = 0; n < ext[0]; ++n)
    for (index_t h = 0; h < ext[1]; ++h)
      for (index_t i = 0; i < ext[2]; ++i)
        for (index_t j = 0; j < ext[3]; ++j) {
          const std::size_t at = static_cast<std::size_t>(n * st[0] + h * st[1] + i * st[2] + j * st[3]);
          const std::int64_t b = bucket_with_logf(j - q_of(n, i), cfg.bidirectional, cfg.num_buckets, cfg.max_distance);
          want[at] = added_in_acc(want[at], rel.table()(b, h));
        }
  posenc::add_t5_bias(rel, posenc::strided_view<T, 4>(buf.data(), ext, st), pos);
  for (std::size_t k = 0; k < size; ++k)
    ASSERT_TRUE(same_bits(buf[k], want[k])) << what << " " << dtype_info<T>::name << " element " << k << ": got "
                                            << as_double(buf[k]) << ", want " << as_double(want[k]);
}

template <class C, class Q>
void check_add_all_dtypes(const posenc::t5_relative_bias<C>& rel, std::array<index_t, 4> ext,
                          std::array<index_t, 4> st, std::size_t size, const Q& q_of, const posenc::positions& pos,
                          const std::string& what) {
  check_add<float>(rel, ext, st, size, q_of, pos, 1, what);
  check_add<double>(rel, ext, st, size, q_of, pos, 2, what);
  check_add<Eigen::half>(rel, ext, st, size, q_of, pos, 3, what);
  check_add<Eigen::bfloat16>(rel, ext, st, size, q_of, pos, 4, what);
}

std::array<index_t, 4> contiguous(std::array<index_t, 4> e) { return {e[1] * e[2] * e[3], e[2] * e[3], e[3], 1}; }

std::string config_name(const posenc::t5_bucket_config& cfg) {
  return std::string(cfg.bidirectional ? "bidirectional " : "causal ") + std::to_string(cfg.num_buckets) + "/" +
         std::to_string(cfg.max_distance);
}

class T5AddBias : public IsaOnlyTest {};

// Continuous batching: row n's queries sit at offsets[n] + i; as per_sequence (int64 and int32), as per_token
// ids, and each row alone with an offset; float and double tables.
TEST_P(T5AddBias, PerSequenceOffsets) {
  constexpr index_t n = 3, h = 4, lq = 5, lk = 180;
  const std::int64_t offsets[n] = {0, 37, 300};
  const std::int32_t offsets32[n] = {0, 37, 300};
  std::vector<std::int64_t> ids;
  for (index_t a = 0; a < n; ++a)
    for (index_t i = 0; i < lq; ++i) ids.push_back(offsets[a] + i);
  const auto q_of = [&](index_t a, index_t i) { return offsets[a] + i; };
  const std::array<index_t, 4> ext{n, h, lq, lk};
  const std::size_t size = static_cast<std::size_t>(n * h * lq * lk);
  for (const posenc::t5_bucket_config cfg : {posenc::t5_bucket_config{true, 32, 128}, posenc::t5_bucket_config{false, 32, 128},
                                             posenc::t5_bucket_config{true, 12, 50}, posenc::t5_bucket_config{false, 8, 20}}) {
    posenc::t5_relative_bias<float> rel(h, cfg);
    rel.init_normal(21, 0.7);
    posenc::t5_relative_bias<double> reld(h, cfg);
    reld.init_normal(22, 0.7);
    const std::string what = config_name(cfg);
    check_add_all_dtypes(rel, ext, contiguous(ext), size, q_of, posenc::positions::per_sequence(offsets, n), what + " int64");
    check_add_all_dtypes(rel, ext, contiguous(ext), size, q_of, posenc::positions::per_sequence(offsets32, n), what + " int32");
    check_add_all_dtypes(rel, ext, contiguous(ext), size, q_of, posenc::positions::per_token(ids.data(), n, lq), what + " ids");
    check_add_all_dtypes(reld, ext, contiguous(ext), size, q_of, posenc::positions::per_sequence(offsets, n),
                         what + " double table");
    // Row a alone, at offset(offsets[a]): the same bits as the batched call.
    const std::vector<float> init = random_scores<float>(size, 9);
    std::vector<float> batched = init, alone = init;
    posenc::add_t5_bias(rel, posenc::strided_view<float, 4>(batched.data(), ext), posenc::positions::per_sequence(offsets, n));
    for (index_t a = 0; a < n; ++a)
      posenc::add_t5_bias(rel, posenc::strided_view<float, 4>(alone.data() + a * h * lq * lk, {1, h, lq, lk}),
                          posenc::positions::offset(offsets[a]));
    for (std::size_t k = 0; k < size; ++k) ASSERT_TRUE(same_bits(batched[k], alone[k])) << what << " element " << k;
  }
}

// Decode: Lq = 1 new query per sequence after its cached keys (HF cache_position = past); the key axis is
// the longest cache, so shorter rows see keys after their query (bidirectional: future buckets). A decode row
// equals row t of the prefill bias that forward writes.
TEST_P(T5AddBias, DecodeStep) {
  constexpr index_t n = 4, h = 3, lk = 300;
  const std::int64_t past[n] = {0, 17, 129, 299};
  const auto q_of = [&](index_t a, index_t) { return past[a]; };
  const std::array<index_t, 4> ext{n, h, 1, lk};
  for (bool bidir : {true, false}) {
    posenc::t5_relative_bias<float> rel(h, {bidir, 32, 128});
    rel.init_normal(5, 1.0);
    check_add_all_dtypes(rel, ext, contiguous(ext), static_cast<std::size_t>(n * h * lk), q_of,
                         posenc::positions::per_sequence(past, n), bidir ? "decode bidirectional" : "decode causal");
    constexpr index_t len = 40;
    std::vector<float> full(static_cast<std::size_t>(h * len * len));
    rel.forward(posenc::strided_view<float, 3>(full.data(), {h, len, len}));
    for (index_t t = 0; t < len; ++t) {
      std::vector<float> row(static_cast<std::size_t>(h * len), 0.0f);
      posenc::add_t5_bias(rel, posenc::strided_view<float, 4>(row.data(), {1, h, 1, len}), posenc::positions::offset(t));
      for (index_t b = 0; b < h; ++b)
        for (index_t j = 0; j < len; ++j)
          ASSERT_EQ(row[static_cast<std::size_t>(b * len + j)], full[static_cast<std::size_t>((b * len + t) * len + j)])
              << "head " << b << " t " << t << " j " << j;
    }
  }
}

// Scores [N, H, Lq, Lk] laid out as [N, Lq, H, Lk_padded] (heads and queries swapped, rows padded), and a
// view with a key stride of 2 (every other element): only the viewed elements change.
TEST_P(T5AddBias, StridedScores) {
  constexpr index_t n = 2, h = 3, lq = 4, lk = 150, pad = 157;
  const std::int64_t offsets[n] = {3, 200};
  const auto q_of = [&](index_t a, index_t i) { return offsets[a] + i; };
  const std::array<index_t, 4> ext{n, h, lq, lk};
  for (bool bidir : {true, false}) {
    posenc::t5_relative_bias<float> rel(h, {bidir, 32, 128});
    rel.init_normal(8, 1.0);
    check_add_all_dtypes(rel, ext, {lq * h * pad, pad, h * pad, 1}, static_cast<std::size_t>(n * lq * h * pad), q_of,
                         posenc::positions::per_sequence(offsets, n), "padded rows");
    check_add_all_dtypes(rel, ext, {h * lq * 2 * lk, lq * 2 * lk, 2 * lk, 2}, static_cast<std::size_t>(n * h * lq * 2 * lk),
                         q_of, posenc::positions::per_sequence(offsets, n), "key stride 2");
  }
}

// Positions far out (a long cache): every key is beyond max_distance, so the last bucket of its direction;
// the largest offset whose queries fit int64.
TEST_P(T5AddBias, FarOffsets) {
  constexpr index_t h = 2, lq = 3, lk = 70;
  for (const index_t off : {index_t{1} << 40, std::numeric_limits<index_t>::max() - (lq - 1)}) {
    const auto q_of = [&](index_t, index_t i) { return off + i; };
    for (bool bidir : {true, false}) {
      posenc::t5_relative_bias<double> rel(h, {bidir, 32, 128});
      rel.init_normal(3, 1.0);
      const std::array<index_t, 4> ext{1, h, lq, lk};
      check_add_all_dtypes(rel, ext, contiguous(ext), static_cast<std::size_t>(h * lq * lk), q_of,
                           posenc::positions::offset(off), "far offset " + std::to_string(off));
      // forward runs the same kernel: key 0 of a query at INT64_MAX (distance INT64_MAX) is in the last bucket.
      std::vector<double> bias(static_cast<std::size_t>(h * lq * lk));
      rel.forward(posenc::strided_view<double, 3>(bias.data(), {h, lq, lk}), off);
      for (index_t a = 0; a < h; ++a)
        for (index_t i = 0; i < lq; ++i)
          for (index_t j = 0; j < lk; ++j)
            ASSERT_EQ(bias[static_cast<std::size_t>((a * lq + i) * lk + j)], rel.table()(bidir ? 15 : 31, a))
                << "forward offset " << off << " (" << a << ", " << i << ", " << j << ")";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, T5AddBias, ::testing::ValuesIn(all_isas()), isa_only_name);

// [H, Lq, Lk] scores (N = 1) and Eigen tensors: scores + the bias forward writes.
TEST(T5AddBiasViews, RankThreeAndEigenTensors) {
  constexpr index_t h = 4, lq = 6, lk = 50, off = 20;
  posenc::t5_relative_bias<float> rel(h, {false, 32, 128});
  rel.init_normal(17, 1.0);
  std::vector<float> bias(static_cast<std::size_t>(h * lq * lk));
  rel.forward(posenc::strided_view<float, 3>(bias.data(), {h, lq, lk}), off);
  const std::vector<float> init = random_scores<float>(bias.size(), 4);
  std::vector<float> r3 = init;
  posenc::add_t5_bias(rel, posenc::strided_view<float, 3>(r3.data(), {h, lq, lk}), posenc::positions::offset(off));
  Eigen::Tensor<float, 4, Eigen::RowMajor> e4(1, h, lq, lk);
  std::memcpy(e4.data(), init.data(), init.size() * sizeof(float));
  posenc::add_t5_bias(rel, e4, posenc::positions::offset(off));
  Eigen::Tensor<float, 3, Eigen::RowMajor> e3(h, lq, lk);
  std::memcpy(e3.data(), init.data(), init.size() * sizeof(float));
  Eigen::TensorMap<Eigen::Tensor<float, 3, Eigen::RowMajor>> map(e3.data(), h, lq, lk);
  posenc::add_t5_bias(rel, map, posenc::positions::offset(off));
  for (std::size_t k = 0; k < init.size(); ++k) {
    const float want = init[k] + bias[k];
    ASSERT_TRUE(same_bits(r3[k], want)) << k;
    ASSERT_TRUE(same_bits(e4.data()[k], want)) << k;
    ASSERT_TRUE(same_bits(e3.data()[k], want)) << k;
  }
  // Empty tensors do nothing (and are fine with null data).
  posenc::add_t5_bias(rel, posenc::strided_view<float, 4>(nullptr, {0, h, lq, lk}));
  posenc::add_t5_bias(rel, posenc::strided_view<float, 4>(nullptr, {2, h, 0, lk}), posenc::positions::offset(3));
  posenc::add_t5_bias(rel, posenc::strided_view<float, 4>(nullptr, {2, h, 3, 0}));
}

// ------------------------------------------------------------------------------ errors and the try_ forms

TEST(T5AddBiasErrors, StatusMessageAndNothingWritten) {
  constexpr index_t n = 2, h = 3, lq = 2, lk = 5;
  posenc::t5_relative_bias<float> rel(h, {true, 32, 128});
  rel.init_normal(2, 1.0);
  std::vector<float> buf(static_cast<std::size_t>(n * h * lq * lk), -7.5f);
  const std::vector<float> before = buf;
  float* p = buf.data();
  using V4 = posenc::strided_view<float, 4>;
  const V4 good(p, {n, h, lq, lk});
  constexpr index_t big = std::numeric_limits<index_t>::max();
  const std::int64_t neg[n] = {4, -2};
  const std::int64_t ok[n] = {4, 2};
  const std::int64_t ids[4] = {0, 1, 2, -9};
  const std::int64_t huge[n] = {0, big};
  struct bad_call {
    const char* what;
    V4 scores;
    posenc::positions pos;
    std::string part;
  };
  const std::vector<bad_call> calls = {
      {"heads", V4(p, {n, 4, lq, 1}), posenc::positions::offset(0), "posenc::add_t5_bias: scores heads (extent 1)=4 does not match num_heads=3"},
      {"negative offset", good, posenc::positions::offset(-1), "posenc::add_t5_bias: query offset=-1 must be >= 0"},
      {"negative offset, empty", V4(p, {n, h, 0, lk}), posenc::positions::offset(-1), "query offset=-1"},
      {"offset overflows", good, posenc::positions::offset(big), "overflows int64"},
      {"per_sequence negative", good, posenc::positions::per_sequence(neg, n), "offset[1]=-2"},
      {"per_sequence overflows", good, posenc::positions::per_sequence(huge, n), "offset[1]="},
      {"per_sequence count", good, posenc::positions::per_sequence(ok, 1), "count=1 does not match batch N=2"},
      {"per_sequence null", good, posenc::positions::per_sequence(static_cast<const std::int64_t*>(nullptr), n), "null"},
      {"per_token negative", good, posenc::positions::per_token(ids, n, lq), "position[1, 1]=-9"},
      {"per_token shape", good, posenc::positions::per_token(ids, 1, 4), "per_token shape (1, 4)"},
      {"zero key stride", V4(p, {n, h, lq, lk}, {h * lq * lk, lq * lk, lk, 0}), posenc::positions::offset(0), "scores.stride(3)=0"},
      {"negative stride", V4(p, {n, h, lq, lk}, {h * lq * lk, lq * lk, -lk, 1}), posenc::positions::offset(0), "scores.stride(2)=-5"},
      {"negative extent", V4(p, {n, h, -1, lk}, {h * lq * lk, lq * lk, lk, 1}), posenc::positions::offset(0), "scores.extent(2)=-1"},
      {"null", V4(nullptr, {n, h, lq, lk}), posenc::positions::offset(0), "scores is null"},
  };
  for (const auto& c : calls) {
    expect_same_failure([&] { return posenc::try_add_t5_bias(rel, c.scores, c.pos); },
                        [&] { posenc::add_t5_bias(rel, c.scores, c.pos); }, c.part, c.what);
    for (std::size_t k = 0; k < buf.size(); ++k) ASSERT_TRUE(same_bits(buf[k], before[k])) << c.what << ": element " << k << " written";
  }
  // Rank-3 scores name extent 0.
  expect_same_failure([&] { return posenc::try_add_t5_bias(rel, posenc::strided_view<float, 3>(p, {2, lq, lk})); },
                      [&] { posenc::add_t5_bias(rel, posenc::strided_view<float, 3>(p, {2, lq, lk})); },
                      "scores heads (extent 0)=2 does not match num_heads=3", "rank 3 heads");
  // Scores over the module's own table.
  posenc::t5_relative_bias<float> self(1, {false, 8, 20});
  const posenc::strided_view<float, 4> on_table(self.table().data(), {1, 1, 2, 4});
  const std::vector<float> table0(self.table().data(), self.table().data() + 8);
  expect_same_failure([&] { return posenc::try_add_t5_bias(self, on_table); }, [&] { posenc::add_t5_bias(self, on_table); },
                      "posenc::add_t5_bias: scores overlap the table", "scores on the table");
  expect_same_failure([&] { return self.try_forward(posenc::strided_view<float, 3>(self.table().data(), {1, 2, 4})); },
                      [&] { self.forward(posenc::strided_view<float, 3>(self.table().data(), {1, 2, 4})); },
                      "posenc::t5_relative_bias::forward: bias overlaps the table", "bias on the table");
  EXPECT_EQ(std::vector<float>(self.table().data(), self.table().data() + 8), table0);
  // A default-constructed module.
  const posenc::t5_relative_bias<float> empty;
  EXPECT_TRUE(empty.empty());
  expect_same_failure([&] { return posenc::try_add_t5_bias(empty, good); }, [&] { posenc::add_t5_bias(empty, good); },
                      "posenc::add_t5_bias: the module is empty", "empty module");
  for (std::size_t k = 0; k < buf.size(); ++k) ASSERT_TRUE(same_bits(buf[k], before[k])) << "element " << k << " written";
  // Accepted: ok, and the same bits as the throwing form.
  const posenc::positions zero = posenc::positions::offset(0);
  static_assert(noexcept(posenc::try_add_t5_bias(rel, good, zero)), "try_ forms are noexcept");
  std::vector<float> thrown = before;
  const posenc::status s = posenc::try_add_t5_bias(rel, good, posenc::positions::per_sequence(ok, n));
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), posenc::errc::ok);
  EXPECT_TRUE(s.message().empty());
  posenc::add_t5_bias(rel, V4(thrown.data(), {n, h, lq, lk}), posenc::positions::per_sequence(ok, n));
  for (std::size_t k = 0; k < buf.size(); ++k) ASSERT_TRUE(same_bits(buf[k], thrown[k])) << k;
  EXPECT_NE(buf, before);
}

TEST(T5TryForms, BucketAndTable) {
  std::int64_t out = -5;
  expect_same_failure([&] { return posenc::try_t5_relative_bucket(1, true, 3, 128, out); },
                      [&] { posenc::t5_relative_bucket(1, true, 3, 128); },
                      "posenc::t5_relative_bucket: num_buckets=3 must be >= 4 (bidirectional: at least 2 per direction)",
                      "3 buckets");
  expect_same_failure([&] { return posenc::try_t5_relative_bucket(1, false, 32, 16, out); },
                      [&] { posenc::t5_relative_bucket(1, false, 32, 16); }, "max_distance=16 must exceed the exact range 16",
                      "max_distance");
  EXPECT_EQ(out, -5);
  for (std::int64_t r : {-300, -20, -1, 0, 1, 20, 300}) {
    ASSERT_TRUE(posenc::try_t5_relative_bucket(r, true, 32, 128, out).ok());
    EXPECT_EQ(out, posenc::t5_relative_bucket(r, true, 32, 128)) << r;
  }

  std::vector<std::int64_t> b(12, -3);
  const std::vector<std::int64_t> b0 = b;
  const posenc::strided_view<std::int64_t, 2> vb(b.data(), {3, 4});
  expect_same_failure([&] { return posenc::try_t5_bucket_table(vb, {true, 32, 128}, -1); },
                      [&] { posenc::t5_bucket_table(vb, {true, 32, 128}, -1); },
                      "posenc::t5_bucket_table: query_offset=-1 must be >= 0", "table offset");
  expect_same_failure([&] { return posenc::try_t5_bucket_table(vb, {false, 1, 128}); },
                      [&] { posenc::t5_bucket_table(vb, {false, 1, 128}); }, "num_buckets=1 must be >= 2 (causal)",
                      "table buckets");
  EXPECT_EQ(b, b0);
  ASSERT_TRUE(posenc::try_t5_bucket_table(vb, {false, 32, 128}, 7).ok());
  std::vector<std::int64_t> thrown(12, -3);
  posenc::t5_bucket_table(posenc::strided_view<std::int64_t, 2>(thrown.data(), {3, 4}), {false, 32, 128}, 7);
  EXPECT_EQ(b, thrown);
  EXPECT_NE(b, b0);
}

TEST(T5TryForms, Module) {
  // try_create: rejected leaves `out` as it was; accepted equals the constructor.
  posenc::t5_relative_bias<double> out(2, {false, 8, 20});
  out.init_normal(4);
  const std::vector<double> table0(out.table().data(), out.table().data() + 16);
  expect_same_failure([&] { return posenc::t5_relative_bias<double>::try_create(0, {}, out); },
                      [&] { posenc::t5_relative_bias<double> r(0); }, "posenc::t5_relative_bias: num_heads=0 must be > 0",
                      "num_heads");
  expect_same_failure([&] { return posenc::t5_relative_bias<double>::try_create(2, {true, 32, 8}, out); },
                      [&] { posenc::t5_relative_bias<double> r(2, {true, 32, 8}); }, "max_distance=8", "max_distance");
  EXPECT_EQ(out.num_heads(), 2);
  EXPECT_EQ(out.num_buckets(), 8);
  EXPECT_EQ(std::vector<double>(out.table().data(), out.table().data() + 16), table0);
  static_assert(noexcept(posenc::t5_relative_bias<double>::try_create(1, {}, out)), "try_create is noexcept");
  ASSERT_TRUE(posenc::t5_relative_bias<double>::try_create(3, {true, 16, 64}, out).ok());
  EXPECT_EQ(out.num_heads(), 3);
  EXPECT_EQ(out.num_buckets(), 16);
  EXPECT_FALSE(out.empty());
  for (index_t k = 0; k < 48; ++k) ASSERT_EQ(out.table().data()[k], 0.0);

  // try_init_normal.
  expect_same_failure([&] { return out.try_init_normal(1, -1.0); }, [&] { out.init_normal(1, -1.0); },
                      "posenc::t5_relative_bias::init_normal: stddev=-1 must be finite and >= 0", "stddev");
  for (index_t k = 0; k < 48; ++k) ASSERT_EQ(out.table().data()[k], 0.0);
  posenc::t5_relative_bias<double> ref(3, {true, 16, 64});
  ASSERT_TRUE(out.try_init_normal(9, 0.5).ok());
  ref.init_normal(9, 0.5);
  for (index_t k = 0; k < 48; ++k) ASSERT_EQ(out.table().data()[k], ref.table().data()[k]);

  // try_forward.
  std::vector<float> bias(3 * 4 * 6, 7.0f);
  const std::vector<float> bias0 = bias;
  expect_same_failure([&] { return out.try_forward(posenc::strided_view<float, 3>(bias.data(), {2, 4, 6})); },
                      [&] { out.forward(posenc::strided_view<float, 3>(bias.data(), {2, 4, 6})); },
                      "posenc::t5_relative_bias::forward: bias heads (extent 0)=2 does not match num_heads=3", "forward heads");
  expect_same_failure([&] { return out.try_forward(posenc::strided_view<float, 3>(bias.data(), {3, 4, 6}), -3); },
                      [&] { out.forward(posenc::strided_view<float, 3>(bias.data(), {3, 4, 6}), -3); },
                      "query_offset=-3 must be >= 0", "forward offset");
  EXPECT_EQ(bias, bias0);
  ASSERT_TRUE(out.try_forward(posenc::strided_view<float, 3>(bias.data(), {3, 4, 6}), 5).ok());
  std::vector<float> thrown(bias.size());
  out.forward(posenc::strided_view<float, 3>(thrown.data(), {3, 4, 6}), 5);
  EXPECT_EQ(bias, thrown);

  // try_backward.
  const std::vector<double> grad0(out.table_grad().data(), out.table_grad().data() + 48);
  expect_same_failure([&] { return out.try_backward(posenc::strided_view<const float, 3>(bias.data(), {3, 4, 6}, {24, 6, -1})); },
                      [&] { out.backward(posenc::strided_view<const float, 3>(bias.data(), {3, 4, 6}, {24, 6, -1})); },
                      "posenc::t5_relative_bias::backward: grad_bias.stride(2)=-1 must be >= 0", "backward stride");
  expect_same_failure([&] { return out.try_backward(posenc::strided_view<const float, 3>(bias.data(), {3, 4, 6}), -1); },
                      [&] { out.backward(posenc::strided_view<const float, 3>(bias.data(), {3, 4, 6}), -1); },
                      "query_offset=-1", "backward offset");
  EXPECT_EQ(std::vector<double>(out.table_grad().data(), out.table_grad().data() + 48), grad0);
  ASSERT_TRUE(out.try_backward(posenc::strided_view<const float, 3>(bias.data(), {3, 4, 6}), 5).ok());
  ref.backward(posenc::strided_view<const float, 3>(bias.data(), {3, 4, 6}), 5);
  for (index_t k = 0; k < 48; ++k) ASSERT_EQ(out.table_grad().data()[k], ref.table_grad().data()[k]);

  // An empty module rejects forward and backward.
  posenc::t5_relative_bias<float> empty;
  expect_same_failure([&] { return empty.try_forward(posenc::strided_view<float, 3>(bias.data(), {0, 4, 6})); },
                      [&] { empty.forward(posenc::strided_view<float, 3>(bias.data(), {0, 4, 6})); },
                      "posenc::t5_relative_bias::forward: the module is empty", "empty forward");
  expect_same_failure([&] { return empty.try_backward(posenc::strided_view<const float, 3>(bias.data(), {0, 4, 6})); },
                      [&] { empty.backward(posenc::strided_view<const float, 3>(bias.data(), {0, 4, 6})); },
                      "posenc::t5_relative_bias::backward: the module is empty", "empty backward");
  EXPECT_EQ(bias, thrown);
}

}  // namespace
