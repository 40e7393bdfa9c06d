// ALiBi, sinusoidal and learned additions against the same-run memory baseline: each reads and writes its
// tensor once, so the baseline (an in-place streaming multiply-add over the same bytes) is its ceiling.
// Shapes: ALiBi on decode scores [1, 32, 1, 4096] and prefill scores [1, 32, 512, 512]; additive
// encodings on (N, L, D) = (8, 512, 768) (GPT-2 small) and a decode step (64, 1, 768).
#include <random>
#include <vector>

#include <benchmark/benchmark.h>
#include <posenc/posenc.hpp>

#include "baseline.hpp"

namespace {

std::vector<float> random_floats(std::size_t n) {
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(gen);
  return v;
}

void BM_AlibiAddCausal(benchmark::State& state) {
  const posenc::index_t n = state.range(0), h = state.range(1), lq = state.range(2), lk = state.range(3);
  auto scores = random_floats(static_cast<std::size_t>(n * h * lq * lk));
  posenc::alibi_config cfg;
  cfg.num_heads = h;
  posenc::strided_view<float, 4> v(scores.data(), {n, h, lq, lk});
  const auto pos = posenc::positions::offset(lk - lq);  // the queries are the last lq of lk tokens
  const posenc_bench::loop_timer timer;
  for (auto _ : state) {
    posenc::add_alibi_bias(cfg, v, pos, posenc::alibi_mask::causal);
    benchmark::ClobberMemory();
  }
  posenc_bench::report_bytes(state, scores.size(), sizeof(float), timer.seconds());
}
BENCHMARK(BM_AlibiAddCausal)->Name("BM_AlibiAddCausal/scalar")->ArgNames({"N", "H", "Lq", "Lk"})
    ->Args({1, 32, 1, 4096})->Args({1, 32, 512, 512});

void BM_SinusoidalAdd(benchmark::State& state) {
  const posenc::index_t n = state.range(0), l = state.range(1), d = state.range(2);
  auto x = random_floats(static_cast<std::size_t>(n * l * d));
  posenc::sinusoidal_config cfg;
  cfg.dim = d;
  posenc::strided_view<float, 3> v(x.data(), {n, l, d});
  const posenc_bench::loop_timer timer;
  for (auto _ : state) {
    posenc::add_sinusoidal(v, cfg, posenc::positions::offset(1000));
    benchmark::ClobberMemory();
  }
  posenc_bench::report_bytes(state, x.size(), sizeof(float), timer.seconds());
}
BENCHMARK(BM_SinusoidalAdd)->Name("BM_SinusoidalAdd/scalar")->ArgNames({"N", "L", "D"})->Args({8, 512, 768})->Args({64, 1, 768});

void BM_LearnedAdd(benchmark::State& state) {
  const posenc::index_t n = state.range(0), l = state.range(1), d = state.range(2);
  auto x = random_floats(static_cast<std::size_t>(n * l * d));
  posenc::learned_config cfg;
  cfg.max_positions = 1024;
  cfg.dim = d;
  posenc::learned_position_embedding<float> emb(cfg);
  emb.init_normal(1);
  posenc::strided_view<float, 3> v(x.data(), {n, l, d});
  const posenc_bench::loop_timer timer;
  for (auto _ : state) {
    emb.forward(v, posenc::positions::offset(0));
    benchmark::ClobberMemory();
  }
  posenc_bench::report_bytes(state, x.size(), sizeof(float), timer.seconds());
}
BENCHMARK(BM_LearnedAdd)->Name("BM_LearnedAdd/scalar")->ArgNames({"N", "L", "D"})->Args({8, 512, 768})->Args({64, 1, 768});

}  // namespace
