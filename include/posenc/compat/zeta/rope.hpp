// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// posenc::compat::zeta::rotary_embedding, the C++ counterpart of
//   package kyegomez/zeta (PyPI zetascale), module zeta/nn/embeddings/rope.py (`from zeta.nn import
//   RotaryEmbedding`): class RotaryEmbedding(dim, use_xpos, scale_base, interpolation_factor, base,
//   base_rescale_factor), itself after lucidrains' rotary-embedding-torch.
// Version: the seeds (shared/seeds/001_*, zeta's documentation page) pin no release or commit; the behaviour
// mirrored is the one that page and the golden generator tests/golden/gen_golden.py (gen_compat) describe.
// Same results as the Python, built on posenc's rope_plan and xpos_plan; angles and scales are formed in double
// and rounded to the storage type once (torch works in float32). Part of posenc/compat/zeta.hpp; not in the
// umbrella header posenc/posenc.hpp.
//
// Every member that can fail has a noexcept try_ form returning a posenc::status (invalid_argument, or
// out_of_memory), its result in an out-parameter (the last), unchanged on error: rotary_embedding::try_create /
// try_forward / try_make_xpos_plan. The throwing forms throw posenc::argument_error with the same message.
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>
#include <utility>
#include <vector>

#include "posenc/compat/common.hpp"
#include "posenc/config.hpp"
#include "posenc/detail/check.hpp"
#include "posenc/detail/math/inv_freq.hpp"
#include "posenc/detail/math/scaling.hpp"
#include "posenc/detail/math/xpos_scale.hpp"
#include "posenc/detail/simd/base.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/error.hpp"  // argument_error, which the throwing forms throw
#include "posenc/rope.hpp"
#include "posenc/rope_plan.hpp"
#include "posenc/status.hpp"
#include "posenc/tensor_view.hpp"
#include "posenc/xpos.hpp"

POSENC_BEGIN_NAMESPACE

/// The Python-API counterparts (posenc/compat/): C++ forms of the Python APIs posenc's users know.
namespace compat {

/// kyegomez/zeta's rotary APIs (zeta.nn.embeddings).
namespace zeta {

/// What rotary_embedding::forward returns: the Python's `(freqs, scale)` tuple.
template <class T>
struct rotary_tables {
  tensor<T, 2> freqs;  ///< (seq_len, dim): row t = [t/interpolation_factor * inv_freq | same again]
  tensor<T, 2> scale;  ///< (seq_len, dim): row t = [zeta^((t - seq_len//2)/scale_base) | same]; ones without xPos
};

/// zeta `RotaryEmbedding(dim, use_xpos=False, scale_base=512, interpolation_factor=1.0, base=10000,
/// base_rescale_factor=1.0)`: the half-split ("rotate_half") rotary frequencies with position interpolation
/// (Chen et al. 2023), NTK-aware base rescale (bloc97) and optional xPos scale (Sun et al. 2022).
///   base'     = base * base_rescale_factor^(dim/(dim-2))
///   inv_freq_i = base'^(-2i/dim), i = 0 .. dim/2-1
///   zeta_i    = (2i + 0.4 dim)/(1.4 dim)
///
/// Differences from the Python:
/// - `forward(seq_len)` has no `device`, and returns an all-ones `scale` table where the Python returns the
///   number 1.0 (use_xpos false).
/// - The xPos scale centres at floor(seq_len/2) (`seq_len // 2`), where torchscale's XPOS (zeta::xpos, in
///   zeta/xpos_relative_position.hpp) centres at ceil((L + offset)/2): the two differ by one for odd lengths.
///   Both are reproduced as written.
/// - Rejected here, accepted (or failing later) there: odd dim (the Python silently makes dim+1 columns),
///   dim 2 (the Python divides by zero in dim/(dim-2)), non-finite parameters, base <= 1,
///   base_rescale_factor <= 0, scale_base <= 0 with use_xpos. interpolation_factor < 1 fails the Python's
///   assert and throws here.
///
/// **Example**
/// ```
/// posenc::compat::zeta::rotary_embedding rot(64, /*use_xpos=*/false, 512, /*interpolation_factor=*/2.0);
/// auto [freqs, scale] = rot.forward(4096);                       // as the Python: (4096, 64) tables
/// posenc::apply_rope(rot.plan(), q, posenc::positions::offset(0)); // or rotate q (N, L, H, 64) in place
/// ```
/// Every member that can fail has a try_ form: noexcept, returning a posenc::status (invalid_argument with the
/// message the throwing form's argument_error carries, or out_of_memory), its out-parameter (the last)
/// unchanged when it is not ok. The try_ forms take every argument (the Python defaults: use_xpos false,
/// scale_base 512, interpolation_factor 1, base 10000, base_rescale_factor 1).
class rotary_embedding {
 public:
  /// Throws argument_error unless dim is even and > 2, interpolation_factor is finite and >= 1, base is
  /// finite and > 1, base_rescale_factor is finite and > 0, and (with use_xpos) scale_base is finite and > 0.
  explicit rotary_embedding(index_t dim, bool use_xpos = false, double scale_base = 512,
                            double interpolation_factor = 1.0, double base = 10000, double base_rescale_factor = 1.0) {
    posenc::detail::throw_if_error(
        try_build(dim, use_xpos, scale_base, interpolation_factor, base, base_rescale_factor));
  }

