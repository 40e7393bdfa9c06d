// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// RoPE on NVIDIA GPUs: launchers over device memory on the caller's stream, for .cu files (nvcc). The per-block
// work is detail/gpu/rope_body.hpp, the same host-and-device functions tests/gpu_body_test.cpp runs on the CPU
// against the golden files; the argument checks are the CPU API's (detail/rope_checks.hpp), so a bad call is
// rejected with the same message and nothing is launched. No CPU header includes this one.
//
// Storage: float, double, __half, __nv_bfloat16 (and any type with a storage_traits format), 16-bit types
// computed in float. Positions: posenc::positions over device arrays (int32 or int64); their values stay on the
// device, so the host checks their form, shape and pointers only (see try_apply_rope).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <array>
#include <climits>
#include <cstddef>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/cuda/common.cuh"
#include "posenc/detail/gpu/rope_body.hpp"
#include "posenc/detail/rope_checks.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/error.hpp"
#include "posenc/positions.hpp"
#include "posenc/rope_plan.hpp"
#include "posenc/status.hpp"
#include "posenc/storage.hpp"
#include "posenc/tensor_view.hpp"

POSENC_BEGIN_NAMESPACE

namespace cuda {
namespace detail {

using posenc::detail::fail;

template <class C>
__global__ void table_kernel(const double* w, double magnitude, index_t pairs, C* cos, C* sin) {
  posenc::detail::gpu::table_block(w, magnitude, pairs, cos, sin, static_cast<index_t>(blockIdx.x), threadIdx.x,
                                   blockDim.x);
}

/// Threads per block of the RoPE kernels (body_kernel's): a block is one token, its threads share the heads x
/// pairs.
inline constexpr unsigned rope_threads = body_threads;

}  // namespace detail

/// A plan's frequencies in device memory, next to the plan itself (its geometry is what calls are checked
/// against). Formula and sources: posenc::make_rope_plan; the angles are formed in double on the device.
///
/// **Example**
/// ```
/// posenc::cuda::rope_frequencies freq(posenc::make_rope_plan(cfg, seq_len));
/// posenc::cuda::apply_rope(freq, q_view, posenc::positions::per_token(d_pos, N, L), stream);
/// ```
class rope_frequencies {
 public:
  /// Empty (rejected by the apply functions); fill with try_create.
  rope_frequencies() = default;
  /// Copies plan's inv_freq to the device; throws argument_error for an empty plan, device_error on a CUDA error.
  explicit rope_frequencies(const rope_plan& plan) { posenc::detail::throw_if_error(try_create(plan, *this)); }
  /// The no-throw form: `out` is replaced on success and untouched on error.
  static status try_create(const rope_plan& plan, rope_frequencies& out) noexcept {
    constexpr const char* fn = "cuda::rope_frequencies";
    return posenc::detail::guard_alloc(fn, [&]() -> status {
      POSENC_TRY(posenc::detail::check_source(fn, plan));
      rope_frequencies f;
      f.plan_ = plan;
      POSENC_TRY(detail::upload(fn, f.w_, plan.inv_freq().data(), plan.inv_freq().size() * sizeof(double)));
      out = std::move(f);
      return {};
    });
  }
  /// The plan these frequencies came from.
  const rope_plan& plan() const noexcept { return plan_; }
  /// The R/2 frequencies in device memory (null when empty).
  const double* device_inv_freq() const noexcept { return static_cast<const double*>(w_.p); }
  /// True before try_create succeeded.
  bool empty() const noexcept { return w_.p == nullptr; }

