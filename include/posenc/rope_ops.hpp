// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// Operations on already-rotated tensors that engines need around a KV cache: shifting cached keys by a
// position delta (context shift), re-rotating them from one frequency plan to another (LongRoPE short ->
// long, dynamic NTK growth), and converting tensors and q/k projection weights between the interleaved and
// half-split pair layouts.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "posenc/config.hpp"
#include "posenc/detail/check.hpp"
#include "posenc/detail/kernels/entries.hpp"
#include "posenc/detail/kernels/params.hpp"
#include "posenc/detail/rope_checks.hpp"
#include "posenc/detail/simd/base.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/rope.hpp"
#include "posenc/rope_plan.hpp"
#include "posenc/status.hpp"
#include "posenc/tensor_view.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail {

/// Index map of the rotated window: feature f of layout `to` comes from feature map(f) of layout `from`
/// (both relative to the window start). Half-split position j*R/2 + i holds interleaved feature 2i + j.
inline index_t layout_source_index(index_t f, index_t rotary_dim, rope_style from, rope_style to) {
  if (from == to) return f;
  const index_t half = rotary_dim / 2;
  if (to == rope_style::half_split) return f < half ? 2 * f : 2 * (f - half) + 1;  // from interleaved
  return (f % 2) * half + f / 2;                                                   // from half-split
}

/// The checks of a rotation by a plan: non-empty plan, then check_rope_call; `max_pos` as there.
template <class In, class Out, std::size_t K>
status check_plan_call(const char* fn, const rope_plan& plan, const positions& pos,
                       const std::array<rope_io<In, Out>, K>& targets, const std::array<const char*, 2 * K>& names,
                       index_t& max_pos) {
  POSENC_TRY(check_source(fn, plan));
  return check_rope_call(fn, geom_of(plan), pos, targets, names, max_pos);
}

}  // namespace detail

// Every function below has a try_ form: noexcept, returning a status with the message the throwing form's
// argument_error carries (posenc/status.hpp); nothing is written when it is not ok, nothing is allocated when
// it is.

/// Context shift (llama.cpp's K-shift): keys cached at position p become keys at p + delta, by one rotation of
/// delta * w_i per pair (rotations compose: R(p + delta) = R(delta) R(p)). The plan's magnitude is not applied
/// again (the cached keys already carry it). delta may be negative (tokens discarded before these keys).
/// `k`: (N, L, H, D) like apply_rope. Fails with invalid_argument, writing nothing, on an empty plan or a
/// head-dim mismatch (shift_rope throws argument_error).
///
/// **Example**
/// ```
/// // drop the first 256 cached tokens: the rest move 256 positions back
/// if (posenc::status s = posenc::try_shift_rope(plan, k_cache_tail, -256); !s) log_error(s.message());
/// posenc::shift_rope(plan, k_cache_tail, -256);  // the same, throwing
/// ```
template <class X>
status try_shift_rope(const rope_plan& plan, X&& k, index_t delta) noexcept {
  constexpr const char* fn = "shift_rope";
  const auto targets = detail::targets_of(k, k);
  const auto& t = targets[0];
  index_t max_pos = -1;
  POSENC_TRY(detail::check_plan_call(fn, plan, positions::offset(0), targets, {"k", "k"}, max_pos));
  if (t.in.empty()) return {};
  const detail::angle_src src{plan.inv_freq().data(), 1.0, detail::max_abs(plan.inv_freq())};
  detail::run_rotation(src, detail::delta_positions{delta, nullptr, 0}, detail::geom_of(plan), 1.0, targets);
  return {};
}
template <class X>
void shift_rope(const rope_plan& plan, X&& k, index_t delta) {
  detail::throw_if_error(try_shift_rope<X&>(plan, k, delta));
}

