// Multimodal RoPE against tests/golden/mrope.txt (Qwen2-VL chunked, Qwen3-VL interleaved, Qwen2-VL vision
// 2D with frequencies restarting per section), every dtype, in place, out of place, q+k, backward.
#include <array>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <posenc/posenc.hpp>

#include "test_util.hpp"

namespace {

using posenc::index_t;
using namespace posenc_test;

std::array<index_t, 3> sections_of(const golden_case& c) {
  std::array<index_t, 3> s{};
  std::istringstream is(c.str("sections"));
  std::string tok;
  for (std::size_t i = 0; i < 3 && std::getline(is, tok, ','); ++i) s[i] = std::stoll(tok);
  return s;
}

posenc::mrope_plan mrope_plan_of(const golden_case& c) {
  const index_t d = c.integer("head_dim");
  const auto sections = sections_of(c);
  const auto layout = c.str("mrope_layout") == "chunked" ? posenc::mrope_layout::chunked : posenc::mrope_layout::interleaved;
  if (c.str("freq_mode") == "sectioned")
    return posenc::mrope_plan(posenc::make_sectioned_rope_plan(d, c.num("base"), sections), sections, layout);
  posenc::rope_config cfg;
  cfg.head_dim = d;
  cfg.rotary_dim = c.integer("rotary_dim");
  cfg.base = c.num("base");
  return posenc::mrope_plan(posenc::make_rope_plan(cfg), sections, layout);
}

posenc::mrope_positions mrope_positions_of(const golden_case& c) {
  const auto& p = c.array("positions");
  if (c.str("pos_form") == "shared") return posenc::mrope_positions::shared(p.ivalues.data(), p.shape[1]);
  return posenc::mrope_positions::per_token(p.ivalues.data(), p.shape[0], p.shape[2]);
}

class MropeGolden : public IsaTest<std::string> {};

template <class T>
void check_dtype(const golden_case& c) {
  const posenc::mrope_plan mp = mrope_plan_of(c);
  const auto pos = mrope_positions_of(c);
  const auto& xs = c.array("x");
  const std::array<index_t, 4> shape{xs.shape[0], xs.shape[1], xs.shape[2], xs.shape[3]};
  std::vector<T> x = to_storage<T>(xs);
  std::vector<T> y(x.size(), T(0));
  posenc::apply_mrope(mp, posenc::strided_view<const T, 4>(x.data(), shape), posenc::strided_view<T, 4>(y.data(), shape), pos);
  expect_close(y, c.array("y"), c.name + " out of place", angle_error_bound_max(c));
  // q and k in one pass: k is a copy with the heads of q (same positions): both must match.
  std::vector<T> q = x, k = x;
  posenc::apply_mrope_qk(mp, posenc::strided_view<T, 4>(q.data(), shape), posenc::strided_view<T, 4>(k.data(), shape), pos);
  expect_close(q, c.array("y"), c.name + " q", angle_error_bound_max(c));
  expect_close(k, c.array("y"), c.name + " k", angle_error_bound_max(c));
}

TEST_P(MropeGolden, AllDtypes) {
  const auto cases = load_golden("mrope.txt");
  const golden_case& c = find_case(cases, param());
  const posenc::mrope_plan mp = mrope_plan_of(c);
  const auto& axis = c.array("axis").ivalues;
  ASSERT_EQ(mp.axis().size(), axis.size());
  for (std::size_t i = 0; i < axis.size(); ++i) EXPECT_EQ(mp.axis()[i], axis[i]) << "pair " << i;
  const auto& w = c.array("inv_freq").values;
  for (std::size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(mp.plan().inv_freq()[i], w[i], 1e-14 * w[i]) << "pair " << i;
  check_dtype<float>(c);
  check_dtype<double>(c);
  check_dtype<Eigen::half>(c);
  check_dtype<Eigen::bfloat16>(c);
}

TEST_P(MropeGolden, BackwardInvertsForward) {
  const auto cases = load_golden("mrope.txt");
  const golden_case& c = find_case(cases, param());
  const posenc::mrope_plan mp = mrope_plan_of(c);
  const auto& xs = c.array("x");
  const std::array<index_t, 4> shape{xs.shape[0], xs.shape[1], xs.shape[2], xs.shape[3]};
  std::vector<double> x = xs.values;
  posenc::strided_view<double, 4> v(x.data(), shape);
  posenc::apply_mrope(mp, v, mrope_positions_of(c));
  posenc::apply_mrope_backward(mp, v, mrope_positions_of(c));
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], xs.values[i], 1e-13) << i;
}

