// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// Instruction-set tags, lane descriptors, the element conversions every kernel shares, and the op list of
// `vec<A, Isa>` (A = float or double). Each ISA file (scalar.hpp, avx2.hpp, avx512.hpp, neon.hpp) implements
// exactly this list, in this order, under the same banners; the vector files inside their target region
// (targets.hpp). Kernels (detail/kernels/*-inl.hpp) are written once over these ops and compiled once per
// target; the ISA is part of every vector type, so no two targets share a mangled name.
//
// Descriptors: `lanes<A, Isa>` names "the vectors of A of Isa"; ops that create a vector take one (Highway's
// Simd<T, N> tags), ops on vectors find the ISA from their arguments by argument-dependent lookup.
//   V::width                                    lanes per vector
//   -- load / store --
//   load(lanes<float, I>, const S*)   -> V      S = float or a 16-bit type (storage.hpp): width elements, widened
//   load(lanes<double, I>, const S*)  -> V      S = double, float, 16-bit                            (exact)
//   store(V, S*)                                 the same S: round to nearest even (double to half/bfloat16
//                                                through float, as store_as), NaN stays NaN, overflow to inf
//   store2(a, b, S*)                             store(a, p) and store(b, p + width), one wide store where
//                                                the ISA packs two (AVX2 bfloat16)
//   store_stream(V, A*)                          store(V, A*) to an address aligned to the vector's size, with
//                                                the ISA's non-temporal hint (x86 vmovntps/pd: the line goes
//                                                to memory without being read first; a store elsewhere)
//   stream_fence(lanes<A, I>)                    orders the streaming stores before later stores (x86 sfence;
//                                                nothing elsewhere): once per call, after its last one
//   load_dup_pairs(lanes<A, I>, const A*) -> V  width/2 values, each twice: c0 c0 c1 c1 ...
//   load_u16_bits(lanes<float, I>, const void*) width 16-bit patterns zero-extended into the lanes' bits
//   store_u16_bits(V, void*)                     the low 16 bits of each lane back (bit-exact permutations)
//   -- arithmetic --
//   set1(lanes<A, I>, A) -> V
//   add, sub, mul, div(V, V)
//   fma(a, b, c) = a*b + c, fnma(a, b, c) = c - a*b   fused, one rounding (scalar: two roundings, see there)
//   min(a, b), max(a, b)                         b where either is NaN (x86 minpd's rule: pass the bound first;
//                                                NEON: a compare and select, since vminq/vmaxq return the NaN)
//   reduce_max(V) -> A                           the largest lane, for lanes that hold no NaN (which lane wins
//                                                a NaN is unspecified); -0 and +0 compare equal
//   -- pairs and layout --
//   pair_swap(V)                                 x1 x0 x3 x2 ...        (width >= 2: not in scalar.hpp)
//   sign_alternate(V)                            -x0 x1 -x2 x3 ...      (width >= 2: not in scalar.hpp)
//   zip_lo(a, b), zip_hi(a, b)                   first / last width lanes of a0 b0 a1 b1 ...
//   unzip_even(a, b), unzip_odd(a, b)            even / odd lanes of a0 .. a{w-1} b0 .. b{w-1}
//   -- bits of double lanes (vector sincos and exp, detail/kernels/vmath-inl.hpp) --
//   set1_bits(lanes<double, I>, uint64) -> V
//   and_bits(V, V), xor_bits(V, V), add_bits(V, V) (uint64 add, wrapping), shl_bits<N>(V)
//   blend_sign(m, a, b)                          b in the lanes where m's sign bit is set, a elsewhere
//   -- bits of float lanes (8-bit codes, detail/kernels/quant-inl.hpp) --
//   set1_bits(lanes<float, I>, uint32) -> V
//   and_bits(V, V), or_bits(V, V), sub_bits(V, V) (uint32 subtract, wrapping), shr_bits<N>(V) (logical)
//   blend_sign(m, a, b)                          as for double lanes
//   nearest_int_bits(V)                          each lane rounded to the nearest integer, ties to even, as
//                                                its int32 pattern (|v| < 2^31); a conversion instruction, so
//                                                no compiler can fuse the product it rounds into an FMA;
//                                                a NaN lane gives a pattern whose low byte is 0 (x86's
//                                                0x80000000, NEON's and the portable scalar's 0)
//   store_u8_bits(V, uint8*)                     the low 8 bits of each lane (width bytes)
//   store_u8_bits(a, b, c, d, uint8*)            the same for four vectors, 4 * width bytes in that order
// Every target Isa also has its one-lane vectors `vec<A, one<Isa>>` (`lanes<A, tail<Isa>>`, scalar.hpp) for its
// loop tails and strided rows (Highway's CappedTag<T, 1>): the tail runs the same body with Isa's rounding
// (fma fused as the vectors fuse), so a row's result never depends on where a vector ends.
#pragma once

#include "posenc/detail/simd/base.hpp"  // IWYU pragma: export

#include "posenc/detail/simd/scalar.hpp"  // IWYU pragma: export
#if POSENC_TARGET_AVX2
#include "posenc/detail/simd/avx2.hpp"  // IWYU pragma: export
#endif
#if POSENC_TARGET_AVX512
#include "posenc/detail/simd/avx512.hpp"  // IWYU pragma: export
#endif
#if POSENC_TARGET_NEON
#include "posenc/detail/simd/neon.hpp"  // IWYU pragma: export
#endif
