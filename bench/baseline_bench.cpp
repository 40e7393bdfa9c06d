// BM_StreamFmaBaseline: the memory baseline itself, over the RoPE benchmark shapes (N, L, H, D).
#include <vector>

#include <benchmark/benchmark.h>

#include "baseline.hpp"

static void BM_StreamFmaBaseline(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0) * state.range(1) * state.range(2) * state.range(3));
  std::vector<float> x(n, 1.0f);
  const posenc_bench::loop_timer timer;
  for (auto _ : state) {
    posenc_bench::stream_fma(x.data(), n, 0.999f, 0.001f);
    benchmark::ClobberMemory();
  }
  posenc_bench::report_bytes(state, n, sizeof(float), timer.seconds());
}
BENCHMARK(BM_StreamFmaBaseline)->ArgNames({"N", "L", "H", "D"})->Args({1, 1, 32, 128})->Args({1, 512, 32, 128})->Args({4, 2048, 8, 128});
