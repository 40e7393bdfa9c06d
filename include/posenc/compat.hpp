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
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/eigen.hpp"
#include "posenc/detail/math/inv_freq.hpp"
#include "posenc/detail/math/rotate.hpp"
#include "posenc/detail/math/scaling.hpp"
#include "posenc/detail/math/xpos_scale.hpp"
#include "posenc/detail/simd/vec.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/error.hpp"
#include "posenc/positions.hpp"
#include "posenc/rope.hpp"
#include "posenc/rope_scaling.hpp"
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
void compat_check_rotary_args(const char* fn, const compat_tensor<T, 3>& x, const compat_tensor<T, 2>& sin,
                              const compat_tensor<T, 2>& cos) {
  const auto l = static_cast<index_t>(x.dimension(1));
  const auto d = static_cast<index_t>(x.dimension(2));
  if (d % 2 != 0) throw_invalid_argument(fn, "x last dimension D=", d, " must be even");
  const auto check = [&](const char* name, const compat_tensor<T, 2>& m) {
    if (m.dimension(0) != l || m.dimension(1) != d / 2)
      throw_invalid_argument(fn, name, " shape (", m.dimension(0), ", ", m.dimension(1), ") must be (L, D/2)=(", l,
                             ", ", d / 2, ")");
  };
  check("sin", sin);
  check("cos", cos);
}

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
class rotary_embedding {
 public:
  /// Throws argument_error unless dim is even and > 2, interpolation_factor is finite and >= 1, base is
  /// finite and > 1, base_rescale_factor is finite and > 0, and (with use_xpos) scale_base is finite and > 0.
  explicit rotary_embedding(index_t dim, bool use_xpos = false, double scale_base = 512,
                            double interpolation_factor = 1.0, double base = 10000, double base_rescale_factor = 1.0)
      : dim_(dim),
        use_xpos_(use_xpos),
        scale_base_(scale_base),
        interpolation_factor_(interpolation_factor),
        base_(base),
        base_rescale_factor_(base_rescale_factor) {
    constexpr const char* fn = "zeta::rotary_embedding";
    if (dim <= 2 || dim % 2 != 0)
      detail::throw_invalid_argument(fn, "dim=", dim, " must be even and > 2 (base_rescale_factor^(dim/(dim-2)))");
    if (!detail::compat_finite_at_least(interpolation_factor, 1.0))
      detail::throw_invalid_argument(fn, "interpolation_factor=", interpolation_factor, " must be finite and >= 1");
    if (!(std::isfinite(base) && base > 1.0)) detail::throw_invalid_argument(fn, "base=", base, " must be finite and > 1");
    if (!(std::isfinite(base_rescale_factor) && base_rescale_factor > 0.0))
      detail::throw_invalid_argument(fn, "base_rescale_factor=", base_rescale_factor, " must be finite and > 0");
    if (use_xpos && !(std::isfinite(scale_base) && scale_base > 0.0))
      detail::throw_invalid_argument(fn, "scale_base=", scale_base, " must be finite and > 0");
    // NTK base rescale as the scaling, interpolation as per-pair divisors: make_rope_plan then forms
    // base'^(-2i/dim) / interpolation_factor, i.e. (t / interpolation_factor) * inv_freq at position t.
    rope_config cfg;
    cfg.head_dim = dim;
    cfg.base = base;
    cfg.style = rope_style::half_split;
    cfg.scaling = rope_scaling::ntk(base_rescale_factor);
    cfg.freq_factors.assign(static_cast<std::size_t>(dim / 2), interpolation_factor);
    plan_ = make_rope_plan(cfg);
    if (use_xpos) {
      log_zeta_.resize(static_cast<std::size_t>(dim / 2));
      for (index_t i = 0; i < dim / 2; ++i)
        log_zeta_[static_cast<std::size_t>(i)] = std::log(detail::math::xpos_zeta(i, dim, 0.4));
    }
  }

