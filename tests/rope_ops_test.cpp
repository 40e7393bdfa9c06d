// KV-cache operations and layout conversion: context shift, re-rotation between plans, interleaved <->
// half-split conversion of tensors and of q/k projection weights; their try_ forms (no-throw API): a rejected
// input gives the throwing form's message as an invalid_argument status and writes nothing, an accepted one
// gives the throwing form's bits.
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <posenc/posenc.hpp>

#include "test_util.hpp"

namespace {

using posenc::index_t;
using namespace posenc_test;

std::vector<double> random_vector(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(n);
  for (double& x : v) x = u(gen);
  return v;
}

// Golden-based: the golden output y of a per-token case, shifted back by its own positions, is the golden
// input x (a rotation by -p undoes the rotation by p; magnitude 1).
TEST(ShiftRope, UndoesGoldenRotation) {
  for (const char* name : {"interleaved_per_token", "half_split_per_token", "half_split_window"}) {
    const auto cases = load_golden("rope_basic.txt");
    const golden_case& c = find_case(cases, name);
    const auto plan = posenc::make_rope_plan(rope_config_of(c));
    const auto& ys = c.array("y");
    const auto& pos = c.array("positions");
    std::vector<std::int64_t> deltas(pos.ivalues.size());
    for (std::size_t i = 0; i < deltas.size(); ++i) deltas[i] = -pos.ivalues[i];
    std::vector<float> k = to_storage<float>(ys);
    posenc::shift_rope(plan, posenc::strided_view<float, 4>(k.data(), {ys.shape[0], ys.shape[1], ys.shape[2], ys.shape[3]}),
                       deltas.data(), pos.shape[0], pos.shape[1]);
    const double err = expect_close(k, c.array("x"), std::string(name) + " shifted back");
    EXPECT_LT(err, 2e-6);
  }
}

// Golden-based: the `offset` case (positions 7 + l) shifted by -7 equals its input rotated at positions l,
// and shifting the `full` case (positions l) by +7 equals the golden rotation at 7 + l of the same x.
TEST(ShiftRope, UniformDeltaComposes) {
  const auto cases = load_golden("rope_basic.txt");
  const golden_case& c = find_case(cases, "half_split_full");
  const auto plan = posenc::make_rope_plan(rope_config_of(c));
  const auto& ys = c.array("y");
  const std::array<index_t, 4> shape{ys.shape[0], ys.shape[1], ys.shape[2], ys.shape[3]};
  std::vector<double> shifted = ys.values;
  posenc::shift_rope(plan, posenc::strided_view<double, 4>(shifted.data(), shape), 7);
  std::vector<double> direct = c.array("x").values;
  posenc::apply_rope(plan, posenc::strided_view<double, 4>(direct.data(), shape), posenc::positions::offset(7));
  for (std::size_t i = 0; i < direct.size(); ++i) EXPECT_NEAR(shifted[i], direct[i], 1e-13) << i;
}

TEST(ShiftRope, DoesNotReapplyMagnitude) {
  posenc::rope_config cfg;
  cfg.head_dim = 16;
  cfg.scaling = posenc::rope_scaling::yarn(4.0, 64);
  const auto plan = posenc::make_rope_plan(cfg);
  ASSERT_GT(plan.magnitude(), 1.0);
  const auto x = random_vector(16, 3);
  std::vector<double> a = x, b = x;
  posenc::strided_view<double, 4> va(a.data(), {1, 1, 1, 16}), vb(b.data(), {1, 1, 1, 16});
  posenc::apply_rope(plan, va, posenc::positions::offset(10));
  posenc::shift_rope(plan, va, 90);
  posenc::apply_rope(plan, vb, posenc::positions::offset(100));
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-13) << i;
}

