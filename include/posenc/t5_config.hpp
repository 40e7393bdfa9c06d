// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// T5's bucketing configuration and the checks of a T5 bias call, apart from the kernels, so
// posenc/t5_bias.hpp (CPU) and posenc/cuda/t5_bias.cuh (GPU) share them. The encoding is
// documented in posenc/t5_bias.hpp.
#pragma once

#include <array>
#include <cstddef>
#include <limits>

#include "posenc/config.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/status.hpp"
#include "posenc/tensor_view.hpp"
#include "posenc/types.hpp"

POSENC_BEGIN_NAMESPACE

/// The bucketing of one T5 attention layer. T5 encoders are bidirectional, decoders causal; T5 uses 32
/// buckets and max_distance 128 (`relative_attention_num_buckets`, `relative_attention_max_distance`).
struct t5_bucket_config {
  bool bidirectional = true;   ///< true: encoder, keys before and after the query; false: causal
  index_t num_buckets = 32;    ///< total buckets; bidirectional splits them (floor(num_buckets/2) per direction)
  index_t max_distance = 128;  ///< distances >= max_distance share the last bucket of their direction
};

namespace detail {

inline status check_t5_buckets(const char* fn, bool bidirectional, index_t num_buckets, index_t max_distance) {
  const index_t nb = bidirectional ? num_buckets / 2 : num_buckets;
  if (num_buckets < 0 || nb < 2)
    return fail(fn, "num_buckets=", num_buckets, " must be >= ", bidirectional ? 4 : 2,
                bidirectional ? " (bidirectional: at least 2 per direction)" : " (causal)");
  if (max_distance <= nb / 2)
    return fail(fn, "max_distance=", max_distance, " must exceed the exact range ", nb / 2,
                " (num_buckets per direction / 2)");
  return {};
}

/// Query i sits at i + query_offset, key j at j: the relative position j - (i + query_offset), the extremes
/// of which must fit int64.
inline status check_t5_offsets(const char* fn, index_t lq, index_t query_offset) {
  if (query_offset < 0) return fail(fn, "query_offset=", query_offset, " must be >= 0");
  constexpr index_t big = std::numeric_limits<index_t>::max();
  if (lq > 0 && query_offset > big - (lq - 1))
    return fail(fn, "query_offset=", query_offset, " + query length ", lq, " overflows int64");
  return {};
}

/// A [H, Lq, Lk] view as the [1, H, Lq, Lk] view the kernel walks; a [N, H, Lq, Lk] view as it is.
template <class T, std::size_t R>
strided_view<T, 4> t5_as_4d(const strided_view<T, R>& v) {
  static_assert(R == 3 || R == 4, "posenc: a T5 bias or scores tensor is [H, Lq, Lk] or [N, H, Lq, Lk]");
  if constexpr (R == 4) {
    return v;
  } else {
    using A = std::array<index_t, 4>;
    return strided_view<T, 4>(v.data(), A{1, v.extent(0), v.extent(1), v.extent(2)},
                              A{0, v.stride(0), v.stride(1), v.stride(2)});
  }
}

}  // namespace detail
POSENC_END_NAMESPACE
