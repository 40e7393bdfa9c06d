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
#include <type_traits>

#include "posenc/config.hpp"
#include "posenc/detail/check.hpp"
#include "posenc/detail/kernels/rope_kernel.hpp"
#include "posenc/detail/simd/vec.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/rope.hpp"
#include "posenc/rope_scaling.hpp"
#include "posenc/tensor_view.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail {

/// A signed position delta per token: one for all, or one per token (N, L).
struct delta_positions {
  index_t uniform = 0;
  const std::int64_t* per_token = nullptr;
  index_t length = 0;
  index_t at(index_t n, index_t l) const { return per_token ? per_token[n * length + l] : uniform; }
};

/// Rotation from plan `from` to plan `to` at the same position: angle p*w_to - p*w_from (both products in
/// double, each exact to p*w*2^-53), magnitude m_to/m_from.
struct rerotate_pair {
  const double* from;
  const double* to;
  double ratio;
  polar operator()(index_t p, index_t i) const { return {math::angle(p, to[i]) - math::angle(p, from[i]), ratio}; }
};

template <class Isa, class T, class Pos, class Source>
void run_rotation(const Source& src, const Pos& pos, const rope_plan& plan, const rope_target<T>& t) {
  using A = simd::acc_t<T>;
  rope_apply<Isa, A, A>(src, pos, plan.style(), plan.rotary_offset(), plan.pairs(), A(1),
                             std::array<rope_target<T>, 1>{t});
}

/// Index map of the rotated window: feature f of layout `to` comes from feature map(f) of layout `from`
/// (both relative to the window start). Half-split position j*R/2 + i holds interleaved feature 2i + j.
inline index_t layout_source_index(index_t f, index_t rotary_dim, rope_style from, rope_style to) {
  if (from == to) return f;
  const index_t half = rotary_dim / 2;
  if (to == rope_style::half_split) return f < half ? 2 * f : 2 * (f - half) + 1;  // from interleaved
  return (f % 2) * half + f / 2;                                                   // from half-split
}

inline void check_window(const char* fn, index_t head_dim, index_t rotary_dim, index_t rotary_offset) {
  if (head_dim <= 0) throw_invalid_argument(fn, "head_dim=", head_dim, " must be > 0");
  if (rotary_dim <= 0 || rotary_dim % 2 != 0) throw_invalid_argument(fn, "rotary_dim=", rotary_dim, " must be even and > 0");
  if (rotary_dim > head_dim) throw_invalid_argument(fn, "rotary_dim=", rotary_dim, " exceeds head_dim=", head_dim);
  if (rotary_offset < 0 || rotary_offset > head_dim - rotary_dim)
    throw_invalid_argument(fn, "rotary_offset=", rotary_offset, " with rotary_dim=", rotary_dim, " does not fit head_dim=", head_dim);
}

}  // namespace detail

/// Context shift (llama.cpp's K-shift): keys cached at position p become keys at p + delta, by one rotation of
/// delta * w_i per pair (rotations compose: R(p + delta) = R(delta) R(p)). The plan's magnitude is not applied
/// again (the cached keys already carry it). delta may be negative (tokens discarded before these keys).
/// `k`: (N, L, H, D) like apply_rope. Throws argument_error, writing nothing, on a head-dim mismatch.
///
/// **Example**
/// ```
/// // drop the first 256 cached tokens: the rest move 256 positions back
/// posenc::shift_rope(plan, k_cache_tail, -256);
/// ```
template <class X, class Isa = detail::best_isa>
void shift_rope(const rope_plan& plan, X&& k, index_t delta) {
  constexpr const char* fn = "shift_rope";
  const auto t = detail::make_target(k, k);
  detail::check_rope_call(fn, plan, positions::offset(0), std::array<std::decay_t<decltype(t)>, 1>{t}, {"k", "k"});
  if (t.in.empty()) return;
  const auto src = detail::make_angle_source(plan.inv_freq().data(), 1.0);
  detail::run_rotation<Isa>(src, detail::delta_positions{delta, nullptr, 0}, plan, t);
}

/// Context shift with a delta per cached token: `deltas` is (N, L) row-major, any sign (llama.cpp shifts
/// each KV cell by its own delta).
template <class X, class Isa = detail::best_isa>
void shift_rope(const rope_plan& plan, X&& k, const std::int64_t* deltas, index_t batch, index_t length) {
  constexpr const char* fn = "shift_rope";
  const auto t = detail::make_target(k, k);
  detail::check_rope_call(fn, plan, positions::offset(0), std::array<std::decay_t<decltype(t)>, 1>{t}, {"k", "k"});
  if (batch != t.in.extent(0) || length != t.in.extent(1))
    detail::throw_invalid_argument(fn, "deltas shape (", batch, ", ", length, ") does not match k (N, L)=(", t.in.extent(0),
                                   ", ", t.in.extent(1), ")");
  if (t.in.empty()) return;
  if (deltas == nullptr) detail::throw_invalid_argument(fn, "deltas is null");
  const auto src = detail::make_angle_source(plan.inv_freq().data(), 1.0);
  detail::run_rotation<Isa>(src, detail::delta_positions{0, deltas, length}, plan, t);
}

