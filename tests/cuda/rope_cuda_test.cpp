// posenc/cuda/rope.cuh on a device, against the same golden files as the CPU tests (tests/golden/), through
// rope_runner.cu. Without a CUDA device every test is skipped with the reason (GTEST_SKIP); the kernels' bodies
// are tested on the CPU in every run (tests/gpu_body_test.cpp), and their resource usage by ptxas
// (tests/cuda/resource_check.cmake).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <posenc/posenc.hpp>

#include "rope_runner.hpp"
#include "test_util.hpp"

namespace {

using posenc::index_t;
using namespace posenc_test;
using posenc_cuda_test::dtype;

// Skips the calling test (GTEST_SKIP returns from the function it is written in, so this is a macro).
#define POSENC_REQUIRE_DEVICE()                                                \
  do {                                                                         \
    std::string why_;                                                          \
    if (!posenc_cuda_test::device_available(why_)) GTEST_SKIP() << why_;       \
  } while (0)

template <class T>
constexpr dtype dtype_of() {
  if constexpr (std::is_same_v<T, float>) return dtype::f32;
  else if constexpr (std::is_same_v<T, double>) return dtype::f64;
  else if constexpr (std::is_same_v<T, Eigen::half>) return dtype::f16;
  else return dtype::bf16;
}

template <class T>
void check_case(const golden_case& c, const posenc::rope_plan& plan, bool table, bool in_place) {
  const auto& xs = c.array("x");
  posenc_cuda_test::rope_job job;
  job.plan = &plan;
  job.table = table;
  job.table_rows = max_position(c) + 1;
  job.type = dtype_of<T>();
  job.shape = {xs.shape[0], xs.shape[1], xs.shape[2], xs.shape[3]};
  const std::vector<T> x = to_storage<T>(xs);
  std::vector<T> y(x.size(), T(0));
  job.x = x.data();
  job.y = y.data();
  job.backward = c.str("direction") == "inverse";
  job.in_place = in_place || job.backward;
  job.pos = positions_of(c);
  const posenc::status s = posenc_cuda_test::run_rope(job);
  ASSERT_TRUE(s.ok()) << s.message();
  const std::string what = c.name + (table ? " table" : " cache-free") + (job.in_place ? " in place" : " out of place");
  if (table && std::is_same_v<T, double>) expect_close<T, float>(y, c.array("y"), what, angle_error_bound(c));
  else expect_close<T>(y, c.array("y"), what, angle_error_bound(c));
}

class CudaRope : public ::testing::TestWithParam<golden_ref> {};

TEST_P(CudaRope, MatchesGolden) {
  POSENC_REQUIRE_DEVICE();
  const auto cases = load_golden(GetParam().file);
  const golden_case& c = find_case(cases, GetParam().name);
  const posenc::rope_plan plan = posenc::make_rope_plan(rope_config_of(c), c.integer("seq_len"));
  for (bool table : {false, true})
    for (bool in_place : {true, false}) {
      check_case<float>(c, plan, table, in_place);
      check_case<double>(c, plan, table, in_place);
      check_case<Eigen::half>(c, plan, table, in_place);
      check_case<Eigen::bfloat16>(c, plan, table, in_place);
    }
}

INSTANTIATE_TEST_SUITE_P(Golden, CudaRope, ::testing::ValuesIn(rope_golden_cases()), golden_ref_name{});

// A CUDA entry's rejection is the CPU entry's: the same code and message but for the posenc::cuda:: prefix.
void expect_same_rejection(const posenc::status& gpu, const posenc::status& cpu) {
  ASSERT_FALSE(gpu.ok());
  ASSERT_FALSE(cpu.ok());
  EXPECT_EQ(gpu.code(), cpu.code());
  std::string want(cpu.message());
  want.replace(0, std::string("posenc::").size(), "posenc::cuda::");
  EXPECT_EQ(gpu.message(), want);
}

// A rejected call gives the CPU API's message (with the cuda:: prefix) and launches nothing.
// The device converts 16-bit storage with cvt instructions and the CPU with integer code (detail/math/half.hpp):
// the same bits for every input, NaNs included (they take the integer code on both).
TEST(CudaConversions, SameBitsAsTheCpuForEveryInput) {
  POSENC_REQUIRE_DEVICE();
  std::array<unsigned long long, 3> count{};
  std::array<std::uint32_t, 3> first{};
  const posenc::status s = posenc_cuda_test::conversion_mismatches(count, first);
  ASSERT_TRUE(s.ok()) << s.message();
  const char* names[3] = {"half -> float (2^16 inputs)", "float -> half (2^32)", "float -> bfloat16 (2^32)"};
  for (int k = 0; k < 3; ++k)
    EXPECT_EQ(count[k], 0u) << names[k] << ": first differing input 0x" << std::hex << first[k];
}

TEST(CudaRopeErrors, SameMessagesAsTheCpuApi) {
  POSENC_REQUIRE_DEVICE();
  posenc::rope_config cfg;
  cfg.head_dim = 16;
  const posenc::rope_plan plan = posenc::make_rope_plan(cfg, 0);
  std::vector<float> x(2 * 3 * 18, 0.25f);
  posenc_cuda_test::rope_job job;
  job.plan = &plan;
  job.shape = {2, 3, 1, 18};  // head dim 18 for a plan of 16
  job.x = x.data();
  std::vector<float> y(x.size(), -1.0f);
  job.y = y.data();
  job.pos = posenc::positions::offset(0);
  const posenc::status gpu = posenc_cuda_test::run_rope(job);
  const posenc::status cpu =
      posenc::try_apply_rope(plan, posenc::strided_view<float, 4>(x.data(), job.shape), posenc::positions::offset(0));
  expect_same_rejection(gpu, cpu);
  for (float v : y) EXPECT_EQ(v, -1.0f);  // nothing was copied back: the runner stopped at the launcher's status
}

// The host checks need no device: the launchers run on host memory here, and a rejected call must return the
// CPU API's status before any CUDA call, leaving the memory as it was.
TEST(CudaHostChecks, RejectAsTheCpuApiWithoutADevice) {
  posenc::alibi_config cfg;
  cfg.num_heads = 8;
  cfg.head_end = 9;  // past num_heads
  std::vector<float> gpu_out(9 * 2 * 3, -1.0f), cpu_out = gpu_out;
  expect_same_rejection(posenc_cuda_test::alibi_bias_on_host(cfg, gpu_out.data(), {9, 2, 3}, 0),
                        posenc::try_alibi_bias(cfg, posenc::strided_view<float, 3>(cpu_out.data(), {9, 2, 3})));
  cfg.head_end = 8;
  expect_same_rejection(posenc_cuda_test::alibi_bias_on_host(cfg, gpu_out.data(), {8, 2, 3}, -1),  // negative offset
                        posenc::try_alibi_bias(cfg, posenc::strided_view<float, 3>(cpu_out.data(), {8, 2, 3}), posenc::positions::offset(-1)));
  for (float v : gpu_out) ASSERT_EQ(v, -1.0f);

  posenc::sinusoidal_config sc;
  sc.dim = 7;  // odd
  std::vector<float> x(2 * 3 * 8, 0.5f), cx = x;
  const std::int64_t offsets[] = {0, 4};
  expect_same_rejection(posenc_cuda_test::add_sinusoidal_on_host(sc, x.data(), {2, 3, 7}, posenc::positions::offset(0)),
                        posenc::try_add_sinusoidal(sc, posenc::strided_view<float, 3>(cx.data(), {2, 3, 7}),
                                                   posenc::positions::offset(0)));
  sc.dim = 8;
  const auto bad_count = posenc::positions::per_sequence(offsets, 1);  // count 1 for N = 2
  expect_same_rejection(posenc_cuda_test::add_sinusoidal_on_host(sc, x.data(), {2, 3, 8}, bad_count),
                        posenc::try_add_sinusoidal(sc, posenc::strided_view<float, 3>(cx.data(), {2, 3, 8}), bad_count));
  for (float v : x) ASSERT_EQ(v, 0.5f);
}

// A launch that fails is a device_error status naming the entry, never silent. Without a device every launch
// fails; with one, a launch on host memory is not a failure to provoke portably, so this test needs a machine
// without a CUDA device (the documented reason of its skip).
TEST(CudaHostChecks, LaunchFailureIsADeviceError) {
  std::string why;
  if (posenc_cuda_test::device_available(why)) GTEST_SKIP() << "needs a machine without a CUDA device";
  posenc::alibi_config cfg;
  cfg.num_heads = 4;
  std::vector<float> out(4 * 2 * 3, -1.0f);
  const posenc::status s = posenc_cuda_test::alibi_bias_on_host(cfg, out.data(), {4, 2, 3}, 0);
  EXPECT_EQ(s.code(), posenc::errc::device_error);
  EXPECT_NE(std::string(s.message()).find("posenc::cuda::alibi_bias: launch failed: "), std::string::npos) << s.message();
  for (float v : out) ASSERT_EQ(v, -1.0f);
}

// ALiBi: every bias_* case of alibi.txt, written and added onto zero scores on the device.
template <class T>
void check_alibi_case(const golden_case& c, bool add) {
  const posenc::alibi_config cfg = golden_alibi_config(c);
  const auto& expected = c.array("bias");
  std::vector<T> out(expected.values.size(), T(0));
  const posenc::status s = posenc_cuda_test::run_alibi(cfg, dtype_of<T>(), expected.shape[0], expected.shape[1],
                                                       expected.shape[2], posenc::positions::offset(c.integer("query_offset")),
                                                       add, out.data());
  ASSERT_TRUE(s.ok()) << s.message();
  expect_close(out, expected, c.name + (add ? " add_alibi_bias" : " alibi_bias"));
}

// ALiBi's fp32 arithmetic: every fp32_* case of alibi.txt, the bias written and added onto the case's scores on
// the device, bit for bit (one float rounding: the device's fmaf; a 16-bit T rounds that float once more).
template <class T>
void check_alibi_fp32_case(const golden_case& c, bool add) {
  const posenc::alibi_config cfg = golden_alibi_config(c);  // arithmetic fp32
  const auto& x = c.array("x");
  const auto& want = c.array(add ? "y" : "bias").values;
  std::vector<T> out;
  for (double v : x.values) out.push_back(add ? posenc::detail::simd::store_as<T>(v) : T(0));
  const posenc::status s = posenc_cuda_test::run_alibi(cfg, dtype_of<T>(), x.shape[0], x.shape[1], x.shape[2],
                                                       posenc::positions::offset(c.integer("query_offset")), add,
                                                       out.data());
  ASSERT_TRUE(s.ok()) << s.message();
  for (std::size_t i = 0; i < out.size(); ++i)
    ASSERT_TRUE(same_bits(out[i], posenc::detail::simd::store_as<T>(static_cast<float>(want[i]))))
        << c.name << (add ? " add_alibi_bias" : " alibi_bias") << " element " << i;
}

TEST(CudaAlibi, MatchesGolden) {
  POSENC_REQUIRE_DEVICE();
  for (const auto& c : load_golden("alibi.txt")) {
    if (!c.has("bias")) continue;
    if (c.has("arithmetic")) {
      for (bool add : {false, true}) {
        check_alibi_fp32_case<float>(c, add);
        check_alibi_fp32_case<Eigen::half>(c, add);
        check_alibi_fp32_case<Eigen::bfloat16>(c, add);
      }
      continue;
    }
    for (bool add : {false, true}) {
      check_alibi_case<float>(c, add);
      check_alibi_case<double>(c, add);
      check_alibi_case<Eigen::half>(c, add);
      check_alibi_case<Eigen::bfloat16>(c, add);
    }
  }
}

// Per-token query positions in device memory (a speculative-decoding tree: queries at 7, 9, 8, 9): the bias and
// the addition match the CPU's (golden-tested), for both entries. The host side reads only the positions' form
// and shape (values_readable false): reading the device array from the host would fault.
TEST(CudaAlibi, PerTokenPositionsInDeviceMemory) {
  POSENC_REQUIRE_DEVICE();
  posenc::alibi_config cfg;
  cfg.num_heads = 6;
  const index_t heads = 6, lq = 4, lk = 11;
  const std::int64_t ids[] = {7, 9, 8, 9};
  const auto pos = posenc::positions::per_token(ids, 1, lq);
  const auto causal = posenc::alibi_mask::causal;
  for (bool add : {false, true}) {
    std::vector<float> want(static_cast<std::size_t>(heads * lq * lk), add ? 0.25f : 0.0f), got = want;
    const posenc::strided_view<float, 3> w(want.data(), {heads, lq, lk});
    if (add) posenc::add_alibi_bias(cfg, w, pos, causal);
    else posenc::alibi_bias(cfg, w, pos, causal);
    const posenc::status s = posenc_cuda_test::run_alibi(cfg, posenc_cuda_test::dtype::f32, heads, lq, lk, pos, add,
                                                         got.data(), causal);
    ASSERT_TRUE(s.ok()) << s.message();
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (std::isinf(want[i])) {
        ASSERT_EQ(got[i], want[i]) << (add ? "add_alibi_bias" : "alibi_bias") << " element " << i;
      } else {
        // Both round the double fma once; the slopes' exp2 may differ in its last double bit on the device.
        ASSERT_NEAR(got[i], want[i], 1e-6 * std::fabs(want[i]) + 1e-30) << (add ? "add_alibi_bias" : "alibi_bias")
                                                                         << " element " << i;
      }
    }
  }
}

