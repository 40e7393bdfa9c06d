// Test only (posenc_tests_emulated): stands in for include/posenc/detail/simd/cpu.hpp and reports AVX2 and
// AVX-512, whose op files this build runs through SIMDe's portable intrinsics (tests/emulation/).
#pragma once

#include "posenc/config.hpp"
#include "posenc/detail/simd/targets.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail::simd {

struct cpu_features {
  bool avx2 = true;
  bool avx512 = true;
  bool neon = false;
};

inline cpu_features detect_cpu() { return {}; }

}  // namespace detail::simd
POSENC_END_NAMESPACE
