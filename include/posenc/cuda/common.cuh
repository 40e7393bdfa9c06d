// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// What every CUDA launcher of posenc/cuda/ shares: CUDA's 16-bit types as storage types, CUDA errors as
// statuses (errc::device_error), an owned device allocation, and positions as kernel parameters.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

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

/// posenc::positions as a kernel parameter (its arrays stay where they are: device memory for a launch).
inline posenc::detail::gpu::pos_params pod_positions(const positions& p) {
  return {static_cast<int>(p.kind()), p.start(), p.ids64(), p.ids32(), p.row_stride()};
}

}  // namespace detail
}  // namespace cuda
POSENC_END_NAMESPACE
