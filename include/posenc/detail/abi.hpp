// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// The ABI namespace's instruction-set suffix. Every function of a header-only library is an inline function
// with a weak symbol, and the compiler may use any instruction the includer's flags enable inside it: when an
// engine builds one translation unit with -mavx2 and another with default flags, the linker keeps one copy of
// each shared symbol, possibly the AVX2 one, and the default path dies with SIGILL on an older CPU. So the
// namespace everything lives in (config.hpp) is named after the instruction-set extensions the includer's
// macros say the compiler may emit on its own: TUs built with different extensions share no posenc symbol
// (not a function, not a type), and a program that passes posenc types between such TUs fails to link instead
// of running the wrong code. The one thing they do share is process state (config.hpp: POSENC_PROCESS_NAMESPACE).
//
// The suffix names the highest x86-64 psABI level whose extensions are all enabled (x86-64-v2: SSE3 to
// SSE4.2 and POPCNT; v3: AVX, AVX2, BMI1/2, F16C, FMA, LZCNT, MOVBE; v4: AVX-512 F/BW/CD/DQ/VL), then every
// enabled extension outside that level, so any two different sets of extensions give different names:
// default flags -> v0, -mavx2 -mfma -mf16c -> v0_sse3_ssse3_sse41_sse42_avx_avx2_fma_f16c, -march=haswell ->
// v0_x86v3, -march=x86-64-v4 -> v0_x86v4. On AArch64 (NEON is baseline) the suffix lists the optional
// extensions (SVE, FP16 arithmetic, dot product, LSE atomics, ...). Extensions a compiler only emits through
// intrinsics (AES, SHA, PCLMUL, RDRND, CRC32) are not listed: they cannot enter posenc's code.
#pragma once

// Up to eleven tokens pasted into one name; an empty argument (an extension not enabled) pastes as nothing.
#define POSENC_PASTE_I(a, b, c, d, e, f, g, h, i, j, k) a##b##c##d##e##f##g##h##i##j##k
#define POSENC_PASTE(...) POSENC_PASTE_I(__VA_ARGS__)

#if defined(__x86_64__) || defined(_M_X64) || defined(_M_AMD64)
#if defined(__SSE3__) && defined(__SSSE3__) && defined(__SSE4_1__) && defined(__SSE4_2__) && defined(__POPCNT__)
#define POSENC_X86_V2 1
#else
#define POSENC_X86_V2 0
#endif
#if POSENC_X86_V2 && defined(__AVX__) && defined(__AVX2__) && defined(__BMI__) && defined(__BMI2__) && \
    defined(__F16C__) && defined(__FMA__) && defined(__LZCNT__) && defined(__MOVBE__)
#define POSENC_X86_V3 1
#else
#define POSENC_X86_V3 0
#endif
#if POSENC_X86_V3 && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512CD__) && \
    defined(__AVX512DQ__) && defined(__AVX512VL__)
