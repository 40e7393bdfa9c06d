// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// What the running CPU and operating system can execute, read once from CPUID and XGETBV (x86-64) or known
// at compile time (AArch64: Advanced SIMD is part of the base architecture). The only place posenc asks the
// hardware; the answer picks the kernels of posenc/dispatch.hpp.
#pragma once

#include <cstdint>

#include "posenc/config.hpp"
#include "posenc/detail/simd/targets.hpp"

#if POSENC_ARCH_X86_64
#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#else
#include <cpuid.h>
#endif
#endif

POSENC_BEGIN_NAMESPACE
namespace detail::simd {

struct cpu_features {
  bool avx2 = false;    ///< AVX2 + FMA + F16C, with the YMM state enabled by the OS
  bool avx512 = false;  ///< AVX-512 F/BW/VL/DQ (plus the AVX2 set), with the ZMM and mask state enabled by the OS
  bool neon = false;    ///< AArch64 Advanced SIMD
};

#if POSENC_ARCH_X86_64
struct cpuid_regs {
  std::uint32_t eax, ebx, ecx, edx;
};

inline cpuid_regs cpuid(std::uint32_t leaf, std::uint32_t subleaf) {
  cpuid_regs r{0, 0, 0, 0};
#if defined(_MSC_VER) && !defined(__clang__)
  int v[4];
  __cpuidex(v, static_cast<int>(leaf), static_cast<int>(subleaf));
  r = {static_cast<std::uint32_t>(v[0]), static_cast<std::uint32_t>(v[1]), static_cast<std::uint32_t>(v[2]),
       static_cast<std::uint32_t>(v[3])};
#else
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_count(leaf, subleaf, &a, &b, &c, &d)) r = {a, b, c, d};
#endif
  return r;
}

/// XCR0: which register states the OS saves on a context switch. Only valid when CPUID says OSXSAVE. Inline
/// assembly needs no target attribute (the _xgetbv intrinsic does, on GCC and Clang).
inline std::uint64_t xgetbv0() {
#if defined(_MSC_VER) && !defined(__clang__)
  return _xgetbv(0);
#else
  std::uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<std::uint64_t>(hi) << 32) | lo;
#endif
}
#endif

/// Reads the features. Cheap, but called once per process by posenc/dispatch.hpp.
inline cpu_features detect_cpu() {
  cpu_features f;
#if POSENC_ARCH_X86_64
  const auto bit = [](std::uint32_t reg, int b) { return ((reg >> b) & 1u) != 0; };
  const std::uint32_t max_leaf = cpuid(0, 0).eax;
  if (max_leaf < 7) return f;
  const cpuid_regs l1 = cpuid(1, 0);
  const cpuid_regs l7 = cpuid(7, 0);
  const bool osxsave = bit(l1.ecx, 27);
  const std::uint64_t xcr0 = osxsave ? xgetbv0() : 0;
  const bool os_ymm = (xcr0 & 0x6) == 0x6;     // SSE and AVX state
  const bool os_zmm = (xcr0 & 0xE6) == 0xE6;   // plus opmask, ZMM0-15 upper halves, ZMM16-31
  const bool fma = bit(l1.ecx, 12), avx = bit(l1.ecx, 28), f16c = bit(l1.ecx, 29);
  const bool avx2 = bit(l7.ebx, 5);
  const bool avx512f = bit(l7.ebx, 16), avx512dq = bit(l7.ebx, 17), avx512bw = bit(l7.ebx, 30),
             avx512vl = bit(l7.ebx, 31);
  f.avx2 = os_ymm && avx && avx2 && fma && f16c;
  f.avx512 = f.avx2 && os_zmm && avx512f && avx512dq && avx512bw && avx512vl;
#elif POSENC_ARCH_AARCH64
  f.neon = true;
#endif
  return f;
}

}  // namespace detail::simd
POSENC_END_NAMESPACE
