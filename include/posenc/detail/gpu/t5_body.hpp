// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// The per-block work of the GPU T5 bias kernel (see rope_body.hpp for the scheme): one block per (batch, head,
// query) row of a [N, H, Lq, Lk] view, its threads along the keys. The bucket is math::t5_bucketer's (T5's
// relative_position_bucket with the reference's float32 steps), the value the table's [bucket, head] entry;
// written, or added to the score in double and rounded once.
#pragma once

#include "posenc/config.hpp"
#include "posenc/detail/gpu/rope_body.hpp"
#include "posenc/detail/math/t5_bucket.hpp"
#include "posenc/types.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail::gpu {

template <class T, class C>
struct t5_params {
  view4<T> scores;        ///< [N, H, Lq, Lk]
  const C* table;         ///< [num_buckets, H] at table[b * stride[0] + h * stride[1]]
  index_t table_stride[2];
  math::t5_bucketer bucket;
  positions pos;          ///< query positions over (N, Lq)
  bool add;
};

template <class T, class C>
POSENC_HOST_DEVICE inline void t5_block(const t5_params<T, C>& p, index_t block, index_t thread, index_t threads) {
  const index_t heads = p.scores.extent[1], lq = p.scores.extent[2], lk = p.scores.extent[3];
  const index_t i = block % lq, h = (block / lq) % heads, n = block / (lq * heads);
  const index_t q = p.pos.at(n, i);
  for (index_t j = thread; j < lk; j += threads) {
    const index_t b = p.bucket(j - q);
    const double v = load_as<double>(p.table[b * p.table_stride[0] + h * p.table_stride[1]]);
    T* e = p.scores.at(n, h, i, j);
    *e = store_as<T>(p.add ? load_as<double>(*e) + v : v);
  }
}

}  // namespace detail::gpu
POSENC_END_NAMESPACE
