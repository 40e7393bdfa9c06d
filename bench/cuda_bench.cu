// The CUDA launchers (posenc/cuda/) against a device-to-device copy of the same traffic, the GPU counterpart of
// the CPU benchmarks' paired baseline (baseline.hpp): within each benchmark, batches of the kernel alternate
// with batches of cudaMemcpyAsync(DeviceToDevice) on the same stream, both timed by CUDA events, and `vs_copy`
// is the median over batches of (copy time / kernel time): the kernel's bytes/s as a fraction of what a plain
// copy got a moment before or after. The copy moves traffic / 2 bytes, so it reads and writes as many bytes as
// the kernel does (an in-place RoPE reads and writes each byte once).
// BM_CudaCopyBaseline pairs the copy with itself and should read 1.00.
//
// Rows: RoPE in place (rope_frequencies: angles formed on the device; rope_table<float>: a cos/sin table),
// both pair styles, float / __half / __nv_bfloat16, on [1, 4096, 32, 128] (prefill) and [1, 1, 32, 128]
// (one token); the fused q+k decode step of one token (32 q + 8 kv heads of a fused QKV buffer, one launch);
// ALiBi added to scores [1, 32, 512, 4096] and one decode row [1, 32, 1, 4096], plain and causal. The shapes
// are the CPU benchmarks' (rope_bench.cpp, encodings_bench.cpp). Names end in /sm_<major><minor> of the device.
//
// Without a CUDA device the binary prints one line and exits 0 (nothing to measure).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>
#include <posenc/alibi_config.hpp>
#include <posenc/cuda/alibi.cuh>
#include <posenc/cuda/rope.cuh>
#include <posenc/positions.hpp>
#include <posenc/rope_plan.hpp>
#include <posenc/tensor_view.hpp>

namespace {

using posenc::index_t;

/// A failed CUDA runtime call: thrown, and turned into SkipWithError by `guarded` (never abort()).
void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + " failed: " + cudaGetErrorString(e));
}

/// n elements of T in device memory, freed on scope exit.
template <class T>
struct device_array {
  T* p = nullptr;
  explicit device_array(std::size_t n) { check(cudaMalloc(&p, std::max<std::size_t>(n, 1) * sizeof(T)), "cudaMalloc"); }
  device_array(const device_array&) = delete;
  device_array& operator=(const device_array&) = delete;
  ~device_array() { cudaFree(p); }
};

template <class T>
T from_float(float x) {
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(x);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(x);
  else return x;
}

