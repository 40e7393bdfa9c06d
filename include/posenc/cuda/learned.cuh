// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// The learned absolute position embedding on NVIDIA GPUs (BERT, GPT-2, OPT; as posenc/learned.hpp's evaluation
// forward): y = LN(x + scale * E[p + position_offset]) over (N, L, D) tensors in device memory, the table (and the
// layer norm's gamma, beta) copied once to the device. Per-block work: detail/gpu/learned_body.hpp (tested on the
// CPU against learned.txt); checks: the CPU module's (posenc/learned_config.hpp, detail/additive.hpp). Training
// (dropout, backward) stays on the CPU module.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <cstddef>
#include <type_traits>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/cuda/common.cuh"
#include "posenc/detail/additive.hpp"
#include "posenc/detail/check.hpp"
#include "posenc/detail/gpu/learned_body.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/learned_config.hpp"
#include "posenc/positions.hpp"
#include "posenc/status.hpp"
#include "posenc/tensor_view.hpp"

POSENC_BEGIN_NAMESPACE
namespace cuda {
namespace detail {

/// Threads per block of the learned kernel (one token per block); the size of its shared reduction array.
inline constexpr unsigned learned_threads = 128;

template <class T, class C>
__global__ void learned_kernel(posenc::detail::gpu::learned_params<T, C> p) {
  namespace gpu = posenc::detail::gpu;
  __shared__ double part[learned_threads];
  const auto block = static_cast<index_t>(blockIdx.x), t = static_cast<index_t>(threadIdx.x);
  const auto n = static_cast<index_t>(blockDim.x);
  double mean = 0.0, rstd = 0.0;
  if (p.gamma != nullptr) {  // the layer norm's two reductions; every thread reaches every barrier
    part[t] = gpu::learned_partial(p, block, t, n, 0.0, false);
    __syncthreads();
    mean = gpu::sum_partials(part, n) / static_cast<double>(p.out.extent[3]);
    __syncthreads();
    part[t] = gpu::learned_partial(p, block, t, n, mean, true);
    __syncthreads();
    rstd = gpu::learned_rstd(gpu::sum_partials(part, n), p.out.extent[3], p.eps);
  }
  gpu::learned_write(p, block, t, n, mean, rstd);
}

}  // namespace detail

/// A learned embedding's parameters in device memory: the table [max_positions + position_offset, D] and, with
/// layer norm, gamma and beta [D], in C (float or double), next to the configuration.
///
/// **Example**
/// ```
/// posenc::learned_position_embedding<> wpe(cfg);  // trained or loaded on the host
/// posenc::cuda::learned_table<> e(wpe.config(), wpe.table(), wpe.gamma(), wpe.beta());
/// posenc::cuda::learned_forward(e, d_h, posenc::positions::offset(past), stream);  // d_h: (N, L, D) on the device
/// ```
template <class C = float>
class learned_table {
  static_assert(std::is_same_v<C, float> || std::is_same_v<C, double>, "posenc::cuda::learned_table: C is float or double");

 public:
  /// Empty (rejected by learned_forward); fill with try_create.
  learned_table() = default;
  /// Copies the host parameters (any strides) to the device; throws as try_create fails.
  learned_table(const learned_config& cfg, strided_view<const C, 2> table, strided_view<const C, 1> gamma,
                strided_view<const C, 1> beta) {
    posenc::detail::throw_if_error(try_create(cfg, table, gamma, beta, *this));
  }
  /// The no-throw form: invalid_argument for a bad configuration (as learned_position_embedding) or a table not
  /// of shape [max_positions + position_offset, D] (gamma, beta of shape [D] with layer norm; ignored without);
  /// device_error on a CUDA error. `out` is replaced on success, untouched on error.
  static status try_create(const learned_config& cfg, strided_view<const C, 2> table, strided_view<const C, 1> gamma,
                           strided_view<const C, 1> beta, learned_table& out) noexcept {
    constexpr const char* fn = "cuda::learned_table";
    return posenc::detail::guard_alloc(fn, [&]() -> status {
      POSENC_TRY(posenc::detail::check_learned_config(fn, cfg));
      POSENC_TRY(posenc::detail::check_view(fn, "table", table, false));
      const index_t rows = cfg.max_positions + cfg.position_offset;
      if (table.extent(0) != rows || table.extent(1) != cfg.dim)
        return detail::fail(fn, "table shape (", table.extent(0), ", ", table.extent(1),
                            ") does not match (max_positions + position_offset, dim)=(", rows, ", ", cfg.dim, ")");
      learned_table e;
      e.cfg_ = cfg;
      POSENC_TRY(upload_rows(fn, e.table_, table));
      if (cfg.layer_norm) {
        for (const auto& [name, v] : {std::pair{"gamma", gamma}, std::pair{"beta", beta}}) {
          POSENC_TRY(posenc::detail::check_view(fn, name, v, false));
          if (v.extent(0) != cfg.dim) return detail::fail(fn, name, " size=", v.extent(0), " does not match dim=", cfg.dim);
        }
        using A2 = std::array<index_t, 2>;
        POSENC_TRY(upload_rows(fn, e.gamma_, strided_view<const C, 2>(gamma.data(), A2{1, cfg.dim}, A2{0, gamma.stride(0)})));
        POSENC_TRY(upload_rows(fn, e.beta_, strided_view<const C, 2>(beta.data(), A2{1, cfg.dim}, A2{0, beta.stride(0)})));
      }
      out = std::move(e);
      return {};
    });
  }
  /// The configuration (dropout is not applied: the GPU forward is the evaluation forward).
  const learned_config& config() const noexcept { return cfg_; }
  /// The table, contiguous [max_positions + position_offset, D], device memory.
  const C* table_data() const noexcept { return static_cast<const C*>(table_.p); }
  /// gamma [D] in device memory (null without layer norm).
  const C* gamma_data() const noexcept { return static_cast<const C*>(gamma_.p); }
  /// beta [D] in device memory (null without layer norm).
  const C* beta_data() const noexcept { return static_cast<const C*>(beta_.p); }
  /// True before try_create succeeded.
  bool empty() const noexcept { return table_.p == nullptr; }

