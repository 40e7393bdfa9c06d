// What a loop leaves behind for the loop after it on an AVX-512 CPU: the core clock after 256- and 512-bit
// loops, and how fast a memory-bound add (x += table, the learned position embedding's pass) runs 256 and 512
// bits wide right after each. Intel cores run dense 512-bit floating-point code at a lower clock (the AVX-512
// frequency licence) and keep it for a while after such code stops, so a benchmark's neighbours, or an engine's
// GEMMs, set the clock a kernel runs at (bench/README.md, run 11).
//
// The clock is read with a chain of dependent 64-bit imuls (3 cycles each on every x86 core of the last decade)
// timed against the TSC, whose rate is calibrated against steady_clock at start; it runs ~20 us, short next to
// the licence's hysteresis. Each predecessor runs ~1 ms, then the clock is read, then the add is timed, then the
// clock is read again; medians over the rounds, the two widths and posenc's own add (whatever the dispatcher
// picked: POSENC_ISA=avx2 / avx512 selects) alternating within each round.
//
//   posenc_licence_probe [MiB per buffer, default 16] [rounds, default 150]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include <posenc/detail/aligned_vector.hpp>
#include <posenc/dispatch.hpp>
#include <posenc/learned.hpp>

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>
#include <x86intrin.h>

namespace {

using posenc::index_t;
#define PROBE_AVX2 __attribute__((target("avx2,fma"), noinline))
#define PROBE_AVX512 __attribute__((target("avx512f"), noinline))

PROBE_AVX2 void add256(float* x, const float* t, index_t n) {
  for (index_t i = 0; i < n; i += 8)
    _mm256_storeu_ps(x + i, _mm256_add_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(t + i)));
}
PROBE_AVX512 void add512(float* x, const float* t, index_t n) {
  for (index_t i = 0; i < n; i += 16)
    _mm512_storeu_ps(x + i, _mm512_add_ps(_mm512_loadu_ps(x + i), _mm512_loadu_ps(t + i)));
}
// The paired benchmark baseline's shape: an in-place multiply-add stream over another buffer.
PROBE_AVX2 void stream256(float* b, index_t n) {
  const __m256 a = _mm256_set1_ps(0.999f), c = _mm256_set1_ps(0.001f);
  for (index_t i = 0; i < n; i += 8) _mm256_storeu_ps(b + i, _mm256_fmadd_ps(_mm256_loadu_ps(b + i), a, c));
}
PROBE_AVX512 void stream512(float* b, index_t n) {
  const __m512 a = _mm512_set1_ps(0.999f), c = _mm512_set1_ps(0.001f);
  for (index_t i = 0; i < n; i += 16) _mm512_storeu_ps(b + i, _mm512_fmadd_ps(_mm512_loadu_ps(b + i), a, c));
}
// A GEMM's inner loop as the core sees it: independent 512-bit FMAs on registers, no memory.
PROBE_AVX512 float compute512(index_t iters) {
  __m512 acc[8];
  for (auto& a : acc) a = _mm512_set1_ps(1.0f);
  const __m512 m = _mm512_set1_ps(0.9999f), c = _mm512_set1_ps(0.0001f);
  for (index_t i = 0; i < iters; ++i)
    for (auto& a : acc) a = _mm512_fmadd_ps(a, m, c);
  __m512 s = acc[0];
  for (int k = 1; k < 8; ++k) s = _mm512_add_ps(s, acc[k]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, s);
  float sum = 0.0f;
  for (float v : lanes) sum += v;
  return sum;
}

