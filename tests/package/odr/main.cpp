// The default path runs on every CPU; the -mavx2 one only where AVX2 is. Prints the kernels the default path
// ran and a hash of its result (run.cmake compares it across emulated CPUs), and checks that both translation
// units agree bit for bit where they run the same kernels.
#include <cstdint>
#include <cstdio>
#include <cstring>

#include <posenc/posenc.hpp>

#include "tu.hpp"

int main() {
  const auto a = work_default();
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a over the bits
  for (float f : a) {
    std::uint32_t u = 0;
    std::memcpy(&u, &f, sizeof u);
    h = (h ^ u) * 1099511628211ull;
  }
  std::printf("default tu: kernels %s, hash %016llx\n", posenc::isa_name(posenc::active_isa()),
              static_cast<unsigned long long>(h));
  if (!posenc::cpu_supports(posenc::isa::avx2)) {
    std::printf("avx2 tu: not run (this CPU lacks AVX2)\nconsumer: ok\n");
    return 0;
  }
  if (posenc::active_isa() == posenc::isa::scalar) {  // the -mavx2 TU compiles no kernels below AVX2
    std::printf("avx2 tu: not compared (scalar kernels capped)\nconsumer: ok\n");
    return 0;
  }
  const auto b = work_avx2();
  const bool same = a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  std::printf("avx2 tu: %s\n", same ? "agrees bit for bit" : "DISAGREES");
  if (same) std::printf("consumer: ok\n");
  return same ? 0 : 1;
}
