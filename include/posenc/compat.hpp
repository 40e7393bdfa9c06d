// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// C++ counterparts of the Python positional-encoding APIs posenc's users know, with the same results, built
// on posenc's plans and kernels (make_rope_plan, rope_cache, apply_rope, xpos_plan, apply_xpos):
//   posenc::zeta      kyegomez/zeta `zeta/nn/embeddings/rope.py` RotaryEmbedding (after lucidrains'
//                     rotary-embedding-torch), and `xpos_relative_position.py` (Microsoft torchscale
//                     `torchscale/component/xpos_relative_position.py`): fixed_pos_embedding, rotate_every_two,
//                     duplicate_interleave, apply_rotary_pos_emb, XPOS.
//   posenc::tiny_llm  skyzh/tiny-llm `src/tiny_llm/positional_encoding.py` RoPE(dims, seq_len, base, traditional).
// Inputs and outputs are row-major Eigen tensors in the Python shapes; every function returns a new tensor,
// as the Python does. Angles and scales are formed in double and rounded to the storage type once, where
// torch/MLX work in float32: results agree to float rounding, and are closer to the exact values.
// Engines that want in-place work on strided memory take the equivalent plans (rotary_embedding::plan,
// rotary_embedding::make_xpos_plan, xpos::plan, rope::cache) to apply_rope / apply_xpos directly.
// Every function and constructor that can fail has a noexcept try_ form returning a posenc::status
// (invalid_argument, or out_of_memory), its result in an out-parameter (the last), unchanged on error:
// try_fixed_pos_embedding, try_rotate_every_two, try_duplicate_interleave, try_apply_rotary_pos_emb,
// rotary_embedding::try_create / try_forward / try_make_xpos_plan, xpos::try_create / try_forward,
// tiny_llm::rope::try_create / try_call. The throwing forms throw posenc::argument_error with the same message.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/eigen.hpp"
#include "posenc/detail/math/inv_freq.hpp"
#include "posenc/detail/math/rotate.hpp"
#include "posenc/detail/math/scaling.hpp"
#include "posenc/detail/math/xpos_scale.hpp"
#include "posenc/detail/simd/base.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/error.hpp"
#include "posenc/positions.hpp"
#include "posenc/rope.hpp"
#include "posenc/rope_scaling.hpp"
#include "posenc/status.hpp"
#include "posenc/tensor_view.hpp"
#include "posenc/xpos.hpp"

POSENC_BEGIN_NAMESPACE

namespace detail {

/// Row-major like torch and MLX, so element (i, j, ...) sits where the Python has it.
template <class T, int Rank>
using compat_tensor = Eigen::Tensor<T, Rank, Eigen::RowMajor>;

/// The table type a cos/sin cache for storage T uses: double for double, float otherwise.
template <class T>
using compat_table_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

inline bool compat_finite_at_least(double v, double lo) { return std::isfinite(v) && v >= lo; }

/// torchscale apply_rotary_pos_emb's shape checks: x (B, L, D), D even, sin and cos (L, D/2).
template <class T>
status compat_check_rotary_args(const char* fn, const compat_tensor<T, 3>& x, const compat_tensor<T, 2>& sin,
                                const compat_tensor<T, 2>& cos) {
  const auto l = static_cast<index_t>(x.dimension(1));
  const auto d = static_cast<index_t>(x.dimension(2));
  if (d % 2 != 0) return fail(fn, "x last dimension D=", d, " must be even");
  const auto check = [&](const char* name, const compat_tensor<T, 2>& m) -> status {
    if (m.dimension(0) != l || m.dimension(1) != d / 2)
      return fail(fn, name, " shape (", m.dimension(0), ", ", m.dimension(1), ") must be (L, D/2)=(", l, ", ", d / 2, ")");
    return {};
  };
  POSENC_TRY(check("sin", sin));
  return check("cos", cos);
}

/// What a default-constructed compat object says when used before a try_create filled it.
inline constexpr const char* compat_empty_message = "the object is empty (default-constructed, not filled by try_create)";

/// torchscale apply_rotary_pos_emb after validation: pair i of token (b, l) rotated by the library's
/// rotate_pair with c = scale_at(l, i) cos[l][i], s = scale_at(l, i) sin[l][i], in acc_t<T> arithmetic.
template <class T, class Scale>
compat_tensor<T, 3> compat_rotary_pos_emb(const compat_tensor<T, 3>& x, const compat_tensor<T, 2>& sin,
                                          const compat_tensor<T, 2>& cos, const Scale& scale_at) {
  using A = simd::acc_t<T>;
  const auto b = static_cast<index_t>(x.dimension(0));
  const auto l = static_cast<index_t>(x.dimension(1));
  const auto half = static_cast<index_t>(x.dimension(2)) / 2;
  compat_tensor<T, 3> out(x.dimensions());
  for (index_t n = 0; n < b; ++n)
    for (index_t t = 0; t < l; ++t)
      for (index_t i = 0; i < half; ++i) {
        const A s = scale_at(t, i);
        A ya;
        A yb;
        math::rotate_pair(simd::load_as<A>(x(n, t, 2 * i)), simd::load_as<A>(x(n, t, 2 * i + 1)),
                          simd::load_as<A>(cos(t, i)) * s, simd::load_as<A>(sin(t, i)) * s, ya, yb);
        out(n, t, 2 * i) = simd::store_as<T>(ya);
        out(n, t, 2 * i + 1) = simd::store_as<T>(yb);
      }
  return out;
}

}  // namespace detail

