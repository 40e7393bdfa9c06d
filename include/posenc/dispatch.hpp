// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// Which instruction set posenc's kernels use. One binary built with default flags carries kernels for every
// target of its architecture (x86-64: portable, AVX2, AVX-512; AArch64: portable, NEON) and runs the widest
// one the CPU and OS support, chosen once per process from CPUID/XGETBV (detail/simd/cpu.hpp). The choice
// can be capped for tests, benchmarks and bug reports: by the environment variable POSENC_ISA (scalar, avx2,
// avx512 or neon), read once at the first posenc call, or by set_isa(). An engine that builds one binary per
// CPU defines POSENC_STATIC_DISPATCH in every translation unit: the widest target its -m flags enable is then
// called directly and these functions report it (detail/simd/targets.hpp).
#pragma once

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "posenc/config.hpp"
#include "posenc/detail/simd/cpu.hpp"
#include "posenc/detail/simd/targets.hpp"

POSENC_BEGIN_NAMESPACE

/// An instruction set posenc has kernels for.
enum class isa {
  scalar,  ///< portable C++ (x86-64 baseline SSE2, or whatever the compiler's default target is)
  avx2,    ///< AVX2 + FMA + F16C
  avx512,  ///< AVX-512 F/BW/VL/DQ
  neon,    ///< AArch64 Advanced SIMD
};

/// "scalar", "avx2", "avx512" or "neon": the names POSENC_ISA takes and tests and benchmarks print
/// (RopeGolden.AllDtypesAndPaths/RopeBasicHalfSplitAvx2, BM_RopeHalfSplitCache/avx2).
constexpr const char* isa_name(isa i) noexcept {
  switch (i) {
    case isa::avx2: return "avx2";
    case isa::avx512: return "avx512";
    case isa::neon: return "neon";
    case isa::scalar: break;
  }
  return "scalar";
}

namespace detail {

/// The order in which a request caps the choice: a request for rank r gets the widest supported ISA of rank
/// <= r on this architecture (so "neon" on x86-64 means "a 128/256-bit vector ISA": AVX2).
constexpr int isa_rank(isa i) noexcept { return i == isa::avx512 ? 2 : (i == isa::scalar ? 0 : 1); }

inline const simd::cpu_features& cpu() noexcept {
  static const simd::cpu_features f = simd::detect_cpu();
  return f;
}

/// Parses POSENC_ISA's values; false for anything else.
inline bool parse_isa(const char* s, isa& out) noexcept {
  if (s == nullptr) return false;
  for (isa i : {isa::scalar, isa::avx2, isa::avx512, isa::neon})
    if (std::strcmp(s, isa_name(i)) == 0) {
      out = i;
      return true;
    }
  return false;
}

}  // namespace detail

/// True when the running CPU and OS can execute posenc's kernels for `i` (and this architecture has them):
/// AVX2 needs AVX2, FMA, F16C and the YMM state enabled by the OS; AVX-512 needs F, BW, VL, DQ, the AVX2 set
/// and the ZMM state; NEON is AArch64's baseline; scalar always.
///
/// **Example**: `if (!posenc::cpu_supports(posenc::isa::avx512)) std::puts("no AVX-512 here");`
inline bool cpu_supports(isa i) noexcept {
  switch (i) {
    case isa::avx2: return detail::cpu().avx2;
    case isa::avx512: return detail::cpu().avx512;
    case isa::neon: return detail::cpu().neon;
    case isa::scalar: break;
  }
  return true;
}

/// The widest ISA of rank <= `cap`'s that the CPU supports (always at least scalar).
inline isa supported_isa(isa cap) noexcept {
  const int r = detail::isa_rank(cap);
  if (r >= 2 && cpu_supports(isa::avx512)) return isa::avx512;
  if (r >= 1 && cpu_supports(isa::avx2)) return isa::avx2;
  if (r >= 1 && cpu_supports(isa::neon)) return isa::neon;
  return isa::scalar;
}

namespace detail {

#if defined(POSENC_STATIC_DISPATCH)
constexpr isa static_isa() noexcept {
  return POSENC_TARGET_AVX512 ? isa::avx512
                              : (POSENC_TARGET_AVX2 ? isa::avx2 : (POSENC_TARGET_NEON ? isa::neon : isa::scalar));
}
#endif

/// The process-wide choice, -1 until the first call reads POSENC_ISA and the CPU. Relaxed atomics: every
/// thread computes the same answer, and set_isa is for tests and tools, not for changing kernels mid-call.
inline std::atomic<int>& isa_slot() noexcept {
  static std::atomic<int> slot{-1};
  return slot;
}

inline isa default_isa() noexcept {
  isa requested = isa::avx512;
  const char* env = std::getenv("POSENC_ISA");  // NOLINT(concurrency-mt-unsafe): read once, no setenv here
  if (env != nullptr) parse_isa(env, requested);  // an unknown value leaves the default (the widest)
  return supported_isa(requested);
}

}  // namespace detail

/// The ISA of the kernels posenc runs now: the widest the CPU supports, capped by POSENC_ISA or set_isa().
/// With POSENC_STATIC_DISPATCH, the ISA the flags compiled in.
///
/// **Example**: `std::printf("posenc kernels: %s\n", posenc::isa_name(posenc::active_isa()));`
inline isa active_isa() noexcept {
#if defined(POSENC_STATIC_DISPATCH)
  return detail::static_isa();
#else
  int v = detail::isa_slot().load(std::memory_order_relaxed);
  if (v < 0) {
    v = static_cast<int>(detail::default_isa());
    detail::isa_slot().store(v, std::memory_order_relaxed);
  }
  return static_cast<isa>(v);
#endif
}

/// Caps the kernels at `requested`: posenc runs supported_isa(requested) from the next call on, in every
/// thread, and returns it (a request the CPU cannot run falls back, never faults). Meant for tests,
/// benchmarks and bug reports; not synchronised with calls already running. No effect with
/// POSENC_STATIC_DISPATCH (returns the static ISA).
///
/// **Example**: `posenc::set_isa(posenc::isa::scalar);   // compare against the portable kernels`
inline isa set_isa(isa requested) noexcept {
#if defined(POSENC_STATIC_DISPATCH)
  static_cast<void>(requested);
  return detail::static_isa();
#else
  const isa got = supported_isa(requested);
  detail::isa_slot().store(static_cast<int>(got), std::memory_order_relaxed);
  return got;
#endif
}

/// Back to the default: POSENC_ISA if set (read again), else the widest ISA the CPU supports.
inline isa reset_isa() noexcept {
#if defined(POSENC_STATIC_DISPATCH)
  return detail::static_isa();
#else
  const isa got = detail::default_isa();
  detail::isa_slot().store(static_cast<int>(got), std::memory_order_relaxed);
  return got;
#endif
}

POSENC_END_NAMESPACE
