// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// The kernel boundary: the one function per kernel that the public headers call, declared here without any
// SIMD code. Each entry reaches its kernels through call_target (detail/kernels/kernels.hpp) and takes
// storage types already mapped to posenc's canonical ones (float, double, f16_storage, bf16_storage), so that
// every f16 type an engine passes (Eigen::half, ggml's uint16_t, _Float16) runs one instantiation.
//
// Header-only (the default): kernels.hpp, included at the end, defines the entries and the includer compiles
// the kernels it calls. POSENC_SEPARATE_COMPILATION: the includer sees only these declarations; posenc/src.hpp,
// compiled once, defines and explicitly instantiates every entry for every canonical type (Asio's
// ASIO_SEPARATE_COMPILATION, spdlog's SPDLOG_COMPILED_LIB).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "posenc/config.hpp"
#include "posenc/detail/kernels/params.hpp"
#include "posenc/detail/math/quant.hpp"
#include "posenc/detail/simd/targets.hpp"
#include "posenc/positions.hpp"
#include "posenc/storage.hpp"
#include "posenc/tensor_view.hpp"
#include "posenc/types.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail {

// ---- canonical storage ------------------------------------------------------------------------------------------

/// posenc's canonical type of a storage type: float, double, f16_storage or bf16_storage (storage.hpp).
template <class T>
using canonical_of_t = std::conditional_t<is_f16_v<T>, f16_storage, std::conditional_t<is_bf16_v<T>, bf16_storage, T>>;

/// The same memory as posenc's canonical type: a 16-bit element is only ever copied as bytes or loaded by
/// vector instructions (storage.hpp), so no access goes through the caller's type.
template <class T>
auto canonical_ptr(T* p) {
  using U = std::remove_const_t<T>;
  using C = canonical_of_t<U>;
  if constexpr (std::is_same_v<C, U>) {
    return p;
  } else if constexpr (std::is_const_v<T>) {
    return reinterpret_cast<const C*>(p);
  } else {
    return reinterpret_cast<C*>(p);
  }
}
template <class T, std::size_t R>
auto canonical(const strided_view<T, R>& v) {
  using C = std::remove_pointer_t<decltype(canonical_ptr(v.data()))>;
  return strided_view<C, R>(canonical_ptr(v.data()), v.extents(), v.strides());
}
template <class In, class Out>
auto canonical(const rope_io<In, Out>& t) {
  using I = std::remove_const_t<std::remove_pointer_t<decltype(canonical_ptr(t.in.data()))>>;
  using O = std::remove_pointer_t<decltype(canonical_ptr(t.out.data()))>;
  return rope_io<I, O>{canonical(t.in), canonical(t.out), t.map};
}
template <class In, class Out, std::size_t K>
decltype(auto) canonical(const std::array<rope_io<In, Out>, K>& a) {
  if constexpr (std::is_same_v<canonical_of_t<In>, In> && std::is_same_v<canonical_of_t<Out>, Out>) {
    return (a);  // already canonical: the caller's array itself (a copy measured ~10% of a one-token call)
  } else {
    std::array<decltype(canonical(a[0])), K> c{};
    for (std::size_t k = 0; k < K; ++k) c[k] = canonical(a[k]);
    return c;
  }
}
template <class T>
auto canonical(const add_target<T>& t) {
  using C = std::remove_pointer_t<decltype(canonical_ptr(t.out.data()))>;
  return add_target<C>{canonical(t.in), canonical(t.out)};
}
template <class C>
auto canonical(const table_src<C>& s) {
  using D = std::remove_const_t<std::remove_pointer_t<decltype(canonical_ptr(s.cos))>>;
  return table_src<D>{canonical_ptr(s.cos), canonical_ptr(s.sin), s.row_stride, s.pair_stride};
}
template <class S>
auto canonical(const alibi_view_slopes<S>& s) {
  using D = std::remove_const_t<std::remove_pointer_t<decltype(canonical_ptr(s.slopes.data()))>>;
  return alibi_view_slopes<D>{canonical(s.slopes)};
}
inline const angle_src& canonical(const angle_src& s) { return s; }
inline const mrope_src& canonical(const mrope_src& s) { return s; }
inline const rerotate_src& canonical(const rerotate_src& s) { return s; }
inline const xpos_src& canonical(const xpos_src& s) { return s; }
inline const alibi_formula_slopes& canonical(const alibi_formula_slopes& s) { return s; }

// ---- the entries (defined in kernels.hpp) ----------------------------------------------------------------------

/// Rotates the tokens of `io` by `src` (detail/kernels/rope-inl.hpp rope_rows).
template <class Source, class Pos, class In, class Out, std::size_t K>
void rope_rows_entry(const Source& src, const Pos& pos, rope_style style, index_t offset, index_t pairs, double sign,
                     const std::array<rope_io<In, Out>, K>& io, const std::array<int, K>& variant);
/// The fused KV-cache append: q (no heads: none) rotated in place, k rotated into and v copied into their cache
/// rows, one pass per token (detail/kernels/rope-inl.hpp append_rows).
template <class Source, class In, class Out>
void append_rows_entry(const Source& src, const positions& pos, rope_style style, index_t offset, index_t pairs,
                       const rope_io<In, In>& q, const rope_io<In, Out>& k, const rope_io<In, Out>& v);
