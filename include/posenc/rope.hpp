// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// Rotary position embedding (RoPE) over (N, L, H, D) tensors: interleaved and half-split pairs, partial
// rotary windows, every scaling (through rope_plan), positions as an offset, per sequence or per token, in
// place or out of place, q and k in one pass, the backward pass, with or without a cos/sin cache.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/detail/aligned_vector.hpp"
#include "posenc/detail/check.hpp"
#include "posenc/detail/rope_checks.hpp"
#include "posenc/detail/kernels/entries.hpp"
#include "posenc/detail/kernels/params.hpp"
#include "posenc/detail/simd/base.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/positions.hpp"
#include "posenc/rope_plan.hpp"
#include "posenc/status.hpp"
#include "posenc/storage.hpp"
#include "posenc/tensor_view.hpp"

POSENC_BEGIN_NAMESPACE

/// A cos/sin table for positions 0 .. max_positions-1 of one plan: angles formed in double, multiplied by the
/// plan's magnitude and rounded to C (float or double) once. Two [max_positions, R/2] arrays, so a row is one
/// contiguous load per position (vLLM's cos_sin_cache, ggml's precomputed theta).
///
/// **Example**
/// ```
/// posenc::rope_cache<float> cache(plan, 8192);
/// posenc::apply_rope(cache, q, posenc::positions::offset(past_len));
/// ```
template <class C = float>
class rope_cache {
  static_assert(std::is_same_v<C, float> || std::is_same_v<C, double>, "posenc::rope_cache: C is float or double");

 public:
  /// Throws argument_error if the plan is empty, max_positions < 0, or the table size overflows. The rows are
  /// formed by the vector sincos of the active ISA (detail/kernels/vmath-inl.hpp), each within ~2 ulp of the
  /// double result before the rounding to C.
  rope_cache(rope_plan plan, index_t max_positions) {
    detail::throw_if_error(try_build(std::move(plan), max_positions));
  }

  /// The constructor without exceptions: `out` holds the table on success, is unchanged on error (an
  /// out_of_memory status when the table cannot be allocated).
  static status try_create(rope_plan plan, index_t max_positions, rope_cache& out) noexcept {
    rope_cache c;
    POSENC_TRY(c.try_build(std::move(plan), max_positions));
    out = std::move(c);
    return {};
  }

  /// The plan the table was built from.
  const rope_plan& plan() const { return plan_; }
  /// Rows of the table: positions 0 .. max_positions-1 (a larger one is rejected).
  index_t max_positions() const { return max_positions_; }
  /// Row p holds m*cos(p*w_i) for i = 0 .. R/2-1.
  const C* cos_data() const { return cos_.data(); }
  /// Row p holds m*sin(p*w_i) for i = 0 .. R/2-1.
  const C* sin_data() const { return sin_.data(); }

  /// An empty cache (no plan, no positions), to be filled by try_create.
  rope_cache() = default;

 private:
  status try_build(rope_plan plan, index_t max_positions) noexcept {
    constexpr const char* fn = "rope_cache";
    if (plan.empty()) return detail::fail(fn, "plan is empty");
    if (max_positions < 0) return detail::fail(fn, "max_positions=", max_positions, " must be >= 0");
    const index_t pairs = plan.pairs();
    if (max_positions > static_cast<index_t>(cos_.max_size()) / pairs)
      return detail::fail(fn, "max_positions=", max_positions, " times ", pairs, " pairs overflows");
    return detail::guard_alloc(fn, [&]() -> status {
      plan_ = std::move(plan);
      max_positions_ = max_positions;
      cos_.resize(static_cast<std::size_t>(max_positions * pairs));
      sin_.resize(static_cast<std::size_t>(max_positions * pairs));
      const detail::angle_src src{plan_.inv_freq().data(), plan_.magnitude(), detail::max_abs(plan_.inv_freq())};
      C* c = cos_.data();
      C* s = sin_.data();
      detail::run_rope_cache_fill(src, 0, max_positions, pairs, c, s);
      return {};
    });
  }

  rope_plan plan_;
  index_t max_positions_ = 0;
  detail::aligned_vector<C> cos_;  // 64-byte aligned rows (a row of 64 floats is then whole cache lines)
  detail::aligned_vector<C> sin_;
};


