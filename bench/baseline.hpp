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
#include <type_traits>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>
#include <posenc/detail/aligned_vector.hpp>

namespace posenc_bench {

/// The buffers every benchmark reads and writes: 64-byte aligned, as an engine's tensors are (PyTorch's
/// allocator aligns to 512 bytes, ggml to 32). std::vector's 16 bytes made every other 32-byte access of a
/// row cross a cache line, for posenc and the plain loop alike, which neither meets in an engine.
template <class T>
using buffer = posenc::detail::aligned_vector<T>;

/// n values uniform in [-1, 1) (drawn as float, converted to T), the same for every run.
template <class T = float>
buffer<T> random_values(std::size_t n, unsigned seed = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  buffer<T> v(n);
  for (T& x : v) x = T(u(gen));
  return v;
}

/// The median of v (0 when empty); reorders v.
inline double median(std::vector<double>& v) {
  if (v.empty()) return 0.0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

/// x = x * a + b over n floats (baseline.cpp): 256 bits wide on AVX2 CPUs, 512 bits with `wide` on AVX-512 ones.
void stream_fma(float* x, std::size_t n, float a, float b, bool wide = false);
/// Whether this CPU runs the 512-bit stream.
bool stream_has_wide();
/// Whether the 512-bit stream over n floats is faster than the 256-bit one by 8% or more in at least seven of
/// nine alternating timings over x (at the first call for each n; later calls for the same n return that answer).
/// A 512-bit stream lowers an Intel core's clock (the AVX-512 licence) for the batch after it: on Emerald Rapids
/// 2.99 -> 2.40 GHz, and a 512-bit kernel right after ran 4% slower while a 256-bit loop recovered
/// (bench/README.md, run 11; bench/licence_probe.cpp). So the baseline runs 512 bits wide only where that buys
/// bandwidth (in L1, and from DRAM: 15-25% there) and 256 bits wide where the widths tie (L2, L3).
bool prefer_wide_stream(float* x, std::size_t n);

/// A buffer the baseline streams over: `bytes` bytes (rounded up to whole floats), and the width chosen for it.
struct baseline_buffer {
  buffer<float> x;
  bool wide;
  explicit baseline_buffer(std::size_t bytes)
      : x((bytes + sizeof(float) - 1) / sizeof(float), 1.0f), wide(prefer_wide_stream(x.data(), x.size())) {}
  void run() {
    stream_fma(x.data(), x.size(), 0.999f, 0.001f, wide);
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
/// in-place pass reads and writes each byte once) and, when given, with `plain`: the loop an engine developer
/// would write for the same work (plain.hpp), on the same data. Batches repeat the call until it takes >= ~200
/// us, so one-token calls are timed over many calls; the order of the two or three batches rotates from one
/// round to the next, so that none always runs first. `vs_baseline` = median of baseline time / kernel time,
/// `vs_plain` = median of plain time / kernel time (>= 1: posenc at least as fast as the plain loop).
template <class K, class P>
void run_paired(benchmark::State& state, std::size_t bytes, K&& kernel, P&& plain) {
  constexpr bool has_plain = !std::is_same_v<std::decay_t<P>, std::nullptr_t>;
  baseline_buffer base(bytes);
  auto baseline = [&] { base.run(); };
  auto plain_call = [&] {
    if constexpr (has_plain) plain();
  };
  // Warm each, then size the batch.
  kernel();
  baseline();
  plain_call();
  int reps = 1;
  while (reps < (1 << 20) && time_batch(kernel, reps) < 2e-4) reps *= 2;
  std::vector<double> ratios, plain_ratios;
  double kernel_seconds = 0.0;
  std::int64_t batches = 0;
  const int parts = has_plain ? 3 : 2;
  for (auto _ : state) {
    double t[3] = {0.0, 0.0, 0.0};  // kernel, baseline, plain
    for (int k = 0; k < parts; ++k) {
      const int which = static_cast<int>((batches + k) % parts);
      if (which == 0) t[0] = time_batch(kernel, reps);
      if (which == 1) t[1] = time_batch(baseline, reps);
      if (which == 2) t[2] = time_batch(plain_call, reps);
    }
    ratios.push_back(t[1] / t[0]);
    if (has_plain) plain_ratios.push_back(t[2] / t[0]);
    kernel_seconds += t[0];
    ++batches;
    state.SetIterationTime(t[0]);  // one iteration is one batch: Google Benchmark sizes the run in batches
  }
  state.counters["vs_baseline"] = median(ratios);
  if (has_plain) state.counters["vs_plain"] = median(plain_ratios);
  state.counters["ns_per_call"] = batches > 0 ? kernel_seconds / static_cast<double>(batches * reps) * 1e9 : 0.0;
  state.counters["calls_per_batch"] = reps;
  if (stream_has_wide()) state.counters["baseline_bits"] = base.wide ? 512 : 256;
  state.SetBytesProcessed(static_cast<std::int64_t>(2 * bytes) * reps * state.iterations());
}

/// run_paired without a plain loop (the baseline against itself, peers).
template <class K>
void run_paired(benchmark::State& state, std::size_t bytes, K&& kernel) {
  run_paired(state, bytes, std::forward<K>(kernel), nullptr);
}

/// The suffix naming how this binary dispatches: "/<isa>" for run-time dispatch (the ISA it picked on this
/// CPU), "/<isa>/static" for a POSENC_STATIC_DISPATCH build.
std::string isa_suffix();

}  // namespace posenc_bench
