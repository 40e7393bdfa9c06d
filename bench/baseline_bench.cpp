// BM_StreamFmaBaseline: the baseline paired with itself (baseline.hpp): vs_baseline must read 1.00 (+- 0.05)
// run after run, or the pairing is not cancelling the machine's drift. Sizes: the [1, 4096, 32, 128] float
// tensor (64 MiB, memory-bound) and one decode step (16 KiB, in L1).
#include <vector>

#include <benchmark/benchmark.h>

#include "baseline.hpp"

namespace {

void BM_StreamFmaBaseline(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0) * state.range(1) * state.range(2) * state.range(3));
  posenc_bench::baseline_buffer own(n * sizeof(float));
  posenc_bench::run_paired(state, n * sizeof(float), [&] { own.run(); });
}
BENCHMARK(BM_StreamFmaBaseline)->ArgNames({"N", "L", "H", "D"})->Args({1, 4096, 32, 128})->Args({1, 1, 32, 128})
    ->UseManualTime();

}  // namespace