/// A non-owning view of an engine's own cos/sin table, accepted wherever a rope_cache is: pair i (< R/2) of
/// position p (< max_positions) is cos[p * row_stride + i * pair_stride] (sin likewise), of float, double or a
/// 16-bit storage type; any magnitude is already in the values. The factories name the layouts engines keep.
/// The table must outlive the call; it is checked at each call (nothing is checked on construction). A row
/// whose type or layout is not the arithmetic's contiguous one is converted once per token (not per head).
///
/// **Example**
/// ```
/// // vLLM: cos_sin_cache [max_position, rot_dim], each row cos(0..R/2-1) then sin(0..R/2-1)
/// const posenc::rope_geometry g{128, 128, 0, posenc::rope_style::half_split};
/// auto table = posenc::rope_table_view<float>::cos_sin_cache(cos_sin_cache, max_position, g);
/// posenc::apply_rope_qk(table, q, k, posenc::positions::per_token(pos, N, L));
/// ```
template <class C>
class rope_table_view {
 public:
  rope_table_view() = default;
  /// Any layout: pair i of position p at cos[p * row_stride + i * pair_stride] (sin likewise), strides in
  /// elements. Nothing is checked until a call uses it.
  rope_table_view(const C* cos, const C* sin, index_t max_positions, index_t row_stride, index_t pair_stride,
                  const rope_geometry& g) noexcept
      : cos_(cos), sin_(sin), max_positions_(max_positions), row_stride_(row_stride), pair_stride_(pair_stride), geom_(g) {}

  /// Separate [max_positions, row_stride] cos and sin arrays, pair i at column i (row_stride R/2 when 0).
  /// Hugging Face's cos/sin caches of width R (the halves repeated) are this with row_stride R.
  static rope_table_view separate(const C* cos, const C* sin, index_t max_positions, const rope_geometry& g,
                                  index_t row_stride = 0) noexcept {
    return {cos, sin, max_positions, row_stride ? row_stride : g.pairs(), 1, g};
  }
  /// vLLM's cos_sin_cache [max_positions, R]: row p is the cos of the R/2 pairs, then their sin.
  static rope_table_view cos_sin_cache(const C* table, index_t max_positions, const rope_geometry& g) noexcept {
    return {table, table + g.pairs(), max_positions, g.rotated_dim(), 1, g};
  }
  /// Interleaved (cos, sin) pairs [max_positions, R/2, 2].
  static rope_table_view interleaved_pairs(const C* table, index_t max_positions, const rope_geometry& g) noexcept {
    return {table, table + 1, max_positions, g.rotated_dim(), 2, g};
  }

  /// cos of pair 0 of position 0.
  const C* cos_data() const noexcept { return cos_; }
  /// sin of pair 0 of position 0.
  const C* sin_data() const noexcept { return sin_; }
  /// Positions 0 .. max_positions-1 are in the table (a larger one is rejected).
  index_t max_positions() const noexcept { return max_positions_; }
  /// Elements from a position to the next, in cos (and in sin).
  index_t row_stride() const noexcept { return row_stride_; }
  /// Elements from a pair to the next within a row.
  index_t pair_stride() const noexcept { return pair_stride_; }
  /// Where the rotated window sits and how it pairs features.
  const rope_geometry& geometry() const noexcept { return geom_; }

 private:
  const C* cos_ = nullptr;
  const C* sin_ = nullptr;
  index_t max_positions_ = 0;
  index_t row_stride_ = 0;
  index_t pair_stride_ = 1;
  rope_geometry geom_;
};


