// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// Rotary position embedding (RoPE) over (N, L, H, D) tensors: interleaved and half-split pairs, partial
// rotary windows, every scaling (through rope_plan), positions as an offset, per sequence or per token, in
// place or out of place, q and k in one pass, the backward pass, with or without a cos/sin cache.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/detail/check.hpp"
#include "posenc/detail/kernels/kernels.hpp"
#include "posenc/detail/kernels/params.hpp"
#include "posenc/detail/simd/vec.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/positions.hpp"
#include "posenc/rope_scaling.hpp"
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
  template <class Dispatch = detail::default_dispatch>
  rope_cache(rope_plan plan, index_t max_positions) : plan_(std::move(plan)), max_positions_(max_positions) {
    constexpr const char* fn = "rope_cache";
    if (plan_.empty()) detail::throw_invalid_argument(fn, "plan is empty");
    if (max_positions < 0) detail::throw_invalid_argument(fn, "max_positions=", max_positions, " must be >= 0");
    const index_t pairs = plan_.pairs();
    if (max_positions > static_cast<index_t>(cos_.max_size()) / pairs)
      detail::throw_invalid_argument(fn, "max_positions=", max_positions, " times ", pairs, " pairs overflows");
    cos_.resize(static_cast<std::size_t>(max_positions * pairs));
    sin_.resize(static_cast<std::size_t>(max_positions * pairs));
    const detail::angle_src src{plan_.inv_freq().data(), plan_.magnitude(), detail::max_abs(plan_.inv_freq())};
    C* c = cos_.data();
    C* s = sin_.data();
    Dispatch::call([&](auto t) { rope_cache_fill(t, src, max_positions, pairs, c, s); });
  }

  const rope_plan& plan() const { return plan_; }
  index_t max_positions() const { return max_positions_; }
  /// Row p holds m*cos(p*w_i) for i = 0 .. R/2-1.
  const C* cos_data() const { return cos_.data(); }
  const C* sin_data() const { return sin_.data(); }

 private:
  rope_plan plan_;
  index_t max_positions_;
  std::vector<C> cos_;
  std::vector<C> sin_;
};