// LongRoPE short -> long switch on the golden longrope_long case: keys rotated with the short plan and
// re-rotated equal the golden rotation with the long factors and long magnitude.
TEST(RerotateRope, LongRopeSwitchMatchesGolden) {
  const auto cases = load_golden("rope_scaling.txt");
  const golden_case& c = find_case(cases, "longrope_long");
  const auto cfg = rope_config_of(c);
  const auto long_plan = posenc::make_rope_plan(cfg, c.integer("seq_len"));
  const auto short_plan = posenc::make_rope_plan(cfg, 16);
  ASSERT_NE(short_plan.inv_freq(), long_plan.inv_freq());
  const auto& xs = c.array("x");
  const std::array<index_t, 4> shape{xs.shape[0], xs.shape[1], xs.shape[2], xs.shape[3]};
  const auto pos = positions_of(c);
  std::vector<float> k = to_storage<float>(xs);
  posenc::strided_view<float, 4> vk(k.data(), shape);
  posenc::apply_rope(short_plan, vk, pos);
  posenc::rerotate_rope(short_plan, long_plan, vk, pos);
  expect_close(k, c.array("y"), "longrope short->long", angle_error_bound(c));
}

TEST(RerotateRope, DynamicNtkGrowthEqualsFreshRotation) {
  posenc::rope_config cfg;
  cfg.head_dim = 64;
  cfg.scaling = posenc::rope_scaling::dynamic_ntk(4.0, 2048);
  const auto before = posenc::make_rope_plan(cfg, 2048);
  const auto after = posenc::make_rope_plan(cfg, 6000);
  const auto x = random_vector(3 * 2 * 64, 5);
  const std::int64_t ids[] = {17, 2047, 5999};
  const auto pos = posenc::positions::per_token(ids, 1, 3);
  std::vector<double> a = x, b = x;
  posenc::strided_view<double, 4> va(a.data(), {1, 3, 2, 64}), vb(b.data(), {1, 3, 2, 64});
  posenc::apply_rope(before, va, pos);
  posenc::rerotate_rope(before, after, va, pos);
  posenc::apply_rope(after, vb, pos);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-11) << i;
}

// The apply-time form (issue 21): the plan follows the length as HF re-plans per forward, `changed` says when
// cached keys need the re-rotation, and the replanned plan is exactly make_rope_plan at that length.
TEST(ReplanRope, FollowsTheLengthAndReportsChanges) {
  posenc::rope_config cfg;
  cfg.head_dim = 64;
  cfg.scaling = posenc::rope_scaling::dynamic_ntk(4.0, 2048);
  posenc::rope_plan plan;
  bool changed = false;
  ASSERT_TRUE(posenc::try_replan_rope(cfg, 100, plan, changed).ok());
  EXPECT_TRUE(changed);  // from empty
  const double* storage = plan.inv_freq().data();
  ASSERT_TRUE(posenc::try_replan_rope(cfg, 2048, plan, changed).ok());
  EXPECT_FALSE(changed);  // n <= M: the base is unchanged
  ASSERT_TRUE(posenc::try_replan_rope(cfg, 6000, plan, changed).ok());
  EXPECT_TRUE(changed);
  EXPECT_EQ(plan.inv_freq(), posenc::make_rope_plan(cfg, 6000).inv_freq());
  EXPECT_EQ(plan.inv_freq().data(), storage);  // storage reused: no allocation once sized
  ASSERT_TRUE(posenc::try_replan_rope(cfg, 6000, plan, changed).ok());
  EXPECT_FALSE(changed);
  const posenc::rope_plan kept = plan;
  EXPECT_FALSE(posenc::try_replan_rope(cfg, 0, plan, changed).ok());  // no length: rejected, plan kept
  EXPECT_FALSE(changed);
  EXPECT_EQ(plan.inv_freq(), kept.inv_freq());

  cfg.scaling = posenc::rope_scaling::longrope({1, 1, 1, 1}, {2, 3, 4, 5}, 4096, 8.0);
  cfg.head_dim = 8;
  ASSERT_TRUE(posenc::try_replan_rope(cfg, 4096, plan, changed).ok());
  ASSERT_TRUE(posenc::try_replan_rope(cfg, 4096, plan, changed).ok());
  EXPECT_FALSE(changed);
  ASSERT_TRUE(posenc::try_replan_rope(cfg, 4097, plan, changed).ok());
  EXPECT_TRUE(changed);  // short -> long factors
}

