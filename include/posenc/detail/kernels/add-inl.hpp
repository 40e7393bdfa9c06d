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

/// The input of a row that has none (a table): its offsets stay none, and the helpers below store the encoding
/// alone. A fused loop is compiled once for a row pointer and once for this, neither testing for null inside.
struct no_input {
  friend constexpr no_input operator+(no_input, index_t) { return {}; }
};

/// out = in + v over one vector (contiguous), or out = v for no_input.
template <class D, class V, class In, class T>
POSENC_ALWAYS_INLINE void add_vec(D d, V v, In in, T* out) {
  if constexpr (std::is_same_v<In, no_input>) {
    store(v, out);
  } else {
    store(add(load(d, in), v), out);
  }
}

/// The 2W values of W interleaved pairs from their sin and cos vectors: out[2k] = in[2k] + s[k], out[2k + 1] =
/// in[2k + 1] + c[k] (k < W, element strides si and so), or s[k], c[k] for no_input. A pointer `in` is never
/// null: the test is the caller's, outside its loop (GCC at -O2 does not unswitch loops).
template <class D, class V, class In, class T>
POSENC_ALWAYS_INLINE void add_zip_vec(D d, V s, V c, In in, index_t si, T* out, index_t so) {
  constexpr index_t W = vec_of<D>::width;
  auto lo = zip_lo(s, c);
  auto hi = zip_hi(s, c);
  if constexpr (!std::is_same_v<In, no_input>) {
    lo = add(load(d, in), lo);
    hi = add(load(d, in + W * si), hi);
  }
  store(lo, out);
  store(hi, out + W * so);
}

/// f(i, j) for each span [i, j) of pairs [0, m).
template <class F>
POSENC_ALWAYS_INLINE void each_span(index_t m, F&& f) {
  for (index_t i = 0; i < m; i += sinusoid_span) f(i, i + sinusoid_span < m ? i + sinusoid_span : m);
}

/// Pairs [i, m) of an interleaved row: out[2k] = in[2k] + s[k], out[2k + 1] = in[2k + 1] + c[k], s and c zipped
/// in registers (no row of values stored and read back), or s[k], c[k] when `in` is null. Contiguous rows in
/// vectors; one-lane vectors take any strides.
template <class D, class T>
index_t add_zip_body(D d, const T* in, index_t si, T* out, index_t so, index_t i, index_t m, const double* s,
                     const double* c) {
  constexpr index_t W = vec_of<D>::width;
  if (in == nullptr) {
    for (; i + W <= m; i += W) add_zip_vec(d, load(d, s + i), load(d, c + i), no_input{}, si, out + 2 * i * so, so);
  } else {
    for (; i + W <= m; i += W)
      add_zip_vec(d, load(d, s + i), load(d, c + i), in + 2 * i * si, si, out + 2 * i * so, so);
  }
  return i;
}

/// add_zip_body over pairs [0, m), in double, rounded to T once.
template <class T>
void add_zip_row(const T* in, index_t si, T* out, index_t so, index_t m, const double* s, const double* c) {
  index_t i = 0;
  if ((in == nullptr || si == 1) && so == 1)
    i = add_zip_body(simd::lanes<double, isa_tag>{}, in, 1, out, 1, 0, m, s, c);
  add_zip_body(simd::lanes<double, simd::tail<isa_tag>>{}, in, si, out, so, i, m, s, c);
}

/// Zeros for the padding row (a constant: not 8 KiB of stack zeroed per call).
alignas(64) inline constexpr double sinusoid_zeros[2 * sinusoid_chunk] = {};