namespace detail {

template <class F>
struct is_rope_freq : std::false_type {};
template <>
struct is_rope_freq<rope_plan> : std::true_type {};
template <class C>
struct is_rope_freq<rope_cache<C>> : std::true_type {};
template <class C>
struct is_rope_freq<rope_table_view<C>> : std::true_type {};
template <class F>
inline constexpr bool is_rope_freq_v = is_rope_freq<std::remove_cv_t<std::remove_reference_t<F>>>::value;

template <class C>
rope_geometry geom_of(const rope_cache<C>& c) {
  return geom_of(c.plan());
}
template <class C>
rope_geometry geom_of(const rope_table_view<C>& t) {
  return t.geometry();
}

/// A cache is valid by construction; a table view is checked at each call, here (a plan: rope_checks.hpp).
template <class C>
status check_source(const char*, const rope_cache<C>&) {
  return {};
}
template <class C>
status check_source(const char* fn, const rope_table_view<C>& t) {
  static_assert(is_storage_v<C>, "posenc::rope_table_view: float, double or a 16-bit storage type");
  const rope_geometry& g = t.geometry();
  const index_t r = g.rotated_dim();
  POSENC_TRY(check_window(fn, g.head_dim, r, g.rotary_offset, "table geometry "));
  if (t.max_positions() < 0) return fail(fn, "table max_positions=", t.max_positions(), " must be >= 0");
  if (t.row_stride() < 0 || t.pair_stride() < 0)
    return fail(fn, "table strides (row ", t.row_stride(), ", pair ", t.pair_stride(), ") must be >= 0");
  if (t.max_positions() > 0 && (t.cos_data() == nullptr || t.sin_data() == nullptr)) return fail(fn, "table cos or sin is null");
  return {};
}

template <class F>
index_t max_positions_of(const F& f) {
  if constexpr (std::is_same_v<F, rope_plan>) {
    static_cast<void>(f);
    return std::numeric_limits<index_t>::max();
  } else {
    return f.max_positions();
  }
}

/// The largest position of a call (-1 for none) inside the source: a cache's or a table's rows; a plan has no
/// bound. Every rotating entry's last position rule.
template <class F>
POSENC_ALWAYS_INLINE status check_max_position(const char* fn, const F& freq, index_t max_pos) {
  if (max_pos >= max_positions_of(freq))
    return fail(fn, "position ", max_pos, " is past the cache of ", max_positions_of(freq), " positions");
  return {};
}


template <std::size_t K>
constexpr std::array<int, K> variants_of(int v) {
  std::array<int, K> a{};
  for (auto& x : a) x = v;
  return a;
}

/// Runs the rotation of `src` on the targets through the dispatcher (every variant 0).
template <class Source, class Pos, class In, class Out, std::size_t K>
void run_rotation(const Source& src, const Pos& pos, const rope_geometry& g, double sign,
                  const std::array<rope_io<In, Out>, K>& targets) {
  const std::array<int, K> variant = variants_of<K>(0);
  run_rope_rows(src, pos, g.style, g.rotary_offset, g.pairs(), sign, targets, variant);
}

/// The kernels' cos/sin source of a plan (angles formed per call), a rope_cache or an engine's table.
inline angle_src source_of(const rope_plan& plan) {
  return {plan.inv_freq().data(), plan.magnitude(), max_abs(plan.inv_freq())};
}
template <class C>
table_src<C> source_of(const rope_cache<C>& cache) {
  return {cache.cos_data(), cache.sin_data(), cache.plan().pairs(), 1, cache.max_positions()};
}
template <class C>
table_src<C> source_of(const rope_table_view<C>& t) {
  return {t.cos_data(), t.sin_data(), t.row_stride(), t.pair_stride(), t.max_positions()};
}

template <class F, class In, class Out, std::size_t K>
void run_rope(const F& freq, const positions& pos, double sign, const std::array<rope_io<In, Out>, K>& targets) {
  run_rotation(source_of(freq), pos, geom_of(freq), sign, targets);
}

/// Every RoPE entry: all checks first (nothing is written on an error), then the kernels.
template <class F, class In, class Out, std::size_t K>
status rope_entry(const char* fn, const F& freq, const positions& pos, double sign,
                  const std::array<rope_io<In, Out>, K>& targets, const std::array<const char*, 2 * K>& names) {
  POSENC_TRY(check_source(fn, freq));
  index_t max_pos = -1;
  POSENC_TRY(check_rope_call(fn, geom_of(freq), pos, targets, names, max_pos));
  POSENC_TRY(check_max_position(fn, freq, max_pos));
  if (max_pos < 0) return {};
  run_rope(freq, pos, sign, targets);
  return {};
}

/// The (N, L, H, D) views of an input and an output, each of its own storage type.
template <class In, class Out>
auto make_target(In&& in, Out&& out) {
  const auto& vo = nlhd_default(std::forward<Out>(out));
  const auto& vi = nlhd_default(std::forward<In>(in));
  using O = typename std::decay_t<decltype(vo)>::element_type;
  using I = std::remove_const_t<typename std::decay_t<decltype(vi)>::element_type>;
  static_assert(!std::is_const_v<O>, "posenc: the output tensor must be writable");
  static_assert(simd::is_storage_v<I> && simd::is_storage_v<O>,
                "posenc: tensors of float, double or a 16-bit storage type (posenc/storage.hpp)");
  // Canonical storage types from the start (Eigen::half -> f16_storage, ...): the kernels' entries then take
  // the views by reference; converting them there copied each (a tenth of a one-token call).
  return canonical_io(vi, vo);
}

/// An entry's targets built in place, each straight from its views: the array is a prvalue of prvalues, so no
/// rope_io is copied (copying a returned one read its fresh stores back at other offsets, a store-forwarding
/// stall that cost ~4% of a one-token call). One target (in, out), or q and k each in place.
template <class In, class Out>
auto targets_of(In&& in, Out&& out) {
  return std::array<decltype(make_target(in, out)), 1>{make_target(in, out)};
}
template <class Q, class K>
auto qk_targets_of(Q&& q, K&& k) {
  using T = decltype(make_target(q, q));
  static_assert(std::is_same_v<T, decltype(make_target(k, k))>, "posenc: q and k have one element type");
  return std::array<T, 2>{make_target(q, q), make_target(k, k)};
}

}  // namespace detail

// Every function below has a try_ form: noexcept, returning a status with the message the throwing form's
// argument_error carries (posenc/status.hpp); nothing is written when it is not ok.

