// Thread ranges: every apply function done in pieces (token ranges, head ranges, query ranges), each piece a
// sub-view with the matching slice of its positions and run concurrently on its own thread, equals the whole
// call bit for bit; once per ISA. And the slicing API's own checks.
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <posenc/posenc.hpp>

#include "test_util.hpp"

namespace {

using posenc::index_t;
using namespace posenc_test;

template <class T>
bool same_bytes(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

/// Runs fn(0 .. parts-1) on `parts` threads at once.
void in_parallel(int parts, const std::function<void(int)>& fn) {
  std::vector<std::thread> ts;
  for (int p = 0; p < parts; ++p) ts.emplace_back(fn, p);
  for (auto& t : ts) t.join();
}

/// [begin, end) of piece p of `parts` over n items (uneven pieces, some empty when parts > n).
std::array<index_t, 2> piece(index_t n, int p, int parts) { return {n * p / parts, n * (p + 1) / parts}; }

class ThreadRanges : public IsaOnlyTest {};

TEST_P(ThreadRanges, RopePlanCacheAndQkEveryPositionForm) {
  const index_t N = 3, L = 37, HQ = 6, HK = 2, D = 72;
  const index_t row = (HQ + 2 * HK) * D;
  posenc::rope_config cfg;
  cfg.head_dim = D;
  cfg.rotary_dim = 64;
  cfg.style = posenc::rope_style::interleaved;
  const auto plan = posenc::make_rope_plan(cfg);
  const posenc::rope_cache<float> cache(plan, 4096);
  const std::int64_t seq[N] = {5, 900, 12};
  std::vector<std::int32_t> ids(static_cast<std::size_t>(N * (L + 3)));
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<std::int32_t>((i * 7919) % 4000);
  const posenc::positions forms[] = {posenc::positions::offset(100), posenc::positions::per_sequence(seq, N),
                                     posenc::positions::per_token(ids.data(), N, L, L + 3)};
  const auto x0 = random_values<float>(static_cast<std::size_t>(N * L * row), 5);
  for (const auto& pos : forms)
    for (int use_cache = 0; use_cache < 2; ++use_cache) {
      auto whole = x0, parts = x0;
      auto views = [&](std::vector<float>& b) {
        return std::make_pair(posenc::strided_view<float, 4>(b.data(), {N, L, HQ, D}, {L * row, row, D, 1}),
                              posenc::strided_view<float, 4>(b.data() + HQ * D, {N, L, HK, D}, {L * row, row, D, 1}));
      };
      const auto [qw, kw] = views(whole);
      if (use_cache) posenc::apply_rope_qk(cache, qw, kw, pos);
      else posenc::apply_rope_qk(plan, qw, kw, pos);
      const auto qk = views(parts);
      const auto& q = qk.first;
      const auto& k = qk.second;
      // Tokens split across 4 threads (sequence n0 .. n1 for the first and last sequence ranges too).
      in_parallel(4, [&](int p) {
        const auto [l0, l1] = piece(L, p, 4);
        const auto [n0, n1] = p == 3 ? std::array<index_t, 2>{1, N} : std::array<index_t, 2>{0, N};
        const auto qs = q.slice(0, n0, n1 - n0).slice(1, l0, l1 - l0);
        const auto ks = k.slice(0, n0, n1 - n0).slice(1, l0, l1 - l0);
        const auto ps = pos.slice(n0, n1 - n0, l0, l1 - l0);
        if (use_cache) posenc::apply_rope_qk(cache, qs, ks, ps);
        else posenc::apply_rope_qk(plan, qs, ks, ps);
        if (p == 3) {  // the first sequence's share of these tokens, on this thread
          const auto q0 = q.slice(0, 0, 1).slice(1, l0, l1 - l0), k0 = k.slice(0, 0, 1).slice(1, l0, l1 - l0);
          if (use_cache) posenc::apply_rope_qk(cache, q0, k0, pos.slice(0, 1, l0, l1 - l0));
          else posenc::apply_rope_qk(plan, q0, k0, pos.slice(0, 1, l0, l1 - l0));
        }
      });
      EXPECT_TRUE(same_bytes(whole, parts)) << "form " << static_cast<int>(pos.kind()) << " cache " << use_cache;
      // Heads split: each thread its q heads, one thread the k heads.
      auto heads = x0;
      const auto qkh = views(heads);
      const auto& qh = qkh.first;
      const auto& kh = qkh.second;
      in_parallel(3, [&](int p) {
        if (p == 2) {
          if (use_cache) posenc::apply_rope(cache, kh, pos);
          else posenc::apply_rope(plan, kh, pos);
          return;
        }
        const auto [h0, h1] = piece(HQ, p, 2);
        if (use_cache) posenc::apply_rope(cache, qh.slice(2, h0, h1 - h0), pos);
        else posenc::apply_rope(plan, qh.slice(2, h0, h1 - h0), pos);
      });
      EXPECT_TRUE(same_bytes(whole, heads)) << "heads, form " << static_cast<int>(pos.kind());
    }
}

TEST_P(ThreadRanges, XposMropeShiftAndRerotate) {
  const index_t N = 2, L = 29, H = 3, D = 40;
  const auto x0 = random_values<float>(static_cast<std::size_t>(N * L * H * D), 6);
  const auto view = [&](std::vector<float>& b) { return posenc::strided_view<float, 4>(b.data(), {N, L, H, D}); };
  const auto check = [&](const char* what, const std::function<void(posenc::strided_view<float, 4>, index_t, index_t)>& run) {
    auto whole = x0, parts = x0;
    run(view(whole), 0, L);
    const auto v = view(parts);
    in_parallel(3, [&](int p) {
      const auto [l0, l1] = piece(L, p, 3);
      run(v.slice(1, l0, l1 - l0), l0, l1 - l0);
    });
    EXPECT_TRUE(same_bytes(whole, parts)) << what;
  };
  posenc::xpos_config xc;
  xc.head_dim = D;
  const posenc::xpos_plan xp(xc);
  const auto off = posenc::positions::offset(300);
  check("xpos", [&](auto x, index_t l0, index_t cnt) {
    posenc::apply_xpos(xp, x, off.slice(0, N, l0, cnt), 310, posenc::xpos_mode::downscale);
  });
  posenc::rope_config rc;
  rc.head_dim = D;
  const auto plan = posenc::make_rope_plan(rc);
  const posenc::mrope_plan mp(plan, {4, 8, 8}, posenc::mrope_layout::interleaved);
  std::vector<std::int64_t> thw(static_cast<std::size_t>(N * 3 * L));
  for (std::size_t i = 0; i < thw.size(); ++i) thw[i] = static_cast<std::int64_t>((i * 31) % 997);
  const auto mpos = posenc::mrope_positions::per_token(thw.data(), N, L);
  check("mrope per token", [&](auto x, index_t l0, index_t cnt) { posenc::apply_mrope(mp, x, mpos.slice(0, N, l0, cnt)); });
  const auto shared = posenc::mrope_positions::shared(thw.data(), L);
  check("mrope shared", [&](auto x, index_t l0, index_t cnt) { posenc::apply_mrope(mp, x, shared.slice(0, N, l0, cnt)); });
  std::vector<std::int64_t> deltas(static_cast<std::size_t>(N * L));
  for (std::size_t i = 0; i < deltas.size(); ++i) deltas[i] = static_cast<std::int64_t>(i % 50) - 25;
  check("shift per token", [&](auto x, index_t l0, index_t cnt) { posenc::shift_rope(plan, x, deltas.data() + l0, N, cnt, L); });
  check("shift uniform", [&](auto x, index_t, index_t) { posenc::shift_rope(plan, x, -7); });
  posenc::rope_config rc2 = rc;
  rc2.scaling = posenc::rope_scaling::linear(2.0);
  const auto plan2 = posenc::make_rope_plan(rc2);
  const std::int64_t seq[N] = {0, 44};
  const auto ps = posenc::positions::per_sequence(seq, N);
  check("rerotate", [&](auto x, index_t l0, index_t cnt) { posenc::rerotate_rope(plan, plan2, x, ps.slice(0, N, l0, cnt)); });
  check("layout", [&](auto x, index_t, index_t) {
    // Out of place into a buffer of its own, then back: the conversion itself is per row.
    std::vector<float> tmp(static_cast<std::size_t>(x.extent(0) * x.extent(1) * H * D));
    posenc::strided_view<float, 4> t(tmp.data(), {x.extent(0), x.extent(1), H, D});
    posenc::convert_rope_layout(posenc::strided_view<const float, 4>(x), t, D, 0, posenc::rope_style::half_split,
                                posenc::rope_style::interleaved);
    for (index_t n = 0; n < x.extent(0); ++n)
      for (index_t l = 0; l < x.extent(1); ++l)
        for (index_t h = 0; h < H; ++h)
          for (index_t d = 0; d < D; ++d) x(n, l, h, d) = t(n, l, h, d);
  });
}

TEST_P(ThreadRanges, AlibiSinusoidalLearnedAndT5) {
  // ALiBi: queries split by threads, heads split by tensor-parallel configs of the same global heads.
  const index_t N = 2, H = 6, LQ = 9, LK = 40;
  const auto s0 = random_values<float>(static_cast<std::size_t>(N * H * LQ * LK), 7);
  posenc::alibi_config cfg;
  cfg.num_heads = H;
  const std::int64_t past[N] = {31, 5};
  const auto qpos = posenc::positions::per_sequence(past, N);
  auto whole = s0, parts = s0;
  posenc::strided_view<float, 4> sw(whole.data(), {N, H, LQ, LK}), sp(parts.data(), {N, H, LQ, LK});
  posenc::add_alibi_bias(cfg, sw, qpos, posenc::alibi_mask::causal);
  in_parallel(4, [&](int p) {
    const auto [i0, i1] = piece(LQ, p % 2, 2);
    const auto [h0, h1] = piece(H, p / 2, 2);
    posenc::alibi_config c = cfg;
    c.head_begin = h0;
    c.head_end = h1;
    posenc::add_alibi_bias(c, sp.slice(1, h0, h1 - h0).slice(2, i0, i1 - i0), qpos.slice(0, N, i0, i1 - i0),
                           posenc::alibi_mask::causal);
  });
  EXPECT_TRUE(same_bytes(whole, parts)) << "alibi";

  // Sinusoidal and learned: tokens split.
  const index_t L = 23, DM = 48;
  const auto x0 = random_values<float>(static_cast<std::size_t>(N * L * DM), 8);
  posenc::sinusoidal_config sc{DM, 10000.0, posenc::sinusoidal_layout::concat, 1};
  std::vector<std::int64_t> ids(static_cast<std::size_t>(N * L));
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<std::int64_t>(i % 7 == 0 ? 1 : 2 + (i * 13) % 500);
  const auto tpos = posenc::positions::per_token(ids.data(), N, L);
  posenc::learned_config lc;
  lc.max_positions = 600;
  lc.dim = DM;
  posenc::learned_position_embedding<float> emb(lc);
  emb.init_normal(3);
  for (int which = 0; which < 2; ++which) {
    auto a = x0, b = x0;
    posenc::strided_view<float, 3> va(a.data(), {N, L, DM}), vb(b.data(), {N, L, DM});
    if (which == 0) posenc::add_sinusoidal(sc, va, tpos);
    else emb.forward(va, tpos);
    in_parallel(3, [&](int p) {
      const auto [l0, l1] = piece(L, p, 3);
      if (which == 0) posenc::add_sinusoidal(sc, vb.slice(1, l0, l1 - l0), tpos.slice(0, N, l0, l1 - l0));
      else emb.forward(vb.slice(1, l0, l1 - l0), tpos.slice(0, N, l0, l1 - l0));
    });
    EXPECT_TRUE(same_bytes(a, b)) << (which == 0 ? "sinusoidal" : "learned");
  }

  // T5: query rows split (each piece at its own query offset).
  posenc::t5_relative_bias<float> rel(4, {false, 32, 128});
  rel.init_normal(9);
  std::vector<float> bw(static_cast<std::size_t>(4 * LQ * LK)), bp(bw.size());
  posenc::strided_view<float, 3> vw(bw.data(), {4, LQ, LK}), vp(bp.data(), {4, LQ, LK});
  rel.forward(vw, 20);
  in_parallel(3, [&](int p) {
    const auto [i0, i1] = piece(LQ, p, 3);
    rel.forward(vp.slice(1, i0, i1 - i0), 20 + i0);
  });
  EXPECT_TRUE(same_bytes(bw, bp)) << "t5";
}

INSTANTIATE_TEST_SUITE_P(Isa, ThreadRanges, ::testing::ValuesIn(all_isas()), isa_only_name);

// An engine's worker threads: each applies RoPE (one shared plan and one shared cache), xPos (a shared plan),
// ALiBi, the sinusoidal encoding and a shared learned table to buffers of its own, all released at once, so
// the first posenc calls of the process (the ISA choice) race too; every thread's result equals the same
// calls made afterwards on one thread, bit for bit. The ThreadSanitizer job of scripts/run_tests.sh runs this
// file (posenc_thread_tests) with -fsanitize=thread.
TEST(SharedObjects, ConcurrentCallsEqualSerialCalls) {
  const index_t N = 2, L = 17, H = 4, D = 64, LK = 33, DM = 48;
  posenc::rope_config rc;
  rc.head_dim = D;
  rc.scaling = posenc::rope_scaling::yarn(4.0, 1024);
  const auto plan = posenc::make_rope_plan(rc);
  const posenc::rope_cache<float> cache(plan, 4096);
  posenc::xpos_config xc;
  xc.head_dim = D;
  const posenc::xpos_plan xp(xc);
  posenc::alibi_config ac;
  ac.num_heads = H;
  const posenc::sinusoidal_config sc{DM, 10000.0, posenc::sinusoidal_layout::interleaved, std::nullopt};
  posenc::learned_config lc;
  lc.max_positions = 4096;
  lc.dim = DM;
  posenc::learned_position_embedding<float> emb(lc);
  emb.init_normal(5);

  struct work {
    std::vector<float> q, k, x, scores, h, e;
  };
  const auto run = [&](work& w, int t) {
    const auto pos = posenc::positions::offset(100 * t);
    posenc::apply_rope(cache, posenc::strided_view<float, 4>(w.q.data(), {N, L, H, D}), pos);
    posenc::apply_rope(plan, posenc::strided_view<float, 4>(w.k.data(), {N, L, H, D}), pos);
    posenc::apply_xpos(xp, posenc::strided_view<float, 4>(w.x.data(), {N, L, H, D}), pos, 100 * t, posenc::xpos_mode::upscale);
    posenc::add_alibi_bias(ac, posenc::strided_view<float, 4>(w.scores.data(), {N, H, L, LK}), posenc::positions::offset(LK - L),
                           posenc::alibi_mask::causal);
    posenc::add_sinusoidal(sc, posenc::strided_view<float, 3>(w.h.data(), {N, L, DM}), pos);
    emb.forward(posenc::strided_view<float, 3>(w.e.data(), {N, L, DM}), pos);
  };
  const auto fresh = [&](int t) {
    const auto seed = static_cast<unsigned>(t);
    return work{random_values<float>(static_cast<std::size_t>(N * L * H * D), 10 + seed),
                random_values<float>(static_cast<std::size_t>(N * L * H * D), 20 + seed),
                random_values<float>(static_cast<std::size_t>(N * L * H * D), 30 + seed),
                random_values<float>(static_cast<std::size_t>(N * H * L * LK), 40 + seed),
                random_values<float>(static_cast<std::size_t>(N * L * DM), 50 + seed),
                random_values<float>(static_cast<std::size_t>(N * L * DM), 60 + seed)};
  };
  constexpr int threads = 4, rounds = 3;
  std::vector<work> concurrent;
  for (int t = 0; t < threads; ++t) concurrent.push_back(fresh(t));
  std::atomic<int> ready{0};
  in_parallel(threads, [&](int t) {
    ready.fetch_add(1);
    while (ready.load() < threads) std::this_thread::yield();  // all start together
    for (int r = 0; r < rounds; ++r) run(concurrent[static_cast<std::size_t>(t)], t);
  });
  for (int t = 0; t < threads; ++t) {
    work serial = fresh(t);
    for (int r = 0; r < rounds; ++r) run(serial, t);
    const work& c = concurrent[static_cast<std::size_t>(t)];
    EXPECT_TRUE(same_bytes(c.q, serial.q) && same_bytes(c.k, serial.k) && same_bytes(c.x, serial.x) &&
                same_bytes(c.scores, serial.scores) && same_bytes(c.h, serial.h) && same_bytes(c.e, serial.e))
        << "thread " << t;
  }
}

TEST(Slicing, RangesAreChecked) {
  std::vector<float> b(2 * 3 * 4);
  posenc::strided_view<float, 3> v(b.data(), {2, 3, 4});
  EXPECT_EQ(v.slice(1, 1, 2).extent(1), 2);
  EXPECT_EQ(v.slice(1, 1, 2).data(), b.data() + 4);
  EXPECT_EQ(v.slice(2, 4, 0).extent(2), 0);
  EXPECT_THROW(v.slice(1, 2, 2), posenc::argument_error);
  EXPECT_THROW(v.slice(1, -1, 1), posenc::argument_error);
  EXPECT_THROW(v.slice(3, 0, 1), posenc::argument_error);
  const std::int64_t seq[2] = {4, 9};
  const auto ps = posenc::positions::per_sequence(seq, 2);
  EXPECT_EQ(ps.slice(1, 1, 3, 2).at(0, 1), 9 + 3 + 1);
  EXPECT_THROW(ps.slice(1, 2, 0, 1), posenc::argument_error);
  const std::int64_t ids[6] = {1, 2, 3, 4, 5, 6};
  const auto pt = posenc::positions::per_token(ids, 2, 3);
  EXPECT_EQ(pt.slice(1, 1, 1, 2).at(0, 1), 6);
  EXPECT_THROW(pt.slice(0, 1, 2, 2), posenc::argument_error);
  EXPECT_EQ(posenc::positions::offset(10).slice(5, 3, 4, 2).at(7, 1), 15);
  EXPECT_THROW(posenc::positions::offset(INT64_MAX).slice(0, 1, 1, 1), posenc::argument_error);
  const std::int64_t thw[2 * 3 * 2] = {1, 2, 10, 20, 100, 200, 3, 4, 30, 40, 300, 400};
  const auto mp = posenc::mrope_positions::per_token(thw, 2, 2).slice(1, 1, 1, 1);
  EXPECT_EQ(mp.at(0, 0), (std::array<index_t, 3>{4, 40, 400}));
  EXPECT_THROW(posenc::mrope_positions::shared(thw, 2).slice(0, 1, 1, 2), posenc::argument_error);
  // A sliced per-sequence offset that would overflow with the tokens is rejected by the call.
  const std::int64_t big[1] = {INT64_MAX - 3};
  std::vector<float> x(4);
  posenc::rope_config c;
  c.head_dim = 2;
  EXPECT_THROW(posenc::apply_rope(posenc::make_rope_plan(c), posenc::strided_view<float, 4>(x.data(), {1, 2, 1, 2}),
                                  posenc::positions::per_sequence(big, 1).slice(0, 1, 3, 2)),
               posenc::argument_error);
}

}  // namespace
