// ALiBi, xPos, sinusoidal and learned additions, T5 bias expansion and the interleaved/half-split layout
// conversion, each against the paired memory baseline (baseline.hpp) over the bytes it reads and writes and,
// except T5, against the plain loop an engine would write (plain.hpp).
// Shapes: ALiBi on prefill scores [1, 32, 512, 4096] (256 MiB) and one decode row [1, 32, 1, 4096]; xPos on
// [1, 4096, 32, 128]; the additive encodings on (N, L, D) = (8, 512, 768) (GPT-2 small) and (1, 4096, 1024);
// T5 on [32, 512, 512]; layout conversion on [1, 4096, 32, 128].
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <posenc/posenc.hpp>

#include "baseline.hpp"
#include "plain.hpp"

namespace {

using posenc::index_t;

namespace plain = posenc_bench::plain;

/// Each arithmetic against the plain loop that computes it: fp32 (float slope, float fma: the loop an engine
/// writes, llama.cpp's arithmetic) against the float-lane loop, exact (double fma per score, one rounding)
/// against the same loop in double lanes. ns_per_call of the two posenc rows is the price of exactness.
/// Control: the plain loop in posenc's slot too, so that `vs_plain` reads what the rotation itself gives two
/// identical loops (1.00 up to its noise; the floor a posenc row of the same shape is read against).
template <bool Causal, bool Exact, bool Control = false>
void BM_AlibiAdd(benchmark::State& state) {
  const index_t n = state.range(0), h = state.range(1), lq = state.range(2), lk = state.range(3);
  auto scores = posenc_bench::random_values(static_cast<std::size_t>(n * h * lq * lk));
  posenc::alibi_config cfg;
  cfg.num_heads = h;
  cfg.arithmetic = Exact ? posenc::alibi_arithmetic::exact : posenc::alibi_arithmetic::fp32;
  posenc::strided_view<float, 4> v(scores.data(), {n, h, lq, lk});
  const auto pos = posenc::positions::offset(lk - lq);  // the queries are the last lq of lk tokens
  std::vector<float> slopes(static_cast<std::size_t>(h));  // 2^(-8 (h+1) / H), H a power of two
  std::vector<double> slopes_d(slopes.size());
  for (index_t i = 0; i < h; ++i) {
    slopes_d[static_cast<std::size_t>(i)] = posenc::alibi_slope(i, h);
    slopes[static_cast<std::size_t>(i)] = static_cast<float>(slopes_d[static_cast<std::size_t>(i)]);
  }
  const auto plain_loop = [&] {
    for (index_t b = 0; b < n; ++b) {
      if constexpr (Exact) plain::alibi_add_exact(scores.data() + b * h * lq * lk, h, lq, lk, slopes_d.data(), lk - lq, Causal);
      else plain::alibi_add(scores.data() + b * h * lq * lk, h, lq, lk, slopes.data(), lk - lq, Causal);
    }
    benchmark::DoNotOptimize(scores.data());
  };
  posenc_bench::run_paired(
      state, scores.size() * sizeof(float),
      [&] {
        if constexpr (Control) {
          plain_loop();
        } else {
          posenc::add_alibi_bias(cfg, v, pos, Causal ? posenc::alibi_mask::causal : posenc::alibi_mask::none);
          benchmark::DoNotOptimize(scores.data());
        }
      },
      plain_loop);
}

/// xPos on queries; calls alternate upscale and downscale (posenc and the plain loop alike) so that the values
/// return to where they started instead of drifting to infinity or to subnormals.
void BM_Xpos(benchmark::State& state) {
  const index_t n = state.range(0), l = state.range(1), h = state.range(2), d = state.range(3);
  posenc::xpos_config cfg;
  cfg.head_dim = d;
  const posenc::xpos_plan plan(cfg);
  posenc::rope_config rc;  // the same rotation as a table, for the plain loop
  rc.head_dim = d;
  rc.base = cfg.base;
  rc.style = cfg.style;
  const posenc::rope_cache<float> cache(posenc::make_rope_plan(rc), l);
  std::vector<float> zeta(static_cast<std::size_t>(d / 2));
  for (index_t i = 0; i < d / 2; ++i)
    zeta[static_cast<std::size_t>(i)] = static_cast<float>((2.0 * static_cast<double>(i) / static_cast<double>(d) + cfg.gamma) / (1.0 + cfg.gamma));
  auto x = posenc_bench::random_values(static_cast<std::size_t>(n * l * h * d));
  posenc::strided_view<float, 4> v(x.data(), {n, l, h, d});
  bool up = true, plain_up = true;
  posenc_bench::run_paired(
      state, x.size() * sizeof(float),
      [&] {
        posenc::apply_xpos(plan, v, posenc::positions::offset(0), l / 2, up ? posenc::xpos_mode::upscale : posenc::xpos_mode::downscale);
        up = !up;
        benchmark::DoNotOptimize(x.data());
      },
      [&] {
        const float sb = static_cast<float>(plain_up ? cfg.scale_base : -cfg.scale_base);
        for (index_t b = 0; b < n; ++b)
          plain::xpos_interleaved(x.data() + b * l * h * d, l, h, d, cache.cos_data(), cache.sin_data(), zeta.data(), sb, l / 2, 0);
        plain_up = !plain_up;
        benchmark::DoNotOptimize(x.data());
      });
}

void BM_SinusoidalAdd(benchmark::State& state) {
  const index_t n = state.range(0), l = state.range(1), d = state.range(2);
  auto x = posenc_bench::random_values(static_cast<std::size_t>(n * l * d));
  posenc::sinusoidal_config cfg;
  cfg.dim = d;
  std::vector<float> w(static_cast<std::size_t>(d / 2));
  for (index_t i = 0; i < d / 2; ++i)
    w[static_cast<std::size_t>(i)] = static_cast<float>(std::pow(cfg.base, -2.0 * static_cast<double>(i) / static_cast<double>(d)));
  posenc::strided_view<float, 3> v(x.data(), {n, l, d});
  posenc_bench::run_paired(
      state, x.size() * sizeof(float),
      [&] {
        posenc::add_sinusoidal(cfg, v, posenc::positions::offset(1000));
        benchmark::DoNotOptimize(x.data());
      },
      [&] {
        plain::sinusoidal_add(x.data(), n, l, d, w.data(), 1000);
        benchmark::DoNotOptimize(x.data());
      });
}

/// The sinusoidal module: its [max_len, D] buffer added (the table path of the additive encodings).
void BM_SinusoidalTableAdd(benchmark::State& state) {
  const index_t n = state.range(0), l = state.range(1), d = state.range(2);
  auto x = posenc_bench::random_values(static_cast<std::size_t>(n * l * d));
  const posenc::sinusoidal_embedding<float> pe({d}, l + 1000);
  posenc::strided_view<float, 3> v(x.data(), {n, l, d});
  posenc_bench::run_paired(
      state, x.size() * sizeof(float),
      [&] {
        pe.forward(v, posenc::positions::offset(1000));
        benchmark::DoNotOptimize(x.data());
      },
      [&] {
        plain::table_add(x.data(), n, l, d, pe.table().data(), 1.0f, 1000);
        benchmark::DoNotOptimize(x.data());
      });
}

/// Plain512: against the plain loop widened to AVX-512 (rows *VsPlain512, registered on AVX-512 CPUs only).
template <bool Plain512 = false>
void BM_LearnedAdd(benchmark::State& state) {
  const index_t n = state.range(0), l = state.range(1), d = state.range(2);
  auto x = posenc_bench::random_values(static_cast<std::size_t>(n * l * d));
  posenc::learned_config cfg;
  cfg.max_positions = l;
  cfg.dim = d;
  posenc::learned_position_embedding<float> emb(cfg);
  emb.init_normal(1);
  posenc::strided_view<float, 3> v(x.data(), {n, l, d});
  posenc_bench::run_paired(
      state, x.size() * sizeof(float),
      [&] {
        emb.forward(v, posenc::positions::offset(0));
        benchmark::DoNotOptimize(x.data());
      },
      [&] {
        if constexpr (Plain512) plain::table_add_avx512(x.data(), n, l, d, emb.table().data(), static_cast<float>(cfg.scale), 0);
        else plain::table_add(x.data(), n, l, d, emb.table().data(), static_cast<float>(cfg.scale), 0);
        benchmark::DoNotOptimize(x.data());
      });
}

/// T5 bias expansion: writes [H, Lq, Lk] (the baseline streams the same bytes in place).
void BM_T5Bias(benchmark::State& state) {
  const index_t h = state.range(0), lq = state.range(1), lk = state.range(2);
  posenc::t5_relative_bias<float> rel(h, {true, 32, 128});
  rel.init_normal(5);
  posenc_bench::buffer<float> bias(static_cast<std::size_t>(h * lq * lk));
  posenc::strided_view<float, 3> v(bias.data(), {h, lq, lk});
  posenc_bench::run_paired(state, bias.size() * sizeof(float), [&] {
    rel.forward(v, 0);
    benchmark::DoNotOptimize(bias.data());
  });
}

void BM_ConvertRopeLayout(benchmark::State& state) {
  const index_t n = state.range(0), l = state.range(1), h = state.range(2), d = state.range(3);
  const auto in = posenc_bench::random_values(static_cast<std::size_t>(n * l * h * d));
  posenc_bench::buffer<float> out(in.size());
  posenc::strided_view<const float, 4> vi(in.data(), {n, l, h, d});
  posenc::strided_view<float, 4> vo(out.data(), {n, l, h, d});
  posenc_bench::run_paired(
      state, in.size() * sizeof(float),
      [&] {
        posenc::convert_rope_layout(vi, vo, d, 0, posenc::rope_style::half_split, posenc::rope_style::interleaved);
        benchmark::DoNotOptimize(out.data());
      },
      [&] {
        plain::half_split_to_interleaved(in.data(), out.data(), n * l * h, d);
        benchmark::DoNotOptimize(out.data());
      });
}

const std::string S = posenc_bench::isa_suffix();
BENCHMARK(BM_AlibiAdd<false, false>)->Name("BM_AlibiAdd" + S)->ArgNames({"N", "H", "Lq", "Lk"})
    ->Args({1, 32, 512, 4096})->Args({1, 32, 1, 4096})->UseManualTime();
BENCHMARK(BM_AlibiAdd<true, false>)->Name("BM_AlibiAddCausal" + S)->ArgNames({"N", "H", "Lq", "Lk"})
    ->Args({1, 32, 512, 4096})->Args({1, 32, 1, 4096})->UseManualTime();
BENCHMARK(BM_AlibiAdd<false, true>)->Name("BM_AlibiAddExact" + S)->ArgNames({"N", "H", "Lq", "Lk"})
    ->Args({1, 32, 512, 4096})->Args({1, 32, 1, 4096})->UseManualTime();
BENCHMARK(BM_AlibiAdd<true, true>)->Name("BM_AlibiAddExactCausal" + S)->ArgNames({"N", "H", "Lq", "Lk"})
    ->Args({1, 32, 512, 4096})->Args({1, 32, 1, 4096})->UseManualTime();
// The rotation's floor for the decode row: the plain loop against itself.
BENCHMARK(BM_AlibiAdd<false, false, true>)->Name("BM_AlibiAddPlainControl" + S)->ArgNames({"N", "H", "Lq", "Lk"})
    ->Args({1, 32, 1, 4096})->UseManualTime();
BENCHMARK(BM_Xpos)->Name("BM_Xpos" + S)->ArgNames({"N", "L", "H", "D"})->Args({1, 4096, 32, 128})->UseManualTime();
BENCHMARK(BM_SinusoidalAdd)->Name("BM_SinusoidalAdd" + S)->ArgNames({"N", "L", "D"})
    ->Args({8, 512, 768})->Args({1, 4096, 1024})->UseManualTime();
BENCHMARK(BM_SinusoidalTableAdd)->Name("BM_SinusoidalTableAdd" + S)->ArgNames({"N", "L", "D"})
    ->Args({8, 512, 768})->Args({1, 4096, 1024})->UseManualTime();
BENCHMARK(BM_LearnedAdd<>)->Name("BM_LearnedAdd" + S)->ArgNames({"N", "L", "D"})
    ->Args({8, 512, 768})->Args({1, 4096, 1024})->UseManualTime();
// Against the plain loop widened to AVX-512, where the CPU has it (bench/README.md, run 9).
[[maybe_unused]] const bool kVsPlain512 =
    posenc_bench::plain::has_avx512() &&
    benchmark::RegisterBenchmark(("BM_LearnedAddVsPlain512" + S).c_str(), BM_LearnedAdd<true>)
        ->ArgNames({"N", "L", "D"})->Args({8, 512, 768})->Args({1, 4096, 1024})->UseManualTime();
BENCHMARK(BM_T5Bias)->Name("BM_T5Bias" + S)->ArgNames({"H", "Lq", "Lk"})->Args({32, 512, 512})->UseManualTime();
BENCHMARK(BM_ConvertRopeLayout)->Name("BM_ConvertRopeLayout" + S)->ArgNames({"N", "L", "H", "D"})
    ->Args({1, 4096, 32, 128})->Args({1, 4096, 64, 64})->Args({1, 4096, 16, 256})->Args({1, 4096, 40, 96})->UseManualTime();

}  // namespace
