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
#pragma once

#if !defined(POSENC_SEPARATE_COMPILATION)
#error "posenc/src.hpp is for POSENC_SEPARATE_COMPILATION builds (define it in every translation unit)"
#endif

#include <array>
#include <cstdint>

#include "posenc/alibi.hpp"
#include "posenc/detail/kernels/kernels.hpp"
#include "posenc/detail/raise-impl.hpp"
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

// rope_rows: one input/output pair of any storage types, and q + k in place (apply_rope_qk).
#define POSENC_INST_ROPE_K1(In, Out, Src, Pos)                                                                   \
  template void rope_rows_entry<Src, Pos, In, Out, 1>(                                       \
      const Src&, const Pos&, rope_style, index_t, index_t, double, const std::array<rope_io<In, Out>, 1>&, \
      const std::array<int, 1>&);
#define POSENC_INST_ROPE_K2(T, Src, Pos)                                                                       \
  template void rope_rows_entry<Src, Pos, T, T, 2>(                                        \
      const Src&, const Pos&, rope_style, index_t, index_t, double, const std::array<rope_io<T, T>, 2>&, \
      const std::array<int, 2>&);
#define POSENC_INST_ROPE_INPLACE(T, Src, Pos) POSENC_INST_ROPE_K1(T, T, Src, Pos)
#define POSENC_INST_ROPE_OUT(Out, Src, Pos) POSENC_EACH_STORAGE_B(POSENC_INST_ROPE_K1, Out, Src, Pos)
#define POSENC_INST_ROPE_SOURCE(Src, Pos)                 \
  POSENC_EACH_STORAGE_A(POSENC_INST_ROPE_OUT, Src, Pos) \
  POSENC_EACH_STORAGE_A(POSENC_INST_ROPE_K2, Src, Pos)
#define POSENC_INST_ROPE_TABLE(C, Pos) POSENC_INST_ROPE_SOURCE(table_src<C>, Pos)

#define POSENC_INST_COPY(In, Out) template void copy_tokens_entry<In, Out>(const rope_io<In, Out>&);
// append_rows: q, k and v of one storage type into caches of one type, from a plan, a cache or a table, where q
// and k rotate in one arithmetic type (a double cache under float input takes the unfused path).
#define POSENC_INST_APPEND(Out, In, Src)                                                                        \
  template void append_rows_entry<Src, In, Out>(const Src&, const positions&, rope_style,  \
                                                                  index_t, index_t, const rope_io<In, In>&, \
                                                                  const rope_io<In, Out>&, const rope_io<In, Out>&);
#define POSENC_INST_APPEND_NARROW(In, Src) \
  POSENC_INST_APPEND(float, In, Src) POSENC_INST_APPEND(f16_storage, In, Src) POSENC_INST_APPEND(bf16_storage, In, Src)
#define POSENC_INST_APPEND_SOURCE(Src, unused)                                                      \
  POSENC_INST_APPEND_NARROW(float, Src) POSENC_INST_APPEND_NARROW(f16_storage, Src)                \
  POSENC_INST_APPEND_NARROW(bf16_storage, Src) POSENC_EACH_STORAGE_B(POSENC_INST_APPEND, double, Src)
#define POSENC_INST_COPY_OUT(Out, unused) POSENC_EACH_STORAGE_B(POSENC_INST_COPY, Out)

#define POSENC_INST_CACHE_FILL(C, unused) \
  template void rope_cache_fill_entry<C>(const angle_src&, index_t, index_t, C*, C*);

// rope_quant_rows: K (a plan, a cache or a table) and V (the same entry with a null source) into 8-bit codes.
#define POSENC_INST_QUANT(In, Src, Code)                                                                           \
  template void rope_quant_rows_entry<Src, In, Code>(                                          \
      const Src*, const positions&, rope_style, index_t, index_t, const strided_view<const In, 4>&,               \
      const strided_view<Code, 4>&, const token_map&, const quant_params&);
#define POSENC_INST_QUANT_CODES(In, Src) POSENC_INST_QUANT(In, Src, std::int8_t) POSENC_INST_QUANT(In, Src, std::uint8_t)
#define POSENC_INST_QUANT_SOURCE(Src, unused) POSENC_EACH_STORAGE_A(POSENC_INST_QUANT_CODES, Src)

#define POSENC_INST_ALIBI(T, Add, Slopes)                                                                      \
  template void alibi_rows_entry<Add, T, Slopes>(const strided_view<T, 4>&, const Slopes&, \
                                                                   const positions&, bool, bool);
#define POSENC_INST_ALIBI_VIEW(S, T) POSENC_INST_ALIBI(T, true, alibi_view_slopes<S>)
#define POSENC_INST_ALIBI_ALL(T, unused)                     \
  POSENC_INST_ALIBI(T, false, alibi_formula_slopes)          \
  POSENC_INST_ALIBI(T, true, alibi_formula_slopes)           \
  POSENC_EACH_STORAGE_B(POSENC_INST_ALIBI_VIEW, T)

