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
#include "posenc/detail/check.hpp"
#include "posenc/detail/kernels/entries.hpp"
#include "posenc/detail/kernels/params.hpp"
#include "posenc/detail/math/inv_freq.hpp"
#include "posenc/detail/math/xpos_scale.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/positions.hpp"
#include "posenc/rope.hpp"
#include "posenc/rope_scaling.hpp"
#include "posenc/status.hpp"
#include "posenc/tensor_view.hpp"

POSENC_BEGIN_NAMESPACE

/// An xPos configuration, torchscale XPOS defaults; xpos_plan validates it.
struct xpos_config {
  index_t head_dim = 0;     ///< D, even: every feature rotates (torchscale)
  double scale_base = 512;  ///< torchscale default
  double gamma = 0.4;       ///< zeta_i = (2i/D + gamma)/(1 + gamma)
  double base = 10000;      ///< rotary base, w_i = base^(-2i/D)
  rope_style style = rope_style::interleaved;  ///< torchscale rotates every two (interleaved)
};

/// Queries are scaled up by zeta^((p-C)/scale_base), keys down (torchscale `downscale=True`).
enum class xpos_mode { upscale, downscale };

/// Frequencies and ln zeta of one xPos configuration, validated once.
class xpos_plan {
 public:
  /// An empty plan (rejected by the apply functions), to be filled by try_create.
  xpos_plan() = default;

  /// Throws argument_error unless head_dim is even and > 0, scale_base and base are finite with
  /// scale_base > 0 and base > 1, and gamma is finite and > 0.
  explicit xpos_plan(const xpos_config& cfg) { detail::throw_if_error(try_create(cfg, *this)); }

  /// The constructor without exceptions: `out` is replaced on success, untouched on error (an out_of_memory
  /// status when the tables cannot be allocated).
  static status try_create(const xpos_config& cfg, xpos_plan& out) noexcept {
    constexpr const char* fn = "xpos_plan";
    if (cfg.head_dim <= 0 || cfg.head_dim % 2 != 0) return detail::fail(fn, "head_dim=", cfg.head_dim, " must be even and > 0");
    if (!(std::isfinite(cfg.scale_base) && cfg.scale_base > 0.0))
      return detail::fail(fn, "scale_base=", cfg.scale_base, " must be finite and > 0");
    if (!(std::isfinite(cfg.gamma) && cfg.gamma > 0.0)) return detail::fail(fn, "gamma=", cfg.gamma, " must be finite and > 0");
    POSENC_TRY(detail::check_base(fn, cfg.base));
    const index_t pairs = cfg.head_dim / 2;
    if (static_cast<std::size_t>(pairs) > std::vector<double>().max_size())
      return detail::fail(fn, "head_dim=", cfg.head_dim, " exceeds the largest table");
    return detail::guard_alloc(fn, [&]() -> status {
      std::vector<double> inv_freq(static_cast<std::size_t>(pairs));
      std::vector<double> log_zeta(static_cast<std::size_t>(pairs));
      for (index_t i = 0; i < pairs; ++i) {
        inv_freq[static_cast<std::size_t>(i)] = detail::math::inv_freq(cfg.base, i, cfg.head_dim);
        log_zeta[static_cast<std::size_t>(i)] = std::log(detail::math::xpos_zeta(i, cfg.head_dim, cfg.gamma));
      }
      // Nothing below allocates or throws: `out` changes only once the whole plan exists (`cfg` may be
      // out.config(), so it is read before).
      out.cfg_ = cfg;
      out.inv_freq_ = std::move(inv_freq);
      out.log_zeta_ = std::move(log_zeta);
      return {};
    });
  }

  /// True for a default-constructed plan (no pairs).
  bool empty() const { return inv_freq_.empty(); }
  /// The configuration the plan was built from.
  const xpos_config& config() const { return cfg_; }
  /// D: every feature rotates.
  index_t head_dim() const { return cfg_.head_dim; }
  /// D/2, the rotated pairs.
  index_t pairs() const { return cfg_.head_dim / 2; }
  /// w_i = base^(-2i/D), i = 0 .. D/2-1, in radians per position.
  const std::vector<double>& inv_freq() const { return inv_freq_; }
  /// ln zeta_i, i = 0 .. D/2-1 (all < 0 for gamma > 0, so the scale decays away from the centre for queries).
  const std::vector<double>& log_zeta() const { return log_zeta_; }

  /// The largest |p - C| for which every pair's scale and its reciprocal stay inside T's normal range:
  /// scale_base * min(ln max(T), -ln min(T)) / ln(1/zeta_0); zeta_0 = gamma/(1+gamma) decays fastest. For the
  /// defaults (gamma 0.4, scale_base 512): float and bfloat16 35,694 positions, Eigen::half 3,966, double
  /// 289,519. posenc forms the scale in double relative to C, so inside that range nothing over- or
  /// underflows; past it a scaled value leaves T's range only where the true value does.
  template <class T>
  double max_safe_distance() const {
    if (empty()) return 0.0;
    const double lmax = std::log(static_cast<double>(std::numeric_limits<T>::max()));
    const double lmin = -std::log(static_cast<double>(std::numeric_limits<T>::min()));
    const double l = lmax < lmin ? lmax : lmin;
    return cfg_.scale_base * l / -log_zeta_.front();
  }

