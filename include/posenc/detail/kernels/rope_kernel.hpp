// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// The rotary kernel, written once: one driver walks tokens and heads, asks a *source* for the (cos, sin) of
// each pair at the token's position, and hands one head row at a time to the per-ISA row kernel. RoPE from a
// plan (angles formed on the fly), RoPE from a cache and xPos differ only in their source.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <type_traits>

#include "posenc/config.hpp"
#include "posenc/detail/math/inv_freq.hpp"
#include "posenc/detail/math/rotate.hpp"
#include "posenc/detail/simd/vec.hpp"
#include "posenc/positions.hpp"
#include "posenc/rope_scaling.hpp"
#include "posenc/tensor_view.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail {

/// An input/output pair of (N, L, H, D) views; in place when both address the same elements.
template <class T>
struct rope_target {
  strided_view<const T, 4> in;
  strided_view<T, 4> out;
};

/// Pairs per chunk of cos/sin formed at once on the stack: 128 pairs cover head dims up to 256 in one chunk
/// and keep the buffers (2 x 128 doubles) in L1.
inline constexpr index_t rope_chunk = 128;

/// An angle and the factor multiplying its cos and sin.
struct polar {
  double theta;
  double scale;
};

/// cos/sin formed per position in double from `Pair(p, i) -> polar`, rounded to C once. Every cache-free
/// variant (plain RoPE, context shift, re-rotation, MRoPE, xPos) is one `Pair` functor over this loop.
template <class Pair>
struct polar_source {
  Pair pair;

  template <class P, class C>
  void fill(const P& p, index_t begin, index_t end, C* buf_cos, C* buf_sin, const C*& cos, const C*& sin) const {
    for (index_t i = begin; i < end; ++i) {
      const polar v = pair(p, i);
      buf_cos[i - begin] = static_cast<C>(v.scale * std::cos(v.theta));
      buf_sin[i - begin] = static_cast<C>(v.scale * std::sin(v.theta));
    }
    cos = buf_cos;
    sin = buf_sin;
  }
};

/// RoPE: theta = p * w_i, scale = the plan's magnitude (1 for a context shift).
struct rope_pair {
  const double* inv_freq;
  double magnitude;
  polar operator()(index_t p, index_t i) const { return {math::angle(p, inv_freq[i]), magnitude}; }
};
using angle_source = polar_source<rope_pair>;

inline angle_source make_angle_source(const double* inv_freq, double magnitude) { return {{inv_freq, magnitude}}; }

/// cos/sin read from a precomputed [positions][pairs] table (rope_cache).
template <class C>
struct table_source {
  const C* cos_table;
  const C* sin_table;
  index_t pairs;

  void fill(index_t p, index_t begin, index_t, C*, C*, const C*& cos, const C*& sin) const {
    cos = cos_table + p * pairs + begin;
    sin = sin_table + p * pairs + begin;
  }
};

template <class Isa>
struct rope_row_kernel;

/// The portable reference: one pair at a time, any feature stride. Vector ISAs specialise this with the same
/// signature and fall back to it for strided rows and tails.
template <>
struct rope_row_kernel<simd::scalar> {
  template <class A, class T, class C>
  static void run(rope_style style, const T* in, index_t in_stride, T* out, index_t out_stride, index_t pairs,
                  index_t begin, index_t end, const C* cos, const C* sin, A sin_sign) {
    for (index_t i = begin; i < end; ++i) {
      const index_t ia = style == rope_style::interleaved ? 2 * i : i;
      const index_t ib = style == rope_style::interleaved ? 2 * i + 1 : i + pairs;
      const A a = simd::load_as<A>(in[ia * in_stride]);
      const A b = simd::load_as<A>(in[ib * in_stride]);
      const A c = static_cast<A>(cos[i - begin]);
      const A s = sin_sign * static_cast<A>(sin[i - begin]);
      A ya;
      A yb;
      math::rotate_pair(a, b, c, s, ya, yb);
      out[ia * out_stride] = simd::store_as<T>(ya);
      out[ib * out_stride] = simd::store_as<T>(yb);
    }
  }
};

/// The vector kernel, written once over `vec<float, Isa>` (detail/simd/vec.hpp): float arithmetic on
/// contiguous rows (feature stride 1) of float, half or bfloat16 storage with float cos/sin. Each vector does
/// the scalar kernel's arithmetic per element, with the two products of a rotated value fused (one rounding
/// fewer, so results agree with the scalar kernel to float rounding). Double, strided rows and the tail of
/// fewer than one vector of pairs go to the scalar kernel. The ops are called unqualified and found by
/// argument-dependent lookup in detail::simd (their arguments are Isa tags and vec<float, Isa>), so this
/// template parses in translation units where no vector ISA is compiled in.
template <class Isa>
struct rope_row_kernel {
  template <class A, class T, class C>
  static void run(rope_style style, const T* in, index_t in_stride, T* out, index_t out_stride, index_t pairs,
                  index_t begin, index_t end, const C* cos, const C* sin, A sin_sign) {
    index_t i = begin;
    if constexpr (std::is_same_v<A, float> && std::is_same_v<C, float> &&
                  (std::is_same_v<T, float> || simd::is_narrow_float_v<T>)) {
      if (in_stride == 1 && out_stride == 1) {
        i = style == rope_style::interleaved ? interleaved(in, out, begin, end, cos, sin, sin_sign)
                                             : half_split(in, out, pairs, begin, end, cos, sin, sin_sign);
      }
    }
    rope_row_kernel<simd::scalar>::template run<A>(style, in, in_stride, out, out_stride, pairs, i, end, cos + (i - begin),
                                                   sin + (i - begin), sin_sign);
  }

