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
#include "posenc/detail/kernels/params.hpp"
#include "posenc/positions.hpp"
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

// ---- storage ------------------------------------------------------------------------------------------------
// The CPU kernels' conversions (simd::load_as, simd::store_as: one rounding, double to 16 bits through float) and
// arithmetic type (rope_acc_t, detail/kernels/params.hpp), on the device too.

using simd::load_as;
using simd::store_as;

/// sin and cos of a double angle: CUDA's sincos on the device, libm on the host (both within an ulp or two).
POSENC_HOST_DEVICE inline void sincos_d(double theta, double& s, double& c) {
#if defined(__CUDA_ARCH__)
  ::sincos(theta, &s, &c);
#else
  s = std::sin(theta);
  c = std::cos(theta);
#endif
}

// ---- positions and cos/sin sources: the CPU kernels' plain data (detail/kernels/params.hpp), one pair at a time

/// The three positions (t, h, w) of an MRoPE token.
struct axes3 {
  index_t v[3];
};

/// The position a rotation of token (n, l) reads: positions and context-shift deltas give one, MRoPE three.
POSENC_HOST_DEVICE inline index_t token_position(const positions& p, index_t n, index_t l) { return p.at(n, l); }
POSENC_HOST_DEVICE inline index_t token_position(const delta_positions& p, index_t n, index_t l) { return p.at(n, l); }
POSENC_HOST_DEVICE inline axes3 token_position(const mrope_positions& p, index_t n, index_t l) {
  const std::int64_t* b = p.data() + n * p.batch_stride() + l;
  return {{b[0], b[p.axis_stride()], b[2 * p.axis_stride()]}};
}

/// Whether a token's position has a row in the source: a table has `rows` (device positions are not read on the
/// host, so a position past the table is left unrotated instead of read past it); the formulas have every row.
template <class Src, class P>
POSENC_HOST_DEVICE inline bool has_row(const Src&, const P&) {
  return true;
}
template <class C>
POSENC_HOST_DEVICE inline bool has_row(const table_src<C>& t, index_t p) {
  return p >= 0 && p < t.rows;
}

/// cos and sin of pair i at position p times the source's magnitude, sin times `sign` (-1: the transpose);
/// `variant` is xPos's upscale (0) or downscale (1). The CPU kernels' formulas, one pair at a time.
/// RoPE and context shift: theta = p * w_i formed in double (exact to p*w*2^-53, as the CPU path).
template <class A>
POSENC_HOST_DEVICE void pair_cos_sin(const angle_src& src, index_t p, index_t i, double sign, int, A& c, A& s) {
  double sd, cd;
  sincos_d(static_cast<double>(p) * src.w[i], sd, cd);
  c = static_cast<A>(cd * src.magnitude);
  s = static_cast<A>(sign * sd * src.magnitude);
}
/// A table (posenc::cuda::rope_table): pair i of position p at cos[p * row_stride + i * pair_stride].
template <class A, class C>
POSENC_HOST_DEVICE void pair_cos_sin(const table_src<C>& t, index_t p, index_t i, double sign, int, A& c, A& s) {
  const index_t k = p * t.row_stride + i * t.pair_stride;
  c = load_as<A>(t.cos[k]);
  s = static_cast<A>(sign) * load_as<A>(t.sin[k]);
}
/// Re-rotation (posenc::rerotate_rope): theta = p*w_to - p*w_from, each product in double, magnitude m_to/m_from.
template <class A>
POSENC_HOST_DEVICE void pair_cos_sin(const rerotate_src& src, index_t p, index_t i, double sign, int, A& c, A& s) {
  const double pd = static_cast<double>(p);
  double sd, cd;
  sincos_d(pd * src.w_to[i] - pd * src.w_from[i], sd, cd);
  c = static_cast<A>(cd * src.ratio);
  s = static_cast<A>(sign * sd * src.ratio);
}
/// xPos (torchscale, Sun et al. 2022): theta = p * w_i, times zeta_i^((p - C)/scale_base) for variant 0 (upscale,
/// queries) or its reciprocal for variant 1 (downscale, keys), each exp(+-ln(zeta_i) (p - C)/scale_base) in
/// double (rope_acc_t is double for xPos: the scale may leave float's range where the scaled value does not).
template <class A>
POSENC_HOST_DEVICE void pair_cos_sin(const xpos_src& src, index_t p, index_t i, double sign, int variant, A& c, A& s) {
  double sd, cd;
  sincos_d(static_cast<double>(p) * src.w[i], sd, cd);
  const double e = math::xpos_log_scale(src.log_zeta[i], p, src.center, src.scale_base);
  const double scale = std::exp(variant == 0 ? e : -e);
  c = static_cast<A>(cd * scale);
  s = static_cast<A>(sign * sd * scale);
}
/// MRoPE (Qwen2-VL / Qwen3-VL): pair i turns by p[axis_i] * w_i.
template <class A>
POSENC_HOST_DEVICE void pair_cos_sin(const mrope_src& src, const axes3& p, index_t i, double sign, int, A& c, A& s) {
  pair_cos_sin(angle_src{src.w, src.magnitude, src.w_max}, p.v[src.axis[i]], i, sign, 0, c, s);
}

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

