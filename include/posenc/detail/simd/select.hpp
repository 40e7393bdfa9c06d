// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private, include "posenc/dispatch.hpp"
//
// The process-wide choice of kernels: what the CPU supports (cpu.hpp), capped by POSENC_ISA or set_isa().
// The kernels' dispatcher (detail/kernels/kernels.hpp) reads current_isa(); posenc/dispatch.hpp is the
// public face of the same state.
#pragma once

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "posenc/config.hpp"
#include "posenc/detail/simd/cpu.hpp"
#include "posenc/detail/simd/targets.hpp"
#include "posenc/types.hpp"

namespace posenc {
namespace POSENC_PROCESS_NAMESPACE {
/// The process-wide choice, -1 until the first call reads POSENC_ISA and the CPU: one object for every ABI
/// namespace (config.hpp), so set_isa() from a -mavx2 translation unit caps the default-flags one too.
inline std::atomic<int> isa_slot{-1};
}  // namespace POSENC_PROCESS_NAMESPACE
}  // namespace posenc

POSENC_BEGIN_NAMESPACE
namespace detail {

/// The order in which a request caps the choice: a request for rank r gets the widest supported ISA of rank
/// <= r on this architecture (so "neon" on x86-64 means "a 128/256-bit vector ISA": AVX2).
constexpr int isa_rank(isa i) noexcept { return i == isa::avx512 ? 2 : (i == isa::scalar ? 0 : 1); }

inline const simd::cpu_features& cpu() noexcept {
  static const simd::cpu_features f = simd::detect_cpu();
  return f;
}

inline bool cpu_has(isa i) noexcept {
  switch (i) {
    case isa::avx2: return cpu().avx2;
    case isa::avx512: return cpu().avx512;
    case isa::neon: return cpu().neon;
    case isa::scalar: break;
  }
  return true;
}

/// The widest ISA of rank <= `cap`'s that the CPU supports (always at least scalar).
inline isa widest_supported(isa cap) noexcept {
  const int r = isa_rank(cap);
  if (r >= 2 && cpu_has(isa::avx512)) return isa::avx512;
  if (r >= 1 && cpu_has(isa::avx2)) return isa::avx2;
  if (r >= 1 && cpu_has(isa::neon)) return isa::neon;
  return isa::scalar;
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

#if defined(POSENC_STATIC_DISPATCH)
constexpr isa static_isa() noexcept {
  return POSENC_TARGET_AVX512 ? isa::avx512
                              : (POSENC_TARGET_AVX2 ? isa::avx2 : (POSENC_TARGET_NEON ? isa::neon : isa::scalar));
}
#endif

/// The process-wide choice. Relaxed atomics: every thread computes the same answer, and set_isa is for tests
/// and tools, not for changing kernels mid-call.
inline std::atomic<int>& isa_slot() noexcept { return POSENC_PROCESS_NAMESPACE::isa_slot; }

inline isa default_isa() noexcept {
  isa requested = isa::avx512;
  const char* env = std::getenv("POSENC_ISA");  // NOLINT(concurrency-mt-unsafe): read once, no setenv here
  if (env != nullptr) parse_isa(env, requested);  // an unknown value leaves the default (the widest)
  return widest_supported(requested);
}

/// The ISA whose kernels run now (posenc::active_isa()).
inline isa current_isa() noexcept {
#if defined(POSENC_STATIC_DISPATCH)
  return static_isa();
#else
  int v = isa_slot().load(std::memory_order_relaxed);
  if (v < 0) {
    v = static_cast<int>(default_isa());
    isa_slot().store(v, std::memory_order_relaxed);
  }
  return static_cast<isa>(v);
#endif
}

/// Stores `got` as the choice (no effect with static dispatch) and returns what runs from now on.
inline isa store_isa(isa got) noexcept {
#if defined(POSENC_STATIC_DISPATCH)
  static_cast<void>(got);
  return static_isa();
#else
  isa_slot().store(static_cast<int>(got), std::memory_order_relaxed);
  return got;
#endif
}

}  // namespace detail
POSENC_END_NAMESPACE