  /// The constructor without exceptions: `out` holds the embedding on success, is unchanged on error.
  ///
  /// **Example**
  /// ```
  /// using posenc::compat::zeta::rotary_embedding;
  /// rotary_embedding rot;
  /// if (posenc::status s = rotary_embedding::try_create(64, false, 512, 2.0, 10000, 1.0, rot); !s) return s;
  /// ```
  static status try_create(index_t dim, bool use_xpos, double scale_base, double interpolation_factor, double base,
                           double base_rescale_factor, rotary_embedding& out) noexcept {
    rotary_embedding r;
    POSENC_TRY(r.try_build(dim, use_xpos, scale_base, interpolation_factor, base, base_rescale_factor));
    out = std::move(r);
    return {};
  }

  /// An empty embedding (dim 0), to be filled by try_create; forward and make_xpos_plan reject it.
  rotary_embedding() = default;

  /// The Python `forward(seq_len, device)`: for t = 0 .. seq_len-1 and i = 0 .. dim/2-1,
  ///   freqs[t][i] = freqs[t][i + dim/2] = t * inv_freq_i / interpolation_factor
  ///   scale[t][i] = scale[t][i + dim/2] = zeta_i^((t - floor(seq_len/2)) / scale_base)   (1 without xPos)
  /// formed in double (t * w and exp(ln zeta * (t - C)/scale_base)) and rounded to T once, into `out`.
  /// Returns invalid_argument if seq_len < 0 (or seq_len * dim overflows) or the embedding is empty.
  template <class T>
  status try_forward(index_t seq_len, rotary_tables<T>& out) const noexcept {
    constexpr const char* fn = "compat::zeta::rotary_embedding::forward";
    return posenc::detail::guard_alloc(fn, [&]() -> status {
      if (plan_.empty()) return posenc::detail::fail(fn, detail::empty_message);
      if (seq_len < 0) return posenc::detail::fail(fn, "seq_len=", seq_len, " must be >= 0");
      if (seq_len > std::numeric_limits<index_t>::max() / dim_)
        return posenc::detail::fail(fn, "seq_len=", seq_len, " times dim=", dim_, " overflows");
      const index_t half = dim_ / 2;
      const index_t center = xpos_center(seq_len);
      const std::vector<double>& w = plan_.inv_freq();
      rotary_tables<T> r{tensor<T, 2>(seq_len, dim_), tensor<T, 2>(seq_len, dim_)};
      for (index_t t = 0; t < seq_len; ++t) {
        for (index_t i = 0; i < half; ++i) {
          const auto k = static_cast<std::size_t>(i);
          const T f = posenc::detail::simd::store_as<T>(posenc::detail::math::angle(t, w[k]));
          const T s = use_xpos_ ? posenc::detail::simd::store_as<T>(std::exp(
                                      posenc::detail::math::xpos_log_scale(log_zeta_[k], t, center, scale_base_)))
                                : T(1);
          r.freqs(t, i) = f;
          r.freqs(t, i + half) = f;
          r.scale(t, i) = s;
          r.scale(t, i + half) = s;
        }
      }
      out = std::move(r);
      return {};
    });
  }

  /// The throwing form of try_forward: argument_error if seq_len < 0.
  template <class T = float>
  rotary_tables<T> forward(index_t seq_len) const {
    rotary_tables<T> out;
    posenc::detail::throw_if_error(try_forward(seq_len, out));
    return out;
  }

  /// The equivalent rope_plan (half_split, head_dim = rotary_dim = dim, inv_freq_i = base'^(-2i/dim) /
  /// interpolation_factor): zeta's `apply_rotary_pos_emb(t, freqs)`, i.e. t*cos(freqs) + rotate_half(t)*sin(freqs)
  /// with freqs = forward(S).freqs and its last L rows taken for t of length L, is
  /// `apply_rope(plan(), t, positions::offset(S - L))` (t in (N, L, H, dim); zeta's (b, h, n, d) through
  /// `as_nlhd(t, layout::nhld)`). The xPos scale is not part of it: see make_xpos_plan.
  const rope_plan& plan() const { return plan_; }