double ticks_per_second() {
  const auto t0 = std::chrono::steady_clock::now();
  const unsigned long long c0 = __rdtsc();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const unsigned long long c1 = __rdtsc();
  return static_cast<double>(c1 - c0) / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// The core clock now, in GHz: 6000 dependent imuls of 3 cycles each.
double clock_ghz(double tps) {
  unsigned long long v = 3;
  const unsigned long long c0 = __rdtsc();
  for (int i = 0; i < 1500; ++i)
    asm volatile("imul %0, %0\n\timul %0, %0\n\timul %0, %0\n\timul %0, %0" : "+r"(v));
  const unsigned long long c1 = __rdtsc();
  return 18000.0 / (static_cast<double>(c1 - c0) / tps) * 1e-9;
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    std::printf("posenc_licence_probe: this CPU has no AVX-512F: nothing to measure\n");
    return 0;
  }
  const long mib = argc > 1 ? std::atol(argv[1]) : 16;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 150;
  if (mib < 1 || rounds < 1) {
    std::fprintf(stderr, "usage: posenc_licence_probe [MiB per buffer >= 1] [rounds >= 1]\n");
    return 2;
  }
  const index_t dim = 1024;
  const index_t len = mib * (index_t{1} << 20) / index_t{sizeof(float)} / dim;
  const index_t n = len * dim;
  posenc::detail::aligned_vector<float> x(static_cast<std::size_t>(n), 0.5f), b(static_cast<std::size_t>(n), 1.0f);
  posenc::learned_config cfg;
  cfg.max_positions = len;
  cfg.dim = dim;
  posenc::learned_position_embedding<float> emb(cfg);
  emb.init_normal(1);
  const float* table = emb.table().data();
  posenc::strided_view<float, 3> xv(x.data(), {1, len, dim});
  const double tps = ticks_per_second();
  volatile float sink = 0.0f;

  // Predecessors sized to run ~1 ms on the machine at hand.
  index_t compute_iters = 1000;
  {
    const auto t0 = std::chrono::steady_clock::now();
    sink = sink + compute512(compute_iters);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    compute_iters = std::max<index_t>(1000, static_cast<index_t>(static_cast<double>(compute_iters) * 1e-3 / s));
  }
  struct pred {
    const char* name;
    int kind;
  };
  const pred preds[] = {
      {"scalar (idle core)", 0}, {"256-bit stream", 1}, {"512-bit stream", 2}, {"512-bit FMAs (GEMM-like)", 3}};
  const char* subjects[] = {"add 256-bit", "add 512-bit", "posenc learned add"};
  const int np = 4, ns = 3;
  std::vector<double> t[4][3], before[4][3], after[4][3];
  for (int r = 0; r < rounds; ++r)
    for (int p = 0; p < np; ++p)
      for (int k = 0; k < ns; ++k) {
        const int s = (k + r) % ns;
        switch (preds[p].kind) {
          case 0: {
            const unsigned long long end = __rdtsc() + static_cast<unsigned long long>(tps * 1e-3);
            while (__rdtsc() < end) {
            }
            break;
          }
          case 1: stream256(b.data(), n); break;
          case 2: stream512(b.data(), n); break;
          default: sink = sink + compute512(compute_iters); break;
        }
        before[p][s].push_back(clock_ghz(tps));
        const unsigned long long c0 = __rdtsc();
        if (s == 0) add256(x.data(), table, n);
        else if (s == 1) add512(x.data(), table, n);
        else emb.forward(xv, posenc::positions::offset(0));
        const unsigned long long c1 = __rdtsc();
        after[p][s].push_back(clock_ghz(tps));
        t[p][s].push_back(static_cast<double>(c1 - c0) / tps * 1e6);
      }
  std::printf("posenc_licence_probe: %ld MiB x + %ld MiB table per add, %d rounds, TSC %.3f GHz, "
              "posenc dispatches %s\n",
              mib, mib, rounds, tps * 1e-9, posenc::isa_name(posenc::active_isa()));
  std::printf("%-26s %-20s %10s %14s %13s\n", "after", "the add", "us", "GHz before", "GHz after");
  for (int p = 0; p < np; ++p)
    for (int s = 0; s < ns; ++s)
      std::printf("%-26s %-20s %10.1f %14.2f %13.2f\n", preds[p].name, subjects[s], median(t[p][s]),
                  median(before[p][s]), median(after[p][s]));
  return 0;
}

#else
int main() {
  std::printf("posenc_licence_probe: x86-64 with GCC or Clang only: nothing to measure\n");
  return 0;
}
#endif
