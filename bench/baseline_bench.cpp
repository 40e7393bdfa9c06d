// BM_StreamFmaBaseline: the baseline paired with itself (baseline.hpp): vs_baseline must read 1.00 (+- 0.05)
// run after run, or the pairing is not cancelling the machine's drift. Sizes: the [1, 4096, 32, 128] float
// tensor (64 MiB, memory-bound) and one decode step (16 KiB, in L1).
// BM_StreamFmaBaselineThreads: the same stream split over 1 or 2 threads, paired with the one-thread stream:
// its vs_baseline is how much the memory system gives a second core, the ceiling of any kernel's two-thread
// speed-up (BM_RopeHalfSplitCacheThreads).
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>

#include "baseline.hpp"
#include "plain.hpp"

namespace {

void BM_StreamFmaBaseline(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0) * state.range(1) * state.range(2) * state.range(3));
  posenc_bench::baseline_buffer own(n * sizeof(float));
  posenc_bench::run_paired(state, n * sizeof(float), [&] { own.run(); });
}
void BM_StreamFmaBaselineThreads(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0) * state.range(1) * state.range(2) * state.range(3));
  const auto threads = static_cast<std::size_t>(state.range(4));
  posenc_bench::buffer<float> x(n, 1.0f);
  const bool wide = posenc_bench::prefer_wide_stream(x.data(), n);  // the width the paired baseline picks too
  posenc_bench::run_paired(state, n * sizeof(float), [&] {
    std::vector<std::thread> pool;
    for (std::size_t t = 1; t < threads; ++t)
      pool.emplace_back(
          [&, t] { posenc_bench::stream_fma(x.data() + n * t / threads, n / threads, 0.999f, 0.001f, wide); });
    posenc_bench::stream_fma(x.data(), n / threads, 0.999f, 0.001f, wide);
    for (auto& t : pool) t.join();
    benchmark::DoNotOptimize(x.data());
  });
}
/// The stream over 16-bit storage (F16C / bfloat16 shifts and rounding, plain.hpp), against the float stream
/// over the same bytes: the "own stream" of the fp16 and bf16 RoPE rows (their vs_baseline divided by this one's).
template <class T>
void BM_StreamFma16(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0) * state.range(1) * state.range(2) * state.range(3));
  posenc_bench::buffer<T> x(n, T{0x3c00});  // 1.0 in fp16; a small positive number in bf16
  posenc_bench::run_paired(state, n * sizeof(T), [&] {
    posenc_bench::plain::stream_fma(x.data(), static_cast<posenc_bench::plain::index_t>(n), 0.999f, 0.001f);
    benchmark::DoNotOptimize(x.data());
  });
}
BENCHMARK(BM_StreamFma16<posenc_bench::plain::f16>)->Name("BM_StreamFmaHalf")->ArgNames({"N", "L", "H", "D"})
    ->Args({1, 4096, 32, 128})->Args({1, 512, 32, 128})->UseManualTime();
BENCHMARK(BM_StreamFma16<posenc_bench::plain::bf16>)->Name("BM_StreamFmaBf16")->ArgNames({"N", "L", "H", "D"})
    ->Args({1, 4096, 32, 128})->Args({1, 512, 32, 128})->UseManualTime();

BENCHMARK(BM_StreamFmaBaselineThreads)->ArgNames({"N", "L", "H", "D", "threads"})->Args({1, 4096, 32, 128, 1})
    ->Args({1, 4096, 32, 128, 2})->UseManualTime();

BENCHMARK(BM_StreamFmaBaseline)->ArgNames({"N", "L", "H", "D"})->Args({1, 4096, 32, 128})->Args({1, 1, 32, 128})
    ->UseManualTime();

}  // namespace
