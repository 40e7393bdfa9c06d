// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// Separate compilation: include this in exactly one .cpp of a program whose translation units are all built
// with POSENC_SEPARATE_COMPILATION defined (CMake: link posenc::separate, or posenc::posenc plus the define
// and a file holding this one line). Every other includer then sees the kernels only as declarations:
// `#include <posenc/rope.hpp>` preprocesses to ~38k lines instead of ~96k and compiles no SIMD code. This file
// compiles the kernels of every target once, for every canonical storage type (float, double, f16, bf16),
// and the throwing path. A combination missing here is a link error naming the entry, never wrong code.
// Translation units built with other instruction-set flags (-mavx2, -march=...) are in another ABI namespace
// (detail/abi.hpp) and link against a copy of this file built with their flags.
//
// Parts: the whole file is one long compile (GCC 12 -O2: ~5 minutes on one core). A build with several cores
// may instead compile it in POSENC_SRC_PARTS (4) translation units side by side, the k-th with POSENC_SRC_PART
// defined to k (0 .. 3): each instantiates its share, about a quarter of the compile time (0: RoPE's rows from
// the formula and from fp32 / fp64 tables, the fused KV-cache appends from 16-bit tables; 1: RoPE's rows from
// 16-bit tables, MRoPE, xPos and the shifts; 2: the other appends; 3: everything else and the throwing path),
// and the four together are the whole file. CMake's posenc_kernel_objects and the Python module do so.
#pragma once

#if !defined(POSENC_SEPARATE_COMPILATION)
#error "posenc/src.hpp is for POSENC_SEPARATE_COMPILATION builds (define it in every translation unit)"
#endif

#define POSENC_SRC_PARTS 4
#if defined(POSENC_SRC_PART)
#if POSENC_SRC_PART < 0 || POSENC_SRC_PART >= POSENC_SRC_PARTS
#error "POSENC_SRC_PART must be 0 .. POSENC_SRC_PARTS - 1 (posenc/src.hpp)"
#endif
#define POSENC_SRC_HAS_PART(k) (POSENC_SRC_PART == (k))
#else
#define POSENC_SRC_HAS_PART(k) 1
#endif
// POSENC_SRC_PARTk(x...): x where this translation unit compiles part k, nothing elsewhere.
#if POSENC_SRC_HAS_PART(0)
#define POSENC_SRC_PART0(...) __VA_ARGS__
#else
#define POSENC_SRC_PART0(...)
#endif
#if POSENC_SRC_HAS_PART(1)
#define POSENC_SRC_PART1(...) __VA_ARGS__
#else
#define POSENC_SRC_PART1(...)
#endif
#if POSENC_SRC_HAS_PART(2)
#define POSENC_SRC_PART2(...) __VA_ARGS__
#else
#define POSENC_SRC_PART2(...)
#endif
#if POSENC_SRC_HAS_PART(3)
#define POSENC_SRC_PART3(...) __VA_ARGS__
#else
#define POSENC_SRC_PART3(...)
#endif

#include <array>
#include <cstdint>

#include "posenc/alibi.hpp"
#include "posenc/detail/kernels/kernels.hpp"
#if POSENC_SRC_HAS_PART(3)
#include "posenc/detail/raise-impl.hpp"
#endif
#include "posenc/kv_cache.hpp"
#include "posenc/learned.hpp"
#include "posenc/mrope.hpp"
#include "posenc/quantize.hpp"
#include "posenc/t5_bias.hpp"
#include "posenc/rope.hpp"
#include "posenc/rope_ops.hpp"
#include "posenc/sinusoidal.hpp"
#include "posenc/xpos.hpp"

// X-macros over the canonical storage types: M(T, args...) for each. Two copies, because a macro cannot
// expand itself (pairs of types nest one inside the other).
// The macro arguments below are types and template arguments, which cannot be parenthesised.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define POSENC_EACH_STORAGE_A(M, ...) \
  M(float, __VA_ARGS__) M(double, __VA_ARGS__) M(f16_storage, __VA_ARGS__) M(bf16_storage, __VA_ARGS__)