/// Everything a RoPE block needs: the targets, positions (posenc::positions, delta_positions for a context
/// shift, mrope_positions for MRoPE; arrays in device memory), the cos/sin source and the window.
template <class In, class Out, class Src, class Pos = positions>
struct rope_params {
  rope_pair_targets<In, Out> t;
  Pos pos;
  Src src;
  rope_style style;
  index_t offset;  ///< first rotated feature
  index_t pairs;   ///< R/2
  double sign;     ///< +1 forward, -1 backward (the transpose)
  int variant[2];  ///< per target, the source's variant (xPos: 0 upscale, 1 downscale); 0 otherwise
};

/// How rope_block groups its work: a thread rotates `pairs` consecutive pairs of `heads` heads at a time, each
/// head's 2 * pairs features read as two chunks of `pairs` elements (one vector load or store of 8 or 16 bytes
/// on a device where the views allow it), all loaded before any is stored. Four pairs of one head in float
/// arithmetic, two in double: at most 80 registers per thread (cuda/common.cuh's launch bound; eight half pairs
/// or two heads of four took 80-89 on sm_90; capped at 64 registers, eleven kernels spilled). Measured on an
/// H200: bench/results/2026-11-26-h200-cuda.md.
template <class In, class Out, class A>
struct rope_grouping {
  static constexpr int pairs = sizeof(A) > 4 ? 2 : 4;
  static constexpr int heads = 1;
};

/// The bytes of one vector access to a chunk of G elements of T (at most 16: the widest load of a thread).
template <class T, int G>
inline constexpr int chunk_piece_bytes = static_cast<int>(G * sizeof(T) < 16 ? G * sizeof(T) : 16);

/// One vector access of a chunk: chunk_piece_bytes of T, aligned to them.
template <class T, int G>
struct alignas(chunk_piece_bytes<T, G>) chunk_piece {
  static constexpr int elements = chunk_piece_bytes<T, G> / static_cast<int>(sizeof(T));
  T e[elements];
};

/// G consecutive elements of T from p into v: on a device in pieces of chunk_piece_bytes (p aligned to them).
template <int G, class T>
POSENC_HOST_DEVICE inline void load_chunk(const T* p, T (&v)[G]) {
#if defined(__CUDA_ARCH__)
  using piece = chunk_piece<T, G>;
  constexpr int per = piece::elements;
  POSENC_DEVICE_UNROLL
  for (int k = 0; k < G / per; ++k) {
    const piece q = reinterpret_cast<const piece*>(p)[k];
    POSENC_DEVICE_UNROLL
    for (int e = 0; e < per; ++e) v[k * per + e] = q.e[e];
  }
#else
  for (int e = 0; e < G; ++e) v[e] = p[e];
#endif
}

/// The store of load_chunk.
template <int G, class T>
POSENC_HOST_DEVICE inline void store_chunk(T* p, const T (&v)[G]) {
#if defined(__CUDA_ARCH__)
  using piece = chunk_piece<T, G>;
  constexpr int per = piece::elements;
  POSENC_DEVICE_UNROLL
  for (int k = 0; k < G / per; ++k) {
    piece q;
    POSENC_DEVICE_UNROLL
    for (int e = 0; e < per; ++e) q.e[e] = v[k * per + e];
    reinterpret_cast<piece*>(p)[k] = q;
  }
#else
  for (int e = 0; e < G; ++e) p[e] = v[e];
#endif
}