namespace detail {

template <class F>
struct is_rope_freq : std::false_type {};
template <>
struct is_rope_freq<rope_plan> : std::true_type {};
template <class C>
struct is_rope_freq<rope_cache<C>> : std::true_type {};
template <class F>
inline constexpr bool is_rope_freq_v = is_rope_freq<std::remove_cv_t<std::remove_reference_t<F>>>::value;

inline const rope_plan& plan_of(const rope_plan& p) { return p; }
template <class C>
const rope_plan& plan_of(const rope_cache<C>& c) {
  return c.plan();
}

/// Validates an input/output pair against the plan; in place (the same view) or disjoint spans only.
template <class In, class Out>
void check_target(const char* fn, const char* in_name, const char* out_name, index_t head_dim,
                  const rope_io<In, Out>& t) {
  check_view(fn, in_name, t.in, false);
  check_view(fn, out_name, t.out, true);
  if (t.in.extent(3) != head_dim)
    throw_invalid_argument(fn, in_name, " head dim (extent 3)=", t.in.extent(3), " does not match the plan's head_dim=", head_dim);
  if (t.in.extents() != t.out.extents())
    throw_invalid_argument(fn, out_name, " shape (", t.out.extent(0), ", ", t.out.extent(1), ", ", t.out.extent(2), ", ",
                           t.out.extent(3), ") does not match ", in_name, " shape (", t.in.extent(0), ", ", t.in.extent(1),
                           ", ", t.in.extent(2), ", ", t.in.extent(3), ")");
  if (!same_view(t.in, t.out) && spans_overlap(t.in, t.out))
    throw_invalid_argument(fn, out_name, " overlaps ", in_name, " without being the same view (in place)");
}

template <class In, class Out, std::size_t K>
void check_targets(const char* fn, index_t head_dim, const std::array<rope_io<In, Out>, K>& targets,
                   const std::array<const char*, 2 * K>& names) {
  for (std::size_t k = 0; k < K; ++k) check_target(fn, names[2 * k], names[2 * k + 1], head_dim, targets[k]);
  for (std::size_t k = 1; k < K; ++k) {
    if (targets[k].in.extent(0) != targets[0].in.extent(0) || targets[k].in.extent(1) != targets[0].in.extent(1))
      throw_invalid_argument(fn, names[2 * k], " (N, L)=(", targets[k].in.extent(0), ", ", targets[k].in.extent(1),
                             ") does not match ", names[0], " (N, L)=(", targets[0].in.extent(0), ", ",
                             targets[0].in.extent(1), ")");
    if (!targets[k].out.empty() && static_cast<const void*>(targets[k].out.data()) ==
                                       static_cast<const void*>(targets[0].out.data()))
      throw_invalid_argument(fn, names[2 * k + 1], " and ", names[1], " are the same tensor");
  }
}

template <class In, class Out, std::size_t K>
index_t check_rope_call(const char* fn, const rope_plan& plan, const positions& pos,
                        const std::array<rope_io<In, Out>, K>& targets, const std::array<const char*, 2 * K>& names) {
  if (plan.empty()) throw_invalid_argument(fn, "plan is empty");
  check_targets(fn, plan.head_dim(), targets, names);
  return validate_positions(fn, pos, targets[0].in.extent(0), targets[0].in.extent(1));
}

template <std::size_t K>
constexpr std::array<int, K> variants_of(int v) {
  std::array<int, K> a{};
  for (auto& x : a) x = v;
  return a;
}

/// Runs the rotation of `src` on the targets through the dispatcher (every variant 0).
template <class Dispatch, class Source, class Pos, class In, class Out, std::size_t K>
void run_rotation(const Source& src, const Pos& pos, const rope_plan& plan, double sign,
                  const std::array<rope_io<In, Out>, K>& targets) {
  const std::array<int, K> variant = variants_of<K>(0);
  Dispatch::call([&](auto t) {
    rope_rows(t, src, pos, plan.style(), plan.rotary_offset(), plan.pairs(), sign, targets, variant);
  });
}

template <class Dispatch, class In, class Out, std::size_t K>
void run_rope(const rope_plan& plan, const positions& pos, double sign, const std::array<rope_io<In, Out>, K>& targets) {
  const angle_src src{plan.inv_freq().data(), plan.magnitude(), max_abs(plan.inv_freq())};
  run_rotation<Dispatch>(src, pos, plan, sign, targets);
}

template <class Dispatch, class C, class In, class Out, std::size_t K>
void run_rope(const rope_cache<C>& cache, const positions& pos, double sign,
              const std::array<rope_io<In, Out>, K>& targets) {
  const table_src<C> src{cache.cos_data(), cache.sin_data(), cache.plan().pairs()};
  run_rotation<Dispatch>(src, pos, cache.plan(), sign, targets);
}

template <class Dispatch, class F, class In, class Out, std::size_t K>
void rope_entry(const char* fn, const F& freq, const positions& pos, double sign,
                const std::array<rope_io<In, Out>, K>& targets, const std::array<const char*, 2 * K>& names) {
  const index_t max_pos = check_rope_call(fn, plan_of(freq), pos, targets, names);
  if constexpr (!std::is_same_v<F, rope_plan>) {
    if (max_pos >= freq.max_positions())
      throw_invalid_argument(fn, "position ", max_pos, " is past the cache of ", freq.max_positions(), " positions");
  }
  if (max_pos < 0) return;
  run_rope<Dispatch>(freq, pos, sign, targets);
}

/// The (N, L, H, D) views of an input and an output, each of its own storage type.
template <class In, class Out>
auto make_target(In&& in, Out&& out) {
  auto vo = as_nlhd(std::forward<Out>(out));
  auto vi = as_nlhd(std::forward<In>(in));
  using O = typename decltype(vo)::element_type;
  using I = std::remove_const_t<typename decltype(vi)::element_type>;
  static_assert(!std::is_const_v<O>, "posenc: the output tensor must be writable");
  static_assert(simd::is_storage_v<I> && simd::is_storage_v<O>,
                "posenc: tensors of float, double or a 16-bit storage type (posenc/storage.hpp)");
  return rope_io<I, O>{strided_view<const I, 4>(vi), vo};
}

}  // namespace detail

