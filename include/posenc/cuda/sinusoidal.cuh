// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// The sinusoidal encoding on NVIDIA GPUs (Vaswani et al. 2017; layouts, frequencies and fairseq padding as
// posenc/sinusoidal.hpp): the table and its addition to token embeddings in device memory, on the caller's
// stream. Per-block work: detail/gpu/sinusoid_body.hpp (tested on the CPU against sinusoidal.txt); checks: the
// CPU API's (posenc/sinusoidal_config.hpp, detail/additive.hpp).
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <climits>

#include "posenc/config.hpp"
#include "posenc/cuda/common.cuh"
#include "posenc/detail/additive.hpp"
#include "posenc/detail/check.hpp"
#include "posenc/detail/gpu/sinusoid_body.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/positions.hpp"
#include "posenc/sinusoidal_config.hpp"
#include "posenc/status.hpp"
#include "posenc/tensor_view.hpp"

POSENC_BEGIN_NAMESPACE
namespace cuda {
namespace detail {

template <class T>
status sinusoid_launch(const char* fn, const sinusoidal_config& cfg, const positions& pos, const strided_view<const T, 3>& in,
                       const strided_view<T, 3>& out, bool add, cudaStream_t stream) {
  using P = posenc::detail::gpu::sinusoid_params_gpu<T>;
  const P p{posenc::detail::gpu::pod_of(in), posenc::detail::gpu::pod_of(out), pos, posenc::detail::sinusoid_params_of(cfg),
            add};
  return launch_blocks(fn, &body_kernel<P, &posenc::detail::gpu::sinusoid_block<T>>, p, out.extent(0) * out.extent(1), body_threads,
                       "N * L", "tokens", stream);
}

}  // namespace detail

/// Writes rows offset .. offset+L-1 of the sinusoidal table into `out` [L, D] in device memory (as
/// posenc::sinusoidal_table). Returns invalid_argument (nothing launched) or device_error.
template <class T>
status try_sinusoidal_table(const sinusoidal_config& cfg, strided_view<T, 2> out, index_t offset = 0,
                            cudaStream_t stream = nullptr) noexcept {
  constexpr const char* fn = "cuda::sinusoidal_table";
  POSENC_TRY(posenc::detail::check_sinusoidal_config(fn, cfg));
  POSENC_TRY(posenc::detail::check_view(fn, "out", out, true));
  if (out.extent(1) != cfg.dim)
    return detail::fail(fn, "out feature dim (extent 1)=", out.extent(1), " does not match dim=", cfg.dim);
  using A3 = std::array<index_t, 3>;
  const strided_view<T, 3> o3(out.data(), A3{1, out.extent(0), out.extent(1)}, A3{0, out.stride(0), out.stride(1)});
  const positions pos = positions::offset(offset);
  index_t max_pos = -1;
  POSENC_TRY(posenc::detail::validate_positions(fn, pos, 1, out.extent(0), max_pos));
  if (max_pos < 0) return {};
  return detail::sinusoid_launch(fn, cfg, pos, strided_view<const T, 3>(), o3, false, stream);
}

/// out = in + T[p(n, l)] over (N, L, D) tensors in device memory (pass one tensor twice for in place; otherwise
/// they must not overlap), positions in any form (arrays in device memory: checked for shape and pointers).
/// As posenc::add_sinusoidal.
template <class T>
status try_add_sinusoidal(const sinusoidal_config& cfg, strided_view<const T, 3> in, strided_view<T, 3> out,
                          const positions& pos, cudaStream_t stream = nullptr) noexcept {
  constexpr const char* fn = "cuda::add_sinusoidal";
  const posenc::detail::add_target<T> t{in, out};
  const bool in_place = posenc::detail::same_view(in, out);
  POSENC_TRY(posenc::detail::check_sinusoidal_config(fn, cfg));
  POSENC_TRY(posenc::detail::check_add_target(fn, in_place ? "x" : "in", in_place ? "x" : "out", cfg.dim, t));
  index_t max_pos = -1;
  POSENC_TRY(posenc::detail::validate_positions(fn, pos, in.extent(0), in.extent(1), max_pos, false));
  if (max_pos < 0) return {};
  return detail::sinusoid_launch(fn, cfg, pos, in, out, true, stream);
}

/// try_sinusoidal_table, throwing argument_error or device_error.
template <class T>
void sinusoidal_table(const sinusoidal_config& cfg, strided_view<T, 2> out, index_t offset = 0,
                      cudaStream_t stream = nullptr) {
  posenc::detail::throw_if_error(try_sinusoidal_table(cfg, out, offset, stream));
}
/// try_add_sinusoidal, throwing.
template <class T>
void add_sinusoidal(const sinusoidal_config& cfg, strided_view<const T, 3> in, strided_view<T, 3> out,
                    const positions& pos, cudaStream_t stream = nullptr) {
  posenc::detail::throw_if_error(try_add_sinusoidal(cfg, in, out, pos, stream));
}

}  // namespace cuda
POSENC_END_NAMESPACE
