// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// Which instruction set the kernels use. posenc dispatches statically: every public call runs the widest
// kernels the includer's flags enable (-mavx2 -mfma [-mf16c]: AVX2; -mavx512f -mavx512bw -mavx512vl
// -mavx512dq: AVX-512; default flags: the portable scalar kernels). These functions report that choice and
// whether the running CPU can execute it, e.g. to fail early in a binary built with -march=native.
//
// Mixing flags: the ISA is a template argument of every kernel and every public apply function, so
// translation units built with different -m flags get differently named instantiations and the linker
// never swaps one for the other. It cannot protect the rest of the inline code (plan building, checks):
// build every translation unit that includes posenc with the same target flags (or keep the wider-flag ones
// from running on CPUs without the ISA), as with any header-only library (Highway FAQ Q5.3).
#pragma once

#include "posenc/config.hpp"

POSENC_BEGIN_NAMESPACE

/// An instruction set posenc has kernels for.
enum class isa { scalar, avx2, avx512, neon };

/// The instruction set of the kernels compiled into this translation unit (from its flags). There is no NEON
/// backend yet: AArch64 builds run the scalar kernels and report scalar.
///
/// **Example**: `std::printf("posenc kernels: %s\n", posenc::isa_name(posenc::compiled_isa()));`
constexpr isa compiled_isa() noexcept {
  return POSENC_HAS_AVX512 ? isa::avx512 : POSENC_HAS_AVX2 ? isa::avx2 : isa::scalar;
}

/// "scalar", "avx2", "avx512" or "neon" (the names in test and benchmark names, e.g. BM_RopeHalfSplitCache/avx512).
constexpr const char* isa_name(isa i) noexcept {
  switch (i) {
    case isa::avx2: return "avx2";
    case isa::avx512: return "avx512";
    case isa::neon: return "neon";
    case isa::scalar: break;
  }
  return "scalar";
}

/// True when the running CPU (and OS) can execute posenc's kernels for `i`: AVX2 needs AVX2 and FMA (F16C,
/// which Clang 14's __builtin_cpu_supports cannot name, comes with every AVX2 CPU);
/// AVX-512 needs F, BW, VL and DQ. Always true for scalar; NEON is reported as the compiled-in answer (NEON is
/// baseline on AArch64). False on compilers without __builtin_cpu_supports for x86 sets.
inline bool cpu_supports(isa i) noexcept {
  switch (i) {
    case isa::scalar: return true;
    case isa::neon: return POSENC_HAS_NEON != 0;
    case isa::avx2:
    case isa::avx512: break;
  }
#if POSENC_HAS_CPU_SUPPORTS
  __builtin_cpu_init();
  if (i == isa::avx2)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");  // every AVX2 CPU has F16C
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
#else
  return false;
#endif
}

POSENC_END_NAMESPACE