// ===================================================================================================== zeta

/// kyegomez/zeta (lucidrains- and torchscale-derived) rotary APIs.
namespace zeta {

/// Row-major Eigen tensor: the layout of a contiguous torch tensor.
template <class T, int Rank>
using tensor = detail::compat_tensor<T, Rank>;

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
/// - The xPos scale centres at floor(seq_len/2) (`seq_len // 2`), where torchscale's XPOS (zeta::xpos below)
///   centres at ceil((L + offset)/2): the two differ by one for odd lengths. Both are reproduced as written.
/// - Rejected here, accepted (or failing later) there: odd dim (the Python silently makes dim+1 columns),
///   dim 2 (the Python divides by zero in dim/(dim-2)), non-finite parameters, base <= 1,
///   base_rescale_factor <= 0, scale_base <= 0 with use_xpos. interpolation_factor < 1 fails the Python's
///   assert and throws here.
///
/// **Example**
/// ```
/// posenc::zeta::rotary_embedding rot(64, /*use_xpos=*/false, 512, /*interpolation_factor=*/2.0);
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
    detail::throw_if_error(try_build(dim, use_xpos, scale_base, interpolation_factor, base, base_rescale_factor));
  }

  /// The constructor without exceptions: `out` holds the embedding on success, is unchanged on error.
  ///
  /// **Example**
  /// ```
  /// posenc::zeta::rotary_embedding rot;
  /// if (posenc::status s = posenc::zeta::rotary_embedding::try_create(64, false, 512, 2.0, 10000, 1.0, rot); !s)
  ///   return s;
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
    constexpr const char* fn = "zeta::rotary_embedding::forward";
    return detail::guard_alloc(fn, [&]() -> status {
      if (plan_.empty()) return detail::fail(fn, detail::compat_empty_message);
      if (seq_len < 0) return detail::fail(fn, "seq_len=", seq_len, " must be >= 0");
      if (seq_len > std::numeric_limits<index_t>::max() / dim_)
        return detail::fail(fn, "seq_len=", seq_len, " times dim=", dim_, " overflows");
      const index_t half = dim_ / 2;
      const index_t center = xpos_center(seq_len);
      const std::vector<double>& w = plan_.inv_freq();
      rotary_tables<T> r{tensor<T, 2>(seq_len, dim_), tensor<T, 2>(seq_len, dim_)};
      for (index_t t = 0; t < seq_len; ++t) {
        for (index_t i = 0; i < half; ++i) {
          const auto k = static_cast<std::size_t>(i);
          const T f = detail::simd::store_as<T>(detail::math::angle(t, w[k]));
          const T s = use_xpos_ ? detail::simd::store_as<T>(std::exp(
                                      detail::math::xpos_log_scale(log_zeta_[k], t, center, scale_base_)))
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
    detail::throw_if_error(try_forward(seq_len, out));
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
    constexpr const char* fn = "zeta::rotary_embedding::make_xpos_plan";
    return detail::guard_alloc(fn, [&]() -> status {
      if (plan_.empty()) return detail::fail(fn, detail::compat_empty_message);
      if (!use_xpos_) return detail::fail(fn, "use_xpos is false (the scale is 1: use plan())");
      if (interpolation_factor_ != 1.0)
        return detail::fail(fn, "interpolation_factor=", interpolation_factor_,
                            " is not 1: xpos_plan has no position interpolation");
      xpos_config cfg;
      cfg.head_dim = dim_;
      cfg.scale_base = scale_base_;
      cfg.gamma = 0.4;
      cfg.base = detail::math::ntk_base(base_, base_rescale_factor_, dim_);
      cfg.style = rope_style::half_split;
      return xpos_plan::try_create(cfg, out);
    });
  }

  /// The throwing form of try_make_xpos_plan: argument_error with the same message.
  xpos_plan make_xpos_plan() const {
    xpos_plan p;
    detail::throw_if_error(try_make_xpos_plan(p));
    return p;
  }

  /// zeta's xPos centre for a table of seq_len rows: floor(seq_len/2) (`seq_len // 2`).
  static index_t xpos_center(index_t seq_len) { return seq_len / 2; }

  /// The constructor's arguments.
  index_t dim() const { return dim_; }
  bool use_xpos() const { return use_xpos_; }
  double scale_base() const { return scale_base_; }
  double interpolation_factor() const { return interpolation_factor_; }
  double base() const { return base_; }
  double base_rescale_factor() const { return base_rescale_factor_; }

 private:
  status try_build(index_t dim, bool use_xpos, double scale_base, double interpolation_factor, double base,
                   double base_rescale_factor) noexcept {
    constexpr const char* fn = "zeta::rotary_embedding";
    return detail::guard_alloc(fn, [&]() -> status {
      if (dim <= 2 || dim % 2 != 0)
        return detail::fail(fn, "dim=", dim, " must be even and > 2 (base_rescale_factor^(dim/(dim-2)))");
      if (!detail::compat_finite_at_least(interpolation_factor, 1.0))
        return detail::fail(fn, "interpolation_factor=", interpolation_factor, " must be finite and >= 1");
      if (!(std::isfinite(base) && base > 1.0)) return detail::fail(fn, "base=", base, " must be finite and > 1");
      if (!(std::isfinite(base_rescale_factor) && base_rescale_factor > 0.0))
        return detail::fail(fn, "base_rescale_factor=", base_rescale_factor, " must be finite and > 0");
      if (use_xpos && !(std::isfinite(scale_base) && scale_base > 0.0))
        return detail::fail(fn, "scale_base=", scale_base, " must be finite and > 0");
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
          log_zeta[static_cast<std::size_t>(i)] = std::log(detail::math::xpos_zeta(i, dim, 0.4));
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

// Every function below has a try_ form: noexcept, returning a posenc::status (invalid_argument with the message
// the throwing form's argument_error carries, or out_of_memory), its out-parameter (the last) unchanged when it
// is not ok; the try_ forms take every argument (no defaults before the out-parameter).

/// What fixed_pos_embedding returns: the Python's `(sin, cos)` tuple.
template <class T>
struct sin_cos {
  tensor<T, 2> sin;  ///< (seq_len, dim)
  tensor<T, 2> cos;  ///< (seq_len, dim)
};

/// torchscale `fixed_pos_embedding(x)` for x of shape (seq_len, dim):
///   sin[t][j] = sin(t * 10000^(-j/dim)), cos[t][j] = cos(t * 10000^(-j/dim)), j = 0 .. dim-1.
/// Note j/dim, not 2j/dim: XPOS calls it with dim = head_dim/2, so column j is pair j's frequency
/// 10000^(-2j/head_dim). Built as the cos/sin cache (rope_cache, double for T = double, else float) of the
/// interleaved plan with head_dim 2*dim, so any dim >= 0 works (the Python allows odd dim too).
/// Differences: takes the shape instead of a tensor (see the overload below); angles in double.
/// Into `out`; returns invalid_argument if seq_len or dim is negative or the table size overflows.
///
/// **Example**
/// ```
/// posenc::zeta::sin_cos<float> sc;
/// if (posenc::status s = posenc::zeta::try_fixed_pos_embedding(L, D / 2, sc); !s) return s;
/// ```
template <class T>
status try_fixed_pos_embedding(index_t seq_len, index_t dim, sin_cos<T>& out) noexcept {
  constexpr const char* fn = "zeta::fixed_pos_embedding";
  return detail::guard_alloc(fn, [&]() -> status {
    if (seq_len < 0) return detail::fail(fn, "seq_len=", seq_len, " must be >= 0");
    if (dim < 0) return detail::fail(fn, "dim=", dim, " must be >= 0");
    if (dim > std::numeric_limits<index_t>::max() / 2) return detail::fail(fn, "dim=", dim, " is too large");
    if (dim == 0) {
      sin_cos<T> r{tensor<T, 2>(seq_len, 0), tensor<T, 2>(seq_len, 0)};
      out = std::move(r);
      return {};
    }
    rope_config cfg;
    cfg.head_dim = 2 * dim;
    cfg.base = 10000.0;
    cfg.style = rope_style::interleaved;
    rope_plan plan;
    POSENC_TRY(try_make_rope_plan(cfg, 0, plan));
    // The cache validates the table size before anything is allocated here.
    using C = detail::compat_table_t<T>;
    rope_cache<C> cache;
    POSENC_TRY(rope_cache<C>::try_create(std::move(plan), seq_len, cache));
    sin_cos<T> r{tensor<T, 2>(seq_len, dim), tensor<T, 2>(seq_len, dim)};
    const index_t n = seq_len * dim;
    for (index_t k = 0; k < n; ++k) {
      r.sin.data()[k] = detail::simd::store_as<T>(cache.sin_data()[k]);
      r.cos.data()[k] = detail::simd::store_as<T>(cache.cos_data()[k]);
    }
    out = std::move(r);
    return {};
  });
}

/// The throwing form of try_fixed_pos_embedding: argument_error with the same message.
template <class T = float>
sin_cos<T> fixed_pos_embedding(index_t seq_len, index_t dim) {
  sin_cos<T> out;
  detail::throw_if_error(try_fixed_pos_embedding(seq_len, dim, out));
  return out;
}

/// torchscale `fixed_pos_embedding(x)` with the Python's signature: only x's shape (seq_len, dim) and scalar
/// type are used.
template <class T>
status try_fixed_pos_embedding(const tensor<T, 2>& x, sin_cos<T>& out) noexcept {
  return try_fixed_pos_embedding(static_cast<index_t>(x.dimension(0)), static_cast<index_t>(x.dimension(1)), out);
}
template <class T>
sin_cos<T> fixed_pos_embedding(const tensor<T, 2>& x) {
  return fixed_pos_embedding<T>(static_cast<index_t>(x.dimension(0)), static_cast<index_t>(x.dimension(1)));
}

/// torchscale `rotate_every_two(x)`: out[..., 2i] = -x[..., 2i+1], out[..., 2i+1] = x[..., 2i] (the
/// interleaved "multiply by i" of RoPE). torchscale slices x[:, :, ::2], so x is (B, L, D) there; here any
/// rank, pairs along the last dimension.
/// Into `out`; returns invalid_argument if the last dimension is odd (the Python fails in torch.stack).
template <class T, int Rank>
status try_rotate_every_two(const tensor<T, Rank>& x, tensor<T, Rank>& out) noexcept {
  static_assert(Rank >= 1, "posenc::zeta::rotate_every_two: rank >= 1");
  constexpr const char* fn = "zeta::rotate_every_two";
  return detail::guard_alloc(fn, [&]() -> status {
    const auto d = static_cast<index_t>(x.dimension(Rank - 1));
    if (d % 2 != 0) return detail::fail(fn, "x last dimension=", d, " must be even");
    tensor<T, Rank> r(x.dimensions());
    const T* in = x.data();
    T* o = r.data();
    const auto n = static_cast<index_t>(x.size());
    for (index_t k = 0; k < n; k += 2) {
      o[k] = -in[k + 1];
      o[k + 1] = in[k];
    }
    out = std::move(r);
    return {};
  });
}

/// The throwing form of try_rotate_every_two: argument_error with the same message.
template <class T, int Rank>
tensor<T, Rank> rotate_every_two(const tensor<T, Rank>& x) {
  tensor<T, Rank> out;
  detail::throw_if_error(try_rotate_every_two(x, out));
  return out;
}

/// torchscale `duplicate_interleave(m)`: m (R, C) -> (R, 2C) with out[r][2c] = out[r][2c+1] = m[r][c]
/// (`m.view(-1, 1).repeat(1, 2).view(R, -1)`, a `repeat_interleave(2, dim=1)`), into `out`. Every shape is
/// accepted: the try_ form fails only with out_of_memory (std::bad_alloc from the throwing form).
template <class T>
status try_duplicate_interleave(const tensor<T, 2>& m, tensor<T, 2>& out) noexcept {
  return detail::guard_alloc("zeta::duplicate_interleave", [&]() -> status {
    const auto rows = static_cast<index_t>(m.dimension(0));
    const auto cols = static_cast<index_t>(m.dimension(1));
    tensor<T, 2> r(rows, 2 * cols);
    const T* in = m.data();
    T* o = r.data();
    const index_t n = rows * cols;
    for (index_t k = 0; k < n; ++k) {
      o[2 * k] = in[k];
      o[2 * k + 1] = in[k];
    }
    out = std::move(r);
    return {};
  });
}

/// The throwing form of try_duplicate_interleave.
template <class T>
tensor<T, 2> duplicate_interleave(const tensor<T, 2>& m) {
  tensor<T, 2> out;
  detail::throw_if_error(try_duplicate_interleave(m, out));
  return out;
}


/// torchscale `apply_rotary_pos_emb(x, sin, cos, scale=1)` with a number `scale`:
///   cos' = duplicate_interleave(cos * scale), sin' = duplicate_interleave(sin * scale),
///   out = x * cos' + rotate_every_two(x) * sin', i.e. per pair i of x (B, L, D):
///   out[2i] = x[2i] c - x[2i+1] s, out[2i+1] = x[2i+1] c + x[2i] s with c = scale cos[l][i], s = scale sin[l][i].
/// sin, cos: (L, D/2) (fixed_pos_embedding(L, D/2)). Arithmetic in float (double for T = double).
/// Difference: sin/cos must have exactly L rows (torch would also broadcast a single row).
/// Into `out` (which may be x); returns invalid_argument, before allocating the output, if D is odd or sin/cos
/// are not (L, D/2).
template <class T>
status try_apply_rotary_pos_emb(const tensor<T, 3>& x, const tensor<T, 2>& sin, const tensor<T, 2>& cos, double scale,
                                tensor<T, 3>& out) noexcept {
  constexpr const char* fn = "zeta::apply_rotary_pos_emb";
  return detail::guard_alloc(fn, [&]() -> status {
    POSENC_TRY(detail::compat_check_rotary_args(fn, x, sin, cos));
    using A = detail::simd::acc_t<T>;
    const A s = static_cast<A>(scale);
    out = detail::compat_rotary_pos_emb(x, sin, cos, [s](index_t, index_t) { return s; });
    return {};
  });
}

/// The throwing form of try_apply_rotary_pos_emb: argument_error with the same message.
template <class T>
tensor<T, 3> apply_rotary_pos_emb(const tensor<T, 3>& x, const tensor<T, 2>& sin, const tensor<T, 2>& cos,
                                  double scale = 1.0) {
  tensor<T, 3> out;
  detail::throw_if_error(try_apply_rotary_pos_emb(x, sin, cos, scale, out));
  return out;
}

/// torchscale `apply_rotary_pos_emb(x, sin, cos, scale)` with a per-position, per-pair `scale` tensor of
/// shape (L, D/2), as XPOS passes it: c = scale[l][i] cos[l][i], s = scale[l][i] sin[l][i] (see above).
/// Into `out`; returns invalid_argument if D is odd or sin, cos or scale are not (L, D/2).
template <class T>
status try_apply_rotary_pos_emb(const tensor<T, 3>& x, const tensor<T, 2>& sin, const tensor<T, 2>& cos,
                                const tensor<T, 2>& scale, tensor<T, 3>& out) noexcept {
  constexpr const char* fn = "zeta::apply_rotary_pos_emb";
  return detail::guard_alloc(fn, [&]() -> status {
    POSENC_TRY(detail::compat_check_rotary_args(fn, x, sin, cos));
    if (scale.dimension(0) != x.dimension(1) || 2 * scale.dimension(1) != x.dimension(2))
      return detail::fail(fn, "scale shape (", scale.dimension(0), ", ", scale.dimension(1), ") must be (L, D/2)=(",
                          x.dimension(1), ", ", x.dimension(2) / 2, ")");
    using A = detail::simd::acc_t<T>;
    out = detail::compat_rotary_pos_emb(
        x, sin, cos, [&scale](index_t t, index_t i) { return detail::simd::load_as<A>(scale(t, i)); });
    return {};
  });
}

/// The throwing form of the scale-tensor try_apply_rotary_pos_emb: argument_error with the same message.
template <class T>
tensor<T, 3> apply_rotary_pos_emb(const tensor<T, 3>& x, const tensor<T, 2>& sin, const tensor<T, 2>& cos,
                                  const tensor<T, 2>& scale) {
  tensor<T, 3> out;
  detail::throw_if_error(try_apply_rotary_pos_emb(x, sin, cos, scale, out));
  return out;
}

/// torchscale `XPOS(head_dim, scale_base=512)` (Sun et al. 2022, "A Length-Extrapolatable Transformer"):
/// interleaved RoPE with w_i = 10000^(-2i/D) whose pair i is also multiplied by
/// zeta_i^((p - C)/scale_base), zeta_i = (2i + 0.4 D)/(1.4 D) (its reciprocal with downscale, for keys).
/// Built on posenc::xpos_plan / apply_xpos (the scale is formed relative to C in double, so it neither
/// overflows nor underflows where the Python's float32 zeta^p would).
///
/// **Example**
/// ```
/// posenc::zeta::xpos xp(64);
/// auto q2 = xp.forward(q);                                  // q: (B*H, L, 64)
/// auto k2 = xp.forward(k, /*offset=*/0, /*downscale=*/true);
/// ```
class xpos {
 public:
  /// Throws argument_error unless head_dim is even and > 0 and scale_base is finite and > 0.
  explicit xpos(index_t head_dim, double scale_base = 512) { detail::throw_if_error(try_make_plan(head_dim, scale_base, plan_)); }

  /// The constructor without exceptions (scale_base: the Python's default is 512): `out` holds the module on
  /// success, is unchanged on error.
  ///
  /// **Example**
  /// ```
  /// posenc::zeta::xpos xp;
  /// if (posenc::status s = posenc::zeta::xpos::try_create(64, 512, xp); !s) return s;
  /// ```
  static status try_create(index_t head_dim, double scale_base, xpos& out) noexcept {
    return try_make_plan(head_dim, scale_base, out.plan_);
  }

  /// An empty module (no plan), to be filled by try_create; forward rejects it.
  xpos() = default;

  /// torchscale `XPOS.forward(x, offset=0, downscale=False)` for x (B, L, D = head_dim): token l has
  /// position p = offset + l, centre C = ceil((L + offset)/2) (the Python's min_pos = -(L + offset)//2),
  ///   out = apply_rotary_pos_emb(x, sin_p, cos_p, zeta^(+-(p - C)/scale_base)),
  /// i.e. `apply_xpos(plan(), as_nlhd(x, layout::nld), positions::offset(offset), xpos_default_center(L, offset),
  /// downscale ? xpos_mode::downscale : xpos_mode::upscale)` into a new tensor.
  /// A KV cache keeps one centre for all its keys: call apply_xpos with that centre instead.
  /// Into `out` (which may be x); returns invalid_argument, before allocating the output, if D != head_dim,
  /// offset < 0 (or offset + L overflows) or the module is empty.
  template <class T>
  status try_forward(const tensor<T, 3>& x, index_t offset, bool downscale, tensor<T, 3>& out) const noexcept {
    constexpr const char* fn = "zeta::xpos::forward";
    return detail::guard_alloc(fn, [&]() -> status {
      if (plan_.empty()) return detail::fail(fn, detail::compat_empty_message);
      const auto l = static_cast<index_t>(x.dimension(1));
      const auto d = static_cast<index_t>(x.dimension(2));
      if (d != plan_.head_dim())
        return detail::fail(fn, "x last dimension D=", d, " does not match head_dim=", plan_.head_dim());
      if (offset < 0) return detail::fail(fn, "offset=", offset, " must be >= 0");
      if (offset > std::numeric_limits<index_t>::max() - l - 1)
        return detail::fail(fn, "offset=", offset, " + length ", l, " overflows int64");
      tensor<T, 3> y(x.dimensions());
      POSENC_TRY(try_apply_xpos(plan_, as_nlhd(x, layout::nld), as_nlhd(y, layout::nld), positions::offset(offset),
                                xpos_default_center(l, offset), downscale ? xpos_mode::downscale : xpos_mode::upscale));
      out = std::move(y);
      return {};
    });
  }

  /// The throwing form of try_forward: argument_error with the same message.
  template <class T>
  tensor<T, 3> forward(const tensor<T, 3>& x, index_t offset = 0, bool downscale = false) const {
    tensor<T, 3> out;
    detail::throw_if_error(try_forward(x, offset, downscale, out));
    return out;
  }

  /// `xpos(x, offset, downscale)`, as calling the nn.Module.
  template <class T>
  tensor<T, 3> operator()(const tensor<T, 3>& x, index_t offset = 0, bool downscale = false) const {
    return forward(x, offset, downscale);
  }

  /// The xpos_plan (interleaved, gamma 0.4, base 10000) for in-place use with apply_xpos / apply_xpos_qk.
  const xpos_plan& plan() const { return plan_; }
  /// The constructor's arguments.
  index_t head_dim() const { return plan_.head_dim(); }
  double scale_base() const { return plan_.config().scale_base; }

 private:
  /// Validates and builds the plan into `out` (unchanged on error).
  static status try_make_plan(index_t head_dim, double scale_base, xpos_plan& out) noexcept {
    constexpr const char* fn = "zeta::xpos";
    return detail::guard_alloc(fn, [&]() -> status {
      if (head_dim <= 0 || head_dim % 2 != 0) return detail::fail(fn, "head_dim=", head_dim, " must be even and > 0");
      if (!(std::isfinite(scale_base) && scale_base > 0.0))
        return detail::fail(fn, "scale_base=", scale_base, " must be finite and > 0");
      xpos_config cfg;
      cfg.head_dim = head_dim;
      cfg.scale_base = scale_base;
      cfg.gamma = 0.4;
      cfg.base = 10000.0;
      cfg.style = rope_style::interleaved;
      return xpos_plan::try_create(cfg, out);
    });
  }

  xpos_plan plan_;
};

}  // namespace zeta

// ================================================================================================= tiny_llm

/// skyzh/tiny-llm (week 1, day 2) APIs.
namespace tiny_llm {

/// Row-major Eigen tensor: the layout of an MLX array.
template <class T, int Rank>
using tensor = detail::compat_tensor<T, Rank>;

/// A Python `slice(start, stop)` of positions (step 1): positions start .. stop-1.
struct slice {
  index_t start = 0;
  index_t stop = 0;
};

/// tiny-llm `RoPE(dims, seq_len, base=10000, traditional=False)`: RoPE with w_i = base^(-2i/dims) on
/// x (N, L, H, D = dims), pairs (x[2i], x[2i+1]) when traditional (interleaved, MLX `traditional=True`), else
/// (x[i], x[i + dims/2]) (half_split, Qwen2). Like the Python, the cos/sin tables of positions
/// 0 .. seq_len-1 are computed once (a posenc::rope_cache<float>, angles in double rounded to float) and
/// every call looks them up.
/// Differences: positions past seq_len, negative starts and slices of the wrong length throw argument_error
/// (the Python asserts the lengths and lets MLX clamp or fail on the rest); a slice has no step.
///
/// **Example**
/// ```
/// posenc::tiny_llm::rope rope(128, 4096, 1000000.0);        // Qwen2
/// auto q_prefill = rope(q);                                  // positions 0 .. L-1
/// auto q_next = rope(q1, {past, past + 1});                  // one decode step
/// ```
class rope {
 public:
  /// Throws argument_error unless dims is even and > 0, seq_len >= 0 and base is finite and > 1.
  rope(index_t dims, index_t seq_len, double base = 10000, bool traditional = false) {
    detail::throw_if_error(try_build(dims, seq_len, base, traditional));
  }

  /// The constructor without exceptions (the Python's defaults: base 10000, traditional false): `out` holds
  /// the module on success, is unchanged on error (out_of_memory when the cache cannot be allocated).
  ///
  /// **Example**
  /// ```
  /// posenc::tiny_llm::rope rope;
  /// if (posenc::status s = posenc::tiny_llm::rope::try_create(128, 4096, 1000000.0, false, rope); !s) return s;
  /// ```
  static status try_create(index_t dims, index_t seq_len, double base, bool traditional, rope& out) noexcept {
    rope r;
    POSENC_TRY(r.try_build(dims, seq_len, base, traditional));
    out = std::move(r);
    return {};
  }

  /// An empty module (no cache), to be filled by try_create; its calls reject every x.
  rope() = default;

  /// `rope(x)` (offset None) into `out` (which may be x): token l of every sequence at position l. Returns
  /// invalid_argument if D != dims, L > seq_len or the module is empty.
  template <class T>
  status try_call(const tensor<T, 4>& x, tensor<T, 4>& out) const noexcept {
    constexpr const char* fn = "tiny_llm::rope";
    return detail::guard_alloc(fn, [&]() -> status {
      POSENC_TRY(check_x(fn, x));
      const auto l = static_cast<index_t>(x.dimension(1));
      if (l > seq_len()) return detail::fail(fn, "x length L=", l, " exceeds seq_len=", seq_len(), " (positions 0 .. L-1)");
      return try_apply(x, positions::offset(0), out);
    });
  }

  /// The throwing form of try_call(x, out): argument_error with the same message.
  template <class T>
  tensor<T, 4> operator()(const tensor<T, 4>& x) const {
    tensor<T, 4> out;
    detail::throw_if_error(try_call(x, out));
    return out;
  }

  /// `rope(x, offset=slice(start, stop))` into `out`: token l of every sequence at position start + l.
  /// Returns invalid_argument if D != dims, stop - start != L, start < 0, stop > seq_len or the module is empty.
  template <class T>
  status try_call(const tensor<T, 4>& x, slice offset, tensor<T, 4>& out) const noexcept {
    constexpr const char* fn = "tiny_llm::rope";
    return detail::guard_alloc(fn, [&]() -> status {
      POSENC_TRY(check_x(fn, x));
      POSENC_TRY(check_slice(fn, offset, static_cast<index_t>(x.dimension(1)), -1));
      return try_apply(x, positions::offset(offset.start), out);
    });
  }

  /// The throwing form of try_call(x, offset, out): argument_error with the same message.
  template <class T>
  tensor<T, 4> operator()(const tensor<T, 4>& x, slice offset) const {
    tensor<T, 4> out;
    detail::throw_if_error(try_call(x, offset, out));
    return out;
  }

  /// `rope(x, offset=[slice, ...])` (continuous batching) into `out`: one slice per sequence, token l of
  /// sequence n at position offsets[n].start + l (posenc::positions::per_sequence; no per-token index array).
  /// Returns invalid_argument if D != dims, offsets.size() != N, any slice has stop - start != L, start < 0
  /// or stop > seq_len, or the module is empty.
  template <class T>
  status try_call(const tensor<T, 4>& x, const std::vector<slice>& offsets, tensor<T, 4>& out) const noexcept {
    constexpr const char* fn = "tiny_llm::rope";
    return detail::guard_alloc(fn, [&]() -> status {
      POSENC_TRY(check_x(fn, x));
      const auto n = static_cast<index_t>(x.dimension(0));
      if (static_cast<index_t>(offsets.size()) != n)
        return detail::fail(fn, "offsets.size()=", offsets.size(), " does not match batch N=", n);
      std::vector<std::int64_t> starts(offsets.size());
      for (std::size_t i = 0; i < offsets.size(); ++i) {
        POSENC_TRY(check_slice(fn, offsets[i], static_cast<index_t>(x.dimension(1)), static_cast<index_t>(i)));
        starts[i] = offsets[i].start;
      }
      return try_apply(x, positions::per_sequence(starts.data(), n), out);
    });
  }

  /// The throwing form of try_call(x, offsets, out): argument_error with the same message.
  template <class T>
  tensor<T, 4> operator()(const tensor<T, 4>& x, const std::vector<slice>& offsets) const {
    tensor<T, 4> out;
    detail::throw_if_error(try_call(x, offsets, out));
    return out;
  }

  /// The cos/sin cache (seq_len positions) and its plan, for in-place use with apply_rope.
  const rope_cache<float>& cache() const { return cache_; }
  const rope_plan& plan() const { return cache_.plan(); }
  /// The constructor's arguments.
  index_t dims() const { return cache_.plan().head_dim(); }
  index_t seq_len() const { return cache_.max_positions(); }
  bool traditional() const { return traditional_; }

 private:
  status try_build(index_t dims, index_t seq_len, double base, bool traditional) noexcept {
    constexpr const char* fn = "tiny_llm::rope";
    return detail::guard_alloc(fn, [&]() -> status {
      if (dims <= 0 || dims % 2 != 0) return detail::fail(fn, "dims=", dims, " must be even and > 0");
      if (seq_len < 0) return detail::fail(fn, "seq_len=", seq_len, " must be >= 0");
      if (!(std::isfinite(base) && base > 1.0)) return detail::fail(fn, "base=", base, " must be finite and > 1");
      rope_config cfg;
      cfg.head_dim = dims;
      cfg.base = base;
      cfg.style = traditional ? rope_style::interleaved : rope_style::half_split;
      rope_plan plan;
      POSENC_TRY(try_make_rope_plan(cfg, 0, plan));
      POSENC_TRY(rope_cache<float>::try_create(std::move(plan), seq_len, cache_));
      traditional_ = traditional;
      return {};
    });
  }

  template <class T>
  status check_x(const char* fn, const tensor<T, 4>& x) const {
    if (cache_.plan().empty()) return detail::fail(fn, detail::compat_empty_message);
    if (x.dimension(3) != dims()) return detail::fail(fn, "x head dim D=", x.dimension(3), " does not match dims=", dims());
    return {};
  }

  /// `which` is the slice's index in a list, or -1 for a single slice.
  status check_slice(const char* fn, const slice& s, index_t length, index_t which) const {
    const char* name = which < 0 ? "offset" : "offsets";
    const auto idx = [&]() { return which < 0 ? std::string() : "[" + std::to_string(which) + "]"; };
    if (s.start < 0) return detail::fail(fn, name, idx(), ".start=", s.start, " must be >= 0");
    if (s.stop < s.start || s.stop - s.start != length)
      return detail::fail(fn, name, idx(), " slice(", s.start, ", ", s.stop, ") has length ", s.stop - s.start,
                          ", x has L=", length);
    if (s.stop > seq_len())
      return detail::fail(fn, name, idx(), ".stop=", s.stop, " is past seq_len=", seq_len(), " (last position ",
                          s.stop - 1, ")");
    return {};
  }

  /// The rotation into a new tensor, moved into `out` once it is complete (so `out` may be `x`).
  template <class T>
  status try_apply(const tensor<T, 4>& x, const positions& pos, tensor<T, 4>& out) const {
    tensor<T, 4> y(x.dimensions());
    POSENC_TRY(try_apply_rope(cache_, x, y, pos));
    out = std::move(y);
    return {};
  }

  rope_cache<float> cache_;
  bool traditional_ = false;
};

}  // namespace tiny_llm

POSENC_END_NAMESPACE