  /// The Python `forward(seq_len, device)`: for t = 0 .. seq_len-1 and i = 0 .. dim/2-1,
  ///   freqs[t][i] = freqs[t][i + dim/2] = t * inv_freq_i / interpolation_factor
  ///   scale[t][i] = scale[t][i + dim/2] = zeta_i^((t - floor(seq_len/2)) / scale_base)   (1 without xPos)
  /// formed in double (t * w and exp(ln zeta * (t - C)/scale_base)) and rounded to T once.
  /// Throws argument_error if seq_len < 0.
  template <class T = float>
  rotary_tables<T> forward(index_t seq_len) const {
    constexpr const char* fn = "zeta::rotary_embedding::forward";
    if (seq_len < 0) detail::throw_invalid_argument(fn, "seq_len=", seq_len, " must be >= 0");
    if (seq_len > std::numeric_limits<index_t>::max() / dim_)
      detail::throw_invalid_argument(fn, "seq_len=", seq_len, " times dim=", dim_, " overflows");
    const index_t half = dim_ / 2;
    const index_t center = xpos_center(seq_len);
    const std::vector<double>& w = plan_.inv_freq();
    rotary_tables<T> out{tensor<T, 2>(seq_len, dim_), tensor<T, 2>(seq_len, dim_)};
    for (index_t t = 0; t < seq_len; ++t) {
      for (index_t i = 0; i < half; ++i) {
        const auto k = static_cast<std::size_t>(i);
        const T f = detail::simd::store_as<T>(detail::math::angle(t, w[k]));
        const T s = use_xpos_ ? detail::simd::store_as<T>(std::exp(
                                    detail::math::xpos_log_scale(log_zeta_[k], t, center, scale_base_)))
                              : T(1);
        out.freqs(t, i) = f;
        out.freqs(t, i + half) = f;
        out.scale(t, i) = s;
        out.scale(t, i + half) = s;
      }
    }
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
  /// Throws argument_error unless use_xpos is set and interpolation_factor is 1 (an xpos_plan has no position
  /// interpolation), or if base' is not > 1.
  xpos_plan make_xpos_plan() const {
    constexpr const char* fn = "zeta::rotary_embedding::make_xpos_plan";
    if (!use_xpos_) detail::throw_invalid_argument(fn, "use_xpos is false (the scale is 1: use plan())");
    if (interpolation_factor_ != 1.0)
      detail::throw_invalid_argument(fn, "interpolation_factor=", interpolation_factor_,
                                     " is not 1: xpos_plan has no position interpolation");
    xpos_config cfg;
    cfg.head_dim = dim_;
    cfg.scale_base = scale_base_;
    cfg.gamma = 0.4;
    cfg.base = detail::math::ntk_base(base_, base_rescale_factor_, dim_);
    cfg.style = rope_style::half_split;
    return xpos_plan(cfg);
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
  index_t dim_;
  bool use_xpos_;
  double scale_base_;
  double interpolation_factor_;
  double base_;
  double base_rescale_factor_;
  rope_plan plan_;
  std::vector<double> log_zeta_;  ///< ln zeta_i; empty without xPos
};

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
/// Throws argument_error if seq_len or dim is negative or the table size overflows.
template <class T = float>
sin_cos<T> fixed_pos_embedding(index_t seq_len, index_t dim) {
  constexpr const char* fn = "zeta::fixed_pos_embedding";
  if (seq_len < 0) detail::throw_invalid_argument(fn, "seq_len=", seq_len, " must be >= 0");
  if (dim < 0) detail::throw_invalid_argument(fn, "dim=", dim, " must be >= 0");
  if (dim > std::numeric_limits<index_t>::max() / 2) detail::throw_invalid_argument(fn, "dim=", dim, " is too large");
  if (dim == 0) return {tensor<T, 2>(seq_len, 0), tensor<T, 2>(seq_len, 0)};
  rope_config cfg;
  cfg.head_dim = 2 * dim;
  cfg.base = 10000.0;
  cfg.style = rope_style::interleaved;
  // The cache validates the table size before anything is allocated here.
  const rope_cache<detail::compat_table_t<T>> cache(make_rope_plan(cfg), seq_len);
  sin_cos<T> out{tensor<T, 2>(seq_len, dim), tensor<T, 2>(seq_len, dim)};
  const index_t n = seq_len * dim;
  for (index_t k = 0; k < n; ++k) {
    out.sin.data()[k] = detail::simd::store_as<T>(cache.sin_data()[k]);
    out.cos.data()[k] = detail::simd::store_as<T>(cache.cos_data()[k]);
  }
  return out;
}

/// torchscale `fixed_pos_embedding(x)` with the Python's signature: only x's shape (seq_len, dim) and scalar
/// type are used.
template <class T>
sin_cos<T> fixed_pos_embedding(const tensor<T, 2>& x) {
  return fixed_pos_embedding<T>(static_cast<index_t>(x.dimension(0)), static_cast<index_t>(x.dimension(1)));
}

/// torchscale `rotate_every_two(x)`: out[..., 2i] = -x[..., 2i+1], out[..., 2i+1] = x[..., 2i] (the
/// interleaved "multiply by i" of RoPE). torchscale slices x[:, :, ::2], so x is (B, L, D) there; here any
/// rank, pairs along the last dimension.
/// Throws argument_error if the last dimension is odd (the Python fails in torch.stack).
template <class T, int Rank>
tensor<T, Rank> rotate_every_two(const tensor<T, Rank>& x) {
  static_assert(Rank >= 1, "posenc::zeta::rotate_every_two: rank >= 1");
  const auto d = static_cast<index_t>(x.dimension(Rank - 1));
  if (d % 2 != 0) detail::throw_invalid_argument("zeta::rotate_every_two", "x last dimension=", d, " must be even");
  tensor<T, Rank> out(x.dimensions());
  const T* in = x.data();
  T* o = out.data();
  const auto n = static_cast<index_t>(x.size());
  for (index_t k = 0; k < n; k += 2) {
    o[k] = -in[k + 1];
    o[k + 1] = in[k];
  }
  return out;
}

/// torchscale `duplicate_interleave(m)`: m (R, C) -> (R, 2C) with out[r][2c] = out[r][2c+1] = m[r][c]
/// (`m.view(-1, 1).repeat(1, 2).view(R, -1)`, a `repeat_interleave(2, dim=1)`).
template <class T>
tensor<T, 2> duplicate_interleave(const tensor<T, 2>& m) {
  const auto rows = static_cast<index_t>(m.dimension(0));
  const auto cols = static_cast<index_t>(m.dimension(1));
  tensor<T, 2> out(rows, 2 * cols);
  const T* in = m.data();
  T* o = out.data();
  const index_t n = rows * cols;
  for (index_t k = 0; k < n; ++k) {
    o[2 * k] = in[k];
    o[2 * k + 1] = in[k];
  }
  return out;
}


/// torchscale `apply_rotary_pos_emb(x, sin, cos, scale=1)` with a number `scale`:
///   cos' = duplicate_interleave(cos * scale), sin' = duplicate_interleave(sin * scale),
///   out = x * cos' + rotate_every_two(x) * sin', i.e. per pair i of x (B, L, D):
///   out[2i] = x[2i] c - x[2i+1] s, out[2i+1] = x[2i+1] c + x[2i] s with c = scale cos[l][i], s = scale sin[l][i].
/// sin, cos: (L, D/2) (fixed_pos_embedding(L, D/2)). Arithmetic in float (double for T = double).
/// Difference: sin/cos must have exactly L rows (torch would also broadcast a single row).
/// Throws argument_error, before allocating the output, if D is odd or sin/cos are not (L, D/2).
template <class T>
tensor<T, 3> apply_rotary_pos_emb(const tensor<T, 3>& x, const tensor<T, 2>& sin, const tensor<T, 2>& cos,
                                  double scale = 1.0) {
  constexpr const char* fn = "zeta::apply_rotary_pos_emb";
  detail::compat_check_rotary_args(fn, x, sin, cos);
  using A = detail::simd::acc_t<T>;
  const A s = static_cast<A>(scale);
  return detail::compat_rotary_pos_emb(x, sin, cos, [s](index_t, index_t) { return s; });
}

/// torchscale `apply_rotary_pos_emb(x, sin, cos, scale)` with a per-position, per-pair `scale` tensor of
/// shape (L, D/2), as XPOS passes it: c = scale[l][i] cos[l][i], s = scale[l][i] sin[l][i] (see above).
/// Throws argument_error if D is odd or sin, cos or scale are not (L, D/2).
template <class T>
tensor<T, 3> apply_rotary_pos_emb(const tensor<T, 3>& x, const tensor<T, 2>& sin, const tensor<T, 2>& cos,
                                  const tensor<T, 2>& scale) {
  constexpr const char* fn = "zeta::apply_rotary_pos_emb";
  detail::compat_check_rotary_args(fn, x, sin, cos);
  if (scale.dimension(0) != x.dimension(1) || 2 * scale.dimension(1) != x.dimension(2))
    detail::throw_invalid_argument(fn, "scale shape (", scale.dimension(0), ", ", scale.dimension(1),
                                   ") must be (L, D/2)=(", x.dimension(1), ", ", x.dimension(2) / 2, ")");
  using A = detail::simd::acc_t<T>;
  return detail::compat_rotary_pos_emb(
      x, sin, cos, [&scale](index_t t, index_t i) { return detail::simd::load_as<A>(scale(t, i)); });
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
  explicit xpos(index_t head_dim, double scale_base = 512) : plan_(make_plan(head_dim, scale_base)) {}

  /// torchscale `XPOS.forward(x, offset=0, downscale=False)` for x (B, L, D = head_dim): token l has
  /// position p = offset + l, centre C = ceil((L + offset)/2) (the Python's min_pos = -(L + offset)//2),
  ///   out = apply_rotary_pos_emb(x, sin_p, cos_p, zeta^(+-(p - C)/scale_base)),
  /// i.e. `apply_xpos(plan(), as_nlhd(x, layout::nld), positions::offset(offset), xpos_default_center(L, offset),
  /// downscale ? xpos_mode::downscale : xpos_mode::upscale)` into a new tensor.
  /// A KV cache keeps one centre for all its keys: call apply_xpos with that centre instead.
  /// Throws argument_error, before allocating the output, if D != head_dim or offset < 0 (or offset + L
  /// overflows).
  template <class T>
  tensor<T, 3> forward(const tensor<T, 3>& x, index_t offset = 0, bool downscale = false) const {
    constexpr const char* fn = "zeta::xpos::forward";
    const auto l = static_cast<index_t>(x.dimension(1));
    const auto d = static_cast<index_t>(x.dimension(2));
    if (d != plan_.head_dim())
      detail::throw_invalid_argument(fn, "x last dimension D=", d, " does not match head_dim=", plan_.head_dim());
    if (offset < 0) detail::throw_invalid_argument(fn, "offset=", offset, " must be >= 0");
    if (offset > std::numeric_limits<index_t>::max() - l - 1)
      detail::throw_invalid_argument(fn, "offset=", offset, " + length ", l, " overflows int64");
    tensor<T, 3> out(x.dimensions());
    apply_xpos(plan_, as_nlhd(x, layout::nld), as_nlhd(out, layout::nld), positions::offset(offset),
               xpos_default_center(l, offset), downscale ? xpos_mode::downscale : xpos_mode::upscale);
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
  static xpos_plan make_plan(index_t head_dim, double scale_base) {
    constexpr const char* fn = "zeta::xpos";
    if (head_dim <= 0 || head_dim % 2 != 0)
      detail::throw_invalid_argument(fn, "head_dim=", head_dim, " must be even and > 0");
    if (!(std::isfinite(scale_base) && scale_base > 0.0))
      detail::throw_invalid_argument(fn, "scale_base=", scale_base, " must be finite and > 0");
    xpos_config cfg;
    cfg.head_dim = head_dim;
    cfg.scale_base = scale_base;
    cfg.gamma = 0.4;
    cfg.base = 10000.0;
    cfg.style = rope_style::interleaved;
    return xpos_plan(cfg);
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
  rope(index_t dims, index_t seq_len, double base = 10000, bool traditional = false)
      : cache_(make_plan(dims, seq_len, base, traditional), seq_len), traditional_(traditional) {}

  /// `rope(x)` (offset None): token l of every sequence at position l. Throws argument_error if D != dims
  /// or L > seq_len.
  template <class T>
  tensor<T, 4> operator()(const tensor<T, 4>& x) const {
    constexpr const char* fn = "tiny_llm::rope";
    check_x(fn, x);
    const auto l = static_cast<index_t>(x.dimension(1));
    if (l > seq_len())
      detail::throw_invalid_argument(fn, "x length L=", l, " exceeds seq_len=", seq_len(), " (positions 0 .. L-1)");
    return apply(x, positions::offset(0));
  }

  /// `rope(x, offset=slice(start, stop))`: token l of every sequence at position start + l.
  /// Throws argument_error if D != dims, stop - start != L, start < 0 or stop > seq_len.
  template <class T>
  tensor<T, 4> operator()(const tensor<T, 4>& x, slice offset) const {
    constexpr const char* fn = "tiny_llm::rope";
    check_x(fn, x);
    check_slice(fn, offset, static_cast<index_t>(x.dimension(1)), -1);
    return apply(x, positions::offset(offset.start));
  }

  /// `rope(x, offset=[slice, ...])` (continuous batching): one slice per sequence, token l of sequence n at
  /// position offsets[n].start + l (posenc::positions::per_sequence; no per-token index array).
  /// Throws argument_error if D != dims, offsets.size() != N, or any slice has stop - start != L, start < 0 or
  /// stop > seq_len.
  template <class T>
  tensor<T, 4> operator()(const tensor<T, 4>& x, const std::vector<slice>& offsets) const {
    constexpr const char* fn = "tiny_llm::rope";
    check_x(fn, x);
    const auto n = static_cast<index_t>(x.dimension(0));
    if (static_cast<index_t>(offsets.size()) != n)
      detail::throw_invalid_argument(fn, "offsets.size()=", offsets.size(), " does not match batch N=", n);
    std::vector<std::int64_t> starts(offsets.size());
    for (std::size_t i = 0; i < offsets.size(); ++i) {
      check_slice(fn, offsets[i], static_cast<index_t>(x.dimension(1)), static_cast<index_t>(i));
      starts[i] = offsets[i].start;
    }
    return apply(x, positions::per_sequence(starts.data(), n));
  }

  /// The cos/sin cache (seq_len positions) and its plan, for in-place use with apply_rope.
  const rope_cache<float>& cache() const { return cache_; }
  const rope_plan& plan() const { return cache_.plan(); }
  /// The constructor's arguments.
  index_t dims() const { return cache_.plan().head_dim(); }
  index_t seq_len() const { return cache_.max_positions(); }
  bool traditional() const { return traditional_; }

 private:
  static rope_plan make_plan(index_t dims, index_t seq_len, double base, bool traditional) {
    constexpr const char* fn = "tiny_llm::rope";
    if (dims <= 0 || dims % 2 != 0) detail::throw_invalid_argument(fn, "dims=", dims, " must be even and > 0");
    if (seq_len < 0) detail::throw_invalid_argument(fn, "seq_len=", seq_len, " must be >= 0");
    if (!(std::isfinite(base) && base > 1.0)) detail::throw_invalid_argument(fn, "base=", base, " must be finite and > 1");
    rope_config cfg;
    cfg.head_dim = dims;
    cfg.base = base;
    cfg.style = traditional ? rope_style::interleaved : rope_style::half_split;
    return make_rope_plan(cfg);
  }

  template <class T>
  void check_x(const char* fn, const tensor<T, 4>& x) const {
    if (x.dimension(3) != dims())
      detail::throw_invalid_argument(fn, "x head dim D=", x.dimension(3), " does not match dims=", dims());
  }

  /// `which` is the slice's index in a list, or -1 for a single slice.
  void check_slice(const char* fn, const slice& s, index_t length, index_t which) const {
    const char* name = which < 0 ? "offset" : "offsets";
    const auto idx = [&]() { return which < 0 ? std::string() : "[" + std::to_string(which) + "]"; };
    if (s.start < 0) detail::throw_invalid_argument(fn, name, idx(), ".start=", s.start, " must be >= 0");
    if (s.stop < s.start || s.stop - s.start != length)
      detail::throw_invalid_argument(fn, name, idx(), " slice(", s.start, ", ", s.stop, ") has length ",
                                     s.stop - s.start, ", x has L=", length);
    if (s.stop > seq_len())
      detail::throw_invalid_argument(fn, name, idx(), ".stop=", s.stop, " is past seq_len=", seq_len(),
                                     " (last position ", s.stop - 1, ")");
  }

  template <class T>
  tensor<T, 4> apply(const tensor<T, 4>& x, const positions& pos) const {
    tensor<T, 4> out(x.dimensions());
    apply_rope(cache_, x, out, pos);
    return out;
  }

  rope_cache<float> cache_;
  bool traditional_;
};

}  // namespace tiny_llm

POSENC_END_NAMESPACE