 private:
  xpos_config cfg_{};
  std::vector<double> inv_freq_;
  std::vector<double> log_zeta_;
};

/// torchscale's centre for a call on L tokens after P0 cached ones: ceil((L + P0)/2) (its min_pos is
/// -(L + P0)//2). A KV cache must keep one centre for all its entries; pass that instead.
/// Computed without forming length + offset, which may overflow for offsets near INT64_MAX (both >= 0).
inline index_t xpos_default_center(index_t length, index_t offset) {
  return length / 2 + offset / 2 + (length % 2 + offset % 2 + 1) / 2;
}

namespace detail {

/// Every xPos entry: all checks first (nothing is written on an error), then the kernels.
template <class Dispatch, class In, class Out, std::size_t K>
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
  run_rope_rows<Dispatch>(src, pos, plan.config().style, 0, plan.pairs(), direction, targets, variant);
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
template <class X, class Dispatch = detail::default_dispatch>
status try_apply_xpos(const xpos_plan& plan, X&& x, const positions& pos, index_t center, xpos_mode mode) noexcept {
  const auto t = detail::make_target(x, x);
  return detail::xpos_entry<Dispatch>("apply_xpos", plan, pos, center, std::array<xpos_mode, 1>{mode}, 1.0,
                                      std::array<std::decay_t<decltype(t)>, 1>{t}, {"x", "x"});
}
template <class X, class Dispatch = detail::default_dispatch>
void apply_xpos(const xpos_plan& plan, X&& x, const positions& pos, index_t center, xpos_mode mode) {
  detail::throw_if_error(try_apply_xpos<X&, Dispatch>(plan, x, pos, center, mode));
}

/// xPos out of place (`out` must not overlap `in`). `out` may hold another storage type than `in` (float q/k
/// straight into a half, bfloat16 or float KV cache): the arithmetic is double (the scale may leave float's
/// range where the scaled value does not) and each result is rounded to `out`'s type once.
template <class X, class Y, class Dispatch = detail::default_dispatch>
status try_apply_xpos(const xpos_plan& plan, X&& in, Y&& out, const positions& pos, index_t center,
                      xpos_mode mode) noexcept {
  const auto t = detail::make_target(in, out);
  return detail::xpos_entry<Dispatch>("apply_xpos", plan, pos, center, std::array<xpos_mode, 1>{mode}, 1.0,
                                      std::array<std::decay_t<decltype(t)>, 1>{t}, {"in", "out"});
}
template <class X, class Y, class Dispatch = detail::default_dispatch>
void apply_xpos(const xpos_plan& plan, X&& in, Y&& out, const positions& pos, index_t center, xpos_mode mode) {
  detail::throw_if_error(try_apply_xpos<X&, Y&, Dispatch>(plan, in, out, pos, center, mode));
}

/// Queries upscaled and keys downscaled in one call, in place, around one centre: <q_m, k_n> then depends
/// on m - n only (the centre cancels).
template <class Q, class K, class Dispatch = detail::default_dispatch>
status try_apply_xpos_qk(const xpos_plan& plan, Q&& q, K&& k, const positions& pos, index_t center) noexcept {
  const auto tq = detail::make_target(q, q);
  const auto tk = detail::make_target(k, k);
  static_assert(std::is_same_v<decltype(tq), decltype(tk)>, "posenc::apply_xpos_qk: q and k have one element type");
  return detail::xpos_entry<Dispatch>("apply_xpos_qk", plan, pos, center,
                                      std::array<xpos_mode, 2>{xpos_mode::upscale, xpos_mode::downscale}, 1.0,
                                      std::array<std::decay_t<decltype(tq)>, 2>{tq, tk}, {"q", "q", "k", "k"});
}
template <class Q, class K, class Dispatch = detail::default_dispatch>
void apply_xpos_qk(const xpos_plan& plan, Q&& q, K&& k, const positions& pos, index_t center) {
  detail::throw_if_error(try_apply_xpos_qk<Q&, K&, Dispatch>(plan, q, k, pos, center));
}

/// Backward pass (transpose): rotation by -p*w_i with the same per-pair scale as the forward `mode`.
template <class X, class Dispatch = detail::default_dispatch>
status try_apply_xpos_backward(const xpos_plan& plan, X&& grad, const positions& pos, index_t center,
                               xpos_mode mode) noexcept {
  const auto t = detail::make_target(grad, grad);
  return detail::xpos_entry<Dispatch>("apply_xpos_backward", plan, pos, center, std::array<xpos_mode, 1>{mode}, -1.0,
                                      std::array<std::decay_t<decltype(t)>, 1>{t}, {"grad", "grad"});
}
template <class X, class Dispatch = detail::default_dispatch>
void apply_xpos_backward(const xpos_plan& plan, X&& grad, const positions& pos, index_t center, xpos_mode mode) {
  detail::throw_if_error(try_apply_xpos_backward<X&, Dispatch>(plan, grad, pos, center, mode));
}

POSENC_END_NAMESPACE
