// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// Interleaved <-> half-split layout conversion of (N, L, H, D) tensors, written once over the op list (no
// include guard: see all-inl.hpp). A pure permutation, so it moves bits: float and double lanes for 4- and
// 8-byte elements, 16-bit patterns zero-extended into float lanes for half and bfloat16 (no conversion, so
// every payload, NaNs included, arrives unchanged).

POSENC_BEGIN_NAMESPACE
namespace detail {
namespace POSENC_TARGET_NS {

/// The lane type that carries T's bits: float for 2- and 4-byte elements, double for 8.
template <class T>
using bits_lane_t = std::conditional_t<sizeof(T) == 8, double, float>;

template <class D, class T>
vec_of<D> load_bits(D d, const T* p) {
  if constexpr (sizeof(T) == 2) {
    return load_u16_bits(d, p);
  } else {
    return load(d, reinterpret_cast<const typename D::lane_type*>(p));
  }
}
template <class V, class T>
void store_bits(V v, T* p) {
  if constexpr (sizeof(T) == 2) {
    store_u16_bits(v, p);
  } else {
    store(v, reinterpret_cast<bits_lane_t<T>*>(p));
  }
}

/// A vector of T's bits to `p`: streamed (store_stream, non-temporal where the ISA has it) for 4- and 8-byte
/// elements at vector-aligned addresses when Stream is set, stored otherwise.
template <bool Stream, class V, class T>
POSENC_ALWAYS_INLINE void put_bits(V v, T* p) {
  if constexpr (Stream) {
    store_stream(v, reinterpret_cast<bits_lane_t<T>*>(p));
  } else {
    store_bits(v, p);
  }
}

/// Window of `half_pairs` pairs at `w` (an index_t, or a std::integral_constant: layout_rows): interleaved ->
/// half-split (unzip) or half-split -> interleaved (zip).
/// Stream: every vector store of the window lands on a vector-aligned address (convert_layout checks it).
template <bool ToHalfSplit, bool Stream, class D, class T, class Half>
POSENC_ALWAYS_INLINE index_t layout_body(D d, const T* w_in, T* w_out, Half half_pairs) {
  constexpr index_t W = vec_of<D>::width;
  const index_t half = half_pairs;
  index_t i = 0;
  for (; i + W <= half; i += W) {
    if constexpr (ToHalfSplit) {  // in: x0 x1 ... (pairs at 2i, 2i+1) -> out[i] = even, out[half + i] = odd
      const auto a = load_bits(d, w_in + 2 * i);
      const auto b = load_bits(d, w_in + 2 * i + W);
      put_bits<Stream>(unzip_even(a, b), w_out + i);
      put_bits<Stream>(unzip_odd(a, b), w_out + half + i);
    } else {  // in: a = [i, i+W), b = [half + i, ...) -> out[2i..] = a0 b0 a1 b1 ...
      const auto a = load_bits(d, w_in + i);
      const auto b = load_bits(d, w_in + half + i);
      put_bits<Stream>(zip_lo(a, b), w_out + 2 * i);
      put_bits<Stream>(zip_hi(a, b), w_out + 2 * i + W);
    }
  }
  for (; i < half; ++i) {
    if constexpr (ToHalfSplit) {
      w_out[i] = w_in[2 * i];
      w_out[half + i] = w_in[2 * i + 1];
    } else {
      w_out[2 * i] = w_in[i];
      w_out[2 * i + 1] = w_in[half + i];
    }
  }
  return i;
}

/// One token's `heads` contiguous rows (head strides hi, ho) with the window [offset, offset + 2 half)
/// converted and the rest copied; the direction a template argument, the rows walked by pointer.
template <bool ToHalfSplit, bool Stream, class T>
void layout_rows(const T* x, index_t hi, T* y, index_t ho, index_t heads, index_t dim, index_t offset, index_t half) {
  using L = bits_lane_t<T>;
  const index_t end = offset + 2 * half;
  // The whole row converted (the common case) gets a head loop with nothing else in it, and layout_body is forced
  // inline: at -O3 GCC 12 called it out of line per head and reloaded the window bounds from the stack, and the
  // conversion of [1, 4096, 32, 128] fp32 from DRAM ran 0.93-0.95 of the plain loop on Emerald Rapids with the
  // same inner loop; both changes together 0.99-1.01 (either alone 0.94; bench/README.md, run 11).
  // The halves of head dims 64, 128 and 256 are compiled in as constants: each row's loop then runs
  // unrolled with fixed offsets, and [1, 4096, H, D] fp32 read 6-14% faster against the plain loop at each of
  // those dims (AVX2 and AVX-512, Emerald Rapids; bench/README.md). Other halves take the loop with a run-time bound.
  if (offset == 0 && end == dim) {
    const auto rows = [&](auto half_pairs) {
      for (index_t h = 0; h < heads; ++h, x += hi, y += ho)
        layout_body<ToHalfSplit, Stream>(simd::lanes<L, isa_tag>{}, x, y, half_pairs);
    };
    switch (half) {
      case 32: rows(std::integral_constant<index_t, 32>{}); break;
      case 64: rows(std::integral_constant<index_t, 64>{}); break;
      case 128: rows(std::integral_constant<index_t, 128>{}); break;
      default: rows(half);
    }
    return;
  }
  for (index_t h = 0; h < heads; ++h, x += hi, y += ho) {
    if (offset > 0) copy_span(x, 1, y, 1, offset);
    if (end < dim) copy_span(x + end, 1, y + end, 1, dim - end);
    layout_body<ToHalfSplit, Stream>(simd::lanes<L, isa_tag>{}, x + offset, y + offset, half);
  }
}

/// Whether a token's window rows can be streamed: 4- or 8-byte elements, and every vector store of every head's
/// window on a vector-aligned address (the window's start, the head stride, and for half-split output the
/// half, whose odd lanes start `half` past the even ones).
template <class T>
bool streamable_rows(const T* y_window, index_t ho, index_t half, bool to_half_split) {
  if constexpr (sizeof(T) < 4) {
    return false;
  } else {
    constexpr index_t W = vec_of<simd::lanes<bits_lane_t<T>, isa_tag>>::width;
    constexpr index_t bytes = W * static_cast<index_t>(sizeof(T));
    return reinterpret_cast<std::uintptr_t>(y_window) % static_cast<std::uintptr_t>(bytes) == 0 &&
           (ho * static_cast<index_t>(sizeof(T))) % bytes == 0 && (!to_half_split || half % W == 0);
  }
}

/// out = in with the window [offset, offset + rotary_dim) of every head row converted between pair layouts
/// (identity when from == to) and the other features copied. Out of place; validated by the public entry.
/// A call that moves more than rope_stream_bytes (in and out together: more than the L3 of the CPUs measured,
/// so its output cannot stay in cache for the next reader) writes its contiguous windows with streaming
/// stores: with ordinary stores each output line is first read from memory, three streams against two. Same
/// bits either way. [1, 4096, 32, 128] fp32 on Emerald Rapids: 0.59 -> 0.80-0.83 of an in-place stream over
/// the same bytes, 1.30-1.39x the plain loop's speed (bench/README.md). The choice is per call: a pool that
/// splits one conversion into calls under the threshold gets ordinary stores.
template <class T>
void convert_layout(target, const strided_view<const T, 4>& in, const strided_view<T, 4>& out, index_t rotary_dim,
                    index_t offset, rope_style from, rope_style to) {
  const index_t dim = in.extent(3);
  const index_t half = rotary_dim / 2;
  const bool to_half_split = to == rope_style::half_split;
  const index_t si = in.stride(3);
  const index_t so = out.stride(3);
  const bool stream = 2 * out.size() * static_cast<index_t>(sizeof(T)) > rope_stream_bytes;
  bool streamed = false;
  for (index_t n = 0; n < in.extent(0); ++n)
    for (index_t l = 0; l < in.extent(1); ++l) {
      const T* x = &in(n, l, 0, 0);
      T* y = &out(n, l, 0, 0);
      if (from != to && si == 1 && so == 1) {
        const index_t hi = in.stride(2), ho = out.stride(2), heads = in.extent(2);
        if (stream && streamable_rows(y + offset, ho, half, to_half_split)) {
          streamed = true;
          if (to_half_split) layout_rows<true, true>(x, hi, y, ho, heads, dim, offset, half);
          else layout_rows<false, true>(x, hi, y, ho, heads, dim, offset, half);
        } else if (to_half_split) {
          layout_rows<true, false>(x, hi, y, ho, heads, dim, offset, half);
        } else {
          layout_rows<false, false>(x, hi, y, ho, heads, dim, offset, half);
        }
        continue;
      }
      for (index_t h = 0; h < in.extent(2); ++h, x += in.stride(2), y += out.stride(2))
        for (index_t f = 0; f < dim; ++f) {
          index_t src = f;
          if (f >= offset && f < offset + rotary_dim) {
            const index_t g = f - offset;
            if (from != to) src = offset + (to_half_split ? (g < half ? 2 * g : 2 * (g - half) + 1) : (g % 2) * half + g / 2);
          }
          y[f * so] = x[src * si];
        }
    }
  if (streamed) stream_fence(simd::lanes<bits_lane_t<T>, isa_tag>{});
}

}  // namespace POSENC_TARGET_NS
}  // namespace detail
POSENC_END_NAMESPACE