/// n values uniform in [-1, 1) (drawn as float, rounded to T), the same for every run, in device memory.
template <class T>
void fill_random(T* device, std::size_t n, unsigned seed = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<T> h(n);
  for (T& x : h) x = from_float<T>(u(gen));
  check(cudaMemcpy(device, h.data(), n * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy");
}

/// A stream and the three events that bracket a pair of batches on it.
struct stream_timer {
  cudaStream_t stream = nullptr;
  cudaEvent_t ev[3] = {nullptr, nullptr, nullptr};
  stream_timer() {
    // A blocking stream: it waits for the synchronous cudaMemcpy / cudaMemset that filled the buffers.
    check(cudaStreamCreate(&stream), "cudaStreamCreate");
    for (cudaEvent_t& e : ev) check(cudaEventCreate(&e), "cudaEventCreate");
  }
  stream_timer(const stream_timer&) = delete;
  stream_timer& operator=(const stream_timer&) = delete;
  ~stream_timer() {
    for (cudaEvent_t e : ev) cudaEventDestroy(e);
    cudaStreamDestroy(stream);
  }
  /// Seconds of GPU time of `reps` calls of `first`, then of `second`, back to back on the stream.
  template <class A, class B>
  void pair(A& first, B& second, int reps, double& t_first, double& t_second) {
    check(cudaEventRecord(ev[0], stream), "cudaEventRecord");
    for (int r = 0; r < reps; ++r) first();
    check(cudaEventRecord(ev[1], stream), "cudaEventRecord");
    for (int r = 0; r < reps; ++r) second();
    check(cudaEventRecord(ev[2], stream), "cudaEventRecord");
    check(cudaEventSynchronize(ev[2]), "cudaEventSynchronize");  // also where a failed kernel reports
    float ms1 = 0.0f, ms2 = 0.0f;
    check(cudaEventElapsedTime(&ms1, ev[0], ev[1]), "cudaEventElapsedTime");
    check(cudaEventElapsedTime(&ms2, ev[1], ev[2]), "cudaEventElapsedTime");
    t_first = 1e-3 * ms1;
    t_second = 1e-3 * ms2;
  }
};

/// A device-to-device copy of `bytes` bytes on `stream` (reads and writes each byte once).
struct copy_baseline {
  device_array<unsigned char> src, dst;
  std::size_t bytes;
  cudaStream_t stream;
  copy_baseline(std::size_t n, cudaStream_t s) : src(n), dst(n), bytes(n), stream(s) {
    check(cudaMemset(src.p, 1, n), "cudaMemset");
  }
  void operator()() { check(cudaMemcpyAsync(dst.p, src.p, bytes, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync"); }
};

/// Runs `kernel` (one call reads and writes `traffic` bytes in all, launched on t.stream) paired with a copy of
/// traffic / 2 bytes. A batch repeats the call until it takes >= ~1 ms of GPU time, so that one-token calls
/// are timed over many back-to-back launches (throughput, as a decode loop issues them) and the events'
/// ~0.5 us resolution does not matter; the order alternates (kernel first, then copy first).
template <class K>
void run_paired(benchmark::State& state, stream_timer& t, std::size_t traffic, K&& kernel) {
  copy_baseline copy(traffic / 2, t.stream);
  // Warm both untimed (lazy loading: a kernel's first launch loads its module on the host), then size the batch.
  kernel();
  copy();
  check(cudaStreamSynchronize(t.stream), "cudaStreamSynchronize");
  double tk = 0.0, tc = 0.0;
  int reps = 1;
  for (;; reps *= 2) {
    t.pair(kernel, copy, reps, tk, tc);
    if (tk >= 1e-3 || reps >= (1 << 16)) break;
  }
  std::vector<double> ratios;
  double kernel_seconds = 0.0;
  std::int64_t batches = 0;
  for (auto _ : state) {
    if (batches % 2 == 0) t.pair(kernel, copy, reps, tk, tc);
    else t.pair(copy, kernel, reps, tc, tk);
    ratios.push_back(tc / tk);
    kernel_seconds += tk;
    ++batches;
    state.SetIterationTime(tk);  // one iteration is one batch
  }
  std::nth_element(ratios.begin(), ratios.begin() + static_cast<std::ptrdiff_t>(ratios.size() / 2), ratios.end());
  state.counters["vs_copy"] = ratios.empty() ? 0.0 : ratios[ratios.size() / 2];
  state.counters["ns_per_call"] = batches > 0 ? kernel_seconds / static_cast<double>(batches * reps) * 1e9 : 0.0;
  state.counters["calls_per_batch"] = reps;
  state.SetBytesProcessed(static_cast<std::int64_t>(traffic) * reps * state.iterations());
}

/// A posenc or CUDA error ends the benchmark with its message instead of the process.
template <class F>
void guarded(benchmark::State& state, F&& body) {
  try {
    body();
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

posenc::rope_plan bench_plan(posenc::rope_style style, index_t d) {
  posenc::rope_config cfg;
  cfg.head_dim = d;
  cfg.base = 500000.0;
  cfg.style = style;
  return posenc::make_rope_plan(cfg);
}

const auto kPos = posenc::positions::offset(4096);  // positions past a 4096-token prompt, as on the CPU

/// The copy against itself over the bytes of an in-place float pass over [N, L, H, D].
void BM_CudaCopyBaseline(benchmark::State& state) {
  guarded(state, [&] {
    const auto elems = static_cast<std::size_t>(state.range(0) * state.range(1) * state.range(2) * state.range(3));
    stream_timer t;
    copy_baseline other(elems * sizeof(float), t.stream);
    run_paired(state, t, 2 * elems * sizeof(float), other);
  });
}

/// In place on [N, L, H, D] of T: from rope_table<float> (Table) or rope_frequencies (angles on the device).
template <class T, posenc::rope_style Style, bool Table>
void BM_CudaRope(benchmark::State& state) {
  guarded(state, [&] {
    const index_t n = state.range(0), l = state.range(1), h = state.range(2), d = state.range(3);
    stream_timer t;
    const posenc::cuda::rope_frequencies freq(bench_plan(Style, d));
    const posenc::cuda::rope_table<float> table(freq, l + 4096, t.stream);
    const auto elems = static_cast<std::size_t>(n * l * h * d);
    device_array<T> x(elems);
    fill_random(x.p, elems);
    const posenc::strided_view<T, 4> v(x.p, {n, l, h, d});
    run_paired(state, t, 2 * elems * sizeof(T), [&] {
      if constexpr (Table) posenc::cuda::apply_rope(table, v, kPos, t.stream);
      else posenc::cuda::apply_rope(freq, v, kPos, t.stream);
    });
  });
}

/// One decode step of a fused QKV buffer [N, 1, (Hq + 2 Hkv) * D] of float: q and k rotated in one launch.
template <bool Table>
void BM_CudaRopeDecodeFusedQk(benchmark::State& state) {
  guarded(state, [&] {
    const index_t n = state.range(0), hq = state.range(1), hk = state.range(2), d = state.range(3);
    const index_t row = (hq + 2 * hk) * d;
    stream_timer t;
    const posenc::cuda::rope_frequencies freq(bench_plan(posenc::rope_style::half_split, d));
    const posenc::cuda::rope_table<float> table(freq, 8192, t.stream);
    device_array<float> qkv(static_cast<std::size_t>(n * row));
    fill_random(qkv.p, static_cast<std::size_t>(n * row));
    const posenc::strided_view<float, 4> q(qkv.p, {n, 1, hq, d}, {row, row, d, 1});
    const posenc::strided_view<float, 4> k(qkv.p + hq * d, {n, 1, hk, d}, {row, row, d, 1});
    run_paired(state, t, 2 * static_cast<std::size_t>(n * (hq + hk) * d) * sizeof(float), [&] {
      if constexpr (Table) posenc::cuda::apply_rope_qk(table, q, k, kPos, t.stream);
      else posenc::cuda::apply_rope_qk(freq, q, k, kPos, t.stream);
    });
  });
}

/// ALiBi added in place to float scores [N, H, Lq, Lk]; the queries are the last Lq of Lk tokens. Fp32: the
/// fp32 arithmetic (float slope, one float fma) instead of the exact one (double fma).
template <bool Causal, bool Fp32 = false>
void BM_CudaAlibiAdd(benchmark::State& state) {
  guarded(state, [&] {
    const index_t n = state.range(0), h = state.range(1), lq = state.range(2), lk = state.range(3);
    stream_timer t;
    posenc::alibi_config cfg;
    cfg.num_heads = h;
    cfg.arithmetic = Fp32 ? posenc::alibi_arithmetic::fp32 : posenc::alibi_arithmetic::exact;
    const auto elems = static_cast<std::size_t>(n * h * lq * lk);
    device_array<float> scores(elems);
    fill_random(scores.p, elems);
    const posenc::strided_view<float, 4> v(scores.p, {n, h, lq, lk});
    const auto pos = posenc::positions::offset(lk - lq);
    const auto mask = Causal ? posenc::alibi_mask::causal : posenc::alibi_mask::none;
    run_paired(state, t, 2 * elems * sizeof(float), [&] { posenc::cuda::add_alibi_bias(cfg, v, pos, mask, t.stream); });
  });
}

void rope_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"N", "L", "H", "D"})->Args({1, 4096, 32, 128})->Args({1, 1, 32, 128})->UseManualTime();
}

template <class T>
void register_rope(const std::string& type, const std::string& suffix) {
  using posenc::rope_style;
  const auto add = [&](const std::string& name, void (*fn)(benchmark::State&)) {
    benchmark::RegisterBenchmark(("BM_CudaRope" + name + type + suffix).c_str(), fn)->Apply(rope_shapes);
  };
  add("HalfSplitTable", BM_CudaRope<T, rope_style::half_split, true>);
  add("HalfSplitFreq", BM_CudaRope<T, rope_style::half_split, false>);
  add("InterleavedTable", BM_CudaRope<T, rope_style::interleaved, true>);
  add("InterleavedFreq", BM_CudaRope<T, rope_style::interleaved, false>);
}

/// Registered at run time, once a device is known: the names carry its compute capability, as the CPU
/// benchmarks' carry the ISA.
void register_all(const std::string& s) {
  benchmark::RegisterBenchmark(("BM_CudaCopyBaseline" + s).c_str(), BM_CudaCopyBaseline)->Apply(rope_shapes);
  register_rope<float>("", s);
  register_rope<__half>("Half", s);
  register_rope<__nv_bfloat16>("Bf16", s);
  for (const auto& [name, fn] : {std::pair{"BM_CudaRopeDecodeFusedQkTable", BM_CudaRopeDecodeFusedQk<true>},
                                 std::pair{"BM_CudaRopeDecodeFusedQkFreq", BM_CudaRopeDecodeFusedQk<false>}})
    benchmark::RegisterBenchmark((name + s).c_str(), fn)->ArgNames({"N", "Hq", "Hkv", "D"})->Args({1, 32, 8, 128})
        ->UseManualTime();
  for (const auto& [name, fn] : {std::pair{"BM_CudaAlibiAdd", BM_CudaAlibiAdd<false>},
                                 std::pair{"BM_CudaAlibiAddCausal", BM_CudaAlibiAdd<true>},
                                 std::pair{"BM_CudaAlibiAddFp32", BM_CudaAlibiAdd<false, true>}})
    benchmark::RegisterBenchmark((name + s).c_str(), fn)->ArgNames({"N", "H", "Lq", "Lk"})->Args({1, 32, 512, 4096})
        ->Args({1, 32, 1, 4096})->UseManualTime();
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);  // first, so that --help works without a device
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    std::printf("posenc_cuda_bench: no CUDA device (%s): nothing to measure\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "cudaGetDeviceCount found 0 devices");
    return 0;
  }
  cudaDeviceProp prop{};
  if (const cudaError_t pe = cudaGetDeviceProperties(&prop, 0); pe != cudaSuccess) {
    std::printf("posenc_cuda_bench: cudaGetDeviceProperties failed: %s\n", cudaGetErrorString(pe));
    return 1;
  }
  benchmark::AddCustomContext("cuda_device", prop.name);
  register_all("/sm_" + std::to_string(prop.major) + std::to_string(prop.minor));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