// xPos: every xpos.txt case on the device, compared as xpos_test.cpp compares the CPU path.
template <class T>
void check_xpos_case(const golden_case& c) {
  const posenc::xpos_plan plan(xpos_config_of(c));
  const auto& xs = c.array("x");
  const std::vector<T> x = to_storage<T>(xs);
  std::vector<T> y(x.size(), T(0));
  const posenc::status s = posenc_cuda_test::run_xpos(
      plan, dtype_of<T>(), {xs.shape[0], xs.shape[1], 1, xs.shape[2]}, x.data(), y.data(), c.integer("offset"),
      c.integer("center"), c.integer("downscale") != 0 ? posenc::xpos_mode::downscale : posenc::xpos_mode::upscale);
  ASSERT_TRUE(s.ok()) << s.message();
  expect_xpos_close(y, c, c.name + " cuda");
}

TEST(CudaXpos, MatchesGolden) {
  POSENC_REQUIRE_DEVICE();
  for (const auto& c : load_golden("xpos.txt")) {
    check_xpos_case<float>(c);
    check_xpos_case<double>(c);
    check_xpos_case<Eigen::bfloat16>(c);
    if (c.str("tolerance_mode") != "relative") check_xpos_case<Eigen::half>(c);  // half's range, as xpos_test.cpp
  }
}

