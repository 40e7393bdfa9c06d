// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// The rotary kernels, written once over the op list and compiled once per target (no include guard:
// kernels.hpp includes this inside each target's region and namespace). One driver walks the tokens, asks a
// *source* for the (cos, sin) of each pair at the token's position (source_rows), and rotates all heads of the
// token, heads outer and pairs inner, as the plain loop an engine writes (bench/plain.cpp), with which every
// family is timed. RoPE from a plan (angles formed on the fly), from a cache, MRoPE, the context shift,
// re-rotation and xPos differ only in their source (detail/kernels/params.hpp); the KV-cache append
// (append_rows) and the quantising kernel (quant-inl.hpp) reuse the same rows.

POSENC_BEGIN_NAMESPACE
namespace detail {
namespace POSENC_TARGET_NS {

// ---- the rows of one token -------------------------------------------------------------------------------

/// The rotation kernels call each(h) once per head h of a call, after its row (the KV-cache append copies V's
/// head h there: K and V head by head, as the plain loop, measured ~10% faster from DRAM than all of K and then
/// all of V, and a call per head cost more than that). The default does nothing.
struct no_epilogue {
  void operator()(index_t) const noexcept {}
};

/// One token's `heads` rows of half-split pairs (a_i, b_i) = (x[i], x[i + half]) for i < n, at head strides hi,
/// ho, feature stride 1. Heads outer and pairs inner, as the plain loop an engine writes: each row is two
/// forward streams (its halves) that the prefetchers follow, the row pointers advance by the head stride (no
/// index arithmetic in the loop), and the inverse (backward) swaps fma and fnma instead of negating sin.
/// Two vectors of pairs per step, so that each half's results are adjacent (store2: one packed store for
/// bfloat16). In place, two heads share each cos/sin load (3 loads per W pairs of a head instead of 4): 5-10%
/// faster with the token in L1 or L2 (decode), the same from DRAM. Out of place (into a KV cache) one head at
/// a time: two heads would be eight streams, and measured ~10% slower from DRAM (Zen 3, 4096 tokens into an fp16
/// cache). Every step loads all it reads before it stores (its elements are disjoint from the rest), so in
/// place is safe. With `ahead` (bytes, 0 for none) each head row first asks for the same row of the next token
/// (prefetch_row): per row, not per step, whose test added 5-18% instructions to one-token decode calls,
/// and a row's lines at once measured faster (1.1-1.2x against 1.05-1.1x the plain loop, 4096 tokens into an
/// fp16 cache). Returns the pairs done (n rounded down to W); the caller finishes the rows' tails.
template <bool Inverse, class D, class In, class Out, class Each>
POSENC_ALWAYS_INLINE index_t rope_half_split(D d, const In* in, index_t hi, Out* out, index_t ho, index_t heads,
                                             index_t half, index_t n, const typename D::lane_type* cos,
                                             const typename D::lane_type* sin, bool pair_heads, index_t ahead,
                                             const Each& each) {
  constexpr index_t W = vec_of<D>::width;
  using V = vec_of<D>;
  const auto first = [](V a, V b, V c, V s) { return Inverse ? fma(b, s, mul(a, c)) : fnma(b, s, mul(a, c)); };
  const auto second = [](V a, V b, V c, V s) { return Inverse ? fnma(a, s, mul(b, c)) : fma(a, s, mul(b, c)); };
  // Pairs [i, i + 2W) of one row: a c - b s and b c + a s (the inverse: a c + b s, b c - a s).
  const auto rotate2 = [&](const In* x, Out* y, index_t i, V c0, V s0, V c1, V s1) {
    const auto a0 = load(d, x + i), a1 = load(d, x + i + W);
    const auto b0 = load(d, x + i + half), b1 = load(d, x + i + half + W);
    store2(first(a0, b0, c0, s0), first(a1, b1, c1, s1), y + i);
    store2(second(a0, b0, c0, s0), second(a1, b1, c1, s1), y + i + half);
  };
  const auto rotate1 = [&](const In* x, Out* y, index_t i, V c, V s) {
    const auto a = load(d, x + i), b = load(d, x + i + half);
    store(first(a, b, c, s), y + i);
    store(second(a, b, c, s), y + i + half);
  };
  // 16-bit rows take two vectors of pairs per step (their results pack into one store); wider ones one, which
  // measured a few percent faster for float rows in L1/L2 (fewer live registers in the two-head loop).
  constexpr index_t step = sizeof(Out) == 2 ? 2 * W : W;
  const index_t n2 = step == 2 * W ? n - n % (2 * W) : 0;
  const index_t n1 = n - n % W;  // then one vector at a time: none, one (16-bit rows) or all (wider ones)
  index_t h = 0;
  if constexpr (std::is_same_v<In, Out>) {  // in place (rows of one type only)
    if (pair_heads && static_cast<const void*>(in) == static_cast<const void*>(out)) {
      for (; h + 2 <= heads; h += 2, in += 2 * hi, out += 2 * ho) {
        if (ahead != 0) {
          prefetch_row(in, half + n, ahead);
          prefetch_row(in + hi, half + n, ahead);
        }
        for (index_t i = 0; i < n2; i += 2 * W) {
          const auto c0 = load(d, cos + i), s0 = load(d, sin + i);
          const auto c1 = load(d, cos + i + W), s1 = load(d, sin + i + W);
          rotate2(in, out, i, c0, s0, c1, s1);
          rotate2(in + hi, out + ho, i, c0, s0, c1, s1);
        }
        for (index_t i = n2; i < n1; i += W) {
          const auto c = load(d, cos + i), s = load(d, sin + i);
          rotate1(in, out, i, c, s);
          rotate1(in + hi, out + ho, i, c, s);
        }
        each(h);
        each(h + 1);
      }
    }
  }
  for (; h < heads; ++h, in += hi, out += ho) {
    if (ahead != 0) prefetch_row(in, half + n, ahead);
    for (index_t i = 0; i < n2; i += 2 * W)
      rotate2(in, out, i, load(d, cos + i), load(d, sin + i), load(d, cos + i + W), load(d, sin + i + W));
    for (index_t i = n2; i < n1; i += W) rotate1(in, out, i, load(d, cos + i), load(d, sin + i));
    each(h);
  }
  return n1;
}

/// One token's `heads` rows of interleaved pairs (x[2i], x[2i+1]) for i < n, laid out as rope_half_split's:
/// y = x cd + pair_swap(x) sd, with cd = (c0, c0, c1, c1, ...) and sd = (-s0, s0, -s1, s1, ...) (the inverse's
/// signs flipped) formed once per token by rope_dup_pairs, so a vector costs one in-lane shuffle and no
/// deinterleave. The products are those of a c - b s and b c + a s (negating sin is exact). Width >= 2.
/// `ahead` as rope_half_split's. Returns the pairs done.
template <class D, class In, class Out, class Each>
index_t rope_interleaved(D d, const In* in, index_t hi, Out* out, index_t ho, index_t heads, index_t n,
                         const typename D::lane_type* cd, const typename D::lane_type* sd, index_t ahead,
                         const Each& each) {
  constexpr index_t W = vec_of<D>::width;
  const index_t m = 2 * n;  // elements of the window
  const auto rotate = [&](vec_of<D> x, index_t i, Out* y) {
    store(fma(x, load(d, cd + i), mul(pair_swap(x), load(d, sd + i))), y);
  };
  for (index_t h = 0; h < heads; ++h, in += hi, out += ho) {
    index_t i = 0;
    if (ahead != 0) prefetch_row(in, m, ahead);
    for (; i + 2 * W <= m; i += 2 * W) {
      const auto x0 = load(d, in + i);
      const auto x1 = load(d, in + i + W);
      rotate(x0, i, out + i);
      rotate(x1, i + W, out + i + W);
    }
    if (i + W <= m) rotate(load(d, in + i), i, out + i);
    each(h);
  }
  return (m - m % W) / 2;
}

template <class D>
index_t dup_pairs_body(D d, index_t i, index_t n, const typename D::lane_type* cos, const typename D::lane_type* sin,
                       typename D::lane_type sign, typename D::lane_type* cd, typename D::lane_type* sd) {
  constexpr index_t W = vec_of<D>::width;
  const auto lo = set1(d, -sign);
  const auto hi = set1(d, sign);
  for (; i + W <= n; i += W) {
    const auto c = load(d, cos + i);
    const auto s = load(d, sin + i);
    store(zip_lo(c, c), cd + 2 * i);
    store(zip_hi(c, c), cd + 2 * i + W);
    store(zip_lo(mul(s, lo), mul(s, hi)), sd + 2 * i);
    store(zip_hi(mul(s, lo), mul(s, hi)), sd + 2 * i + W);
  }
  return i;
}

/// cd, sd of rope_interleaved for n pairs: cos twice, sin times (-sign, sign).
template <class A>
void rope_dup_pairs(index_t n, const A* cos, const A* sin, A sign, A* cd, A* sd) {
  index_t i = 0;
  if constexpr (simd::vec<A, isa_tag>::width >= 2) i = dup_pairs_body(simd::lanes<A, isa_tag>{}, 0, n, cos, sin, sign, cd, sd);
  for (; i < n; ++i) {
    cd[2 * i] = cd[2 * i + 1] = cos[i];
    sd[2 * i] = -sign * sin[i];
    sd[2 * i + 1] = sign * sin[i];
  }
}

/// One pair at a time with 1-lane vectors: any style, any feature strides, cos/sin of any type C (converted
/// to A as they load). The same arithmetic as the vector bodies, so the tail of a row matches its body.
template <class A, class In, class Out, class C>
void rope_pairs(rope_style style, const In* in, index_t si, Out* out, index_t so, index_t pairs, index_t i,
                index_t e, index_t b0, const C* cos, const C* sin, A sign) {
  const simd::lanes<A, simd::tail<isa_tag>> d;
  const auto sg = set1(d, sign);
  for (; i < e; ++i) {
    const index_t ia = style == rope_style::interleaved ? 2 * i : i;
    const index_t ib = style == rope_style::interleaved ? 2 * i + 1 : i + pairs;
    const auto a = load(d, in + ia * si);
    const auto b = load(d, in + ib * si);
    const auto c = load(d, cos + (i - b0));
    const auto s = mul(sg, load(d, sin + (i - b0)));
    store(fnma(b, s, mul(a, c)), out + ia * so);
    store(fma(a, s, mul(b, c)), out + ib * so);
  }
}

/// The inverse rows (backward RoPE, the inverse shift) out of line: only the forward ones, every model's, are
/// inlined into the drivers.
template <class D, class In, class Out, class Each>
index_t rope_half_split_inverse(D d, const In* in, index_t hi, Out* out, index_t ho, index_t heads, index_t half,
                                index_t n, const typename D::lane_type* cos, const typename D::lane_type* sin,
                                bool pair_heads, const Each& each) {
  return rope_half_split<true>(d, in, hi, out, ho, heads, half, n, cos, sin, pair_heads, index_t{0}, each);
}

/// rope_heads' pairs [i, e) that no vector body took, row by row (each(h) too when no body ran).
template <class A, class In, class Out, class C, class Each>
void rope_heads_rest(rope_style style, const In* in, index_t hi, index_t si, Out* out, index_t ho, index_t so,
                     index_t heads, index_t pairs, index_t i, index_t b, index_t e, const C* cos, const C* sin, A sign,
                     bool each_done, const Each& each) {
  for (index_t h = 0; h < heads; ++h) {
    rope_pairs<A>(style, in + h * hi, si, out + h * ho, so, pairs, i, e, b, cos, sin, sign);
    if (!each_done) each(h);
  }
}

/// Pairs [b, e) of one token's `heads` rows (window starts in, out; head strides hi, ho; feature strides si,
/// so), cos/sin indexed from b; cd/sd (interleaved, contiguous rows of arithmetic-type cos/sin) from
/// rope_dup_pairs. Contiguous rows take the vector bodies, the rest (tails, strided rows, a double table under
/// float arithmetic) rope_pairs, row by row. each(h) once per head (no_epilogue); `ahead` (bytes to the next
/// token's rows, 0 for none) prefetches in the forward vector bodies.
/// Inline down to the half-split body (the drivers call it per token): as calls, the dispatch and the body's
/// prologue and twelve to seventeen arguments were ~170 instructions of a token's 8-head KV append (~2240),
/// and a one-token decode append measured 0.77 of the plain loop against 0.83 inline (Zen 3, compare.py).
template <class A, class In, class Out, class C, class Each = no_epilogue>
POSENC_ALWAYS_INLINE void rope_heads(rope_style style, const In* in, index_t hi, index_t si, Out* out, index_t ho,
                                     index_t so, index_t heads, index_t pairs, index_t b, index_t e, const C* cos,
                                     const C* sin, const A* cd, const A* sd, A sign, bool pair_heads, index_t ahead,
                                     const Each& each) {
  index_t i = b;
  bool each_done = false;  // by a vector body
  if constexpr (std::is_same_v<C, A>) {
    if (si == 1 && so == 1) {
      const simd::lanes<A, isa_tag> d;
      if (style == rope_style::half_split) {
        // sign is +1 (forward) or -1 (backward, the inverse shift).
        i += sign == A(1)
                 ? rope_half_split<false>(d, in + b, hi, out + b, ho, heads, pairs, e - b, cos, sin, pair_heads, ahead,
                                          each)
                 : rope_half_split_inverse(d, in + b, hi, out + b, ho, heads, pairs, e - b, cos, sin, pair_heads, each);
        each_done = true;
      } else if constexpr (simd::vec<A, isa_tag>::width >= 2) {
        i += rope_interleaved(d, in + 2 * b, hi, out + 2 * b, ho, heads, e - b, cd, sd, ahead, each);
        each_done = true;
      }
    }
  }
  if (i < e || !each_done)
    rope_heads_rest(style, in, hi, si, out, ho, so, heads, pairs, i, b, e, cos, sin, sign, each_done, each);
}

// ---- copies with conversion (features outside the rotated window, layout conversion) --------------------------

template <class D, class In, class Out>
POSENC_ALWAYS_INLINE index_t convert_body(D d, const In* in, Out* out, index_t i, index_t n) {
  constexpr index_t W = vec_of<D>::width;
  // Two vectors per store2 (one packed store for bfloat16, whose single vector costs an extract and a pack).
  for (; i + 2 * W <= n; i += 2 * W) store2(load(d, in + i), load(d, in + i + W), out + i);
  for (; i + W <= n; i += W) store(load(d, in + i), out + i);
  return i;
}

/// copy_span's elements that take no vector move: strided rows, the tail of a contiguous one, 16-bit bit copies
/// (n > 0).
template <class In, class Out>
void copy_span_rest(const In* in, index_t si, Out* out, index_t so, index_t n) {
  if constexpr (std::is_same_v<In, Out>) {
    if (si == 1 && so == 1) {
      std::memcpy(static_cast<void*>(out), static_cast<const void*>(in), static_cast<std::size_t>(n) * sizeof(In));
      return;
    }
    for (index_t k = 0; k < n; ++k) out[k * so] = in[k * si];
  } else {
    const simd::lanes<simd::acc2_t<In, Out>, simd::tail<isa_tag>> d;
    for (index_t k = 0; k < n; ++k) store(load(d, in + k * si), out + k * so);
  }
}

/// out[k * so] = in[k * si] for k < n: a bit copy for one type, one rounding from In to Out otherwise.
/// Contiguous float or double rows, and conversions, move by vectors here, inline: libc's memmove took a third
/// of a KV-cache append of float rows (V's 4 KiB per token), and a call per head of V (KV appends copy V head
/// by head) measured slower than the moves inline. The rest, if any, is copy_span_rest's.
template <class In, class Out>
POSENC_ALWAYS_INLINE void copy_span(const In* in, index_t si, Out* out, index_t so, index_t n) {
  index_t k = 0;
  if (si == 1 && so == 1) {
    if constexpr (std::is_same_v<In, Out> && (std::is_same_v<In, float> || std::is_same_v<In, double>))
      k = convert_body(simd::lanes<In, isa_tag>{}, in, out, 0, n);
    else if constexpr (!std::is_same_v<In, Out>)
      k = convert_body(simd::lanes<simd::acc2_t<In, Out>, isa_tag>{}, in, out, 0, n);
  }
  if (k < n) copy_span_rest(in + k * si, si, out + k * so, so, n - k);
}

// ---- cos/sin sources ----------------------------------------------------------------------------------------

template <class D, class C, class Theta, class Scale>
index_t polar_body(D d, index_t i, index_t b, index_t e, const Theta& theta, const Scale& scale, C* cos, C* sin) {
  constexpr index_t W = vec_of<D>::width;
  for (; i + W <= e; i += W) {
    vec_of<D> s, c;
    vsincos(d, theta(d, i), s, c);
    const auto m = scale(d, i);
    store(mul(c, m), cos + (i - b));
    store(mul(s, m), sin + (i - b));
  }
  return i;
}

/// cos and sin of theta(i) times scale(i) for pairs [b, e), into cos[0 .. e-b) and sin[..], rounded to C once.
/// theta and scale are generic over the lane descriptor. `bound` >= every |theta|: below sincos_exact_limit the
/// vector sincos, beyond it (or NaN) libm per pair.
template <class C, class Theta, class Scale>
void polar_fill(index_t b, index_t e, double bound, const Theta& theta, const Scale& scale, C* cos, C* sin) {
  if (!(bound < sincos_exact_limit)) {
    const simd::lanes<double, simd::tail<isa_tag>> d1;
    for (index_t i = b; i < e; ++i) {
      const double t = theta(d1, i).v;
      const double m = scale(d1, i).v;
      cos[i - b] = static_cast<C>(m * std::cos(t));
      sin[i - b] = static_cast<C>(m * std::sin(t));
    }
    return;
  }
  const index_t i = polar_body(simd::lanes<double, isa_tag>{}, b, b, e, theta, scale, cos, sin);
  polar_body(simd::lanes<double, simd::tail<isa_tag>>{}, i, b, e, theta, scale, cos, sin);
}

/// One rotation of pairs [i, m): (c, s) = (cos t, sin t) turned by (cw, sw) = (cos w, sin w) in place, each value
/// one FMA over one rounded product. Each rotated vector of pairs k .. k + W - 1 is also handed to use(d, k, s, c)
/// as it is formed, so that a caller consuming the values (the sinusoid adds them to its rows) does so in the same
/// pass instead of loading them back; the values' bits do not depend on it.
template <class D, class Use>
POSENC_ALWAYS_INLINE index_t rotate_body(D d, index_t i, index_t m, const double* cw, const double* sw, double* c,
                                         double* s, Use&& use) {
  constexpr index_t W = vec_of<D>::width;
  for (; i + W <= m; i += W) {
    const auto cv = load(d, c + i);
    const auto sv = load(d, s + i);
    const auto a = load(d, cw + i);
    const auto b = load(d, sw + i);
    const auto c1 = fnma(sv, b, mul(cv, a));  // cos(t + w) = cos t cos w - sin t sin w
    const auto s1 = fma(cv, b, mul(sv, a));   // sin(t + w) = sin t cos w + cos t sin w
    store(c1, c + i);
    store(s1, s + i);
    use(d, i, s1, c1);
  }
  return i;
}

/// rotate_body over pairs [b, e).
template <class Use>
POSENC_ALWAYS_INLINE void rotate_row(index_t b, index_t e, const double* cw, const double* sw, double* c, double* s,
                                     Use&& use) {
  const index_t i = rotate_body(simd::lanes<double, isa_tag>{}, b, e, cw, sw, c, s, use);
  rotate_body(simd::lanes<double, simd::tail<isa_tag>>{}, i, e, cw, sw, c, s, use);
}

template <class D, class C>
index_t scale_body(D d, index_t i, index_t m, const double* x, double k, C* out) {
  constexpr index_t W = vec_of<D>::width;
  const auto kv = set1(d, k);
  for (; i + W <= m; i += W) store(mul(load(d, x + i), kv), out + i);
  return i;
}

/// out[i] = k * x[i] for i < m, rounded to C once (the same product polar_body stores).
template <class C>
void scale_round(index_t m, const double* x, double k, C* out) {
  const index_t i = scale_body(simd::lanes<double, isa_tag>{}, 0, m, x, k, out);
  scale_body(simd::lanes<double, simd::tail<isa_tag>>{}, i, m, x, k, out);
}

/// Positions per anchor: cos and sin at p are those at the anchor a = p - (p mod 16), formed by sincos, rotated
/// (p - a) times by w_i. Each rotation adds at most ~3 ulp, so the values stay within ~2^-46 of the formula's:
/// far below the final rounding to float. They depend on p alone, not on the walk that reached it, so any
/// position form, sub-range or thread split gives the same bits.
inline constexpr index_t polar_anchor_period = 16;

/// cos and sin of p * w_i (i < m) in double for a walk over positions (the float cache-free paths): at
/// position last + 1 inside an anchor period, the previous values rotated by w_i (angle addition: four FMAs per
/// pair instead of a sincos); elsewhere the anchor's sincos and the rotations up to p. A prefill walks
/// consecutive positions, so it pays one sincos per pair every 16 tokens.
// The arrays are written before they are read (valid, have_step say which hold values); zeroing 4 KiB on
// every call would cost the one-token decode path. N pairs at most (RoPE: one chunk; sinusoids: a whole row).
template <index_t N = rope_chunk>
struct polar_stepper {  // NOLINT(cppcoreguidelines-pro-type-member-init)
  alignas(64) double c[N];
  alignas(64) double s[N];
  alignas(64) double cw[N];
  alignas(64) double sw[N];
  index_t last = 0;
  bool valid = false;      ///< c, s hold position `last`
  bool have_step = false;  ///< cw, sw hold cos, sin of w

