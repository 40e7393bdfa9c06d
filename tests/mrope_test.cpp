// Multimodal RoPE against tests/golden/mrope.txt (Qwen2-VL chunked, Qwen3-VL interleaved, Qwen2-VL vision
// 2D with frequencies restarting per section), every dtype, in place, out of place, q+k, backward; the try_
// forms (no-throw API): a rejected input gives the throwing form's message as an invalid_argument status and
// writes nothing, an accepted one gives the throwing form's bits.
#include <array>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <posenc/posenc.hpp>

#include "test_util.hpp"

namespace {

using posenc::index_t;
using namespace posenc_test;

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

// ------------------------------------------------------------------------------------------ try_ forms

namespace {


bool same_plan(const posenc::rope_plan& a, const posenc::rope_plan& b) {
  return a.head_dim() == b.head_dim() && a.style() == b.style() && a.rotary_offset() == b.rotary_offset() &&
         same_bits(a.inv_freq(), b.inv_freq()) && a.magnitude() == b.magnitude() && a.logit_scale() == b.logit_scale();
}

bool same_mrope_plan(const posenc::mrope_plan& a, const posenc::mrope_plan& b) {
  return same_plan(a.plan(), b.plan()) && a.sections() == b.sections() && a.layout() == b.layout() && a.axis() == b.axis();
}

bool same_positions(const posenc::mrope_positions& a, const posenc::mrope_positions& b) {
  return a.data() == b.data() && a.batch() == b.batch() && a.length() == b.length() &&
         a.batch_stride() == b.batch_stride() && a.axis_stride() == b.axis_stride();
}

posenc::rope_plan plan16() {
  posenc::rope_config cfg;
  cfg.head_dim = 16;
  return posenc::make_rope_plan(cfg);
}

using V4 = posenc::strided_view<float, 4>;
using C4 = posenc::strided_view<const float, 4>;

static_assert(noexcept(posenc::try_apply_mrope(std::declval<const posenc::mrope_plan&>(), std::declval<V4>(),
                                               std::declval<const posenc::mrope_positions&>())));
static_assert(noexcept(posenc::try_apply_mrope(std::declval<const posenc::mrope_plan&>(), std::declval<C4>(), std::declval<V4>(),
                                               std::declval<const posenc::mrope_positions&>())));
static_assert(noexcept(posenc::try_apply_mrope_qk(std::declval<const posenc::mrope_plan&>(), std::declval<V4>(), std::declval<V4>(),
                                                  std::declval<const posenc::mrope_positions&>())));
static_assert(noexcept(posenc::try_apply_mrope_backward(std::declval<const posenc::mrope_plan&>(), std::declval<V4>(),
                                                        std::declval<const posenc::mrope_positions&>())));
static_assert(noexcept(posenc::mrope_plan::try_create(posenc::rope_plan{}, {0, 0, 0}, posenc::mrope_layout::chunked,
                                                      std::declval<posenc::mrope_plan&>())));
static_assert(noexcept(posenc::try_make_sectioned_rope_plan(16, 10000.0, {0, 4, 4}, std::declval<posenc::rope_plan&>())));

TEST(TryMropePositionsSlice, RejectsLikeSliceAndLeavesOutUnchanged) {
  const std::int64_t ids[2 * 3 * 4] = {};
  const auto per_token = posenc::mrope_positions::per_token(ids, 2, 4);
  const auto shared = posenc::mrope_positions::shared(ids, 4);
  for (const auto& p : {per_token, shared}) {
    for (const auto& r : {std::array<index_t, 4>{-1, 1, 0, 1}, {0, 1, 0, -1}, {0, 1, 3, 2}, {1, 0, 5, 0}}) {
      posenc::mrope_positions out = shared.slice(0, 1, 1, 2);
      const posenc::mrope_positions before = out;
      const std::string what = "slice(" + std::to_string(r[0]) + ", " + std::to_string(r[1]) + ", " + std::to_string(r[2]) +
                               ", " + std::to_string(r[3]) + ") batch " + std::to_string(p.batch());
      expect_rejection(p.try_slice(r[0], r[1], r[2], r[3], out), thrown_message([&] { (void)p.slice(r[0], r[1], r[2], r[3]); }), what);
      EXPECT_TRUE(same_positions(out, before)) << what;
    }
  }
  posenc::mrope_positions out;
  expect_rejection(per_token.try_slice(1, 2, 0, 1, out), thrown_message([&] { (void)per_token.slice(1, 2, 0, 1); }), "past batch");
  EXPECT_TRUE(same_positions(out, posenc::mrope_positions{}));
  EXPECT_EQ(out.data(), nullptr);
  EXPECT_EQ(out.length(), 0);
}

TEST(TryMropePositionsSlice, AcceptedEqualsSlice) {
  std::int64_t ids[2 * 3 * 4];
  for (std::size_t i = 0; i < 24; ++i) ids[i] = static_cast<std::int64_t>(i);
  const auto per_token = posenc::mrope_positions::per_token(ids, 2, 4);
  const auto shared = posenc::mrope_positions::shared(ids, 4);
  posenc::mrope_positions out;
  expect_ok(per_token.try_slice(1, 1, 1, 3, out), "per token");
  EXPECT_TRUE(same_positions(out, per_token.slice(1, 1, 1, 3)));
  EXPECT_EQ(out.at(0, 0), (std::array<index_t, 3>{13, 17, 21}));
  expect_ok(shared.try_slice(7, 5, 2, 2, out), "shared takes any sequence range");
  EXPECT_TRUE(same_positions(out, shared.slice(7, 5, 2, 2)));
  EXPECT_EQ(out.batch(), -1);
}

TEST(TryMropePlan, RejectsLikeConstructorAndLeavesOutUnchanged) {
  const auto plan = plan16();
  const posenc::mrope_plan good(plan, {4, 2, 2}, posenc::mrope_layout::interleaved);
  for (const auto& c : {std::pair<posenc::rope_plan, std::array<index_t, 3>>{plan, {2, 3, 2}},
                        {plan, {-1, 5, 4}},
                        {plan, {8, -1, 1}},
                        {plan, {3, 3, -1}},
                        {plan, {std::numeric_limits<index_t>::max(), std::numeric_limits<index_t>::max(), 2}},
                        {posenc::rope_plan{}, {0, 0, 0}}}) {
    // Named copies, not a structured binding: clang 14 cannot capture those in the lambda below (C++20).
    const posenc::rope_plan& p = c.first;
    const std::array<index_t, 3>& sections = c.second;
    posenc::mrope_plan out = good;
    const std::string what = "sections " + std::to_string(sections[0]) + "," + std::to_string(sections[1]) + "," +
                             std::to_string(sections[2]) + (p.empty() ? " empty plan" : "");
    expect_rejection(posenc::mrope_plan::try_create(p, sections, posenc::mrope_layout::chunked, out),
                     thrown_message([&] { posenc::mrope_plan m(p, sections, posenc::mrope_layout::chunked); }), what);
    EXPECT_TRUE(same_mrope_plan(out, good)) << what << ": out changed";
  }
}

TEST(TryMropePlan, AcceptedEqualsConstructor) {
  const auto plan = plan16();
  for (auto layout : {posenc::mrope_layout::chunked, posenc::mrope_layout::interleaved}) {
    posenc::mrope_plan out;
    EXPECT_TRUE(out.plan().empty());
    expect_ok(posenc::mrope_plan::try_create(plan, {2, 3, 3}, layout, out), "create");
    EXPECT_TRUE(same_mrope_plan(out, posenc::mrope_plan(plan, {2, 3, 3}, layout)));
    // Replacing an existing plan.
    expect_ok(posenc::mrope_plan::try_create(plan, {8, 0, 0}, layout, out), "replace");
    EXPECT_TRUE(same_mrope_plan(out, posenc::mrope_plan(plan, {8, 0, 0}, layout)));
  }
}

TEST(TryMakeSectionedRopePlan, RejectsLikeThrowingFormAndLeavesOutUnchanged) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  const posenc::rope_plan good = plan16();
  struct bad {
    index_t head_dim;
    double base;
    std::array<index_t, 3> sections;
  };
  constexpr index_t big = std::numeric_limits<index_t>::max();
  for (const bad& b : {bad{16, 10000.0, {0, 5, 4}}, bad{16, 1.0, {0, 4, 4}}, bad{16, kNaN, {0, 4, 4}}, bad{16, 10000.0, {0, 0, 0}},
                       bad{16, 10000.0, {-1, 4, 4}}, bad{0, 10000.0, {0, 1, 0}}, bad{-4, 10000.0, {1, 0, 0}},
                       bad{16, 10000.0, {big, big, big}}}) {
    const std::string what = "head_dim " + std::to_string(b.head_dim) + " base " + std::to_string(b.base) + " sections " +
                             std::to_string(b.sections[0]) + "," + std::to_string(b.sections[1]) + "," + std::to_string(b.sections[2]);
    const std::string thrown = thrown_message([&] { (void)posenc::make_sectioned_rope_plan(b.head_dim, b.base, b.sections); });
    posenc::rope_plan out = good;
    expect_rejection(posenc::try_make_sectioned_rope_plan(b.head_dim, b.base, b.sections, out), thrown, what);
    EXPECT_TRUE(same_plan(out, good)) << what << ": out changed";
    expect_rejection(posenc::try_make_sectioned_rope_plan(b.head_dim, b.base, b.sections, posenc::rope_style::interleaved, out),
                     thrown_message([&] {
                       (void)posenc::make_sectioned_rope_plan(b.head_dim, b.base, b.sections, posenc::rope_style::interleaved);
                     }),
                     what + " interleaved");
    EXPECT_TRUE(same_plan(out, good)) << what << ": out changed";
  }
}

TEST(TryMakeSectionedRopePlan, AcceptedEqualsThrowingForm) {
  posenc::rope_plan out;
  expect_ok(posenc::try_make_sectioned_rope_plan(32, 10000.0, {0, 8, 8}, out), "vision 2d");
  EXPECT_TRUE(same_plan(out, posenc::make_sectioned_rope_plan(32, 10000.0, {0, 8, 8})));
  EXPECT_EQ(out.style(), posenc::rope_style::half_split);
  expect_ok(posenc::try_make_sectioned_rope_plan(20, 500.0, {3, 2, 4}, posenc::rope_style::interleaved, out), "odd sections");
  EXPECT_TRUE(same_plan(out, posenc::make_sectioned_rope_plan(20, 500.0, {3, 2, 4}, posenc::rope_style::interleaved)));
  EXPECT_EQ(out.style(), posenc::rope_style::interleaved);
  EXPECT_EQ(out.rotary_dim(), 18);
}

TEST(TryApplyMrope, RejectsLikeThrowingFormAndWritesNothing) {
  const posenc::mrope_plan mp(plan16(), {2, 3, 3}, posenc::mrope_layout::chunked);
  const posenc::mrope_plan empty;
  const std::vector<float> x0 = random_values<float>(2 * 2 * 16, 41);
  std::vector<float> x = x0, y = x0, k = x0;
  const V4 vx(x.data(), {1, 2, 2, 16}), vy(y.data(), {1, 2, 2, 16}), vk(k.data(), {1, 2, 2, 16});
  const std::int64_t ok[] = {0, 1, 0, 1, 0, 1};
  const std::int64_t neg[] = {0, 1, 0, -1, 0, 1};
  const auto pos = posenc::mrope_positions::shared(ok, 2);
  const auto untouched = [&](const std::string& what) {
    EXPECT_TRUE(same_bits(x, x0)) << what << ": x was written";
    EXPECT_TRUE(same_bits(y, x0)) << what << ": y was written";
    EXPECT_TRUE(same_bits(k, x0)) << what << ": k was written";
  };
  // In place.
  const auto in_place = [&](const posenc::mrope_plan& p, const V4& v, const posenc::mrope_positions& q, const std::string& what) {
    expect_rejection(posenc::try_apply_mrope(p, v, q), thrown_message([&] { posenc::apply_mrope(p, v, q); }), what);
    untouched(what);
  };
  in_place(mp, vx, posenc::mrope_positions::shared(neg, 2), "negative position");
  in_place(mp, vx, posenc::mrope_positions::shared(ok, 3), "length");
  in_place(mp, vx, posenc::mrope_positions::per_token(ok, 2, 2), "batch");
  in_place(mp, vx, posenc::mrope_positions::shared(nullptr, 2), "null positions");
  in_place(mp, V4(x.data(), {1, 2, 4, 8}), pos, "head dim");
  in_place(empty, vx, pos, "empty plan");
  in_place(mp, V4(x.data(), {1, 2, 2, 16}, {64, 0, 16, 1}), pos, "zero stride");
  // Out of place.
  const auto out_of_place = [&](const C4& a, const V4& b, const posenc::mrope_positions& q, const std::string& what) {
    expect_rejection(posenc::try_apply_mrope(mp, a, b, q), thrown_message([&] { posenc::apply_mrope(mp, a, b, q); }), what);
    untouched(what);
  };
  out_of_place(C4(x.data(), {1, 2, 2, 16}), vy, posenc::mrope_positions::shared(neg, 2), "out of place: negative position");
  out_of_place(C4(x.data(), {1, 2, 2, 16}), V4(y.data(), {1, 1, 2, 16}), pos, "out of place: shape");
  out_of_place(C4(x.data(), {1, 2, 2, 16}), V4(x.data() + 16, {1, 2, 2, 16}), pos, "out of place: overlap");
  // q and k.
  const auto qk = [&](const V4& a, const V4& b, const posenc::mrope_positions& q, const std::string& what) {
    expect_rejection(posenc::try_apply_mrope_qk(mp, a, b, q), thrown_message([&] { posenc::apply_mrope_qk(mp, a, b, q); }), what);
    untouched(what);
  };
  qk(vx, vx, pos, "qk: same tensor");
  qk(vx, V4(k.data(), {1, 1, 4, 16}), pos, "qk: (N, L)");
  qk(vx, vk, posenc::mrope_positions::shared(neg, 2), "qk: negative position");
  qk(vx, V4(k.data(), {1, 2, 4, 8}), pos, "qk: k head dim");
  // Backward.
  const auto backward = [&](const posenc::mrope_plan& p, const V4& v, const posenc::mrope_positions& q, const std::string& what) {
    expect_rejection(posenc::try_apply_mrope_backward(p, v, q), thrown_message([&] { posenc::apply_mrope_backward(p, v, q); }), what);
    untouched(what);
  };
  backward(mp, vx, posenc::mrope_positions::shared(neg, 2), "backward: negative position");
  backward(mp, V4(x.data(), {1, 2, 1, 32}), pos, "backward: head dim");
  backward(empty, vx, pos, "backward: empty plan");
}

TEST(TryApplyMrope, AcceptedEqualsThrowingForm) {
  const posenc::mrope_plan mp(plan16(), {2, 3, 3}, posenc::mrope_layout::interleaved);
  const std::array<index_t, 4> shape{2, 3, 2, 16};
  const std::vector<float> x0 = random_values<float>(2 * 3 * 2 * 16, 42);
  const std::int64_t ids[2 * 3 * 3] = {5, 6, 7, 1, 2, 3, 9, 9, 9, 40000, 40001, 40002, 0, 0, 0, 7, 8, 900};
  const auto pos = posenc::mrope_positions::per_token(ids, 2, 3);
  {
    std::vector<float> a = x0, b = x0;
    expect_ok(posenc::try_apply_mrope(mp, V4(a.data(), shape), pos), "in place");
    posenc::apply_mrope(mp, V4(b.data(), shape), pos);
    EXPECT_TRUE(same_bits(a, b));
    EXPECT_FALSE(same_bits(a, x0)) << "nothing was rotated";
  }
  {
    std::vector<float> a(x0.size(), 0.0f), b(x0.size(), 1.0f);
    expect_ok(posenc::try_apply_mrope(mp, C4(x0.data(), shape), V4(a.data(), shape), pos), "out of place");
    posenc::apply_mrope(mp, C4(x0.data(), shape), V4(b.data(), shape), pos);
    EXPECT_TRUE(same_bits(a, b));
    // Into bfloat16 (one rounding), as apply_rope's out-of-place form.
    std::vector<Eigen::bfloat16> c(x0.size()), d(x0.size());
    expect_ok(posenc::try_apply_mrope(mp, C4(x0.data(), shape), posenc::strided_view<Eigen::bfloat16, 4>(c.data(), shape), pos),
              "out of place into bfloat16");
    posenc::apply_mrope(mp, C4(x0.data(), shape), posenc::strided_view<Eigen::bfloat16, 4>(d.data(), shape), pos);
    EXPECT_TRUE(same_bits(c, d));
    for (std::size_t i = 0; i < c.size(); ++i)
      EXPECT_NEAR(static_cast<double>(static_cast<float>(c[i])), static_cast<double>(a[i]), 1e-5 + std::fabs(a[i]) * 0x1p-8) << i;
  }
  {
    std::vector<float> qa = x0, ka = x0, qb = x0, kb = x0;
    expect_ok(posenc::try_apply_mrope_qk(mp, V4(qa.data(), shape), V4(ka.data(), shape), pos), "qk");
    posenc::apply_mrope_qk(mp, V4(qb.data(), shape), V4(kb.data(), shape), pos);
    EXPECT_TRUE(same_bits(qa, qb));
    EXPECT_TRUE(same_bits(ka, kb));
  }
  {
    std::vector<float> a = x0, b = x0;
    expect_ok(posenc::try_apply_mrope_backward(mp, V4(a.data(), shape), pos), "backward");
    posenc::apply_mrope_backward(mp, V4(b.data(), shape), pos);
    EXPECT_TRUE(same_bits(a, b));
  }
  // Empty batch with null positions: nothing to check against, accepted by both.
  std::vector<float> none;
  expect_ok(posenc::try_apply_mrope(mp, V4(none.data(), {0, 3, 2, 16}), posenc::mrope_positions{}), "empty batch");
}

}  // namespace
