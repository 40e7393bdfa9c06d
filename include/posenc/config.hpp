// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// Compiler and exception detection, and the namespace everything lives in. The includer's instruction-set
// flags are looked at in one place only: detail/simd/targets.hpp.
#pragma once

// Static dispatch (detail/simd/targets.hpp) compiles different code from the same names: it gets its own ABI
// namespace, so a program mixing the two modes fails to link instead of merging them.
#if defined(POSENC_STATIC_DISPATCH) && !defined(POSENC_ABI_NAMESPACE)
#define POSENC_ABI_NAMESPACE v0_static
#endif

// Separate compilation (opt-in, POSENC_SEPARATE_COMPILATION defined in every translation unit of the program,
// and posenc/src.hpp included in exactly one): the headers declare the kernels and the throwing path instead of
// defining them, so an includer compiles no SIMD code and no <stdexcept>; src.hpp compiles them once, for every
// storage type. Its own ABI namespace keeps header-only and separately compiled translation units apart.
#if defined(POSENC_SEPARATE_COMPILATION) && !defined(POSENC_ABI_NAMESPACE)
#if defined(POSENC_STATIC_DISPATCH)
#define POSENC_ABI_NAMESPACE v0_static_sep
#else
#define POSENC_ABI_NAMESPACE v0_sep
#endif
#endif
#if defined(POSENC_SEPARATE_COMPILATION)
#define POSENC_DECL
#else
#define POSENC_DECL inline
#endif

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