/// Context shift with a delta per cached token: token (n, l) moves by deltas[n * row_stride + l], any sign
/// (llama.cpp shifts each KV cell by its own delta); row_stride defaults to L. A thread doing tokens
/// [l0, l0 + count) of a larger batch passes deltas + l0 with the full row stride, no copy.
/// Fails with invalid_argument, writing nothing, on an empty plan, a head-dim mismatch, (batch, length) !=
/// (N, L), a row stride below L or null deltas (shift_rope throws argument_error).
template <class X>
status try_shift_rope(const rope_plan& plan, X&& k, const std::int64_t* deltas, index_t batch, index_t length,
                      index_t row_stride = -1) noexcept {
  constexpr const char* fn = "shift_rope";
  const auto targets = detail::targets_of(k, k);
  const auto& t = targets[0];
  index_t max_pos = -1;
  POSENC_TRY(detail::check_plan_call(fn, plan, positions::offset(0), targets, {"k", "k"}, max_pos));
  POSENC_TRY(detail::check_shift_deltas(fn, deltas, batch, length, row_stride, t.in.extent(0), t.in.extent(1)));
  if (t.in.empty()) return {};
  const detail::angle_src src{plan.inv_freq().data(), 1.0, detail::max_abs(plan.inv_freq())};
  detail::run_rotation(src, detail::delta_positions{0, deltas, row_stride < 0 ? length : row_stride},
                                 detail::geom_of(plan), 1.0, targets);
  return {};
}
template <class X>
void shift_rope(const rope_plan& plan, X&& k, const std::int64_t* deltas, index_t batch, index_t length,
                index_t row_stride = -1) {
  detail::throw_if_error(try_shift_rope<X&>(plan, k, deltas, batch, length, row_stride));
}

/// Re-rotates keys cached under plan `from` into plan `to` at the same positions, in one pass and in place:
/// angle p*(w_to - w_from), magnitude m_to/m_from. For LongRoPE's short -> long switch and dynamic NTK
/// growth, where vLLM and HF recompute keys instead. The plans must share head_dim, rotary dim, offset and
/// style. Fails with invalid_argument, writing nothing, otherwise or on bad positions (rerotate_rope throws
/// argument_error).
template <class X>
status try_rerotate_rope(const rope_plan& from, const rope_plan& to, X&& k, const positions& pos) noexcept {
  constexpr const char* fn = "rerotate_rope";
  POSENC_TRY(detail::check_rerotate_plans(fn, from, to));
  const auto targets = detail::targets_of(k, k);
  index_t max_pos = -1;
  POSENC_TRY(detail::check_rope_call(fn, detail::geom_of(to), pos, targets, {"k", "k"}, max_pos));
  if (max_pos < 0) return {};
  const detail::rerotate_src src{from.inv_freq().data(), to.inv_freq().data(), to.magnitude() / from.magnitude(),
                                 detail::max_abs(from.inv_freq()) + detail::max_abs(to.inv_freq())};
  detail::run_rotation(src, pos, detail::geom_of(to), 1.0, targets);
  return {};
}
template <class X>
void rerotate_rope(const rope_plan& from, const rope_plan& to, X&& k, const positions& pos) {
  detail::throw_if_error(try_rerotate_rope<X&>(from, to, k, pos));
}

/// Converts (N, L, H, D) tensors between pair layouts, out of place: within the window [rotary_offset,
/// rotary_offset + rotary_dim) interleaved feature 2i + j sits at half-split feature j*R/2 + i; the rest is
/// copied. RoPE commutes with it: convert(apply_rope_interleaved(x)) == apply_rope_half_split(convert(x)).
/// Fails with invalid_argument, writing nothing, on a bad window, a shape mismatch or overlapping in/out
/// (convert_rope_layout throws argument_error). A call that moves more than 32 MiB (in and out) writes its
/// vector-aligned rows of 4- and 8-byte elements with streaming (non-temporal) stores on x86: the output goes
/// to memory without being read first, and is not left in the caches; the bits are the same.
template <class X, class Y>
status try_convert_rope_layout(X&& in, Y&& out, index_t rotary_dim, index_t rotary_offset, rope_style from,
                               rope_style to) noexcept {
  constexpr const char* fn = "convert_rope_layout";
  const auto t = detail::make_target(in, out);
  static_assert(std::is_same_v<typename decltype(t.in)::element_type, const typename decltype(t.out)::element_type>,
                "posenc::convert_rope_layout: in and out have one element type (the conversion moves bits)");
  POSENC_TRY(detail::check_view(fn, "in", t.in, false));
  POSENC_TRY(detail::check_view(fn, "out", t.out, true));
  if (t.in.extents() != t.out.extents()) return detail::fail(fn, "out shape does not match in shape");
  POSENC_TRY(detail::check_window(fn, t.in.extent(3), rotary_dim, rotary_offset));
  if (detail::spans_overlap(t.in, t.out)) return detail::fail(fn, "out overlaps in (conversion is out of place)");
  if (t.in.empty()) return {};
  detail::run_convert_layout(t.in, t.out, rotary_dim, rotary_offset, from, to);
  return {};
}
template <class X, class Y>
void convert_rope_layout(X&& in, Y&& out, index_t rotary_dim, index_t rotary_offset, rope_style from, rope_style to) {
  detail::throw_if_error(try_convert_rope_layout<X&, Y&>(in, out, rotary_dim, rotary_offset, from, to));
}

