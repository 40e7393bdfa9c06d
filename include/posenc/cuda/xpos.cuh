// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// xPos on NVIDIA GPUs (torchscale XPOS, Sun et al. 2022; as posenc/xpos.hpp): pair i turns by p * w_i and is
// multiplied by zeta_i^((p - C)/scale_base) (queries) or its reciprocal (keys), formed in double on the device.
// The per-block work is the RoPE body with the xPos source (detail/gpu/rope_body.hpp, tested on the CPU
// against xpos.txt); the checks are the CPU API's.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <climits>
#include <cstddef>
#include <utility>

#include "posenc/config.hpp"
#include "posenc/cuda/common.cuh"
#include "posenc/cuda/rope.cuh"
#include "posenc/detail/gpu/rope_body.hpp"
#include "posenc/detail/rope_checks.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/positions.hpp"
#include "posenc/status.hpp"
#include "posenc/tensor_view.hpp"
#include "posenc/xpos_plan.hpp"

POSENC_BEGIN_NAMESPACE
namespace cuda {

/// An xPos plan's frequencies and ln zeta in device memory, next to the plan.
class xpos_frequencies {
 public:
  /// Empty (rejected by the apply functions); fill with try_create.
  xpos_frequencies() = default;
  /// Copies the plan's tables to the device; throws argument_error for an empty plan, device_error on a CUDA error.
  explicit xpos_frequencies(const xpos_plan& plan) { posenc::detail::throw_if_error(try_create(plan, *this)); }
  /// The no-throw form: `out` is replaced on success and untouched on error.
  static status try_create(const xpos_plan& plan, xpos_frequencies& out) noexcept {
    constexpr const char* fn = "cuda::xpos_frequencies";
    return posenc::detail::guard_alloc(fn, [&]() -> status {
      if (plan.empty()) return detail::fail(fn, "plan is empty");
      xpos_frequencies f;
      f.plan_ = plan;
      const std::size_t bytes = plan.inv_freq().size() * sizeof(double);
      POSENC_TRY(detail::upload(fn, f.w_, plan.inv_freq().data(), bytes));
      POSENC_TRY(detail::upload(fn, f.log_zeta_, plan.log_zeta().data(), bytes));
      out = std::move(f);
      return {};
    });
  }
  /// The plan these tables came from.
  const xpos_plan& plan() const noexcept { return plan_; }
  /// w_i in device memory.
  const double* device_inv_freq() const noexcept { return static_cast<const double*>(w_.p); }
  /// ln zeta_i in device memory.
  const double* device_log_zeta() const noexcept { return static_cast<const double*>(log_zeta_.p); }
  /// True before try_create succeeded.
  bool empty() const noexcept { return w_.p == nullptr; }