  /// The equivalent xpos_plan (half_split, gamma 0.4, base'): zeta's `apply_rotary_pos_emb(q, freqs, scale)`
  /// and `apply_rotary_pos_emb(k, freqs, scale ** -1)` with (freqs, scale) = forward(L) are
  /// `apply_xpos_qk(make_xpos_plan(), q, k, positions::offset(0), xpos_center(L))`.
  /// Into `out`; returns invalid_argument unless use_xpos is set and interpolation_factor is 1 (an xpos_plan
  /// has no position interpolation), or if base' is not > 1 (xpos_plan's message), or the embedding is empty.
  status try_make_xpos_plan(xpos_plan& out) const noexcept {
    constexpr const char* fn = "compat::zeta::rotary_embedding::make_xpos_plan";
    return posenc::detail::guard_alloc(fn, [&]() -> status {
      if (plan_.empty()) return posenc::detail::fail(fn, detail::empty_message);
      if (!use_xpos_) return posenc::detail::fail(fn, "use_xpos is false (the scale is 1: use plan())");
      if (interpolation_factor_ != 1.0)
        return posenc::detail::fail(fn, "interpolation_factor=", interpolation_factor_,
                                    " is not 1: xpos_plan has no position interpolation");
      xpos_config cfg;
      cfg.head_dim = dim_;
      cfg.scale_base = scale_base_;
      cfg.gamma = 0.4;
      cfg.base = posenc::detail::math::ntk_base(base_, base_rescale_factor_, dim_);
      cfg.style = rope_style::half_split;
      return xpos_plan::try_create(cfg, out);
    });
  }

  /// The throwing form of try_make_xpos_plan: argument_error with the same message.
  xpos_plan make_xpos_plan() const {
    xpos_plan p;
    posenc::detail::throw_if_error(try_make_xpos_plan(p));
    return p;
  }

  /// zeta's xPos centre for a table of seq_len rows: floor(seq_len/2) (`seq_len // 2`).
  static index_t xpos_center(index_t seq_len) { return seq_len / 2; }

  /// The constructor's dim: the head dim, every feature rotated.
  index_t dim() const { return dim_; }
  /// Whether forward's scale table carries the xPos scale (else all ones); make_xpos_plan requires it.
  bool use_xpos() const { return use_xpos_; }
  /// xPos: the scale of position t is zeta^((t - seq_len//2)/scale_base).
  double scale_base() const { return scale_base_; }
  /// Position interpolation: positions are divided by it; >= 1.
  double interpolation_factor() const { return interpolation_factor_; }
  /// The base before the rescale (base' = base * base_rescale_factor^(dim/(dim-2))).
  double base() const { return base_; }
  /// NTK-aware rescale of the base: base' = base * base_rescale_factor^(dim/(dim-2)).
  double base_rescale_factor() const { return base_rescale_factor_; }

 private:
  status try_build(index_t dim, bool use_xpos, double scale_base, double interpolation_factor, double base,
                   double base_rescale_factor) noexcept {
    constexpr const char* fn = "compat::zeta::rotary_embedding";
    return posenc::detail::guard_alloc(fn, [&]() -> status {
      if (dim <= 2 || dim % 2 != 0)
        return posenc::detail::fail(fn, "dim=", dim, " must be even and > 2 (base_rescale_factor^(dim/(dim-2)))");
      if (!(std::isfinite(interpolation_factor) && interpolation_factor >= 1.0))
        return posenc::detail::fail(fn, "interpolation_factor=", interpolation_factor, " must be finite and >= 1");
      POSENC_TRY(posenc::detail::check_base(fn, base));
      if (!(std::isfinite(base_rescale_factor) && base_rescale_factor > 0.0))
        return posenc::detail::fail(fn, "base_rescale_factor=", base_rescale_factor, " must be finite and > 0");
      if (use_xpos && !(std::isfinite(scale_base) && scale_base > 0.0))
        return posenc::detail::fail(fn, "scale_base=", scale_base, " must be finite and > 0");
      // NTK base rescale as the scaling, interpolation as per-pair divisors: make_rope_plan then forms
      // base'^(-2i/dim) / interpolation_factor, i.e. (t / interpolation_factor) * inv_freq at position t.
      rope_config cfg;
      cfg.head_dim = dim;
      cfg.base = base;
      cfg.style = rope_style::half_split;
      cfg.scaling = rope_scaling::ntk(base_rescale_factor);
      cfg.freq_factors.assign(static_cast<std::size_t>(dim / 2), interpolation_factor);
      rope_plan plan;
      POSENC_TRY(try_make_rope_plan(cfg, 0, plan));
      std::vector<double> log_zeta;
      if (use_xpos) {
        log_zeta.resize(static_cast<std::size_t>(dim / 2));
        for (index_t i = 0; i < dim / 2; ++i)
          log_zeta[static_cast<std::size_t>(i)] = std::log(posenc::detail::math::xpos_zeta(i, dim, 0.4));
      }
      dim_ = dim;
      use_xpos_ = use_xpos;
      scale_base_ = scale_base;
      interpolation_factor_ = interpolation_factor;
      base_ = base;
      base_rescale_factor_ = base_rescale_factor;
      plan_ = std::move(plan);
      log_zeta_ = std::move(log_zeta);
      return {};
    });
  }

  index_t dim_ = 0;
  bool use_xpos_ = false;
  double scale_base_ = 512;
  double interpolation_factor_ = 1.0;
  double base_ = 10000;
  double base_rescale_factor_ = 1.0;
  rope_plan plan_;
  std::vector<double> log_zeta_;  ///< ln zeta_i; empty without xPos
};

}  // namespace zeta

}  // namespace compat

POSENC_END_NAMESPACE
