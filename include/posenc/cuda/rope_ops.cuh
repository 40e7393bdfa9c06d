// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// KV-cache operations on NVIDIA GPUs (as posenc/rope_ops.hpp): the context shift of cached keys by a position
// delta (llama.cpp's K-shift) and the re-rotation of cached keys from one plan to another (LongRoPE short ->
// long, dynamic NTK growth). Both are the RoPE body with another cos/sin source (detail/gpu/rope_body.hpp,
// tested on the CPU by tests/gpu_body_test.cpp); the checks are the CPU API's (detail/rope_checks.hpp).
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <cstdint>

#include "posenc/config.hpp"
#include "posenc/cuda/common.cuh"
#include "posenc/cuda/rope.cuh"
#include "posenc/detail/gpu/rope_body.hpp"
#include "posenc/detail/rope_checks.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/positions.hpp"
#include "posenc/status.hpp"
#include "posenc/tensor_view.hpp"

POSENC_BEGIN_NAMESPACE
namespace cuda {
namespace detail {

/// A context shift: rotation by delta * w_i (rotations compose), magnitude 1 (the cached keys carry the plan's).
template <class T>
status shift_launch(const rope_frequencies& freq, const strided_view<T, 4>& k, const posenc::detail::delta_positions& deltas,
                    index_t batch, index_t length, index_t row_stride, cudaStream_t stream) {
  constexpr const char* fn = "cuda::shift_rope";
  POSENC_TRY(check_freq(fn, freq));
  const std::array<posenc::detail::rope_io<T, T>, 1> targets{{{strided_view<const T, 4>(k), k, {}}}};
  index_t max_pos = -1;
  POSENC_TRY(posenc::detail::check_rope_call(fn, geom_of(freq), positions::offset(0), targets, {"k", "k"}, max_pos));
  if (deltas.per_token != nullptr)
    POSENC_TRY(posenc::detail::check_shift_deltas(fn, deltas.per_token, batch, length, row_stride, k.extent(0), k.extent(1)));
  if (k.empty()) return {};
  const posenc::detail::angle_src src{freq.device_inv_freq(), 1.0, posenc::detail::max_abs(freq.plan().inv_freq())};
  return launch_rotation(fn, rotation_params(targets, deltas, src, geom_of(freq), 1.0), stream);
}

}  // namespace detail

/// Context shift in place on device memory (llama.cpp's K-shift): keys cached at position p become keys at
/// p + delta, one rotation by delta * w_i per pair, formed in double (R(p + delta) = R(delta) R(p)); the plan's
/// magnitude is not applied again. As posenc::shift_rope; returns invalid_argument (nothing launched) or
/// device_error.
template <class T>
status try_shift_rope(const rope_frequencies& freq, strided_view<T, 4> k, index_t delta,
                      cudaStream_t stream = nullptr) noexcept {
  return detail::shift_launch(freq, k, posenc::detail::delta_positions{delta, nullptr, 0}, 0, 0, -1, stream);
}

/// Context shift with one delta per cached token: token (n, l) moves by deltas[n * row_stride + l] (device
/// memory, any sign; row_stride defaults to L). The host checks the shape and the pointer, not the values.
template <class T>
status try_shift_rope(const rope_frequencies& freq, strided_view<T, 4> k, const std::int64_t* deltas, index_t batch,
                      index_t length, index_t row_stride = -1, cudaStream_t stream = nullptr) noexcept {
  const index_t stride = row_stride < 0 ? length : row_stride;
  return detail::shift_launch(freq, k, posenc::detail::delta_positions{0, deltas, stride}, batch, length, row_stride,
                              stream);
}

/// Re-rotates keys cached under `from` into `to` at the same positions, in place: angle p*w_to - p*w_from
/// (each product in double), magnitude m_to/m_from. The plans must share head_dim, rotary dim, offset and style.
/// As posenc::rerotate_rope (positions in device memory checked for form, shape and pointers).
template <class T>
status try_rerotate_rope(const rope_frequencies& from, const rope_frequencies& to, strided_view<T, 4> k,
                         const positions& pos, cudaStream_t stream = nullptr) noexcept {
  constexpr const char* fn = "cuda::rerotate_rope";
  if (from.empty() || to.empty()) return detail::fail(fn, "frequencies are empty");
  POSENC_TRY(posenc::detail::check_rerotate_plans(fn, from.plan(), to.plan()));
  const std::array<posenc::detail::rope_io<T, T>, 1> targets{{{strided_view<const T, 4>(k), k, {}}}};
  index_t max_pos = -1;
  POSENC_TRY(posenc::detail::check_rope_call(fn, detail::geom_of(to), pos, targets, {"k", "k"}, max_pos, false));
  if (max_pos < 0) return {};
  const posenc::detail::rerotate_src src{from.device_inv_freq(), to.device_inv_freq(),
                                         to.plan().magnitude() / from.plan().magnitude(),
                                         posenc::detail::max_abs(from.plan().inv_freq()) +
                                             posenc::detail::max_abs(to.plan().inv_freq())};
  return detail::launch_rotation(fn, detail::rotation_params(targets, pos, src, detail::geom_of(to), 1.0),
                                 stream);
}

/// try_shift_rope (one delta), throwing argument_error or device_error.
template <class T>
void shift_rope(const rope_frequencies& freq, strided_view<T, 4> k, index_t delta, cudaStream_t stream = nullptr) {
  posenc::detail::throw_if_error(try_shift_rope(freq, k, delta, stream));
}
/// try_shift_rope (per-token deltas), throwing.
template <class T>
void shift_rope(const rope_frequencies& freq, strided_view<T, 4> k, const std::int64_t* deltas, index_t batch,
                index_t length, index_t row_stride = -1, cudaStream_t stream = nullptr) {
  posenc::detail::throw_if_error(try_shift_rope(freq, k, deltas, batch, length, row_stride, stream));
}
/// try_rerotate_rope, throwing.
template <class T>
void rerotate_rope(const rope_frequencies& from, const rope_frequencies& to, strided_view<T, 4> k, const positions& pos,
                   cudaStream_t stream = nullptr) {
  posenc::detail::throw_if_error(try_rerotate_rope(from, to, k, pos, stream));
}

}  // namespace cuda
POSENC_END_NAMESPACE
