// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// What the additive encodings (sinusoidal, learned) share outside their kernels: the (N, L, D) view adapter,
// the argument checks, and inverted dropout, whose draws are one sequential random stream and so stay in
// baseline code (the kernels in detail/kernels/add-inl.hpp do the evaluation path).
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <type_traits>
#include <utility>

#include "posenc/config.hpp"
#include "posenc/detail/check.hpp"
#include "posenc/detail/kernels/params.hpp"
#include "posenc/detail/math/random.hpp"
#include "posenc/detail/simd/base.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/status.hpp"
#include "posenc/tensor_view.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail {

/// The (N, L, D) view of a rank-3 view or tensor (N, L, D), or of a rank-2 one (L, D) as N = 1. No copy.
template <class X>
auto as_nld(X&& x) {
  auto v = as_view(x);
  using V = decltype(v);
  using T = typename V::element_type;
  static_assert(V::rank == 2 || V::rank == 3, "posenc: additive encodings take x of rank 3 (N, L, D) or 2 (L, D)");
  if constexpr (V::rank == 3) {
    return v;
  } else {
    using A = std::array<index_t, 3>;
    return strided_view<T, 3>(v.data(), A{1, v.extent(0), v.extent(1)}, A{0, v.stride(0), v.stride(1)});
  }
}

template <class In, class Out>
auto make_add_target(In&& in, Out&& out) {
  auto vo = as_nld(std::forward<Out>(out));
  using T = typename decltype(vo)::element_type;
  static_assert(!std::is_const_v<T>, "posenc: the output tensor must be writable");
  strided_view<const T, 3> vi = as_nld(std::forward<In>(in));
  return add_target<T>{vi, vo};
}

/// Shape, stride and aliasing checks of an additive call: D = dim, same shape, in place or disjoint.
template <class T>
status check_add_target(const char* fn, const char* in_name, const char* out_name, index_t dim, const add_target<T>& t) {
  POSENC_TRY(check_view(fn, in_name, t.in, false));
  POSENC_TRY(check_view(fn, out_name, t.out, true));
  if (t.in.extent(2) != dim)
    return fail(fn, in_name, " feature dim (last extent)=", t.in.extent(2), " does not match dim=", dim);
  if (t.in.extents() != t.out.extents())
    return fail(fn, out_name, " shape (", t.out.extent(0), ", ", t.out.extent(1), ", ", t.out.extent(2),
                ") does not match ", in_name, " shape (", t.in.extent(0), ", ", t.in.extent(1), ", ", t.in.extent(2),
                ")");
  if (!same_view(t.in, t.out) && spans_overlap(t.in, t.out))
    return fail(fn, out_name, " overlaps ", in_name, " without being the same view (in place)");
  return {};
}

/// Inverted dropout (Srivastava et al. 2014; PyTorch `nn.Dropout`): an element is kept with probability
/// 1 - p and then scaled by 1/(1 - p). One draw per element: dropped iff uniform01(rng) < p.
struct dropout_draw {
  std::mt19937_64* rng = nullptr;  ///< null: no dropout (eval mode or p = 0)
  double p = 0.0;
  double keep_scale = 1.0;  ///< 1/(1-p); 0 when p = 1 (everything dropped)

  /// Active iff train, p > 0 and rng is not null.
  static dropout_draw make(bool train, double p, std::mt19937_64* rng) {
    dropout_draw d;
    if (train && p > 0.0 && rng != nullptr) {
      d.rng = rng;
      d.p = p;
      d.keep_scale = p < 1.0 ? 1.0 / (1.0 - p) : 0.0;
    }
    return d;
  }
  bool active() const { return rng != nullptr; }
  bool keep() const { return math::uniform01(*rng) >= p; }
};

/// out = in + scale * table[p + row_offset, :] for every token in A, then inverted dropout with one draw per
/// element in (n, l, d) order, each element rounded to T once. The draws make this sequential: the dropout
/// path of the modules (training only).
template <class A, class C, class Pos, class T>
void table_rows_dropout(const C* table, index_t dim, index_t row_offset, A scale, const Pos& pos,
                        const add_target<T>& t, const dropout_draw& drop) {
  const A ks = static_cast<A>(drop.keep_scale);
  for (index_t n = 0; n < t.out.extent(0); ++n)
    for (index_t l = 0; l < t.out.extent(1); ++l) {
      const C* row = table + (pos.at(n, l) + row_offset) * dim;
      const T* x = &t.in(n, l, 0);
      T* y = &t.out(n, l, 0);
      for (index_t i = 0; i < dim; ++i) {
        const A v = simd::load_as<A>(x[i * t.in.stride(2)]) + scale * static_cast<A>(row[i]);
        y[i * t.out.stride(2)] = simd::store_as<T>(drop.keep() ? v * ks : A(0));
      }
    }
}

}  // namespace detail
POSENC_END_NAMESPACE
