// KV-cache operations and layout conversion: context shift, re-rotation between plans, interleaved <->
// half-split conversion of tensors and of q/k projection weights.
#include <array>
#include <cmath>
#include <random>
#include <string>
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
