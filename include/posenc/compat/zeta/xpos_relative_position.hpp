// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// The C++ counterparts of
//   package kyegomez/zeta (PyPI zetascale), module zeta/nn/embeddings/xpos_relative_position.py (`from zeta
//   import XPOS, fixed_pos_embedding, apply_rotary_pos_emb`), a copy of Microsoft torchscale's
//   torchscale/component/xpos_relative_position.py: fixed_pos_embedding, rotate_every_two,
//   duplicate_interleave, apply_rotary_pos_emb, class XPOS(head_dim, scale_base=512).
// Version: the seeds (shared/seeds/000_*, the module's documentation page) pin no release or commit; the
// behaviour mirrored is the one that page and the golden generator tests/golden/gen_golden.py describe.
// Same results as the Python, built on posenc's rope_cache and xpos_plan / apply_xpos; angles and scales are
// formed in double and rounded to the storage type once (torch works in float32). Part of
// posenc/compat/zeta.hpp; not in the umbrella header posenc/posenc.hpp.
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>
#include <type_traits>
#include <utility>

#include "posenc/compat/common.hpp"
#include "posenc/config.hpp"
#include "posenc/detail/math/rotate.hpp"
#include "posenc/detail/simd/base.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/error.hpp"  // argument_error, which the throwing forms throw
#include "posenc/eigen.hpp"
#include "posenc/positions.hpp"
#include "posenc/rope.hpp"
#include "posenc/status.hpp"
#include "posenc/tensor_view.hpp"
#include "posenc/xpos.hpp"

POSENC_BEGIN_NAMESPACE

