// Bound RoPE calls (posenc/binding.hpp: bind_apply_rope, bind_apply_rope_qk), once per ISA: a binding checks
// its views once and each run only the positions, so every run must write what the unbound call writes, bit
// for bit, for each source kind (a cos/sin cache, a plan, an engine's table view) and position form; rotated
// rows are also checked against RoPE evaluated here in long double from the formula. Rejections carry the
// unbound call's message and write nothing. (The KV-append bindings are tested in kv_cache_test.cpp.)
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <posenc/posenc.hpp>

#include "test_util.hpp"

namespace {

using posenc::index_t;
using namespace posenc_test;
using ld = long double;

/// Half-split RoPE of one head row at position p, base 10000, long double.
std::vector<ld> rope_row(const float* x, index_t d, index_t p) {
  std::vector<ld> y(x, x + d);
  for (index_t i = 0; i < d / 2; ++i) {
    const ld t = static_cast<ld>(p) * std::pow(10000.0L, -static_cast<ld>(2 * i) / static_cast<ld>(d));
    y[i] = static_cast<ld>(x[i]) * std::cos(t) - static_cast<ld>(x[i + d / 2]) * std::sin(t);
    y[i + d / 2] = static_cast<ld>(x[i + d / 2]) * std::cos(t) + static_cast<ld>(x[i]) * std::sin(t);
  }
  return y;
}

using Binding = IsaOnlyTest;

TEST_P(Binding, RopeRunsEqualUnboundCalls) {
  const index_t N = 3, L = 2, Hq = 4, Hk = 2, D = 40;
  posenc::rope_config cfg;
  cfg.head_dim = D;
  const posenc::rope_plan plan = posenc::make_rope_plan(cfg);
  const posenc::rope_cache<float> cache(plan, 600);
  // An engine's vLLM-style cos_sin_cache [max_pos, D] (cos of the pairs, then their sin), from the cache.
  std::vector<float> cos_sin(static_cast<std::size_t>(600 * D));
  for (index_t p = 0; p < 600; ++p)
    for (index_t i = 0; i < D / 2; ++i) {
      cos_sin[static_cast<std::size_t>(p * D + i)] = cache.cos_data()[p * (D / 2) + i];
      cos_sin[static_cast<std::size_t>(p * D + D / 2 + i)] = cache.sin_data()[p * (D / 2) + i];
    }
  const posenc::rope_geometry g{D, D, 0, posenc::rope_style::half_split};
  const auto table = posenc::rope_table_view<float>::cos_sin_cache(cos_sin.data(), 600, g);

  Qkv x(N, L, Hq, Hk, D, 3), y = x;
  std::vector<Eigen::half> out(static_cast<std::size_t>(N * L * Hk * D)), out1 = out;
  const auto half_view = [&](std::vector<Eigen::half>& o) {
    return posenc::strided_view<Eigen::half, 4>(o.data(), {N, L, Hk, D});
  };
  const posenc::strided_view<const float, 4> k_in(y.k());  // read only: the out-of-place source
  auto qk = posenc::bind_apply_rope_qk(cache, x.q(), x.k());
  auto q_plan = posenc::bind_apply_rope(plan, x.q());
  auto k_table = posenc::bind_apply_rope(table, x.k());
  auto k_half = posenc::bind_apply_rope(cache, k_in, half_view(out));
  EXPECT_EQ(qk.batch(), N);
  EXPECT_EQ(qk.length(), L);

  const std::int64_t lens[3][3] = {{0, 7, 500}, {2, 9, 502}, {4, 11, 504}};
  std::vector<std::int64_t> ids(static_cast<std::size_t>(N * L));
  for (int t = 0; t < 3; ++t) {
    SCOPED_TRACE("step " + std::to_string(t));
    const auto pos = posenc::positions::per_sequence(lens[t], N);
    for (index_t i = 0; i < N * L; ++i) ids[static_cast<std::size_t>(i)] = lens[t][i / L] + (i % L == 0 ? 1 : 0);
    const auto tok = posenc::positions::per_token(ids.data(), N, L);
    const Qkv in = x;

    qk.run(pos);
    posenc::apply_rope_qk(cache, y.q(), y.k(), pos);
    ASSERT_EQ(x.buf, y.buf) << "apply_rope_qk, cache";
    q_plan.run(tok);
    posenc::apply_rope(plan, y.q(), tok);
    ASSERT_EQ(x.buf, y.buf) << "apply_rope, plan, per-token ids";
    k_table.run(pos);
    posenc::apply_rope(table, y.k(), pos);
    ASSERT_EQ(x.buf, y.buf) << "apply_rope, table view";
    ASSERT_TRUE(k_half.try_run(pos).ok());
    posenc::apply_rope(cache, k_in, half_view(out1), pos);
    for (std::size_t i = 0; i < out.size(); ++i) ASSERT_EQ(static_cast<float>(out[i]), static_cast<float>(out1[i])) << i;

    // The first run of this step against the formula: q after qk.run and q_plan.run is rotated twice.
    Qkv once = in;
    auto ref_qk = posenc::bind_apply_rope_qk(cache, once.q(), once.k());
    ref_qk.run(pos);
    for (index_t n = 0; n < N; ++n)
      for (const index_t h : {index_t{0}, Hq - 1}) {
        const std::vector<ld> ref = rope_row(&in.buf[static_cast<std::size_t>(n * L * in.row() + h * D)], D, lens[t][n]);
        for (index_t e = 0; e < D; ++e)
          EXPECT_NEAR(once.q()(n, 0, h, e), static_cast<double>(ref[static_cast<std::size_t>(e)]), 4e-6) << n << " " << h;
      }
  }
}

TEST_P(Binding, RopeRejectsWhatTheCallRejects) {
  const index_t N = 2, L = 1, D = 8;
  Qkv x(N, L, 2, 1, D, 4);
  const Qkv before = x;
  posenc::rope_config cfg;
  cfg.head_dim = 2 * D;
  const posenc::rope_cache<float> wide(posenc::make_rope_plan(cfg), 16);
  cfg.head_dim = D;
  const posenc::rope_cache<float> cache(posenc::make_rope_plan(cfg), 16);

  const auto bad = posenc::try_bind_apply_rope(wide, x.q());
  EXPECT_FALSE(bad.ok());
  const posenc::status direct = posenc::try_apply_rope(wide, x.q(), posenc::positions::offset(0));
  EXPECT_EQ(bad.bind_status().message(), direct.message());
  EXPECT_EQ(bad.try_run(posenc::positions::offset(0)).message(), direct.message());
  const auto same = posenc::try_bind_apply_rope_qk(cache, x.q(), x.q());
  EXPECT_EQ(same.bind_status().message(),
            posenc::try_apply_rope_qk(cache, x.q(), x.q(), posenc::positions::offset(0)).message());
  EXPECT_THROW(static_cast<void>(posenc::bind_apply_rope_qk(cache, x.q(), x.q())), posenc::argument_error);
  decltype(bad) empty;
  EXPECT_EQ(empty.try_run(posenc::positions::offset(0)).message(),
            "posenc::apply_rope: the binding is empty (make it with try_bind_apply_rope)");

  const auto step = posenc::bind_apply_rope_qk(cache, x.q(), x.k());
  const std::int64_t late[2] = {3, 16}, three[3] = {0, 1, 2};
  EXPECT_EQ(step.try_run(posenc::positions::per_sequence(late, N)).message(),
            "posenc::apply_rope_qk: position 16 is past the cache of 16 positions");
  EXPECT_EQ(step.try_run(posenc::positions::per_sequence(three, 3)).message(),
            "posenc::apply_rope_qk: positions per_sequence count=3 does not match batch N=2");
  EXPECT_EQ(step.try_run(posenc::positions::offset(-2)).message(),
            "posenc::apply_rope_qk: positions offset=-2 must be >= 0");
  ASSERT_EQ(x.buf, before.buf);
  EXPECT_THROW(step.run(posenc::positions::offset(16)), posenc::argument_error);
  ASSERT_EQ(x.buf, before.buf);
}

INSTANTIATE_TEST_SUITE_P(Isa, Binding, ::testing::ValuesIn(all_isas()), isa_only_name);

}  // namespace