TEST(RerotateRope, RejectsDifferentLayouts) {
  posenc::rope_config a;
  a.head_dim = 16;
  posenc::rope_config b = a;
  b.style = posenc::rope_style::interleaved;
  std::vector<float> k(16, 0.5f);
  EXPECT_THROW(posenc::rerotate_rope(posenc::make_rope_plan(a), posenc::make_rope_plan(b),
                                     posenc::strided_view<float, 4>(k.data(), {1, 1, 1, 16}), posenc::positions::offset(0)),
               posenc::argument_error);
  b = a;
  b.rotary_dim = 8;
  EXPECT_THROW(posenc::rerotate_rope(posenc::make_rope_plan(a), posenc::make_rope_plan(b),
                                     posenc::strided_view<float, 4>(k.data(), {1, 1, 1, 16}), posenc::positions::offset(0)),
               posenc::argument_error);
  for (float v : k) EXPECT_EQ(v, 0.5f);
}

// Golden-based: converting the interleaved golden output to half-split equals half-split RoPE of the
// converted input, which in turn is checked against the golden rotation of the same values.
TEST(ConvertRopeLayout, CommutesWithRope) {
  const auto cases = load_golden("rope_basic.txt");
  for (const char* name : {"interleaved_per_token", "interleaved_window"}) {
    const golden_case& c = find_case(cases, name);
    const auto& xs = c.array("x");
    const std::array<index_t, 4> shape{xs.shape[0], xs.shape[1], xs.shape[2], xs.shape[3]};
    const index_t r = c.integer("rotary_dim"), o = c.integer("rotary_offset");
    std::vector<double> y_conv(xs.values.size()), x_conv(xs.values.size());
    posenc::convert_rope_layout(posenc::strided_view<const double, 4>(c.array("y").values.data(), shape),
                                posenc::strided_view<double, 4>(y_conv.data(), shape), r, o,
                                posenc::rope_style::interleaved, posenc::rope_style::half_split);
    posenc::convert_rope_layout(posenc::strided_view<const double, 4>(xs.values.data(), shape),
                                posenc::strided_view<double, 4>(x_conv.data(), shape), r, o,
                                posenc::rope_style::interleaved, posenc::rope_style::half_split);
    auto cfg = rope_config_of(c);
    cfg.style = posenc::rope_style::half_split;
    posenc::apply_rope(posenc::make_rope_plan(cfg), posenc::strided_view<double, 4>(x_conv.data(), shape), positions_of(c));
    for (std::size_t i = 0; i < x_conv.size(); ++i) EXPECT_NEAR(x_conv[i], y_conv[i], 1e-12) << name << " " << i;
    // And back: half-split -> interleaved recovers the golden output exactly (a permutation).
    std::vector<double> back(x_conv.size());
    posenc::convert_rope_layout(posenc::strided_view<const double, 4>(y_conv.data(), shape),
                                posenc::strided_view<double, 4>(back.data(), shape), r, o,
                                posenc::rope_style::half_split, posenc::rope_style::interleaved);
    EXPECT_EQ(back, c.array("y").values) << name;
  }
}

TEST(ConvertRopeLayout, PermutationByHand) {
  // D = 6, window of 4 at offset 1: interleaved (a0 b0 a1 b1) -> half-split (a0 a1 b0 b1).
  const std::vector<float> in{9, 10, 11, 20, 21, 99};
  std::vector<float> out(6, 0.0f);
  posenc::convert_rope_layout(posenc::strided_view<const float, 4>(in.data(), {1, 1, 1, 6}),
                              posenc::strided_view<float, 4>(out.data(), {1, 1, 1, 6}), 4, 1,
                              posenc::rope_style::interleaved, posenc::rope_style::half_split);
  EXPECT_EQ(out, (std::vector<float>{9, 10, 20, 11, 21, 99}));
}

