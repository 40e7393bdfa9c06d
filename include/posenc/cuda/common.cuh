// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// What every CUDA launcher of posenc/cuda/ shares: CUDA's 16-bit types as storage types, CUDA errors as
// statuses (errc::device_error), an owned device allocation, and positions as kernel parameters.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstddef>
#include <utility>

#include "posenc/config.hpp"
#include "posenc/detail/gpu/rope_body.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/positions.hpp"
#include "posenc/status.hpp"
#include "posenc/storage.hpp"

POSENC_BEGIN_NAMESPACE

/// CUDA's half is binary16 (read through its bits, as every f16 storage type).
template <>
struct storage_traits<__half> {
  static constexpr storage_format format = storage_format::f16;  ///< binary16
};
/// CUDA's bfloat16.
template <>
struct storage_traits<__nv_bfloat16> {
  static constexpr storage_format format = storage_format::bf16;  ///< the high half of a binary32
};

namespace cuda {
namespace detail {

using posenc::detail::fail;
using posenc::detail::make_status;

/// A status for a failed CUDA runtime call, naming the call and the runtime's error string.
inline status cuda_status(const char* fn, const char* what, cudaError_t e) {
  return make_status(errc::device_error, fn, what, " failed: ", cudaGetErrorString(e));
}

/// Owns one device allocation.
struct device_buffer {
  void* p = nullptr;
  device_buffer() = default;
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  device_buffer(device_buffer&& o) noexcept : p(std::exchange(o.p, nullptr)) {}
  device_buffer& operator=(device_buffer&& o) noexcept {
    std::swap(p, o.p);
    return *this;
  }
  ~device_buffer() {
    if (p != nullptr) cudaFree(p);
  }
};

/// Allocates `bytes` of device memory into `buf` and copies `src` there: the device tables of a plan.
inline status upload(const char* fn, device_buffer& buf, const void* src, std::size_t bytes) {
  if (const cudaError_t e = cudaMalloc(&buf.p, bytes); e != cudaSuccess) return cuda_status(fn, "cudaMalloc", e);
  if (const cudaError_t e = cudaMemcpy(buf.p, src, bytes, cudaMemcpyHostToDevice); e != cudaSuccess)
    return cuda_status(fn, "cudaMemcpy", e);
  return {};
}

/// The status of the launch just made on this thread (a bad configuration or a sticky earlier error).
inline status launch_status(const char* fn) {
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return cuda_status(fn, "launch", e);
  return {};
}

/// The launch every posenc kernel makes: `blocks` blocks of `threads` over the plain-data params (one block per
/// token or per score row, the grid's x dimension); nothing for zero blocks; an invalid_argument naming
/// `what` (e.g. "N * L", "tokens") past the grid's 2^31 - 1 blocks, a device_error if the launch fails.
template <class Params>
status launch_blocks(const char* fn, void (*kernel)(Params), const Params& p, index_t blocks, unsigned threads,
                     const char* what, const char* unit, cudaStream_t stream) {
  if (blocks == 0) return {};
  if (blocks > INT_MAX) return fail(fn, what, " = ", blocks, " ", unit, " exceed one launch's grid (", INT_MAX, ")");
  kernel<<<static_cast<unsigned>(blocks), threads, 0, stream>>>(p);
  return launch_status(fn);
}

/// posenc::positions as a kernel parameter (its arrays stay where they are: device memory for a launch).
inline posenc::detail::gpu::pos_params pod_positions(const positions& p) {
  return {static_cast<int>(p.kind()), p.start(), p.ids64(), p.ids32(), p.row_stride()};
}

}  // namespace detail
}  // namespace cuda
POSENC_END_NAMESPACE
