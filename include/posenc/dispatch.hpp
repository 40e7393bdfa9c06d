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

#include "posenc/config.hpp"
#include "posenc/detail/simd/select.hpp"
#include "posenc/types.hpp"

POSENC_BEGIN_NAMESPACE

// posenc::isa and posenc::isa_name are declared in posenc/types.hpp.

/// True when the running CPU and OS can execute posenc's kernels for `i` (and this architecture has them):
/// AVX2 needs AVX2, FMA, F16C and the YMM state enabled by the OS; AVX-512 needs F, BW, VL, DQ, the AVX2 set
/// and the ZMM state; NEON is AArch64's baseline; scalar always.
///
/// **Example**: `if (!posenc::cpu_supports(posenc::isa::avx512)) std::puts("no AVX-512 here");`
inline bool cpu_supports(isa i) noexcept { return detail::cpu_has(i); }

/// The widest ISA of rank <= `cap`'s that the CPU supports (always at least scalar).
inline isa supported_isa(isa cap) noexcept { return detail::widest_supported(cap); }

/// The ISA of the kernels posenc runs now: the widest the CPU supports, capped by POSENC_ISA or set_isa().
/// With POSENC_STATIC_DISPATCH, the ISA the flags compiled in.
///
/// **Example**: `std::printf("posenc kernels: %s\n", posenc::isa_name(posenc::active_isa()));`
inline isa active_isa() noexcept { return detail::current_isa(); }

/// Caps the kernels at `requested`: posenc runs supported_isa(requested) from the next call on, in every
/// thread, and returns it (a request the CPU cannot run falls back, never faults). Meant for tests,
/// benchmarks and bug reports; not synchronised with calls already running. No effect with
/// POSENC_STATIC_DISPATCH (returns the static ISA).
///
/// **Example**: `posenc::set_isa(posenc::isa::scalar);   // compare against the portable kernels`
inline isa set_isa(isa requested) noexcept { return detail::store_isa(supported_isa(requested)); }

/// Back to the default: POSENC_ISA if set (read again), else the widest ISA the CPU supports.
inline isa reset_isa() noexcept { return detail::store_isa(detail::default_isa()); }

POSENC_END_NAMESPACE
