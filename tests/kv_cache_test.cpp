// RoPE fused with the KV-cache append (posenc/kv_cache.hpp), engines' own cos/sin tables (rope_table_view) and
// the bindings (posenc/binding.hpp), once per ISA. References: RoPE evaluated here in long double from the
// formula; V's cache values are Eigen's own float-to-half/bfloat16 conversions of the input (independent of
// posenc's); the fused call must equal, bit for bit, the unfused composition of posenc's apply_rope and a
// copy; and a bound call what the unbound call writes.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>
#include <posenc/posenc.hpp>

#include "test_util.hpp"

namespace {

using posenc::index_t;
using namespace posenc_test;
using ld = long double;

/// RoPE of one head row (pairs of the window [0, R)), long double; features past R pass through.
std::vector<ld> rope_row(const float* x, index_t d, index_t r, index_t p, double base, bool interleaved) {
  std::vector<ld> y(x, x + d);
  for (index_t i = 0; i < r / 2; ++i) {
    const ld w = std::pow(static_cast<ld>(base), -static_cast<ld>(2 * i) / static_cast<ld>(r));
    const ld t = static_cast<ld>(p) * w;
    const index_t a = interleaved ? 2 * i : i;
    const index_t b = interleaved ? 2 * i + 1 : i + r / 2;
    y[a] = static_cast<ld>(x[a]) * std::cos(t) - static_cast<ld>(x[b]) * std::sin(t);
    y[b] = static_cast<ld>(x[b]) * std::cos(t) + static_cast<ld>(x[a]) * std::sin(t);
  }
  return y;
}

/// f(n, l, s) for each token (n, l) of an N x L batch whose slot s = slots[n * L + l] is not -1 (padding);
/// written[s] set for each.
template <class F>
void for_each_slot(index_t N, index_t L, const std::vector<std::int64_t>& slots, std::vector<bool>& written, const F& f) {
  for (index_t n = 0; n < N; ++n)
    for (index_t l = 0; l < L; ++l) {
      const std::int64_t s = slots[static_cast<std::size_t>(n * L + l)];
      if (s < 0) continue;
      written[static_cast<std::size_t>(s)] = true;
      f(n, l, static_cast<index_t>(s));
    }
}

template <class T>
std::uint16_t bits(T v) {
  std::uint16_t u;
  std::memcpy(&u, &v, 2);
  return u;
}

using KvCache = IsaOnlyTest;

// Block sizes 4 (a power of two: the slot splits by shift and mask) and 3 (by division).
TEST_P(KvCache, PagedHalfCacheFromFusedQkvWithSkippedSlots) {
  const index_t N = 3, L = 2, Hq = 4, Hk = 2, D = 40;
  for (const index_t bs : {index_t{4}, index_t{3}})
  for (const bool inter : {false, true}) {
    const index_t blocks = (20 + bs - 1) / bs;  // slots up to 19
    SCOPED_TRACE(std::string(inter ? "interleaved" : "half_split") + ", block size " + std::to_string(bs));
    Qkv x(N, L, Hq, Hk, D, 5);
    posenc::rope_config cfg;
    cfg.head_dim = D;
    cfg.style = inter ? posenc::rope_style::interleaved : posenc::rope_style::half_split;
    const posenc::rope_cache<float> cache(posenc::make_rope_plan(cfg), 4096);
    const std::vector<std::int64_t> lens = {17, 0, 3000};
    const std::vector<std::int64_t> slots = {9, 10, -1, 0, 19, 4};  // (1, 0) is padding
    const Eigen::half sentinel(-7.0f);
    std::vector<Eigen::half> kc(static_cast<std::size_t>(blocks * bs * Hk * D), sentinel), vc(kc.size(), sentinel);
    posenc::strided_view<Eigen::half, 4> kcv(kc.data(), {blocks, bs, Hk, D}), vcv(vc.data(), {blocks, bs, Hk, D});
    const auto pos = posenc::positions::per_sequence(lens.data(), N);
    ASSERT_TRUE(posenc::try_rope_append_kv(cache, x.k(), x.v(), kcv, vcv, pos, posenc::kv_slots::paged(slots.data(), N, L)).ok());
    std::vector<bool> written(static_cast<std::size_t>(blocks * bs), false);
    for_each_slot(N, L, slots, written, [&](index_t n, index_t l, index_t s) {
      for (index_t h = 0; h < Hk; ++h) {
        const std::vector<ld> ref = rope_row(&x.k()(n, l, h, 0), D, D, lens[static_cast<std::size_t>(n)] + l, 10000.0, inter);
        for (index_t e = 0; e < D; ++e) {
          const double want = static_cast<double>(ref[static_cast<std::size_t>(e)]);
          const double got = static_cast<float>(kcv(s / bs, s % bs, h, e));
          EXPECT_NEAR(got, want, std::ldexp(std::fabs(want), -11) + 4e-6) << "k slot " << s << " h " << h << " e " << e;
          EXPECT_EQ(bits(vcv(s / bs, s % bs, h, e)), bits(Eigen::half(x.v()(n, l, h, e)))) << "v slot " << s;
        }
      }
    });
    for (index_t s = 0; s < blocks * bs; ++s)
      if (!written[static_cast<std::size_t>(s)])
        for (index_t h = 0; h < Hk; ++h)
          for (index_t e = 0; e < D; ++e) {
            ASSERT_EQ(bits(kcv(s / bs, s % bs, h, e)), bits(sentinel)) << "slot " << s << " was written";
            ASSERT_EQ(bits(vcv(s / bs, s % bs, h, e)), bits(sentinel)) << "slot " << s << " was written";
          }
  }
}

TEST_P(KvCache, FusedEqualsUnfusedContiguousBf16PartialRotary) {
  // rope_qk_append_kv == apply_rope(q) in place + apply_rope(k -> bf16 rows) + a converting copy of v, bit for
  // bit, for a contiguous cache at per-sequence lengths, partial rotary dims and the cache-free plan.
  const index_t N = 2, L = 5, Hq = 3, Hk = 1, D = 24, maxlen = 16;
  Qkv x(N, L, Hq, Hk, D, 9);
  Qkv ref = x;
  posenc::rope_config cfg;
  cfg.head_dim = D;
  cfg.rotary_dim = 16;
  cfg.base = 500000.0;
  const posenc::rope_plan plan = posenc::make_rope_plan(cfg);
  const std::vector<std::int64_t> lens = {0, 11};
  const auto pos = posenc::positions::per_sequence(lens.data(), N);
  std::vector<Eigen::bfloat16> kc(static_cast<std::size_t>(N * maxlen * Hk * D), Eigen::bfloat16(3.0f)), vc = kc;
  posenc::strided_view<Eigen::bfloat16, 4> kcv(kc.data(), {N, maxlen, Hk, D}), vcv(vc.data(), {N, maxlen, Hk, D});
  posenc::rope_qk_append_kv(plan, x.q(), x.k(), x.v(), kcv, vcv, pos, posenc::kv_slots::contiguous(lens.data(), N));

  posenc::apply_rope(plan, ref.q(), pos);
  std::vector<Eigen::bfloat16> kr(static_cast<std::size_t>(N * L * Hk * D));
  posenc::apply_rope(plan, ref.k(), posenc::strided_view<Eigen::bfloat16, 4>(kr.data(), {N, L, Hk, D}), pos);
  for (index_t n = 0; n < N; ++n)
    for (index_t l = 0; l < L; ++l)
      for (index_t h = 0; h < Hq; ++h)
        for (index_t e = 0; e < D; ++e) ASSERT_EQ(x.q()(n, l, h, e), ref.q()(n, l, h, e));
  for (index_t n = 0; n < N; ++n)
    for (index_t t = 0; t < maxlen; ++t)
      for (index_t e = 0; e < D; ++e) {
        const index_t l = t - lens[static_cast<std::size_t>(n)];
        const bool mine = l >= 0 && l < L;
        const Eigen::bfloat16 k_want = mine ? kr[static_cast<std::size_t>((n * L + l) * D + e)] : Eigen::bfloat16(3.0f);
        const Eigen::bfloat16 v_want = mine ? Eigen::bfloat16(ref.v()(n, l, 0, e)) : Eigen::bfloat16(3.0f);
        ASSERT_EQ(bits(kcv(n, t, 0, e)), bits(k_want)) << "k n " << n << " t " << t << " e " << e;
        ASSERT_EQ(bits(vcv(n, t, 0, e)), bits(v_want)) << "v n " << n << " t " << t << " e " << e;
      }
}

// V goes into its cache head by head beside K's rotation (the kernels' per-head epilogue) or after all of K
// (bfloat16 caches): every V layout must arrive whole and exact. Float, half and bfloat16 caches from float
// rows, half rows into a half cache (a bit copy), a head dim of 320 (two chunks of pairs: V goes with the
// first), a V head dim other than K's, V rows with a feature stride of 2, and a K head of 40 whose last pairs
// take the tail path; each with q rotated in place (rope_qk_append_kv) against the same formula.
TEST_P(KvCache, VArrivesWholeInEveryLayout) {
  const auto run = [](auto cache_zero, auto in_zero, index_t D, index_t Dv, index_t v_stride, bool inter) {
    using C = decltype(cache_zero);
    using I = decltype(in_zero);
    const index_t N = 2, L = 3, Hq = 3, Hk = 2, bs = 4, blocks = 2;
    SCOPED_TRACE(testing::Message() << "D " << D << " Dv " << Dv << " v stride " << v_stride << (inter ? " interleaved" : ""));
    std::mt19937 g(7);
    std::uniform_real_distribution<float> u(-1.5f, 1.5f);
    const index_t row = Hq * D + Hk * D + Hk * Dv * v_stride;
    std::vector<I> buf(static_cast<std::size_t>(N * L * row));
    for (auto& v : buf) v = I(u(g));
    const posenc::strided_view<I, 4> q(buf.data(), {N, L, Hq, D}, {L * row, row, D, 1});
    const posenc::strided_view<I, 4> k(buf.data() + Hq * D, {N, L, Hk, D}, {L * row, row, D, 1});
    const posenc::strided_view<I, 4> v(buf.data() + (Hq + Hk) * D, {N, L, Hk, Dv}, {L * row, row, Dv * v_stride, v_stride});
    const std::vector<I> before = buf;
    posenc::rope_config cfg;
    cfg.head_dim = D;
    cfg.style = inter ? posenc::rope_style::interleaved : posenc::rope_style::half_split;
    const posenc::rope_cache<float> cache(posenc::make_rope_plan(cfg), 64);
    std::vector<C> kc(static_cast<std::size_t>(blocks * bs * Hk * D)), vc(static_cast<std::size_t>(blocks * bs * Hk * Dv));
    posenc::strided_view<C, 4> kcv(kc.data(), {blocks, bs, Hk, D}), vcv(vc.data(), {blocks, bs, Hk, Dv});
    const std::vector<std::int64_t> slots = {7, 0, 5, 2, 3, 6};
    const std::vector<std::int64_t> lens = {4, 9};
    ASSERT_TRUE(posenc::try_rope_qk_append_kv(cache, q, k, v, kcv, vcv, posenc::positions::per_sequence(lens.data(), N),
                                              posenc::kv_slots::paged(slots.data(), N, L))
                    .ok());
    const auto at = [&](index_t n, index_t l, index_t off) {
      return static_cast<float>(before[static_cast<std::size_t>(n * L * row + l * row + off)]);
    };
    const double tol = std::is_same_v<C, float> && std::is_same_v<I, float> ? 0x1p-21 : 0x1p-7;
    for (index_t n = 0; n < N; ++n)
      for (index_t l = 0; l < L; ++l) {
        const std::int64_t s = slots[static_cast<std::size_t>(n * L + l)];
        const index_t p = lens[static_cast<std::size_t>(n)] + l;
        for (index_t h = 0; h < Hk; ++h) {
          for (index_t e = 0; e < Dv; ++e)  // V: one rounding of the input value, nothing else
            ASSERT_EQ(static_cast<float>(vcv(s / bs, s % bs, h, e)),
                      static_cast<float>(C(at(n, l, (Hq + Hk) * D + (h * Dv + e) * v_stride))))
                << "v n " << n << " l " << l << " h " << h << " e " << e;
          std::vector<float> kx(static_cast<std::size_t>(D));
          for (index_t e = 0; e < D; ++e) kx[static_cast<std::size_t>(e)] = at(n, l, Hq * D + h * D + e);
          const std::vector<ld> ref = rope_row(kx.data(), D, D, p, 10000.0, inter);
          for (index_t e = 0; e < D; ++e) {
            const double want = static_cast<double>(ref[static_cast<std::size_t>(e)]);
            ASSERT_NEAR(static_cast<float>(kcv(s / bs, s % bs, h, e)), want, tol * (std::fabs(want) + 1)) << "k h " << h << " e " << e;
          }
        }
        for (index_t h = 0; h < Hq; ++h) {
          std::vector<float> qx(static_cast<std::size_t>(D));
          for (index_t e = 0; e < D; ++e) qx[static_cast<std::size_t>(e)] = at(n, l, h * D + e);
          const std::vector<ld> ref = rope_row(qx.data(), D, D, p, 10000.0, inter);
          for (index_t e = 0; e < D; ++e) {
            const double want = static_cast<double>(ref[static_cast<std::size_t>(e)]);
            ASSERT_NEAR(static_cast<float>(q(n, l, h, e)), want, (std::is_same_v<I, float> ? 0x1p-21 : 0x1p-7) * (std::fabs(want) + 1))
                << "q h " << h << " e " << e;
          }
        }
      }
  };
  for (const bool inter : {false, true}) {
    run(float{}, float{}, 64, 64, 1, inter);
    run(float{}, float{}, 320, 320, 1, inter);  // two chunks of pairs
    run(float{}, float{}, 40, 24, 2, inter);    // K's tail pairs, V narrower and strided
    run(Eigen::half{}, float{}, 64, 48, 1, inter);
    run(Eigen::half{}, float{}, 320, 320, 2, inter);
    run(Eigen::bfloat16{}, float{}, 64, 64, 1, inter);
    run(Eigen::bfloat16{}, float{}, 40, 24, 2, inter);
    run(Eigen::half{}, Eigen::half{}, 64, 64, 1, inter);  // a bit copy of V
    run(Eigen::half{}, Eigen::half{}, 320, 40, 2, inter);
  }
}

template <class T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// Half-split calls from a cos/sin table of the arithmetic type with contiguous features take each token straight
// from its table row (the kernels' append_token): bit for bit the unfused apply_rope(q), apply_rope(k -> rows of
// the cache's type) and a converting copy of v, which go through the general driver. Float, half and bfloat16
// caches; with and without q; V heads contiguous (one span) or padded in the buffer and, by half as much, in
// the cache (head by head); partial rotary dims; K heads with tail pairs (40) and past one chunk of pairs (320); a skipped slot.
TEST_P(KvCache, TableRowsEqualTheUnfusedCalls) {
  const auto run = [](auto cache_zero, index_t D, index_t rotary, index_t r_offset, index_t Dv, index_t v_pad, bool with_q) {
    using C = decltype(cache_zero);
    const index_t N = 2, L = 3, Hq = 3, Hk = 2, bs = 4, blocks = 3;
    SCOPED_TRACE(testing::Message() << sizeof(C) << "-byte cache, D " << D << " rotary " << rotary << " at " << r_offset
                                    << " Dv " << Dv << " V pad " << v_pad << (with_q ? " with q" : ""));
    const index_t vrow = Dv + v_pad, crow = Dv + v_pad / 2;  // V's head strides in the buffer and in the cache
    const index_t row = Hq * D + Hk * D + Hk * vrow;
    std::mt19937 g(11);
    std::uniform_real_distribution<float> u(-1.5f, 1.5f);
    std::vector<float> buf(static_cast<std::size_t>(N * L * row));
    for (auto& x : buf) x = u(g);
    std::vector<float> ref = buf;
    const auto q_of = [&](std::vector<float>& b) {
      return posenc::strided_view<float, 4>(b.data(), {N, L, Hq, D}, {L * row, row, D, 1});
    };
    const auto k_of = [&](std::vector<float>& b) {
      return posenc::strided_view<float, 4>(b.data() + Hq * D, {N, L, Hk, D}, {L * row, row, D, 1});
    };
    const auto v_of = [&](std::vector<float>& b) {
      return posenc::strided_view<float, 4>(b.data() + (Hq + Hk) * D, {N, L, Hk, Dv}, {L * row, row, vrow, 1});
    };
    posenc::rope_config cfg;
    cfg.head_dim = D;
    cfg.rotary_dim = rotary;
    cfg.rotary_offset = r_offset;
    const posenc::rope_cache<float> cache(posenc::make_rope_plan(cfg), 64);
    const C sentinel(-7.0f);
    std::vector<C> kc(static_cast<std::size_t>(blocks * bs * Hk * D), sentinel);
    std::vector<C> vc(static_cast<std::size_t>(blocks * bs * Hk * crow), sentinel);
    const posenc::strided_view<C, 4> kcv(kc.data(), {blocks, bs, Hk, D});
    const posenc::strided_view<C, 4> vcv(vc.data(), {blocks, bs, Hk, Dv}, {bs * Hk * crow, Hk * crow, crow, 1});
    const std::vector<std::int64_t> slots = {7, -1, 5, 2, 11, 6};
    const std::vector<std::int64_t> lens = {4, 9};
    const auto pos = posenc::positions::per_sequence(lens.data(), N);
    const auto paged = posenc::kv_slots::paged(slots.data(), N, L);
    if (with_q)
      ASSERT_TRUE(posenc::try_rope_qk_append_kv(cache, q_of(buf), k_of(buf), v_of(buf), kcv, vcv, pos, paged).ok());
    else
      ASSERT_TRUE(posenc::try_rope_append_kv(cache, k_of(buf), v_of(buf), kcv, vcv, pos, paged).ok());

    if (with_q) posenc::apply_rope(cache, q_of(ref), pos);
    std::vector<C> kr(static_cast<std::size_t>(N * L * Hk * D));
    posenc::apply_rope(cache, k_of(ref), posenc::strided_view<C, 4>(kr.data(), {N, L, Hk, D}), pos);
    for (std::size_t i = 0; i < buf.size(); ++i) ASSERT_TRUE(same_bits(buf[i], ref[i])) << "buffer element " << i;
    std::vector<bool> written(static_cast<std::size_t>(blocks * bs), false);
    for_each_slot(N, L, slots, written, [&](index_t n, index_t l, index_t s) {
      for (index_t h = 0; h < Hk; ++h) {
        for (index_t e = 0; e < D; ++e)
          ASSERT_TRUE(same_bits(kcv(s / bs, s % bs, h, e), kr[static_cast<std::size_t>(((n * L + l) * Hk + h) * D + e)]))
              << "k slot " << s << " h " << h << " e " << e;
        for (index_t e = 0; e < Dv; ++e)
          ASSERT_TRUE(same_bits(vcv(s / bs, s % bs, h, e), C(v_of(ref)(n, l, h, e)))) << "v slot " << s << " h " << h << " e " << e;
        for (index_t e = Dv; e < crow; ++e)  // the cache's padding is not V's
          ASSERT_TRUE(same_bits(vc[static_cast<std::size_t>(((s * Hk) + h) * crow + e)], sentinel)) << "v padding written";
      }
    });
    for (index_t s = 0; s < blocks * bs; ++s)
      if (!written[static_cast<std::size_t>(s)]) {
        for (index_t i = 0; i < Hk * D; ++i) ASSERT_TRUE(same_bits(kc[static_cast<std::size_t>(s * Hk * D + i)], sentinel));
        for (index_t i = 0; i < Hk * crow; ++i) ASSERT_TRUE(same_bits(vc[static_cast<std::size_t>(s * Hk * crow + i)], sentinel));
      }
  };
  for (const bool with_q : {true, false}) {
    run(float{}, 64, 64, 0, 64, 0, with_q);
    run(Eigen::half{}, 64, 64, 0, 64, 0, with_q);
    run(Eigen::bfloat16{}, 64, 64, 0, 64, 0, with_q);
    run(Eigen::half{}, 40, 40, 0, 24, 8, with_q);  // tail pairs, padded V heads
    run(Eigen::bfloat16{}, 40, 40, 0, 40, 4, with_q);
    run(float{}, 320, 320, 0, 128, 0, with_q);      // past one chunk of pairs
    run(Eigen::half{}, 128, 64, 0, 128, 0, with_q);  // partial rotary
    run(Eigen::bfloat16{}, 96, 32, 48, 80, 16, with_q);  // a window inside the head
  }
}

TEST_P(KvCache, RejectedCallsWriteNothing) {
  const index_t N = 2, L = 1, Hk = 2, D = 8;
  Qkv x(N, L, 2, Hk, D, 1);
  posenc::rope_config cfg;
  cfg.head_dim = D;
  const posenc::rope_plan plan = posenc::make_rope_plan(cfg);
  cfg.head_dim = 2 * D;
  const posenc::rope_plan plan16 = posenc::make_rope_plan(cfg);
  std::vector<float> kc(static_cast<std::size_t>(2 * 4 * Hk * D), 5.0f), vc = kc;
  posenc::strided_view<float, 4> kcv(kc.data(), {2, 4, Hk, D}), vcv(vc.data(), {2, 4, Hk, D});
  const std::vector<std::int64_t> lens = {3, 4};
  const std::vector<std::int64_t> bad_slot = {2, 8};
  const Qkv before = x;
  struct Case {
    posenc::status s;
    const char* text;
  };
  const auto pos = posenc::positions::per_sequence(lens.data(), N);
  const Case cases[] = {
      {posenc::try_rope_append_kv(plan, x.k(), x.v(), kcv, vcv, pos, posenc::kv_slots::contiguous(lens.data(), N)),
       "posenc::rope_append_kv: cached length[1]=4 + L=1 exceeds the cache's max_len=4"},
      {posenc::try_rope_append_kv(plan, x.k(), x.v(), kcv, vcv, pos, posenc::kv_slots::paged(bad_slot.data(), N, L)),
       "posenc::rope_append_kv: slot_mapping[1, 0]=8 is outside [-1, 8) (num_blocks * block_size)"},
      {posenc::try_rope_append_kv(plan, x.k(), x.v(), kcv, kcv, pos, posenc::kv_slots::paged(lens.data(), N, L)),
       "posenc::rope_append_kv: v_cache overlaps k_cache"},
      {posenc::try_rope_append_kv(plan, x.k(), x.v(), kcv.slice(2, 0, 1), vcv, pos, posenc::kv_slots::paged(lens.data(), N, L)),
       "posenc::rope_append_kv: k_cache (heads, head dim)=(1, 8) does not match k (2, 8)"},
      {posenc::try_rope_qk_append_kv(plan, x.q(), x.k(), x.v(), kcv, vcv, posenc::positions::offset(-1),
                                     posenc::kv_slots::paged(lens.data(), N, L)),
       "posenc::rope_qk_append_kv: positions offset=-1 must be >= 0"},
      {posenc::try_rope_append_kv(plan16, x.k(), x.v(), kcv, vcv, pos, posenc::kv_slots::paged(lens.data(), N, L)),
       "posenc::rope_append_kv: k head dim (extent 3)=8 does not match the plan's head_dim=16"},
      {posenc::try_rope_append_kv(plan, x.k(), x.v().slice(2, 0, 1), kcv, vcv.slice(2, 0, 1), pos,
                                  posenc::kv_slots::paged(lens.data(), N, L)),
       "posenc::rope_append_kv: v heads (extent 2)=1 does not match k's 2"},
      {posenc::try_rope_append_kv(plan, x.k(), x.v(), kcv, vcv.slice(0, 0, 1), pos,
                                  posenc::kv_slots::paged(lens.data(), N, L)),
       "posenc::rope_append_kv: v_cache (extent 0, extent 1)=(1, 4) does not match k_cache (2, 4)"},
      // q and v of a fused buffer interleave by token (their spans overlap); one view for both is rejected.
      {posenc::try_rope_qk_append_kv(plan, x.v(), x.k(), x.v(), kcv, vcv, pos, posenc::kv_slots::paged(lens.data(), N, L)),
       "posenc::rope_qk_append_kv: q and k or v start at one element"},
      {posenc::try_rope_qk_append_kv(plan, posenc::strided_view<float, 4>(vc.data(), {N, L, 2, D}), x.k(), x.v(), kcv, vcv,
                                     posenc::positions::offset(3), posenc::kv_slots::paged(lens.data(), N, L)),
       "posenc::rope_qk_append_kv: q overlaps a cache"},
  };
  for (const Case& c : cases) {
    EXPECT_FALSE(c.s.ok());
    EXPECT_EQ(c.s.code(), posenc::errc::invalid_argument);
    EXPECT_EQ(c.s.message(), c.text);
  }
  for (float v : kc) ASSERT_EQ(v, 5.0f);
  for (float v : vc) ASSERT_EQ(v, 5.0f);
  ASSERT_EQ(x.buf, before.buf);
  // The throwing form carries the same message.
  try {
    posenc::rope_append_kv(plan, x.k(), x.v(), kcv, vcv, pos, posenc::kv_slots::contiguous(lens.data(), N));
    FAIL() << "no exception";
  } catch (const posenc::argument_error& e) {
    EXPECT_STREQ(e.what(), cases[0].text);
  }
}

// Calls moving more than rope_stream_bytes prefetch each next token's rows (detail::prefetch_ahead, from DRAM);
// a hint that must not change a bit: the streaming calls against the same tokens one call each (which stay
// under the threshold), K and q against the long-double formula at the first and last tokens, for both pair
// styles and N > 1 (the next token crosses sequences).
TEST_P(KvCache, StreamingCallsEqualTokenByTokenCalls) {
  const index_t N = 2, Hq = 8, Hk = 4, D = 64;
  // rope_qk_append_kv moves q (read and written) and k, v (read as float, written as half) per token.
  const index_t token_bytes = Hq * D * 8 + 2 * Hk * D * 6;
  const index_t L = posenc::detail::rope_stream_bytes / (N * token_bytes) + 64;
  for (const bool inter : {false, true}) {
    SCOPED_TRACE(inter ? "interleaved" : "half_split");
    posenc::rope_config cfg;
    cfg.head_dim = D;
    cfg.style = inter ? posenc::rope_style::interleaved : posenc::rope_style::half_split;
    const posenc::rope_cache<float> cache(posenc::make_rope_plan(cfg), L + 200);
    const std::vector<std::int64_t> lens = {7, 150};
    const auto pos = posenc::positions::per_sequence(lens.data(), N);
    std::vector<std::int64_t> slots(static_cast<std::size_t>(N * L));
    for (index_t t = 0; t < N * L; ++t) slots[static_cast<std::size_t>(t)] = N * L - 1 - t;  // blocks backwards
    const index_t bs = 16, blocks = (N * L + bs - 1) / bs;
    const auto cache_of = [&] { return std::vector<Eigen::half>(static_cast<std::size_t>(blocks * bs * Hk * D)); };

    Qkv x(N, L, Hq, Hk, D, 11), y = x;
    std::vector<Eigen::half> kc = cache_of(), vc = cache_of(), kc1 = cache_of(), vc1 = cache_of();
    const auto view = [&](std::vector<Eigen::half>& c) {
      return posenc::strided_view<Eigen::half, 4>(c.data(), {blocks, bs, Hk, D});
    };
    ASSERT_TRUE(posenc::try_rope_qk_append_kv(cache, x.q(), x.k(), x.v(), view(kc), view(vc), pos,
                                              posenc::kv_slots::paged(slots.data(), N, L))
                    .ok());
    for (index_t n = 0; n < N; ++n)
      for (index_t l = 0; l < L; ++l) {
        const auto one = [&](posenc::strided_view<float, 4> v) { return v.slice(0, n, 1).slice(1, l, 1); };
        const std::int64_t* slot = &slots[static_cast<std::size_t>(n * L + l)];
        ASSERT_TRUE(posenc::try_rope_qk_append_kv(cache, one(y.q()), one(y.k()), one(y.v()), view(kc1), view(vc1),
                                                  posenc::positions::offset(lens[static_cast<std::size_t>(n)] + l),
                                                  posenc::kv_slots::paged(slot, 1, 1))
                        .ok());
      }
    ASSERT_EQ(x.buf, y.buf);  // q in place
    for (std::size_t i = 0; i < kc.size(); ++i) {
      ASSERT_EQ(bits(kc[i]), bits(kc1[i])) << "k_cache element " << i;
      ASSERT_EQ(bits(vc[i]), bits(vc1[i])) << "v_cache element " << i;
    }
    Qkv r(N, L, Hq, Hk, D, 11);  // the inputs again
    for (const index_t n : {index_t{0}, N - 1})
      for (const index_t l : {index_t{0}, L - 1}) {
        const index_t p = lens[static_cast<std::size_t>(n)] + l;
        const std::int64_t s = slots[static_cast<std::size_t>(n * L + l)];
        for (index_t h = 0; h < Hk; ++h) {
          const std::vector<ld> ref = rope_row(&r.k()(n, l, h, 0), D, D, p, 10000.0, inter);
          for (index_t e = 0; e < D; ++e) {
            const double want = static_cast<double>(ref[static_cast<std::size_t>(e)]);
            EXPECT_NEAR(static_cast<float>(view(kc)(s / bs, s % bs, h, e)), want, std::ldexp(std::fabs(want), -11) + 4e-6);
          }
        }
        const std::vector<ld> q_ref = rope_row(&r.q()(n, l, Hq - 1, 0), D, D, p, 10000.0, inter);
        for (index_t e = 0; e < D; ++e)
          EXPECT_NEAR(x.q()(n, l, Hq - 1, e), static_cast<double>(q_ref[static_cast<std::size_t>(e)]), 2e-6);
      }

    // apply_rope over q and k of the fused buffer (rope_rows: two targets, in place), streaming as well.
    const index_t L2 = posenc::detail::rope_stream_bytes / (N * (Hq + Hk) * D * 8) + 64;
    Qkv a(N, L2, Hq, Hk, D, 12), b = a;
    const posenc::rope_cache<float> cache2(posenc::make_rope_plan(cfg), L2 + 200);
    posenc::apply_rope_qk(cache2, a.q(), a.k(), pos);
    for (index_t n = 0; n < N; ++n)
      for (index_t l = 0; l < L2; ++l)
        posenc::apply_rope_qk(cache2, b.q().slice(0, n, 1).slice(1, l, 1), b.k().slice(0, n, 1).slice(1, l, 1),
                           posenc::positions::offset(lens[static_cast<std::size_t>(n)] + l));
    ASSERT_EQ(a.buf, b.buf);
  }
}

// A binding (posenc/binding.hpp) checks the views once and each step only its positions and slots: every
// step must write what the unbound call writes, bit for bit, with or without q, paged (padding slots included)
// or contiguous; and K of one step against the long-double formula.
TEST_P(KvCache, BoundStepsEqualUnboundCalls) {
  const index_t N = 3, L = 1, Hq = 4, Hk = 2, D = 40, bs = 4, blocks = 6;
  for (const bool inter : {false, true}) {
    SCOPED_TRACE(inter ? "interleaved" : "half_split");
    posenc::rope_config cfg;
    cfg.head_dim = D;
    cfg.style = inter ? posenc::rope_style::interleaved : posenc::rope_style::half_split;
    const posenc::rope_cache<float> cache(posenc::make_rope_plan(cfg), 512);
    Qkv x(N, L, Hq, Hk, D, 21), y = x;
    const Eigen::half sentinel(-7.0f);
    const auto fresh = [&] { return std::vector<Eigen::half>(static_cast<std::size_t>(blocks * bs * Hk * D), sentinel); };
    std::vector<Eigen::half> kc = fresh(), vc = fresh(), kc1 = fresh(), vc1 = fresh();
    const auto view = [&](std::vector<Eigen::half>& c) {
      return posenc::strided_view<Eigen::half, 4>(c.data(), {blocks, bs, Hk, D});
    };
    auto step = posenc::bind_rope_qk_append_kv(cache, x.q(), x.k(), x.v(), view(kc), view(vc));
    ASSERT_TRUE(step.ok());
    EXPECT_EQ(step.batch(), N);
    EXPECT_EQ(step.length(), L);
    // Three decode steps: positions advance, slots move, sequence 1 is padding in the second.
    const std::int64_t lens[3][3] = {{5, 0, 300}, {6, 1, 301}, {7, 2, 302}};
    const std::int64_t slots[3][3] = {{0, 9, 23}, {1, -1, 22}, {2, 10, 4}};
    for (int t = 0; t < 3; ++t) {
      const auto pos = posenc::positions::per_sequence(lens[t], N);
      Qkv in = x;  // this step's inputs (q is rotated in place)
      ASSERT_TRUE(step.try_run(pos, posenc::kv_slots::paged(slots[t], N, L)).ok());
      ASSERT_TRUE(posenc::try_rope_qk_append_kv(cache, y.q(), y.k(), y.v(), view(kc1), view(vc1), pos,
                                                posenc::kv_slots::paged(slots[t], N, L))
                      .ok());
      ASSERT_EQ(x.buf, y.buf) << "q, step " << t;
      for (std::size_t i = 0; i < kc.size(); ++i) {
        ASSERT_EQ(bits(kc[i]), bits(kc1[i])) << "k_cache element " << i << ", step " << t;
        ASSERT_EQ(bits(vc[i]), bits(vc1[i])) << "v_cache element " << i << ", step " << t;
      }
      const index_t n = 2;
      const std::int64_t s = slots[t][n];
      for (index_t h = 0; h < Hk; ++h) {
        const std::vector<ld> ref = rope_row(&in.k()(n, 0, h, 0), D, D, lens[t][n], 10000.0, inter);
        for (index_t e = 0; e < D; ++e) {
          const double want = static_cast<double>(ref[static_cast<std::size_t>(e)]);
          EXPECT_NEAR(static_cast<float>(view(kc)(s / bs, s % bs, h, e)), want, std::ldexp(std::fabs(want), -11) + 4e-6);
        }
      }
    }
    EXPECT_EQ(bits(view(kc)(22 / bs, 22 % bs, 0, 0)), bits(view(kc1)(22 / bs, 22 % bs, 0, 0)));

    // Without q, into contiguous float caches [N, 8, Hk, D] after each sequence's cached length.
    std::vector<float> fk(static_cast<std::size_t>(N * 8 * Hk * D), 5.0f), fv = fk, fk1 = fk, fv1 = fk;
    const auto fview = [&](std::vector<float>& c) { return posenc::strided_view<float, 4>(c.data(), {N, 8, Hk, D}); };
    const posenc::strided_view<const float, 4> k(x.k()), v(x.v());
    posenc::rope_append_kv_binding<posenc::rope_cache<float>, const posenc::strided_view<const float, 4>,
                                   const posenc::strided_view<const float, 4>, posenc::strided_view<float, 4>,
                                   posenc::strided_view<float, 4>>
        kv;  // declared empty, as an engine's member, then bound
    EXPECT_FALSE(kv.ok());
    kv = posenc::try_bind_rope_append_kv(cache, k, v, fview(fk), fview(fv));
    ASSERT_TRUE(kv.ok());
    for (int t = 0; t < 3; ++t) {
      const std::int64_t cached[3] = {t, 2 * t, 7};
      const auto pos = posenc::positions::per_sequence(cached, N);
      kv.run(pos, posenc::kv_slots::contiguous(cached, N));
      posenc::rope_append_kv(cache, k, v, fview(fk1), fview(fv1), pos, posenc::kv_slots::contiguous(cached, N));
      ASSERT_EQ(fk, fk1) << "step " << t;
      ASSERT_EQ(fv, fv1) << "step " << t;
    }
  }
}

// Views the unbound call rejects are rejected at binding with its message (and every run repeats it); a run
// checks its positions and slots against the bound N, L and caches, and writes nothing when they fail.
TEST_P(KvCache, BindingRejectsWhatTheCallRejects) {
  const index_t N = 2, L = 1, Hk = 2, D = 8;
  Qkv x(N, L, 2, Hk, D, 1);
  posenc::rope_config cfg;
  cfg.head_dim = D;
  const posenc::rope_cache<float> cache(posenc::make_rope_plan(cfg), 16);
  std::vector<float> kc(static_cast<std::size_t>(2 * 4 * Hk * D), 5.0f), vc = kc;
  posenc::strided_view<float, 4> kcv(kc.data(), {2, 4, Hk, D}), vcv(vc.data(), {2, 4, Hk, D});
  const Qkv before = x;
  const std::int64_t lens[2] = {3, 4}, ok_slots[2] = {1, 2}, bad_slots[2] = {2, 8}, three[3] = {0, 1, 2};
  const auto pos = posenc::positions::per_sequence(lens, N);

  const auto bad = posenc::try_bind_rope_append_kv(cache, x.k(), x.v(), kcv, kcv);
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.bind_status().message(), "posenc::rope_append_kv: v_cache overlaps k_cache");
  auto bad_copy = bad;
  const posenc::status again = bad_copy.try_run(pos, posenc::kv_slots::paged(ok_slots, N, L));
  EXPECT_EQ(again.message(), "posenc::rope_append_kv: v_cache overlaps k_cache");
  const auto bad_q = posenc::try_bind_rope_qk_append_kv(cache, x.v(), x.k(), x.v(), kcv, vcv);
  EXPECT_EQ(bad_q.bind_status().message(), "posenc::rope_qk_append_kv: q and k or v start at one element");
  try {
    static_cast<void>(posenc::bind_rope_append_kv(cache, x.k(), x.v(), kcv.slice(2, 0, 1), vcv));
    FAIL() << "no exception";
  } catch (const posenc::argument_error& e) {
    EXPECT_STREQ(e.what(), "posenc::rope_append_kv: k_cache (heads, head dim)=(1, 8) does not match k (2, 8)");
  }
  decltype(bad_copy) empty;
  EXPECT_EQ(empty.try_run(pos, posenc::kv_slots::paged(ok_slots, N, L)).message(),
            "posenc::rope_append_kv: the binding is empty (make it with try_bind_rope_append_kv)");

