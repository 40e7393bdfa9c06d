// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// The ALiBi kernel, written once over the op list (no include guard: see all-inl.hpp): one driver walks
// (batch, head, query) rows of a [N, H, Lq, Lk] view and writes or adds slope * (j - q) along the key axis,
// q the query's position. Writing a bias tensor and adding to attention scores are the same loop.

POSENC_BEGIN_NAMESPACE
namespace detail {
namespace POSENC_TARGET_NS {

/// Lane k of the vectors of distances: k (a constant, loaded once per span).
alignas(64) inline constexpr double alibi_iota[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
alignas(64) inline constexpr float alibi_iota_f[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
inline const double* alibi_iota_of(double) { return alibi_iota; }
inline const float* alibi_iota_of(float) { return alibi_iota_f; }

/// fma(a, b, c) with one rounding. The portable target's fma rounds twice (simd/scalar.hpp); its float lanes
/// form the float fma exactly instead: the product of two floats is exact in double, the sum is rounded to odd
/// in double (TwoSum gives the error, a nonzero error with an even last bit takes the neighbour towards it),
/// and rounding that to float gives the float fma (53 >= 24 + 2 bits; Boldo and Melquiond, "Emulation of FMA
/// and correctly rounded sums: proved algorithms using rounding to odd", IEEE TC 2008). So the fp32
/// arithmetic and the float lanes of exact slopes give the same bits on every target.
template <class D, class V>
POSENC_ALWAYS_INLINE V alibi_fma(D, V a, V b, V c) {
  return fma(a, b, c);
}
inline simd::vec<float, simd::scalar> alibi_fma(simd::lanes<float, simd::scalar>, simd::vec<float, simd::scalar> a,
                                                simd::vec<float, simd::scalar> b, simd::vec<float, simd::scalar> c) {
  const double p = static_cast<double>(a.v) * static_cast<double>(b.v);
  const double x = static_cast<double>(c.v);
  double s = p + x;
  const double t = s - p;
  const double err = (p - (s - t)) + (x - t);
  if (err != 0.0 && std::isfinite(s)) {  // an infinite or NaN score passes through as the vector fma's
    std::uint64_t bits = 0;
    std::memcpy(&bits, &s, sizeof s);
    if ((bits & 1u) == 0u) bits = (err > 0.0) == (s > 0.0) ? bits + 1u : bits - 1u;  // |s| up or down one ulp
    std::memcpy(&s, &bits, sizeof s);
  }
  return {static_cast<float>(s)};
}

/// Keys [j, end) of one row, `end - j` a multiple of D's width: e = sl * dist (write) or fma(sl, dist, e)
/// (Add), dist advanced by the width per vector. Distances j - q are exact values (|j - q| < 2^53 in double,
/// < 2^24 in float).
template <bool Add, class D, class T, class V>
POSENC_ALWAYS_INLINE void alibi_body(D d, T* row, index_t j, index_t end, V sl, V dist, V step) {
  constexpr index_t W = vec_of<D>::width;
  for (; j < end; j += W) {
    if constexpr (Add) {
      store(alibi_fma(d, sl, dist, load(d, row + j)), row + j);
    } else {
      store(mul(sl, dist), row + j);
    }
    dist = add(dist, step);
  }
}

/// Whether slope * d is exact in float for every |d| <= max_distance, so that float arithmetic gives the bits
/// of the double form: the slope is a normal float whose odd significand m satisfies m * max_distance < 2^24,
/// and the products stay below float's overflow. Then fma in float is one rounding of slope * d + e, and the
/// double form rounds the same sum twice (double, then float), which gives the same float: the sum of two
/// floats, where double holds more than 2 * 24 + 2 bits (Figueroa, "When is double rounding innocuous?", 1995).
/// Power-of-two slopes (every ALiBi slope of a power-of-two head count H <= 8, and every eighth slope of larger
/// H) take it for rows of up to 2^24 keys.
inline bool alibi_float_exact(double slope, index_t max_distance) {
  const auto f = static_cast<float>(slope);
  if (static_cast<double>(f) != slope || !(std::fabs(f) >= std::numeric_limits<float>::min()) || max_distance >= (index_t{1} << 24))
    return false;
  if (std::fabs(slope) * static_cast<double>(max_distance) >= 0x1p127) return false;
  int e = 0;
  auto m = static_cast<std::uint32_t>(std::ldexp(std::fabs(std::frexp(f, &e)), 24));  // the 24-bit significand
  while ((m & 1u) == 0u) m >>= 1u;
  return static_cast<index_t>(m) * max_distance < (index_t{1} << 24);
}

/// Keys [begin, end) of `count` rows `rs` elements apart (one query's rows in consecutive heads) in lanes of A,
/// row k's slope s = slope[k] (-slope[k] when `negate`): e = s * d (write) or e = fma(s, d, e) (Add), d = j -
/// query as an A, one rounding to A, then to T (Eigen::half and bfloat16 through float, as simd::store_as does
/// everywhere). The add is one fused multiply-add, written as such: compilers fuse a product and a sum on their
/// own where the ISA has FMA (GCC across statements, even from intrinsics), so an unfused form would round
/// differently per compiler; the portable target's double lanes round the product first (at most 1 ulp of
/// double apart), its float lanes fuse exactly (alibi_fma). `contiguous`: keys one element apart and every
/// distance of the call exact in A, so the vectors advance the distances by their width (the first vector of
/// distances is the rows' common one, formed once); otherwise d is formed per key.
template <bool Add, class A, class T>
POSENC_ALWAYS_INLINE void alibi_span(T* row, index_t rs, index_t count, index_t stride, index_t begin, index_t end,
                                     const A* slope, bool negate, index_t query, bool contiguous) {
  if (begin >= end) return;
  const simd::lanes<A, simd::tail<isa_tag>> d1;
  if (contiguous) {
    const simd::lanes<A, isa_tag> d;
    constexpr index_t W = simd::vec<A, isa_tag>::width;
    const index_t vend = begin + (end - begin) / W * W;
    const auto first = add(set1(d, static_cast<A>(begin - query)), load(d, alibi_iota_of(A{})));
    const auto step = set1(d, static_cast<A>(W));
    const auto first1 = set1(d1, static_cast<A>(vend - query));
    const auto step1 = set1(d1, A{1});
    for (index_t k = 0; k < count; ++k, row += rs) {
      const A sk = negate ? -slope[k] : slope[k];
      alibi_body<Add>(d, row, begin, vend, set1(d, sk), first, step);
      if (vend < end) alibi_body<Add>(d1, row, vend, end, set1(d1, sk), first1, step1);
    }
    return;
  }
  for (index_t k = 0; k < count; ++k, row += rs) {
    const auto sl = set1(d1, negate ? -slope[k] : slope[k]);
    for (index_t j = begin; j < end; ++j) {
      const auto dist = set1(d1, static_cast<A>(j - query));
      if constexpr (Add) {
        store(alibi_fma(d1, sl, dist, load(d1, row + j * stride)), row + j * stride);
      } else {
        store(mul(sl, dist), row + j * stride);
      }
    }
  }
}

/// -infinity for the keys [begin, end) of a causal row.
template <class T>
POSENC_ALWAYS_INLINE void alibi_mask_span(T* row, index_t stride, index_t begin, index_t end) {
  using A = simd::acc_t<T>;
  const A inf = -std::numeric_limits<A>::infinity();
  index_t j = begin;
  if (stride == 1) {
    const simd::lanes<A, isa_tag> d;
    constexpr index_t W = simd::vec<A, isa_tag>::width;
    for (; j + W <= end; j += W) store(set1(d, inf), row + j);
  }
  const simd::lanes<A, simd::tail<isa_tag>> d1;
  for (; j < end; ++j) store(set1(d1, inf), row + j * stride);
}

/// The query and key extents and strides of a call's rows, held apart from the view so that the row loops keep
/// them in registers.
struct alibi_rows_shape {
  index_t lq, sq, lk, sk;
};

/// One query's rows in `count` consecutive heads (`rs` apart), head k's slope slope[k] in lanes of A. The rows
/// split at the query q: keys j <= q take the same bias in both forms, keys after it are masked (causal),
/// mirrored (symmetric: -slope * |d|) or continued (linear), so the inner loops carry no mask test.
template <bool Add, class A, class T>
POSENC_ALWAYS_INLINE void alibi_query_rows(T* row, index_t rs, index_t count, alibi_rows_shape g, const A* slope,
                                           index_t q, bool symmetric, bool causal, bool contiguous) {
  const index_t split = q < g.lk ? q + 1 : g.lk;
  alibi_span<Add>(row, rs, count, g.sk, 0, split, slope, false, q, contiguous);
  if (split == g.lk) return;  // every key at or before the query (a decode row)
  if (causal) {
    for (index_t k = 0; k < count; ++k, row += rs) alibi_mask_span(row, g.sk, split, g.lk);
  } else {
    alibi_span<Add>(row, rs, count, g.sk, split, g.lk, slope, symmetric, q, contiguous);
  }
}

/// The slopes of a chunk of up to 64 heads and the lanes each takes: float where the arithmetic is fp32 or
/// float gives the exact form's bits (alibi_float_exact), else the slope's own type (`all_f`: every head float).
struct alibi_chunk_lanes {
  static constexpr index_t chunk = 64;
  double slope[chunk];
  float slope_f[chunk];
  bool lanes_f[chunk];
  bool all_f;
  bool contiguous, contiguous_f;  // alibi_span's `contiguous` for double and float lanes
};

/// One query's rows in the chunk's heads [k, k + heads), `rs` apart, each head in its lanes.
template <bool Add, class T>
POSENC_ALWAYS_INLINE void alibi_query_heads(T* row, index_t rs, index_t k, index_t heads, alibi_rows_shape g,
                                            const alibi_chunk_lanes& c, index_t q, bool symmetric, bool causal) {
  if constexpr (!std::is_same_v<T, double>) {
    if (c.all_f) return alibi_query_rows<Add>(row, rs, heads, g, c.slope_f + k, q, symmetric, causal, c.contiguous_f);
    for (const index_t e = k + heads; k < e; ++k, row += rs) {
      if (c.lanes_f[k]) {
        alibi_query_rows<Add>(row, rs, 1, g, c.slope_f + k, q, symmetric, causal, c.contiguous_f);
      } else {
        alibi_query_rows<Add>(row, rs, 1, g, c.slope + k, q, symmetric, causal, c.contiguous);
      }
    }
  } else {
    alibi_query_rows<Add>(row, rs, heads, g, c.slope + k, q, symmetric, causal, c.contiguous);
  }
}

/// out[n, h, i, j] (=|+=) slope(n, h) * (j - q), q = pos.at(n, i); -slope * |j - q| when symmetric; -inf where
/// j > q when causal. `fp32`: alibi_arithmetic::fp32 (float and 16-bit T only): float lanes, the slope rounded
/// to float. The exact arithmetic runs a head of float or 16-bit T in float lanes too where that gives the
/// double form's bits (alibi_float_exact), decided once per head for the call's farthest distance: twice the
/// lanes and no conversions (the decode row was compute-bound in double).
/// `max_query`: the largest query position of the call (validate_positions found it).
/// Preconditions: everything validated by the public entry (extents, positions >= 0, finite slopes).
template <bool Add, class T, class Slopes>
void alibi_rows(target, std::bool_constant<Add>, const strided_view<T, 4>& out, const Slopes& slopes,
                const positions& pos, index_t max_query, bool symmetric, bool causal, bool fp32) {
  const index_t lk = out.extent(3);
#if defined(POSENC_NARROW_NS)
  // Adds to float scores in the fp32 arithmetic past L1 and below the streaming size go to the 256-bit kernel:
  // in isolation on Emerald Rapids (the loop load, fma, store, add of an engine), 512-bit lanes ran 20% faster
  // than 256-bit in L1 (<= 48 KiB) but 7% slower at 64-512 KiB and 1-4% at 1.5-32 MiB; from DRAM they win (the
  // prefill [1, 32, 512, 4096], 256 MiB: 24.0 against 27.8 ms). Double lanes (compute-bound), 16-bit scores
  // (conversions) and bias writes (not measured) keep 512 bits.
  if constexpr (Add && std::is_same_v<T, float>) {
    const index_t bytes = out.extent(0) * out.extent(1) * out.extent(2) * lk * index_t{sizeof(T)};
    if (fp32 && bytes > alibi_narrow_bytes && !(bytes > rope_stream_bytes))
      return POSENC_NARROW_NS::alibi_rows(POSENC_NARROW_NS::target{}, std::bool_constant<Add>{}, out, slopes, pos,
                                          max_query, symmetric, causal, fp32);
  }
#endif
  const index_t far = std::max(lk - 1, max_query);  // |j - q| <= far for every row of the call
  const alibi_rows_shape g{out.extent(2), out.stride(2), lk, out.stride(3)};
  const index_t nb = out.extent(0), nh = out.extent(1), s0 = out.stride(0), s1 = out.stride(1);
  alibi_chunk_lanes c;  // NOLINT(cppcoreguidelines-pro-type-member-init): filled per chunk before it is read
  c.contiguous = out.stride(3) == 1;
  c.contiguous_f = c.contiguous && far < (index_t{1} << 24);  // float distances exact below 2^24
  // The slopes of up to 64 heads at a time, once per call where they do not depend on the batch row: the
  // formula's fill shares one exp2 among the heads whose exponents share a fractional part.
  constexpr index_t chunk = alibi_chunk_lanes::chunk;
  const bool once = slopes.batch_invariant() && nh <= chunk;
  for (index_t n = 0; n < nb; ++n) {
    for (index_t h0 = 0; h0 < nh; h0 += chunk) {
      const index_t count = std::min(chunk, nh - h0);
      if (!once || n == 0) {
        slopes.fill(n, h0, count, c.slope);
        if constexpr (!std::is_same_v<T, double>) {
          for (index_t k = 0; k < count; ++k) c.slope_f[k] = static_cast<float>(c.slope[k]);
          c.all_f = fp32;
          if (!fp32) {
            c.all_f = true;
            for (index_t k = 0; k < count; ++k) {
              c.lanes_f[k] = alibi_float_exact(c.slope[k], far);
              c.all_f = c.all_f && c.lanes_f[k];
            }
          }
        }
      }
      T* first = out.data() + n * s0 + h0 * s1;
      if (g.lq == 1 || s1 <= g.sq) {
        // Heads inner where that is the memory order (one query: a decode call): the query's position, split
        // and first distances are formed once for all the heads; per head they were most of a decode call's
        // work outside the vectors.
        for (index_t i = 0; i < g.lq; ++i)
          alibi_query_heads<Add>(first + i * g.sq, s1, 0, count, g, c, pos.at(n, i), symmetric, causal);
      } else {
        for (index_t k = 0; k < count; ++k)
          for (index_t i = 0; i < g.lq; ++i)
            alibi_query_heads<Add>(first + k * s1 + i * g.sq, s1, k, 1, g, c, pos.at(n, i), symmetric, causal);
      }
    }
  }
}

}  // namespace POSENC_TARGET_NS
}  // namespace detail
POSENC_END_NAMESPACE