// The acceptance test: a model whose q/k projection rows are permuted to the other layout gives
// the same attention scores with the other RoPE style (GQA: 4 query heads, 2 key heads; partial rotary).
TEST(ConvertRopeWeightLayout, AttentionScoresEqual) {
  const index_t hq = 4, hk = 2, d = 12, r = 8, in = 10, len = 5;
  const auto wq = random_vector(static_cast<std::size_t>(hq * d * in), 11);
  const auto wk = random_vector(static_cast<std::size_t>(hk * d * in), 12);
  const auto x = random_vector(static_cast<std::size_t>(len * in), 13);
  auto project = [&](const std::vector<double>& w, index_t heads) {
    std::vector<double> out(static_cast<std::size_t>(len * heads * d), 0.0);
    for (index_t l = 0; l < len; ++l)
      for (index_t row = 0; row < heads * d; ++row)
        for (index_t c = 0; c < in; ++c) out[static_cast<std::size_t>(l * heads * d + row)] += w[static_cast<std::size_t>(row * in + c)] * x[static_cast<std::size_t>(l * in + c)];
    return out;
  };
  auto scores = [&](const std::vector<double>& wq_, const std::vector<double>& wk_, posenc::rope_style style) {
    std::vector<double> q = project(wq_, hq), k = project(wk_, hk);
    posenc::rope_config cfg;
    cfg.head_dim = d;
    cfg.rotary_dim = r;
    cfg.style = style;
    posenc::apply_rope_qk(posenc::make_rope_plan(cfg), posenc::strided_view<double, 4>(q.data(), {1, len, hq, d}),
                          posenc::strided_view<double, 4>(k.data(), {1, len, hk, d}), posenc::positions::offset(3));
    std::vector<double> s;
    for (index_t h = 0; h < hq; ++h)
      for (index_t i = 0; i < len; ++i)
        for (index_t j = 0; j < len; ++j) {
          double dot = 0;
          for (index_t f = 0; f < d; ++f)
            dot += q[static_cast<std::size_t>((i * hq + h) * d + f)] * k[static_cast<std::size_t>((j * hk + h / (hq / hk)) * d + f)];
          s.push_back(dot);
        }
    return s;
  };
  std::vector<double> wq2(wq.size()), wk2(wk.size());
  posenc::convert_rope_weight_layout(posenc::strided_view<const double, 2>(wq.data(), {hq * d, in}),
                                     posenc::strided_view<double, 2>(wq2.data(), {hq * d, in}), hq, d, r, 0,
                                     posenc::rope_style::half_split, posenc::rope_style::interleaved);
  posenc::convert_rope_weight_layout(posenc::strided_view<const double, 2>(wk.data(), {hk * d, in}),
                                     posenc::strided_view<double, 2>(wk2.data(), {hk * d, in}), hk, d, r, 0,
                                     posenc::rope_style::half_split, posenc::rope_style::interleaved);
  const auto s_half = scores(wq, wk, posenc::rope_style::half_split);
  const auto s_inter = scores(wq2, wk2, posenc::rope_style::interleaved);
  ASSERT_EQ(s_half.size(), s_inter.size());
  for (std::size_t i = 0; i < s_half.size(); ++i) EXPECT_NEAR(s_half[i], s_inter[i], 1e-12) << i;
  // Without the permutation the scores differ: the test is not vacuous.
  const auto s_wrong = scores(wq, wk, posenc::rope_style::interleaved);
  double diff = 0;
  for (std::size_t i = 0; i < s_half.size(); ++i) diff = std::max(diff, std::fabs(s_half[i] - s_wrong[i]));
  EXPECT_GT(diff, 1e-3);
}

TEST(ConvertRopeLayout, RejectsBadInput) {
  std::vector<float> a(16, 1.0f), b(16, 7.0f);
  using V = posenc::strided_view<float, 4>;
  const auto il = posenc::rope_style::interleaved, hs = posenc::rope_style::half_split;
  EXPECT_THROW(posenc::convert_rope_layout(V(a.data(), {1, 1, 1, 16}), V(b.data(), {1, 1, 1, 16}), 7, 0, il, hs), posenc::argument_error);
  EXPECT_THROW(posenc::convert_rope_layout(V(a.data(), {1, 1, 1, 16}), V(b.data(), {1, 1, 1, 16}), 18, 0, il, hs), posenc::argument_error);
  EXPECT_THROW(posenc::convert_rope_layout(V(a.data(), {1, 1, 1, 16}), V(b.data(), {1, 1, 1, 16}), 8, 10, il, hs), posenc::argument_error);
  EXPECT_THROW(posenc::convert_rope_layout(V(a.data(), {1, 1, 1, 16}), V(a.data() + 1, {1, 1, 1, 15}), 8, 0, il, hs), posenc::argument_error);
  EXPECT_THROW(posenc::convert_rope_layout(V(a.data(), {1, 1, 1, 16}), V(a.data(), {1, 1, 1, 16}), 8, 0, il, hs), posenc::argument_error);
  EXPECT_THROW(posenc::convert_rope_weight_layout(posenc::strided_view<float, 2>(a.data(), {16, 1}), posenc::strided_view<float, 2>(b.data(), {16, 1}), 3, 5, 4, 0, il, hs),
               posenc::argument_error);
  for (float v : b) EXPECT_EQ(v, 7.0f);
  for (float v : a) EXPECT_EQ(v, 1.0f);
}

