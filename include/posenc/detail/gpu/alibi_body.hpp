// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// The per-block work of the GPU ALiBi kernels (see rope_body.hpp for the scheme): one block per (batch, head,
// query) row of a [N, H, Lq, Lk] view, its threads along the keys. The same values as the CPU kernel
// (detail/kernels/alibi-inl.hpp): slope * (j - q) in double, fma(slope, j - q, score) when adding, -slope for
// the keys after the query in the symmetric form, -infinity there under a causal mask; one rounding to T. The
// fp32 arithmetic (alibi_arithmetic::fp32): the same in float with the slope rounded to float.
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
  bool fp32;        ///< alibi_arithmetic::fp32 (float and 16-bit T)
};

/// Keys [j0, j0 + G) of one score row `row` (contiguous when G > 1: one vector access per chunk on a device):
/// the score of key j is slope * (j - q) (added to the score with one fma in double), -slope after the query in
/// the symmetric form, -infinity there under a causal mask; one rounding to T.
template <int G, class T, class Slopes>
POSENC_HOST_DEVICE inline void alibi_keys(const alibi_params<T, Slopes>& p, T* row, index_t stride, index_t j0,
                                          index_t q, double slope) {
  T v[G] = {};
  if (p.add) {
    if (G > 1) load_chunk<G>(row + j0, v);
    else v[0] = row[j0 * stride];
  }
  POSENC_DEVICE_UNROLL
  for (int g = 0; g < G; ++g) {
    const index_t j = j0 + g;
    if (j > q && p.causal) {
      v[g] = store_as<T>(-HUGE_VAL);  // not numeric_limits: a constexpr host function, not callable from device code
      continue;
    }
    const double s = j > q && p.symmetric ? -slope : slope;
    if (p.fp32) {
      const auto sf = static_cast<float>(s);
      const auto d = static_cast<float>(j - q);
      v[g] = store_as<T>(p.add ? std::fma(sf, d, load_as<float>(v[g])) : sf * d);
      continue;
    }
    const double d = static_cast<double>(j - q);
    v[g] = store_as<T>(p.add ? std::fma(s, d, load_as<double>(v[g])) : s * d);
  }
  if (G > 1) store_chunk<G>(row + j0, v);
  else row[j0 * stride] = v[0];
}

/// Block `block` = (n * H + h) * Lq + i; thread `thread` of `threads` takes every threads-th key, or every
/// threads-th chunk of four keys where the rows allow vector access (contiguous keys, aligned rows, Lk a multiple
/// of four): a thread's loads of one key at a time wait on its previous store (in place), which held an H200 at
/// 0.70 of a copy's bandwidth.
template <class T, class Slopes>
POSENC_HOST_DEVICE inline void alibi_block(const alibi_params<T, Slopes>& p, index_t block, index_t thread,
                                           index_t threads) {
  constexpr int G = 4;
  const index_t heads = p.scores.extent[1], lq = p.scores.extent[2], lk = p.scores.extent[3];
  const index_t i = block % lq, h = (block / lq) % heads, n = block / (lq * heads);
  const index_t q = p.pos.at(n, i);
  const double slope = p.slopes(n, h);
  T* row = p.scores.at(n, h, i, 0);
  if (lk % G == 0 && chunks_aligned<G>(p.scores, 0, 0)) {
    for (index_t j0 = thread * G; j0 < lk; j0 += threads * G) alibi_keys<G>(p, row, 1, j0, q, slope);
    return;
  }
  for (index_t j = thread; j < lk; j += threads) alibi_keys<1>(p, row, p.scores.stride[3], j, q, slope);
}

}  // namespace detail::gpu
POSENC_END_NAMESPACE
