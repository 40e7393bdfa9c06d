// The memory baseline: an in-place streaming multiply-add, x = x * a + b, over the same bytes as the kernel
// it is paired with. Its own translation unit, built at -O3 with one clone per x86 vector width
// (target_clones, chosen at load time from the CPU), so that the dynamic-dispatch and the -march=native
// benchmark binaries measure against the same, widest-vector loop.
#include "baseline.hpp"

namespace posenc_bench {

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(_M_X64)) && defined(__ELF__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void stream_fma(float* __restrict x, std::size_t n, float a, float b) {
  for (std::size_t i = 0; i < n; ++i) x[i] = x[i] * a + b;
}

}  // namespace posenc_bench
