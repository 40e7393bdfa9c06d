// Runs the same posenc work from a default-flags and an -mavx2 translation unit; they must agree bit for bit
// (both run the AVX2 or AVX-512 kernels of this CPU, one copy each, whichever the linker kept).
#include <cstdio>
#include <cstring>

#include <posenc/posenc.hpp>

#include "tu.hpp"

int main() {
  if (!posenc::cpu_supports(posenc::isa::avx2)) {
    std::printf("consumer: ok (skipped: this CPU lacks AVX2, the -mavx2 translation unit cannot run here)\n");
    return 0;
  }
  const auto a = work_default();
  const auto b = work_avx2();
  const bool same = a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  std::printf("consumer: kernels %s, default and -mavx2 translation units %s\n", posenc::isa_name(posenc::active_isa()),
              same ? "agree bit for bit" : "DISAGREE");
  if (same) std::printf("consumer: ok\n");
  return same ? 0 : 1;
}
