// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// xPos (Sun et al. 2022, "A Length-Extrapolatable Transformer"; reference: torchscale
// xpos_relative_position.py): RoPE whose pair i is also scaled by zeta_i^((p - C)/scale_base) for queries and
// by its reciprocal for keys, so q.k decays with the distance m - n.
#pragma once

#include <array>
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/xpos_plan.hpp"
#include "posenc/detail/check.hpp"
#include "posenc/detail/kernels/entries.hpp"
#include "posenc/detail/kernels/params.hpp"
#include "posenc/detail/math/inv_freq.hpp"
#include "posenc/detail/math/xpos_scale.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/positions.hpp"
#include "posenc/rope.hpp"
#include "posenc/rope_plan.hpp"
#include "posenc/status.hpp"
#include "posenc/tensor_view.hpp"

POSENC_BEGIN_NAMESPACE

namespace detail {

/// Every xPos entry: all checks first (nothing is written on an error), then the kernels.
template <class In, class Out, std::size_t K>
status xpos_entry(const char* fn, const xpos_plan& plan, const positions& pos, index_t center,
                  const std::array<xpos_mode, K>& modes, double direction, const std::array<rope_io<In, Out>, K>& targets,
                  const std::array<const char*, 2 * K>& names) {
  if (plan.empty()) return fail(fn, "plan is empty");
  if (center < 0) return fail(fn, "center=", center, " must be >= 0");
  POSENC_TRY(check_targets(fn, plan.head_dim(), targets, names));
  index_t max_pos = -1;
  POSENC_TRY(validate_positions(fn, pos, targets[0].in.extent(0), targets[0].in.extent(1), max_pos));
  if (max_pos < 0) return {};
  xpos_src src{plan.inv_freq().data(), plan.log_zeta().data(), center, plan.config().scale_base,
               max_abs(plan.inv_freq()), {false, false}};
  std::array<int, K> variant{};
  for (std::size_t k = 0; k < K; ++k) {
    variant[k] = modes[k] == xpos_mode::upscale ? 0 : 1;
    src.need[static_cast<std::size_t>(variant[k])] = true;
  }
  // Double arithmetic (rope_acc_t): the scale may leave float's range where the scaled value does not.
  run_rope_rows(src, pos, plan.config().style, 0, plan.pairs(), direction, targets, variant);
  return {};
}

}  // namespace detail

// Every function below has a try_ form: noexcept, returning a status with the message the throwing form's
// argument_error carries (posenc/status.hpp); nothing is written when it is not ok, nothing is allocated when
// it is.

/// xPos in place: pair i turns by p*w_i and is multiplied by zeta_i^((p - C)/scale_base) (upscale, queries)
/// or its reciprocal (downscale, keys). torchscale `XPOS.forward(x, offset, downscale)` is
/// `apply_xpos(plan, as_nlhd(x, layout::nld), positions::offset(offset), xpos_default_center(L, offset), mode)`.
/// Fails with invalid_argument, writing nothing, on an empty plan, a head-dim mismatch, a negative position or
/// centre (apply_xpos throws argument_error).
///
/// **Example**
/// ```
/// posenc::xpos_config cfg; cfg.head_dim = 64;
/// const posenc::xpos_plan plan(cfg);
/// const auto pos = posenc::positions::offset(past);
/// posenc::apply_xpos(plan, q, pos, center, posenc::xpos_mode::upscale);
/// if (posenc::status s = posenc::try_apply_xpos(plan, k, pos, center, posenc::xpos_mode::downscale); !s) log_error(s.message());
/// ```
template <class X>
status try_apply_xpos(const xpos_plan& plan, X&& x, const positions& pos, index_t center, xpos_mode mode) noexcept {
  return detail::xpos_entry("apply_xpos", plan, pos, center, std::array<xpos_mode, 1>{mode}, 1.0,
                                      detail::targets_of(x, x), {"x", "x"});
}
template <class X>
void apply_xpos(const xpos_plan& plan, X&& x, const positions& pos, index_t center, xpos_mode mode) {
  detail::throw_if_error(try_apply_xpos<X&>(plan, x, pos, center, mode));
}

/// xPos out of place (`out` must not overlap `in`). `out` may hold another storage type than `in` (float q/k
/// straight into a half, bfloat16 or float KV cache): the arithmetic is double (the scale may leave float's
/// range where the scaled value does not) and each result is rounded to `out`'s type once.
template <class X, class Y>
status try_apply_xpos(const xpos_plan& plan, X&& in, Y&& out, const positions& pos, index_t center,
                      xpos_mode mode) noexcept {
  return detail::xpos_entry("apply_xpos", plan, pos, center, std::array<xpos_mode, 1>{mode}, 1.0,
                                      detail::targets_of(in, out), {"in", "out"});
}
template <class X, class Y>
void apply_xpos(const xpos_plan& plan, X&& in, Y&& out, const positions& pos, index_t center, xpos_mode mode) {
  detail::throw_if_error(try_apply_xpos<X&, Y&>(plan, in, out, pos, center, mode));
}

/// Queries upscaled and keys downscaled in one call, in place, around one centre: <q_m, k_n> then depends
/// on m - n only (the centre cancels).
template <class Q, class K>
status try_apply_xpos_qk(const xpos_plan& plan, Q&& q, K&& k, const positions& pos, index_t center) noexcept {
  return detail::xpos_entry("apply_xpos_qk", plan, pos, center,
                                      std::array<xpos_mode, 2>{xpos_mode::upscale, xpos_mode::downscale}, 1.0,
                                      detail::qk_targets_of(q, k), {"q", "q", "k", "k"});
}
template <class Q, class K>
void apply_xpos_qk(const xpos_plan& plan, Q&& q, K&& k, const positions& pos, index_t center) {
  detail::throw_if_error(try_apply_xpos_qk<Q&, K&>(plan, q, k, pos, center));
}

/// Backward pass (transpose): rotation by -p*w_i with the same per-pair scale as the forward `mode`.
template <class X>
status try_apply_xpos_backward(const xpos_plan& plan, X&& grad, const positions& pos, index_t center,
                               xpos_mode mode) noexcept {
  return detail::xpos_entry("apply_xpos_backward", plan, pos, center, std::array<xpos_mode, 1>{mode}, -1.0,
                                      detail::targets_of(grad, grad), {"grad", "grad"});
}
template <class X>
void apply_xpos_backward(const xpos_plan& plan, X&& grad, const positions& pos, index_t center, xpos_mode mode) {
  detail::throw_if_error(try_apply_xpos_backward<X&>(plan, grad, pos, center, mode));
}

POSENC_END_NAMESPACE
