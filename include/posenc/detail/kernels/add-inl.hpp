// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// Additive encodings, written once over the op list (no include guard: see all-inl.hpp):
// out[n, l, :] = in[n, l, :] + row(p(n, l)), the row formed on the fly (sinusoid, sin/cos in double) or read
// from a table (learned, the sinusoidal module's buffer). Dropout stays in baseline code (detail/additive.hpp):
// its draws are one sequential random stream.

POSENC_BEGIN_NAMESPACE
namespace detail {
namespace POSENC_TARGET_NS {

template <class D, class In, class Out>
index_t add_body(D d, const In* in, Out* out, index_t i, index_t n, const typename D::lane_type* v) {
  constexpr index_t W = vec_of<D>::width;
  for (; i + W <= n; i += W) store(add(load(d, in + i), load(d, v + i)), out + i);
  return i;
}

template <class D, class Out>
index_t put_body(D d, Out* out, index_t i, index_t n, const typename D::lane_type* v) {
  constexpr index_t W = vec_of<D>::width;
  for (; i + W <= n; i += W) store(load(d, v + i), out + i);
  return i;
}

/// out[k] = in[k] + v[k] for k < n (strides si, so), in double, rounded to T once; out[k] = v[k] when `in` is
/// null (a table).
template <class T>
void add_double_row(const T* in, index_t si, T* out, index_t so, index_t n, const double* v) {
  const simd::lanes<double, isa_tag> d;
  const simd::lanes<double, simd::tail<isa_tag>> d1;
  index_t k = 0;
  if (in == nullptr) {
    if (so == 1) k = put_body(d, out, 0, n, v);
    for (; k < n; ++k) store(load(d1, v + k), out + k * so);
    return;
  }
  if (si == 1 && so == 1) k = add_body(d, in, out, 0, n, v);
  for (; k < n; ++k) store(add(load(d1, in + k * si), load(d1, v + k)), out + k * so);
}

template <class D>
index_t zip_body(D d, index_t i, index_t m, const double* s, const double* c, double* v) {
  constexpr index_t W = vec_of<D>::width;
  for (; i + W <= m; i += W) {
    const auto a = load(d, s + i);
    const auto b = load(d, c + i);
    store(zip_lo(a, b), v + 2 * i);
    store(zip_hi(a, b), v + 2 * i + W);
  }
  return i;
}

/// Zeros for the padding row (a constant: not 8 KiB of stack zeroed per call).
alignas(64) inline constexpr double sinusoid_zeros[2 * sinusoid_chunk] = {};

/// out = in + T[p] (or out = T[p] when `in` has no data: a table) for every token: T[p, :] formed from sin
/// and cos in double, the sum rounded to the storage type once. Chunks of pairs are the outer loop, so the
/// frequencies are formed once per call, on the stack. A padding position gives a zero row.
template <class Pos, class T>
void sinusoid_rows(target, const sinusoid_params& sp, const Pos& pos, const strided_view<const T, 3>& in,
                   const strided_view<T, 3>& out) {
  const index_t pairs = sp.dim / 2;
  const index_t n_batch = out.extent(0);
  const index_t n_len = out.extent(1);
  const bool has_in = in.data() != nullptr;
  const bool in_place = has_in && static_cast<const void*>(in.data()) == static_cast<const void*>(out.data());
  alignas(64) double w[sinusoid_chunk];
  alignas(64) double v[2 * sinusoid_chunk];
  const double* zeros = sinusoid_zeros;
  for (index_t b = 0; b < pairs; b += sinusoid_chunk) {
    const index_t e = b + sinusoid_chunk < pairs ? b + sinusoid_chunk : pairs;
    const index_t m = e - b;
    double w_max = 0.0;
    for (index_t i = b; i < e; ++i) {
      w[i - b] = math::sinusoid_inv_freq(sp.base, i, sp.dim, sp.concat);
      w_max = w[i - b] > w_max ? w[i - b] : w_max;
    }
    // Sequence-major order, and the row reused while the position repeats: with an offset (the same
    // positions in every sequence) sin/cos are formed once per position, not once per token.
    index_t last_p = -1;
    polar_stepper<sinusoid_chunk> stepper;  // float and narrower rows: angle addition between sincos anchors
    const double* s = stepper.s;
    const double* c = stepper.c;
    for (index_t l = 0; l < n_len; ++l) {
      for (index_t n = 0; n < n_batch; ++n) {
        const index_t p = pos.at(n, l);
        const bool zero = sp.has_padding && p == sp.padding_idx;
        if (zero && in_place) continue;
        const double* row = zeros;
        if (!zero) {
          if (p != last_p) {
            last_p = p;
            if constexpr (std::is_same_v<T, double>) {  // double rows: a sincos per position
              stepper.exact(w, w_max, p, m);
            } else {
              stepper.advance(w, w_max, p, m);
            }
            if (!sp.concat) {  // interleaved: [s0, c0, s1, c1, ...]
              const index_t i = zip_body(simd::lanes<double, isa_tag>{}, 0, m, s, c, v);
              zip_body(simd::lanes<double, simd::tail<isa_tag>>{}, i, m, s, c, v);
            }
          }
          row = sp.concat ? nullptr : v;
        }
        const T* in_row = has_in ? &in(n, l, 0) : nullptr;
        const index_t is = has_in ? in.stride(2) : 0;
        T* out_row = &out(n, l, 0);
        const index_t os = out.stride(2);
        if (!sp.concat) {
          add_double_row(in_row ? in_row + 2 * b * is : nullptr, is, out_row + 2 * b * os, os, 2 * m, row);
        } else {  // concat: [s_0 .. s_{D/2-1}] then [c_0 .. c_{D/2-1}]
          const double* ps = zero ? zeros : s;
          const double* pc = zero ? zeros : c;
          add_double_row(in_row ? in_row + b * is : nullptr, is, out_row + b * os, os, m, ps);
          add_double_row(in_row ? in_row + (pairs + b) * is : nullptr, is, out_row + (pairs + b) * os, os, m, pc);
        }
      }
    }
  }
}

template <class D, class T, class C>
index_t table_body(D d, const T* in, T* out, index_t i, index_t n, const C* e, typename D::lane_type scale) {
  constexpr index_t W = vec_of<D>::width;
  const auto sc = set1(d, scale);
  for (; i + W <= n; i += W) store(fma(sc, load(d, e + i), load(d, in + i)), out + i);
  return i;
}

/// out = in + scale * table[p + row_offset, :] for every token, in A (double if the table or the tensor is
/// double, else float), rounded to T once. The table is [rows, D] contiguous; positions were validated.
template <class Pos, class T, class C>
void table_rows(target, const C* table, index_t dim, index_t row_offset, double scale, const Pos& pos,
                const add_target<T>& t) {
  using A = simd::acc2_t<T, C>;
  const simd::lanes<A, simd::tail<isa_tag>> d1;
  const auto sc = set1(d1, static_cast<A>(scale));
  for (index_t n = 0; n < t.out.extent(0); ++n)
    for (index_t l = 0; l < t.out.extent(1); ++l) {
      const C* row = table + (pos.at(n, l) + row_offset) * dim;
      const T* x = &t.in(n, l, 0);
      T* y = &t.out(n, l, 0);
      const index_t xs = t.in.stride(2);
      const index_t ys = t.out.stride(2);
      index_t k = 0;
      if (xs == 1 && ys == 1) k = table_body(simd::lanes<A, isa_tag>{}, x, y, 0, dim, row, static_cast<A>(scale));
      for (; k < dim; ++k) store(fma(sc, load(d1, row + k), load(d1, x + k * xs)), y + k * ys);
    }
}

}  // namespace POSENC_TARGET_NS
}  // namespace detail
POSENC_END_NAMESPACE