  /// What advance(p) does to every pair: the sincos of `anchor` first if `fill`, then `rotations` rotations.
  /// plan() decides it once per position; apply() runs it over a range of pairs, so that a caller can consume
  /// each range before forming the next (the sinusoid adds x's lines as they stream in). A pair's bits depend
  /// on the plan alone, not on the ranges.
  struct move {
    index_t anchor = 0;
    index_t rotations = 0;
    bool fill = false;
  };

  move plan(index_t p) {
    const index_t r = (p % polar_anchor_period + polar_anchor_period) % polar_anchor_period;
    move mv;
    if (valid && r != 0 && p == last + 1) {
      mv.rotations = 1;
    } else {
      mv.anchor = p - r;
      mv.rotations = r;
      mv.fill = true;
    }
    last = p;
    valid = true;
    return mv;
  }

  /// Pairs [b, e) of m by `mv`.
  void apply(const move& mv, const double* w, double w_max, index_t b, index_t e, index_t m) {
    if (mv.fill) fill(w, w_max, mv.anchor, b, e);
    for (index_t k = 0; k < mv.rotations; ++k) rotate_once(w, w_max, b, e, m, [](auto, index_t, auto, auto) {});
  }

  void advance(const double* w, double w_max, index_t p, index_t m) { apply(plan(p), w, w_max, 0, m, m); }