// Sinusoidal: every sinusoidal.txt case (tables; additions in place and out of place) on the device.
template <class T>
void check_sinusoid_case(const golden_case& c) {
  const posenc::sinusoidal_config cfg = sinusoidal_config_of(c);
  if (c.has("table")) {
    const index_t len = c.integer("length"), offset = c.integer("offset");
    std::vector<T> t(static_cast<std::size_t>(len * cfg.dim), T(-7));
    const posenc::status s =
        posenc_cuda_test::run_sinusoidal(cfg, dtype_of<T>(), {1, len, cfg.dim}, nullptr, t.data(), offset, nullptr, false);
    ASSERT_TRUE(s.ok()) << s.message();
    expect_close(t, c.array("table"), c.name + " cuda", sinusoid_angle_bound(offset + len, cfg.base));
    return;
  }
  const auto& xs = c.array("x");
  const std::vector<std::int64_t>& ids = c.array("positions").ivalues;
  const index_t max_pos = *std::max_element(ids.begin(), ids.end());
  for (bool in_place : {true, false}) {
    const std::vector<T> x = to_storage<T>(xs);
    std::vector<T> y(x.size(), T(0));
    const posenc::status s = posenc_cuda_test::run_sinusoidal(cfg, dtype_of<T>(), {xs.shape[0], xs.shape[1], xs.shape[2]},
                                                              x.data(), y.data(), 0, ids.data(), in_place);
    ASSERT_TRUE(s.ok()) << s.message();
    expect_close(y, c.array("y"), c.name + " cuda", sinusoid_angle_bound(max_pos, cfg.base));
  }
}

