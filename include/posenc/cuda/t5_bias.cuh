// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// The T5 relative-position bias on NVIDIA GPUs (Raffel et al. 2020; buckets bit for bit as T5's
// relative_position_bucket, as posenc/t5_bias.hpp): the bias tensor, or its addition to attention scores,
// from an engine's [num_buckets, H] table in device memory, on the caller's stream. Per-block work:
// detail/gpu/t5_body.hpp (tested on the CPU against t5.txt); checks: posenc/t5_config.hpp, the CPU API's.
#pragma once

#include <cuda_runtime.h>

#include <climits>
#include <cstddef>

#include "posenc/config.hpp"
#include "posenc/cuda/common.cuh"
#include "posenc/detail/check.hpp"
#include "posenc/detail/gpu/t5_body.hpp"
#include "posenc/detail/math/t5_bucket.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/positions.hpp"
#include "posenc/status.hpp"
#include "posenc/t5_config.hpp"
#include "posenc/tensor_view.hpp"

POSENC_BEGIN_NAMESPACE
namespace cuda {
namespace detail {

/// The checks every T5 entry shares (as t5_relative_bias's), then one launch over the rows.
template <class C, class T>
status t5_launch(const char* fn, const strided_view<const C, 2>& table, const t5_bucket_config& cfg,
                 const strided_view<T, 4>& v, const positions& pos, bool add, cudaStream_t stream) {
  POSENC_TRY(posenc::detail::check_t5_buckets(fn, cfg.bidirectional, cfg.num_buckets, cfg.max_distance));
  POSENC_TRY(posenc::detail::check_view(fn, "table", table, false));
  POSENC_TRY(posenc::detail::check_view(fn, add ? "scores" : "bias", v, true));
  if (table.extent(0) != cfg.num_buckets || table.extent(1) != v.extent(1))
    return fail(fn, "table shape (", table.extent(0), ", ", table.extent(1), ") does not match (num_buckets, H)=(",
                cfg.num_buckets, ", ", v.extent(1), ")");
  if (posenc::detail::spans_overlap(table, v)) return fail(fn, add ? "scores" : "bias", " overlap the table");
  if (pos.kind() == positions::form::offset) POSENC_TRY(posenc::detail::check_t5_offsets(fn, v.extent(2), pos.start()));
  index_t max_pos = -1;
  POSENC_TRY(posenc::detail::validate_positions(fn, pos, v.extent(0), v.extent(2), max_pos, false));
  const index_t rows = v.extent(0) * v.extent(1) * v.extent(2);
  if (max_pos < 0 || v.extent(3) == 0) return {};
  using P = posenc::detail::gpu::t5_params<T, C>;
  const P p{posenc::detail::gpu::pod_of(v),
            table.data(),
            {table.stride(0), table.stride(1)},
            posenc::detail::math::t5_bucketer(cfg.bidirectional, cfg.num_buckets, cfg.max_distance),
            pos,
            add};
  return launch_blocks(fn, &body_kernel<P, &posenc::detail::gpu::t5_block<T, C>>, p, rows, body_threads, "N * H * Lq", "rows", stream);
}

}  // namespace detail

/// Writes the bias [H, Lq, Lk] (device memory): bias[h, i, j] = table[bucket(j - (i + query_offset)), h] with
/// the table [num_buckets, H] in device memory (any storage type). As t5_relative_bias::forward. Returns
/// invalid_argument (nothing launched) or device_error.
template <class C, class T>
status try_t5_bias(strided_view<const C, 2> table, const t5_bucket_config& cfg, strided_view<T, 3> bias,
                   index_t query_offset = 0, cudaStream_t stream = nullptr) noexcept {
  return detail::t5_launch("cuda::t5_bias", table, cfg, posenc::detail::t5_as_4d(bias), positions::offset(query_offset),
                           false, stream);
}

/// Adds the bias to attention scores [N, H, Lq, Lk] (or [H, Lq, Lk]) in device memory, in place, with query
/// positions in any form (arrays in device memory: checked for shape and pointers). As posenc::add_t5_bias.
template <class C, class T, std::size_t R>
status try_add_t5_bias(strided_view<const C, 2> table, const t5_bucket_config& cfg, strided_view<T, R> scores,
                       const positions& query_pos = positions::offset(0), cudaStream_t stream = nullptr) noexcept {
  return detail::t5_launch("cuda::add_t5_bias", table, cfg, posenc::detail::t5_as_4d(scores), query_pos, true, stream);
}

/// try_t5_bias, throwing argument_error or device_error.
template <class C, class T>
void t5_bias(strided_view<const C, 2> table, const t5_bucket_config& cfg, strided_view<T, 3> bias,
             index_t query_offset = 0, cudaStream_t stream = nullptr) {
  posenc::detail::throw_if_error(try_t5_bias(table, cfg, bias, query_offset, stream));
}
/// try_add_t5_bias, throwing.
template <class C, class T, std::size_t R>
void add_t5_bias(strided_view<const C, 2> table, const t5_bucket_config& cfg, strided_view<T, R> scores,
                 const positions& query_pos = positions::offset(0), cudaStream_t stream = nullptr) {
  posenc::detail::throw_if_error(try_add_t5_bias(table, cfg, scores, query_pos, stream));
}

}  // namespace cuda
POSENC_END_NAMESPACE
