// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// Compiler, exception and instruction-set detection. This is the only header that looks at the includer's
// target flags; everything else asks the macros defined here.
#pragma once

#include "posenc/version.hpp"

#define POSENC_BEGIN_NAMESPACE \
  namespace posenc {           \
  inline namespace POSENC_ABI_NAMESPACE {
#define POSENC_END_NAMESPACE \
  }                          \
  }

// Formulas in detail/math are shared by host and CUDA code.
#if defined(__CUDACC__) || defined(__HIPCC__)
#define POSENC_HOST_DEVICE __host__ __device__
#else
#define POSENC_HOST_DEVICE
#endif

#if defined(__GNUC__) || defined(__clang__)
#define POSENC_NOINLINE __attribute__((noinline))
#define POSENC_COLD __attribute__((cold))
#define POSENC_RESTRICT __restrict__
#elif defined(_MSC_VER)
#define POSENC_NOINLINE __declspec(noinline)
#define POSENC_COLD
#define POSENC_RESTRICT __restrict
#else
#define POSENC_NOINLINE
#define POSENC_COLD
#define POSENC_RESTRICT
#endif

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS) || defined(_CPPUNWIND)
#define POSENC_HAS_EXCEPTIONS 1
#else
#define POSENC_HAS_EXCEPTIONS 0
#endif

// Internal invariants (never user input: that is validated and reported through posenc::argument_error).
#ifdef NDEBUG
#define POSENC_ASSERT(cond) static_cast<void>(0)
#else
#include <cassert>
#define POSENC_ASSERT(cond) assert(cond)
#endif

// Instruction sets compiled in, from the includer's flags. A translation unit built with -mavx2 -mfma gets
// the AVX2 kernels; one built without gets the scalar ones. The ISA is part of every kernel's type, so two
// translation units with different flags never share a mangled name.
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__)
#define POSENC_HAS_AVX512 1
#else
#define POSENC_HAS_AVX512 0
#endif
#if defined(__AVX2__) && defined(__FMA__)
#define POSENC_HAS_AVX2 1
#else
#define POSENC_HAS_AVX2 0
#endif
#if defined(__ARM_NEON) || defined(__ARM_NEON__)
#define POSENC_HAS_NEON 1
#else
#define POSENC_HAS_NEON 0
#endif
// Run-time CPU feature queries (posenc/dispatch.hpp): GCC and Clang on x86 have __builtin_cpu_supports.
#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define POSENC_HAS_CPU_SUPPORTS 1
#else
#define POSENC_HAS_CPU_SUPPORTS 0
#endif