/// Rotates `x` in place: pair i of the rotated window turns by p * w_i, scaled by the plan's magnitude
/// (RoFormer, Su et al. 2021, eq. 34; HF `apply_rotary_pos_emb` for half_split, GPT-J for interleaved).
/// `freq` is a rope_plan (angles formed in double per call, any position) or a rope_cache (table lookup).
/// `x`: strided_view<T, 4> or Eigen tensor of rank 4 in (N, L, H, D), or rank 2 in (L, D); other layouts through
/// as_nlhd(x, layout). T: float, double, Eigen::half, Eigen::bfloat16.
/// Throws argument_error, writing nothing, if D != plan head_dim, a position is negative or past the cache, or
/// the positions do not match (N, L).
///
/// **Example**
/// ```
/// Eigen::Tensor<float, 4, Eigen::RowMajor> q(1, 16, 32, 128);
/// posenc::apply_rope(plan, q, posenc::positions::offset(0));
/// ```
template <class F, class X, class = std::enable_if_t<detail::is_rope_freq_v<F>>, class Dispatch = detail::default_dispatch>
void apply_rope(const F& freq, X&& x, const positions& pos) {
  const auto t = detail::make_target(x, x);
  detail::rope_entry<Dispatch>("apply_rope", freq, pos, 1.0, std::array<std::decay_t<decltype(t)>, 1>{t}, {"x", "x"});
}

/// Out of place: `out` = RoPE(`in`); features outside the rotated window are copied. `out` must not overlap
/// `in` (pass the same tensor twice for in place). `out` may hold another storage type than `in` (float q/k
/// rotated straight into a half or bfloat16 KV cache): the arithmetic is float (double if either is double)
/// and each result is rounded to `out`'s type once.
template <class F, class X, class Y, class = std::enable_if_t<detail::is_rope_freq_v<F>>, class Dispatch = detail::default_dispatch>
void apply_rope(const F& freq, X&& in, Y&& out, const positions& pos) {
  const auto t = detail::make_target(in, out);
  detail::rope_entry<Dispatch>("apply_rope", freq, pos, 1.0, std::array<std::decay_t<decltype(t)>, 1>{t}, {"in", "out"});
}

/// q and k in one pass, in place: cos/sin are formed once per token and used for all heads of both (k may
/// have fewer heads than q, GQA; both are often views into one fused QKV buffer). Same N, L and head dim.
/// Precondition: q and k share no element. Passing one tensor twice is rejected; views that overlap from
/// different starts cannot be told from interleaved fused-QKV views cheaply and are not detected.
template <class F, class Q, class K, class = std::enable_if_t<detail::is_rope_freq_v<F>>, class Dispatch = detail::default_dispatch>
void apply_rope_qk(const F& freq, Q&& q, K&& k, const positions& pos) {
  const auto tq = detail::make_target(q, q);
  const auto tk = detail::make_target(k, k);
  static_assert(std::is_same_v<decltype(tq), decltype(tk)>, "posenc::apply_rope_qk: q and k have one element type");
  detail::rope_entry<Dispatch>("apply_rope_qk", freq, pos, 1.0, std::array<std::decay_t<decltype(tq)>, 2>{tq, tk}, {"q", "q", "k", "k"});
}

/// Backward pass (the transpose of apply_rope): rotation by -p*w_i with the same magnitude, in place on the
/// gradient. It inverts apply_rope exactly where the magnitude is 1.
template <class F, class X, class = std::enable_if_t<detail::is_rope_freq_v<F>>, class Dispatch = detail::default_dispatch>
void apply_rope_backward(const F& freq, X&& grad, const positions& pos) {
  const auto t = detail::make_target(grad, grad);
  detail::rope_entry<Dispatch>("apply_rope_backward", freq, pos, -1.0, std::array<std::decay_t<decltype(t)>, 1>{t}, {"grad", "grad"});
}

/// Backward pass out of place: grad_in = R(-theta)^T-scaled grad_out.
template <class F, class X, class Y, class = std::enable_if_t<detail::is_rope_freq_v<F>>, class Dispatch = detail::default_dispatch>
void apply_rope_backward(const F& freq, X&& grad_out, Y&& grad_in, const positions& pos) {
  const auto t = detail::make_target(grad_out, grad_in);
  detail::rope_entry<Dispatch>("apply_rope_backward", freq, pos, -1.0, std::array<std::decay_t<decltype(t)>, 1>{t}, {"grad_out", "grad_in"});
}

POSENC_END_NAMESPACE