/// Whether every chunk of G elements that rope_block reads or writes in `v` starts on a chunk_piece_bytes
/// boundary: contiguous features, the address and the other strides, the window's offset and its pairs all
/// multiples of G elements.
template <int G, class T>
POSENC_HOST_DEVICE inline bool chunks_aligned(const view4<T>& v, index_t offset, index_t pairs) {
  const auto address = reinterpret_cast<std::uintptr_t>(v.data);
  return v.stride[3] == 1 && address % chunk_piece_bytes<std::remove_const_t<T>, G> == 0 && v.stride[0] % G == 0 &&
         v.stride[1] % G == 0 && v.stride[2] % G == 0 && offset % G == 0 && pairs % G == 0;
}

/// The rotation of one token of one target, G pairs and U heads per step of a thread (G = 1: any views). A
/// thread's chunks are the features of pairs i0 .. i0+G-1: half-split, a at offset + i0 and b at offset + pairs
/// + i0; interleaved, 2G features from offset + 2 i0 with a and b alternating.
template <int G, int U, bool Interleaved, class A, class In, class Out, class Src, class P>
POSENC_HOST_DEVICE inline void rotate_token(const view4<const In>& in, const view4<Out>& out, const Src& src, const P& pos,
                                            index_t n, index_t l, index_t offset, index_t pairs, double sign,
                                            int variant, index_t thread, index_t threads) {
  const index_t heads = in.extent[2], groups = pairs / G;
  // cos and sin of a pair are the same for every head of the token: each is formed once and applied to the
  // heads of one lane (h = lane, lane + lanes, ...). The threads split into `lanes` rows of `groups`, so
  // neighbouring threads touch neighbouring features of one head (coalesced), and the sin/cos work per token is
  // pairs * lanes instead of pairs * heads.
  const index_t lanes = threads > groups ? threads / groups : 1;
  for (index_t j = thread; j < groups * lanes; j += threads) {
    const index_t i0 = (j % groups) * G, lane = j / groups;
    A c[G], s[G];
    POSENC_DEVICE_UNROLL
    for (int g = 0; g < G; ++g) pair_cos_sin(src, pos, i0 + g, sign, variant, c[g], s[g]);
    const index_t fa = offset + (Interleaved ? 2 * i0 : i0), fb = Interleaved ? fa + G : fa + pairs;
    const In* ia = in.at(n, l, 0, fa);
    const In* ib = in.at(n, l, 0, fb);
    Out* oa = out.at(n, l, 0, fa);
    Out* ob = out.at(n, l, 0, fb);
    // U heads are loaded before any is stored: in place, a store may alias a later load as far as the compiler
    // knows, so a loop of one head at a time has one load in flight per thread and the memory system waits (on
    // an H200 such a loop reached 0.66 of a copy's bandwidth in float, 0.35 in half). The heads are distinct
    // elements, so reading them first is the same computation.
    for (index_t h0 = lane; h0 < heads; h0 += U * lanes) {
      In xa[U][G] = {}, xb[U][G] = {};
      POSENC_DEVICE_UNROLL
      for (int u = 0; u < U; ++u) {
        const index_t h = h0 + u * lanes;
        if (h >= heads) break;
        load_chunk<G>(ia + h * in.stride[2], xa[u]);
        load_chunk<G>(ib + h * in.stride[2], xb[u]);
      }
      POSENC_DEVICE_UNROLL
      for (int u = 0; u < U; ++u) {
        const index_t h = h0 + u * lanes;
        if (h >= heads) break;
        // Feature k of the 2G is xa[k] below G and xb[k - G] above; interleaved, pair g is features 2g, 2g + 1.
        In x[2 * G];
        Out y[2 * G];
        POSENC_DEVICE_UNROLL
        for (int g = 0; g < G; ++g) {
          x[g] = xa[u][g];
          x[G + g] = xb[u][g];
        }
        POSENC_DEVICE_UNROLL
        for (int g = 0; g < G; ++g) {
          const int ka = Interleaved ? 2 * g : g, kb = Interleaved ? 2 * g + 1 : G + g;
          A ra, rb;
          math::rotate_pair(load_as<A>(x[ka]), load_as<A>(x[kb]), c[g], s[g], ra, rb);
          y[ka] = store_as<Out>(ra);
          y[kb] = store_as<Out>(rb);
        }
        Out ya[G], yb[G];
        POSENC_DEVICE_UNROLL
        for (int g = 0; g < G; ++g) {
          ya[g] = y[g];
          yb[g] = y[G + g];
        }
        store_chunk<G>(oa + h * out.stride[2], ya);
        store_chunk<G>(ob + h * out.stride[2], yb);
      }
    }
  }
}

