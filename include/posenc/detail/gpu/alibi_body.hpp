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

/// Slopes from the formula: local head h is global head head_begin + h of num_heads.
struct alibi_formula {
  index_t num_heads;
  index_t head_begin;
  double max_bias;
  POSENC_HOST_DEVICE double operator()(index_t, index_t h) const {
    return math::alibi_slope(head_begin + h, num_heads, max_bias);
  }
};

/// Slopes read from an [N, H] view of any storage type (a [H] view has batch stride 0).
template <class S>
struct alibi_slope_view {
  const S* data;
  index_t stride[2];
  POSENC_HOST_DEVICE double operator()(index_t n, index_t h) const {
    return load<double>(data + n * stride[0] + h * stride[1]);
  }
};

template <class T, class Slopes>
struct alibi_params {
  view4<T> scores;  ///< [N, H, Lq, Lk]
  Slopes slopes;
  pos_params pos;   ///< query positions over (N, Lq)
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
      store(e, -HUGE_VAL);  // not numeric_limits: a constexpr host function, not callable from device code
      continue;
    }
    const double s = j > q && p.symmetric ? -slope : slope;
    const double d = static_cast<double>(j - q);
    store(e, p.add ? std::fma(s, d, load<double>(e)) : s * d);
  }
}

}  // namespace detail::gpu
POSENC_END_NAMESPACE