 private:
  rope_plan plan_;
  detail::device_buffer w_;
};

/// A cos/sin table in device memory, rows 0 .. max_positions-1 of `pairs` columns, built on the device from a
/// plan (cos(p w_i) m and sin(p w_i) m formed in double, rounded once to C): the CUDA counterpart of
/// posenc::rope_cache. A position past the table is not rotated (device positions are not read on the host).
template <class C = float>
class rope_table {
 public:
  /// Empty; fill with try_create.
  rope_table() = default;
  /// Builds the table on `stream`; throws as try_create fails.
  rope_table(const rope_frequencies& freq, index_t max_positions, cudaStream_t stream = nullptr) {
    posenc::detail::throw_if_error(try_create(freq, max_positions, stream, *this));
  }
  /// The no-throw form: invalid_argument for empty frequencies or max_positions < 0 or past the grid limit;
  /// device_error when an allocation or the launch fails. `out` is replaced on success.
  static status try_create(const rope_frequencies& freq, index_t max_positions, cudaStream_t stream,
                           rope_table& out) noexcept {
    constexpr const char* fn = "cuda::rope_table";
    return posenc::detail::guard_alloc(fn, [&]() -> status {
      if (freq.empty()) return detail::fail(fn, "frequencies are empty");
      if (max_positions < 0 || max_positions > INT_MAX)
        return detail::fail(fn, "max_positions=", max_positions, " must be in [0, ", INT_MAX, "]");
      rope_table t;
      t.plan_ = freq.plan();
      t.rows_ = max_positions;
      const index_t pairs = t.plan_.pairs();
      const std::size_t bytes = static_cast<std::size_t>(max_positions * pairs) * sizeof(C);
      if (max_positions > 0) {
        if (const cudaError_t e = cudaMalloc(&t.cos_.p, bytes); e != cudaSuccess) return detail::cuda_status(fn, "cudaMalloc", e);
        if (const cudaError_t e = cudaMalloc(&t.sin_.p, bytes); e != cudaSuccess) return detail::cuda_status(fn, "cudaMalloc", e);
        detail::table_kernel<C><<<static_cast<unsigned>(max_positions), 64, 0, stream>>>(
            freq.device_inv_freq(), t.plan_.magnitude(), pairs, static_cast<C*>(t.cos_.p), static_cast<C*>(t.sin_.p));
        POSENC_TRY(detail::launch_status(fn));
      }
      out = std::move(t);
      return {};
    });
  }
  /// The plan the table was built from.
  const rope_plan& plan() const noexcept { return plan_; }
  /// Rows: positions 0 .. max_positions() - 1.
  index_t max_positions() const noexcept { return rows_; }
  /// cos(p w_i) m at [p * pairs + i], device memory.
  const C* cos_data() const noexcept { return static_cast<const C*>(cos_.p); }
  /// sin(p w_i) m at [p * pairs + i], device memory.
  const C* sin_data() const noexcept { return static_cast<const C*>(sin_.p); }