  /// apply() of a one-rotation move (rotations 1, no fill: 15 positions in 16 of a walk) over pairs [b, e) of
  /// m, each rotated vector also handed to use(d, k, s, c) as it is formed (rotate_body).
  template <class Use>
  POSENC_ALWAYS_INLINE void rotate_once(const double* w, double w_max, index_t b, index_t e, index_t m, Use&& use) {
    if (!have_step) {
      polar_fill(
          0, m, w_max, [&](auto d, index_t i) { return load(d, w + i); }, [&](auto d, index_t) { return set1(d, 1.0); },
          cw, sw);
      have_step = true;
    }
    rotate_row(b, e, cw, sw, c, s, use);
  }

  /// c, s = cos, sin of p * w_i by sincos for pairs [b, e) (no stepping; the double paths call this for every
  /// position).
  void exact(const double* w, double w_max, index_t p, index_t b, index_t e) {
    fill(w, w_max, p, b, e);
    valid = false;
  }

 private:
  void fill(const double* w, double w_max, index_t p, index_t b, index_t e) {
    const double pd = static_cast<double>(p);
    polar_fill(
        b, e, std::fabs(pd) * w_max, [&](auto d, index_t i) { return mul(set1(d, pd), load(d, w + i)); },
        [&](auto d, index_t) { return set1(d, 1.0); }, c + b, s + b);
  }
};

/// RoPE and the context shift: theta = p * w_i (the product math::angle forms), times the magnitude.
template <class C>
void source_fill(const angle_src& s, index_t p, index_t b, index_t e, C (*cbuf)[rope_chunk], C (*sbuf)[rope_chunk],
                 const C** cos, const C** sin) {
  const double pd = static_cast<double>(p);
  polar_fill(
      b, e, std::fabs(pd) * s.w_max, [&](auto d, index_t i) { return mul(set1(d, pd), load(d, s.w + i)); },
      [&](auto d, index_t) { return set1(d, s.magnitude); }, cbuf[0], sbuf[0]);
  cos[0] = cbuf[0];
  sin[0] = sbuf[0];
}

/// MRoPE: pair i at the position of its axis.
template <class C>
void source_fill(const mrope_src& s, const std::array<index_t, 3>& p, index_t b, index_t e, C (*cbuf)[rope_chunk],
                 C (*sbuf)[rope_chunk], const C** cos, const C** sin) {
  double pp[rope_chunk];
  for (index_t i = b; i < e; ++i) pp[i - b] = static_cast<double>(p[s.axis[i]]);
  double pmax = 0.0;
  for (index_t a : p) pmax = std::fabs(static_cast<double>(a)) > pmax ? std::fabs(static_cast<double>(a)) : pmax;
  polar_fill(
      b, e, pmax * s.w_max, [&](auto d, index_t i) { return mul(load(d, pp + (i - b)), load(d, s.w + i)); },
      [&](auto d, index_t) { return set1(d, s.magnitude); }, cbuf[0], sbuf[0]);
  cos[0] = cbuf[0];
  sin[0] = sbuf[0];
}

/// Re-rotation: theta = p*w_to - p*w_from.
template <class C>
void source_fill(const rerotate_src& s, index_t p, index_t b, index_t e, C (*cbuf)[rope_chunk], C (*sbuf)[rope_chunk],
                 const C** cos, const C** sin) {
  const double pd = static_cast<double>(p);
  polar_fill(
      b, e, std::fabs(pd) * s.w_max,
      [&](auto d, index_t i) {
        const auto pv = set1(d, pd);
        return sub(mul(pv, load(d, s.w_to + i)), mul(pv, load(d, s.w_from + i)));
      },
      [&](auto d, index_t) { return set1(d, s.ratio); }, cbuf[0], sbuf[0]);
  cos[0] = cbuf[0];
  sin[0] = sbuf[0];
}

template <class D>
index_t xpos_scale_body(D d, index_t i, index_t b, index_t e, const double* lz, double dist, double scale_base,
                        double dir, const double* cu, const double* su, double* cos, double* sin) {
  constexpr index_t W = vec_of<D>::width;
  for (; i + W <= e; i += W) {
    // (ln zeta_i * (p - C)) / scale_base as math::xpos_log_scale forms it, then e^(+-that).
    const auto x = div(mul(load(d, lz + i), set1(d, dist)), set1(d, scale_base));
    const auto m = vexp(d, mul(set1(d, dir), x));
    store(mul(load(d, cu + (i - b)), m), cos + (i - b));
    store(mul(load(d, su + (i - b)), m), sin + (i - b));
  }
  return i;
}

/// xPos: cos and sin of p*w_i formed once, then scaled per variant (queries up, keys down): one sincos per
/// pair for q and k together.
inline void source_fill(const xpos_src& s, index_t p, index_t b, index_t e, double (*cbuf)[rope_chunk],
                        double (*sbuf)[rope_chunk], const double** cos, const double** sin) {
  double cu[rope_chunk];
  double su[rope_chunk];
  const double pd = static_cast<double>(p);
  polar_fill(
      b, e, std::fabs(pd) * s.w_max, [&](auto d, index_t i) { return mul(set1(d, pd), load(d, s.w + i)); },
      [&](auto d, index_t) { return set1(d, 1.0); }, cu, su);
  const double dist = static_cast<double>(p - s.center);  // both >= 0: exact, no overflow
  for (int v = 0; v < 2; ++v) {
    if (!s.need[static_cast<std::size_t>(v)]) continue;
    const double dir = v == 0 ? 1.0 : -1.0;
    const index_t i = xpos_scale_body(simd::lanes<double, isa_tag>{}, b, b, e, s.log_zeta, dist, s.scale_base, dir, cu,
                                      su, cbuf[v], sbuf[v]);
    xpos_scale_body(simd::lanes<double, simd::tail<isa_tag>>{}, i, b, e, s.log_zeta, dist, s.scale_base, dir, cu, su, cbuf[v],
                    sbuf[v]);
    cos[v] = cbuf[v];
    sin[v] = sbuf[v];
  }
}

/// A table row converted into the buffer, pair by pair (source_fill below).
template <class T, class C>
void table_row_convert(const T* cr, const T* sr, index_t pair_stride, index_t b, index_t e, C* cbuf, C* sbuf) {
  for (index_t i = b; i < e; ++i) {
    cbuf[i - b] = simd::load_as<C>(cr[i * pair_stride]);
    sbuf[i - b] = simd::load_as<C>(sr[i * pair_stride]);
  }
}
/// A table row: a pointer into the table when it holds the arithmetic type contiguously (rope_cache), else the
/// row converted once per token into the buffer (a half table, interleaved (cos, sin) pairs, a double cache
/// under float arithmetic): each value is load_as<C>, exactly what a per-pair load would give.
/// Inline for the pointers of a rope_cache's row (a call per token was ~30 instructions of a one-token call).
template <class T, class C>
POSENC_ALWAYS_INLINE void source_fill(const table_src<T>& s, index_t p, index_t b, index_t e, C (*cbuf)[rope_chunk],
                                      C (*sbuf)[rope_chunk], const C** cos, const C** sin) {
  const T* cr = s.cos + p * s.row_stride;
  const T* sr = s.sin + p * s.row_stride;
  if constexpr (std::is_same_v<T, C>) {
    if (s.pair_stride == 1) {
      cos[0] = cr + b;
      sin[0] = sr + b;
      return;
    }
  }
  table_row_convert(cr, sr, s.pair_stride, b, e, cbuf[0], sbuf[0]);
  cos[0] = cbuf[0];
  sin[0] = sbuf[0];
}

// ---- the driver ---------------------------------------------------------------------------------------------

/// The cos/sin rows a call's tokens rotate by, from one source: formed (or looked up) when the position
/// changes and reused while it repeats, per chunk [b, e) of pairs; for interleaved pairs also cd/sd of
/// rope_interleaved. Shared by the rotation driver (rope_rows) and the quantising one (quant-inl.hpp).
template <class Source, class A, class P = index_t>
class source_rows {
 public:
  // cos/sin reach the rows in the arithmetic type (a table of another type or layout is converted per token
  // into a buffer, which every head of the token then reads with vector loads).
  using C = A;
  static constexpr int variants = Source::variants;