/// out = in + T[p] (or out = T[p] when `in` has no data: a table) for every token: T[p, :] formed from sin
/// and cos in double, the sum rounded to the storage type once. Chunks of pairs are the outer loop, so the
/// frequencies are formed once per call, on the stack; within a row, spans of pairs are formed and added in
/// turn, each token's span asking for the next token's. A padding position gives a zero row.
template <class Pos, class T>
void sinusoid_rows(target, const sinusoid_params& sp, const Pos& pos, const strided_view<const T, 3>& in,
                   const strided_view<T, 3>& out) {
  using stepper_t = polar_stepper<sinusoid_chunk>;
  const index_t pairs = sp.dim / 2;
  const index_t n_batch = out.extent(0);
  const index_t n_len = out.extent(1);
  const bool has_in = in.data() != nullptr;
  const bool in_place = has_in && static_cast<const void*>(in.data()) == static_cast<const void*>(out.data());
  const index_t is = has_in ? in.stride(2) : 0;
  const index_t os = out.stride(2);
  alignas(64) double w[sinusoid_chunk];
  // Interleaved rows: with more than one sequence (each position's row then serves every sequence) the row is
  // zipped once into v and each token adds v; with one, each span is zipped in registers as it is added. Zipping
  // per token cost a reused row 10% (AVX2, 8 x 512 x 768: 0.68 -> 0.62 of the stream); storing and reading back
  // v cost a single-use row 12-25% (4096 x 1024: 0.87 -> 0.77 AVX-512, 0.62 -> 0.54 AVX2; Emerald Rapids).
  const bool keep = n_batch > 1;
  alignas(64) double v[2 * sinusoid_chunk];
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
    stepper_t stepper;  // float and narrower rows: angle addition between sincos anchors
    for (index_t l = 0; l < n_len; ++l) {
      for (index_t n = 0; n < n_batch; ++n) {
        const index_t p = pos.at(n, l);
        const bool zero = sp.has_padding && p == sp.padding_idx;
        if (zero && in_place) continue;
        const T* x = has_in ? &in(n, l, 0) : nullptr;
        T* y = &out(n, l, 0);
        // The same span of the next token's row (in this loop's order) is asked for as each span is added: rows
        // are often 4 KiB apart, a page, where the hardware prefetchers stop, and over several sequences the next
        // token lies in another sequence (asking for the same sequence's next position instead gained nothing).
        const index_t ahead = next_token_bytes(has_in && is == 1, in, n, l);
        const bool form = !zero && p != last_p;
        stepper_t::move mv;
        if (form) {
          last_p = p;
          if constexpr (!std::is_same_v<T, double>) mv = stepper.plan(p);
        }
        const double* s = zero ? sinusoid_zeros : stepper.s;
        const double* c = zero ? sinusoid_zeros : stepper.c;
        // One rotation from the previous position (15 positions in 16 of a walk): each span rotated and used in
        // the same pass (polar_stepper::rotate_once), added to a contiguous row (or written: a table) or zipped
        // into the kept v, instead of stored and loaded back (AVX2, [1, 256, 1024]: 13% fewer instructions;
        // bench/README.md).
        bool fuse = false;
        if constexpr (!std::is_same_v<T, double>)
          fuse = form && !mv.fill && mv.rotations == 1 && (keep ? !sp.concat : (!has_in || is == 1) && os == 1);
        // A span of pairs at a time, formed (if new) and added: formed whole and then added, the row's sincos
        // and rotations ran while memory sat idle. The fused rows run their own loop over the spans, compiled
        // apart for an input row and for a table (no_input): in one loop with the other cases, clang 14 kept ~20
        // pointers live across it and spilled them (145 instructions per span), and GCC 12 at -O2 left the loop
        // out of line, testing the input for null and reloading the rows' pointers at every vector (AVX2
        // instructions of [1, 256, 1024]: bench/README.md).
        if (fuse && keep) {  // interleaved: zipped into v as formed, then added to the token's row
          double* const vp = v;
          each_span(m, [&](index_t i, index_t j) {
            stepper.rotate_once(w, w_max, i, j, m, [vp](auto d, index_t q, auto sv, auto cv) {
              add_zip_vec(d, sv, cv, no_input{}, 1, vp + 2 * q, 1);
            });
            const index_t k = 2 * (b + i);
            if (ahead != 0) prefetch_row(x + k, 2 * (j - i), ahead);
            add_double_row(x ? x + k * is : nullptr, is, y + k * os, os, 2 * (j - i), vp + 2 * i);
          });
          continue;
        }
        if (fuse) {
          const auto fused_row = [&](auto xr) {  // the input row x, or no_input
            constexpr bool input = !std::is_same_v<decltype(xr), no_input>;
            if (!sp.concat) {
              const auto xb = xr + 2 * b;
              T* const yb = y + 2 * b;
              each_span(m, [&](index_t i, index_t j) {
                if constexpr (input) {
                  if (ahead != 0) prefetch_row(xb + 2 * i, 2 * (j - i), ahead);
                }
                stepper.rotate_once(w, w_max, i, j, m, [xb, yb](auto d, index_t q, auto sv, auto cv) {
                  add_zip_vec(d, sv, cv, xb + 2 * q, 1, yb + 2 * q, 1);
                });
              });
            } else {
              const auto xs = xr + b;
              const auto xc = xr + (pairs + b);
              T* const ys = y + b;
              T* const yc = y + pairs + b;
              each_span(m, [&](index_t i, index_t j) {
                if constexpr (input) {
                  if (ahead != 0) {
                    prefetch_row(xs + i, j - i, ahead);
                    prefetch_row(xc + i, j - i, ahead);
                  }
                }
                stepper.rotate_once(w, w_max, i, j, m, [xs, xc, ys, yc](auto d, index_t q, auto sv, auto cv) {
                  add_vec(d, sv, xs + q, ys + q);
                  add_vec(d, cv, xc + q, yc + q);
                });
              });
            }
          };
          if (x != nullptr) {
            fused_row(x);
          } else {
            fused_row(no_input{});
          }
          continue;
        }
        for (index_t i = 0; i < m; i += sinusoid_span) {
          const index_t j = i + sinusoid_span < m ? i + sinusoid_span : m;
          if (form) {
            if constexpr (std::is_same_v<T, double>) {  // double rows: a sincos per position
              stepper.exact(w, w_max, p, i, j);
            } else {
              stepper.apply(mv, w, w_max, i, j, m);
            }
          }
          if (!sp.concat) {  // interleaved: [s0, c0, s1, c1, ...]
            const index_t k = 2 * (b + i);
            if (ahead != 0) prefetch_row(x + k, 2 * (j - i), ahead);
            if (!keep) {
              add_zip_row(x ? x + k * is : nullptr, is, y + k * os, os, j - i, s + i, c + i);
              continue;
            }
            if (form) add_zip_row(static_cast<const double*>(nullptr), 1, v + 2 * i, 1, j - i, s + i, c + i);
            const double* vs = (zero ? sinusoid_zeros : v) + 2 * i;
            add_double_row(x ? x + k * is : nullptr, is, y + k * os, os, 2 * (j - i), vs);
          } else {  // concat: [s_0 .. s_{D/2-1}] then [c_0 .. c_{D/2-1}]
            const index_t ks = b + i;
            const index_t kc = pairs + b + i;
            if (ahead != 0) {
              prefetch_row(x + ks, j - i, ahead);
              prefetch_row(x + kc, j - i, ahead);
            }
            add_double_row(x ? x + ks * is : nullptr, is, y + ks * os, os, j - i, s + i);
            add_double_row(x ? x + kc * is : nullptr, is, y + kc * os, os, j - i, c + i);
          }
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
