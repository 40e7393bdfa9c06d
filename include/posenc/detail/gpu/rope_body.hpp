// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// The per-block work of the GPU RoPE kernels, written once as host-and-device functions of (block, thread)
// indices over plain-data parameters. The CUDA launchers (posenc/cuda/rope.cuh) call them from __global__
// shells; tests/gpu_body_test.cpp calls them on the CPU, enumerating the grid, and compares with the golden
// files, so indexing, tails, strides and the GQA mapping are tested on every CI run, GPU or not. No CUDA header
// is needed here: storage types go through storage_traits and detail/math/half.hpp, angles through
// detail/math (the same formulas as the CPU kernels).
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "posenc/config.hpp"
#include "posenc/detail/math/half.hpp"
#include "posenc/detail/math/rotate.hpp"
#include "posenc/detail/math/xpos_scale.hpp"
#include "posenc/storage.hpp"
#include "posenc/tensor_view.hpp"
#include "posenc/types.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail::gpu {

// ---- plain data handed to a kernel ------------------------------------------------------------------------

/// A rank-4 view as plain data (a kernel argument): element (i0, i1, i2, i3) at data[sum i_k * stride[k]].
template <class T>
struct view4 {
  T* data;
  index_t extent[4];
  index_t stride[4];
  POSENC_HOST_DEVICE T* at(index_t i0, index_t i1, index_t i2, index_t i3) const {
    return data + i0 * stride[0] + i1 * stride[1] + i2 * stride[2] + i3 * stride[3];
  }
};

template <class T>
view4<T> pod_of(const strided_view<T, 4>& v) {
  return {v.data(), {v.extent(0), v.extent(1), v.extent(2), v.extent(3)}, {v.stride(0), v.stride(1), v.stride(2), v.stride(3)}};
}

/// An (N, L, D) view as the (N, L, 1, D) view the additive bodies (sinusoidal, learned) walk.
template <class T>
view4<T> pod_of(const strided_view<T, 3>& v) {
  return {v.data(), {v.extent(0), v.extent(1), 1, v.extent(2)}, {v.stride(0), v.stride(1), 0, v.stride(2)}};
}

/// posenc::positions as plain data: the position of token (n, l), read from device memory for the
/// per_sequence and per_token forms. A context shift passes its deltas as positions: per token (form 2) or one
/// delta for every token (form 3, `start`).
struct pos_params {
  int form;  ///< 0 offset, 1 per_sequence, 2 per_token (positions::form), 3 uniform (`start` for every token)
  index_t start;
  const std::int64_t* p64;
  const std::int32_t* p32;
  index_t stride;
  POSENC_HOST_DEVICE index_t value(index_t i) const { return p64 != nullptr ? p64[i] : static_cast<index_t>(p32[i]); }
  POSENC_HOST_DEVICE index_t at(index_t n, index_t l) const {
    if (form == 0) return start + l;
    if (form == 1) return value(n) + start + l;
    if (form == 3) return start;
    return value(n * stride + l);
  }
};

// ---- storage ------------------------------------------------------------------------------------------------

/// The arithmetic of a rotation: double if either side is double, else float (16-bit storage computes in float).
template <class In, class Out>
using acc_t = std::conditional_t<format_of_v<In> == storage_format::f64 || format_of_v<Out> == storage_format::f64,
                                 double, float>;

/// Loads one element of any storage type as A (exact: every f16/bf16/float value is a float).
template <class A, class S>
POSENC_HOST_DEVICE inline A load(const S* p) {
  constexpr storage_format f = format_of_v<S>;
  static_assert(f != storage_format::none, "posenc: not a storage type (specialise posenc::storage_traits)");
  if constexpr (f == storage_format::f32 || f == storage_format::f64) {
    return static_cast<A>(*p);
  } else {
    std::uint16_t bits;
    std::memcpy(&bits, static_cast<const void*>(p), 2);
    return static_cast<A>(f == storage_format::f16 ? math::half_bits_to_float(bits) : math::bf16_bits_to_float(bits));
  }
}

/// Stores v into any storage type, rounding once: double to float or float to f16/bf16, nearest even. A double
/// value bound for f16/bf16 goes through float first (the CPU kernels' convention for double arithmetic).
template <class S, class A>
POSENC_HOST_DEVICE inline void store(S* p, A v) {
  constexpr storage_format f = format_of_v<S>;
  if constexpr (f == storage_format::f32 || f == storage_format::f64) {
    *p = static_cast<S>(v);
  } else {
    const float x = static_cast<float>(v);
    const std::uint16_t bits = f == storage_format::f16 ? math::float_to_half_bits(x) : math::float_to_bf16_bits(x);
    std::memcpy(static_cast<void*>(p), &bits, 2);
  }
}

