// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// The per-block work of the GPU learned-embedding kernel (see rope_body.hpp for the scheme): one block per token
// (n, l) of an (N, L, D) view, y = LN(x + scale * E[p + position_offset]) (LN optional, evaluation mode: no
// dropout), the values of the CPU module's forward: without layer norm the sum in float (double for double
// tensors); with it, h in double and the statistics in two passes (mean, then the centred squares). The layer
// norm needs the whole row, so the work is three phases with a block-wide reduction between them: each thread's
// partial sum (learned_partial) goes to shared memory, every thread reduces them in one fixed order
// (sum_partials), and the last phase writes (learned_write). The CUDA kernel separates the phases with
// __syncthreads; the CPU test runs each phase for every thread before the next.
#pragma once

#include <cmath>

#include "posenc/config.hpp"
#include "posenc/detail/gpu/rope_body.hpp"
#include "posenc/types.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail::gpu {

/// A learned-embedding forward over (N, L, 1, D) views and a contiguous [rows, D] table in device memory.
template <class T, class C>
struct learned_params {
  view4<const T> in;
  view4<T> out;
  const C* table;
  index_t rows;        ///< max_positions + position_offset
  index_t row_offset;  ///< position_offset
  const C* gamma;      ///< null without layer norm
  const C* beta;
  double scale;
  double eps;
  positions pos;
};

/// The table row of block `block`'s token, or -1 when its position is past the table (device positions are not
/// read on the host: such a token is left unwritten, as a RoPE table lookup past the table).
template <class T, class C>
POSENC_HOST_DEVICE inline index_t learned_row(const learned_params<T, C>& p, index_t block) {
  const index_t len = p.out.extent[1];
  const index_t pos = p.pos.at(block / len, block % len);
  const index_t row = pos + p.row_offset;
  return pos < 0 || row >= p.rows ? -1 : row;
}

/// h_d = x_d + scale * E[row, d] in double (the layer-norm path).
template <class T, class C>
POSENC_HOST_DEVICE inline double learned_h(const learned_params<T, C>& p, index_t block, index_t row, index_t d) {
  const index_t len = p.out.extent[1];
  using A = simd::acc_t<T>;
  return static_cast<double>(load_as<A>(*p.in.at(block / len, block % len, 0, d))) +
         p.scale * load_as<double>(p.table[row * p.out.extent[3] + d]);
}

/// Phase 1 (squares false): this thread's share of sum_d h_d; phase 2 (squares true): of sum_d (h_d - mean)^2.
template <class T, class C>
POSENC_HOST_DEVICE inline double learned_partial(const learned_params<T, C>& p, index_t block, index_t thread,
                                                 index_t threads, double mean, bool squares) {
  const index_t row = learned_row(p, block);
  double acc = 0.0;
  if (row < 0) return acc;
  for (index_t d = thread; d < p.out.extent[3]; d += threads) {
    const double h = learned_h(p, block, row, d);
    acc += squares ? (h - mean) * (h - mean) : h;
  }
  return acc;
}

/// The block's sum of the threads' partials, in one order on every thread (so all agree bit for bit).
POSENC_HOST_DEVICE inline double sum_partials(const double* part, index_t threads) {
  double s = 0.0;
  for (index_t t = 0; t < threads; ++t) s += part[t];
  return s;
}

/// Last phase: y_d = gamma_d (h_d - mean) rstd + beta_d with layer norm (mean and rstd from the reductions),
/// else y_d = x_d + scale * E[row, d] in the storage's arithmetic. Reads x_d before writing y_d (in place).
template <class T, class C>
POSENC_HOST_DEVICE inline void learned_write(const learned_params<T, C>& p, index_t block, index_t thread, index_t threads,
                                             double mean, double rstd) {
  const index_t row = learned_row(p, block);
  if (row < 0) return;
  const index_t len = p.out.extent[1];
  const index_t n = block / len, l = block % len;
  using A = simd::acc_t<T>;
  for (index_t d = thread; d < p.out.extent[3]; d += threads) {
    if (p.gamma != nullptr) {
      const double xhat = (learned_h(p, block, row, d) - mean) * rstd;
      *p.out.at(n, l, 0, d) = store_as<T>(load_as<double>(p.gamma[d]) * xhat + load_as<double>(p.beta[d]));
    } else {
      const A e = load_as<A>(p.table[row * p.out.extent[3] + d]);
      *p.out.at(n, l, 0, d) = store_as<T>(load_as<A>(*p.in.at(n, l, 0, d)) + static_cast<A>(p.scale) * e);
    }
  }
}

/// 1 / sqrt(var + eps) from the reduced sum of centred squares over D features.
POSENC_HOST_DEVICE inline double learned_rstd(double sum_squares, index_t dim, double eps) {
  return 1.0 / std::sqrt(sum_squares / static_cast<double>(dim) + eps);
}

}  // namespace detail::gpu
POSENC_END_NAMESPACE