/// Copies (and converts) the tokens of `t` into their output rows (V of a KV-cache append).
template <class In, class Out>
void copy_tokens_entry(const rope_io<In, Out>& t);
/// Rows 0 .. positions-1 of a rope_cache.
template <class C>
void rope_cache_fill_entry(const angle_src& src, index_t positions, index_t pairs, C* cos, C* sin);
/// Every token of `in` rotated by `src` (K; null: V, only widened) and quantised into its 8-bit code rows
/// through `map` (detail/kernels/quant-inl.hpp).
template <class Source, class In, class Code>
void rope_quant_rows_entry(const Source* src, const positions& pos, rope_style style, index_t offset, index_t pairs,
                           const strided_view<const In, 4>& in, const strided_view<Code, 4>& out, const token_map& map,
                           const quant_params& q);
/// ALiBi bias written (Add false) or added into [N, H, Lq, Lk] scores.
template <bool Add, class T, class Slopes>
void alibi_rows_entry(const strided_view<T, 4>& out, const Slopes& slopes, const positions& pos, bool symmetric,
                      bool causal);
/// Sinusoids added to `in` into `out` (an empty `in`: written).
template <class T>
void sinusoid_rows_entry(const sinusoid_params& sp, const positions& pos, const strided_view<const T, 3>& in,
                         const strided_view<T, 3>& out);
/// Rows of a table added (times `scale`) to a (N, L, D) target.
template <class T, class C>
void table_rows_entry(const C* table, index_t dim, index_t row_offset, double scale, const positions& pos,
                      const add_target<T>& t);
/// T5 bias written (Add false) or added into [N, H, Lq, Lk] scores.
template <bool Add, class T, class C>
void t5_rows_entry(const C* table, index_t heads, const t5_runs& runs, const positions& pos,
                   const strided_view<T, 4>& out);
/// Interleaved <-> half-split pair layout, out of place.
template <class T>
void convert_layout_entry(const strided_view<const T, 4>& in, const strided_view<T, 4>& out, index_t rotary_dim,
                          index_t offset, rope_style from, rope_style to);

// ---- what the public headers call: canonical types, then the entry ---------------------------------------------

template <class Source, class Pos, class In, class Out, std::size_t K>
void run_rope_rows(const Source& src, const Pos& pos, rope_style style, index_t offset, index_t pairs, double sign,
                   const std::array<rope_io<In, Out>, K>& io, const std::array<int, K>& variant) {
  rope_rows_entry(canonical(src), pos, style, offset, pairs, sign, canonical(io), variant);
}
template <class Source, class In, class Out>
void run_append_rows(const Source& src, const positions& pos, rope_style style, index_t offset, index_t pairs,
                     const rope_io<In, In>& q, const rope_io<In, Out>& k, const rope_io<In, Out>& v) {
  append_rows_entry(canonical(src), pos, style, offset, pairs, canonical(q), canonical(k), canonical(v));
}
template <class Source, class In, class Code>
void run_rope_quant_rows(const Source* src, const positions& pos, rope_style style, index_t offset, index_t pairs,
                         const strided_view<const In, 4>& in, const strided_view<Code, 4>& out, const token_map& map,
                         const quant_params& q) {
  using S = std::decay_t<decltype(canonical(*src))>;
  if (src == nullptr) {
    rope_quant_rows_entry<S>(nullptr, pos, style, offset, pairs, canonical(in), out, map, q);
  } else {
    const S cs = canonical(*src);
    rope_quant_rows_entry(&cs, pos, style, offset, pairs, canonical(in), out, map, q);
  }
}
template <bool Add, class T, class Slopes>
void run_alibi_rows(std::bool_constant<Add>, const strided_view<T, 4>& out, const Slopes& slopes, const positions& pos,
                    bool symmetric, bool causal) {
  alibi_rows_entry<Add>(canonical(out), canonical(slopes), pos, symmetric, causal);
}
template <class T>
void run_sinusoid_rows(const sinusoid_params& sp, const positions& pos, const strided_view<const T, 3>& in,
                       const strided_view<T, 3>& out) {
  sinusoid_rows_entry(sp, pos, canonical(in), canonical(out));
}
template <class T, class C>
void run_table_rows(const C* table, index_t dim, index_t row_offset, double scale, const positions& pos,
                    const add_target<T>& t) {
  table_rows_entry(table, dim, row_offset, scale, pos, canonical(t));
}
template <bool Add, class T, class C>
void run_t5_rows(std::bool_constant<Add>, const C* table, index_t heads, const t5_runs& runs, const positions& pos,
                 const strided_view<T, 4>& out) {
  t5_rows_entry<Add>(table, heads, runs, pos, canonical(out));
}
template <class T>
void run_convert_layout(const strided_view<const T, 4>& in, const strided_view<T, 4>& out, index_t rotary_dim,
                        index_t offset, rope_style from, rope_style to) {
  convert_layout_entry(canonical(in), canonical(out), rotary_dim, offset, from, to);
}

}  // namespace detail
POSENC_END_NAMESPACE

#if !defined(POSENC_SEPARATE_COMPILATION)
#include "posenc/detail/kernels/kernels.hpp"
#endif
