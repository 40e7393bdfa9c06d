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
decltype(auto) canonical(const rope_io<In, Out>& t) {
  if constexpr (std::is_same_v<canonical_of_t<In>, In> && std::is_same_v<canonical_of_t<Out>, Out>) {
    return (t);  // already canonical: the caller's views themselves (copies of three rope_io were ~15% of a
                 // one-token KV append, their stores read back before they retired)
  } else {
    using I = std::remove_const_t<std::remove_pointer_t<decltype(canonical_ptr(t.in.data()))>>;
    using O = std::remove_pointer_t<decltype(canonical_ptr(t.out.data()))>;
    return rope_io<I, O>{canonical(t.in), canonical(t.out), t.map};
  }
}
/// The rope_io of an input and an output view in canonical storage types, no token map: how the entries
/// (make_target, make_cache_target) build their targets, so that the kernels take them by reference.
///
/// The views are built straight from the arguments' fields: going through a converted temporary (a view of
/// const I) stored it on the stack and read it back at another offset, a store-forwarding stall measured at
/// 1.5% of a one-token KV append.
template <class I, class O>
POSENC_ALWAYS_INLINE rope_io<canonical_of_t<std::remove_const_t<I>>, canonical_of_t<O>> canonical_io(
    const strided_view<I, 4>& in, const strided_view<O, 4>& out) {
  using CI = canonical_of_t<std::remove_const_t<I>>;
  const auto* pi = canonical_ptr(static_cast<const std::remove_const_t<I>*>(in.data()));
  return {strided_view<const CI, 4>(pi, in.extents(), in.strides()), canonical(out), token_map{}};
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
  return table_src<D>{canonical_ptr(s.cos), canonical_ptr(s.sin), s.row_stride, s.pair_stride, s.rows};
}
template <class In>
auto canonical(const quant_leg<In>& g) {
  using C = std::remove_const_t<std::remove_pointer_t<decltype(canonical_ptr(g.in.data()))>>;
  return quant_leg<C>{canonical(g.in), g.out, g.q};
}
template <class S>
auto canonical(const alibi_view_slopes<S>& s) {
  using D = std::remove_const_t<std::remove_pointer_t<decltype(canonical_ptr(s.data))>>;
  return alibi_view_slopes<D>{canonical_ptr(s.data), {s.stride[0], s.stride[1]}};
}
inline const angle_src& canonical(const angle_src& s) { return s; }
inline const mrope_src& canonical(const mrope_src& s) { return s; }
inline const rerotate_src& canonical(const rerotate_src& s) { return s; }
inline const xpos_src& canonical(const xpos_src& s) { return s; }
inline const alibi_formula_slopes& canonical(const alibi_formula_slopes& s) { return s; }

/// Any other argument (positions, scalars, parameter structs, a cos/sin pointer of a table already float or
/// double) is canonical as it is.
template <class T>
const T& canonical(const T& x) {
  return x;
}