 private:
  xpos_plan plan_;
  detail::device_buffer w_, log_zeta_;
};

namespace detail {

/// Every CUDA xPos entry: the CPU entry's checks (nothing launched on an error), then one launch.
template <class In, class Out, std::size_t K>
status xpos_launch(const char* fn, const xpos_frequencies& f, const positions& pos, index_t center,
                   const std::array<xpos_mode, K>& modes, double sign,
                   const std::array<posenc::detail::rope_io<In, Out>, K>& targets,
                   const std::array<const char*, 2 * K>& names, cudaStream_t stream) {
  if (f.empty()) return fail(fn, "plan is empty");
  if (center < 0) return fail(fn, "center=", center, " must be >= 0");
  POSENC_TRY(posenc::detail::check_targets(fn, f.plan().head_dim(), targets, names));
  index_t max_pos = -1;
  POSENC_TRY(posenc::detail::validate_positions(fn, pos, targets[0].in.extent(0), targets[0].in.extent(1), max_pos, false));
  if (max_pos < 0) return {};
  const posenc::detail::xpos_src src{f.device_inv_freq(), f.device_log_zeta(), center, f.plan().config().scale_base,
                                     posenc::detail::max_abs(f.plan().inv_freq()), {true, true}};
  const posenc::rope_geometry g{f.plan().head_dim(), 2 * f.plan().pairs(), 0, f.plan().config().style};
  auto p = rotation_params(targets, pos, src, g, sign);
  for (std::size_t k = 0; k < K; ++k) p.variant[k] = modes[k] == xpos_mode::upscale ? 0 : 1;
  return launch_rotation(fn, p, stream);
}

}  // namespace detail

/// xPos in place on device memory, on `stream` (as posenc::apply_xpos; device positions checked for shape and
/// pointers only). Returns invalid_argument (nothing launched) or device_error.
template <class T>
status try_apply_xpos(const xpos_frequencies& f, strided_view<T, 4> x, const positions& pos, index_t center,
                      xpos_mode mode, cudaStream_t stream = nullptr) noexcept {
  const strided_view<const T, 4> in(x);
  return detail::xpos_launch("cuda::apply_xpos", f, pos, center, std::array<xpos_mode, 1>{mode}, 1.0,
                             std::array<posenc::detail::rope_io<T, T>, 1>{{{in, x, {}}}}, {"x", "x"}, stream);
}
/// Out of place (`out` of another storage type allowed, one rounding; must not overlap `in`).
template <class In, class Out>
status try_apply_xpos(const xpos_frequencies& f, strided_view<const In, 4> in, strided_view<Out, 4> out,
                      const positions& pos, index_t center, xpos_mode mode, cudaStream_t stream = nullptr) noexcept {
  return detail::xpos_launch("cuda::apply_xpos", f, pos, center, std::array<xpos_mode, 1>{mode}, 1.0,
                             std::array<posenc::detail::rope_io<In, Out>, 1>{{{in, out, {}}}}, {"in", "out"}, stream);
}
/// Queries upscaled and keys downscaled around one centre, in one launch, in place.
template <class T>
status try_apply_xpos_qk(const xpos_frequencies& f, strided_view<T, 4> q, strided_view<T, 4> k, const positions& pos,
                         index_t center, cudaStream_t stream = nullptr) noexcept {
  const strided_view<const T, 4> qi(q), ki(k);
  return detail::xpos_launch("cuda::apply_xpos_qk", f, pos, center,
                             std::array<xpos_mode, 2>{xpos_mode::upscale, xpos_mode::downscale}, 1.0,
                             std::array<posenc::detail::rope_io<T, T>, 2>{{{qi, q, {}}, {ki, k, {}}}},
                             {"q", "q", "k", "k"}, stream);
}
/// The transpose (backward pass): rotation by -p*w_i with the forward `mode`'s scale, in place.
template <class T>
status try_apply_xpos_backward(const xpos_frequencies& f, strided_view<T, 4> g, const positions& pos, index_t center,
                               xpos_mode mode, cudaStream_t stream = nullptr) noexcept {
  const strided_view<const T, 4> in(g);
  return detail::xpos_launch("cuda::apply_xpos_backward", f, pos, center, std::array<xpos_mode, 1>{mode}, -1.0,
                             std::array<posenc::detail::rope_io<T, T>, 1>{{{in, g, {}}}}, {"grad", "grad"}, stream);
}

/// try_apply_xpos, throwing argument_error or device_error.
template <class T>
void apply_xpos(const xpos_frequencies& f, strided_view<T, 4> x, const positions& pos, index_t center, xpos_mode mode,
                cudaStream_t stream = nullptr) {
  posenc::detail::throw_if_error(try_apply_xpos(f, x, pos, center, mode, stream));
}
/// try_apply_xpos_qk, throwing.
template <class T>
void apply_xpos_qk(const xpos_frequencies& f, strided_view<T, 4> q, strided_view<T, 4> k, const positions& pos,
                   index_t center, cudaStream_t stream = nullptr) {
  posenc::detail::throw_if_error(try_apply_xpos_qk(f, q, k, pos, center, stream));
}
/// try_apply_xpos_backward, throwing.
template <class T>
void apply_xpos_backward(const xpos_frequencies& f, strided_view<T, 4> g, const positions& pos, index_t center,
                         xpos_mode mode, cudaStream_t stream = nullptr) {
  posenc::detail::throw_if_error(try_apply_xpos_backward(f, g, pos, center, mode, stream));
}

}  // namespace cuda
POSENC_END_NAMESPACE