 private:
  using V = simd::vec<float, Isa>;
  static constexpr index_t W = V::width;

  /// a_i = in[i], b_i = in[i + pairs]: W pairs per step, four loads and two stores, no shuffles. Returns the
  /// first pair not done.
  template <class T>
  static index_t half_split(const T* in, T* out, index_t pairs, index_t begin, index_t end, const float* cos,
                            const float* sin, float sin_sign) {
    const V sign = set1(Isa{}, sin_sign);
    index_t i = begin;
    for (; i + W <= end; i += W) {
      const V a = load(Isa{}, in + i);
      const V b = load(Isa{}, in + i + pairs);
      const V c = load(Isa{}, cos + (i - begin));
      const V s = mul(sign, load(Isa{}, sin + (i - begin)));
      store(fnma(b, s, mul(a, c)), out + i);          // a c - b s
      store(fma(a, s, mul(b, c)), out + i + pairs);   // b c + a s
    }
    return i;
  }

  /// (a_i, b_i) = (in[2i], in[2i+1]): W/2 pairs per step. With c and s duplicated per pair,
  /// y = x c + sign_alternate(pair_swap(x)) s gives (a c - b s, b c + a s) in place, one in-lane shuffle per
  /// vector instead of a deinterleave/reinterleave.
  template <class T>
  static index_t interleaved(const T* in, T* out, index_t begin, index_t end, const float* cos, const float* sin,
                             float sin_sign) {
    constexpr index_t P = W / 2;
    const V sign = set1(Isa{}, sin_sign);
    index_t i = begin;
    for (; i + P <= end; i += P) {
      const V x = load(Isa{}, in + 2 * i);
      const V c = load_dup_pairs(Isa{}, cos + (i - begin));
      const V s = mul(sign, load_dup_pairs(Isa{}, sin + (i - begin)));
      store(fma(x, c, mul(sign_alternate(pair_swap(x)), s)), out + 2 * i);
    }
    return i;
  }
};

/// Applies the rotation to every target. All targets share N and L (q and k of one batch), their positions
/// and the window [offset, offset + 2*pairs) of head_dim; validation happened at the public entry.
/// `Pos::at(n, l)` yields what `Source::fill` takes: one position (RoPE, xPos), a signed delta (K-shift) or one
/// position per axis (MRoPE).
template <class Isa, class A, class C, class Source, class Pos, class T, std::size_t K>
void rope_apply(const Source& src, const Pos& pos, rope_style style, index_t offset, index_t pairs,
                A sin_sign, const std::array<rope_target<T>, K>& targets) {
  const index_t n_batch = targets[0].in.extent(0);
  const index_t n_len = targets[0].in.extent(1);
  C buf_cos[rope_chunk];
  C buf_sin[rope_chunk];
  // Sequence-major order, reusing cos/sin while the position repeats (an offset gives every sequence the
  // same positions): forming them is the cost of the cache-free path, so a batch of N sequences pays for
  // one. Only when the whole window is one chunk, so the buffers hold the full row.
  const bool reuse = pairs <= rope_chunk;
  bool have_row = false;
  decltype(pos.at(0, 0)) last_p{};
  const C* cos_row = nullptr;
  const C* sin_row = nullptr;
  for (index_t l = 0; l < n_len; ++l) {
    for (index_t n = 0; n < n_batch; ++n) {
      const auto p = pos.at(n, l);
      for (const auto& t : targets) {
        if (static_cast<const void*>(t.in.data()) == static_cast<const void*>(t.out.data())) continue;
        // Out of place: the features outside the rotated window pass through.
        const index_t d = t.in.extent(3);
        for (index_t h = 0; h < t.in.extent(2); ++h)
          for (index_t f = 0; f < d; ++f)
            if (f < offset || f >= offset + 2 * pairs) t.out(n, l, h, f) = t.in(n, l, h, f);
      }
      for (index_t b = 0; b < pairs; b += rope_chunk) {
        const index_t e = b + rope_chunk < pairs ? b + rope_chunk : pairs;
        const C* cos = cos_row;
        const C* sin = sin_row;
        if (!(reuse && have_row && p == last_p)) {
          src.fill(p, b, e, buf_cos, buf_sin, cos, sin);
          cos_row = cos;
          sin_row = sin;
          last_p = p;
          have_row = true;
        }
        for (const auto& t : targets) {
          for (index_t h = 0; h < t.in.extent(2); ++h) {
            const T* in_row = &t.in(n, l, h, offset);
            T* out_row = &t.out(n, l, h, offset);
            rope_row_kernel<Isa>::template run<A>(style, in_row, t.in.stride(3), out_row, t.out.stride(3), pairs, b, e,
                                                  cos, sin, sin_sign);
          }
        }
      }
    }
  }
}

}  // namespace detail
POSENC_END_NAMESPACE
