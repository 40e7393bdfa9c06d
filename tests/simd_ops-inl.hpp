// The op list of posenc's vectors (include/posenc/detail/simd/vec.hpp) applied to plain arrays, compiled once
// per target like the kernels: simd_test.cpp includes this inside each target's region with
// POSENC_TEST_NS/POSENC_TEST_ISA set, and reaches it through the op_table below. Arrays cross the boundary,
// never vectors (a vector passed by value between code of different targets changes the ABI).
// No include guard.

namespace posenc_test_ops {
namespace POSENC_TEST_NS {

namespace simd = posenc::detail::simd;
using isa_tag = POSENC_TEST_ISA;
using DF = simd::lanes<float, isa_tag>;
using DD = simd::lanes<double, isa_tag>;
constexpr int WF = simd::vec<float, isa_tag>::width;
constexpr int WD = simd::vec<double, isa_tag>::width;

/// out[op][k], k < n (n a multiple of the width): 0 add, 1 sub, 2 mul, 3 div, 4 fma(a, b, c), 5 fnma(a, b, c),
/// 6 min, 7 max, 8 set1(a[0]), 9 zip_lo, 10 zip_hi, 11 unzip_even, 12 unzip_odd, 13 pair_swap,
/// 14 sign_alternate, 15 load_dup_pairs(a) (13-15 only where width >= 2), 16 reduce_max(a * b) in every lane.
/// D: this target's vectors, or its one-lane tail (simd::tail<isa_tag>), which must round as the vectors do.
template <class A, class D = simd::lanes<A, isa_tag>>
void arith(const A* a, const A* b, const A* c, A* out, int n) {
  const D d;
  constexpr int W = simd::vec<A, typename D::isa>::width;
  for (int i = 0; i < n; i += W) {
    const auto x = load(d, a + i), y = load(d, b + i), z = load(d, c + i);
    store(add(x, y), out + 0 * n + i);
    store(sub(x, y), out + 1 * n + i);
    store(mul(x, y), out + 2 * n + i);
    store(div(x, y), out + 3 * n + i);
    store(fma(x, y, z), out + 4 * n + i);
    store(fnma(x, y, z), out + 5 * n + i);
    store(min(x, y), out + 6 * n + i);
    store(max(x, y), out + 7 * n + i);
    store(set1(d, a[0]), out + 8 * n + i);
    store(zip_lo(x, y), out + 9 * n + i);
    store(zip_hi(x, y), out + 10 * n + i);
    store(unzip_even(x, y), out + 11 * n + i);
    store(unzip_odd(x, y), out + 12 * n + i);
    if constexpr (W >= 2) {
      store(pair_swap(x), out + 13 * n + i);
      store(sign_alternate(x), out + 14 * n + i);
      store(load_dup_pairs(d, a + i / 2), out + 15 * n + i);
    }
    store(set1(d, reduce_max(mul(x, y))), out + 16 * n + i);
  }
}
inline void arith_f(const float* a, const float* b, const float* c, float* out, int n) { arith(a, b, c, out, n); }
inline void arith_d(const double* a, const double* b, const double* c, double* out, int n) { arith(a, b, c, out, n); }
inline void arith_tail_f(const float* a, const float* b, const float* c, float* out, int n) {
  arith<float, simd::lanes<float, simd::tail<isa_tag>>>(a, b, c, out, n);
}
inline void arith_tail_d(const double* a, const double* b, const double* c, double* out, int n) {
  arith<double, simd::lanes<double, simd::tail<isa_tag>>>(a, b, c, out, n);
}

/// Float lanes: narrowed to half and bfloat16, and the narrow values widened back.
inline void convert_f(const float* in, Eigen::half* h, Eigen::bfloat16* bf, float* wh, float* wb, int n) {
  const DF d;
  for (int i = 0; i < n; i += WF) {
    store(load(d, in + i), h + i);
    store(load(d, in + i), bf + i);
  }
  for (int i = 0; i < n; i += WF) {
    store(load(d, h + i), wh + i);
    store(load(d, bf + i), wb + i);
  }
}

/// Double lanes: narrowed to float, half and bfloat16, and each widened back to double.
inline void convert_d(const double* in, float* f, Eigen::half* h, Eigen::bfloat16* bf, double* wf, double* wh, double* wb,
                      int n) {
  const DD d;
  for (int i = 0; i < n; i += WD) {
    store(load(d, in + i), f + i);
    store(load(d, in + i), h + i);
    store(load(d, in + i), bf + i);
  }
  for (int i = 0; i < n; i += WD) {
    store(load(d, f + i), wf + i);
    store(load(d, h + i), wh + i);
    store(load(d, bf + i), wb + i);
  }
}

/// 16-bit patterns through float lanes: out = zip_lo/zip_hi of (a, b) per vector pair, bit for bit.
inline void bits16(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* lo, std::uint16_t* hi, int n) {
  const DF d;
  for (int i = 0; i < n; i += WF) {
    const auto x = load_u16_bits(d, a + i), y = load_u16_bits(d, b + i);
    store_u16_bits(zip_lo(x, y), lo + i);
    store_u16_bits(zip_hi(x, y), hi + i);
  }
}

/// Bits of double lanes: 0 and, 1 xor, 2 add (uint64), 3 shl<52>(a), 4 shl<63>(a), 5 blend_sign(a, b, c).
inline void bits_d(const std::uint64_t* a, const std::uint64_t* b, const std::uint64_t* c, std::uint64_t* out, int n) {
  const DD d;
  for (int i = 0; i < n; i += WD) {
    alignas(64) double x[16], y[16], z[16], r[16];
    for (int k = 0; k < WD; ++k) {
      x[k] = simd::double_of(a[i + k]);
      y[k] = simd::double_of(b[i + k]);
      z[k] = simd::double_of(c[i + k]);
    }
    const auto vx = load(d, x), vy = load(d, y), vz = load(d, z);
    const decltype(vx) res[6] = {and_bits(vx, vy), xor_bits(vx, vy), add_bits(vx, vy),
                                 simd::shl_bits<52>(vx), simd::shl_bits<63>(vx), blend_sign(vx, vy, vz)};
    for (int op = 0; op < 6; ++op) {
      store(res[op], r);
      for (int k = 0; k < WD; ++k) out[op * n + i + k] = simd::bits_of(r[k]);
    }
    store(set1_bits(d, a[i]), r);
    for (int k = 0; k < WD; ++k) out[6 * n + i + k] = simd::bits_of(r[k]);
  }
}

/// Bits of float lanes: 0 and, 1 or, 2 sub (uint32), 3 shr<20>(a), 4 shr<31>(a), 5 blend_sign(a, b, c),
/// 6 set1_bits(a[i]), 7 nearest_int_bits(v) of v = int32(a) * 2^-12 (every 2^-12 step, ties included);
/// store_u8_bits(a) into bytes, and in fours of vectors into bytes4 (n a multiple of 4 widths).
inline void bits_f(const std::uint32_t* a, const std::uint32_t* b, const std::uint32_t* c, std::uint32_t* out,
                   std::uint8_t* bytes, std::uint8_t* bytes4, int n) {
  const DF d;
  for (int i = 0; i < n; i += WF) {
    alignas(64) float x[16], y[16], z[16], r[16];
    for (int k = 0; k < WF; ++k) {
      x[k] = simd::float_of(a[i + k]);
      y[k] = simd::float_of(b[i + k]);
      z[k] = simd::float_of(c[i + k]);
    }
    // Patterns travel as float lanes (a NaN pattern included): loaded and stored, never computed on as floats.
    const auto vx = load(d, x), vy = load(d, y), vz = load(d, z);
    const decltype(vx) res[6] = {and_bits(vx, vy), or_bits(vx, vy), sub_bits(vx, vy),
                                 simd::shr_bits<20>(vx), simd::shr_bits<31>(vx), blend_sign(vx, vy, vz)};
    for (int op = 0; op < 6; ++op) {
      store(res[op], r);
      for (int k = 0; k < WF; ++k) out[op * n + i + k] = simd::bits_of(r[k]);
    }
    store(set1_bits(d, a[i]), r);
    for (int k = 0; k < WF; ++k) out[6 * n + i + k] = simd::bits_of(r[k]);
    for (int k = 0; k < WF; ++k) x[k] = static_cast<float>(static_cast<std::int32_t>(a[i + k])) * 0x1p-12f;
    store(nearest_int_bits(load(d, x)), r);
    for (int k = 0; k < WF; ++k) out[7 * n + i + k] = simd::bits_of(r[k]);
    store_u8_bits(vx, bytes + i);
  }
  for (int i = 0; i < n; i += 4 * WF) {
    alignas(64) float x[64];
    for (int k = 0; k < 4 * WF; ++k) x[k] = simd::float_of(a[i + k]);
    store_u8_bits(load(d, x), load(d, x + WF), load(d, x + 2 * WF), load(d, x + 3 * WF), bytes4 + i);
  }
}

/// The kernels' vector sin/cos and exp (detail/kernels/vmath-inl.hpp) on this target's vectors, or (D the
/// tail's lanes) one lane at a time as the kernels' tails run them.
template <class D = DD>
void sincos_d(const double* x, double* s, double* c, int n) {
  const D d;
  constexpr int W = simd::vec<double, typename D::isa>::width;
  for (int i = 0; i < n; i += W) {
    simd::vec<double, typename D::isa> vs, vc;
    posenc::detail::POSENC_TEST_KERNEL_NS::vsincos(d, load(d, x + i), vs, vc);
    store(vs, s + i);
    store(vc, c + i);
  }
}
template <class D = DD>
void exp_d(const double* x, double* y, int n) {
  const D d;
  constexpr int W = simd::vec<double, typename D::isa>::width;
  for (int i = 0; i < n; i += W) store(posenc::detail::POSENC_TEST_KERNEL_NS::vexp(d, load(d, x + i)), y + i);
}
using DT = simd::lanes<double, simd::tail<isa_tag>>;

/// out[k] = in[k] through store_stream (out aligned to the vector, n a multiple of the width), then stream_fence.
template <class A>
void stream_copy(const A* in, A* out, int n) {
  const simd::lanes<A, isa_tag> d;
  constexpr int W = simd::vec<A, isa_tag>::width;
  for (int i = 0; i < n; i += W) store_stream(load(d, in + i), out + i);
  stream_fence(d);
}

inline op_table table() {
  return {WF,          WD,         arith_f,      arith_d,     convert_f,     convert_d,  bits16,
          bits_d,      bits_f,     sincos_d<>,   exp_d<>,     arith_tail_f,  arith_tail_d, sincos_d<DT>,
          exp_d<DT>,   stream_copy<float>, stream_copy<double>};
}

}  // namespace POSENC_TEST_NS
}  // namespace posenc_test_ops