/// Permutes the rows of a q or k projection weight [num_heads * head_dim, in_features] (or a bias, with
/// in_features 1) between pair layouts, out of place, so that a model converted this way computes the same
/// attention scores with the other RoPE style. half_split -> interleaved is llama.cpp convert_hf_to_gguf's
/// `permute` of HF q_proj/k_proj; interleaved -> half_split is HF's convert_llama_weights_to_hf `permute`.
/// Fails with invalid_argument, writing nothing, on a bad window, rows != num_heads*head_dim, shape mismatch
/// or overlapping in/out (convert_rope_weight_layout throws argument_error).
template <class W, class V>
status try_convert_rope_weight_layout(W&& in, V&& out, index_t num_heads, index_t head_dim, index_t rotary_dim,
                                      index_t rotary_offset, rope_style from, rope_style to) noexcept {
  constexpr const char* fn = "convert_rope_weight_layout";
  auto vi = as_view(in);
  auto vo = as_view(out);
  static_assert(decltype(vi)::rank == 2 && decltype(vo)::rank == 2, "posenc::convert_rope_weight_layout: rank-2 weights");
  using T = std::remove_const_t<typename decltype(vi)::element_type>;
  static_assert(std::is_same_v<T, typename decltype(vo)::element_type>,
                "posenc::convert_rope_weight_layout: in and out have one element type (the permutation moves bits)");
  POSENC_TRY(detail::check_view(fn, "in", vi, false));
  POSENC_TRY(detail::check_view(fn, "out", vo, true));
  if (num_heads <= 0) return detail::fail(fn, "num_heads=", num_heads, " must be > 0");
  POSENC_TRY(detail::check_window(fn, head_dim, rotary_dim, rotary_offset));
  if (vi.extent(0) != num_heads * head_dim)
    return detail::fail(fn, "in rows=", vi.extent(0), " != num_heads*head_dim=", num_heads * head_dim);
  if (vi.extents() != vo.extents()) return detail::fail(fn, "out shape does not match in shape");
  if (detail::spans_overlap(vi, vo)) return detail::fail(fn, "out overlaps in (conversion is out of place)");
  if (vi.empty()) return {};
  const index_t cols = vi.extent(1);
  // A permutation of whole rows: each is one memcpy when rows are contiguous.
  for (index_t h = 0; h < num_heads; ++h)
    for (index_t f = 0; f < head_dim; ++f) {
      const bool inside = f >= rotary_offset && f < rotary_offset + rotary_dim;
      const index_t src = inside ? rotary_offset + detail::layout_source_index(f - rotary_offset, rotary_dim, from, to) : f;
      const T* x = &vi(h * head_dim + src, 0);
      T* y = &vo(h * head_dim + f, 0);
      if (vi.stride(1) == 1 && vo.stride(1) == 1) {
        if (cols > 0) std::memcpy(static_cast<void*>(y), static_cast<const void*>(x), static_cast<std::size_t>(cols) * sizeof(T));
      } else {
        for (index_t c = 0; c < cols; ++c) y[c * vo.stride(1)] = x[c * vi.stride(1)];
      }
    }
  return {};
}
template <class W, class V>
void convert_rope_weight_layout(W&& in, V&& out, index_t num_heads, index_t head_dim, index_t rotary_dim,
                                index_t rotary_offset, rope_style from, rope_style to) {
  detail::throw_if_error(
      try_convert_rope_weight_layout<W&, V&>(in, out, num_heads, head_dim, rotary_dim, rotary_offset, from, to));
}

POSENC_END_NAMESPACE