#define POSENC_INST_SINUSOID(T, unused)                                                                       \
  template void sinusoid_rows_entry<T>(const sinusoid_params&, const positions&,          \
                                                         const strided_view<const T, 3>&, const strided_view<T, 3>&);

#define POSENC_INST_TABLE_ROWS(C, T)                                                                          \
  template void table_rows_entry<T, C>(const C*, index_t, index_t, double, const positions&, \
                                                         const add_target<T>&);
#define POSENC_INST_TABLE_ROWS_ALL(T, unused) POSENC_EACH_TABLE(POSENC_INST_TABLE_ROWS, T)

#define POSENC_INST_T5(C, T, Add)                                                                              \
  template void t5_rows_entry<Add, T, C>(const C*, index_t, const t5_runs&, const positions&, \
                                                           const strided_view<T, 4>&);
#define POSENC_INST_T5_ALL(T, unused) POSENC_EACH_TABLE(POSENC_INST_T5, T, false) POSENC_EACH_TABLE(POSENC_INST_T5, T, true)

#define POSENC_INST_CONVERT(T, unused)                                                                        \
  template void convert_layout_entry<T>(const strided_view<const T, 4>&,                  \
                                                          const strided_view<T, 4>&, index_t, index_t, rope_style, \
                                                          rope_style);

POSENC_BEGIN_NAMESPACE
namespace detail {

// apply_rope and friends, the KV-cache append, the quantised forms: a plan, a rope_cache or an engine's table.
POSENC_INST_ROPE_SOURCE(angle_src, positions)
POSENC_INST_ROPE_TABLE(float, positions)
POSENC_INST_ROPE_TABLE(double, positions)
POSENC_INST_ROPE_TABLE(f16_storage, positions)
POSENC_INST_ROPE_TABLE(bf16_storage, positions)
// MRoPE and xPos: any pair of storage types, q + k in place.
POSENC_INST_ROPE_SOURCE(mrope_src, mrope_positions)
POSENC_INST_ROPE_SOURCE(xpos_src, positions)
// Context shift and re-rotation: in place.
POSENC_EACH_STORAGE_A(POSENC_INST_ROPE_INPLACE, angle_src, delta_positions)
POSENC_EACH_STORAGE_A(POSENC_INST_ROPE_INPLACE, rerotate_src, positions)

POSENC_EACH_STORAGE_A(POSENC_INST_COPY_OUT, 0)
POSENC_INST_APPEND_SOURCE(angle_src, 0)
POSENC_INST_APPEND_SOURCE(table_src<float>, 0)
POSENC_INST_APPEND_SOURCE(table_src<double>, 0)
POSENC_INST_APPEND_SOURCE(table_src<f16_storage>, 0)
POSENC_INST_APPEND_SOURCE(table_src<bf16_storage>, 0)
POSENC_EACH_TABLE(POSENC_INST_CACHE_FILL, 0)
POSENC_INST_QUANT_SOURCE(angle_src, 0)
POSENC_INST_QUANT_SOURCE(table_src<float>, 0)
POSENC_INST_QUANT_SOURCE(table_src<double>, 0)
POSENC_INST_QUANT_SOURCE(table_src<f16_storage>, 0)
POSENC_INST_QUANT_SOURCE(table_src<bf16_storage>, 0)
POSENC_EACH_STORAGE_A(POSENC_INST_ALIBI_ALL, 0)
POSENC_EACH_STORAGE_A(POSENC_INST_SINUSOID, 0)
POSENC_EACH_STORAGE_A(POSENC_INST_TABLE_ROWS_ALL, 0)
POSENC_EACH_STORAGE_A(POSENC_INST_T5_ALL, 0)
POSENC_EACH_STORAGE_A(POSENC_INST_CONVERT, 0)

}  // namespace detail
POSENC_END_NAMESPACE
// NOLINTEND(bugprone-macro-parentheses)

#undef POSENC_EACH_STORAGE_A
#undef POSENC_EACH_STORAGE_B
#undef POSENC_EACH_TABLE
#undef POSENC_INST_ROPE_K1
#undef POSENC_INST_ROPE_K2
#undef POSENC_INST_ROPE_INPLACE
#undef POSENC_INST_ROPE_OUT
#undef POSENC_INST_ROPE_SOURCE
#undef POSENC_INST_ROPE_TABLE
#undef POSENC_INST_COPY
#undef POSENC_INST_COPY_OUT
#undef POSENC_INST_APPEND
#undef POSENC_INST_APPEND_NARROW
#undef POSENC_INST_APPEND_SOURCE
#undef POSENC_INST_CACHE_FILL
#undef POSENC_INST_QUANT
#undef POSENC_INST_QUANT_CODES
#undef POSENC_INST_QUANT_SOURCE
#undef POSENC_INST_ALIBI
#undef POSENC_INST_ALIBI_VIEW
#undef POSENC_INST_ALIBI_ALL
#undef POSENC_INST_SINUSOID
#undef POSENC_INST_TABLE_ROWS
#undef POSENC_INST_TABLE_ROWS_ALL
#undef POSENC_INST_T5
#undef POSENC_INST_T5_ALL
#undef POSENC_INST_CONVERT
