// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// Multimodal RoPE: each token has a position on three axes (temporal, height, width) and each rotated pair
// takes its position from one axis. Qwen2-VL assigns axes by contiguous sections of pairs, Qwen3-VL
// interleaves them, and Qwen2-VL's vision encoder uses a 2D RoPE whose frequency index restarts per section.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/mrope_plan.hpp"
#include "posenc/detail/check.hpp"
#include "posenc/detail/kernels/entries.hpp"
#include "posenc/detail/kernels/params.hpp"
#include "posenc/detail/math/inv_freq.hpp"
#include "posenc/detail/simd/base.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/rope.hpp"
#include "posenc/rope_plan.hpp"
#include "posenc/status.hpp"
#include "posenc/tensor_view.hpp"

POSENC_BEGIN_NAMESPACE

namespace detail {

/// Every MRoPE entry: all checks first (nothing is written on an error), then the kernels.
template <class In, class Out, std::size_t K>
status mrope_entry(const char* fn, const mrope_plan& mp, const mrope_positions& pos, double sign,
                   const std::array<rope_io<In, Out>, K>& targets, const std::array<const char*, 2 * K>& names) {
  const rope_plan& plan = mp.plan();
  POSENC_TRY(check_source(fn, plan));
  index_t max_pos = -1;
  POSENC_TRY(check_rope_call(fn, geom_of(plan), positions::offset(0), targets, names, max_pos));
  POSENC_TRY(validate_mrope_positions(fn, pos, targets[0].in.extent(0), targets[0].in.extent(1)));
  if (targets[0].in.extent(0) == 0 || targets[0].in.extent(1) == 0) return {};
  const mrope_src src{plan.inv_freq().data(), mp.axis().data(), plan.magnitude(), max_abs(plan.inv_freq())};
  run_rotation(src, pos, geom_of(plan), sign, targets);
  return {};
}

}  // namespace detail

// Every function below has a try_ form: noexcept, returning a status with the message the throwing form's
// argument_error carries (posenc/status.hpp); nothing is written when it is not ok, nothing is allocated when
// it is.

/// Multimodal RoPE in place: pair i rotates by p[axis(i)] * w_i (HF Qwen2-VL apply_multimodal_rotary_pos_emb,
/// Qwen3-VL apply_interleaved_mrope; Qwen2-VL vision with make_sectioned_rope_plan). `x` as for apply_rope.
/// Fails with invalid_argument, writing nothing, on an empty plan, a head-dim mismatch or bad positions
/// (apply_mrope throws argument_error).
///
/// **Example**
/// ```
/// posenc::rope_config cfg; cfg.head_dim = 128; cfg.base = 1000000.0;          // Qwen2-VL-7B
/// posenc::mrope_plan mp(posenc::make_rope_plan(cfg), {16, 24, 24}, posenc::mrope_layout::chunked);
/// posenc::apply_mrope(mp, q, posenc::mrope_positions::shared(thw.data(), L));  // thw: (3, L)
/// ```
template <class X>
status try_apply_mrope(const mrope_plan& plan, X&& x, const mrope_positions& pos) noexcept {
  return detail::mrope_entry("apply_mrope", plan, pos, 1.0, detail::targets_of(x, x), {"x", "x"});
}
template <class X>
void apply_mrope(const mrope_plan& plan, X&& x, const mrope_positions& pos) {
  detail::throw_if_error(try_apply_mrope<X&>(plan, x, pos));
}

/// Out of place (`out` must not overlap `in`); `out` may hold another storage type than `in`, rounded once
/// (as apply_rope's out-of-place form).
template <class X, class Y>
status try_apply_mrope(const mrope_plan& plan, X&& in, Y&& out, const mrope_positions& pos) noexcept {
  return detail::mrope_entry("apply_mrope", plan, pos, 1.0, detail::targets_of(in, out),
                                       {"in", "out"});
}
template <class X, class Y>
void apply_mrope(const mrope_plan& plan, X&& in, Y&& out, const mrope_positions& pos) {
  detail::throw_if_error(try_apply_mrope<X&, Y&>(plan, in, out, pos));
}

/// q and k in one pass, in place (same N, L; k may have fewer heads).
template <class Q, class K>
status try_apply_mrope_qk(const mrope_plan& plan, Q&& q, K&& k, const mrope_positions& pos) noexcept {
  return detail::mrope_entry("apply_mrope_qk", plan, pos, 1.0, detail::qk_targets_of(q, k),
                                       {"q", "q", "k", "k"});
}
template <class Q, class K>
void apply_mrope_qk(const mrope_plan& plan, Q&& q, K&& k, const mrope_positions& pos) {
  detail::throw_if_error(try_apply_mrope_qk<Q&, K&>(plan, q, k, pos));
}

/// Backward pass (transpose): rotation by -p[axis(i)] * w_i, in place on the gradient.
template <class X>
status try_apply_mrope_backward(const mrope_plan& plan, X&& grad, const mrope_positions& pos) noexcept {
  return detail::mrope_entry("apply_mrope_backward", plan, pos, -1.0, detail::targets_of(grad, grad),
                                       {"grad", "grad"});
}
template <class X>
void apply_mrope_backward(const mrope_plan& plan, X&& grad, const mrope_positions& pos) {
  detail::throw_if_error(try_apply_mrope_backward<X&>(plan, grad, pos));
}

POSENC_END_NAMESPACE
