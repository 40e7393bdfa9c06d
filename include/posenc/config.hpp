// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// Compiler and exception detection, and the namespace everything lives in. The includer's instruction-set
// flags are looked at in two places only: detail/abi.hpp (the namespace's name) and detail/simd/targets.hpp
// (which kernels are compiled).
#pragma once

// The namespace everything lives in: posenc::POSENC_ABI_NAMESPACE, an inline namespace, so users write
// posenc:: alone. Its name records what makes two translation units compile different code from the same
// names, so that they never share a symbol (a program that mixes them fails to link instead of merging them):
//  - the major version (v0), so two engines embedding different posenc versions coexist;
//  - static dispatch (POSENC_STATIC_DISPATCH, detail/simd/targets.hpp): _static;
//  - separate compilation (below): _sep;
//  - the includer's instruction-set extensions (detail/abi.hpp): a TU built with -mavx2 gets
//    posenc::v0_x86v2_avx_avx2_fma_f16c::, one built with default flags posenc::v0::.
// Defining POSENC_ABI_NAMESPACE yourself opts out of all of it (then every TU must use the same flags).
//
// Separate compilation (opt-in, POSENC_SEPARATE_COMPILATION defined in every translation unit of the program,
// and posenc/src.hpp included in exactly one per set of instruction-set flags): the headers declare the kernels
// and the throwing path instead of defining them, so an includer compiles no SIMD code and no <stdexcept>;
// src.hpp compiles them once, for every storage type.
#if defined(POSENC_STATIC_DISPATCH) && defined(POSENC_SEPARATE_COMPILATION)
#define POSENC_ABI_BASE v0_static_sep
#elif defined(POSENC_STATIC_DISPATCH)
#define POSENC_ABI_BASE v0_static
#elif defined(POSENC_SEPARATE_COMPILATION)
#define POSENC_ABI_BASE v0_sep
#else
#define POSENC_ABI_BASE v0
#endif
#include "posenc/detail/abi.hpp"
#ifndef POSENC_ABI_NAMESPACE
#define POSENC_ABI_NAMESPACE POSENC_ISA_SUFFIXED(POSENC_ABI_BASE)
#endif
#if defined(POSENC_SEPARATE_COMPILATION)
#define POSENC_DECL
#else
#define POSENC_DECL inline
#endif

#include "posenc/version.hpp"

// State of the process that every ABI namespace of this major version must see as one (the ISA choice of
// set_isa): variables only, never code, so the includer's flags cannot change what is shared.
#define POSENC_PROCESS_NAMESPACE process_v0

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
// Loops over register arrays in device code must unroll (a run-time index would put the array in local memory).
#if defined(__CUDA_ARCH__)
#define POSENC_DEVICE_UNROLL _Pragma("unroll")
#else
#define POSENC_DEVICE_UNROLL
#endif

#if defined(__GNUC__) || defined(__clang__)
#define POSENC_NOINLINE __attribute__((noinline))
#define POSENC_ALWAYS_INLINE inline __attribute__((always_inline))
#define POSENC_COLD __attribute__((cold))
#define POSENC_RESTRICT __restrict__
#elif defined(_MSC_VER)
#define POSENC_NOINLINE __declspec(noinline)
#define POSENC_ALWAYS_INLINE __forceinline
#define POSENC_COLD
#define POSENC_RESTRICT __restrict
#else
#define POSENC_NOINLINE
#define POSENC_ALWAYS_INLINE inline
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
