// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// Which instruction-set targets a translation unit compiles, and the target regions they are compiled in.
//
// Run-time dispatch (the default): every target the running CPU might use is compiled into the one
// translation unit, each inside a *target region* (`#pragma GCC target` / `#pragma clang attribute push`)
// and a namespace naming it (detail::n_scalar, n_avx2, n_avx512, n_neon), so the includer needs no -m flags
// and a default-flags binary runs the widest kernels of the CPU it lands on (Highway's foreach_target.h,
// simdjson's SIMDJSON_TARGET_REGION). Targets *below* the includer's own baseline are not compiled: a
// translation unit built with -mavx2 would otherwise emit an "n_scalar" kernel holding AVX2 instructions,
// which the linker could merge with the real baseline one of another translation unit (Highway drops targets
// below HWY_STATIC_TARGET for the same reason). So every symbol in n_X holds code for X and nothing wider.
//
// Static dispatch (opt-in, POSENC_STATIC_DISPATCH defined in every translation unit of the program): only the
// widest target the includer's flags enable is compiled, called directly, without CPUID; for engines that
// build one binary per CPU. config.hpp gives that mode its own ABI namespace, so mixing the two modes in one
// program fails to link instead of silently merging different code.
#pragma once

#include "posenc/config.hpp"

// ---- architecture and the includer's baseline ----------------------------------------------------------------

#if defined(__x86_64__) || defined(_M_X64) || defined(_M_AMD64)
#define POSENC_ARCH_X86_64 1
#else
#define POSENC_ARCH_X86_64 0
#endif
#if defined(__aarch64__) || defined(_M_ARM64)
#define POSENC_ARCH_AARCH64 1
#else
#define POSENC_ARCH_AARCH64 0
#endif

// MSVC defines __AVX2__ for /arch:AVX2 (which also allows FMA and F16C) and __AVX512F__/BW/DQ/VL for
// /arch:AVX512, but never __FMA__ or __F16C__.
#if defined(_MSC_VER) && !defined(__clang__) && defined(__AVX2__)
#define POSENC_FMA_F16C 1
#elif defined(__FMA__) && defined(__F16C__)
#define POSENC_FMA_F16C 1
#else
#define POSENC_FMA_F16C 0
#endif
#if POSENC_ARCH_X86_64 && POSENC_FMA_F16C && defined(__AVX2__)
#define POSENC_BASELINE_AVX2 1
#else
#define POSENC_BASELINE_AVX2 0
#endif
#if POSENC_BASELINE_AVX2 && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512DQ__)
#define POSENC_BASELINE_AVX512 1
#else
#define POSENC_BASELINE_AVX512 0
#endif
#if defined(POSENC_DISABLE_AVX512)
#define POSENC_AVX512_ALLOWED 0
#else
#define POSENC_AVX512_ALLOWED 1
#endif

// ---- the targets this translation unit compiles ----------------------------------------------------------------
// POSENC_DISABLE_AVX512 drops the AVX-512 target (for compilers too old for its intrinsics).

#if defined(POSENC_STATIC_DISPATCH)
#define POSENC_TARGET_AVX512 (POSENC_BASELINE_AVX512 && POSENC_AVX512_ALLOWED)
#define POSENC_TARGET_AVX2 (POSENC_BASELINE_AVX2 && !POSENC_TARGET_AVX512)
#define POSENC_TARGET_NEON POSENC_ARCH_AARCH64
#define POSENC_TARGET_SCALAR (!POSENC_TARGET_AVX512 && !POSENC_TARGET_AVX2 && !POSENC_TARGET_NEON)
#elif POSENC_ARCH_X86_64 && (defined(__GNUC__) || defined(__clang__) || defined(_MSC_VER))
#define POSENC_TARGET_AVX512 POSENC_AVX512_ALLOWED
#define POSENC_TARGET_AVX2 (!POSENC_BASELINE_AVX512 || !POSENC_AVX512_ALLOWED)
#define POSENC_TARGET_NEON 0
#define POSENC_TARGET_SCALAR (!POSENC_BASELINE_AVX2)
#elif POSENC_ARCH_AARCH64
// NEON is baseline on AArch64: the portable target holds nothing the CPU may lack, and stays for
// POSENC_ISA=scalar.
#define POSENC_TARGET_AVX512 0
#define POSENC_TARGET_AVX2 0
#define POSENC_TARGET_NEON 1
#define POSENC_TARGET_SCALAR 1
#else
#define POSENC_TARGET_AVX512 0
#define POSENC_TARGET_AVX2 0
#define POSENC_TARGET_NEON 0
#define POSENC_TARGET_SCALAR 1
#endif

// ---- target regions ----------------------------------------------------------------------------------------------
// Every function *defined* between BEGIN and END is compiled for the target (templates too, wherever they are
// instantiated). Headers must all be included before a region opens, so that no standard-library or Eigen
// function is ever compiled for a target.

#define POSENC_PRAGMA(x) _Pragma(#x)
#if defined(POSENC_STATIC_DISPATCH) || (defined(_MSC_VER) && !defined(__clang__))
// Static dispatch: the flags already enable the target. MSVC: intrinsics need no target attribute.
#define POSENC_TARGET_REGION_BEGIN(features)
#define POSENC_TARGET_REGION_END
#elif defined(__clang__)
#define POSENC_TARGET_REGION_BEGIN(features) \
  POSENC_PRAGMA(clang attribute push(__attribute__((target(features))), apply_to = function))
#define POSENC_TARGET_REGION_END POSENC_PRAGMA(clang attribute pop)
#elif defined(__GNUC__)
#define POSENC_TARGET_REGION_BEGIN(features) POSENC_PRAGMA(GCC push_options) POSENC_PRAGMA(GCC target(features))
#define POSENC_TARGET_REGION_END POSENC_PRAGMA(GCC pop_options)
#else
#define POSENC_TARGET_REGION_BEGIN(features)
#define POSENC_TARGET_REGION_END
#endif

// The feature sets, as GCC and Clang spell them. AVX2 is x86-64-v3's vector part; AVX-512 is F/BW/VL/DQ (the
// Skylake-SP set every AVX-512 CPU since 2017 has). detail/simd/cpu.hpp checks exactly these, plus the
// operating system's support for the registers (XGETBV).
#define POSENC_FEATURES_AVX2 "avx2,fma,f16c"
#define POSENC_FEATURES_AVX512 "avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c"

#define POSENC_BEGIN_TARGET_AVX2 POSENC_TARGET_REGION_BEGIN(POSENC_FEATURES_AVX2)
#define POSENC_BEGIN_TARGET_AVX512 POSENC_TARGET_REGION_BEGIN(POSENC_FEATURES_AVX512)
#define POSENC_END_TARGET POSENC_TARGET_REGION_END
