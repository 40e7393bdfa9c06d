// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// Additive encodings (sinusoidal, learned): out[n, l, :] = in[n, l, :] + scale * row(position(n, l)), where
// the row is formed on the fly (sinusoid) or read from a table, written once over a per-ISA row kernel, plus
// the (N, L, D) view adapter and the inverted-dropout draw the modules share.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <type_traits>
#include <utility>

#include "posenc/config.hpp"
#include "posenc/detail/check.hpp"
#include "posenc/detail/math/inv_freq.hpp"
#include "posenc/detail/math/random.hpp"
#include "posenc/detail/math/sinusoid.hpp"
#include "posenc/detail/simd/vec.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/positions.hpp"
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

/// An input/output pair of (N, L, D) views; in place when both address the same elements.
template <class T>
struct add_target {
  strided_view<const T, 3> in;
  strided_view<T, 3> out;
  bool in_place() const { return static_cast<const void*>(in.data()) == static_cast<const void*>(out.data()); }
};

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
void check_add_target(const char* fn, const char* in_name, const char* out_name, index_t dim, const add_target<T>& t) {
  check_view(fn, in_name, t.in, false);
  check_view(fn, out_name, t.out, true);
  if (t.in.extent(2) != dim)
    throw_invalid_argument(fn, in_name, " feature dim (last extent)=", t.in.extent(2), " does not match dim=", dim);
  if (t.in.extents() != t.out.extents())
    throw_invalid_argument(fn, out_name, " shape (", t.out.extent(0), ", ", t.out.extent(1), ", ", t.out.extent(2),
                           ") does not match ", in_name, " shape (", t.in.extent(0), ", ", t.in.extent(1), ", ",
                           t.in.extent(2), ")");
  if (!same_view(t.in, t.out) && spans_overlap(t.in, t.out))
    throw_invalid_argument(fn, out_name, " overlaps ", in_name, " without being the same view (in place)");
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

template <class Isa>
struct add_row_kernel;

/// The portable reference: out[i] = in[i] + scale * v[i] in A, any feature stride; with dropout, each element
/// then kept (times 1/(1-p)) or zeroed by one draw, so the sum is rounded to T once.
template <>
struct add_row_kernel<simd::scalar> {
  template <class A, class T, class V>
  static void run(const T* in, index_t in_stride, T* out, index_t out_stride, index_t count, const V* v, A scale,
                  const dropout_draw& drop) {
    if (!drop.active()) {
      for (index_t i = 0; i < count; ++i)
        out[i * out_stride] = simd::store_as<T>(simd::load_as<A>(in[i * in_stride]) + scale * static_cast<A>(v[i]));
      return;
    }
    const A ks = static_cast<A>(drop.keep_scale);
    for (index_t i = 0; i < count; ++i) {
      const A y = simd::load_as<A>(in[i * in_stride]) + scale * static_cast<A>(v[i]);
      out[i * out_stride] = simd::store_as<T>(drop.keep() ? y * ks : A(0));
    }
  }
};

/// Pairs per chunk of frequencies and sin/cos values held on the stack (2 x 128 doubles of values and 128 of
/// frequencies: in L1, and D <= 256 in one chunk).
inline constexpr index_t sinusoid_chunk = 128;

/// Parameters of a sinusoid source (validated by the public entry).
struct sinusoid_params {
  index_t dim = 0;
  double base = 10000.0;
  bool concat = false;
  bool has_padding = false;
  index_t padding_idx = 0;
};

/// Features [first, first + count) of one row: out = in + v (in double), or out = v without an input.
template <class Isa, class T>
void write_segment(const T* in_row, index_t in_stride, index_t first, T* out_row, index_t out_stride, index_t count,
                   const double* v) {
  T* o = out_row + first * out_stride;
  if (in_row == nullptr) {
    for (index_t i = 0; i < count; ++i) o[i * out_stride] = simd::store_as<T>(v[i]);
    return;
  }
  add_row_kernel<Isa>::template run<double>(in_row + first * in_stride, in_stride, o, out_stride, count, v, 1.0,
                                             dropout_draw{});
}

/// out = in + T[p] (or out = T[p] when `in` is null, a table) for every token: T[p, :] formed from sin/cos in
/// double, the sum rounded to the storage type once. Chunks of pairs are the outer loop so the frequencies
/// are formed once per call, on the stack. A padding position gives a zero row.
template <class Isa, class Pos, class T>
void sinusoid_rows(const sinusoid_params& sp, const Pos& pos, const strided_view<const T, 3>& in,
                   const strided_view<T, 3>& out) {
  const index_t pairs = sp.dim / 2;
  const index_t n_batch = out.extent(0);
  const index_t n_len = out.extent(1);
  const bool has_in = in.data() != nullptr;
  double w[sinusoid_chunk];
  double v[2 * sinusoid_chunk];
  const double zeros[2 * sinusoid_chunk] = {};
  for (index_t b = 0; b < pairs; b += sinusoid_chunk) {
    const index_t e = b + sinusoid_chunk < pairs ? b + sinusoid_chunk : pairs;
    const index_t m = e - b;
    for (index_t i = b; i < e; ++i) w[i - b] = math::sinusoid_inv_freq(sp.base, i, sp.dim, sp.concat);
    // Sequence-major order, and the row reused while the position repeats: with an offset (the same
    // positions in every sequence) sin/cos are formed once per position, not once per token (N times fewer
    // sincos, which dominate this kernel).
    index_t last_p = -1;
    for (index_t l = 0; l < n_len; ++l) {
      for (index_t n = 0; n < n_batch; ++n) {
        const index_t p = pos.at(n, l);
        const bool zero = sp.has_padding && p == sp.padding_idx;
        if (zero && has_in && static_cast<const void*>(in.data()) == static_cast<const void*>(out.data())) continue;
        const double* sv = zeros;
        if (!zero && p == last_p) {
          sv = v;
        } else if (!zero) {
          last_p = p;
          for (index_t k = 0; k < m; ++k) {
            const double th = math::angle(p, w[k]);
            // interleaved: [s0, c0, s1, c1, ...]; concat: [s0 .. s_{m-1}] then [c0 .. c_{m-1}]
            v[sp.concat ? k : 2 * k] = std::sin(th);
            v[sp.concat ? m + k : 2 * k + 1] = std::cos(th);
          }
          sv = v;
        }
        // Zero input when building a table: the same kernel adds to a row of zeros.
        const T* in_row = has_in ? &in(n, l, 0) : nullptr;
        const index_t is = has_in ? in.stride(2) : 0;
        T* out_row = &out(n, l, 0);
        const index_t os = out.stride(2);
        if (!sp.concat) {
          write_segment<Isa>(in_row, is, 2 * b, out_row, os, 2 * m, sv);
        } else {
          write_segment<Isa>(in_row, is, b, out_row, os, m, sv);
          write_segment<Isa>(in_row, is, pairs + b, out_row, os, m, sv + m);
        }
      }
    }
  }
}

/// out = in + scale * table[p + row_offset, :] for every token, then inverted dropout when `drop` is active
/// (draws in (n, l, d) order). The table is [rows, D] contiguous; positions are validated against it.
template <class Isa, class A, class C, class Pos, class T>
void table_rows(const C* table, index_t dim, index_t row_offset, A scale, const Pos& pos, const add_target<T>& t,
                const dropout_draw& drop) {
  for (index_t n = 0; n < t.out.extent(0); ++n)
    for (index_t l = 0; l < t.out.extent(1); ++l) {
      const C* row = table + (pos.at(n, l) + row_offset) * dim;
      add_row_kernel<Isa>::template run<A>(&t.in(n, l, 0), t.in.stride(2), &t.out(n, l, 0), t.out.stride(2), dim, row,
                                           scale, drop);
    }
}

}  // namespace detail
POSENC_END_NAMESPACE
