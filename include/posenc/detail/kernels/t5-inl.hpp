// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// The T5 bias kernel, written once over the op list (no include guard: see all-inl.hpp): one driver walks the
// (batch, head, query) rows of a [N, H, Lq, Lk] view and writes or adds table[bucket(j - q), h] along the key
// axis, q the query's position. Along a row the bucket is constant over runs of keys (detail::t5_runs), so each
// row is at most 2 nb vector fills (or vector adds) of one value, head by head with unit stride. Writing the
// bias tensor and adding it to attention scores are the same loop, as for ALiBi.

POSENC_BEGIN_NAMESPACE
namespace detail {
namespace POSENC_TARGET_NS {

/// row[k * stride] = value (Add: row[k * stride] + value) for k in [begin, end), in A = float, or double if the
/// table or the row is double, rounded to T once.
template <bool Add, class T, class C>
void t5_span(T* row, index_t stride, index_t begin, index_t end, C value) {
  using A = simd::acc2_t<T, C>;
  const A v = static_cast<A>(value);
  index_t j = begin;
  if (stride == 1) {
    const simd::lanes<A, isa_tag> d;
    constexpr index_t W = simd::vec<A, isa_tag>::width;
    const auto x = set1(d, v);
    for (; j + W <= end; j += W) {
      if constexpr (Add) {
        store(add(load(d, row + j), x), row + j);
      } else {
        store(x, row + j);
      }
    }
  }
  const simd::lanes<A, simd::tail<isa_tag>> d1;
  const auto x1 = set1(d1, v);
  for (; j < end; ++j) {
    if constexpr (Add) {
      store(add(load(d1, row + j * stride), x1), row + j * stride);
    } else {
      store(x1, row + j * stride);
    }
  }
}

/// out[n, h, i, j] (=|+=) table[bucket(j - q) * heads + h], q = pos.at(n, i), from a [num_buckets, heads]
/// table. Keys j <= q sit at distance n = q - j (bucket b of the "past" direction for n in [first[b],
/// first[b+1])); keys j > q at n = j - q, bucket 0 when causal, nb + b when bidirectional.
/// Preconditions: everything validated by the public entry (extent 1 = heads, positions >= 0).
template <bool Add, class T, class C>
void t5_rows(target, std::bool_constant<Add>, const C* table, index_t heads, const t5_runs& runs, const positions& pos,
             const strided_view<T, 4>& out) {
  const index_t lq = out.extent(2);
  const index_t lk = out.extent(3);
  const index_t sk = out.stride(3);
  const std::int64_t* first = runs.first;
  for (index_t n = 0; n < out.extent(0); ++n) {
    for (index_t h = 0; h < heads; ++h) {
      for (index_t i = 0; i < lq; ++i) {
        T* row = out.data() + n * out.stride(0) + h * out.stride(1) + i * out.stride(2);
        const index_t q = pos.at(n, i);
        // Keys j in [0, min(q, lk - 1)]: n = q - j falls as j rises; bucket b covers j in
        // (q - first[b+1], q - first[b]].
        const index_t past_end = q < lk ? q + 1 : lk;  // one past the last key at or before the query
        for (std::int64_t b = runs.nb - 1; b >= 0; --b) {
          // j > q - first[b+1] and j <= q - first[b], clipped to [0, past_end). The last bucket has no upper
          // bound: first[nb] = INT64_MAX stands for it, and the distance INT64_MAX itself (key 0 of a query at
          // INT64_MAX) is still in it.
          const index_t hi_n = first[b + 1];  // exclusive distance bound
          const index_t j0 = (b == runs.nb - 1 || hi_n > q) ? 0 : q - hi_n + 1;
          // (q - first[b] < past_end - 1: the same test as q - first[b] + 1 < past_end without overflowing at
          // q = INT64_MAX.)
          const index_t j1 = first[b] > q ? 0 : (q - first[b] < past_end - 1 ? q - first[b] + 1 : past_end);
          if (j0 < j1) t5_span<Add>(row, sk, j0, j1, table[b * heads + h]);
        }
        if (past_end >= lk) continue;
        if (!runs.bidirectional) {
          t5_span<Add>(row, sk, past_end, lk, table[h]);  // causal: every later key is bucket 0
          continue;
        }
        // Keys j > q: n = j - q rises with j; bucket nb + b covers j in [q + first[b], q + first[b+1]).
        for (std::int64_t b = 0; b < runs.nb; ++b) {
          const index_t lo = first[b] < 1 ? 1 : first[b];  // n >= 1 after the query
          if (lo > lk - 1 - q) break;
          const index_t j0 = q + lo;
          const index_t j1 = first[b + 1] > lk - q ? lk : q + first[b + 1];
          if (j0 < j1) t5_span<Add>(row, sk, j0, j1, table[(runs.nb + b) * heads + h]);
        }
      }
    }
  }
}

}  // namespace POSENC_TARGET_NS
}  // namespace detail
POSENC_END_NAMESPACE
