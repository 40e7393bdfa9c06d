// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// T5 bias expansion, written once over the op list (no include guard: see all-inl.hpp). bias[h, i, j] =
// table[bucket(j - (i + offset)), h]: along a row the bucket is constant over runs of keys (detail::t5_runs),
// so each row is at most 2 nb vector fills, written head by head with unit stride.

POSENC_BEGIN_NAMESPACE
namespace detail {
namespace POSENC_TARGET_NS {

/// row[k * stride] = value for k in [begin, end), value rounded to T once.
template <class T, class C>
void fill_span(T* row, index_t stride, index_t begin, index_t end, C value) {
  using A = simd::acc2_t<T, C>;
  const A v = static_cast<A>(value);
  index_t j = begin;
  if (stride == 1) {
    const simd::lanes<A, isa_tag> d;
    constexpr index_t W = simd::vec<A, isa_tag>::width;
    const auto x = set1(d, v);
    for (; j + W <= end; j += W) store(x, row + j);
  }
  const simd::lanes<A, simd::scalar> d1;
  for (; j < end; ++j) store(set1(d1, v), row + j * stride);
}

/// bias [H, Lq, Lk] from a [num_buckets, H] table. For query q = i + offset: keys j <= q sit at distance
/// n = q - j (bucket b of the "past" direction for n in [first[b], first[b+1])); keys j > q at n = j - q,
/// bucket 0 when causal, nb + b when bidirectional.
template <class T, class C>
void t5_expand(target, const C* table, index_t heads, const t5_runs& runs, index_t offset, const strided_view<T, 3>& out) {
  const index_t lq = out.extent(1);
  const index_t lk = out.extent(2);
  const index_t sk = out.stride(2);
  const std::int64_t* first = runs.first;
  for (index_t h = 0; h < heads; ++h) {
    for (index_t i = 0; i < lq; ++i) {
      T* row = out.data() + h * out.stride(0) + i * out.stride(1);
      const index_t q = i + offset;
      // Keys j in [0, min(q, lk - 1)]: n = q - j falls as j rises; bucket b covers j in (q - first[b+1], q - first[b]].
      const index_t past_end = q < lk ? q + 1 : lk;  // one past the last key at or before the query
      for (std::int64_t b = runs.nb - 1; b >= 0; --b) {
        // j > q - first[b+1] and j <= q - first[b], clipped to [0, past_end).
        const index_t hi_n = first[b + 1];  // exclusive distance bound (INT64_MAX for the last bucket)
        const index_t j0 = hi_n > q ? 0 : q - hi_n + 1;
        const index_t j1 = first[b] > q ? 0 : (q - first[b] + 1 < past_end ? q - first[b] + 1 : past_end);
        if (j0 < j1) fill_span(row, sk, j0, j1, table[b * heads + h]);
      }
      if (past_end >= lk) continue;
      if (!runs.bidirectional) {
        fill_span(row, sk, past_end, lk, table[h]);  // causal: every later key is bucket 0
        continue;
      }
      // Keys j > q: n = j - q rises with j; bucket nb + b covers j in [q + first[b], q + first[b+1]).
      for (std::int64_t b = 0; b < runs.nb; ++b) {
        const index_t lo = first[b] < 1 ? 1 : first[b];  // n >= 1 after the query
        if (lo > lk - 1 - q) break;
        const index_t j0 = q + lo;
        const index_t j1 = first[b + 1] > lk - q ? lk : q + first[b + 1];
        if (j0 < j1) fill_span(row, sk, j0, j1, table[(runs.nb + b) * heads + h]);
      }
    }
  }
}

}  // namespace POSENC_TARGET_NS
}  // namespace detail
POSENC_END_NAMESPACE
