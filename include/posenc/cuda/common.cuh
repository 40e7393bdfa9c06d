// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// What every CUDA launcher of posenc/cuda/ shares: CUDA's 16-bit types as storage types, CUDA errors as
// statuses (errc::device_error) and an owned device allocation.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstddef>
#include <utility>

#include "posenc/config.hpp"
#include "posenc/detail/throw.hpp"
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

/// Threads per block of every one-phase kernel, and the blocks an SM must be able to hold: six, so that ptxas
/// keeps a kernel within 80 registers per thread (sm_100 gave the fp16 table RoPE 92 without the bound).
inline constexpr unsigned body_threads = 128;
inline constexpr unsigned body_min_blocks = 6;

/// The kernel of every one-phase body (detail/gpu/*_body.hpp): block blockIdx.x of the grid, its threads
/// striding by blockDim.x. The bodies are the functions gpu_body_test.cpp runs on the CPU over the same grid.
template <class Params, void (*Body)(const Params&, index_t, index_t, index_t)>
__global__ void __launch_bounds__(body_threads, body_min_blocks) body_kernel(Params p) {
  Body(p, static_cast<index_t>(blockIdx.x), static_cast<index_t>(threadIdx.x), static_cast<index_t>(blockDim.x));
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

}  // namespace detail
}  // namespace cuda
POSENC_END_NAMESPACE