  source_rows(const Source& src, rope_style style, index_t pairs, A sign)
      : src_(src), style_(style), sign_(sign), reuse_(pairs <= rope_chunk) {}

  /// Makes the rows of pairs [b, e) at position p (what Pos::at yields: P) current.
  void at(const P& p, index_t b, index_t e) {
    // Sequence-major order reuses the rows while the position repeats (an offset gives every sequence the same
    // positions): forming them is the cost of the cache-free path, so a batch of N sequences pays for one.
    // Only when the whole window is one chunk, so that the buffers hold the full row.
    if (reuse_ && have_row_ && p == last_p_) return;
    if constexpr (std::is_same_v<Source, angle_src> && std::is_same_v<C, float>) {
      if (reuse_) {  // one chunk of float cos/sin: walk the positions with the stepper
        stepper_.advance(src_.w, src_.w_max, p, e);
        scale_round(e, stepper_.c, src_.magnitude, cbuf_[0]);
        scale_round(e, stepper_.s, src_.magnitude, sbuf_[0]);
        cos_[0] = cbuf_[0];
        sin_[0] = sbuf_[0];
      } else {
        source_fill(src_, p, b, e, cbuf_, sbuf_, cos_, sin_);
      }
    } else {
      source_fill(src_, p, b, e, cbuf_, sbuf_, cos_, sin_);
    }
    last_p_ = p;
    have_row_ = true;
    if constexpr (dup) {
      if (style_ == rope_style::interleaved)
        for (int v = 0; v < variants; ++v)
          if (cos_[v] != nullptr) rope_dup_pairs(e - b, cos_[v], sin_[v], sign_, cd_[v], sd_[v]);
    }
  }

