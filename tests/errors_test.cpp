// Rejected inputs: every public entry throws posenc::argument_error (a std::invalid_argument) whose message
// names the function, the argument and its value, and writes nothing: output buffers are filled with a
// sentinel before the call and compared after; a plan rebuilt in place keeps its old contents.
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <posenc/posenc.hpp>

namespace {

using posenc::index_t;
using posenc::rope_style;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

static_assert(std::is_base_of_v<std::invalid_argument, posenc::argument_error>,
              "posenc::argument_error derives from std::invalid_argument");

// Runs `f`, which must throw posenc::argument_error; caught as std::invalid_argument (so the is-a holds at run
// time too) and checked to contain every one of `parts`.
template <class F>
void expect_rejected(F&& f, const std::vector<std::string>& parts, const std::string& what = "") {
  bool thrown = false;
  try {
    f();
  } catch (const std::invalid_argument& e) {
    thrown = true;
    EXPECT_NE(dynamic_cast<const posenc::argument_error*>(&e), nullptr) << what << ": not a posenc::argument_error: " << e.what();
    const std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << what << ": message \"" << msg << "\" lacks \"" << p << "\"";
  }
  EXPECT_TRUE(thrown) << what << ": no exception";
}

/// A float (N, L, H, D) buffer filled with a sentinel, to check that nothing was written.
struct sentinel_tensor {
  static constexpr float kSentinel = -777.25f;
  std::array<index_t, 4> shape;
  std::vector<float> data;
  explicit sentinel_tensor(std::array<index_t, 4> s)
      : shape(s), data(static_cast<std::size_t>(s[0] * s[1] * s[2] * s[3]), kSentinel) {}
  posenc::strided_view<float, 4> view() { return {data.data(), shape}; }
  posenc::strided_view<const float, 4> cview() const { return {data.data(), shape}; }
  bool untouched() const {
    for (float v : data)
      if (!(v == kSentinel)) return false;
    return true;
  }
};

/// A float input with distinct values, to check that an input is untouched.
/// (Compared with a saved copy: recomputing 0.25 + 0.001 i may contract to an FMA in one place and not the
/// other, as clang does.)
struct input_tensor {
  std::array<index_t, 4> shape;
  std::vector<float> data;
  std::vector<float> original;
  explicit input_tensor(std::array<index_t, 4> s) : shape(s), data(static_cast<std::size_t>(s[0] * s[1] * s[2] * s[3])) {
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = 0.25f + 0.001f * static_cast<float>(i);
    original = data;
  }
  posenc::strided_view<const float, 4> view() const { return {data.data(), shape}; }
  bool untouched() const { return data == original; }
};

posenc::rope_config make_cfg(index_t head_dim, index_t rotary_dim = 0, index_t rotary_offset = 0,
                             const posenc::rope_scaling& scaling = {}) {
  posenc::rope_config cfg;
  cfg.head_dim = head_dim;
  cfg.rotary_dim = rotary_dim;
  cfg.rotary_offset = rotary_offset;
  cfg.scaling = scaling;
  return cfg;
}

/// A plan of 16 features (window [2, 10), interleaved, YaRN magnitude) to rebuild into.
posenc::rope_plan existing_plan() {
  auto cfg = make_cfg(16, 8, 2, posenc::rope_scaling::yarn(4.0, 512));
  cfg.style = rope_style::interleaved;
  return posenc::make_rope_plan(cfg);
}

// make_rope_plan(cfg, seq_len) throws with `parts` in its message, and building into an existing plan
// throws the same way and leaves that plan (values and storage) unchanged.
void expect_config_rejected(const posenc::rope_config& cfg, const std::vector<std::string>& parts, index_t seq_len = 0) {
  std::vector<std::string> all{"posenc::make_rope_plan"};
  all.insert(all.end(), parts.begin(), parts.end());
  expect_rejected([&] { (void)posenc::make_rope_plan(cfg, seq_len); }, all, "fresh plan");
  posenc::rope_plan plan = existing_plan();
  const posenc::rope_plan before = plan;
  const double* storage = plan.inv_freq().data();
  expect_rejected([&] { posenc::make_rope_plan(cfg, seq_len, plan); }, all, "existing plan");
  EXPECT_EQ(plan.head_dim(), before.head_dim());
  EXPECT_EQ(plan.rotary_dim(), before.rotary_dim());
  EXPECT_EQ(plan.rotary_offset(), before.rotary_offset());
  EXPECT_EQ(plan.style(), before.style());
  EXPECT_EQ(plan.magnitude(), before.magnitude());
  EXPECT_EQ(plan.logit_scale(), before.logit_scale());
  EXPECT_EQ(plan.inv_freq(), before.inv_freq());
  EXPECT_EQ(plan.inv_freq().data(), storage);
}

posenc::rope_plan plan16() { return posenc::make_rope_plan(make_cfg(16)); }

// ------------------------------------------------------------------------------------------ rope_config

TEST(RopeConfigErrors, OddRotaryDim) { expect_config_rejected(make_cfg(128, 7), {"rotary_dim=7"}); }

TEST(RopeConfigErrors, NegativeRotaryDim) { expect_config_rejected(make_cfg(128, -4), {"rotary_dim=-4"}); }

TEST(RopeConfigErrors, RotaryDimPastHeadDim) { expect_config_rejected(make_cfg(128, 130), {"rotary_dim=130", "head_dim=128"}); }

TEST(RopeConfigErrors, RotaryWindowPastHead) {
  expect_config_rejected(make_cfg(16, 8, 10), {"rotary_offset=10", "rotary_dim=8", "head_dim=16"});
  expect_config_rejected(make_cfg(16, 16, 2), {"rotary_offset=2"});
  expect_config_rejected(make_cfg(16, 8, -2), {"rotary_offset=-2"});
}

TEST(RopeConfigErrors, HeadDimNotPositive) {
  expect_config_rejected(make_cfg(0), {"head_dim=0"});
  expect_config_rejected(make_cfg(-8), {"head_dim=-8"});
}

TEST(RopeConfigErrors, BaseNotAboveOne) {
  for (double b : {1.0, 0.5, 0.0, -10000.0}) {
    auto cfg = make_cfg(16);
    cfg.base = b;
    std::ostringstream v;
    v.precision(17);
    v << "base=" << b;
    expect_config_rejected(cfg, {v.str()});
  }
}

TEST(RopeConfigErrors, BaseNotFinite) {
  auto cfg = make_cfg(16);
  cfg.base = kNaN;
  expect_config_rejected(cfg, {"base=nan"});
  cfg.base = kInf;
  expect_config_rejected(cfg, {"base=inf"});
}

TEST(RopeConfigErrors, NegativeSeqLen) { expect_config_rejected(make_cfg(16), {"seq_len=-1"}, -1); }

TEST(RopeConfigErrors, LinearFactor) {
  expect_config_rejected(make_cfg(16, 0, 0, posenc::rope_scaling::linear(0.0)), {"scaling.factor=0"});
  expect_config_rejected(make_cfg(16, 0, 0, posenc::rope_scaling::linear(-2.0)), {"scaling.factor=-2"});
  expect_config_rejected(make_cfg(16, 0, 0, posenc::rope_scaling::linear(kNaN)), {"scaling.factor=nan"});
  expect_config_rejected(make_cfg(16, 0, 0, posenc::rope_scaling::linear(kInf)), {"scaling.factor=inf"});
}

TEST(RopeConfigErrors, NtkFactor) {
  expect_config_rejected(make_cfg(16, 0, 0, posenc::rope_scaling::ntk(0.0)), {"scaling.factor=0"});
  expect_config_rejected(make_cfg(16, 0, 0, posenc::rope_scaling::ntk(kNaN)), {"scaling.factor=nan"});
  expect_config_rejected(make_cfg(16, 0, 0, posenc::rope_scaling::ntk(-kInf)), {"scaling.factor=-inf"});
}

TEST(RopeConfigErrors, NtkNeedsRotaryDimAboveTwo) {
  expect_config_rejected(make_cfg(16, 2, 0, posenc::rope_scaling::ntk(2.0)), {"rotary_dim=2"});
  expect_config_rejected(make_cfg(16, 2, 0, posenc::rope_scaling::dynamic_ntk(2.0, 1024)), {"rotary_dim=2"});
}

TEST(RopeConfigErrors, DynamicNtkFactor) {
  expect_config_rejected(make_cfg(16, 0, 0, posenc::rope_scaling::dynamic_ntk(0.0, 1024)), {"scaling.factor=0"});
  expect_config_rejected(make_cfg(16, 0, 0, posenc::rope_scaling::dynamic_ntk(kNaN, 1024)), {"scaling.factor=nan"}, 5000);
  expect_config_rejected(make_cfg(16, 0, 0, posenc::rope_scaling::dynamic_ntk(-1.0, 1024, posenc::dynamic_ntk_policy::fixed_at_max)),
                         {"scaling.factor=-1"});
}

TEST(RopeConfigErrors, YarnFactor) {
  expect_config_rejected(make_cfg(16, 0, 0, posenc::rope_scaling::yarn(0.0, 1024)), {"scaling.factor=0"});
  expect_config_rejected(make_cfg(16, 0, 0, posenc::rope_scaling::yarn(kNaN, 1024)), {"scaling.factor=nan"});
  expect_config_rejected(make_cfg(16, 0, 0, posenc::rope_scaling::deepseek_yarn(kInf, 1024)), {"scaling.factor=inf"});
}

TEST(RopeConfigErrors, YarnBetas) {
  expect_config_rejected(make_cfg(16, 0, 0, posenc::rope_scaling::yarn(4.0, 1024, 0.0, 1.0)), {"scaling.beta_fast=0"});
  expect_config_rejected(make_cfg(16, 0, 0, posenc::rope_scaling::yarn(4.0, 1024, kNaN, 1.0)), {"scaling.beta_fast=nan"});
  expect_config_rejected(make_cfg(16, 0, 0, posenc::rope_scaling::yarn(4.0, 1024, 32.0, -1.0)), {"scaling.beta_slow=-1"});
  expect_config_rejected(make_cfg(16, 0, 0, posenc::rope_scaling::yarn(4.0, 1024, 32.0, kInf)), {"scaling.beta_slow=inf"});
}

TEST(RopeConfigErrors, YarnAttentionFactor) {
  for (double a : {0.0, -1.0, kNaN, kInf}) {
    auto s = posenc::rope_scaling::yarn(4.0, 1024);
    s.attention_factor = a;
    std::ostringstream v;
    v << "scaling.attention_factor=" << a;
    expect_config_rejected(make_cfg(16, 0, 0, s), {v.str()});
    s.type = posenc::rope_scaling_type::deepseek_yarn;
    expect_config_rejected(make_cfg(16, 0, 0, s), {v.str()});
  }
}

TEST(RopeConfigErrors, YarnMscale) {
  expect_config_rejected(make_cfg(16, 0, 0, posenc::rope_scaling::deepseek_yarn(40.0, 4096, -1.0)), {"scaling.mscale=-1"});
  expect_config_rejected(make_cfg(16, 0, 0, posenc::rope_scaling::deepseek_yarn(40.0, 4096, 1.0, kNaN)),
                         {"scaling.mscale_all_dim=nan"});
}

TEST(RopeConfigErrors, Llama3Factors) {
  expect_config_rejected(make_cfg(16, 0, 0, posenc::rope_scaling::llama3(0.0, 1.0, 4.0, 8192)), {"scaling.factor=0"});
  expect_config_rejected(make_cfg(16, 0, 0, posenc::rope_scaling::llama3(8.0, 0.0, 4.0, 8192)), {"scaling.low_freq_factor=0"});
  expect_config_rejected(make_cfg(16, 0, 0, posenc::rope_scaling::llama3(8.0, kNaN, 4.0, 8192)), {"scaling.low_freq_factor=nan"});
  expect_config_rejected(make_cfg(16, 0, 0, posenc::rope_scaling::llama3(8.0, 1.0, kInf, 8192)), {"scaling.high_freq_factor=inf"});
  expect_config_rejected(make_cfg(16, 0, 0, posenc::rope_scaling::llama3(8.0, 1.0, -4.0, 8192)), {"scaling.high_freq_factor=-4"});
}

TEST(RopeConfigErrors, Llama3LowAboveHigh) {
  expect_config_rejected(make_cfg(16, 0, 0, posenc::rope_scaling::llama3(8.0, 4.0, 1.0, 8192)),
                         {"scaling.low_freq_factor=4", "high_freq_factor=1"});
  // low == high is allowed (an empty blending band).
  EXPECT_NO_THROW((void)posenc::make_rope_plan(make_cfg(16, 0, 0, posenc::rope_scaling::llama3(8.0, 2.0, 2.0, 8192))));
}

posenc::rope_scaling longrope4(std::vector<double> s, std::vector<double> l, double factor = 4.0) {
  return posenc::rope_scaling::longrope(std::move(s), std::move(l), 4096, factor);
}

TEST(RopeConfigErrors, LongRopeArrayLength) {
  // R = 8: 4 pairs.
  expect_config_rejected(make_cfg(16, 8, 0, longrope4({1, 1, 1}, {1, 2, 3, 4})), {"scaling.short_factor.size()=3", "rotary_dim/2=4"});
  expect_config_rejected(make_cfg(16, 8, 0, longrope4({1, 1, 1, 1}, {1, 2, 3, 4, 5})), {"scaling.long_factor.size()=5", "rotary_dim/2=4"});
}

TEST(RopeConfigErrors, LongRopeEmptyArrays) {
  expect_config_rejected(make_cfg(16, 8, 0, longrope4({}, {1, 2, 3, 4})), {"scaling.short_factor.size()=0"});
  expect_config_rejected(make_cfg(16, 8, 0, longrope4({1, 1, 1, 1}, {})), {"scaling.long_factor.size()=0"});
}

TEST(RopeConfigErrors, LongRopeBadEntry) {
  expect_config_rejected(make_cfg(16, 8, 0, longrope4({1, 1, 0, 1}, {1, 2, 3, 4})), {"scaling.short_factor[2]=0"});
  expect_config_rejected(make_cfg(16, 8, 0, longrope4({1, 1, 1, 1}, {1, kNaN, 3, 4})), {"scaling.long_factor[1]=nan"});
  expect_config_rejected(make_cfg(16, 8, 0, longrope4({1, 1, 1, -1}, {1, 2, 3, 4})), {"scaling.short_factor[3]=-1"});
  expect_config_rejected(make_cfg(16, 8, 0, longrope4({1, 1, 1, 1}, {kInf, 2, 3, 4})), {"scaling.long_factor[0]=inf"});
}

TEST(RopeConfigErrors, LongRopeFactorAndAttentionFactor) {
  expect_config_rejected(make_cfg(16, 8, 0, longrope4({1, 1, 1, 1}, {1, 2, 3, 4}, kNaN)), {"scaling.factor=nan"});
  expect_config_rejected(make_cfg(16, 8, 0, longrope4({1, 1, 1, 1}, {1, 2, 3, 4}, 0.0)), {"scaling.factor=0"});
  auto s = longrope4({1, 1, 1, 1}, {1, 2, 3, 4});
  s.attention_factor = 0.0;
  expect_config_rejected(make_cfg(16, 8, 0, s), {"scaling.attention_factor=0"});
}

TEST(RopeConfigErrors, FreqFactors) {
  auto cfg = make_cfg(16, 8);
  cfg.freq_factors = {1.0, 2.0, 4.0};
  expect_config_rejected(cfg, {"freq_factors.size()=3", "rotary_dim/2=4"});
  cfg.freq_factors = {1.0, 2.0, 0.0, 4.0};
  expect_config_rejected(cfg, {"freq_factors[2]=0"});
  cfg.freq_factors = {1.0, kNaN, 1.0, 4.0};
  expect_config_rejected(cfg, {"freq_factors[1]=nan"});
}

// Issue 21: a length-dependent scaling without a stated length used to plan for n = 0 silently (the unscaled
// base of dynamic NTK, LongRoPE's short factors at every position). Now an error naming both ways out; the
// fixed policies need no length, and a stated length is accepted.
TEST(RopeConfigErrors, LengthDependentScalingNeedsALength) {
  const auto dyn = posenc::rope_scaling::dynamic_ntk(4.0, 2048);
  expect_config_rejected(make_cfg(64, 0, 0, dyn), {"scaling dynamic_ntk (policy per_length) depends on the sequence length",
                                                   "pass seq_len", "fixed_at_max"});
  for (const auto policy : {posenc::longrope_policy::per_length, posenc::longrope_policy::past_original}) {
    auto lr = longrope4({1, 1, 1, 1}, {1, 2, 3, 4});
    lr.long_policy = policy;
    expect_config_rejected(make_cfg(16, 8, 0, lr), {"scaling longrope (policy", "depends on the sequence length",
                                                    "pass seq_len", "always_short or always_long"});
    EXPECT_NO_THROW((void)posenc::make_rope_plan(make_cfg(16, 8, 0, lr), 1));
  }
  EXPECT_TRUE(posenc::depends_on_length(dyn));
  auto fixed = dyn;
  fixed.ntk_policy = posenc::dynamic_ntk_policy::fixed_at_max;
  EXPECT_FALSE(posenc::depends_on_length(fixed));
  EXPECT_EQ(posenc::make_rope_plan(make_cfg(64, 0, 0, fixed)).inv_freq(),
            posenc::make_rope_plan(make_cfg(64, 0, 0, dyn), 4 * 2048).inv_freq());
  for (const auto policy : {posenc::longrope_policy::always_short, posenc::longrope_policy::always_long}) {
    auto lr = longrope4({1, 1, 1, 1}, {1, 2, 3, 4});
    lr.long_policy = policy;
    EXPECT_FALSE(posenc::depends_on_length(lr));
    EXPECT_NO_THROW((void)posenc::make_rope_plan(make_cfg(16, 8, 0, lr)));
  }
  for (const auto& other : {posenc::rope_scaling{}, posenc::rope_scaling::linear(2.0), posenc::rope_scaling::yarn(4.0, 4096),
                            posenc::rope_scaling::llama3(8.0, 1.0, 4.0, 8192)}) {
    EXPECT_FALSE(posenc::depends_on_length(other));
    EXPECT_NO_THROW((void)posenc::make_rope_plan(make_cfg(64, 0, 0, other)));
  }
  posenc::rope_plan out;
  const posenc::status st = posenc::try_make_rope_plan(make_cfg(64, 0, 0, dyn), 0, out);
  EXPECT_EQ(st.code(), posenc::errc::invalid_argument);
  EXPECT_TRUE(out.empty());
}

TEST(RopeConfigErrors, OriginalMaxPositions) {
  expect_config_rejected(make_cfg(16, 0, 0, posenc::rope_scaling::dynamic_ntk(2.0, 0)), {"scaling.original_max_positions=0"});
  expect_config_rejected(make_cfg(16, 0, 0, posenc::rope_scaling::yarn(4.0, -5)), {"scaling.original_max_positions=-5"});
  expect_config_rejected(make_cfg(16, 0, 0, posenc::rope_scaling::deepseek_yarn(4.0, 0)), {"scaling.original_max_positions=0"});
  expect_config_rejected(make_cfg(16, 0, 0, posenc::rope_scaling::llama3(8.0, 1.0, 4.0, 0)), {"scaling.original_max_positions=0"});
  expect_config_rejected(make_cfg(16, 8, 0, posenc::rope_scaling::longrope({1, 1, 1, 1}, {1, 1, 1, 1}, -1, 4.0)),
                         {"scaling.original_max_positions=-1"});
}

// A valid rebuild after a failed one still works, and a failed rebuild of a plan that was rebuilt keeps the
// rebuilt values (not the original ones).
TEST(RopeConfigErrors, FailedRebuildLeavesPlanUnchanged) {
  posenc::rope_plan plan = existing_plan();
  const auto good = make_cfg(16, 16, 0, posenc::rope_scaling::linear(2.0));
  posenc::make_rope_plan(good, 0, plan);
  const posenc::rope_plan fresh = posenc::make_rope_plan(good);
  auto bad = good;
  bad.scaling.factor = kNaN;
  EXPECT_THROW(posenc::make_rope_plan(bad, 0, plan), posenc::argument_error);
  EXPECT_EQ(plan.inv_freq(), fresh.inv_freq());
  EXPECT_EQ(plan.magnitude(), fresh.magnitude());
  EXPECT_EQ(plan.rotary_dim(), 16);
  EXPECT_EQ(plan.rotary_offset(), 0);
  EXPECT_EQ(plan.style(), rope_style::half_split);
  // A denormal divisor that overflows a frequency is rejected before the plan is touched.
  bad = good;
  bad.freq_factors.assign(8, 1.0);
  bad.freq_factors[0] = std::numeric_limits<double>::denorm_min();
  expect_rejected([&] { posenc::make_rope_plan(bad, 0, plan); }, {"make_rope_plan", "frequency of pair 0=inf"});
  EXPECT_EQ(plan.inv_freq(), fresh.inv_freq());
}

// ------------------------------------------------------------------------------------------ rope_plan, cache

TEST(RopePlanErrors, EmptyInvFreq) {
  expect_rejected([] { posenc::rope_plan p(16, {}, rope_style::half_split); }, {"posenc::rope_plan", "inv_freq is empty", "rotary_dim=0"});
}

TEST(RopePlanErrors, NonFiniteInvFreq) {
  expect_rejected([] { posenc::rope_plan p(16, {1.0, kNaN}, rope_style::half_split); }, {"posenc::rope_plan", "inv_freq[1]=nan"});
  expect_rejected([] { posenc::rope_plan p(16, {kInf, 0.5}, rope_style::interleaved); }, {"posenc::rope_plan", "inv_freq[0]=inf"});
}

TEST(RopePlanErrors, MagnitudeNotPositive) {
  for (double m : {0.0, -1.0, kNaN, kInf}) {
    std::ostringstream v;
    v << "magnitude=" << m;
    expect_rejected([&] { posenc::rope_plan p(16, {1.0, 0.5}, rope_style::half_split, 0, m); }, {"posenc::rope_plan", v.str()});
  }
  expect_rejected([] { posenc::rope_plan p(16, {1.0, 0.5}, rope_style::half_split, 0, 1.0, 0.0); }, {"posenc::rope_plan", "logit_scale=0"});
}

TEST(RopePlanErrors, WindowAndHeadDim) {
  expect_rejected([] { posenc::rope_plan p(0, {1.0}, rope_style::half_split); }, {"posenc::rope_plan", "head_dim=0"});
  expect_rejected([] { posenc::rope_plan p(4, {1.0, 0.5, 0.25}, rope_style::half_split); }, {"posenc::rope_plan", "rotary_dim=6", "head_dim=4"});
  expect_rejected([] { posenc::rope_plan p(8, {1.0, 0.5}, rope_style::half_split, 6); }, {"posenc::rope_plan", "rotary_offset=6"});
  expect_rejected([] { posenc::rope_plan p(8, {1.0, 0.5}, rope_style::half_split, -1); }, {"posenc::rope_plan", "rotary_offset=-1"});
}

TEST(RopeCacheErrors, BadArguments) {
  expect_rejected([] { posenc::rope_cache<float> c(plan16(), -1); }, {"posenc::rope_cache", "max_positions=-1"});
  expect_rejected([] { posenc::rope_cache<double> c(posenc::rope_plan{}, 8); }, {"posenc::rope_cache", "plan is empty"});
}

// ------------------------------------------------------------------------------------------ apply_rope

// Runs `call(freq)` for the plan and for a cache of 64 positions.
template <class Call>
void for_plan_and_cache(const posenc::rope_plan& plan, Call&& call) {
  call(plan);
  call(posenc::rope_cache<float>(plan, 64));
}

TEST(ApplyRopeErrors, HeadDimMismatch) {
  for_plan_and_cache(posenc::make_rope_plan(make_cfg(32)), [](const auto& freq) {
    sentinel_tensor x({1, 2, 3, 16});
    expect_rejected([&] { posenc::apply_rope(freq, x.view(), posenc::positions::offset(0)); },
                    {"posenc::apply_rope", "x head dim (extent 3)=16", "head_dim=32"});
    EXPECT_TRUE(x.untouched());
    expect_rejected([&] { posenc::apply_rope_backward(freq, x.view(), posenc::positions::offset(0)); },
                    {"posenc::apply_rope_backward", "grad head dim (extent 3)=16", "head_dim=32"});
    EXPECT_TRUE(x.untouched());
  });
}

TEST(ApplyRopeErrors, QkBatchAndLengthMismatch) {
  const auto plan = plan16();
  sentinel_tensor q({2, 3, 4, 16});
  sentinel_tensor k({2, 4, 2, 16});
  expect_rejected([&] { posenc::apply_rope_qk(plan, q.view(), k.view(), posenc::positions::offset(0)); },
                  {"posenc::apply_rope_qk", "k (N, L)=(2, 4)", "q (N, L)=(2, 3)"});
  sentinel_tensor k2({1, 3, 2, 16});
  expect_rejected([&] { posenc::apply_rope_qk(plan, q.view(), k2.view(), posenc::positions::offset(0)); },
                  {"posenc::apply_rope_qk", "k (N, L)=(1, 3)"});
  // k's head dim is checked too.
  sentinel_tensor k3({2, 3, 2, 8});
  expect_rejected([&] { posenc::apply_rope_qk(plan, q.view(), k3.view(), posenc::positions::offset(0)); },
                  {"posenc::apply_rope_qk", "k head dim (extent 3)=8"});
  EXPECT_TRUE(q.untouched());
  EXPECT_TRUE(k.untouched());
  EXPECT_TRUE(k2.untouched());
  EXPECT_TRUE(k3.untouched());
}

TEST(ApplyRopeErrors, QkSameTensor) {
  sentinel_tensor q({1, 2, 2, 16});
  expect_rejected([&] { posenc::apply_rope_qk(plan16(), q.view(), q.view(), posenc::positions::offset(0)); },
                  {"posenc::apply_rope_qk", "k and q are the same tensor"});
  EXPECT_TRUE(q.untouched());
}

TEST(ApplyRopeErrors, OutShapeMismatch) {
  const input_tensor in({1, 3, 2, 16});
  sentinel_tensor out({1, 3, 4, 16});
  expect_rejected([&] { posenc::apply_rope(plan16(), in.view(), out.view(), posenc::positions::offset(0)); },
                  {"posenc::apply_rope", "out shape (1, 3, 4, 16)", "in shape (1, 3, 2, 16)"});
  EXPECT_TRUE(in.untouched());
  EXPECT_TRUE(out.untouched());
  sentinel_tensor grad_in({1, 2, 2, 16});
  expect_rejected([&] { posenc::apply_rope_backward(plan16(), in.view(), grad_in.view(), posenc::positions::offset(0)); },
                  {"posenc::apply_rope_backward", "grad_in shape (1, 2, 2, 16)"});
  EXPECT_TRUE(grad_in.untouched());
}

TEST(ApplyRopeErrors, OverlappingInAndOut) {
  std::vector<float> buf(2 * 3 * 16 + 16, sentinel_tensor::kSentinel);
  const std::vector<float> before = buf;
  const posenc::strided_view<const float, 4> in(buf.data(), {1, 3, 2, 16});
  const posenc::strided_view<float, 4> out(buf.data() + 16, {1, 3, 2, 16});  // one head further
  expect_rejected([&] { posenc::apply_rope(plan16(), in, out, posenc::positions::offset(0)); },
                  {"posenc::apply_rope", "out overlaps in"});
  // Same data pointer, different strides (L and H swapped): not the same view either.
  const posenc::strided_view<float, 4> out2(buf.data(), {1, 3, 2, 16}, {96, 16, 48, 1});
  expect_rejected([&] { posenc::apply_rope(plan16(), in, out2, posenc::positions::offset(0)); },
                  {"posenc::apply_rope", "out overlaps in"});
  EXPECT_EQ(buf, before);
}

TEST(ApplyRopeErrors, OutputZeroStride) {
  const input_tensor in({1, 2, 3, 16});
  std::vector<float> buf(2 * 16, sentinel_tensor::kSentinel);
  const posenc::strided_view<float, 4> out(buf.data(), {1, 2, 3, 16}, {0, 16, 0, 1});  // 3 heads onto one row
  expect_rejected([&] { posenc::apply_rope(plan16(), in.view(), out, posenc::positions::offset(0)); },
                  {"posenc::apply_rope", "out.stride(2)=0", "extent 3"});
  // In place through such a view.
  expect_rejected([&] { posenc::apply_rope(plan16(), out, posenc::positions::offset(0)); }, {"posenc::apply_rope", "x.stride(2)=0"});
  for (float v : buf) EXPECT_EQ(v, sentinel_tensor::kSentinel);
  EXPECT_TRUE(in.untouched());
}

TEST(ApplyRopeErrors, NegativePositionPerToken) {
  for_plan_and_cache(plan16(), [](const auto& freq) {
    sentinel_tensor x({2, 3, 1, 16});
    const std::int64_t ids64[] = {0, 1, 2, 3, -1, 5};
    const std::int32_t ids32[] = {0, -7, 2, 3, 4, 5};
    expect_rejected([&] { posenc::apply_rope(freq, x.view(), posenc::positions::per_token(ids64, 2, 3)); },
                    {"posenc::apply_rope", "position[1, 1]=-1"});
    expect_rejected([&] { posenc::apply_rope(freq, x.view(), posenc::positions::per_token(ids32, 2, 3)); },
                    {"posenc::apply_rope", "position[0, 1]=-7"});
    EXPECT_TRUE(x.untouched());
  });
}

TEST(ApplyRopeErrors, NegativePositionPerSequence) {
  for_plan_and_cache(plan16(), [](const auto& freq) {
    sentinel_tensor x({2, 3, 1, 16});
    const std::int64_t s64[] = {4, -5};
    const std::int32_t s32[] = {-2, 0};
    expect_rejected([&] { posenc::apply_rope(freq, x.view(), posenc::positions::per_sequence(s64, 2)); },
                    {"posenc::apply_rope", "offset[1]=-5"});
    expect_rejected([&] { posenc::apply_rope(freq, x.view(), posenc::positions::per_sequence(s32, 2)); },
                    {"posenc::apply_rope", "offset[0]=-2"});
    EXPECT_TRUE(x.untouched());
  });
}

TEST(ApplyRopeErrors, NegativeOffset) {
  for_plan_and_cache(plan16(), [](const auto& freq) {
    sentinel_tensor x({2, 3, 1, 16});
    expect_rejected([&] { posenc::apply_rope(freq, x.view(), posenc::positions::offset(-3)); },
                    {"posenc::apply_rope", "positions offset=-3"});
    EXPECT_TRUE(x.untouched());
  });
}

TEST(ApplyRopeErrors, OffsetOverflowsInt64) {
  sentinel_tensor x({1, 3, 1, 16});
  constexpr std::int64_t big = std::numeric_limits<std::int64_t>::max() - 1;
  expect_rejected([&] { posenc::apply_rope(plan16(), x.view(), posenc::positions::offset(big)); },
                  {"posenc::apply_rope", "positions offset=9223372036854775806", "overflows int64"});
  EXPECT_TRUE(x.untouched());
}

TEST(ApplyRopeErrors, PerSequenceCountMismatch) {
  sentinel_tensor x({2, 3, 1, 16});
  const std::int64_t s[] = {1, 2, 3};
  expect_rejected([&] { posenc::apply_rope(plan16(), x.view(), posenc::positions::per_sequence(s, 3)); },
                  {"posenc::apply_rope", "per_sequence count=3", "N=2"});
  EXPECT_TRUE(x.untouched());
}

TEST(ApplyRopeErrors, PerTokenShapeMismatch) {
  sentinel_tensor x({2, 3, 1, 16});
  const std::int64_t ids[8] = {};
  expect_rejected([&] { posenc::apply_rope(plan16(), x.view(), posenc::positions::per_token(ids, 2, 4)); },
                  {"posenc::apply_rope", "per_token shape (2, 4)", "(N, L)=(2, 3)"});
  expect_rejected([&] { posenc::apply_rope(plan16(), x.view(), posenc::positions::per_token(ids, 1, 3)); },
                  {"posenc::apply_rope", "per_token shape (1, 3)"});
  expect_rejected([&] { posenc::apply_rope(plan16(), x.view(), posenc::positions::per_token(ids, 2, 3, 2)); },
                  {"posenc::apply_rope", "row_stride=2"});
  EXPECT_TRUE(x.untouched());
}

TEST(ApplyRopeErrors, PositionPastCache) {
  const posenc::rope_cache<float> cache(plan16(), 16);
  sentinel_tensor x({1, 3, 1, 16});
  // Largest position 16 == max_positions: one past the last row.
  expect_rejected([&] { posenc::apply_rope(cache, x.view(), posenc::positions::offset(14)); },
                  {"posenc::apply_rope", "position 16", "16 positions"});
  const std::int64_t ids[] = {0, 99, 3};
  expect_rejected([&] { posenc::apply_rope_backward(cache, x.view(), posenc::positions::per_token(ids, 1, 3)); },
                  {"posenc::apply_rope_backward", "position 99", "16 positions"});
  EXPECT_TRUE(x.untouched());
  // Largest position 15: the last row, accepted.
  EXPECT_NO_THROW(posenc::apply_rope(cache, x.view(), posenc::positions::offset(13)));
  EXPECT_FALSE(x.untouched());
}

TEST(ApplyRopeErrors, NegativeExtentOrStride) {
  std::vector<float> buf(64, sentinel_tensor::kSentinel);
  const posenc::strided_view<float, 4> neg_extent(buf.data(), {1, -1, 2, 16}, {64, 32, 16, 1});
  expect_rejected([&] { posenc::apply_rope(plan16(), neg_extent, posenc::positions::offset(0)); },
                  {"posenc::apply_rope", "x.extent(1)=-1"});
  const posenc::strided_view<float, 4> neg_stride(buf.data() + 32, {1, 2, 2, 16}, {64, -32, 16, 1});
  expect_rejected([&] { posenc::apply_rope(plan16(), neg_stride, posenc::positions::offset(0)); },
                  {"posenc::apply_rope", "x.stride(1)=-32"});
  for (float v : buf) EXPECT_EQ(v, sentinel_tensor::kSentinel);
}

TEST(ApplyRopeErrors, NullData) {
  const posenc::strided_view<float, 4> null_x(nullptr, {1, 2, 2, 16});
  expect_rejected([&] { posenc::apply_rope(plan16(), null_x, posenc::positions::offset(0)); }, {"posenc::apply_rope", "x is null"});
  sentinel_tensor x({2, 2, 1, 16});
  expect_rejected([&] { posenc::apply_rope(plan16(), x.view(), posenc::positions::per_sequence(static_cast<const std::int64_t*>(nullptr), 2)); },
                  {"posenc::apply_rope", "per_sequence offsets are null"});
  expect_rejected([&] { posenc::apply_rope(plan16(), x.view(), posenc::positions::per_token(static_cast<const std::int32_t*>(nullptr), 2, 2)); },
                  {"posenc::apply_rope", "per_token ids are null"});
  EXPECT_TRUE(x.untouched());
}

TEST(ApplyRopeErrors, EmptyPlan) {
  sentinel_tensor x({1, 2, 1, 16});
  expect_rejected([&] { posenc::apply_rope(posenc::rope_plan{}, x.view(), posenc::positions::offset(0)); },
                  {"posenc::apply_rope", "plan is empty"});
  EXPECT_TRUE(x.untouched());
}

TEST(TensorViewErrors, LayoutDoesNotFitRank) {
  Eigen::Tensor<float, 3, Eigen::RowMajor> t(2, 3, 16);
  expect_rejected([&] { (void)posenc::as_nlhd(t, posenc::layout::nlhd); }, {"posenc::as_nlhd", "layout="});
  Eigen::Tensor<float, 4, Eigen::RowMajor> u(1, 2, 3, 16);
  expect_rejected([&] { (void)posenc::as_nlhd(u, posenc::layout::ld); }, {"posenc::as_nlhd", "rank 4"});
}

// The try_ form: the same message as a status, `out` unchanged; on success the same view as as_nlhd.
TEST(TensorViewErrors, TryAsNlhd) {
  Eigen::Tensor<float, 3, Eigen::RowMajor> t(2, 3, 16);
  float marker = 0.0f;
  posenc::strided_view<float, 4> out(&marker, {1, 1, 1, 1});
  const posenc::status bad = posenc::try_as_nlhd(t, posenc::layout::nlhd, out);
  EXPECT_EQ(bad.code(), posenc::errc::invalid_argument);
  EXPECT_EQ(std::string(bad.message()), "posenc::as_nlhd: layout=NLHD does not fit a tensor of rank 3");
  EXPECT_EQ(out.data(), &marker);
  ASSERT_TRUE(posenc::try_as_nlhd(t, posenc::layout::nld, out).ok());
  const auto want = posenc::as_nlhd(t, posenc::layout::nld);
  EXPECT_EQ(out.data(), want.data());
  EXPECT_EQ(out.extents(), want.extents());
  EXPECT_EQ(out.strides(), want.strides());
  EXPECT_EQ(out.extent(0), 2);
  EXPECT_EQ(out.extent(1), 3);
  EXPECT_EQ(out.extent(2), 1);
}

// ------------------------------------------------------------------------------------------ xPos

posenc::xpos_config xcfg(index_t head_dim) {
  posenc::xpos_config c;
  c.head_dim = head_dim;
  return c;
}

TEST(XposErrors, OddOrZeroHeadDim) {
  expect_rejected([] { posenc::xpos_plan p(xcfg(15)); }, {"posenc::xpos_plan", "head_dim=15"});
  expect_rejected([] { posenc::xpos_plan p(xcfg(0)); }, {"posenc::xpos_plan", "head_dim=0"});
}

TEST(XposErrors, ScaleBase) {
  for (double sb : {0.0, -512.0, kNaN, kInf}) {
    auto c = xcfg(16);
    c.scale_base = sb;
    std::ostringstream v;
    v << "scale_base=" << sb;
    expect_rejected([&] { posenc::xpos_plan p(c); }, {"posenc::xpos_plan", v.str()});
  }
}

TEST(XposErrors, Gamma) {
  for (double g : {kNaN, 0.0, -0.4, kInf}) {
    auto c = xcfg(16);
    c.gamma = g;
    std::ostringstream v;
    v << "gamma=" << g;
    expect_rejected([&] { posenc::xpos_plan p(c); }, {"posenc::xpos_plan", v.str()});
  }
}

TEST(XposErrors, Base) {
  auto c = xcfg(16);
  c.base = 1.0;
  expect_rejected([&] { posenc::xpos_plan p(c); }, {"posenc::xpos_plan", "base=1"});
  c.base = kNaN;
  expect_rejected([&] { posenc::xpos_plan p(c); }, {"posenc::xpos_plan", "base=nan"});
}

TEST(XposErrors, NegativeCenter) {
  const posenc::xpos_plan plan(xcfg(16));
  sentinel_tensor x({1, 3, 1, 16});
  sentinel_tensor k({1, 3, 1, 16});
  const input_tensor in({1, 3, 1, 16});
  expect_rejected([&] { posenc::apply_xpos(plan, x.view(), posenc::positions::offset(0), -1, posenc::xpos_mode::upscale); },
                  {"posenc::apply_xpos", "center=-1"});
  expect_rejected([&] { posenc::apply_xpos(plan, in.view(), x.view(), posenc::positions::offset(0), -2, posenc::xpos_mode::downscale); },
                  {"posenc::apply_xpos", "center=-2"});
  expect_rejected([&] { posenc::apply_xpos_qk(plan, x.view(), k.view(), posenc::positions::offset(0), -3); },
                  {"posenc::apply_xpos_qk", "center=-3"});
  expect_rejected([&] { posenc::apply_xpos_backward(plan, x.view(), posenc::positions::offset(0), -4, posenc::xpos_mode::upscale); },
                  {"posenc::apply_xpos_backward", "center=-4"});
  EXPECT_TRUE(x.untouched());
  EXPECT_TRUE(k.untouched());
  EXPECT_TRUE(in.untouched());
}

// apply_rope_qk rejects q and k being one tensor (ApplyRopeErrors.QkSameTensor); apply_xpos_qk should too.
TEST(XposErrors, QkSameTensor) {
  const posenc::xpos_plan plan(xcfg(16));
  sentinel_tensor q({1, 2, 2, 16});
  expect_rejected([&] { posenc::apply_xpos_qk(plan, q.view(), q.view(), posenc::positions::offset(0), 0); },
                  {"posenc::apply_xpos_qk", "k and q are the same tensor"});
  EXPECT_TRUE(q.untouched());
}

TEST(XposErrors, TensorAndPositions) {
  const posenc::xpos_plan plan(xcfg(16));
  sentinel_tensor x({1, 3, 1, 8});
  expect_rejected([&] { posenc::apply_xpos(plan, x.view(), posenc::positions::offset(0), 0, posenc::xpos_mode::upscale); },
                  {"posenc::apply_xpos", "x head dim (extent 3)=8", "head_dim=16"});
  sentinel_tensor y({1, 3, 1, 16});
  expect_rejected([&] { posenc::apply_xpos(plan, y.view(), posenc::positions::offset(-1), 0, posenc::xpos_mode::upscale); },
                  {"posenc::apply_xpos", "positions offset=-1"});
  sentinel_tensor k({2, 3, 1, 16});
  expect_rejected([&] { posenc::apply_xpos_qk(plan, y.view(), k.view(), posenc::positions::offset(0), 0); },
                  {"posenc::apply_xpos_qk", "k (N, L)"});
  EXPECT_TRUE(x.untouched());
  EXPECT_TRUE(y.untouched());
  EXPECT_TRUE(k.untouched());
}

}  // namespace
