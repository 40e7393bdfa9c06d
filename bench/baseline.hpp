// The memory baseline every posenc benchmark reports against: an in-place streaming multiply-add over the
// same bytes (read + write once), i.e. what the memory system allows for a kernel that touches each element
// once. Measured in the same run, so the ratio `vs_baseline` is comparable across machines.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <vector>

#include <benchmark/benchmark.h>

namespace posenc_bench {

inline void stream_fma(float* x, std::size_t n, float a, float b) {
  for (std::size_t i = 0; i < n; ++i) x[i] = x[i] * a + b;
}

/// Bytes per second (read + write) of stream_fma over `floats` elements, measured once per size (~0.2 s).
inline double baseline_bytes_per_second(std::size_t floats) {
  static std::map<std::size_t, double> cache;
  auto it = cache.find(floats);
  if (it != cache.end()) return it->second;
  std::vector<float> x(floats, 1.0f);
  using clock = std::chrono::steady_clock;
  std::size_t reps = 0;
  const auto t0 = clock::now();
  double elapsed = 0.0;
  do {
    stream_fma(x.data(), x.size(), 0.999f, 0.001f);
    benchmark::ClobberMemory();
    ++reps;
    elapsed = std::chrono::duration<double>(clock::now() - t0).count();
  } while (elapsed < 0.2);
  benchmark::DoNotOptimize(x.data());
  const double bps = 2.0 * sizeof(float) * static_cast<double>(floats) * static_cast<double>(reps) / elapsed;
  cache.emplace(floats, bps);
  return bps;
}

/// Sets bytes processed (read + write of every element) and vs_baseline = (kernel bytes/s) / (baseline
/// bytes/s over the same bytes). `seconds` is the wall time of the timed loop, measured by the caller.
inline void report_bytes(benchmark::State& state, std::size_t elements, std::size_t elem_bytes, double seconds) {
  const double bytes = 2.0 * static_cast<double>(elements * elem_bytes);
  const auto iters = static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(bytes * iters));
  const double base = baseline_bytes_per_second(elements * elem_bytes / sizeof(float));
  state.counters["vs_baseline"] = seconds > 0.0 ? bytes * iters / seconds / base : 0.0;
}

/// Wall time of a benchmark loop: start before `for (auto _ : state)`, seconds() after it.
struct loop_timer {
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }
};

}  // namespace posenc_bench
