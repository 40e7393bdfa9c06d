// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// Multimodal RoPE on NVIDIA GPUs (Qwen2-VL chunked and Qwen3-VL interleaved sections; as posenc/mrope.hpp):
// pair i turns by p[axis_i] * w_i with the (t, h, w) positions of each token in device memory. The per-block
// work is the RoPE body with the MRoPE source (detail/gpu/rope_body.hpp, tested on the CPU against mrope.txt);
// the checks are the CPU API's (posenc/mrope_plan.hpp, detail/rope_checks.hpp).
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "posenc/config.hpp"
#include "posenc/cuda/common.cuh"
#include "posenc/cuda/rope.cuh"
#include "posenc/detail/gpu/rope_body.hpp"
#include "posenc/detail/rope_checks.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/mrope_plan.hpp"
#include "posenc/positions.hpp"
#include "posenc/status.hpp"
#include "posenc/tensor_view.hpp"

POSENC_BEGIN_NAMESPACE
namespace cuda {

/// An MRoPE plan's frequencies and pair axes in device memory, next to the plan.
class mrope_frequencies {
 public:
  /// Empty (rejected by the apply functions); fill with try_create.
  mrope_frequencies() = default;
  /// Copies the plan's tables to the device; throws argument_error for an empty plan, device_error on a CUDA error.
  explicit mrope_frequencies(const mrope_plan& plan) { posenc::detail::throw_if_error(try_create(plan, *this)); }
  /// The no-throw form: `out` is replaced on success and untouched on error.
  static status try_create(const mrope_plan& plan, mrope_frequencies& out) noexcept {
    constexpr const char* fn = "cuda::mrope_frequencies";
    return posenc::detail::guard_alloc(fn, [&]() -> status {
      POSENC_TRY(posenc::detail::check_source(fn, plan.plan()));
      mrope_frequencies f;
      f.plan_ = plan;
      const std::size_t pairs = plan.axis().size();
      POSENC_TRY(detail::upload(fn, f.w_, plan.plan().inv_freq().data(), pairs * sizeof(double)));
      POSENC_TRY(detail::upload(fn, f.axis_, plan.axis().data(), pairs));
      out = std::move(f);
      return {};
    });
  }
  /// The plan these tables came from.
  const mrope_plan& plan() const noexcept { return plan_; }
  /// w_i in device memory.
  const double* device_inv_freq() const noexcept { return static_cast<const double*>(w_.p); }
  /// The axis (0 t, 1 h, 2 w) of each pair, in device memory.
  const std::uint8_t* device_axis() const noexcept { return static_cast<const std::uint8_t*>(axis_.p); }
  /// True before try_create succeeded.
  bool empty() const noexcept { return w_.p == nullptr; }

 private:
  mrope_plan plan_;
  detail::device_buffer w_, axis_;
};

namespace detail {

/// Every CUDA MRoPE entry: the CPU entry's checks (nothing launched on an error), then one launch.
template <class In, class Out, std::size_t K>
status mrope_launch(const char* fn, const mrope_frequencies& f, const mrope_positions& pos, double sign,
                    const std::array<posenc::detail::rope_io<In, Out>, K>& targets,
                    const std::array<const char*, 2 * K>& names, cudaStream_t stream) {
  if (f.empty()) return fail(fn, "plan is empty");
  const rope_plan& plan = f.plan().plan();
  index_t max_pos = -1;
  POSENC_TRY(posenc::detail::check_rope_call(fn, posenc::detail::geom_of(plan), positions::offset(0), targets, names,
                                             max_pos));
  POSENC_TRY(posenc::detail::validate_mrope_positions(fn, pos, targets[0].in.extent(0), targets[0].in.extent(1), false));
  const posenc::detail::mrope_src src{f.device_inv_freq(), f.device_axis(), plan.magnitude(),
                                      posenc::detail::max_abs(plan.inv_freq())};
  return launch_rotation(fn, rotation_params(targets, pos, src,
                                             posenc::detail::geom_of(plan), sign),
                         stream);
}

}  // namespace detail

/// MRoPE in place on device memory, on `stream` (as posenc::apply_mrope; the positions' ids in device memory,
/// checked for shape and pointer). Returns invalid_argument (nothing launched) or device_error.
template <class T>
status try_apply_mrope(const mrope_frequencies& f, strided_view<T, 4> x, const mrope_positions& pos,
                       cudaStream_t stream = nullptr) noexcept {
  const strided_view<const T, 4> in(x);
  return detail::mrope_launch("cuda::apply_mrope", f, pos, 1.0,
                              std::array<posenc::detail::rope_io<T, T>, 1>{{{in, x, {}}}}, {"x", "x"}, stream);
}
/// Out of place (`out` of another storage type allowed, one rounding; must not overlap `in`).
template <class In, class Out>
status try_apply_mrope(const mrope_frequencies& f, strided_view<const In, 4> in, strided_view<Out, 4> out,
                       const mrope_positions& pos, cudaStream_t stream = nullptr) noexcept {
  return detail::mrope_launch("cuda::apply_mrope", f, pos, 1.0,
                              std::array<posenc::detail::rope_io<In, Out>, 1>{{{in, out, {}}}}, {"in", "out"}, stream);
}
/// q and k in one launch, in place.
template <class T>
status try_apply_mrope_qk(const mrope_frequencies& f, strided_view<T, 4> q, strided_view<T, 4> k,
                          const mrope_positions& pos, cudaStream_t stream = nullptr) noexcept {
  const strided_view<const T, 4> qi(q), ki(k);
  return detail::mrope_launch("cuda::apply_mrope_qk", f, pos, 1.0,
                              std::array<posenc::detail::rope_io<T, T>, 2>{{{qi, q, {}}, {ki, k, {}}}},
                              {"q", "q", "k", "k"}, stream);
}
/// The transpose (backward pass), in place.
template <class T>
status try_apply_mrope_backward(const mrope_frequencies& f, strided_view<T, 4> g, const mrope_positions& pos,
                                cudaStream_t stream = nullptr) noexcept {
  const strided_view<const T, 4> in(g);
  return detail::mrope_launch("cuda::apply_mrope_backward", f, pos, -1.0,
                              std::array<posenc::detail::rope_io<T, T>, 1>{{{in, g, {}}}}, {"grad", "grad"}, stream);
}

/// try_apply_mrope, throwing argument_error or device_error.
template <class T>
void apply_mrope(const mrope_frequencies& f, strided_view<T, 4> x, const mrope_positions& pos,
                 cudaStream_t stream = nullptr) {
  posenc::detail::throw_if_error(try_apply_mrope(f, x, pos, stream));
}
/// try_apply_mrope_qk, throwing.
template <class T>
void apply_mrope_qk(const mrope_frequencies& f, strided_view<T, 4> q, strided_view<T, 4> k, const mrope_positions& pos,
                    cudaStream_t stream = nullptr) {
  posenc::detail::throw_if_error(try_apply_mrope_qk(f, q, k, pos, stream));
}
/// try_apply_mrope_backward, throwing.
template <class T>
void apply_mrope_backward(const mrope_frequencies& f, strided_view<T, 4> g, const mrope_positions& pos,
                          cudaStream_t stream = nullptr) {
  posenc::detail::throw_if_error(try_apply_mrope_backward(f, g, pos, stream));
}

}  // namespace cuda
POSENC_END_NAMESPACE