TEST(ShiftRope, RejectsBadInput) {
  posenc::rope_config cfg;
  cfg.head_dim = 8;
  const auto plan = posenc::make_rope_plan(cfg);
  std::vector<float> k(2 * 8, 0.25f);
  const std::int64_t deltas[] = {1, 2, 3};
  EXPECT_THROW(posenc::shift_rope(plan, posenc::strided_view<float, 4>(k.data(), {1, 2, 1, 8}), deltas, 1, 3), posenc::argument_error);
  EXPECT_THROW(posenc::shift_rope(plan, posenc::strided_view<float, 4>(k.data(), {1, 1, 2, 8}), nullptr, 1, 1), posenc::argument_error);
  EXPECT_THROW(posenc::shift_rope(plan, posenc::strided_view<float, 4>(k.data(), {1, 2, 1, 6}), 4), posenc::argument_error);
  for (float v : k) EXPECT_EQ(v, 0.25f);
}

}  // namespace

namespace {

// An empty batch writes nothing but its arguments are still checked (a negative offset is a caller bug
// whether or not this step has tokens).
TEST(ApplyRopeEmpty, StillValidatesPositions) {
  posenc::rope_config cfg;
  cfg.head_dim = 8;
  const auto plan = posenc::make_rope_plan(cfg);
  std::vector<float> none;
  posenc::strided_view<float, 4> empty(none.data(), {2, 0, 1, 8});
  EXPECT_NO_THROW(posenc::apply_rope(plan, empty, posenc::positions::offset(3)));
  EXPECT_THROW(posenc::apply_rope(plan, empty, posenc::positions::offset(-1)), posenc::argument_error);
  const std::int64_t one[] = {4};
  EXPECT_THROW(posenc::apply_rope(plan, empty, posenc::positions::per_sequence(one, 1)), posenc::argument_error);
}

}  // namespace

// ------------------------------------------------------------------------------------------ try_ forms