#define POSENC_EACH_STORAGE_B(M, ...) \
  M(float, __VA_ARGS__) M(double, __VA_ARGS__) M(f16_storage, __VA_ARGS__) M(bf16_storage, __VA_ARGS__)
#define POSENC_EACH_TABLE(M, ...) M(float, __VA_ARGS__) M(double, __VA_ARGS__)

// ---- the instantiation patterns the kernel list names (detail/kernels/entries.hpp); E: the entry's template --
#define POSENC_I_ONE(T, E) template struct E<T>;
#define POSENC_I_PAIR(In, Out, E) template struct E<In, Out>;
#define POSENC_I_PAIR_OUT(Out, E) POSENC_EACH_STORAGE_B(POSENC_I_PAIR, Out, E)
// Every pattern but RoPE's rows and the appends is part 3's.
/// One canonical storage type.
#define POSENC_INST_EACH_T(E) POSENC_SRC_PART3(POSENC_EACH_STORAGE_A(POSENC_I_ONE, E))
/// Every (in, out) pair of storage types.
#define POSENC_INST_EACH_PAIR(E) POSENC_SRC_PART3(POSENC_EACH_STORAGE_A(POSENC_I_PAIR_OUT, E))
/// The types of a rope_cache (float, double).
#define POSENC_INST_EACH_TABLE(E) POSENC_SRC_PART3(POSENC_EACH_TABLE(POSENC_I_ONE, E))

// rope_rows: one input/output pair of any storage types, and q + k in place (apply_rope_qk), from a plan, a
// cache or an engine's table of each type (apply_rope, the KV-cache append, the quantised forms), MRoPE and
// xPos; context shift and re-rotation in place.
#define POSENC_I_ROPE_K1(In, Out, E, Src, Pos) template struct E<Src, Pos, In, Out, 1>;
#define POSENC_I_ROPE_K2(T, E, Src, Pos) template struct E<Src, Pos, T, T, 2>;
#define POSENC_I_ROPE_INPLACE(T, E, Src, Pos) POSENC_I_ROPE_K1(T, T, E, Src, Pos)
#define POSENC_I_ROPE_OUT(Out, E, Src, Pos) POSENC_EACH_STORAGE_B(POSENC_I_ROPE_K1, Out, E, Src, Pos)
#define POSENC_I_ROPE_SOURCE(E, Src, Pos)                   \
  POSENC_EACH_STORAGE_A(POSENC_I_ROPE_OUT, E, Src, Pos) \
  POSENC_EACH_STORAGE_A(POSENC_I_ROPE_K2, E, Src, Pos)
#define POSENC_INST_ROPE_ROWS(E)                                                                   \
  POSENC_SRC_PART0(POSENC_I_ROPE_SOURCE(E, angle_src, positions)                                   \
                   POSENC_I_ROPE_SOURCE(E, table_src<float>, positions)                            \
                   POSENC_I_ROPE_SOURCE(E, table_src<double>, positions))                          \
  POSENC_SRC_PART1(POSENC_I_ROPE_SOURCE(E, table_src<f16_storage>, positions)                      \
                   POSENC_I_ROPE_SOURCE(E, table_src<bf16_storage>, positions)                     \
                   POSENC_I_ROPE_SOURCE(E, mrope_src, mrope_positions)                             \
                   POSENC_I_ROPE_SOURCE(E, xpos_src, positions)                                    \
                   POSENC_EACH_STORAGE_A(POSENC_I_ROPE_INPLACE, E, angle_src, delta_positions)     \
                   POSENC_EACH_STORAGE_A(POSENC_I_ROPE_INPLACE, E, rerotate_src, positions))

// append_rows: q, k and v of one storage type into caches of one type, from a plan, a cache or a table, where q
// and k rotate in one arithmetic type (a double cache under float input takes the unfused path).
#define POSENC_I_APPEND(Out, In, E, Src) template struct E<Src, In, Out>;
#define POSENC_I_APPEND_NARROW(In, E, Src) \
  POSENC_I_APPEND(float, In, E, Src) POSENC_I_APPEND(f16_storage, In, E, Src) POSENC_I_APPEND(bf16_storage, In, E, Src)