/// Re-rotates keys cached under plan `from` into plan `to` at the same positions, in one pass and in place:
/// angle p*(w_to - w_from), magnitude m_to/m_from. For LongRoPE's short -> long switch and dynamic NTK
/// growth, where vLLM and HF recompute keys instead. The plans must share head_dim, rotary dim, offset and
/// style. Throws argument_error, writing nothing, otherwise or on bad positions.
template <class X, class Isa = detail::best_isa>
void rerotate_rope(const rope_plan& from, const rope_plan& to, X&& k, const positions& pos) {
  constexpr const char* fn = "rerotate_rope";
  if (from.empty() || to.empty()) detail::throw_invalid_argument(fn, "a plan is empty");
  if (from.head_dim() != to.head_dim() || from.rotary_dim() != to.rotary_dim() ||
      from.rotary_offset() != to.rotary_offset() || from.style() != to.style())
    detail::throw_invalid_argument(fn, "plans differ in layout: from (head_dim=", from.head_dim(), ", rotary_dim=",
                                   from.rotary_dim(), ", rotary_offset=", from.rotary_offset(), ") to (head_dim=",
                                   to.head_dim(), ", rotary_dim=", to.rotary_dim(), ", rotary_offset=", to.rotary_offset(),
                                   ") or in style");
  const auto t = detail::make_target(k, k);
  const index_t max_pos = detail::check_rope_call(fn, to, pos, std::array<std::decay_t<decltype(t)>, 1>{t}, {"k", "k"});
  if (max_pos < 0) return;
  const detail::polar_source<detail::rerotate_pair> src{{from.inv_freq().data(), to.inv_freq().data(), to.magnitude() / from.magnitude()}};
  detail::run_rotation<Isa>(src, pos, to, t);
}

/// Converts (N, L, H, D) tensors between pair layouts, out of place: within the window [rotary_offset,
/// rotary_offset + rotary_dim) interleaved feature 2i + j sits at half-split feature j*R/2 + i; the rest is
/// copied. RoPE commutes with it: convert(apply_rope_interleaved(x)) == apply_rope_half_split(convert(x)).
/// Throws argument_error, writing nothing, on a bad window, a shape mismatch or overlapping in/out.
template <class X, class Y>
void convert_rope_layout(X&& in, Y&& out, index_t rotary_dim, index_t rotary_offset, rope_style from, rope_style to) {
  constexpr const char* fn = "convert_rope_layout";
  const auto t = detail::make_target(in, out);
  detail::check_view(fn, "in", t.in, false);
  detail::check_view(fn, "out", t.out, true);
  if (t.in.extents() != t.out.extents()) detail::throw_invalid_argument(fn, "out shape does not match in shape");
  detail::check_window(fn, t.in.extent(3), rotary_dim, rotary_offset);
  if (detail::spans_overlap(t.in, t.out)) detail::throw_invalid_argument(fn, "out overlaps in (conversion is out of place)");
  for (index_t n = 0; n < t.in.extent(0); ++n)
    for (index_t l = 0; l < t.in.extent(1); ++l)
      for (index_t h = 0; h < t.in.extent(2); ++h)
        for (index_t f = 0; f < t.in.extent(3); ++f) {
          const bool inside = f >= rotary_offset && f < rotary_offset + rotary_dim;
          const index_t src = inside ? rotary_offset + detail::layout_source_index(f - rotary_offset, rotary_dim, from, to) : f;
          t.out(n, l, h, f) = t.in(n, l, h, src);
        }
}

/// Permutes the rows of a q or k projection weight [num_heads * head_dim, in_features] (or a bias, with
/// in_features 1) between pair layouts, out of place, so that a model converted this way computes the same
/// attention scores with the other RoPE style. half_split -> interleaved is llama.cpp convert_hf_to_gguf's
/// `permute` of HF q_proj/k_proj; interleaved -> half_split is HF's convert_llama_weights_to_hf `permute`.
/// Throws argument_error, writing nothing, on a bad window, rows != num_heads*head_dim, shape mismatch or
/// overlapping in/out.
template <class W, class V>
void convert_rope_weight_layout(W&& in, V&& out, index_t num_heads, index_t head_dim, index_t rotary_dim,
                                index_t rotary_offset, rope_style from, rope_style to) {
  constexpr const char* fn = "convert_rope_weight_layout";
  auto vi = as_view(in);
  auto vo = as_view(out);
  static_assert(decltype(vi)::rank == 2 && decltype(vo)::rank == 2, "posenc::convert_rope_weight_layout: rank-2 weights");
  detail::check_view(fn, "in", vi, false);
  detail::check_view(fn, "out", vo, true);
  if (num_heads <= 0) detail::throw_invalid_argument(fn, "num_heads=", num_heads, " must be > 0");
  detail::check_window(fn, head_dim, rotary_dim, rotary_offset);
  if (vi.extent(0) != num_heads * head_dim)
    detail::throw_invalid_argument(fn, "in rows=", vi.extent(0), " != num_heads*head_dim=", num_heads * head_dim);
  if (vi.extents() != vo.extents()) detail::throw_invalid_argument(fn, "out shape does not match in shape");
  if (detail::spans_overlap(vi, vo)) detail::throw_invalid_argument(fn, "out overlaps in (conversion is out of place)");
  for (index_t h = 0; h < num_heads; ++h)
    for (index_t f = 0; f < head_dim; ++f) {
      const bool inside = f >= rotary_offset && f < rotary_offset + rotary_dim;
      const index_t src = inside ? rotary_offset + detail::layout_source_index(f - rotary_offset, rotary_dim, from, to) : f;
      for (index_t c = 0; c < vi.extent(1); ++c) vo(h * head_dim + f, c) = vi(h * head_dim + src, c);
    }
}

POSENC_END_NAMESPACE