#define POSENC_X86_V4 1
#else
#define POSENC_X86_V4 0
#endif
// One line per extension: its tag when enabled and not implied by the level, else nothing.
#if POSENC_X86_V4
#define POSENC_ISA_LEVEL _x86v4
#elif POSENC_X86_V3
#define POSENC_ISA_LEVEL _x86v3
#elif POSENC_X86_V2
#define POSENC_ISA_LEVEL _x86v2
#else
#define POSENC_ISA_LEVEL
#endif
#if defined(__SSE3__) && !POSENC_X86_V2
#define POSENC_ISA_E01 _sse3
#endif
#if defined(__SSSE3__) && !POSENC_X86_V2
#define POSENC_ISA_E02 _ssse3
#endif
#if defined(__SSE4_1__) && !POSENC_X86_V2
#define POSENC_ISA_E03 _sse41
#endif
#if defined(__SSE4_2__) && !POSENC_X86_V2
#define POSENC_ISA_E04 _sse42
#endif
#if defined(__POPCNT__) && !POSENC_X86_V2
#define POSENC_ISA_E05 _popcnt
#endif
#if defined(__AVX__) && !POSENC_X86_V3
#define POSENC_ISA_E06 _avx
#endif
#if defined(__AVX2__) && !POSENC_X86_V3
#define POSENC_ISA_E07 _avx2
#endif
#if defined(__FMA__) && !POSENC_X86_V3
#define POSENC_ISA_E08 _fma
#endif
#if defined(__F16C__) && !POSENC_X86_V3
#define POSENC_ISA_E09 _f16c
#endif
#if defined(__BMI__) && !POSENC_X86_V3
#define POSENC_ISA_E10 _bmi
#endif
#if defined(__BMI2__) && !POSENC_X86_V3
#define POSENC_ISA_E11 _bmi2
#endif
#if defined(__LZCNT__) && !POSENC_X86_V3
#define POSENC_ISA_E12 _lzcnt
#endif
#if defined(__MOVBE__) && !POSENC_X86_V3
#define POSENC_ISA_E13 _movbe
#endif
#if defined(__AVX512F__) && !POSENC_X86_V4
#define POSENC_ISA_E14 _avx512f
#endif
#if defined(__AVX512BW__) && !POSENC_X86_V4
#define POSENC_ISA_E15 _avx512bw
#endif
#if defined(__AVX512CD__) && !POSENC_X86_V4
#define POSENC_ISA_E16 _avx512cd
#endif
#if defined(__AVX512DQ__) && !POSENC_X86_V4
#define POSENC_ISA_E17 _avx512dq
#endif
#if defined(__AVX512VL__) && !POSENC_X86_V4
#define POSENC_ISA_E18 _avx512vl
#endif
#if defined(__AVX512FP16__)
#define POSENC_ISA_E19 _avx512fp16
#endif
#if defined(__AVX512BF16__)
#define POSENC_ISA_E20 _avx512bf16
#endif
#if defined(__AVX512VNNI__)
#define POSENC_ISA_E21 _avx512vnni
#endif
#if defined(__AVX512IFMA__) || defined(__AVX512VBMI__) || defined(__AVX512VBMI2__) || defined(__AVX512BITALG__) || \
    defined(__AVX512VPOPCNTDQ__)
#define POSENC_ISA_E22 _avx512icl
#endif
#if defined(__AVXVNNI__) || defined(__AVXIFMA__) || defined(__AVXNECONVERT__) || defined(__AVXVNNIINT8__)
#define POSENC_ISA_E23 _avxvnni
#endif
#if defined(__GFNI__)
#define POSENC_ISA_E24 _gfni
#endif
#if defined(__SSE4A__) || defined(__FMA4__) || defined(__XOP__) || defined(__TBM__)
#define POSENC_ISA_E25 _amdext
#endif
#if defined(__AVX10_1__) || defined(__AVX10_2__) || defined(__EVEX512__)
#define POSENC_ISA_E26 _avx10
#endif
#if defined(__APX_F__)
#define POSENC_ISA_E27 _apx
#endif
#elif defined(__aarch64__) || defined(_M_ARM64)
#define POSENC_ISA_LEVEL
#if defined(__ARM_FEATURE_SVE)
#define POSENC_ISA_E01 _sve
#endif
#if defined(__ARM_FEATURE_SVE2)
#define POSENC_ISA_E02 _sve2
#endif
#if defined(__ARM_FEATURE_FP16_SCALAR_ARITHMETIC) || defined(__ARM_FEATURE_FP16_VECTOR_ARITHMETIC)
#define POSENC_ISA_E03 _fp16
#endif
#if defined(__ARM_FEATURE_BF16_SCALAR_ARITHMETIC) || defined(__ARM_FEATURE_BF16_VECTOR_ARITHMETIC) || \
    defined(__ARM_FEATURE_BF16)