  /// Pairs [b, e) of one token's `heads` rows (window starts in, out; strides as rope_heads) by variant v;
  /// each(h) after head h's row (rope_heads).
  template <class In, class Out, class Each = no_epilogue>
  POSENC_ALWAYS_INLINE void rotate(int v, const In* in, index_t hi, index_t si, Out* out, index_t ho, index_t so,
                                   index_t heads, index_t pairs, index_t b, index_t e, const Each& each = {}) const {
    const auto k = static_cast<std::size_t>(v);
    rope_heads(style_, in, hi, si, out, ho, so, heads, pairs, b, e, cos_[k], sin_[k], cd_[dup ? k : 0], sd_[dup ? k : 0],
               sign_, pair_heads_, ahead_, each);
  }

  /// Whether in-place half-split rows take two heads per cos/sin load (rope_half_split); on by default.
  void pair_heads(bool on) { pair_heads_ = on; }
  /// Bytes from the rows rotate() is given to the same rows of the next token, prefetched as they rotate; 0 (the
  /// default) for none.
  void ahead(index_t bytes) { ahead_ = bytes; }

 private:
  static constexpr bool dup = std::is_same_v<C, A> && simd::vec<A, isa_tag>::width >= 2;
  const Source& src_;
  rope_style style_;
  A sign_;
  bool reuse_;
  bool pair_heads_ = true;
  bool have_row_ = false;
  index_t ahead_ = 0;
  P last_p_{};
  const C* cos_[variants] = {};
  const C* sin_[variants] = {};
  // Written before they are read (cos_ and have_row_ say which hold values).
  // NOLINTBEGIN(cppcoreguidelines-pro-type-member-init)
  alignas(64) C cbuf_[variants][rope_chunk];
  alignas(64) C sbuf_[variants][rope_chunk];
  // Interleaved rows: cos and signed sin of each pair twice, formed once per token for every head.
  alignas(64) A cd_[dup ? variants : 1][dup ? 2 * rope_chunk : 1];
  alignas(64) A sd_[dup ? variants : 1][dup ? 2 * rope_chunk : 1];
  // NOLINTEND(cppcoreguidelines-pro-type-member-init)
  polar_stepper<> stepper_;  // the cache-free RoPE source (angle_src) into float cos/sin only
};

/// The KV append's epilogue (rope_heads' each): V's head h copied into its cache row. Inline in the rotation
/// loop with its values in registers: as a lambda capturing the views it was a call per head, behind a
/// vzeroupper, reloading the views' fields after every store.
template <class In, class Out>
struct copy_head {
  const In* in;
  index_t hi, si;
  Out* out;
  index_t ho, so, n;
  POSENC_ALWAYS_INLINE void operator()(index_t h) const { copy_span(in + h * hi, si, out + h * ho, so, n); }
};

/// copy_outside_window's rows: features [0, offset) and [end, dim) of each head.
template <class In, class Out>
void copy_outside_rows(const In* in, index_t hi, index_t si, Out* out, index_t ho, index_t so, index_t heads,
                       index_t dim, index_t offset, index_t end) {
  for (index_t h = 0; h < heads; ++h, in += hi, out += ho) {
    copy_span(in, si, out, so, offset);
    copy_span(in + end * si, si, out + end * so, so, dim - end);
  }
}

/// Copies the features outside the window [offset, offset + 2 pairs) of one token's rows (out of place). The
/// test inline: the whole head rotates in every model but the partial-rotary ones, and a call per token to
/// find that out was ~50 instructions of a one-token KV append.
template <class In, class Out>
POSENC_ALWAYS_INLINE void copy_outside_window(const In* in, index_t hi, index_t si, Out* out, index_t ho, index_t so,
                                              index_t heads, index_t dim, index_t offset, index_t pairs) {
  const index_t end = offset + 2 * pairs;
  if (offset != 0 || end != dim) copy_outside_rows(in, hi, si, out, ho, so, heads, dim, offset, end);
}

/// Bytes from token (n, l)'s rows of `v` to the next token's in the drivers' order (l outer, n inner): what
/// source_rows::ahead takes (and the sinusoid's rows). 0 after the last token, and when `on` is false (the call
/// does not stream).
template <class T, std::size_t Rank>
index_t next_token_bytes(bool on, const strided_view<T, Rank>& v, index_t n, index_t l) {
  if (!on) return 0;
  if (n + 1 < v.extent(0)) return v.stride(0) * index_t{sizeof(T)};
  if (l + 1 < v.extent(1)) return (v.stride(1) - (v.extent(0) - 1) * v.stride(0)) * index_t{sizeof(T)};
  return 0;
}

/// Whether a call moving `bytes` (read and written) streams from DRAM, where the drivers prefetch each next
/// token's input rows as the current ones rotate (rows.ahead). Measured on Zen 3 (bench/README.md), against the
/// plain loop at 4096 tokens: 8 fp32 K heads of a fused QKV buffer into an fp16 cache 0.85 -> 1.1-1.2, in-place
/// RoPE over a fused buffer (row stride 24 KiB) 0.85 -> 1.0-1.05, contiguous fp32 rows unchanged; at 512 tokens
/// (in L3) the plain loop with the same prefetch read 0.88-0.95 of itself without, hence off below.
inline bool streams(index_t bytes) { return bytes > rope_stream_bytes; }

/// One token's heads of one in-place target, half-split, straight from a table row of the arithmetic type.
/// Out of line: inlined into rope_rows, the rotation loop kept its cos/sin pointers on the stack (the driver's
/// registers were taken) and ran slower than the driver's own path.
template <class A, class T>
POSENC_NOINLINE void rope_token_in_place(T* x, index_t hi, index_t si, index_t heads, index_t pairs, const A* cos,
                                         const A* sin, A sign) {
  rope_heads(rope_style::half_split, x, hi, si, x, hi, si, heads, pairs, 0, pairs, cos, sin, static_cast<const A*>(nullptr),
             static_cast<const A*>(nullptr), sign, true, 0, no_epilogue{});
}

/// rope_rows' short way: every token of in-place targets (no cache map), half-split, rotated straight from the
/// rows of a table of the arithmetic type, target by target, with none of the per-token machinery (position
/// reuse, chunks, maps, copies, prefetch). That machinery was ~200 instructions a token; at 16 tokens of
/// [1, L, 32, 128] fp32 (AVX2) it cost 1% against the plain loop (0.986 -> 0.996, Emerald Rapids).
template <class Pos, class A, class T, std::size_t K>
void rope_rows_in_place(const table_src<A>& src, const Pos& pos, index_t offset, index_t pairs, A sign,
                        const std::array<rope_io<T, T>, K>& io) {
  for (const auto& t : io) {
    T* const x = &t.out(0, 0, 0, offset);
    const index_t s0 = t.out.stride(0), s1 = t.out.stride(1), hi = t.out.stride(2), si = t.out.stride(3);
    const index_t n_batch = t.out.extent(0), n_len = t.out.extent(1), heads = t.out.extent(2);
    for (index_t l = 0; l < n_len; ++l)
      for (index_t n = 0; n < n_batch; ++n) {
        const index_t row = pos.at(n, l) * src.row_stride;
        rope_token_in_place(x + n * s0 + l * s1, hi, si, heads, pairs, src.cos + row, src.sin + row, sign);
      }
  }
}

/// Rotates every target: all share N and L (q and k of one batch), their positions and the window
/// [offset, offset + 2*pairs) of the head; target k uses the source's variant[k] (xPos: 0 for queries, 1 for
/// keys). `Pos::at(n, l)` yields what the source takes: one position, a signed delta or three positions.
/// Validation happened at the public entry.
template <class Source, class Pos, class In, class Out, std::size_t K>
void rope_rows(target, const Source& src, const Pos& pos, rope_style style, index_t offset, index_t pairs, double sign,
               const std::array<rope_io<In, Out>, K>& io, const std::array<int, K>& variant) {
  using A = rope_acc_t<Source, In, Out>;
  const index_t n_batch = io[0].in.extent(0);
  const index_t n_len = io[0].in.extent(1);
  index_t window = 0;  // elements of the rotated windows
  for (const auto& t : io) window += t.in.extent(0) * t.in.extent(1) * t.in.extent(2) * 2 * pairs;
  const index_t moved = window * index_t{sizeof(In) + sizeof(Out)};  // bytes read and written
#if defined(POSENC_NARROW_NS)
  // Half-split float rows (no conversion) rotated from a table, past L1 and below the streaming size, go to the
  // 256-bit kernels. On Emerald Rapids, [1, L, 32, 128] fp32 in place against the AVX2 plain loop: 16, 64 and 65
  // tokens (L2) 0.988-0.991 with AVX-512, 0.994-0.996 with AVX2 (this file's short way, both); in isolation at 256 /
  // 512 / 1024 tokens (L3) AVX2 ran 5% / 6% / 9% faster. In L1 (up to 3 tokens: 1.34-1.49x the plain loop against
  // 1.05-1.11x) and from DRAM (with the prefetch) 512-bit wins or ties. Interleaved rows gained or lost a few percent
  // by size (double at 65 tokens 15% slower), and 16-bit rows, bound by their conversions, run 7-50% faster with
  // 512-bit everywhere: both keep it (bench/README.md, runs 9 and 14). So do double rows (an isolated run once put
  // AVX2 5% ahead at 256 tokens; paired with the plain loop at 64-512 tokens the width moved them a few percent
  // either way across three sets, while two full tables put the narrowed default binary 5-8% behind -march=native at
  // 64-65 tokens) and the sources that form their angles per token (cache-free, MRoPE, the context shift, xPos):
  // their double-precision sincos and rotations run twice as wide, and narrowing them measured 5-10% slower at 16-65
  // tokens (cache-free fp32 against its plain loop 1.62-1.78x narrowed, 1.76-1.89x not; MRoPE at 64 tokens 1.35x /
  // 1.48x) and no faster at 512 (bench/README.md, run 18).
  if constexpr (std::is_same_v<In, float> && std::is_same_v<Out, float> && is_table_src_v<Source>) {
    bool narrow = style == rope_style::half_split && moved > rope_narrow_bytes && !streams(moved);
    for (const auto& t : io) narrow = narrow && t.in_place();
    if (narrow)
      return POSENC_NARROW_NS::rope_rows(POSENC_NARROW_NS::target{}, src, pos, style, offset, pairs, sign, io, variant);
  }
#endif
  if constexpr (std::is_same_v<Source, table_src<A>> && std::is_same_v<In, Out>) {
    // In place, half-split, from a table row of the arithmetic type (a decode step's q and k; a prefill's rows
    // in cache): straight from the table. Calls that stream from DRAM keep the driver for its prefetch.
    bool direct = style == rope_style::half_split && src.pair_stride == 1 && !streams(moved);
    for (const auto& t : io) direct = direct && t.in_place() && t.map.identity();
    if (direct) return rope_rows_in_place(src, pos, offset, pairs, static_cast<A>(sign), io);
  }
  source_rows<Source, A, std::decay_t<decltype(pos.at(0, 0))>> rows(src, style, pairs, static_cast<A>(sign));
  // Rows of double from DRAM go one head at a time (two streams, as the plain loop): with two heads sharing each
  // cos/sin load, [1, 4096, 32, 128] double in place measured 0.79 of the plain loop, one head 1.00; at 512 tokens
  // (in L3) and for float and 16-bit rows at every size two heads were as fast or faster (Zen 3, bench/README.md).
  if constexpr (sizeof(In) == 8) rows.pair_heads(!streams(window * index_t{sizeof(In)}));
  const bool prefetch = streams(moved);
  for (index_t l = 0; l < n_len; ++l) {
    for (index_t n = 0; n < n_batch; ++n) {
      const auto p = pos.at(n, l);
      // Each target's output row of this token (a KV-cache slot through its map); skip[k] when it has none.
      std::array<index_t, K> o0{}, o1{};
      std::array<bool, K> skip{};
      for (std::size_t k = 0; k < K; ++k) skip[k] = !io[k].map.at(n, l, o0[k], o1[k]);
      for (std::size_t k = 0; k < K; ++k) {
        const auto& t = io[k];
        if (skip[k] || t.in_place()) continue;
        // Out of place: the features outside the rotated window pass through (converted to Out).
        copy_outside_window(&t.in(n, l, 0, 0), t.in.stride(2), t.in.stride(3), &t.out(o0[k], o1[k], 0, 0), t.out.stride(2),
                            t.out.stride(3), t.in.extent(2), t.in.extent(3), offset, pairs);
      }
      for (index_t b = 0; b < pairs; b += rope_chunk) {
        const index_t e = b + rope_chunk < pairs ? b + rope_chunk : pairs;
        rows.at(p, b, e);
        for (std::size_t k = 0; k < K; ++k) {
          if (skip[k]) continue;
          const auto& t = io[k];
          rows.ahead(next_token_bytes(prefetch, t.in, n, l));
          rows.rotate(variant[k], &t.in(n, l, 0, offset), t.in.stride(2), t.in.stride(3), &t.out(o0[k], o1[k], 0, offset),
                      t.out.stride(2), t.out.stride(3), t.in.extent(2), pairs, b, e);
        }
      }
    }
  }
}

/// Whether a KV append copies V's head h right after K's head h (rope_heads' epilogue): two read and two write
/// streams at a time, as the plain loop; measured 3-16% faster than all of K and then all of V for float and
/// fp16 caches from DRAM (Zen 3, 4096 tokens), and 4-10% slower for bfloat16 caches, whose software rounding
/// makes the rows ALU-bound (the inlined copy adds its constants to the rotation's registers): those keep V
/// after K.
template <class Out>
inline constexpr bool append_v_with_k = !is_bf16_v<Out>;

/// Bytes a KV append reads and writes: q's rows twice (in place), K's and V's read as In and written as Out.
template <class In, class Out>
POSENC_ALWAYS_INLINE index_t append_bytes(const rope_io<In, In>& q, const rope_io<In, Out>& k, const rope_io<In, Out>& v) {
  const index_t q_heads = q.in.empty() ? 0 : q.in.extent(2);
  const index_t token = q_heads * k.in.extent(3) * 2 * index_t{sizeof(In)} +
                        k.in.extent(2) * (k.in.extent(3) + v.in.extent(3)) * index_t{sizeof(In) + sizeof(Out)};
  return k.in.extent(0) * k.in.extent(1) * token;
}

/// One token's rows of a KV append from a table row of the arithmetic type, half-split, contiguous features:
/// q (q_heads rows, in place), K into its cache rows and V into theirs.
template <class A, class In, class Out>
struct append_token_rows {
  In* q;
  index_t q_hi, q_heads;
  const In* k;
  const In* v;
  index_t k_hi, v_hi;
  Out* k_out;  ///< null when the token has no cache slot (q only)
  Out* v_out;
  index_t k_ho, v_ho, heads, pairs, v_dim;
  const A* cos;
  const A* sin;
};

/// One token of append_rows' table path, out of line (rope_token_in_place's reasoning): the driver's per-token
/// setup (positions, maps, chunks, prefetch tests) and per-head reloads of spilled views were ~40% of an 8-head
/// decode append's instructions beside the rows (Zen 3). The fields are copied to locals (read through the
/// reference, they were reloaded after every store of a row: a store of Out may alias them). V goes after all
/// of K, one span when its heads are contiguous in both: the rows are in L1/L2 here (the call does not stream),
/// where V inside K's loop (append_v_with_k) left too few registers and spilled its bounds per head (bound
/// 8-head append 2306 -> 2127 instructions per call).
template <class A, class In, class Out>
POSENC_NOINLINE void append_token(const append_token_rows<A, In, Out>& rows) {
  constexpr auto hs = rope_style::half_split;
  const A* none = nullptr;
  const append_token_rows<A, In, Out> t = rows;
  if (t.q_heads > 0)
    rope_heads(hs, t.q, t.q_hi, 1, t.q, t.q_hi, 1, t.q_heads, t.pairs, 0, t.pairs, t.cos, t.sin, none, none, A(1), true, 0,
               no_epilogue{});
  if (t.k_out == nullptr) return;
  rope_heads(hs, t.k, t.k_hi, 1, t.k_out, t.k_ho, 1, t.heads, t.pairs, 0, t.pairs, t.cos, t.sin, none, none, A(1), false, 0,
             no_epilogue{});
  if (t.v_hi == t.v_dim && t.v_ho == t.v_dim) {
    copy_span(t.v, 1, t.v_out, 1, t.heads * t.v_dim);
  } else {
    for (index_t h = 0; h < t.heads; ++h) copy_span(t.v + h * t.v_hi, 1, t.v_out + h * t.v_ho, 1, t.v_dim);
  }
}

/// The KV-cache append of one call, one pass per token: q's rows rotated in place (when q has heads), k's
/// rotated into their cache rows and v's copied into theirs (converted to Out with one rounding), k and v
/// through k.map. A token's q, k and v sit side by side in a fused QKV buffer: reading them together, with
/// one cos/sin row for q and k, measured ~20% faster than a pass for k and then one for v (4096 tokens, Zen 3),
/// and within a token K and V go head by head (append_v_with_k). Out of line: append_rows' table path does not
/// pay for this frame (the source's buffers, ~7.5 KiB, and the driver's spills).
/// Validated by the public entry; k and v share their tokens, heads and map.
template <class Source, class In, class Out>
POSENC_NOINLINE void append_rows_tokens(const Source& src, const positions& pos, rope_style style, index_t offset,
                                        index_t pairs, const rope_io<In, In>& q, const rope_io<In, Out>& k,
                                        const rope_io<In, Out>& v) {
  using A = rope_acc_t<Source, In, Out>;
  const index_t heads = k.in.extent(2);
  const index_t q_heads = q.in.empty() ? 0 : q.in.extent(2);
  const index_t dim = k.in.extent(3);
  const index_t v_dim = v.in.extent(3);
  constexpr bool v_with_k = append_v_with_k<Out>;
  source_rows<Source, A> rows(src, style, pairs, A(1));
  // Only q's and K's rows are prefetched: V's too read 1.16-1.32x the plain loop's speed against 1.33-1.39x for
  // K's alone in the plain loop itself, and no faster in posenc (4096 tokens into an fp16 cache, Zen 3).
  const bool prefetch = streams(append_bytes(q, k, v));
  for (index_t l = 0; l < k.in.extent(1); ++l) {
    for (index_t n = 0; n < k.in.extent(0); ++n) {
      index_t o0 = 0, o1 = 0;
      const bool cached = k.map.at(n, l, o0, o1);
      if (!cached && q_heads == 0) continue;
      const index_t p = pos.at(n, l);
      const In* vi = &v.in(n, l, 0, 0);
      Out* vo = cached ? &v.out(o0, o1, 0, 0) : nullptr;
      // V's head h into its cache row, after K's head h (with the first chunk of pairs).
      const copy_head<In, Out> copy_v{vi, v.in.stride(2), v.in.stride(3), vo, v.out.stride(2), v.out.stride(3), v_dim};
      if (cached)
        copy_outside_window(&k.in(n, l, 0, 0), k.in.stride(2), k.in.stride(3), &k.out(o0, o1, 0, 0), k.out.stride(2),
                            k.out.stride(3), heads, dim, offset, pairs);
      for (index_t b = 0; b < pairs; b += rope_chunk) {
        const index_t e = b + rope_chunk < pairs ? b + rope_chunk : pairs;
        rows.at(p, b, e);
        if (q_heads > 0) {
          In* qr = &q.out(n, l, 0, offset);
          rows.ahead(next_token_bytes(prefetch, q.out, n, l));
          rows.rotate(0, qr, q.out.stride(2), q.out.stride(3), qr, q.out.stride(2), q.out.stride(3), q_heads, pairs, b, e);
        }
        if (!cached) continue;
        const auto k_in = &k.in(n, l, 0, offset);
        Out* k_out = &k.out(o0, o1, 0, offset);
        rows.ahead(next_token_bytes(prefetch, k.in, n, l));
        if (b == 0 && v_with_k)
          rows.rotate(0, k_in, k.in.stride(2), k.in.stride(3), k_out, k.out.stride(2), k.out.stride(3), heads, pairs, b, e, copy_v);
        else
          rows.rotate(0, k_in, k.in.stride(2), k.in.stride(3), k_out, k.out.stride(2), k.out.stride(3), heads, pairs, b, e);
      }
      if (cached && (pairs == 0 || !v_with_k))
        for (index_t h = 0; h < heads; ++h) copy_v(h);
    }
  }
}

/// The KV-cache append of one call (append_rows_tokens). Half-split rows with contiguous features from a table
/// of the arithmetic type (an engine's cos/sin cache; decode steps and batches of them) need none of the
/// driver's per-token machinery: each token goes straight to append_token from its table row, unless the call
/// streams from DRAM (the driver prefetches the next token's rows).
template <class Source, class In, class Out>
void append_rows(target, const Source& src, const positions& pos, rope_style style, index_t offset, index_t pairs,
                 const rope_io<In, In>& q, const rope_io<In, Out>& k, const rope_io<In, Out>& v) {
  using A = rope_acc_t<Source, In, Out>;
  static_assert(std::is_same_v<A, rope_acc_t<Source, In, In>>, "q and k rotate in one arithmetic type");
  if constexpr (std::is_same_v<Source, table_src<A>>) {
    const index_t q_heads = q.in.empty() ? 0 : q.in.extent(2);
    if (style == rope_style::half_split && src.pair_stride == 1 && k.in.stride(3) == 1 && k.out.stride(3) == 1 &&
        v.in.stride(3) == 1 && v.out.stride(3) == 1 && (q_heads == 0 || q.out.stride(3) == 1) &&
        !streams(append_bytes(q, k, v))) {
      const index_t heads = k.in.extent(2);
      for (index_t l = 0; l < k.in.extent(1); ++l)
        for (index_t n = 0; n < k.in.extent(0); ++n) {
          index_t o0 = 0, o1 = 0;
          const bool cached = k.map.at(n, l, o0, o1);
          if (!cached && q_heads == 0) continue;
          const index_t row = pos.at(n, l) * src.row_stride;
          Out* k_out = cached ? &k.out(o0, o1, 0, 0) : nullptr;
          if (cached)
            copy_outside_window(&k.in(n, l, 0, 0), k.in.stride(2), 1, k_out, k.out.stride(2), 1, heads, k.in.extent(3),
                                offset, pairs);
          const append_token_rows<A, In, Out> t{q_heads > 0 ? &q.out(n, l, 0, offset) : nullptr,
                                                q_heads > 0 ? q.out.stride(2) : 0,
                                                q_heads,
                                                &k.in(n, l, 0, offset),
                                                &v.in(n, l, 0, 0),
                                                k.in.stride(2),
                                                v.in.stride(2),
                                                cached ? k_out + offset : nullptr,
                                                cached ? &v.out(o0, o1, 0, 0) : nullptr,
                                                k.out.stride(2),
                                                v.out.stride(2),
                                                heads,
                                                pairs,
                                                v.in.extent(3),
                                                src.cos + row,
                                                src.sin + row};
          append_token(t);
        }
      return;
    }
  }
  append_rows_tokens(src, pos, style, offset, pairs, q, k, v);
}

/// Copies every token's (H, D) rows of `in` to its output rows through `map` (V into a KV cache), converted to
/// Out with one rounding.
template <class In, class Out>
void copy_tokens(target, const rope_io<In, Out>& t) {
  for (index_t n = 0; n < t.in.extent(0); ++n)
    for (index_t l = 0; l < t.in.extent(1); ++l) {
      index_t o0 = 0, o1 = 0;
      if (!t.map.at(n, l, o0, o1)) continue;
      for (index_t h = 0; h < t.in.extent(2); ++h)
        copy_span(&t.in(n, l, h, 0), t.in.stride(3), &t.out(o0, o1, h, 0), t.out.stride(3), t.in.extent(3));
    }
}

/// Rows [first, last) of a rope_cache: row p, at cos + p * pairs, holds magnitude * (cos, sin)(p * w_i), i < pairs.
/// Each row depends on p alone, so a range of rows is formed as the whole table forms them.
template <class C>
void rope_cache_fill(target, const angle_src& src, index_t first, index_t last, index_t pairs, C* cos, C* sin) {
  for (index_t p = first; p < last; ++p) {
    const double pd = static_cast<double>(p);
    polar_fill(
        0, pairs, pd * src.w_max, [&](auto d, index_t i) { return mul(set1(d, pd), load(d, src.w + i)); },
        [&](auto d, index_t) { return set1(d, src.magnitude); }, cos + p * pairs, sin + p * pairs);
  }
}

}  // namespace POSENC_TARGET_NS
}  // namespace detail
POSENC_END_NAMESPACE