/// sin and cos of a double angle: CUDA's sincos on the device, libm on the host (both within an ulp or two).
POSENC_HOST_DEVICE inline void sincos_d(double theta, double& s, double& c) {
#if defined(__CUDA_ARCH__)
  ::sincos(theta, &s, &c);
#else
  s = std::sin(theta);
  c = std::cos(theta);
#endif
}

// ---- cos/sin sources ----------------------------------------------------------------------------------------

/// Cache-free: theta = p * w_i formed in double (exact to p*w*2^-53, as the CPU path), sin and cos in double.
/// Every source's cos_sin takes the token's position p, the token (n, l), the pair i, the direction and the
/// target's variant.
struct angle_source {
  const double* w;
  double magnitude;
  static constexpr bool double_arithmetic = false;
  static constexpr bool is_table = false;
  template <class A>
  POSENC_HOST_DEVICE void cos_sin(index_t p, index_t, index_t, index_t i, double sign, int, A& c, A& s) const {
    double sd, cd;
    sincos_d(static_cast<double>(p) * w[i], sd, cd);
    c = static_cast<A>(cd * magnitude);
    s = static_cast<A>(sign * sd * magnitude);
  }
};

/// A cos/sin table (posenc::cuda::rope_table, built from a plan): pair i of position p at
/// cos[p * row_stride + i * pair_stride]; positions past `rows` are not rotated (see the launcher).
template <class C>
struct table_source {
  const C* cos;
  const C* sin;
  index_t row_stride;
  index_t pair_stride;
  index_t rows;
  static constexpr bool double_arithmetic = false;
  static constexpr bool is_table = true;
  template <class A>
  POSENC_HOST_DEVICE void cos_sin(index_t p, index_t, index_t, index_t i, double sign, int, A& c, A& s) const {
    const index_t k = p * row_stride + i * pair_stride;
    c = load<A>(cos + k);
    s = static_cast<A>(sign) * load<A>(sin + k);
  }
};

/// Re-rotation from one plan to another at the same positions (posenc::rerotate_rope): theta = p*w_to - p*w_from,
/// each product in double as the CPU kernels form it, magnitude m_to/m_from.
struct rerotate_source {
  const double* w_from;
  const double* w_to;
  double ratio;
  static constexpr bool double_arithmetic = false;
  static constexpr bool is_table = false;
  template <class A>
  POSENC_HOST_DEVICE void cos_sin(index_t p, index_t, index_t, index_t i, double sign, int, A& c, A& s) const {
    const double pd = static_cast<double>(p);
    double sd, cd;
    sincos_d(pd * w_to[i] - pd * w_from[i], sd, cd);
    c = static_cast<A>(cd * ratio);
    s = static_cast<A>(sign * sd * ratio);
  }
};

/// xPos (torchscale, Sun et al. 2022): theta = p * w_i, times zeta_i^((p - C)/scale_base) for variant 0 (upscale,
/// queries) or its reciprocal for variant 1 (downscale, keys), each exp(+-ln(zeta_i) (p - C)/scale_base) in
/// double. Double arithmetic throughout: the scale may leave float's range where the scaled value does not.
struct xpos_source {
  const double* w;
  const double* log_zeta;
  index_t center;
  double scale_base;
  static constexpr bool double_arithmetic = true;
  static constexpr bool is_table = false;
  template <class A>
  POSENC_HOST_DEVICE void cos_sin(index_t p, index_t, index_t, index_t i, double sign, int variant, A& c, A& s) const {
    double sd, cd;
    sincos_d(static_cast<double>(p) * w[i], sd, cd);
    const double e = math::xpos_log_scale(log_zeta[i], p, center, scale_base);
    const double scale = std::exp(variant == 0 ? e : -e);
    c = static_cast<A>(cd * scale);
    s = static_cast<A>(sign * sd * scale);
  }
};

/// MRoPE (Qwen2-VL / Qwen3-VL): pair i turns by p[axis_i] * w_i, p the token's (t, h, w) positions at
/// ids[n * batch_stride + axis * axis_stride + l] (device memory); the token position the body passes is unused.
struct mrope_source {
  const double* w;
  const std::uint8_t* axis;
  double magnitude;
  const std::int64_t* ids;
  index_t batch_stride;
  index_t axis_stride;
  static constexpr bool double_arithmetic = false;
  static constexpr bool is_table = false;
  template <class A>
  POSENC_HOST_DEVICE void cos_sin(index_t, index_t n, index_t l, index_t i, double sign, int, A& c, A& s) const {
    const index_t p = ids[n * batch_stride + static_cast<index_t>(axis[i]) * axis_stride + l];
    const angle_source plain{w, magnitude};
    plain.cos_sin(p, n, l, i, sign, 0, c, s);
  }
};

// ---- the kernel body ----------------------------------------------------------------------------------------