#define POSENC_ISA_E04 _bf16
#endif
#if defined(__ARM_FEATURE_DOTPROD)
#define POSENC_ISA_E05 _dotprod
#endif
#if defined(__ARM_FEATURE_MATMUL_INT8)
#define POSENC_ISA_E06 _i8mm
#endif
#if defined(__ARM_FEATURE_ATOMICS)
#define POSENC_ISA_E07 _lse
#endif
#if defined(__ARM_FEATURE_RCPC)
#define POSENC_ISA_E08 _rcpc
#endif
#else
// Other architectures: NEON on 32-bit ARM is the one extension posenc's kernels know; for the rest the base
// name stands (an engine mixing flags there defines POSENC_ABI_NAMESPACE per flag set itself).
#define POSENC_ISA_LEVEL
#if defined(__ARM_NEON)
#define POSENC_ISA_E01 _neon
#endif
#endif

// The extensions left undefined above contribute nothing.
#ifndef POSENC_ISA_E01
#define POSENC_ISA_E01
#endif
#ifndef POSENC_ISA_E02
#define POSENC_ISA_E02
#endif
#ifndef POSENC_ISA_E03
#define POSENC_ISA_E03
#endif
#ifndef POSENC_ISA_E04
#define POSENC_ISA_E04
#endif
#ifndef POSENC_ISA_E05
#define POSENC_ISA_E05
#endif
#ifndef POSENC_ISA_E06
#define POSENC_ISA_E06
#endif
#ifndef POSENC_ISA_E07
#define POSENC_ISA_E07
#endif
#ifndef POSENC_ISA_E08
#define POSENC_ISA_E08
#endif
#ifndef POSENC_ISA_E09
#define POSENC_ISA_E09
#endif
#ifndef POSENC_ISA_E10
#define POSENC_ISA_E10
#endif
#ifndef POSENC_ISA_E11
#define POSENC_ISA_E11
#endif
#ifndef POSENC_ISA_E12
#define POSENC_ISA_E12
#endif
#ifndef POSENC_ISA_E13
#define POSENC_ISA_E13
#endif
#ifndef POSENC_ISA_E14
#define POSENC_ISA_E14
#endif
#ifndef POSENC_ISA_E15
#define POSENC_ISA_E15
#endif
#ifndef POSENC_ISA_E16
#define POSENC_ISA_E16
#endif
#ifndef POSENC_ISA_E17
#define POSENC_ISA_E17
#endif
#ifndef POSENC_ISA_E18
#define POSENC_ISA_E18
#endif
#ifndef POSENC_ISA_E19
#define POSENC_ISA_E19
#endif
#ifndef POSENC_ISA_E20
#define POSENC_ISA_E20
#endif
#ifndef POSENC_ISA_E21
#define POSENC_ISA_E21
#endif
#ifndef POSENC_ISA_E22
#define POSENC_ISA_E22
#endif
#ifndef POSENC_ISA_E23
#define POSENC_ISA_E23
#endif
#ifndef POSENC_ISA_E24
#define POSENC_ISA_E24
#endif
#ifndef POSENC_ISA_E25
#define POSENC_ISA_E25
#endif
#ifndef POSENC_ISA_E26
#define POSENC_ISA_E26
#endif
#ifndef POSENC_ISA_E27
#define POSENC_ISA_E27
#endif

/// `name` followed by this translation unit's instruction-set suffix (nothing for the architecture's baseline).
#define POSENC_ISA_SUFFIXED(name)                                                                              \
  POSENC_PASTE(POSENC_PASTE(POSENC_PASTE(name, POSENC_ISA_LEVEL, POSENC_ISA_E01, POSENC_ISA_E02, POSENC_ISA_E03,  \
                                         POSENC_ISA_E04, POSENC_ISA_E05, POSENC_ISA_E06, POSENC_ISA_E07,        \
                                         POSENC_ISA_E08, ),                                                        \
                            POSENC_ISA_E09, POSENC_ISA_E10, POSENC_ISA_E11, POSENC_ISA_E12, POSENC_ISA_E13,     \
                            POSENC_ISA_E14, POSENC_ISA_E15, POSENC_ISA_E16, POSENC_ISA_E17, ),                  \
               POSENC_ISA_E18, POSENC_ISA_E19, POSENC_ISA_E20, POSENC_ISA_E21, POSENC_ISA_E22, POSENC_ISA_E23,  \
               POSENC_ISA_E24, POSENC_ISA_E25, POSENC_ISA_E26, POSENC_ISA_E27)
