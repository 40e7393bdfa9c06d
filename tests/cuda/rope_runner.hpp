// The boundary between the CUDA tests' host side (rope_cuda_test.cpp: GoogleTest, golden files, the CPU API;
// built by the C++ compiler) and the device side (rope_runner.cu: posenc/cuda/ launchers; built by nvcc, which
// never sees the CPU kernels). Plain C++ types only.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include <posenc/alibi_config.hpp>
#include <posenc/learned_config.hpp>
#include <posenc/mrope_plan.hpp>
#include <posenc/positions.hpp>
#include <posenc/rope_plan.hpp>
#include <posenc/sinusoidal_config.hpp>
#include <posenc/status.hpp>
#include <posenc/t5_config.hpp>
#include <posenc/xpos_plan.hpp>

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

/// posenc::cuda::alibi_bias (add = false) or add_alibi_bias onto the scores in `inout` (add = true) of shape
/// [1, H, Lq, Lk], `type` elements, query positions `pos` (an array in host memory, copied to the device) and
/// `mask`; the result copied back into `inout`.
posenc::status run_alibi(const posenc::alibi_config& cfg, dtype type, posenc::index_t heads, posenc::index_t lq,
                         posenc::index_t lk, const posenc::positions& pos, bool add, void* inout,
                         posenc::alibi_mask mask = posenc::alibi_mask::none);

/// posenc::cuda::apply_xpos in place on x (N, L, 1, D) at positions offset .. offset+L-1; the result into y.
posenc::status run_xpos(const posenc::xpos_plan& plan, dtype type, const std::array<posenc::index_t, 4>& shape,
                        const void* x, void* y, posenc::index_t offset, posenc::index_t center, posenc::xpos_mode mode);

/// posenc::cuda::sinusoidal_table into out [L, D] (x null, positions offset(offset)), or add_sinusoidal of x
/// (N, L, D) with per-token positions `ids` into out (in place when out == x).
posenc::status run_sinusoidal(const posenc::sinusoidal_config& cfg, dtype type, const std::array<posenc::index_t, 3>& shape,
                              const void* x, void* out, posenc::index_t offset, const std::int64_t* ids, bool in_place);

/// posenc::cuda::t5_bias (add false) or add_t5_bias onto `inout` [1, H, Lq, Lk] from a float table
/// [num_buckets, H] (host `table`, copied to the device), query positions offset(query_offset).
posenc::status run_t5(const posenc::t5_bucket_config& cfg, const float* table, dtype type, posenc::index_t heads,
                      posenc::index_t lq, posenc::index_t lk, posenc::index_t query_offset, bool add, void* inout);

/// posenc::cuda::apply_mrope out of place from x into y (N, L, H, D); `ids` the host (3, L) (shared) or
/// (N, 3, L) (per_token) positions, copied to the device.
posenc::status run_mrope(const posenc::mrope_plan& plan, dtype type, const std::array<posenc::index_t, 4>& shape,
                         const void* x, void* y, const std::int64_t* ids, bool shared);

/// posenc::cuda::shift_rope in place on x (N, L, H, D): per-token deltas (host (N, L), copied to the device) or,
/// when `deltas` is null, `delta` for every token; the result into y.
posenc::status run_shift(const posenc::rope_plan& plan, dtype type, const std::array<posenc::index_t, 4>& shape,
                         const void* x, void* y, const std::int64_t* deltas, posenc::index_t delta);

/// x rotated on the device with `from` (apply_rope), then re-rotated into `to` (cuda::rerotate_rope), at the
/// same positions (copied to the device); the result into y.
posenc::status run_rerotate(const posenc::rope_plan& from, const posenc::rope_plan& to, dtype type,
                            const std::array<posenc::index_t, 4>& shape, const void* x, void* y, const posenc::positions& pos);

/// posenc::cuda::learned_forward of x (N, L, D) at positions offset(past_length) with a float table built from the
/// host table/gamma/beta (double, row-major), in place or out of place; the result into y.
posenc::status run_learned(const posenc::learned_config& cfg, const double* table, const double* gamma, const double* beta,
                           dtype type, const std::array<posenc::index_t, 3>& shape, const void* x, void* y,
                           posenc::index_t past_length, bool in_place);

/// On the device, the inputs where the conversions every kernel uses (posenc::detail::math::half_bits_to_float,
/// float_to_half_bits, float_to_bf16_bits: the cvt instructions there) give other bits than the integer code
/// the CPU runs (the *_soft functions): all 2^16 halves, all 2^32 float patterns to half and to bfloat16.
/// count[k] of conversion k, first[k] the smallest such input (0xffffffff when none).
posenc::status conversion_mismatches(std::array<unsigned long long, 3>& count, std::array<std::uint32_t, 3>& first);

/// The launchers' host side on host memory: posenc::cuda::try_alibi_bias into `out` [H, Lq, Lk] and
/// posenc::cuda::try_add_sinusoidal in place on `x` (N, L, D). A rejected call returns before any CUDA call, so
/// these need no device; an accepted one launches on host memory, which without a device fails at the launch
/// (the device_error path).
posenc::status alibi_bias_on_host(const posenc::alibi_config& cfg, float* out, const std::array<posenc::index_t, 3>& shape,
                                  posenc::index_t query_offset);
posenc::status add_sinusoidal_on_host(const posenc::sinusoidal_config& cfg, float* x,
                                      const std::array<posenc::index_t, 3>& shape, const posenc::positions& pos);

}  // namespace posenc_cuda_test
