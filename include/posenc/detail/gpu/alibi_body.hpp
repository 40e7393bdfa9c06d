// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// The per-block work of the GPU ALiBi kernels (see rope_body.hpp for the scheme): one block per (batch, head,
// query) row of a [N, H, Lq, Lk] view, its threads along the keys. The same values as the CPU kernel
// (detail/kernels/alibi-inl.hpp): slope * (j - q) in double, fma(slope, j - q, score) when adding, -slope for
// the keys after the query in the symmetric form, -infinity there under a causal mask; one rounding to T.
#pragma once

#include <cmath>
#include <limits>

#include "posenc/config.hpp"
#include "posenc/detail/gpu/rope_body.hpp"
#include "posenc/detail/math/alibi_slopes.hpp"
#include "posenc/types.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail::gpu {

/// Slopes: the CPU kernels' alibi_formula_slopes or alibi_view_slopes<S> (detail/kernels/params.hpp).
template <class T, class Slopes>
struct alibi_params {
  view4<T> scores;  ///< [N, H, Lq, Lk]
  Slopes slopes;
  positions pos;    ///< query positions over (N, Lq)
  bool add;         ///< add to the scores (else write the bias)
  bool symmetric;
  bool causal;
};

/// Block `block` = (n * H + h) * Lq + i; thread `thread` of `threads` takes every threads-th key.
template <class T, class Slopes>
POSENC_HOST_DEVICE inline void alibi_block(const alibi_params<T, Slopes>& p, index_t block, index_t thread,
                                           index_t threads) {
  const index_t heads = p.scores.extent[1], lq = p.scores.extent[2], lk = p.scores.extent[3];
  const index_t i = block % lq, h = (block / lq) % heads, n = block / (lq * heads);
  const index_t q = p.pos.at(n, i);
  const double slope = p.slopes(n, h);
  for (index_t j = thread; j < lk; j += threads) {
    T* e = p.scores.at(n, h, i, j);
    if (j > q && p.causal) {
      *e = store_as<T>(-HUGE_VAL);  // not numeric_limits: a constexpr host function, not callable from device code
      continue;
    }
    const double s = j > q && p.symmetric ? -slope : slope;
    const double d = static_cast<double>(j - q);
    *e = store_as<T>(p.add ? std::fma(s, d, load_as<double>(*e)) : s * d);
  }
}

}  // namespace detail::gpu
POSENC_END_NAMESPACE