  auto step = posenc::bind_rope_qk_append_kv(cache, x.q(), x.k(), x.v(), kcv, vcv);
  struct Case {
    posenc::status s;
    const char* text;
  };
  const std::int64_t late[2] = {3, 16};
  const Case cases[] = {
      {step.try_run(pos, posenc::kv_slots::paged(bad_slots, N, L)),
       "posenc::rope_qk_append_kv: slot_mapping[1, 0]=8 is outside [-1, 8) (num_blocks * block_size)"},
      {step.try_run(pos, posenc::kv_slots::contiguous(lens, N)),
       "posenc::rope_qk_append_kv: cached length[1]=4 + L=1 exceeds the cache's max_len=4"},
      {step.try_run(posenc::positions::per_sequence(late, N), posenc::kv_slots::paged(ok_slots, N, L)),
       "posenc::rope_qk_append_kv: position 16 is past the cache of 16 positions"},
      {step.try_run(posenc::positions::per_sequence(three, 3), posenc::kv_slots::paged(ok_slots, N, L)),
       "posenc::rope_qk_append_kv: positions per_sequence count=3 does not match batch N=2"},
      {step.try_run(pos, posenc::kv_slots::paged(three, 3, L)), "posenc::rope_qk_append_kv: slots batch=3 does not match N=2"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.s.code(), posenc::errc::invalid_argument);
    EXPECT_EQ(c.s.message(), c.text);
  }
  for (float v : kc) ASSERT_EQ(v, 5.0f);
  for (float v : vc) ASSERT_EQ(v, 5.0f);
  ASSERT_EQ(x.buf, before.buf);
  EXPECT_THROW(step.run(pos, posenc::kv_slots::paged(bad_slots, N, L)), posenc::argument_error);
  step.run(pos, posenc::kv_slots::paged(ok_slots, N, L));
  EXPECT_NE(x.buf, before.buf);  // q rotated
}