 private:
  // A strided host matrix packed row-major and copied to the device in one transfer.
  static status upload_rows(const char* fn, detail::device_buffer& buf, const strided_view<const C, 2>& v) {
    std::vector<C> packed(static_cast<std::size_t>(v.extent(0) * v.extent(1)));
    for (index_t r = 0; r < v.extent(0); ++r)
      for (index_t d = 0; d < v.extent(1); ++d) packed[static_cast<std::size_t>(r * v.extent(1) + d)] = v(r, d);
    return detail::upload(fn, buf, packed.data(), packed.size() * sizeof(C));
  }

  learned_config cfg_;
  detail::device_buffer table_, gamma_, beta_;
};

/// Evaluation forward out of place on device memory, on `stream`: out = LN(in + scale * E[p + position_offset])
/// (LN when the configuration has it; no dropout), as learned_position_embedding::forward. Pass one tensor as
/// both for in place; otherwise they must not overlap. Positions in device memory are checked for form, shape
/// and pointers; a token whose position is past the table is left unwritten (offset positions are checked here
/// and rejected as on the CPU). Returns invalid_argument (nothing launched) or device_error.
template <class C, class T>
status try_learned_forward(const learned_table<C>& e, strided_view<const T, 3> in, strided_view<T, 3> out,
                           const positions& pos, cudaStream_t stream = nullptr) noexcept {
  constexpr const char* fn = "cuda::learned_forward";
  if (e.empty()) return detail::fail(fn, "table is empty");
  const learned_config& cfg = e.config();
  const bool in_place = posenc::detail::same_view(in, out);
  POSENC_TRY(posenc::detail::check_add_target(fn, in_place ? "x" : "in", in_place ? "x" : "out", cfg.dim,
                                              posenc::detail::add_target<T>{in, out}));
  index_t max_pos = -1;
  POSENC_TRY(posenc::detail::validate_positions(fn, pos, in.extent(0), in.extent(1), max_pos, false));
  if (pos.kind() == positions::form::offset && max_pos >= cfg.max_positions)
    return detail::fail(fn, "position ", max_pos, " is past the table of max_positions=", cfg.max_positions);
  if (max_pos < 0) return {};
  const posenc::detail::gpu::learned_params<T, C> p{posenc::detail::gpu::pod_of(in),
                                                    posenc::detail::gpu::pod_of(out),
                                                    e.table_data(),
                                                    cfg.max_positions + cfg.position_offset,
                                                    cfg.position_offset,
                                                    e.gamma_data(),
                                                    e.beta_data(),
                                                    cfg.scale,
                                                    cfg.eps,
                                                    pos};
  return detail::launch_blocks(fn, &detail::learned_kernel<T, C>, p, in.extent(0) * in.extent(1), detail::learned_threads,
                               "N * L", "tokens", stream);
}

/// In place: x = LN(x + scale * E[p + position_offset]).
template <class C, class T>
status try_learned_forward(const learned_table<C>& e, strided_view<T, 3> x, const positions& pos,
                           cudaStream_t stream = nullptr) noexcept {
  return try_learned_forward(e, strided_view<const T, 3>(x), x, pos, stream);
}

/// try_learned_forward (out of place), throwing argument_error or device_error.
template <class C, class T>
void learned_forward(const learned_table<C>& e, strided_view<const T, 3> in, strided_view<T, 3> out, const positions& pos,
                     cudaStream_t stream = nullptr) {
  posenc::detail::throw_if_error(try_learned_forward(e, in, out, pos, stream));
}
/// try_learned_forward (in place), throwing.
template <class C, class T>
void learned_forward(const learned_table<C>& e, strided_view<T, 3> x, const positions& pos, cudaStream_t stream = nullptr) {
  posenc::detail::throw_if_error(try_learned_forward(e, x, pos, stream));
}

}  // namespace cuda
POSENC_END_NAMESPACE