/// Up to two rotated tensors of one call (q and k of a fused QKV buffer with any head counts: GQA).
template <class In, class Out>
struct rope_pair_targets {
  view4<const In> in[2];
  view4<Out> out[2];
  int count;
};

/// The plain-data targets of a launch from its checked rope_io views (one or two).
template <class In, class Out, class Io, std::size_t K>
rope_pair_targets<In, Out> pod_targets(const std::array<Io, K>& targets) {
  static_assert(K == 1 || K == 2, "one or two targets per launch");
  rope_pair_targets<In, Out> t{};
  for (std::size_t k = 0; k < K; ++k) {
    t.in[k] = pod_of(targets[k].in);
    t.out[k] = pod_of(targets[k].out);
  }
  t.count = static_cast<int>(K);
  return t;
}

/// Everything a RoPE block needs: the targets, positions, the cos/sin source and the window.
template <class In, class Out, class Src>
struct rope_params {
  rope_pair_targets<In, Out> t;
  pos_params pos;
  Src src;
  rope_style style;
  index_t offset;  ///< first rotated feature
  index_t pairs;   ///< R/2
  double sign;     ///< +1 forward, -1 backward (the transpose)
  int variant[2];  ///< per target, the source's variant (xPos: 0 upscale, 1 downscale); 0 otherwise
};

/// Block `block` handles token (n, l) = (block / L, block % L) of every target; thread `thread` of `threads`
/// takes every threads-th item. The grid is N * L blocks of any width.
template <class In, class Out, class Src>
POSENC_HOST_DEVICE inline void rope_block(const rope_params<In, Out, Src>& p, index_t block, index_t thread,
                                          index_t threads) {
  using A = std::conditional_t<Src::double_arithmetic, double, acc_t<In, Out>>;
  const index_t len = p.t.in[0].extent[1];
  const index_t n = block / len, l = block % len;
  const index_t pos = p.pos.at(n, l);
  if constexpr (Src::is_table) {
    if (pos < 0 || pos >= p.src.rows) return;  // device positions are not read on the host: never read past the table
  }
  for (int k = 0; k < p.t.count; ++k) {
    const view4<const In>& in = p.t.in[k];
    const view4<Out>& out = p.t.out[k];
    const index_t heads = in.extent[2];
    // cos and sin of a pair are the same for every head of the token: each is formed once and applied to the
    // heads of one lane (h = lane, lane + lanes, ...). The threads split into `lanes` groups of `pairs`, so
    // neighbouring threads touch neighbouring features of one head (coalesced), and the sin/cos work per token
    // is pairs * lanes instead of pairs * heads.
    const index_t lanes = threads > p.pairs ? threads / p.pairs : 1;
    for (index_t j = thread; j < p.pairs * lanes; j += threads) {
      const index_t i = j % p.pairs, lane = j / p.pairs;
      const index_t fa = p.offset + (p.style == rope_style::interleaved ? 2 * i : i);
      const index_t fb = p.offset + (p.style == rope_style::interleaved ? 2 * i + 1 : i + p.pairs);
      A c, s;
      p.src.cos_sin(pos, n, l, i, p.sign, p.variant[k], c, s);
      for (index_t h = lane; h < heads; h += lanes) {
        const A a = load<A>(in.at(n, l, h, fa)), b = load<A>(in.at(n, l, h, fb));
        A ra, rb;
        math::rotate_pair(a, b, c, s, ra, rb);
        store(out.at(n, l, h, fa), ra);
        store(out.at(n, l, h, fb), rb);
      }
    }
    // Out of place: the features outside [offset, offset + 2 pairs) are copied.
    if (static_cast<const void*>(in.data) == static_cast<const void*>(out.data)) continue;
    const index_t rest = in.extent[3] - 2 * p.pairs;
    for (index_t j = thread; j < heads * rest; j += threads) {
      const index_t h = j / rest;
      index_t f = j % rest;
      if (f >= p.offset) f += 2 * p.pairs;
      store(out.at(n, l, h, f), load<A>(in.at(n, l, h, f)));
    }
  }
}

/// Block `block` fills row `block` of a cos/sin table of `pairs` columns from a plan: cos(p w_i) m and
/// sin(p w_i) m, formed in double and rounded once to C.
template <class C>
POSENC_HOST_DEVICE inline void table_block(const double* w, double magnitude, index_t pairs, C* cos, C* sin,
                                           index_t block, index_t thread, index_t threads) {
  const angle_source src{w, magnitude};
  for (index_t i = thread; i < pairs; i += threads) {
    double c, s;
    src.cos_sin(block, 0, 0, i, 1.0, 0, c, s);
    store(cos + block * pairs + i, c);
    store(sin + block * pairs + i, s);
  }
}

}  // namespace detail::gpu
POSENC_END_NAMESPACE