// ---- the kernel list ------------------------------------------------------------------------------------------
// One line per kernel: X(name, template parameters, template arguments, parameters, arguments, instantiations).
// From it come, per kernel `name` (the function of detail/kernels/*-inl.hpp that takes a target tag first):
//  - name_entry<...>::run(parameters): the entry (declared here, defined in kernels.hpp: call_target picks the
//    target, then name(target, arguments)), explicitly instantiated by src.hpp under separate compilation with
//    the last column, an instantiation pattern of src.hpp (POSENC_INST_*: which storage types it takes);
//  - run_name(...): what the public headers call, every argument mapped to posenc's canonical types first.
// So a new kernel is the kernel plus one line here.
// NOLINTBEGIN(bugprone-macro-parentheses): the columns are parameter lists and types, which cannot be parenthesised.
#define POSENC_KERNEL_LIST(X)                                                                                        \
  /* Rotates the tokens of io by src (rope-inl.hpp rope_rows). */                                                   \
  X(rope_rows, (class Source, class Pos, class In, class Out, std::size_t K), (Source, Pos, In, Out, K),            \
    (const Source& src, const Pos& pos, rope_style style, index_t offset, index_t pairs, double sign,              \
     const std::array<rope_io<In, Out>, K>& io, const std::array<int, K>& variant),                                 \
    (src, pos, style, offset, pairs, sign, io, variant), POSENC_INST_ROPE_ROWS)                                    \
  /* The fused KV-cache append: q (no heads: none) rotated in place, k rotated into and v copied into their */     \
  /* cache rows, one pass per token (rope-inl.hpp append_rows). */                                                 \
  X(append_rows, (class Source, class In, class Out), (Source, In, Out),                                            \
    (const Source& src, const positions& pos, rope_style style, index_t offset, index_t pairs,                     \
     const rope_io<In, In>& q, const rope_io<In, Out>& k, const rope_io<In, Out>& v),                              \
    (src, pos, style, offset, pairs, q, k, v), POSENC_INST_APPEND_ROWS)                                            \
  /* Copies (and converts) the tokens of t into their output rows (V of a KV-cache append). */                     \
  X(copy_tokens, (class In, class Out), (In, Out), (const rope_io<In, Out>& t), (t), POSENC_INST_EACH_PAIR)        \
  /* Rows first .. last-1 of a rope_cache (row p at cos + p * pairs). */                                          \
  X(rope_cache_fill, (class C), (C),                                                                                \
    (const angle_src& src, index_t first, index_t last, index_t pairs, C* cos, C* sin),                            \
    (src, first, last, pairs, cos, sin), POSENC_INST_EACH_TABLE)                                                    \
  /* Every token of `first` rotated by src (K; null: only widened, V) and of `second` (V, when present) */      \
  /* widened, each quantised into its 8-bit code rows through map, one pass per token (quant-inl.hpp). */          \
  X(rope_quant_rows, (class Source, class In), (Source, In),                                                        \
    (const Source* src, const positions& pos, rope_style style, index_t offset, index_t pairs,                     \
     const quant_leg<In>& first, const quant_leg<In>& second, const token_map& map),                               \
    (src, pos, style, offset, pairs, first, second, map), POSENC_INST_QUANT_ROWS)                                  \
  /* ALiBi bias written (Add false) or added into [N, H, Lq, Lk] scores (alibi-inl.hpp). */                        \
  X(alibi_rows, (bool Add, class T, class Slopes), (Add, T, Slopes),                                                \
    (std::bool_constant<Add> add, const strided_view<T, 4>& out, const Slopes& slopes, const positions& pos,      \
     index_t max_query, bool symmetric, bool causal, bool fp32),                                                    \
    (add, out, slopes, pos, max_query, symmetric, causal, fp32), POSENC_INST_ALIBI_ROWS)                           \
  /* Sinusoids added to in into out (an empty in: written) (add-inl.hpp). */                                        \
  X(sinusoid_rows, (class T), (T),                                                                                  \
    (const sinusoid_params& sp, const positions& pos, const strided_view<const T, 3>& in,                          \
     const strided_view<T, 3>& out),                                                                                \
    (sp, pos, in, out), POSENC_INST_EACH_T)                                                                         \
  /* Rows of a table added (times scale) to a (N, L, D) target (add-inl.hpp). */                                   \
  X(table_rows, (class T, class C), (T, C),                                                                         \
    (const C* table, index_t dim, index_t row_offset, double scale, const positions& pos, const add_target<T>& t), \
    (table, dim, row_offset, scale, pos, t), POSENC_INST_T_BY_TABLE)                                               \
  /* T5 bias written (Add false) or added into [N, H, Lq, Lk] scores (t5-inl.hpp). */                              \
  X(t5_rows, (bool Add, class T, class C), (Add, T, C),                                                             \
    (std::bool_constant<Add> add, const C* table, index_t heads, const t5_runs& runs, const positions& pos,        \
     const strided_view<T, 4>& out),                                                                                \
    (add, table, heads, runs, pos, out), POSENC_INST_T5_ROWS)                                                      \
  /* Interleaved <-> half-split pair layout, out of place (layout-inl.hpp). */                                     \
  X(convert_layout, (class T), (T),                                                                                 \
    (const strided_view<const T, 4>& in, const strided_view<T, 4>& out, index_t rotary_dim, index_t offset,       \
     rope_style from, rope_style to),                                                                               \
    (in, out, rotary_dim, offset, from, to), POSENC_INST_EACH_T)

#define POSENC_UNPAREN_I(...) __VA_ARGS__
#define POSENC_UNPAREN(x) POSENC_UNPAREN_I x

// The entry's declaration, the call that deduces its template arguments, and the canonicalising run_ form.
#define POSENC_DECLARE_KERNEL(name, tparams, targs, params, args, inst)                                              \
  template <POSENC_UNPAREN(tparams)>                                                                                \
  struct name##_entry {                                                                                             \
    static void run params;                                                                                         \
  };                                                                                                                \
  template <POSENC_UNPAREN(tparams)>                                                                                \
  void name##_call params {                                                                                         \
    name##_entry<POSENC_UNPAREN(targs)>::run args;                                                                  \
  }                                                                                                                 \
  template <class... A>                                                                                             \
  void run_##name(const A&... a) {                                                                                  \
    name##_call(canonical(a)...);                                                                                   \
  }
POSENC_KERNEL_LIST(POSENC_DECLARE_KERNEL)
#undef POSENC_DECLARE_KERNEL
// NOLINTEND(bugprone-macro-parentheses)

}  // namespace detail
POSENC_END_NAMESPACE

#if !defined(POSENC_SEPARATE_COMPILATION)
#include "posenc/detail/kernels/kernels.hpp"
#endif