/// Rotates `x` in place: pair i of the rotated window turns by p * w_i, scaled by the plan's magnitude
/// (RoFormer, Su et al. 2021, eq. 34; HF `apply_rotary_pos_emb` for half_split, GPT-J for interleaved).
/// `freq` is a rope_plan (angles formed in double per call, any position), a rope_cache (table lookup) or a
/// rope_table_view (an engine's own table). `x`: strided_view<T, 4> or a tensor with a view_adapter (Eigen,
/// posenc/eigen.hpp) of rank 4 in (N, L, H, D), or rank 2 in (L, D); other layouts through as_nlhd(x, layout).
/// T: float, double or a 16-bit storage type (posenc/storage.hpp).
/// Fails with invalid_argument, writing nothing, if D != the head_dim, a position is negative or past the
/// table, or the positions do not match (N, L).
///
/// **Example**
/// ```
/// posenc::strided_view<float, 4> q(q_ptr, {1, 16, 32, 128});
/// posenc::apply_rope(plan, q, posenc::positions::offset(0));
/// ```
template <class F, class X, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
status try_apply_rope(const F& freq, X&& x, const positions& pos) noexcept {
  return detail::rope_entry("apply_rope", freq, pos, 1.0, detail::targets_of(x, x), {"x", "x"});
}
template <class F, class X, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
void apply_rope(const F& freq, X&& x, const positions& pos) {
  detail::throw_if_error(try_apply_rope<F, X&, void>(freq, x, pos));
}

/// Out of place: `out` = RoPE(`in`); features outside the rotated window are copied. `out` must not overlap
/// `in` (pass the same tensor twice for in place). `out` may hold another storage type than `in` (float q/k
/// rotated straight into a half or bfloat16 KV cache): the arithmetic is float (double if either is double)
/// and each result is rounded to `out`'s type once.
template <class F, class X, class Y, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
status try_apply_rope(const F& freq, X&& in, Y&& out, const positions& pos) noexcept {
  return detail::rope_entry("apply_rope", freq, pos, 1.0, detail::targets_of(in, out), {"in", "out"});
}
template <class F, class X, class Y, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
void apply_rope(const F& freq, X&& in, Y&& out, const positions& pos) {
  detail::throw_if_error(try_apply_rope<F, X&, Y&, void>(freq, in, out, pos));
}

/// q and k in one pass, in place: cos/sin are formed once per token and used for all heads of both (k may
/// have fewer heads than q, GQA; both are often views into one fused QKV buffer). Same N, L and head dim.
/// Precondition: q and k share no element. Passing one tensor twice is rejected; views that overlap from
/// different starts cannot be told from interleaved fused-QKV views cheaply and are not detected.
template <class F, class Q, class K, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
status try_apply_rope_qk(const F& freq, Q&& q, K&& k, const positions& pos) noexcept {
  return detail::rope_entry("apply_rope_qk", freq, pos, 1.0, detail::qk_targets_of(q, k), {"q", "q", "k", "k"});
}
template <class F, class Q, class K, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
void apply_rope_qk(const F& freq, Q&& q, K&& k, const positions& pos) {
  detail::throw_if_error(try_apply_rope_qk<F, Q&, K&, void>(freq, q, k, pos));
}

/// Backward pass (the transpose of apply_rope): rotation by -p*w_i with the same magnitude, in place on the
/// gradient. It inverts apply_rope exactly where the magnitude is 1.
template <class F, class X, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
status try_apply_rope_backward(const F& freq, X&& grad, const positions& pos) noexcept {
  return detail::rope_entry("apply_rope_backward", freq, pos, -1.0, detail::targets_of(grad, grad), {"grad", "grad"});
}
template <class F, class X, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
void apply_rope_backward(const F& freq, X&& grad, const positions& pos) {
  detail::throw_if_error(try_apply_rope_backward<F, X&, void>(freq, grad, pos));
}

/// Backward pass out of place: grad_in = m * R(theta)^T grad_out = m * R(-theta) grad_out, where R(theta) is the
/// forward rotation (theta = p * w_i per pair) and m the magnitude; features outside the rotated window are
/// copied. `grad_in` must not overlap `grad_out`.
template <class F, class X, class Y, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
status try_apply_rope_backward(const F& freq, X&& grad_out, Y&& grad_in, const positions& pos) noexcept {
  return detail::rope_entry("apply_rope_backward", freq, pos, -1.0, detail::targets_of(grad_out, grad_in), {"grad_out", "grad_in"});
}
template <class F, class X, class Y, class = std::enable_if_t<detail::is_rope_freq_v<F>>>
void apply_rope_backward(const F& freq, X&& grad_out, Y&& grad_in, const positions& pos) {
  detail::throw_if_error(try_apply_rope_backward<F, X&, Y&, void>(freq, grad_out, grad_in, pos));
}

POSENC_END_NAMESPACE