namespace compat {

namespace detail {

/// The table type a cos/sin cache for storage T uses: double for double, float otherwise.
template <class T>
using table_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

/// torchscale apply_rotary_pos_emb's shape checks: x (B, L, D), D even, sin and cos (L, D/2).
template <class T>
status check_rotary_args(const char* fn, const row_major_tensor<T, 3>& x, const row_major_tensor<T, 2>& sin,
                         const row_major_tensor<T, 2>& cos) {
  const auto l = static_cast<index_t>(x.dimension(1));
  const auto d = static_cast<index_t>(x.dimension(2));
  if (d % 2 != 0) return posenc::detail::fail(fn, "x last dimension D=", d, " must be even");
  const auto check = [&](const char* name, const row_major_tensor<T, 2>& m) -> status {
    if (m.dimension(0) != l || m.dimension(1) != d / 2)
      return posenc::detail::fail(fn, name, " shape (", m.dimension(0), ", ", m.dimension(1), ") must be (L, D/2)=(",
                                  l, ", ", d / 2, ")");
    return {};
  };
  POSENC_TRY(check("sin", sin));
  return check("cos", cos);
}

/// torchscale apply_rotary_pos_emb after validation: pair i of token (b, l) rotated by the library's
/// rotate_pair with c = scale_at(l, i) cos[l][i], s = scale_at(l, i) sin[l][i], in acc_t<T> arithmetic.
template <class T, class Scale>
row_major_tensor<T, 3> rotary_pos_emb(const row_major_tensor<T, 3>& x, const row_major_tensor<T, 2>& sin,
                                      const row_major_tensor<T, 2>& cos, const Scale& scale_at) {
  using A = posenc::detail::simd::acc_t<T>;
  using posenc::detail::simd::load_as;
  using posenc::detail::simd::store_as;
  const auto b = static_cast<index_t>(x.dimension(0));
  const auto l = static_cast<index_t>(x.dimension(1));
  const auto half = static_cast<index_t>(x.dimension(2)) / 2;
  row_major_tensor<T, 3> out(x.dimensions());
  for (index_t n = 0; n < b; ++n)
    for (index_t t = 0; t < l; ++t)
      for (index_t i = 0; i < half; ++i) {
        const A s = scale_at(t, i);
        A ya;
        A yb;
        posenc::detail::math::rotate_pair(load_as<A>(x(n, t, 2 * i)), load_as<A>(x(n, t, 2 * i + 1)),
                                          load_as<A>(cos(t, i)) * s, load_as<A>(sin(t, i)) * s, ya, yb);
        out(n, t, 2 * i) = store_as<T>(ya);
        out(n, t, 2 * i + 1) = store_as<T>(yb);
      }
  return out;
}

}  // namespace detail

/// kyegomez/zeta's rotary APIs (zeta.nn.embeddings).
namespace zeta {

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
/// posenc::compat::zeta::sin_cos<float> sc;
/// if (posenc::status s = posenc::compat::zeta::try_fixed_pos_embedding(L, D / 2, sc); !s) return s;
/// ```
template <class T>
status try_fixed_pos_embedding(index_t seq_len, index_t dim, sin_cos<T>& out) noexcept {
  constexpr const char* fn = "compat::zeta::fixed_pos_embedding";
  return posenc::detail::guard_alloc(fn, [&]() -> status {
    if (seq_len < 0) return posenc::detail::fail(fn, "seq_len=", seq_len, " must be >= 0");
    if (dim < 0) return posenc::detail::fail(fn, "dim=", dim, " must be >= 0");
    if (dim > std::numeric_limits<index_t>::max() / 2) return posenc::detail::fail(fn, "dim=", dim, " is too large");
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
    using C = detail::table_t<T>;
    rope_cache<C> cache;
    POSENC_TRY(rope_cache<C>::try_create(std::move(plan), seq_len, cache));
    sin_cos<T> r{tensor<T, 2>(seq_len, dim), tensor<T, 2>(seq_len, dim)};
    const index_t n = seq_len * dim;
    for (index_t k = 0; k < n; ++k) {
      r.sin.data()[k] = posenc::detail::simd::store_as<T>(cache.sin_data()[k]);
      r.cos.data()[k] = posenc::detail::simd::store_as<T>(cache.cos_data()[k]);
    }
    out = std::move(r);
    return {};
  });
}

/// The throwing form of try_fixed_pos_embedding: argument_error with the same message.
template <class T = float>
sin_cos<T> fixed_pos_embedding(index_t seq_len, index_t dim) {
  sin_cos<T> out;
  posenc::detail::throw_if_error(try_fixed_pos_embedding(seq_len, dim, out));
  return out;
}

/// torchscale `fixed_pos_embedding(x)` with the Python's signature: only x's shape (seq_len, dim) and scalar
/// type are used.
template <class T>
status try_fixed_pos_embedding(const tensor<T, 2>& x, sin_cos<T>& out) noexcept {
  return try_fixed_pos_embedding(static_cast<index_t>(x.dimension(0)), static_cast<index_t>(x.dimension(1)), out);
}
/// The throwing form of try_fixed_pos_embedding(x, out): argument_error with the same message.
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
  static_assert(Rank >= 1, "posenc::compat::zeta::rotate_every_two: rank >= 1");
  constexpr const char* fn = "compat::zeta::rotate_every_two";
  return posenc::detail::guard_alloc(fn, [&]() -> status {
    const auto d = static_cast<index_t>(x.dimension(Rank - 1));
    if (d % 2 != 0) return posenc::detail::fail(fn, "x last dimension=", d, " must be even");
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
  posenc::detail::throw_if_error(try_rotate_every_two(x, out));
  return out;
}

/// torchscale `duplicate_interleave(m)`: m (R, C) -> (R, 2C) with out[r][2c] = out[r][2c+1] = m[r][c]
/// (`m.view(-1, 1).repeat(1, 2).view(R, -1)`, a `repeat_interleave(2, dim=1)`), into `out`. Every shape is
/// accepted: the try_ form fails only with out_of_memory (std::bad_alloc from the throwing form).
template <class T>
status try_duplicate_interleave(const tensor<T, 2>& m, tensor<T, 2>& out) noexcept {
  return posenc::detail::guard_alloc("compat::zeta::duplicate_interleave", [&]() -> status {
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
  posenc::detail::throw_if_error(try_duplicate_interleave(m, out));
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
  constexpr const char* fn = "compat::zeta::apply_rotary_pos_emb";
  return posenc::detail::guard_alloc(fn, [&]() -> status {
    POSENC_TRY(detail::check_rotary_args(fn, x, sin, cos));
    using A = posenc::detail::simd::acc_t<T>;
    const A s = static_cast<A>(scale);
    out = detail::rotary_pos_emb(x, sin, cos, [s](index_t, index_t) { return s; });
    return {};
  });
}

/// The throwing form of try_apply_rotary_pos_emb: argument_error with the same message.
template <class T>
tensor<T, 3> apply_rotary_pos_emb(const tensor<T, 3>& x, const tensor<T, 2>& sin, const tensor<T, 2>& cos,
                                  double scale = 1.0) {
  tensor<T, 3> out;
  posenc::detail::throw_if_error(try_apply_rotary_pos_emb(x, sin, cos, scale, out));
  return out;
}

/// torchscale `apply_rotary_pos_emb(x, sin, cos, scale)` with a per-position, per-pair `scale` tensor of
/// shape (L, D/2), as XPOS passes it: c = scale[l][i] cos[l][i], s = scale[l][i] sin[l][i] (see above).
/// Into `out`; returns invalid_argument if D is odd or sin, cos or scale are not (L, D/2).
template <class T>
status try_apply_rotary_pos_emb(const tensor<T, 3>& x, const tensor<T, 2>& sin, const tensor<T, 2>& cos,
                                const tensor<T, 2>& scale, tensor<T, 3>& out) noexcept {
  constexpr const char* fn = "compat::zeta::apply_rotary_pos_emb";
  return posenc::detail::guard_alloc(fn, [&]() -> status {
    POSENC_TRY(detail::check_rotary_args(fn, x, sin, cos));
    if (scale.dimension(0) != x.dimension(1) || 2 * scale.dimension(1) != x.dimension(2))
      return posenc::detail::fail(fn, "scale shape (", scale.dimension(0), ", ", scale.dimension(1),
                                  ") must be (L, D/2)=(", x.dimension(1), ", ", x.dimension(2) / 2, ")");
    using A = posenc::detail::simd::acc_t<T>;
    out = detail::rotary_pos_emb(
        x, sin, cos, [&scale](index_t t, index_t i) { return posenc::detail::simd::load_as<A>(scale(t, i)); });
    return {};
  });
}

/// The throwing form of the scale-tensor try_apply_rotary_pos_emb: argument_error with the same message.
template <class T>
tensor<T, 3> apply_rotary_pos_emb(const tensor<T, 3>& x, const tensor<T, 2>& sin, const tensor<T, 2>& cos,
                                  const tensor<T, 2>& scale) {
  tensor<T, 3> out;
  posenc::detail::throw_if_error(try_apply_rotary_pos_emb(x, sin, cos, scale, out));
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
/// posenc::compat::zeta::xpos xp(64);
/// auto q2 = xp.forward(q);                                  // q: (B*H, L, 64)
/// auto k2 = xp.forward(k, /*offset=*/0, /*downscale=*/true);
/// ```
class xpos {
 public:
  /// Throws argument_error unless head_dim is even and > 0 and scale_base is finite and > 0.
  explicit xpos(index_t head_dim, double scale_base = 512) {
    posenc::detail::throw_if_error(try_make_plan(head_dim, scale_base, plan_));
  }

  /// The constructor without exceptions (scale_base: the Python's default is 512): `out` holds the module on
  /// success, is unchanged on error.
  ///
  /// **Example**
  /// ```
  /// posenc::compat::zeta::xpos xp;
  /// if (posenc::status s = posenc::compat::zeta::xpos::try_create(64, 512, xp); !s) return s;
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
    constexpr const char* fn = "compat::zeta::xpos::forward";
    return posenc::detail::guard_alloc(fn, [&]() -> status {
      if (plan_.empty()) return posenc::detail::fail(fn, detail::empty_message);
      const auto l = static_cast<index_t>(x.dimension(1));
      const auto d = static_cast<index_t>(x.dimension(2));
      if (d != plan_.head_dim())
        return posenc::detail::fail(fn, "x last dimension D=", d, " does not match head_dim=", plan_.head_dim());
      if (offset < 0) return posenc::detail::fail(fn, "offset=", offset, " must be >= 0");
      if (offset > std::numeric_limits<index_t>::max() - l - 1)
        return posenc::detail::fail(fn, "offset=", offset, " + length ", l, " overflows int64");
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
    posenc::detail::throw_if_error(try_forward(x, offset, downscale, out));
    return out;
  }

  /// `xpos(x, offset, downscale)`, as calling the nn.Module.
  template <class T>
  tensor<T, 3> operator()(const tensor<T, 3>& x, index_t offset = 0, bool downscale = false) const {
    return forward(x, offset, downscale);
  }

  /// The xpos_plan (interleaved, gamma 0.4, base 10000) for in-place use with apply_xpos / apply_xpos_qk.
  const xpos_plan& plan() const { return plan_; }
  /// The constructor's head_dim: D of x, every feature rotated.
  index_t head_dim() const { return plan_.head_dim(); }
  /// The constructor's scale_base: the scale is zeta^((p - C)/scale_base).
  double scale_base() const { return plan_.config().scale_base; }

 private:
  /// Validates and builds the plan into `out` (unchanged on error).
  static status try_make_plan(index_t head_dim, double scale_base, xpos_plan& out) noexcept {
    constexpr const char* fn = "compat::zeta::xpos";
    return posenc::detail::guard_alloc(fn, [&]() -> status {
      if (head_dim <= 0 || head_dim % 2 != 0)
        return posenc::detail::fail(fn, "head_dim=", head_dim, " must be even and > 0");
      if (!(std::isfinite(scale_base) && scale_base > 0.0))
        return posenc::detail::fail(fn, "scale_base=", scale_base, " must be finite and > 0");
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

}  // namespace compat

POSENC_END_NAMESPACE