INSTANTIATE_TEST_SUITE_P(Isa, KvCache, ::testing::ValuesIn(all_isas()), isa_only_name);

using TableView = IsaOnlyTest;

TEST_P(TableView, EngineLayoutsMatchTheCacheAndTheFormula) {
  const index_t N = 1, L = 6, H = 3, D = 36, P = 64;
  for (const bool inter : {false, true}) {
    SCOPED_TRACE(inter ? "interleaved" : "half_split");
    posenc::rope_config cfg;
    cfg.head_dim = D;
    cfg.style = inter ? posenc::rope_style::interleaved : posenc::rope_style::half_split;
    const posenc::rope_cache<float> cache(posenc::make_rope_plan(cfg), P);
    const index_t R2 = D / 2;
    // The same values in three engine layouts (float), and a half table.
    std::vector<float> vllm(static_cast<std::size_t>(P * D)), pairs(vllm.size()), hf_cos(vllm.size()), hf_sin(vllm.size());
    std::vector<Eigen::half> half_cs(vllm.size());
    for (index_t p = 0; p < P; ++p)
      for (index_t i = 0; i < R2; ++i) {
        const float c = cache.cos_data()[p * R2 + i], s = cache.sin_data()[p * R2 + i];
        vllm[static_cast<std::size_t>(p * D + i)] = c;
        vllm[static_cast<std::size_t>(p * D + R2 + i)] = s;
        pairs[static_cast<std::size_t>(p * D + 2 * i)] = c;
        pairs[static_cast<std::size_t>(p * D + 2 * i + 1)] = s;
        hf_cos[static_cast<std::size_t>(p * D + i)] = hf_cos[static_cast<std::size_t>(p * D + R2 + i)] = c;
        hf_sin[static_cast<std::size_t>(p * D + i)] = hf_sin[static_cast<std::size_t>(p * D + R2 + i)] = s;
        half_cs[static_cast<std::size_t>(p * D + i)] = Eigen::half(c);
        half_cs[static_cast<std::size_t>(p * D + R2 + i)] = Eigen::half(s);
      }
    const posenc::rope_geometry g{D, 0, 0, cfg.style};
    std::vector<float> x(static_cast<std::size_t>(N * L * H * D));
    std::mt19937 gen(3);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (auto& v : x) v = u(gen);
    const auto pos = posenc::positions::offset(40);
    auto run = [&](const auto& freq) {
      std::vector<float> y = x;
      EXPECT_TRUE(posenc::try_apply_rope(freq, posenc::strided_view<float, 4>(y.data(), {N, L, H, D}), pos).ok());
      return y;
    };
    const std::vector<float> want = run(cache);
    EXPECT_EQ(run(posenc::rope_table_view<float>::cos_sin_cache(vllm.data(), P, g)), want);
    EXPECT_EQ(run(posenc::rope_table_view<float>::interleaved_pairs(pairs.data(), P, g)), want);
    EXPECT_EQ(run(posenc::rope_table_view<float>::separate(hf_cos.data(), hf_sin.data(), P, g, D)), want);
    const std::vector<float> yh = run(posenc::rope_table_view<Eigen::half>::cos_sin_cache(half_cs.data(), P, g));
    for (index_t r = 0; r < N * L * H; ++r) {
      const std::vector<ld> ref = rope_row(&x[static_cast<std::size_t>(r * D)], D, D, 40 + (r / H) % L, 10000.0, inter);
      for (index_t e = 0; e < D; ++e)  // a half table: cos/sin within 2^-11 relative
        EXPECT_NEAR(yh[static_cast<std::size_t>(r * D + e)], static_cast<double>(ref[static_cast<std::size_t>(e)]), 2e-3);
    }
    // Past the table, or a geometry that does not fit: rejected, nothing written.
    std::vector<float> y = x;
    const posenc::status s = posenc::try_apply_rope(posenc::rope_table_view<float>::cos_sin_cache(vllm.data(), 45, g),
                                                    posenc::strided_view<float, 4>(y.data(), {N, L, H, D}), pos);
    EXPECT_EQ(s.message(), "posenc::apply_rope: position 45 is past the cache of 45 positions");
    const posenc::rope_geometry odd{D, 7, 0, cfg.style};
    EXPECT_EQ(posenc::try_apply_rope(posenc::rope_table_view<float>::cos_sin_cache(vllm.data(), P, odd),
                                     posenc::strided_view<float, 4>(y.data(), {N, L, H, D}), pos)
                  .message(),
              "posenc::apply_rope: table geometry rotary_dim=7 must be even and > 0");
    EXPECT_EQ(y, x);
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, TableView, ::testing::ValuesIn(all_isas()), isa_only_name);

// ---- bound RoPE calls (posenc/binding.hpp: bind_apply_rope, bind_apply_rope_qk) ---------------------------------
// A binding checks its views once and each run only the positions, so every run must write what the unbound
// call writes, bit for bit, for each source kind (a cos/sin cache, a plan, an engine's table view) and position
// form; rotated rows are also checked against the long-double formula. Rejections carry the unbound call's
// message and write nothing. (The KV-append bindings: KvCache.Bound* above.)

using Binding = IsaOnlyTest;

TEST_P(Binding, RopeRunsEqualUnboundCalls) {
  const index_t N = 3, L = 2, Hq = 4, Hk = 2, D = 40;
  posenc::rope_config cfg;
  cfg.head_dim = D;
  const posenc::rope_plan plan = posenc::make_rope_plan(cfg);
  const posenc::rope_cache<float> cache(plan, 600);
  // An engine's vLLM-style cos_sin_cache [max_pos, D] (cos of the pairs, then their sin), from the cache.
  std::vector<float> cos_sin(static_cast<std::size_t>(600 * D));
  for (index_t p = 0; p < 600; ++p)
    for (index_t i = 0; i < D / 2; ++i) {
      cos_sin[static_cast<std::size_t>(p * D + i)] = cache.cos_data()[p * (D / 2) + i];
      cos_sin[static_cast<std::size_t>(p * D + D / 2 + i)] = cache.sin_data()[p * (D / 2) + i];
    }
  const posenc::rope_geometry g{D, D, 0, posenc::rope_style::half_split};
  const auto table = posenc::rope_table_view<float>::cos_sin_cache(cos_sin.data(), 600, g);

  Qkv x(N, L, Hq, Hk, D, 3), y = x;
  std::vector<Eigen::half> out(static_cast<std::size_t>(N * L * Hk * D)), out1 = out;
  const auto half_view = [&](std::vector<Eigen::half>& o) {
    return posenc::strided_view<Eigen::half, 4>(o.data(), {N, L, Hk, D});
  };
  const posenc::strided_view<const float, 4> k_in(y.k());  // read only: the out-of-place source
  auto qk = posenc::bind_apply_rope_qk(cache, x.q(), x.k());
  auto q_plan = posenc::bind_apply_rope(plan, x.q());
  auto k_table = posenc::bind_apply_rope(table, x.k());
  auto k_half = posenc::bind_apply_rope(cache, k_in, half_view(out));
  EXPECT_EQ(qk.batch(), N);
  EXPECT_EQ(qk.length(), L);

  const std::int64_t lens[3][3] = {{0, 7, 500}, {2, 9, 502}, {4, 11, 504}};
  std::vector<std::int64_t> ids(static_cast<std::size_t>(N * L));
  for (int t = 0; t < 3; ++t) {
    SCOPED_TRACE("step " + std::to_string(t));
    const auto pos = posenc::positions::per_sequence(lens[t], N);
    for (index_t i = 0; i < N * L; ++i) ids[static_cast<std::size_t>(i)] = lens[t][i / L] + (i % L == 0 ? 1 : 0);
    const auto tok = posenc::positions::per_token(ids.data(), N, L);
    const Qkv in = x;

    qk.run(pos);
    posenc::apply_rope_qk(cache, y.q(), y.k(), pos);
    ASSERT_EQ(x.buf, y.buf) << "apply_rope_qk, cache";
    q_plan.run(tok);
    posenc::apply_rope(plan, y.q(), tok);
    ASSERT_EQ(x.buf, y.buf) << "apply_rope, plan, per-token ids";
    k_table.run(pos);
    posenc::apply_rope(table, y.k(), pos);
    ASSERT_EQ(x.buf, y.buf) << "apply_rope, table view";
    ASSERT_TRUE(k_half.try_run(pos).ok());
    posenc::apply_rope(cache, k_in, half_view(out1), pos);
    for (std::size_t i = 0; i < out.size(); ++i) ASSERT_EQ(static_cast<float>(out[i]), static_cast<float>(out1[i])) << i;

    // The first run of this step against the formula: q after qk.run and q_plan.run is rotated twice.
    Qkv once = in;
    auto ref_qk = posenc::bind_apply_rope_qk(cache, once.q(), once.k());
    ref_qk.run(pos);
    for (index_t n = 0; n < N; ++n)
      for (const index_t h : {index_t{0}, Hq - 1}) {
        const std::vector<ld> ref = rope_row(&in.buf[static_cast<std::size_t>(n * L * in.row() + h * D)], D, D, lens[t][n], 10000.0, false);
        for (index_t e = 0; e < D; ++e)
          EXPECT_NEAR(once.q()(n, 0, h, e), static_cast<double>(ref[static_cast<std::size_t>(e)]), 4e-6) << n << " " << h;
      }
  }
}

TEST_P(Binding, RopeRejectsWhatTheCallRejects) {
  const index_t N = 2, L = 1, D = 8;
  Qkv x(N, L, 2, 1, D, 4);
  const Qkv before = x;
  posenc::rope_config cfg;
  cfg.head_dim = 2 * D;
  const posenc::rope_cache<float> wide(posenc::make_rope_plan(cfg), 16);
  cfg.head_dim = D;
  const posenc::rope_cache<float> cache(posenc::make_rope_plan(cfg), 16);

  const auto bad = posenc::try_bind_apply_rope(wide, x.q());
  EXPECT_FALSE(bad.ok());
  const posenc::status direct = posenc::try_apply_rope(wide, x.q(), posenc::positions::offset(0));
  EXPECT_EQ(bad.bind_status().message(), direct.message());
  EXPECT_EQ(bad.try_run(posenc::positions::offset(0)).message(), direct.message());
  const auto same = posenc::try_bind_apply_rope_qk(cache, x.q(), x.q());
  EXPECT_EQ(same.bind_status().message(),
            posenc::try_apply_rope_qk(cache, x.q(), x.q(), posenc::positions::offset(0)).message());
  EXPECT_THROW(static_cast<void>(posenc::bind_apply_rope_qk(cache, x.q(), x.q())), posenc::argument_error);
  decltype(bad) empty;
  EXPECT_EQ(empty.try_run(posenc::positions::offset(0)).message(),
            "posenc::apply_rope: the binding is empty (make it with try_bind_apply_rope)");

  const auto step = posenc::bind_apply_rope_qk(cache, x.q(), x.k());
  const std::int64_t late[2] = {3, 16}, three[3] = {0, 1, 2};
  EXPECT_EQ(step.try_run(posenc::positions::per_sequence(late, N)).message(),
            "posenc::apply_rope_qk: position 16 is past the cache of 16 positions");
  EXPECT_EQ(step.try_run(posenc::positions::per_sequence(three, 3)).message(),
            "posenc::apply_rope_qk: positions per_sequence count=3 does not match batch N=2");
  EXPECT_EQ(step.try_run(posenc::positions::offset(-2)).message(),
            "posenc::apply_rope_qk: positions offset=-2 must be >= 0");
  ASSERT_EQ(x.buf, before.buf);
  EXPECT_THROW(step.run(posenc::positions::offset(16)), posenc::argument_error);
  ASSERT_EQ(x.buf, before.buf);
}

INSTANTIATE_TEST_SUITE_P(Isa, Binding, ::testing::ValuesIn(all_isas()), isa_only_name);

}  // namespace
