// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// The per-block work of the GPU sinusoidal kernels (see rope_body.hpp for the scheme): one block per token (n, l)
// of an (N, L, D) view, its threads over the D/2 pairs. The values of the CPU path: w_i from
// math::sinusoid_inv_freq, sin and cos of p * w_i in double, the row of padding_idx zero, the sum with the input
// formed in double and rounded once.
#pragma once

#include <cmath>

#include "posenc/config.hpp"
#include "posenc/detail/gpu/rope_body.hpp"
#include "posenc/detail/kernels/params.hpp"
#include "posenc/detail/math/sinusoid.hpp"
#include "posenc/types.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail::gpu {

/// A table write (add false: out = T[p]) or an addition (out = in + T[p]) over (N, L, 1, D) views.
template <class T>
struct sinusoid_params_gpu {
  view4<const T> in;  ///< ignored when !add
  view4<T> out;
  positions pos;
  sinusoid_params sp;
  bool add;
};

/// Block `block` = token (block / L, block % L); thread `thread` of `threads` takes every threads-th pair.
template <class T>
POSENC_HOST_DEVICE inline void sinusoid_block(const sinusoid_params_gpu<T>& p, index_t block, index_t thread,
                                              index_t threads) {
  const index_t len = p.out.extent[1];
  const index_t n = block / len, l = block % len;
  const index_t pos = p.pos.at(n, l);
  const index_t half = p.sp.dim / 2;
  const bool padding = p.sp.has_padding && pos == p.sp.padding_idx;
  // An in-place add of the zero row changes nothing (and must not turn -0 into +0): the CPU path skips it too.
  if (padding && p.add && static_cast<const void*>(p.in.data) == static_cast<const void*>(p.out.data)) return;
  for (index_t i = thread; i < half; i += threads) {
    double s = 0.0, c = 0.0;
    if (!padding) {
      sincos_d(static_cast<double>(pos) * math::sinusoid_inv_freq(p.sp.base, i, p.sp.dim, p.sp.concat), s, c);
    }
    const index_t fs = p.sp.concat ? i : 2 * i, fc = p.sp.concat ? half + i : 2 * i + 1;
    if (p.add) {
      *p.out.at(n, l, 0, fs) = store_as<T>(load_as<double>(*p.in.at(n, l, 0, fs)) + s);
      *p.out.at(n, l, 0, fc) = store_as<T>(load_as<double>(*p.in.at(n, l, 0, fc)) + c);
    } else {
      *p.out.at(n, l, 0, fs) = store_as<T>(s);
      *p.out.at(n, l, 0, fc) = store_as<T>(c);
    }
  }
}

}  // namespace detail::gpu
POSENC_END_NAMESPACE