/// rotate_token for the call's pair style.
template <int G, int U, class A, class In, class Out, class Src, class P>
POSENC_HOST_DEVICE inline void rotate_token_styled(bool interleaved, const view4<const In>& in, const view4<Out>& out,
                                                   const Src& src, const P& pos, index_t n, index_t l, index_t offset,
                                                   index_t pairs, double sign, int variant, index_t thread,
                                                   index_t threads) {
  if (interleaved) rotate_token<G, U, true, A>(in, out, src, pos, n, l, offset, pairs, sign, variant, thread, threads);
  else rotate_token<G, U, false, A>(in, out, src, pos, n, l, offset, pairs, sign, variant, thread, threads);
}

/// Block `block` handles token (n, l) = (block / L, block % L) of every target; thread `thread` of `threads`
/// takes every threads-th item. The grid is N * L blocks of any width.
template <class In, class Out, class Src, class Pos>
POSENC_HOST_DEVICE inline void rope_block(const rope_params<In, Out, Src, Pos>& p, index_t block, index_t thread,
                                          index_t threads) {
  using A = rope_acc_t<Src, In, Out>;
  using grouping = rope_grouping<In, Out, A>;
  constexpr int G = grouping::pairs, U = grouping::heads;
  const index_t len = p.t.in[0].extent[1];
  const index_t n = block / len, l = block % len;
  const auto pos = token_position(p.pos, n, l);
  if (!has_row(p.src, pos)) return;
  const bool interleaved = p.style == rope_style::interleaved;
  for (int k = 0; k < p.t.count; ++k) {
    const view4<const In>& in = p.t.in[k];
    const view4<Out>& out = p.t.out[k];
    const index_t heads = in.extent[2];
    if (chunks_aligned<G>(in, p.offset, p.pairs) && chunks_aligned<G>(out, p.offset, p.pairs))
      rotate_token_styled<G, U, A>(interleaved, in, out, p.src, pos, n, l, p.offset, p.pairs, p.sign, p.variant[k], thread, threads);
    else
      rotate_token_styled<1, U, A>(interleaved, in, out, p.src, pos, n, l, p.offset, p.pairs, p.sign, p.variant[k], thread, threads);
    // Out of place: the features outside [offset, offset + 2 pairs) are copied.
    if (static_cast<const void*>(in.data) == static_cast<const void*>(out.data)) continue;
    const index_t rest = in.extent[3] - 2 * p.pairs;
    for (index_t j = thread; j < heads * rest; j += threads) {
      const index_t h = j / rest;
      index_t f = j % rest;
      if (f >= p.offset) f += 2 * p.pairs;
      *out.at(n, l, h, f) = store_as<Out>(load_as<A>(*in.at(n, l, h, f)));
    }
  }
}

/// Block `block` fills row `block` of a cos/sin table of `pairs` columns from a plan: cos(p w_i) m and
/// sin(p w_i) m, formed in double and rounded once to C.
template <class C>
POSENC_HOST_DEVICE inline void table_block(const double* w, double magnitude, index_t pairs, C* cos, C* sin,
                                           index_t block, index_t thread, index_t threads) {
  const angle_src src{w, magnitude, 0.0};
  for (index_t i = thread; i < pairs; i += threads) {
    double c, s;
    pair_cos_sin(src, block, i, 1.0, 0, c, s);
    cos[block * pairs + i] = store_as<C>(c);
    sin[block * pairs + i] = store_as<C>(s);
  }
}

}  // namespace detail::gpu
POSENC_END_NAMESPACE