#define POSENC_I_APPEND_SOURCE(Src, E)                                                                 \
  POSENC_I_APPEND_NARROW(float, E, Src) POSENC_I_APPEND_NARROW(f16_storage, E, Src)                \
  POSENC_I_APPEND_NARROW(bf16_storage, E, Src) POSENC_EACH_STORAGE_B(POSENC_I_APPEND, double, E, Src)
#define POSENC_INST_APPEND_ROWS(E)                                                                   \
  POSENC_SRC_PART2(POSENC_I_APPEND_SOURCE(angle_src, E) POSENC_I_APPEND_SOURCE(table_src<float>, E) \
                   POSENC_I_APPEND_SOURCE(table_src<double>, E))                                    \
  POSENC_SRC_PART0(POSENC_I_APPEND_SOURCE(table_src<f16_storage>, E)                                \
                   POSENC_I_APPEND_SOURCE(table_src<bf16_storage>, E))

// rope_quant_rows: K (a plan, a cache or a table) with or without V, or V alone (a null source), into 8-bit codes.
#define POSENC_I_QUANT(In, E, Src) template struct E<Src, In>;
#define POSENC_I_QUANT_SOURCE(Src, E) POSENC_EACH_STORAGE_A(POSENC_I_QUANT, E, Src)
#define POSENC_INST_QUANT_ROWS(E)                                                                  \
  POSENC_SRC_PART3(POSENC_I_QUANT_SOURCE(angle_src, E) POSENC_I_QUANT_SOURCE(table_src<float>, E) \
                   POSENC_I_QUANT_SOURCE(table_src<double>, E)                                    \
                   POSENC_I_QUANT_SOURCE(table_src<f16_storage>, E)                               \
                   POSENC_I_QUANT_SOURCE(table_src<bf16_storage>, E))

// alibi_rows: written from the formula, added from the formula or from slopes of any storage type.
#define POSENC_I_ALIBI_VIEW(S, T, E) template struct E<true, T, alibi_view_slopes<S>>;
#define POSENC_I_ALIBI_T(T, E)                         \
  template struct E<false, T, alibi_formula_slopes>; \
  template struct E<true, T, alibi_formula_slopes>;  \
  POSENC_EACH_STORAGE_B(POSENC_I_ALIBI_VIEW, T, E)
#define POSENC_INST_ALIBI_ROWS(E) POSENC_SRC_PART3(POSENC_EACH_STORAGE_A(POSENC_I_ALIBI_T, E))

// table_rows (learned and sinusoidal tables of float or double into any storage type) and t5_rows (written
// or added).
#define POSENC_I_T_TABLE(C, T, E) template struct E<T, C>;
#define POSENC_I_T_BY_TABLE(T, E) POSENC_EACH_TABLE(POSENC_I_T_TABLE, T, E)
#define POSENC_INST_T_BY_TABLE(E) POSENC_SRC_PART3(POSENC_EACH_STORAGE_A(POSENC_I_T_BY_TABLE, E))
#define POSENC_I_T5(C, T, E) template struct E<false, T, C>; template struct E<true, T, C>;
#define POSENC_I_T5_T(T, E) POSENC_EACH_TABLE(POSENC_I_T5, T, E)
#define POSENC_INST_T5_ROWS(E) POSENC_SRC_PART3(POSENC_EACH_STORAGE_A(POSENC_I_T5_T, E))

#define POSENC_INSTANTIATE(name, tparams, targs, params, args, inst) inst(name##_entry)

POSENC_BEGIN_NAMESPACE
namespace detail {
POSENC_KERNEL_LIST(POSENC_INSTANTIATE)
}  // namespace detail
POSENC_END_NAMESPACE
// NOLINTEND(bugprone-macro-parentheses)

#undef POSENC_INSTANTIATE
#undef POSENC_EACH_STORAGE_A
#undef POSENC_EACH_STORAGE_B
#undef POSENC_EACH_TABLE
#undef POSENC_SRC_HAS_PART
#undef POSENC_SRC_PART0
#undef POSENC_SRC_PART1
#undef POSENC_SRC_PART2
#undef POSENC_SRC_PART3
