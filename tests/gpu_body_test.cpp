// The GPU kernels' bodies (include/posenc/detail/gpu/), run on the CPU: each test enumerates the grid a CUDA
// launcher would launch (one block per token, a block width that is not a multiple of the work) and compares
// with the same golden files as the CPU kernels, so indexing, tails, strides, GQA and every position form of the
// CUDA path are checked on every CI run, with or without a GPU. tests/cuda/ runs the same cases on a device.
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <posenc/detail/gpu/alibi_body.hpp>
#include <posenc/detail/gpu/learned_body.hpp>
#include <posenc/detail/gpu/rope_body.hpp>
#include <posenc/detail/gpu/sinusoid_body.hpp>
#include <posenc/detail/gpu/t5_body.hpp>
#include <posenc/posenc.hpp>

#include "test_util.hpp"

namespace {

using posenc::index_t;
using namespace posenc_test;
namespace gpu = posenc::detail::gpu;

namespace pd = posenc::detail;

/// The cache-free source of a plan as the CPU and CUDA entries build it (magnitude given: 1 for a context shift).
pd::angle_src angle_of(const posenc::rope_plan& plan, double magnitude) {
  return {plan.inv_freq().data(), magnitude, pd::max_abs(plan.inv_freq())};
}

/// Runs every (block, thread) of the grid, as the device would (in any order: here block by block).
template <class Params>
void run_grid(const Params& p, index_t blocks, index_t threads) {
  for (index_t b = 0; b < blocks; ++b)
    for (index_t t = 0; t < threads; ++t) gpu::rope_block(p, b, t, threads);
}

class GpuRopeBody : public ::testing::TestWithParam<golden_ref> {};

/// A cos/sin table as posenc::cuda::rope_table builds it: float rows filled by the table body, 32 threads wide,
/// max_position + 1 rows; past kWholeTableRows only the rows at the case's positions are formed (each row
/// depends on its position alone; rope_long.txt reaches 1,048,576 and reads 8 rows).
struct host_table {
  index_t rows, pairs;
  lazy_table<float> cos, sin;
  host_table(const posenc::rope_plan& plan, const golden_case& c)
      : rows(max_position(c) + 1), pairs(plan.pairs()), cos(static_cast<std::size_t>(rows * pairs)),
        sin(static_cast<std::size_t>(rows * pairs)) {
    auto form = [&](index_t r) {
      for (index_t th = 0; th < 32; ++th)
        gpu::table_block(plan.inv_freq().data(), plan.magnitude(), pairs, cos.data(), sin.data(), r, th, 32);
    };
    if (rows <= kWholeTableRows) {
      for (index_t r = 0; r < rows; ++r) form(r);
    } else {
      for (const std::int64_t p : c.array("positions").ivalues) form(p);
    }
  }
};

/// One golden case through the body, cache-free (angles in double) or from the table (when `table` is given).
template <class T>
void check_case(const golden_case& c, const posenc::rope_plan& plan, const host_table* table, bool in_place,
                index_t threads) {
  const bool use_table = table != nullptr;
  const auto& xs = c.array("x");
  const std::array<index_t, 4> shape{xs.shape[0], xs.shape[1], xs.shape[2], xs.shape[3]};
  std::vector<T> x = to_storage<T>(xs);
  std::vector<T> y(x.size(), T(0));
  const posenc::strided_view<T, 4> vx(x.data(), shape), vy(y.data(), shape);
  const posenc::positions pos = positions_of(c);
  const double sign = c.str("direction") == "inverse" ? -1.0 : 1.0;
  const posenc::rope_style style = plan.style();
  const auto in = gpu::pod_of(posenc::strided_view<const T, 4>(vx));
  const auto out = gpu::pod_of(in_place ? vx : vy);
  const gpu::rope_pair_targets<T, T> t{{in, in}, {out, out}, 1};
  const index_t blocks = shape[0] * shape[1];
  const std::string what = c.name + (use_table ? " table" : " cache-free") + (in_place ? " in place" : " out of place") +
                           " threads=" + std::to_string(threads);
  if (use_table) {
    const pd::table_src<float> src{table->cos.data(), table->sin.data(), table->pairs, 1, table->rows};
    run_grid(gpu::rope_params<T, T, pd::table_src<float>>{t, pos, src, style, plan.rotary_offset(),
                                                               plan.pairs(), sign, {0, 0}},
             blocks, threads);
    if (std::is_same_v<T, double>) {
      expect_close<T, float>(in_place ? x : y, c.array("y"), what, angle_error_bound(c));
      return;
    }
  } else {
    const pd::angle_src src = angle_of(plan, plan.magnitude());
    run_grid(gpu::rope_params<T, T, pd::angle_src>{t, pos, src, style, plan.rotary_offset(),
                                                        plan.pairs(), sign, {0, 0}},
             blocks, threads);
  }
  expect_close<T>(in_place ? x : y, c.array("y"), what, angle_error_bound(c));
}

TEST_P(GpuRopeBody, MatchesGolden) {
  const auto cases = load_golden(GetParam().file);
  const golden_case& c = find_case(cases, GetParam().name);
  const posenc::rope_plan plan = posenc::make_rope_plan(rope_config_of(c), c.integer("seq_len"));
  const host_table table(plan, c);
  // 7 threads: never a divisor of the work, so every block has a ragged last round; 128 as the launcher.
  for (index_t threads : {index_t{7}, index_t{128}})
    for (const host_table* t : {static_cast<const host_table*>(nullptr), &table})
      for (bool in_place : {true, false}) {
        check_case<float>(c, plan, t, in_place, threads);
        check_case<double>(c, plan, t, in_place, threads);
        check_case<Eigen::half>(c, plan, t, in_place, threads);
        check_case<Eigen::bfloat16>(c, plan, t, in_place, threads);
      }
}

INSTANTIATE_TEST_SUITE_P(Golden, GpuRopeBody, ::testing::ValuesIn(rope_golden_cases()), golden_ref_name{});

// q and k of one fused QKV buffer with GQA (8 q heads, 2 kv heads), one launch for both, against the CPU path
// on the same buffer (itself golden-tested): within one float rounding (the CPU forms cos/sin with its own
// vector sincos, the body with libm), and v exactly untouched.
TEST(GpuRopeBodyFused, QkOfAFusedBufferWithGqa) {
  const index_t n = 2, l = 5, hq = 8, hk = 2, d = 64, row = (hq + 2 * hk) * d;
  std::vector<float> qkv(static_cast<std::size_t>(n * l * row));
  for (std::size_t i = 0; i < qkv.size(); ++i) qkv[i] = static_cast<float>(static_cast<int>(i % 29) - 14) / 16.0f;
  std::vector<float> want = qkv;
  const std::int64_t ids[] = {0, 7, 3, 100000, 5, 9, 2, 1, 4096, 6};
  const posenc::positions pos = posenc::positions::per_token(ids, n, l);
  posenc::rope_config cfg;
  cfg.head_dim = d;
  cfg.rotary_dim = 48;  // partial: features 48..63 pass through
  cfg.base = 500000.0;
  const posenc::rope_plan plan = posenc::make_rope_plan(cfg, 0);
  auto views = [&](float* p) {
    return std::pair{posenc::strided_view<float, 4>(p, {n, l, hq, d}, {l * row, row, d, 1}),
                     posenc::strided_view<float, 4>(p + hq * d, {n, l, hk, d}, {l * row, row, d, 1})};
  };
  const auto [wq, wk] = views(want.data());
  posenc::apply_rope_qk(plan, wq, wk, pos);
  const auto [q, k] = views(qkv.data());
  const auto cq = gpu::pod_of(posenc::strided_view<const float, 4>(q)), ck = gpu::pod_of(posenc::strided_view<const float, 4>(k));
  const gpu::rope_pair_targets<float, float> t{{cq, ck}, {gpu::pod_of(q), gpu::pod_of(k)}, 2};
  const pd::angle_src src = angle_of(plan, plan.magnitude());
  run_grid(gpu::rope_params<float, float, pd::angle_src>{t, pos, src, plan.style(), 0, plan.pairs(), 1.0, {0, 0}},
           n * l, 96);
  for (std::size_t i = 0; i < qkv.size(); ++i) {
    const bool v_part = static_cast<index_t>(i) % row >= (hq + hk) * d;
    if (v_part) ASSERT_EQ(qkv[i], want[i]) << "v element " << i;
    else ASSERT_NEAR(qkv[i], want[i], 1.2e-7) << "element " << i;  // |x| <= 1: one ulp of a value below 1
  }
}

// A table row past the table is left alone rather than read out of bounds (device positions are not read on
// the host, so the launcher cannot reject them before the launch).
TEST(GpuRopeBodyTable, PositionsPastTheTableAreNotRotated) {
  const index_t d = 8;
  std::vector<float> x(2 * d, 0.5f);
  const std::int64_t ids[] = {1, 5};
  posenc::rope_config cfg;
  cfg.head_dim = d;
  const posenc::rope_plan plan = posenc::make_rope_plan(cfg, 0);
  std::vector<float> cos(2 * 4), sin(2 * 4);
  for (index_t r = 0; r < 2; ++r) gpu::table_block(plan.inv_freq().data(), 1.0, 4, cos.data(), sin.data(), r, 0, 1);
  const posenc::strided_view<float, 4> v(x.data(), {1, 2, 1, d});
  const auto pv = gpu::pod_of(v);
  const gpu::rope_pair_targets<float, float> t{{gpu::pod_of(posenc::strided_view<const float, 4>(v)), {}}, {pv, {}}, 1};
  const pd::table_src<float> src{cos.data(), sin.data(), 4, 1, 2};
  run_grid(gpu::rope_params<float, float, pd::table_src<float>>{
               t, posenc::positions::per_token(ids, 1, 2), src, plan.style(), 0, 4, 1.0, {0, 0}},
           2, 4);
  for (index_t f = 0; f < d; ++f) EXPECT_EQ(x[static_cast<std::size_t>(d + f)], 0.5f) << f;  // position 5: untouched
  EXPECT_NE(x[0], 0.5f);                                                                    // position 1: rotated
}

// ---- MRoPE ----------------------------------------------------------------------------------------------------

// Every mrope.txt case (chunked and interleaved sections, shared and per-token positions, sectioned vision
// frequencies) through the RoPE body with the MRoPE source: out of place, and q and k in one launch.
template <class T>
void check_mrope_case(const golden_case& c, index_t threads) {
  const posenc::mrope_plan mp = mrope_plan_of(c);
  const posenc::mrope_positions pos = mrope_positions_of(c);
  const auto& xs = c.array("x");
  const std::array<index_t, 4> shape{xs.shape[0], xs.shape[1], xs.shape[2], xs.shape[3]};
  const pd::mrope_src src{mp.plan().inv_freq().data(), mp.axis().data(), mp.plan().magnitude(),
                          pd::max_abs(mp.plan().inv_freq())};
  const posenc::rope_plan& plan = mp.plan();
  const std::vector<T> x = to_storage<T>(xs);
  std::vector<T> y(x.size(), T(0)), q = x, k = x;
  const auto cx = gpu::pod_of(posenc::strided_view<const T, 4>(x.data(), shape));
  const auto py = gpu::pod_of(posenc::strided_view<T, 4>(y.data(), shape));
  run_grid(gpu::rope_params<T, T, pd::mrope_src, posenc::mrope_positions>{{{cx, {}}, {py, {}}, 1}, pos,
                                                      src, plan.style(), plan.rotary_offset(), plan.pairs(), 1.0, {0, 0}},
           shape[0] * shape[1], threads);
  expect_close(y, c.array("y"), c.name + " out of place", angle_error_bound_max(c));
  const auto vq = posenc::strided_view<T, 4>(q.data(), shape), vk = posenc::strided_view<T, 4>(k.data(), shape);
  run_grid(gpu::rope_params<T, T, pd::mrope_src, posenc::mrope_positions>{
               {{gpu::pod_of(posenc::strided_view<const T, 4>(vq)), gpu::pod_of(posenc::strided_view<const T, 4>(vk))},
                {gpu::pod_of(vq), gpu::pod_of(vk)},
                2},
               pos, src, plan.style(), plan.rotary_offset(), plan.pairs(), 1.0, {0, 0}},
           shape[0] * shape[1], threads);
  expect_close(q, c.array("y"), c.name + " q", angle_error_bound_max(c));
  expect_close(k, c.array("y"), c.name + " k", angle_error_bound_max(c));
}

TEST(GpuMropeBody, MatchesGolden) {
  int cases = 0;
  for (const auto& c : load_golden("mrope.txt")) {
    ++cases;
    for (index_t threads : {index_t{7}, index_t{128}}) {
      check_mrope_case<float>(c, threads);
      check_mrope_case<double>(c, threads);
      check_mrope_case<Eigen::half>(c, threads);
      check_mrope_case<Eigen::bfloat16>(c, threads);
    }
  }
  EXPECT_GE(cases, 5);
}

// ---- xPos -----------------------------------------------------------------------------------------------------

// Every xpos.txt case through the RoPE body with the xPos source (double arithmetic), in place and out of place,
// compared as xpos_test.cpp compares the CPU path (half skipped past its safe range, as there).
template <class T>
void check_xpos_case(const golden_case& c, bool in_place, index_t threads) {
  const posenc::xpos_plan plan(xpos_config_of(c));
  const auto& xs = c.array("x");
  const index_t n = xs.shape[0], l = xs.shape[1], d = xs.shape[2];
  std::vector<T> x = to_storage<T>(xs);
  std::vector<T> y(x.size(), T(0));
  const posenc::strided_view<T, 4> vx(x.data(), {n, l, 1, d}), vy(y.data(), {n, l, 1, d});
  const gpu::rope_pair_targets<T, T> t{{gpu::pod_of(posenc::strided_view<const T, 4>(vx)), {}},
                                       {gpu::pod_of(in_place ? vx : vy), {}}, 1};
  const pd::xpos_src src{plan.inv_freq().data(), plan.log_zeta().data(), c.integer("center"), plan.config().scale_base,
                         pd::max_abs(plan.inv_freq()), {true, true}};
  const int variant = c.integer("downscale") != 0 ? 1 : 0;
  run_grid(gpu::rope_params<T, T, pd::xpos_src>{t, posenc::positions::offset(c.integer("offset")),
                                                     src, plan.config().style, 0, plan.pairs(), 1.0, {variant, 0}},
           n * l, threads);
  expect_xpos_close(in_place ? x : y, c, c.name + (in_place ? " in place" : " out of place") + " threads=" +
                                              std::to_string(threads));
}

TEST(GpuXposBody, MatchesGolden) {
  int cases = 0;
  for (const auto& c : load_golden("xpos.txt")) {
    ++cases;
    for (index_t threads : {index_t{7}, index_t{128}})
      for (bool in_place : {true, false}) {
        check_xpos_case<float>(c, in_place, threads);
        check_xpos_case<double>(c, in_place, threads);
        check_xpos_case<Eigen::bfloat16>(c, in_place, threads);
        // Eigen::half: past max_safe_distance<half> the outputs (~1e+-32) do not exist in half (xpos_test.cpp).
        if (c.str("tolerance_mode") != "relative") check_xpos_case<Eigen::half>(c, in_place, threads);
      }
  }
  EXPECT_EQ(cases, 8);
}

// ---- sinusoidal ----------------------------------------------------------------------------------------------

template <class T>
void run_sinusoid(const posenc::sinusoidal_config& cfg, const posenc::positions& pos, const T* in, T* out,
                  const std::array<index_t, 3>& shape, index_t threads) {
  using V = gpu::view4<T>;
  const index_t d = shape[2];
  const V o{out, {shape[0], shape[1], 1, d}, {shape[1] * d, d, 0, 1}};
  const gpu::view4<const T> i{in, {shape[0], shape[1], 1, d}, {shape[1] * d, d, 0, 1}};
  const gpu::sinusoid_params_gpu<T> p{i, o, pos, posenc::detail::sinusoid_params_of(cfg), in != nullptr};
  for (index_t b = 0; b < shape[0] * shape[1]; ++b)
    for (index_t t = 0; t < threads; ++t) gpu::sinusoid_block(p, b, t, threads);
}

// Every case of sinusoidal.txt: the tables (both layouts, offsets, D = 2, the padding row) and the additions
// (per-token positions, fairseq padding) in place and out of place, as sinusoidal_test.cpp checks the CPU path.
template <class T>
void check_sinusoid_case(const golden_case& c, index_t threads) {
  const posenc::sinusoidal_config cfg = sinusoidal_config_of(c);
  const std::string what = c.name + " threads=" + std::to_string(threads);
  if (c.has("table")) {
    const index_t len = c.integer("length"), offset = c.integer("offset");
    std::vector<T> t(static_cast<std::size_t>(len * cfg.dim), T(-7));
    run_sinusoid<T>(cfg, posenc::positions::offset(offset), nullptr, t.data(), {1, len, cfg.dim}, threads);
    expect_close(t, c.array("table"), what, sinusoid_angle_bound(offset + len, cfg.base));
    return;
  }
  const auto& xs = c.array("x");
  const std::array<index_t, 3> shape{xs.shape[0], xs.shape[1], xs.shape[2]};
  const std::vector<std::int64_t>& ids = c.array("positions").ivalues;
  const auto pos = posenc::positions::per_token(ids.data(), shape[0], shape[1]);
  const index_t max_pos = *std::max_element(ids.begin(), ids.end());
  for (bool in_place : {true, false}) {
    std::vector<T> x = to_storage<T>(xs);
    std::vector<T> y(x.size(), T(0));
    run_sinusoid<T>(cfg, pos, x.data(), in_place ? x.data() : y.data(), shape, threads);
    expect_close(in_place ? x : y, c.array("y"), what + (in_place ? " in place" : " out of place"),
                 sinusoid_angle_bound(max_pos, cfg.base));
  }
}

TEST(GpuSinusoidBody, MatchesGolden) {
  int cases = 0;
  for (const auto& c : load_golden("sinusoidal.txt")) {
    ++cases;
    for (index_t threads : {index_t{3}, index_t{128}}) {
      check_sinusoid_case<float>(c, threads);
      check_sinusoid_case<double>(c, threads);
      check_sinusoid_case<Eigen::half>(c, threads);
      check_sinusoid_case<Eigen::bfloat16>(c, threads);
    }
  }
  EXPECT_GT(cases, 10);
}

// ---- T5 -------------------------------------------------------------------------------------------------------

// Every table_* case of t5.txt through the body: a table whose entry [b, h] is b + 64 h (exact in every storage
// type) makes the written bias the golden bucket plus 64 h; added onto 0.5 it is that plus 0.5.
template <class T>
void check_t5_case(const golden_case& c, index_t threads) {
  const posenc::t5_bucket_config cfg{c.integer("bidirectional") != 0, c.integer("num_buckets"), c.integer("max_distance")};
  const index_t lq = c.integer("query_len"), lk = c.integer("key_len"), heads = 2;
  std::vector<float> table(static_cast<std::size_t>(cfg.num_buckets * heads));
  for (index_t b = 0; b < cfg.num_buckets; ++b)
    for (index_t h = 0; h < heads; ++h) table[static_cast<std::size_t>(b * heads + h)] = static_cast<float>(b + 64 * h);
  const auto& want = c.array("buckets").ivalues;
  for (bool add : {false, true}) {
    std::vector<T> out(static_cast<std::size_t>(heads * lq * lk), static_cast<T>(add ? 0.5f : -1.0f));
    const gpu::t5_params<T, float> p{gpu::pod_of(posenc::strided_view<T, 4>(out.data(), {1, heads, lq, lk})),
                                     table.data(),
                                     {heads, 1},
                                     posenc::detail::math::t5_bucketer(cfg.bidirectional, cfg.num_buckets, cfg.max_distance),
                                     posenc::positions::offset(c.integer("query_offset")),
                                     add};
    for (index_t b = 0; b < heads * lq; ++b)
      for (index_t t = 0; t < threads; ++t) gpu::t5_block(p, b, t, threads);
    for (index_t h = 0; h < heads; ++h)
      for (index_t k = 0; k < lq * lk; ++k) {
        const double expected = static_cast<double>(want[static_cast<std::size_t>(k)] + 64 * h) + (add ? 0.5 : 0.0);
        ASSERT_EQ(as_double(out[static_cast<std::size_t>(h * lq * lk + k)]), expected)
            << c.name << " head " << h << " element " << k << (add ? " add" : " write");
      }
  }
}

TEST(GpuT5Body, MatchesGolden) {
  int cases = 0;
  for (const auto& c : load_golden("t5.txt")) {
    if (!c.has("buckets")) continue;  // the boundary cases test the bucketer itself (t5_bias_test.cpp)
    ++cases;
    for (index_t threads : {index_t{5}, index_t{128}}) {
      check_t5_case<float>(c, threads);
      check_t5_case<double>(c, threads);
      check_t5_case<Eigen::half>(c, threads);
      check_t5_case<Eigen::bfloat16>(c, threads);
    }
  }
  EXPECT_GT(cases, 0);
}

// ---- ALiBi ----------------------------------------------------------------------------------------------------

template <class Params>
void run_alibi_grid(const Params& p, index_t blocks, index_t threads) {
  for (index_t b = 0; b < blocks; ++b)
    for (index_t t = 0; t < threads; ++t) gpu::alibi_block(p, b, t, threads);
}

/// What the body needs of an alibi.txt case whose array `name` is [H, Lq, Lk].
struct alibi_case {
  index_t h, lq, lk;
  posenc::positions pos;
  bool symmetric;
  pd::alibi_formula_slopes formula;
};
alibi_case alibi_case_of(const golden_case& c, const char* name) {
  const posenc::alibi_config cfg = golden_alibi_config(c);
  const auto& a = c.array(name);
  return {a.shape[0], a.shape[1], a.shape[2], posenc::positions::offset(c.integer("query_offset")),
          cfg.form == posenc::alibi_form::symmetric, {cfg.num_heads, cfg.head_begin, cfg.max_bias}};
}

// Every bias_* case of alibi.txt: the bias written, added onto zero scores, and added from a slopes view (the
// shard's slopes in double), each over the whole grid.
template <class T>
void check_alibi_case(const golden_case& c, index_t threads) {
  const auto& expected = c.array("bias");
  const auto [h, lq, lk, pos, symmetric, formula] = alibi_case_of(c, "bias");
  std::vector<double> slopes(static_cast<std::size_t>(h));
  for (index_t k = 0; k < h; ++k) slopes[static_cast<std::size_t>(k)] = formula(0, k);
  const pd::alibi_view_slopes<double> view{slopes.data(), {0, 1}};
  for (int mode = 0; mode < 3; ++mode) {
    std::vector<T> out(expected.values.size(), T(0));
    const auto v = gpu::pod_of(posenc::strided_view<T, 4>(out.data(), {1, h, lq, lk}));
    if (mode == 2) run_alibi_grid(gpu::alibi_params<T, pd::alibi_view_slopes<double>>{v, view, pos, true, symmetric, false, false}, h * lq, threads);
    else run_alibi_grid(gpu::alibi_params<T, pd::alibi_formula_slopes>{v, formula, pos, mode == 1, symmetric, false, false}, h * lq, threads);
    expect_close(out, expected, c.name + (mode == 0 ? " bias" : mode == 1 ? " add" : " add (slopes view)") +
                                    " threads=" + std::to_string(threads));
  }
}

// Every fp32_* case of alibi.txt (alibi_arithmetic::fp32): the bias written and the bias added to the case's
// scores, bit for bit (one float rounding; a 16-bit T rounds that float once more).
template <class T>
void check_alibi_fp32_case(const golden_case& c, index_t threads) {
  const auto& x = c.array("x");
  const auto [h, lq, lk, pos, symmetric, formula] = alibi_case_of(c, "x");
  for (bool add : {false, true}) {
    std::vector<T> out;
    for (double e : x.values) out.push_back(add ? posenc::detail::simd::store_as<T>(e) : T(0));
    const auto v = gpu::pod_of(posenc::strided_view<T, 4>(out.data(), {1, h, lq, lk}));
    run_alibi_grid(gpu::alibi_params<T, pd::alibi_formula_slopes>{v, formula, pos, add, symmetric, false, true}, h * lq,
                   threads);
    const auto& want = c.array(add ? "y" : "bias").values;
    for (std::size_t i = 0; i < out.size(); ++i)
      ASSERT_TRUE(same_bits(out[i], posenc::detail::simd::store_as<T>(static_cast<float>(want[i]))))
          << c.name << (add ? " add" : " bias") << " threads=" << threads << " element " << i;
  }
}

TEST(GpuAlibiBody, MatchesGolden) {
  int cases = 0;
  for (const auto& c : load_golden("alibi.txt")) {
    if (!c.has("bias")) continue;  // the slopes cases test the formula the body calls (alibi_test.cpp)
    ++cases;
    if (c.has("arithmetic")) {
      for (index_t threads : {index_t{7}, index_t{128}}) {
        check_alibi_fp32_case<float>(c, threads);
        check_alibi_fp32_case<Eigen::half>(c, threads);
        check_alibi_fp32_case<Eigen::bfloat16>(c, threads);
      }
      continue;
    }
    for (index_t threads : {index_t{7}, index_t{128}}) {
      check_alibi_case<float>(c, threads);
      check_alibi_case<double>(c, threads);
      check_alibi_case<Eigen::half>(c, threads);
      check_alibi_case<Eigen::bfloat16>(c, threads);
    }
  }
  EXPECT_GT(cases, 0);
}

// Causal, symmetric, per-sequence query positions and per-batch slopes on strided scores, against the CPU
// add_alibi_bias (golden-tested): within one float rounding of the same fma in double, -inf exactly where j > q.
TEST(GpuAlibiBody, CausalPerSequenceAndBatchSlopesAsTheCpu) {
  const index_t n = 2, h = 3, lq = 4, lk = 11, row = 13;  // a padded key row
  const std::int64_t past[] = {7, 2};
  const posenc::positions pos = posenc::positions::per_sequence(past, n);
  std::vector<float> base(static_cast<std::size_t>(n * h * lq * row));
  for (std::size_t i = 0; i < base.size(); ++i) base[i] = static_cast<float>(static_cast<int>(i % 17) - 8) / 4.0f;
  const std::array<index_t, 4> ext{n, h, lq, lk}, str{h * lq * row, lq * row, row, 1};
  const float slopes[] = {0.5f, 0.25f, 0.125f, 0.75f, 0.0625f, 0.03125f};
  for (bool causal : {false, true})
    for (bool symmetric : {false, true}) {
      const auto form = symmetric ? posenc::alibi_form::symmetric : posenc::alibi_form::linear;
      const auto mask = causal ? posenc::alibi_mask::causal : posenc::alibi_mask::none;
      std::vector<float> want = base, got = base;
      posenc::add_alibi_bias(posenc::strided_view<const float, 2>(slopes, {n, h}),
                             posenc::strided_view<float, 4>(want.data(), ext, str), pos, mask, form);
      const pd::alibi_view_slopes<float> sv{slopes, {h, 1}};
      const auto v = gpu::pod_of(posenc::strided_view<float, 4>(got.data(), ext, str));
      run_alibi_grid(gpu::alibi_params<float, pd::alibi_view_slopes<float>>{v, sv, pos, true, symmetric, causal, false},
                     n * h * lq, 5);
      for (std::size_t i = 0; i < got.size(); ++i) {
        if (std::isinf(want[i])) ASSERT_EQ(got[i], want[i]) << i;
        else ASSERT_NEAR(got[i], want[i], 1.2e-7 * std::max(1.0f, std::fabs(want[i]))) << i;
      }
    }
}

// ---- context shift and re-rotation ----------------------------------------------------------------------------

/// A rotation of an (N, L, H, D) double tensor in place through the RoPE body, from any source and positions.
template <class Src, class Pos>
void rotate_in_place(std::vector<double>& x, const std::array<index_t, 4>& shape, const posenc::rope_plan& plan,
                     const Src& src, const Pos& pos, index_t threads) {
  const posenc::strided_view<double, 4> v(x.data(), shape);
  const auto in = gpu::pod_of(posenc::strided_view<const double, 4>(v));
  const gpu::rope_pair_targets<double, double> t{{in, in}, {gpu::pod_of(v), gpu::pod_of(v)}, 1};
  run_grid(gpu::rope_params<double, double, Src, Pos>{t, pos, src, plan.style(), plan.rotary_offset(), plan.pairs(), 1.0, {0, 0}},
           shape[0] * shape[1], threads);
}

std::array<index_t, 4> shape_of(const golden_array& a) { return {a.shape[0], a.shape[1], a.shape[2], a.shape[3]}; }

// Per-token deltas (cuda::shift_rope's form 2): the golden output of a per-token case moved by -p (its own
// positions, magnitude 1) is the golden input again.
TEST(GpuShiftBody, PerTokenDeltasUndoGoldenRotation) {
  const auto cases = load_golden("rope_basic.txt");
  for (const char* name : {"interleaved_per_token", "half_split_per_token", "half_split_window"}) {
    const golden_case& c = find_case(cases, name);
    const auto plan = posenc::make_rope_plan(rope_config_of(c));
    const auto& pos = c.array("positions");
    std::vector<std::int64_t> deltas(pos.ivalues.size());
    for (std::size_t i = 0; i < deltas.size(); ++i) deltas[i] = -pos.ivalues[i];
    for (index_t threads : {index_t{7}, index_t{128}}) {
      std::vector<double> k = c.array("y").values;
      rotate_in_place(k, shape_of(c.array("y")), plan, angle_of(plan, 1.0),
                      pd::delta_positions{0, deltas.data(), pos.shape[1]}, threads);
      expect_close(k, c.array("x"), std::string(name) + " shifted back", angle_error_bound(c));
    }
  }
}

// One delta for every token (form 3): the golden output at positions l moved by +7 equals the golden input
// rotated at 7 + l by the CPU path; the magnitude of a YaRN plan is not applied again.
TEST(GpuShiftBody, UniformDeltaComposesAndKeepsTheMagnitude) {
  const auto cases = load_golden("rope_basic.txt");
  const golden_case& c = find_case(cases, "half_split_full");
  const auto shape = shape_of(c.array("y"));
  for (bool yarn : {false, true}) {
    posenc::rope_config cfg = rope_config_of(c);
    if (yarn) cfg.scaling = posenc::rope_scaling::yarn(4.0, 64);
    const auto plan = posenc::make_rope_plan(cfg);
    std::vector<double> shifted = c.array("x").values, direct = shifted;
    posenc::apply_rope(plan, posenc::strided_view<double, 4>(shifted.data(), shape), posenc::positions::offset(0));
    rotate_in_place(shifted, shape, plan, angle_of(plan, 1.0),
                    pd::delta_positions{7, nullptr, 0}, 5);
    posenc::apply_rope(plan, posenc::strided_view<double, 4>(direct.data(), shape), posenc::positions::offset(7));
    for (std::size_t i = 0; i < direct.size(); ++i) ASSERT_NEAR(shifted[i], direct[i], 1e-13) << i << (yarn ? " yarn" : "");
  }
}

// LongRoPE short -> long on the golden longrope_long case: keys rotated with the short plan and re-rotated by
// the body equal the golden rotation with the long factors and the long magnitude.
TEST(GpuRerotateBody, LongRopeSwitchMatchesGolden) {
  const auto cases = load_golden("rope_scaling.txt");
  const golden_case& c = find_case(cases, "longrope_long");
  const auto cfg = rope_config_of(c);
  const auto long_plan = posenc::make_rope_plan(cfg, c.integer("seq_len"));
  const auto short_plan = posenc::make_rope_plan(cfg, 16);
  ASSERT_NE(short_plan.inv_freq(), long_plan.inv_freq());
  const posenc::positions pos = positions_of(c);
  for (index_t threads : {index_t{7}, index_t{128}}) {
    std::vector<double> k = c.array("x").values;
    const auto shape = shape_of(c.array("x"));
    rotate_in_place(k, shape, short_plan, angle_of(short_plan, short_plan.magnitude()),
                    pos, threads);
    const pd::rerotate_src src{short_plan.inv_freq().data(), long_plan.inv_freq().data(),
                               long_plan.magnitude() / short_plan.magnitude(),
                               pd::max_abs(short_plan.inv_freq()) + pd::max_abs(long_plan.inv_freq())};
    rotate_in_place(k, shape, long_plan, src, pos, threads);
    expect_close(k, c.array("y"), "longrope short->long", 2 * angle_error_bound(c));
  }
}

// ---- learned embeddings ---------------------------------------------------------------------------------------

/// The learned kernel's three phases over the whole grid, each phase for every thread of a block before the
/// next (what __syncthreads orders on the device).
template <class T, class C>
void run_learned_grid(const gpu::learned_params<T, C>& p, index_t blocks, index_t threads) {
  std::vector<double> part(static_cast<std::size_t>(threads));
  const index_t dim = p.out.extent[3];
  for (index_t b = 0; b < blocks; ++b) {
    double mean = 0.0, rstd = 0.0;
    if (p.gamma != nullptr) {
      for (index_t t = 0; t < threads; ++t) part[static_cast<std::size_t>(t)] = gpu::learned_partial(p, b, t, threads, 0.0, false);
      mean = gpu::sum_partials(part.data(), threads) / static_cast<double>(dim);
      for (index_t t = 0; t < threads; ++t) part[static_cast<std::size_t>(t)] = gpu::learned_partial(p, b, t, threads, mean, true);
      rstd = gpu::learned_rstd(gpu::sum_partials(part.data(), threads), dim, p.eps);
    }
    for (index_t t = 0; t < threads; ++t) gpu::learned_write(p, b, t, threads, mean, rstd);
  }
}

template <class T, class C>
void check_learned_ln(index_t threads, bool in_place) {
  const ln_case& g = golden_ln();
  const auto m = g.module<C>();
  const auto& xs = g.c.array("x");
  const std::array<index_t, 3> shape{xs.shape[0], xs.shape[1], xs.shape[2]};
  std::vector<T> x = to_storage<T>(xs), y(x.size(), T(0));
  const posenc::strided_view<T, 3> vx(x.data(), shape), vy(y.data(), shape);
  const gpu::learned_params<T, C> p{gpu::pod_of(posenc::strided_view<const T, 3>(vx)),
                                    gpu::pod_of(in_place ? vx : vy),
                                    m.table().data(),
                                    m.rows(),
                                    g.cfg.position_offset,
                                    m.gamma().data(),
                                    m.beta().data(),
                                    g.cfg.scale,
                                    g.cfg.eps,
                                    posenc::positions::offset(g.c.integer("past_length"))};
  run_learned_grid(p, shape[0] * shape[1], threads);
  expect_close(in_place ? x : y, g.c.array("y"),
               std::string("learned layer norm") + (in_place ? " in place" : " out of place") + " threads=" +
                   std::to_string(threads));
}

// learned.txt's layer_norm case (mpmath): x + scale * E[p + offset], then the layer norm, in place and out of
// place, with a ragged and a full block.
TEST(GpuLearnedBody, LayerNormMatchesGolden) {
  for (index_t threads : {index_t{3}, index_t{128}})
    for (bool in_place : {true, false}) {
      check_learned_ln<float, float>(threads, in_place);
      check_learned_ln<double, double>(threads, in_place);
      check_learned_ln<Eigen::half, float>(threads, in_place);
      check_learned_ln<Eigen::bfloat16, float>(threads, in_place);
    }
}

// Without layer norm, per-token positions on a strided (padded) input, against the CPU module's evaluation
// forward (golden-tested in learned_test.cpp): the same float sum, to one rounding; a position past the table
// leaves its token unwritten.
TEST(GpuLearnedBody, AdditionAsTheCpuAndPastTheTableUnwritten) {
  posenc::learned_config cfg;
  cfg.max_positions = 40;
  cfg.dim = 24;
  cfg.scale = 0.75;
  cfg.position_offset = 2;
  posenc::learned_position_embedding<float> m(cfg);
  m.init_normal(11, 0.5);
  const index_t n = 2, l = 3, row = 29;  // 5 padding floats after each token
  std::vector<float> x(static_cast<std::size_t>(n * l * row));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 13) - 6) / 8.0f;
  const std::array<index_t, 3> ext{n, l, cfg.dim}, str{l * row, row, 1};
  const std::int64_t ids[] = {0, 39, 5, 17, 40, 2};  // 40 is past the table
  const std::int64_t ok_ids[] = {0, 39, 5, 17, 0, 2};
  std::vector<float> want = x, got = x;
  m.forward(posenc::strided_view<float, 3>(want.data(), ext, str), posenc::positions::per_token(ok_ids, n, l));
  const posenc::strided_view<float, 3> vg(got.data(), ext, str);
  const gpu::learned_params<float, float> p{gpu::pod_of(posenc::strided_view<const float, 3>(vg)), gpu::pod_of(vg),
                                            m.table().data(), m.rows(), cfg.position_offset, nullptr, nullptr, cfg.scale,
                                            cfg.eps, posenc::positions::per_token(ids, n, l)};
  run_learned_grid(p, n * l, 7);
  for (index_t tok = 0; tok < n * l; ++tok)
    for (index_t d = 0; d < row; ++d) {
      const auto i = static_cast<std::size_t>(tok * row + d);
      if (tok == 4 || d >= cfg.dim) ASSERT_EQ(got[i], x[i]) << "token " << tok << " feature " << d << " must be untouched";
      else ASSERT_NEAR(got[i], want[i], 1.2e-7 * std::max(1.0f, std::fabs(want[i]))) << "token " << tok << " feature " << d;
    }
}

}  // namespace
