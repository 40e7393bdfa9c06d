// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// xPos's configuration and plan (torchscale XPOS, Sun et al. 2022: frequencies and ln zeta per pair), apart
// from the kernels, so posenc/xpos.hpp (CPU) and posenc/cuda/xpos.cuh (GPU) share them. The encoding itself is
// documented in posenc/xpos.hpp.
#pragma once

#include <cmath>
#include <limits>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/enum_names.hpp"
#include "posenc/detail/check.hpp"
#include "posenc/detail/math/inv_freq.hpp"
#include "posenc/detail/math/xpos_scale.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/status.hpp"
#include "posenc/types.hpp"

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
/// The spellings of xpos_mode (posenc/enum_names.hpp: to_string, parse).
template <>
struct enum_names<xpos_mode> {
  /// Canonical name first per value, then accepted aliases.
  static constexpr enum_name<xpos_mode> list[] = {{xpos_mode::upscale, "upscale"}, {xpos_mode::downscale, "downscale"}};
};

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

POSENC_END_NAMESPACE