TEST(CudaSinusoidal, MatchesGolden) {
  POSENC_REQUIRE_DEVICE();
  for (const auto& c : load_golden("sinusoidal.txt")) {
    check_sinusoid_case<float>(c);
    check_sinusoid_case<double>(c);
    check_sinusoid_case<Eigen::half>(c);
    check_sinusoid_case<Eigen::bfloat16>(c);
  }
}

// T5: every table_* case of t5.txt on the device, through a table whose entry [b, h] is b + 64 h.
template <class T>
void check_t5_case(const golden_case& c, bool add) {
  const posenc::t5_bucket_config cfg{c.integer("bidirectional") != 0, c.integer("num_buckets"), c.integer("max_distance")};
  const index_t lq = c.integer("query_len"), lk = c.integer("key_len"), heads = 2;
  std::vector<float> table(static_cast<std::size_t>(cfg.num_buckets * heads));
  for (index_t b = 0; b < cfg.num_buckets; ++b)
    for (index_t h = 0; h < heads; ++h) table[static_cast<std::size_t>(b * heads + h)] = static_cast<float>(b + 64 * h);
  std::vector<T> out(static_cast<std::size_t>(heads * lq * lk), static_cast<T>(add ? 0.5f : -1.0f));
  const posenc::status s = posenc_cuda_test::run_t5(cfg, table.data(), dtype_of<T>(), heads, lq, lk,
                                                    c.integer("query_offset"), add, out.data());
  ASSERT_TRUE(s.ok()) << s.message();
  const auto& want = c.array("buckets").ivalues;
  for (index_t h = 0; h < heads; ++h)
    for (index_t k = 0; k < lq * lk; ++k)
      ASSERT_EQ(as_double(out[static_cast<std::size_t>(h * lq * lk + k)]),
                static_cast<double>(want[static_cast<std::size_t>(k)] + 64 * h) + (add ? 0.5 : 0.0))
          << c.name << " head " << h << " element " << k;
}

