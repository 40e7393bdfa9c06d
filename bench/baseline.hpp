// The paired memory baseline every posenc benchmark reports against (issue #7, section 6): within each
// benchmark, batches of the kernel alternate with batches of an in-place streaming multiply-add over the same
// number of bytes (read + write once each), and `vs_baseline` is the median over batches of
// (baseline time / kernel time): the kernel's bytes/s as a fraction of what the memory system gave the
// baseline a moment earlier or later. Pairing in time cancels the drift of a shared, throttled or noisy
// machine that a baseline measured once per run does not; BM_StreamFmaBaseline pairs the baseline with itself
// and should read 1.00. The reported time is per batch of `calls_per_batch` calls (manual time, so that
// one-token calls do not make the run length explode); `ns_per_call` is the kernel's time per call.
#pragma once

#include <algorithm>
#include <chrono>
#include <random>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

namespace posenc_bench {

/// n values uniform in [-1, 1) (drawn as float, converted to T), the same for every run.
template <class T = float>
std::vector<T> random_values(std::size_t n, unsigned seed = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<T> v(n);
  for (T& x : v) x = T(u(gen));
  return v;
}

/// x = x * a + b over n floats (baseline.cpp).
void stream_fma(float* x, std::size_t n, float a, float b);

/// A buffer the baseline streams over: `bytes` bytes (rounded up to whole floats).
struct baseline_buffer {
  std::vector<float> x;
  explicit baseline_buffer(std::size_t bytes) : x((bytes + sizeof(float) - 1) / sizeof(float), 1.0f) {}
  void run() {
    stream_fma(x.data(), x.size(), 0.999f, 0.001f);
    benchmark::ClobberMemory();
  }
};

template <class F>
double time_batch(F& f, int reps) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < reps; ++r) f();
  benchmark::ClobberMemory();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Runs `kernel` paired with the baseline over `bytes` bytes (the kernel's read + write traffic halved: an
/// in-place pass reads and writes each byte once). Batches repeat the call until it takes >= ~200 us, so
/// one-token calls are timed over many calls; the order alternates (kernel first, then baseline first).
template <class K>
void run_paired(benchmark::State& state, std::size_t bytes, K&& kernel) {
  baseline_buffer base(bytes);
  auto baseline = [&] { base.run(); };
  // Warm both, then size the batch.
  kernel();
  baseline();
  int reps = 1;
  while (reps < (1 << 20) && time_batch(kernel, reps) < 2e-4) reps *= 2;
  std::vector<double> ratios;
  double kernel_seconds = 0.0;
  std::int64_t batches = 0;
  for (auto _ : state) {
    double tk = 0.0, tb = 0.0;
    if (batches % 2 == 0) {
      tk = time_batch(kernel, reps);
      tb = time_batch(baseline, reps);
    } else {
      tb = time_batch(baseline, reps);
      tk = time_batch(kernel, reps);
    }
    ratios.push_back(tb / tk);
    kernel_seconds += tk;
    ++batches;
    state.SetIterationTime(tk);  // one iteration is one batch: Google Benchmark sizes the run in batches
  }
  std::nth_element(ratios.begin(), ratios.begin() + static_cast<std::ptrdiff_t>(ratios.size() / 2), ratios.end());
  state.counters["vs_baseline"] = ratios.empty() ? 0.0 : ratios[ratios.size() / 2];
  state.counters["ns_per_call"] = batches > 0 ? kernel_seconds / static_cast<double>(batches * reps) * 1e9 : 0.0;
  state.counters["calls_per_batch"] = reps;
  state.SetBytesProcessed(static_cast<std::int64_t>(2 * bytes) * reps * state.iterations());
}

/// The suffix naming how this binary dispatches: "/<isa>" for run-time dispatch (the ISA it picked on this
/// CPU), "/<isa>/static" for a POSENC_STATIC_DISPATCH build.
std::string isa_suffix();

}  // namespace posenc_bench