INSTANTIATE_TEST_SUITE_P(Golden, MropeGolden,
                         ::testing::Combine(::testing::Values<std::string>("qwen2vl_chunked", "qwen3vl_interleaved", "qwen3vl_uneven", "per_token_chunked",
                                           "vision_2d"),
                                            ::testing::ValuesIn(all_isas())),
                         IsaParamName{});

TEST(Mrope, TextTokensEqualPlainRope) {
  // A text token has t = h = w: MRoPE then equals RoPE at that position, whatever the sections.
  posenc::rope_config cfg;
  cfg.head_dim = 32;
  const auto plan = posenc::make_rope_plan(cfg);
  const posenc::mrope_plan mp(plan, {4, 6, 6}, posenc::mrope_layout::interleaved);
  std::vector<float> a(3 * 2 * 32), b;
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 7) * 0.25f - 0.5f;
  b = a;
  const std::int64_t thw[] = {5, 900, 77, 5, 900, 77, 5, 900, 77};  // (3, L=3)
  const std::int64_t ids[] = {5, 900, 77};
  posenc::apply_mrope(mp, posenc::strided_view<float, 4>(a.data(), {1, 3, 2, 32}), posenc::mrope_positions::shared(thw, 3));
  posenc::apply_rope(plan, posenc::strided_view<float, 4>(b.data(), {1, 3, 2, 32}), posenc::positions::per_token(ids, 1, 3));
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << i;
}

TEST(Mrope, RejectsBadInput) {
  posenc::rope_config cfg;
  cfg.head_dim = 16;
  const auto plan = posenc::make_rope_plan(cfg);
  EXPECT_THROW(posenc::mrope_plan(plan, {2, 3, 2}, posenc::mrope_layout::chunked), posenc::argument_error);
  EXPECT_THROW(posenc::mrope_plan(plan, {-1, 5, 4}, posenc::mrope_layout::chunked), posenc::argument_error);
  EXPECT_THROW(posenc::make_sectioned_rope_plan(16, 10000.0, {0, 5, 4}), posenc::argument_error);
  const posenc::mrope_plan mp(plan, {2, 3, 3}, posenc::mrope_layout::chunked);
  std::vector<float> x(2 * 16, 1.0f);
  const std::int64_t neg[] = {0, 1, 0, -1, 0, 1};
  const std::int64_t ok[] = {0, 1, 0, 1, 0, 1};
  try {
    posenc::apply_mrope(mp, posenc::strided_view<float, 4>(x.data(), {1, 2, 1, 16}), posenc::mrope_positions::shared(neg, 2));
    FAIL() << "no throw";
  } catch (const posenc::argument_error& e) {
    EXPECT_NE(std::string(e.what()).find("apply_mrope"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("=-1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(posenc::apply_mrope(mp, posenc::strided_view<float, 4>(x.data(), {1, 2, 1, 16}), posenc::mrope_positions::shared(ok, 3)),
               posenc::argument_error);
  EXPECT_THROW(posenc::apply_mrope(mp, posenc::strided_view<float, 4>(x.data(), {1, 2, 1, 16}), posenc::mrope_positions::per_token(ok, 2, 2)),
               posenc::argument_error);
  for (float v : x) EXPECT_EQ(v, 1.0f);
}

}  // namespace