TEST(CudaT5, MatchesGolden) {
  POSENC_REQUIRE_DEVICE();
  for (const auto& c : load_golden("t5.txt")) {
    if (!c.has("buckets")) continue;
    for (bool add : {false, true}) {
      check_t5_case<float>(c, add);
      check_t5_case<double>(c, add);
      check_t5_case<Eigen::half>(c, add);
      check_t5_case<Eigen::bfloat16>(c, add);
    }
  }
}

// MRoPE: every mrope.txt case on the device, out of place.
template <class T>
void check_mrope_case(const golden_case& c) {
  const posenc::mrope_plan mp = mrope_plan_of(c);
  const auto& xs = c.array("x");
  const std::vector<T> x = to_storage<T>(xs);
  std::vector<T> y(x.size(), T(0));
  const posenc::status s = posenc_cuda_test::run_mrope(mp, dtype_of<T>(), {xs.shape[0], xs.shape[1], xs.shape[2], xs.shape[3]},
                                                       x.data(), y.data(), c.array("positions").ivalues.data(),
                                                       c.str("pos_form") == "shared");
  ASSERT_TRUE(s.ok()) << s.message();
  expect_close(y, c.array("y"), c.name + " cuda", angle_error_bound_max(c));
}

TEST(CudaMrope, MatchesGolden) {
  POSENC_REQUIRE_DEVICE();
  for (const auto& c : load_golden("mrope.txt")) {
    check_mrope_case<float>(c);
    check_mrope_case<double>(c);
    check_mrope_case<Eigen::half>(c);
    check_mrope_case<Eigen::bfloat16>(c);
  }
}

// Context shift: per-token deltas -p move the golden output of a per-token case back to its input; one delta for
// every token composes (the golden output at positions l, moved by +7, is the CPU rotation at 7 + l).
template <class T>
void check_shift(const golden_case& c) {
  const auto plan = posenc::make_rope_plan(rope_config_of(c));
  const auto& ys = c.array("y");
  const std::array<index_t, 4> shape{ys.shape[0], ys.shape[1], ys.shape[2], ys.shape[3]};
  std::vector<std::int64_t> deltas(c.array("positions").ivalues.size());
  for (std::size_t i = 0; i < deltas.size(); ++i) deltas[i] = -c.array("positions").ivalues[i];
  const std::vector<T> y = to_storage<T>(ys);
  std::vector<T> k(y.size(), T(0));
  const posenc::status s = posenc_cuda_test::run_shift(plan, dtype_of<T>(), shape, y.data(), k.data(), deltas.data(), 0);
  ASSERT_TRUE(s.ok()) << s.message();
  expect_close(k, c.array("x"), c.name + " shifted back on the device", 2 * angle_error_bound(c));
}

TEST(CudaShiftRope, PerTokenDeltasUndoGoldenRotation) {
  POSENC_REQUIRE_DEVICE();
  const auto cases = load_golden("rope_basic.txt");
  for (const char* name : {"interleaved_per_token", "half_split_per_token", "half_split_window"}) {
    check_shift<float>(find_case(cases, name));
    check_shift<double>(find_case(cases, name));
  }
}

