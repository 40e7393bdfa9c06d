// The memory baseline: an in-place streaming multiply-add, x = x * a + b, over the same bytes as the kernel
// it is paired with. Its own translation unit, built once at -O3 with default flags, so that the dynamic-dispatch
// and the -march=native benchmark binaries measure against the same loops. On x86 it is compiled twice, for
// AVX2 and for AVX-512 (target attributes, chosen at run time from the CPU), and each baseline_buffer picks its
// width by size (prefer_wide_stream): a 512-bit stream lowers an Intel core's clock for the batch after it (the
// AVX-512 frequency licence), so it is used only where it is the faster stream (bench/README.md, run 11).
#include "baseline.hpp"

#include <algorithm>
#include <chrono>
#include <map>

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(_M_X64))
#define BASELINE_X86 1
#endif

namespace posenc_bench {
namespace {

// The loop, written once; each width below is this loop compiled for its target (vectorised by the compiler at
// -O3, as the target_clones it replaced: unrolled, with aligned main loops; a one-vector intrinsics loop ran 1.4x
// slower in L1 on Emerald Rapids).
__attribute__((always_inline)) inline void stream_loop(float* __restrict x, std::size_t n, float a, float b) {
  for (std::size_t i = 0; i < n; ++i) x[i] = x[i] * a + b;
}

void stream_portable(float* x, std::size_t n, float a, float b) { stream_loop(x, n, a, b); }

#if BASELINE_X86
__attribute__((target("avx2,fma"))) void stream_256(float* x, std::size_t n, float a, float b) {
  stream_loop(x, n, a, b);
}
__attribute__((target("avx512f"))) void stream_512(float* x, std::size_t n, float a, float b) {
  stream_loop(x, n, a, b);
}
bool cpu_avx2() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}
#endif

double seconds(float* x, std::size_t n, bool wide, int reps) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < reps; ++r) stream_fma(x, n, 0.999f, 0.001f, wide);
  benchmark::ClobberMemory();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
}

}  // namespace

bool stream_has_wide() {
#if BASELINE_X86
  static const bool has = cpu_avx2() && __builtin_cpu_supports("avx512f");
  return has;
#else
  return false;
#endif
}

void stream_fma(float* x, std::size_t n, float a, float b, bool wide) {
#if BASELINE_X86
  if (wide && stream_has_wide()) return stream_512(x, n, a, b);
  if (cpu_avx2()) return stream_256(x, n, a, b);
#endif
  (void)wide;
  stream_portable(x, n, a, b);
}

bool prefer_wide_stream(float* x, std::size_t n) {
  if (!stream_has_wide() || n == 0) return false;
  // One choice per size for the whole process, so that every baseline over the same bytes (BM_StreamFmaBaseline
  // pairs two) streams at the same width.
  static std::map<std::size_t, bool> chosen;
  const auto it = chosen.find(n);
  if (it != chosen.end()) return it->second;
  stream_fma(x, n, 0.999f, 0.001f, false);
  const double once = seconds(x, n, true, 1);
  const int reps = static_cast<int>(std::clamp(1e-4 / std::max(once, 1e-9), 1.0, 4096.0));  // >= ~100 us a timing
  // Nine alternating pairs; 512 bits only when at least seven of them show it 8% faster: one slow moment of the
  // VM (a neighbour's burst, page faults) must not set the width of every later benchmark of this size.
  int wins = 0;
  for (int r = 0; r < 9; ++r) {
    const double narrow = seconds(x, n, false, reps);
    const double wide = seconds(x, n, true, reps);
    // Near a tie 256 bits win: the clock the 512-bit loop leaves behind costs the next batch more than it gains.
    if (wide < 0.92 * narrow) ++wins;
  }
  const bool w = wins >= 7;
  chosen.emplace(n, w);
  return w;
}

}  // namespace posenc_bench
