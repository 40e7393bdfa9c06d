// The boundary between the CUDA tests' host side (rope_cuda_test.cpp: GoogleTest, golden files, the CPU API;
// built by the C++ compiler) and the device side (rope_runner.cu: posenc/cuda/ launchers; built by nvcc, which
// never sees the CPU kernels). Plain C++ types only.
#pragma once

#include <array>
#include <string>

#include <posenc/positions.hpp>
#include <posenc/rope_scaling.hpp>
#include <posenc/status.hpp>

namespace posenc_cuda_test {

enum class dtype { f32, f64, f16, bf16 };

/// True when a CUDA device can run this binary's kernels; otherwise `why` says what is missing.
bool device_available(std::string& why);

/// One RoPE call on the device: x (host bytes of `type`, shape N, L, H, D) is copied to the device, rotated
/// (cache-free from rope_frequencies, or from a float rope_table of `table_rows` rows) in place or into a second
/// device tensor, and the result copied back into y. Positions are copied to the device as they are.
struct rope_job {
  const posenc::rope_plan* plan = nullptr;
  bool table = false;
  posenc::index_t table_rows = 0;
  dtype type = dtype::f32;
  std::array<posenc::index_t, 4> shape{};
  const void* x = nullptr;
  void* y = nullptr;
  bool in_place = true;
  bool backward = false;
  posenc::positions pos;
};

/// Runs the job; the launcher's status (or a device_error of the runner's own CUDA calls).
posenc::status run_rope(const rope_job& job);

}  // namespace posenc_cuda_test