TEST(CudaShiftRope, UniformDeltaComposes) {
  POSENC_REQUIRE_DEVICE();
  const auto cases = load_golden("rope_basic.txt");
  const golden_case& c = find_case(cases, "half_split_full");
  const auto plan = posenc::make_rope_plan(rope_config_of(c));
  const auto& ys = c.array("y");
  const std::array<index_t, 4> shape{ys.shape[0], ys.shape[1], ys.shape[2], ys.shape[3]};
  std::vector<double> shifted(ys.values.size()), direct = c.array("x").values;
  const posenc::status s = posenc_cuda_test::run_shift(plan, dtype::f64, shape, ys.values.data(), shifted.data(), nullptr, 7);
  ASSERT_TRUE(s.ok()) << s.message();
  posenc::apply_rope(plan, posenc::strided_view<double, 4>(direct.data(), shape), posenc::positions::offset(7));
  for (std::size_t i = 0; i < direct.size(); ++i) EXPECT_NEAR(shifted[i], direct[i], 1e-13) << i;
}

// Re-rotation: keys rotated on the device with LongRoPE's short plan, re-rotated into the long plan, equal the
// golden long rotation (factors and magnitude).
TEST(CudaRerotateRope, LongRopeSwitchMatchesGolden) {
  POSENC_REQUIRE_DEVICE();
  const auto cases = load_golden("rope_scaling.txt");
  const golden_case& c = find_case(cases, "longrope_long");
  const auto cfg = rope_config_of(c);
  const auto long_plan = posenc::make_rope_plan(cfg, c.integer("seq_len"));
  const auto short_plan = posenc::make_rope_plan(cfg, 16);
  const auto& xs = c.array("x");
  const std::array<index_t, 4> shape{xs.shape[0], xs.shape[1], xs.shape[2], xs.shape[3]};
  auto check = [&](auto tag) {
    using T = decltype(tag);
    const std::vector<T> x = to_storage<T>(xs);
    std::vector<T> y(x.size(), T(0));
    const posenc::status s =
        posenc_cuda_test::run_rerotate(short_plan, long_plan, dtype_of<T>(), shape, x.data(), y.data(), positions_of(c));
    ASSERT_TRUE(s.ok()) << s.message();
    expect_close(y, c.array("y"), "longrope short->long on the device", 2 * angle_error_bound(c));
  };
  check(float{});
  check(double{});
}

// Learned embedding: learned.txt's layer_norm case on the device, in place and out of place, every storage type.
template <class T>
void check_learned(bool in_place) {
  const ln_case& g = golden_ln();
  const auto& xs = g.c.array("x");
  const std::vector<T> x = to_storage<T>(xs);
  std::vector<T> y(x.size(), T(0));
  const posenc::status s = posenc_cuda_test::run_learned(
      g.cfg, g.c.array("table").values.data(), g.c.array("gamma").values.data(), g.c.array("beta").values.data(),
      dtype_of<T>(), {xs.shape[0], xs.shape[1], xs.shape[2]}, x.data(), y.data(), g.c.integer("past_length"), in_place);
  ASSERT_TRUE(s.ok()) << s.message();
  expect_close(y, g.c.array("y"), std::string("learned layer norm on the device") + (in_place ? " in place" : ""));
}

TEST(CudaLearned, LayerNormMatchesGolden) {
  POSENC_REQUIRE_DEVICE();
  for (bool in_place : {true, false}) {
    check_learned<float>(in_place);
    check_learned<double>(in_place);
    check_learned<Eigen::half>(in_place);
    check_learned<Eigen::bfloat16>(in_place);
  }
}

// A position past the table is rejected with the CPU module's message, before anything is launched.
TEST(CudaLearned, PastTheTableRejectedAsTheCpu) {
  POSENC_REQUIRE_DEVICE();
  const ln_case& g = golden_ln();
  const auto& xs = g.c.array("x");
  std::vector<float> x = to_storage<float>(xs), y(x.size(), -1.0f);
  const index_t past = g.cfg.max_positions - xs.shape[1] + 1;
  const posenc::status gpu = posenc_cuda_test::run_learned(
      g.cfg, g.c.array("table").values.data(), g.c.array("gamma").values.data(), g.c.array("beta").values.data(),
      dtype::f32, {xs.shape[0], xs.shape[1], xs.shape[2]}, x.data(), y.data(), past, true);
  const posenc::status cpu = g.module<float>().try_forward(
      posenc::strided_view<float, 3>(x.data(), {xs.shape[0], xs.shape[1], xs.shape[2]}), posenc::positions::offset(past));
  ASSERT_FALSE(gpu.ok());
  ASSERT_FALSE(cpu.ok());
  const std::string gm(gpu.message()), cm(cpu.message());
  EXPECT_EQ(gm.substr(gm.find(": ")), cm.substr(cm.find(": ")));
  for (float v : y) EXPECT_EQ(v, -1.0f);
}

}  // namespace