 private:
  rope_plan plan_;
  index_t rows_ = 0;
  detail::device_buffer cos_, sin_;
};

namespace detail {

inline posenc::rope_geometry geom_of(const rope_frequencies& f) { return posenc::detail::geom_of(f.plan()); }
template <class C>
posenc::rope_geometry geom_of(const rope_table<C>& t) {
  return posenc::detail::geom_of(t.plan());
}
inline status check_freq(const char* fn, const rope_frequencies& f) {
  if (f.empty()) return fail(fn, "frequencies are empty");
  return {};
}
template <class C>
status check_freq(const char*, const rope_table<C>&) {
  return {};
}
inline posenc::detail::angle_src source_of(const rope_frequencies& f) {
  return {f.device_inv_freq(), f.plan().magnitude(), posenc::detail::max_abs(f.plan().inv_freq())};
}
template <class C>
posenc::detail::table_src<C> source_of(const rope_table<C>& t) {
  return {t.cos_data(), t.sin_data(), t.plan().pairs(), 1, t.max_positions()};
}

/// The one launch of every rotation (RoPE, xPos, MRoPE, shift, re-rotation) after its checks: one block per
/// token (n, l) of all targets; nothing to do for zero tokens.
template <class In, class Out, class Src, class Pos>
status launch_rotation(const char* fn, const posenc::detail::gpu::rope_params<In, Out, Src, Pos>& p, cudaStream_t stream) {
  using P = posenc::detail::gpu::rope_params<In, Out, Src, Pos>;
  return launch_blocks(fn, &body_kernel<P, &posenc::detail::gpu::rope_block<In, Out, Src, Pos>>, p, p.t.in[0].extent[0] * p.t.in[0].extent[1], rope_threads,
                       "N * L", "tokens", stream);
}

/// The parameters of a rotation from a source over the window of `g`.
template <class Src, class Pos, class In, class Out, std::size_t K>
posenc::detail::gpu::rope_params<In, Out, Src, Pos> rotation_params(const std::array<posenc::detail::rope_io<In, Out>, K>& targets,
                                                                    const Pos& pos, const Src& src,
                                                               const posenc::rope_geometry& g, double sign) {
  return {posenc::detail::gpu::pod_targets<In, Out>(targets), pos, src, g.style, g.rotary_offset, g.pairs(), sign, {0, 0}};
}

/// Every CUDA RoPE entry: the CPU API's checks first (nothing is launched on an error), then one launch for
/// all targets (q and k together).
template <class F, class In, class Out, std::size_t K>
status rope_launch(const char* fn, const F& freq, const positions& pos, double sign,
                   const std::array<posenc::detail::rope_io<In, Out>, K>& targets,
                   const std::array<const char*, 2 * K>& names, cudaStream_t stream) {
  POSENC_TRY(check_freq(fn, freq));
  index_t max_pos = -1;
  POSENC_TRY(posenc::detail::check_rope_call(fn, geom_of(freq), pos, targets, names, max_pos, false));
  if (max_pos < 0) return {};
  return launch_rotation(fn, rotation_params(targets, pos, source_of(freq), geom_of(freq), sign), stream);
}

template <class F>
inline constexpr bool is_freq_v = std::is_same_v<F, rope_frequencies>;
template <class C>
inline constexpr bool is_freq_v<rope_table<C>> = true;

}  // namespace detail

/// RoPE in place on device memory, on `stream`: pair i of token (n, l) rotates by theta = pos(n, l) * w_i
/// (RoFormer, Su et al. 2021; pair style, window and scaling from the plan, as posenc::apply_rope). `freq` is a
/// rope_frequencies (angles in double on the device) or a rope_table. Checks as posenc::apply_rope with
/// `values_readable` off: position arrays in device memory are checked for form, shape and pointers, not
/// values. Returns invalid_argument (nothing launched) or device_error (the launch failed).
template <class F, class T>
status try_apply_rope(const F& freq, strided_view<T, 4> x, const positions& pos, cudaStream_t stream = nullptr) noexcept {
  static_assert(detail::is_freq_v<F>, "posenc::cuda::apply_rope: freq is a rope_frequencies or a rope_table");
  const strided_view<const T, 4> in(x);
  return detail::rope_launch("cuda::apply_rope", freq, pos, 1.0,
                             std::array<posenc::detail::rope_io<T, T>, 1>{{{in, x, {}}}}, {"x", "x"}, stream);
}

/// Out of place: `out` (another storage type allowed, one rounding) receives the rotated `in`; features outside
/// the rotated window are copied. `out` must not overlap `in`.
template <class F, class In, class Out>
status try_apply_rope(const F& freq, strided_view<const In, 4> in, strided_view<Out, 4> out, const positions& pos,
                      cudaStream_t stream = nullptr) noexcept {
  return detail::rope_launch("cuda::apply_rope", freq, pos, 1.0,
                             std::array<posenc::detail::rope_io<In, Out>, 1>{{{in, out, {}}}}, {"in", "out"}, stream);
}

/// The transpose (backward pass): rotation by -theta with the same magnitude m, in place.
template <class F, class T>
status try_apply_rope_backward(const F& freq, strided_view<T, 4> g, const positions& pos,
                               cudaStream_t stream = nullptr) noexcept {
  const strided_view<const T, 4> in(g);
  return detail::rope_launch("cuda::apply_rope_backward", freq, pos, -1.0,
                             std::array<posenc::detail::rope_io<T, T>, 1>{{{in, g, {}}}}, {"grad", "grad"}, stream);
}

/// q and k in one launch (e.g. views into one fused QKV buffer, any head counts: GQA), in place.
template <class F, class T>
status try_apply_rope_qk(const F& freq, strided_view<T, 4> q, strided_view<T, 4> k, const positions& pos,
                         cudaStream_t stream = nullptr) noexcept {
  const strided_view<const T, 4> qi(q), ki(k);
  return detail::rope_launch("cuda::apply_rope_qk", freq, pos, 1.0,
                             std::array<posenc::detail::rope_io<T, T>, 2>{{{qi, q, {}}, {ki, k, {}}}},
                             {"q", "q", "k", "k"}, stream);
}

/// try_apply_rope, throwing argument_error or device_error.
template <class F, class T>
void apply_rope(const F& freq, strided_view<T, 4> x, const positions& pos, cudaStream_t stream = nullptr) {
  posenc::detail::throw_if_error(try_apply_rope(freq, x, pos, stream));
}
/// The out-of-place try_apply_rope, throwing.
template <class F, class In, class Out>
void apply_rope(const F& freq, strided_view<const In, 4> in, strided_view<Out, 4> out, const positions& pos,
                cudaStream_t stream = nullptr) {
  posenc::detail::throw_if_error(try_apply_rope(freq, in, out, pos, stream));
}
/// try_apply_rope_backward, throwing.
template <class F, class T>
void apply_rope_backward(const F& freq, strided_view<T, 4> g, const positions& pos, cudaStream_t stream = nullptr) {
  posenc::detail::throw_if_error(try_apply_rope_backward(freq, g, pos, stream));
}
/// try_apply_rope_qk, throwing.
template <class F, class T>
void apply_rope_qk(const F& freq, strided_view<T, 4> q, strided_view<T, 4> k, const positions& pos,
                   cudaStream_t stream = nullptr) {
  posenc::detail::throw_if_error(try_apply_rope_qk(freq, q, k, pos, stream));
}

}  // namespace cuda
POSENC_END_NAMESPACE