namespace {


posenc::rope_plan plan_of(index_t head_dim, posenc::rope_style style = posenc::rope_style::half_split, index_t rotary_dim = 0) {
  posenc::rope_config cfg;
  cfg.head_dim = head_dim;
  cfg.rotary_dim = rotary_dim;
  cfg.style = style;
  return posenc::make_rope_plan(cfg);
}

using V4 = posenc::strided_view<float, 4>;
using C4 = posenc::strided_view<const float, 4>;

static_assert(noexcept(posenc::try_shift_rope(std::declval<const posenc::rope_plan&>(), std::declval<V4>(), index_t{1})));
static_assert(noexcept(posenc::try_shift_rope(std::declval<const posenc::rope_plan&>(), std::declval<V4>(),
                                              static_cast<const std::int64_t*>(nullptr), 1, 1)));
static_assert(noexcept(posenc::try_rerotate_rope(std::declval<const posenc::rope_plan&>(), std::declval<const posenc::rope_plan&>(),
                                                 std::declval<V4>(), std::declval<const posenc::positions&>())));
static_assert(noexcept(posenc::try_convert_rope_layout(std::declval<C4>(), std::declval<V4>(), 2, 0, posenc::rope_style::interleaved,
                                                       posenc::rope_style::half_split)));
static_assert(noexcept(posenc::try_convert_rope_weight_layout(std::declval<posenc::strided_view<const float, 2>>(),
                                                              std::declval<posenc::strided_view<float, 2>>(), 1, 2, 2, 0,
                                                              posenc::rope_style::interleaved, posenc::rope_style::half_split)));

TEST(TryShiftRope, RejectsLikeThrowingFormAndWritesNothing) {
  const auto plan = plan_of(8);
  const std::vector<float> k0 = random_values<float>(2 * 3 * 2 * 8, 21);
  std::vector<float> k = k0;
  const V4 v(k.data(), {2, 3, 2, 8});
  const std::int64_t deltas[] = {1, 2, 3, 4, 5, 6};
  const auto check = [&](const posenc::status& s, const std::string& thrown, const std::string& what) {
    expect_rejection(s, thrown, what);
    EXPECT_TRUE(same_bits(k, k0)) << what << ": k was written";
  };
  const V4 d6(k.data(), {2, 3, 2, 6});
  check(posenc::try_shift_rope(plan, d6, 5), thrown_message([&] { posenc::shift_rope(plan, d6, 5); }), "head dim");
  check(posenc::try_shift_rope(posenc::rope_plan{}, v, 5), thrown_message([&] { posenc::shift_rope(posenc::rope_plan{}, v, 5); }),
        "empty plan");
  check(posenc::try_shift_rope(plan, d6, deltas, 2, 3), thrown_message([&] { posenc::shift_rope(plan, d6, deltas, 2, 3); }),
        "deltas: head dim");
  check(posenc::try_shift_rope(plan, v, deltas, 3, 2), thrown_message([&] { posenc::shift_rope(plan, v, deltas, 3, 2); }),
        "deltas shape");
  check(posenc::try_shift_rope(plan, v, deltas, 2, 3, 2), thrown_message([&] { posenc::shift_rope(plan, v, deltas, 2, 3, 2); }),
        "deltas row stride");
  check(posenc::try_shift_rope(plan, v, nullptr, 2, 3), thrown_message([&] { posenc::shift_rope(plan, v, nullptr, 2, 3); }),
        "null deltas");
  const V4 zero_stride(k.data(), {2, 3, 2, 8}, {0, 16, 8, 1});
  check(posenc::try_shift_rope(plan, zero_stride, 1), thrown_message([&] { posenc::shift_rope(plan, zero_stride, 1); }),
        "zero stride output");
}

TEST(TryShiftRope, AcceptedEqualsThrowingForm) {
  const auto plan = plan_of(12, posenc::rope_style::interleaved, 8);
  const std::vector<float> k0 = random_values<float>(2 * 3 * 2 * 12, 22);
  const std::int64_t deltas[] = {-4, 7, 100000, 0, -1, 3, 9, 9};  // row stride 4
  {
    std::vector<float> a = k0, b = k0;
    expect_ok(posenc::try_shift_rope(plan, V4(a.data(), {2, 3, 2, 12}), -300), "uniform");
    posenc::shift_rope(plan, V4(b.data(), {2, 3, 2, 12}), -300);
    EXPECT_TRUE(same_bits(a, b));
    EXPECT_FALSE(same_bits(a, k0)) << "nothing was rotated";
  }
  {
    std::vector<float> a = k0, b = k0;
    expect_ok(posenc::try_shift_rope(plan, V4(a.data(), {2, 3, 2, 12}), deltas, 2, 3, 4), "per token");
    posenc::shift_rope(plan, V4(b.data(), {2, 3, 2, 12}), deltas, 2, 3, 4);
    EXPECT_TRUE(same_bits(a, b));
    EXPECT_FALSE(same_bits(a, k0)) << "nothing was rotated";
  }
  // Empty k with null deltas: nothing to do, accepted by both.
  std::vector<float> none;
  expect_ok(posenc::try_shift_rope(plan, V4(none.data(), {0, 3, 2, 12}), nullptr, 0, 3), "empty");
}

TEST(TryRerotateRope, RejectsLikeThrowingFormAndWritesNothing) {
  const auto from = plan_of(16);
  const auto to = plan_of(16, posenc::rope_style::interleaved);
  const auto to8 = plan_of(16, posenc::rope_style::half_split, 8);
  const std::vector<float> k0 = random_values<float>(2 * 16, 23);
  std::vector<float> k = k0;
  const V4 v(k.data(), {1, 2, 1, 16});
  const auto pos = posenc::positions::offset(0);
  const auto check = [&](const posenc::rope_plan& a, const posenc::rope_plan& b, const V4& x, const posenc::positions& p,
                         const std::string& what) {
    expect_rejection(posenc::try_rerotate_rope(a, b, x, p), thrown_message([&] { posenc::rerotate_rope(a, b, x, p); }), what);
    EXPECT_TRUE(same_bits(k, k0)) << what << ": k was written";
  };
  check(from, to, v, pos, "style");
  check(from, to8, v, pos, "rotary dim");
  check(posenc::rope_plan{}, from, v, pos, "empty from");
  check(from, posenc::rope_plan{}, v, pos, "empty to");
  check(from, from, V4(k.data(), {1, 2, 2, 8}), pos, "head dim");
  check(from, from, v, posenc::positions::offset(-2), "negative offset");
  const std::int64_t ids[] = {3, -1};
  check(from, from, v, posenc::positions::per_token(ids, 1, 2), "negative position");
  check(from, from, v, posenc::positions::per_token(ids, 2, 1), "positions shape");
}

TEST(TryRerotateRope, AcceptedEqualsThrowingForm) {
  posenc::rope_config cfg;
  cfg.head_dim = 32;
  cfg.scaling = posenc::rope_scaling::dynamic_ntk(4.0, 256);
  const auto before = posenc::make_rope_plan(cfg, 256);
  const auto after = posenc::make_rope_plan(cfg, 3000);
  const std::vector<float> k0 = random_values<float>(3 * 2 * 32, 24);
  const std::int64_t ids[] = {17, 255, 2999};
  const auto pos = posenc::positions::per_token(ids, 1, 3);
  std::vector<float> a = k0, b = k0;
  expect_ok(posenc::try_rerotate_rope(before, after, V4(a.data(), {1, 3, 2, 32}), pos), "rerotate");
  posenc::rerotate_rope(before, after, V4(b.data(), {1, 3, 2, 32}), pos);
  EXPECT_TRUE(same_bits(a, b));
  EXPECT_FALSE(same_bits(a, k0)) << "nothing was rotated";
}

TEST(TryConvertRopeLayout, RejectsLikeThrowingFormAndWritesNothing) {
  const std::vector<float> in = random_values<float>(2 * 16, 25);
  std::vector<float> out(2 * 16, -9.5f);
  const std::vector<float> out0 = out;
  const auto il = posenc::rope_style::interleaved, hs = posenc::rope_style::half_split;
  const C4 ci(in.data(), {1, 2, 1, 16});
  const V4 vo(out.data(), {1, 2, 1, 16});
  const auto check = [&](const auto& x, const V4& y, index_t r, index_t o, const std::string& what) {
    expect_rejection(posenc::try_convert_rope_layout(x, y, r, o, il, hs),
                     thrown_message([&] { posenc::convert_rope_layout(x, y, r, o, il, hs); }), what);
    EXPECT_TRUE(same_bits(out, out0)) << what << ": out was written";
  };
  check(ci, vo, 7, 0, "odd rotary dim");
  check(ci, vo, 0, 0, "zero rotary dim");
  check(ci, vo, 18, 0, "rotary dim past head");
  check(ci, vo, 8, 10, "offset");
  check(ci, V4(out.data(), {1, 1, 2, 16}), 8, 0, "shape");
  check(C4(out.data(), {1, 2, 1, 16}), V4(out.data() + 1, {1, 2, 1, 15}, {32, 16, 16, 1}), 8, 0, "shape (overlap)");
  check(C4(out.data(), {1, 2, 1, 16}), vo, 8, 0, "in place");
  check(C4(out.data(), {1, 1, 1, 16}), V4(out.data() + 8, {1, 1, 1, 16}), 8, 0, "overlap");
  check(ci, V4(out.data(), {1, 2, 1, 16}, {32, 0, 16, 1}), 8, 0, "zero stride output");
  check(C4(nullptr, {1, 2, 1, 16}), vo, 8, 0, "null in");
  check(C4(in.data(), {1, 2, 1, -16}), V4(out.data(), {1, 2, 1, -16}), 8, 0, "negative extent");
}

TEST(TryConvertRopeLayout, AcceptedEqualsThrowingForm) {
  const std::vector<double> in = random_values<double>(2 * 3 * 4 * 10, 26);
  std::vector<double> a(in.size(), 0.0), b(in.size(), 1.0);
  const std::array<index_t, 4> shape{2, 3, 4, 10};
  for (const auto& [from, to] : {std::array<posenc::rope_style, 2>{posenc::rope_style::interleaved, posenc::rope_style::half_split},
                                 {posenc::rope_style::half_split, posenc::rope_style::interleaved}}) {
    expect_ok(posenc::try_convert_rope_layout(posenc::strided_view<const double, 4>(in.data(), shape),
                                              posenc::strided_view<double, 4>(a.data(), shape), 6, 2, from, to),
              "convert");
    posenc::convert_rope_layout(posenc::strided_view<const double, 4>(in.data(), shape),
                                posenc::strided_view<double, 4>(b.data(), shape), 6, 2, from, to);
    EXPECT_TRUE(same_bits(a, b));
    EXPECT_FALSE(same_bits(a, in)) << "nothing was permuted";
  }
}

TEST(TryConvertRopeWeightLayout, RejectsLikeThrowingFormAndWritesNothing) {
  using W = posenc::strided_view<const float, 2>;
  using Wo = posenc::strided_view<float, 2>;
  const std::vector<float> in = random_values<float>(16 * 3, 27);
  std::vector<float> out(16 * 3, 4.5f);
  const std::vector<float> out0 = out;
  const auto il = posenc::rope_style::interleaved, hs = posenc::rope_style::half_split;
  const W wi(in.data(), {16, 3});
  const Wo wo(out.data(), {16, 3});
  const auto check = [&](const W& x, const Wo& y, index_t heads, index_t d, index_t r, index_t o, const std::string& what) {
    expect_rejection(posenc::try_convert_rope_weight_layout(x, y, heads, d, r, o, il, hs),
                     thrown_message([&] { posenc::convert_rope_weight_layout(x, y, heads, d, r, o, il, hs); }), what);
    EXPECT_TRUE(same_bits(out, out0)) << what << ": out was written";
  };
  check(wi, wo, 0, 16, 8, 0, "num_heads");
  check(wi, wo, 2, 0, 8, 0, "head_dim");
  check(wi, wo, 2, 8, 10, 0, "rotary dim past head");
  check(wi, wo, 2, 8, 4, 6, "offset");
  check(wi, wo, 3, 5, 4, 0, "rows");
  check(wi, Wo(out.data(), {16, 2}), 2, 8, 8, 0, "shape");
  check(W(out.data(), {8, 3}), Wo(out.data() + 6, {8, 3}), 1, 8, 8, 0, "overlap");
  check(wi, Wo(out.data(), {16, 3}, {0, 1}), 2, 8, 8, 0, "zero stride output");
  check(W(in.data(), {16, 3}, {3, -1}), wo, 2, 8, 8, 0, "negative stride");
}

TEST(TryConvertRopeWeightLayout, AcceptedEqualsThrowingForm) {
  const std::vector<float> in = random_values<float>(4 * 12 * 5, 28);
  std::vector<float> a(in.size(), 0.0f), b(in.size(), 1.0f);
  expect_ok(posenc::try_convert_rope_weight_layout(posenc::strided_view<const float, 2>(in.data(), {48, 5}),
                                                   posenc::strided_view<float, 2>(a.data(), {48, 5}), 4, 12, 8, 2,
                                                   posenc::rope_style::half_split, posenc::rope_style::interleaved),
            "weights");
  posenc::convert_rope_weight_layout(posenc::strided_view<const float, 2>(in.data(), {48, 5}),
                                     posenc::strided_view<float, 2>(b.data(), {48, 5}), 4, 12, 8, 2,
                                     posenc::rope_style::half_split, posenc::rope_style::interleaved);
  EXPECT_TRUE(same_bits(a, b));
  EXPECT_FALSE(same_bits(a, in)) << "nothing was permuted";
  // Strided columns (a transposed view) take the element loop: the same permutation.
  std::vector<float> c(in.size(), 0.0f);
  expect_ok(posenc::try_convert_rope_weight_layout(posenc::strided_view<const float, 2>(in.data(), {48, 5}),
                                                   posenc::strided_view<float, 2>(c.data(), {48, 5}, {1, 48}), 4, 12, 8, 2,
                                                   posenc::rope_style::half_split, posenc::rope_style::interleaved),
            "strided weights");
  for (index_t r = 0; r < 48; ++r)
    for (index_t col = 0; col < 5; ++col)
      EXPECT_EQ(c[static_cast<std::size_t>(col * 48 + r)], a[static_cast<std::size_t>(r * 5 + col)]) << r << ", " << col;
}

}  // namespace
