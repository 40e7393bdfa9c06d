// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// The argument checks of a rotation (RoPE, MRoPE, xPos, the fused cache append), apart from the kernels, so the
// CPU entries (rope.hpp) and the CUDA launchers (posenc/cuda/) reject the same inputs with the same messages.
#pragma once

#include <array>
#include <cstddef>
#include <limits>

#include "posenc/config.hpp"
#include "posenc/detail/check.hpp"
#include "posenc/detail/kernels/params.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/positions.hpp"
#include "posenc/rope_plan.hpp"
#include "posenc/status.hpp"
#include "posenc/tensor_view.hpp"
#include "posenc/types.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail {

/// What the checks and the driver need of a cos/sin source: the head it fits and the window it rotates.
inline rope_geometry geom_of(const rope_plan& p) { return p.geometry(); }


/// The cos/sin source of a call: a plan must not be empty (caches and table views: rope.hpp).
inline status check_source(const char* fn, const rope_plan& p) {
  if (p.empty()) return fail(fn, "plan is empty");
  return {};
}

/// The plans of a re-rotation (rerotate_rope) must rotate the same window in the same style.
inline status check_rerotate_plans(const char* fn, const rope_plan& from, const rope_plan& to) {
  if (from.empty() || to.empty()) return fail(fn, "a plan is empty");
  if (from.head_dim() != to.head_dim() || from.rotary_dim() != to.rotary_dim() ||
      from.rotary_offset() != to.rotary_offset() || from.style() != to.style())
    return fail(fn, "plans differ in layout: from (head_dim=", from.head_dim(), ", rotary_dim=", from.rotary_dim(),
                ", rotary_offset=", from.rotary_offset(), ") to (head_dim=", to.head_dim(), ", rotary_dim=",
                to.rotary_dim(), ", rotary_offset=", to.rotary_offset(), ") or in style");
  return {};
}

/// Per-token deltas of a context shift (shift_rope): shape (batch, length) = k's (N, L), row_stride >= L when
/// given (< 0: L), a pointer unless k is empty.
inline status check_shift_deltas(const char* fn, const void* deltas, index_t batch, index_t length, index_t row_stride,
                                 index_t n, index_t l) {
  if (batch != n || length != l)
    return fail(fn, "deltas shape (", batch, ", ", length, ") does not match k (N, L)=(", n, ", ", l, ")");
  if (row_stride >= 0 && row_stride < length) return fail(fn, "deltas row_stride=", row_stride, " is less than L=", length);
  if (n * l != 0 && deltas == nullptr) return fail(fn, "deltas is null");
  return {};
}

/// Validates an input/output pair against the geometry; in place (the same view) or disjoint spans only.
template <class In, class Out>
status check_target(const char* fn, const char* in_name, const char* out_name, index_t head_dim,
                    const rope_io<In, Out>& t) {
  const bool in_place = same_view(t.in, t.out);
  if (!in_place) POSENC_TRY(check_view(fn, in_name, t.in, false));  // in place, the output's check covers it
  POSENC_TRY(check_view(fn, out_name, t.out, true));
  if (t.in.extent(3) != head_dim)
    return fail(fn, in_name, " head dim (extent 3)=", t.in.extent(3), " does not match the plan's head_dim=", head_dim);
  if (t.in.extents() != t.out.extents())
    return fail(fn, out_name, " shape (", t.out.extent(0), ", ", t.out.extent(1), ", ", t.out.extent(2), ", ",
                t.out.extent(3), ") does not match ", in_name, " shape (", t.in.extent(0), ", ", t.in.extent(1), ", ",
                t.in.extent(2), ", ", t.in.extent(3), ")");
  if (!in_place && spans_overlap(t.in, t.out))
    return fail(fn, out_name, " overlaps ", in_name, " without being the same view (in place)");
  return {};
}

template <class In, class Out, std::size_t K>
status check_targets(const char* fn, index_t head_dim, const std::array<rope_io<In, Out>, K>& targets,
                     const std::array<const char*, 2 * K>& names) {
  for (std::size_t k = 0; k < K; ++k) POSENC_TRY(check_target(fn, names[2 * k], names[2 * k + 1], head_dim, targets[k]));
  for (std::size_t k = 1; k < K; ++k) {
    POSENC_TRY(check_same_tokens(fn, names[2 * k], targets[k].in.extent(0), targets[k].in.extent(1), names[0],
                                 targets[0].in.extent(0), targets[0].in.extent(1)));
    if (!targets[k].out.empty())
      POSENC_TRY(check_distinct(fn, names[2 * k + 1], targets[k].out.data(), names[1], targets[0].out.data()));
  }
  return {};
}

/// The common valid rotation call, decided without forming a status (a one-token decode call is a few hundred
/// nanoseconds, and the rule-by-rule checks cost a quarter of that): every target in place (one view twice),
/// valid and of the head dim, the targets of one batch and distinct, positions an offset. False only sends the
/// call through the full checks, which accept or reject it with the message.
template <class In, class Out, std::size_t K>
POSENC_ALWAYS_INLINE bool quick_rope_call(const rope_geometry& g, const positions& pos,
                                          const std::array<rope_io<In, Out>, K>& targets, index_t& max_pos) {
  bool ok = pos.kind() == positions::form::offset;
  const index_t n = targets[0].in.extent(0), l = targets[0].in.extent(1);
  for (std::size_t k = 0; k < K; ++k) {
    const auto& t = targets[k];
    ok = ok && same_view(t.in, t.out) && view_ok(t.out, true) && t.in.extent(3) == g.head_dim;
    if (k > 0) ok = ok && t.in.extent(0) == n && t.in.extent(1) == l && t.out.data() != targets[0].out.data();
  }
  if (!ok) return false;
  const index_t start = pos.start();  // an offset (checked above); at() was compiled as a call here
  const index_t last = l > 0 ? l - 1 : 0;
  if (start < 0 || start > std::numeric_limits<index_t>::max() - last) return false;
  max_pos = n > 0 && l > 0 ? start + last : -1;
  return true;
}

/// Checks a rotation call; `max_pos` is its largest position (-1 when there is nothing to do). A launcher whose
/// positions live in device memory passes `values_readable` false (see validate_positions).
template <class In, class Out, std::size_t K>
status check_rope_call_rules(const char* fn, const rope_geometry& g, const positions& pos,
                             const std::array<rope_io<In, Out>, K>& targets, const std::array<const char*, 2 * K>& names,
                             index_t& max_pos, bool values_readable) {
  POSENC_TRY(check_targets(fn, g.head_dim, targets, names));
  return validate_positions(fn, pos, targets[0].in.extent(0), targets[0].in.extent(1), max_pos, values_readable);
}
/// (The quick verdict inline in the entry, the rules out of line: a call of this function and its status were
/// ~40 instructions of a one-head call.)
template <class In, class Out, std::size_t K>
POSENC_ALWAYS_INLINE status check_rope_call(const char* fn, const rope_geometry& g, const positions& pos,
                                            const std::array<rope_io<In, Out>, K>& targets,
                                            const std::array<const char*, 2 * K>& names, index_t& max_pos,
                                            bool values_readable = true) {
  if (quick_rope_call(g, pos, targets, max_pos)) return {};
  return check_rope_call_rules(fn, g, pos, targets, names, max_pos, values_readable);
}

}  // namespace detail
POSENC_END_NAMESPACE
