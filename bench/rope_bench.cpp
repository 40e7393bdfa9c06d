// RoPE throughput and latency against the paired memory baseline (baseline.hpp): the table path (rope_cache)
// and the cache-free path (rope_plan, cos/sin formed per position by the vector sincos), both pair styles,
// every storage type, mixed storage (float K into a half cache), the fused q+k decode step with GQA, MRoPE,
// the context shift, one and two threads at 4096 tokens, and the naive Eigen peer.
// Shapes (N, L, H, D): [1, 4096, 32, 128] (64 MiB in float: past every cache) and one token [1, 1, 32, 128].
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>
#include <posenc/posenc.hpp>

#include "baseline.hpp"

namespace posenc_bench {
std::string isa_suffix() {
  std::string s = std::string("/") + posenc::isa_name(posenc::active_isa());
#if defined(POSENC_STATIC_DISPATCH)
  s += "/static";
#endif
  return s;
}
}  // namespace posenc_bench

namespace {

using posenc::index_t;

posenc::rope_plan bench_plan(posenc::rope_style style, index_t d = 128) {
  posenc::rope_config cfg;
  cfg.head_dim = d;
  cfg.base = 500000.0;
  cfg.style = style;
  return posenc::make_rope_plan(cfg);
}

const auto kPos = posenc::positions::offset(4096);  // positions past a 4096-token prompt

/// In place on [N, L, H, D] of T, from the cache or the plan.
template <class T, posenc::rope_style Style, bool Cache>
void BM_Rope(benchmark::State& state) {
  const index_t n = state.range(0), l = state.range(1), h = state.range(2), d = state.range(3);
  const auto plan = bench_plan(Style, d);
  const posenc::rope_cache<std::conditional_t<std::is_same_v<T, double>, double, float>> cache(plan, l + 4096);
  auto x = posenc_bench::random_values<T>(static_cast<std::size_t>(n * l * h * d));
  posenc::strided_view<T, 4> v(x.data(), {n, l, h, d});
  posenc_bench::run_paired(state, x.size() * sizeof(T), [&] {
    if constexpr (Cache) posenc::apply_rope(cache, v, kPos);
    else posenc::apply_rope(plan, v, kPos);
    benchmark::DoNotOptimize(x.data());
  });
}

/// Out of place from float into T (K rotated straight into a T KV cache): reads 4 bytes, writes sizeof(T).
template <class T>
void BM_RopeIntoCache(benchmark::State& state) {
  const index_t n = state.range(0), l = state.range(1), h = state.range(2), d = state.range(3);
  const auto plan = bench_plan(posenc::rope_style::half_split, d);
  const posenc::rope_cache<float> cache(plan, l + 4096);
  const auto in = posenc_bench::random_values<float>(static_cast<std::size_t>(n * l * h * d));
  std::vector<T> out(in.size());
  posenc::strided_view<const float, 4> vi(in.data(), {n, l, h, d});
  posenc::strided_view<T, 4> vo(out.data(), {n, l, h, d});
  posenc_bench::run_paired(state, in.size() * (sizeof(float) + sizeof(T)) / 2, [&] {
    posenc::apply_rope(cache, vi, vo, kPos);
    benchmark::DoNotOptimize(out.data());
  });
}

/// One decode step of a fused QKV buffer [1, 1, (32 + 2*8) * 128]: q (32 heads) and k (8) rotated together.
template <bool Cache>
void BM_RopeDecodeFusedQk(benchmark::State& state) {
  const index_t hq = 32, hk = 8, d = 128, row = (hq + 2 * hk) * d;
  const auto plan = bench_plan(posenc::rope_style::half_split);
  const posenc::rope_cache<float> cache(plan, 8192);
  auto qkv = posenc_bench::random_values<float>(static_cast<std::size_t>(row));
  posenc::strided_view<float, 4> q(qkv.data(), {1, 1, hq, d}, {row, row, d, 1});
  posenc::strided_view<float, 4> k(qkv.data() + hq * d, {1, 1, hk, d}, {row, row, d, 1});
  posenc_bench::run_paired(state, static_cast<std::size_t>((hq + hk) * d) * sizeof(float), [&] {
    if constexpr (Cache) posenc::apply_rope_qk(cache, q, k, kPos);
    else posenc::apply_rope_qk(plan, q, k, kPos);
    benchmark::DoNotOptimize(qkv.data());
  });
}

/// MRoPE (Qwen2-VL sections) and the context shift, cache-free, on [1, 4096, 32, 128] float.
void BM_Mrope(benchmark::State& state) {
  const index_t l = state.range(1), h = state.range(2), d = state.range(3);
  const posenc::mrope_plan mp(bench_plan(posenc::rope_style::half_split, d), {16, 24, 24}, posenc::mrope_layout::chunked);
  std::vector<std::int64_t> thw(static_cast<std::size_t>(3 * l));
  for (std::size_t i = 0; i < thw.size(); ++i) thw[i] = static_cast<std::int64_t>(i % static_cast<std::size_t>(l));
  auto x = posenc_bench::random_values<float>(static_cast<std::size_t>(l * h * d));
  posenc::strided_view<float, 4> v(x.data(), {1, l, h, d});
  posenc_bench::run_paired(state, x.size() * sizeof(float), [&] {
    posenc::apply_mrope(mp, v, posenc::mrope_positions::shared(thw.data(), l));
    benchmark::DoNotOptimize(x.data());
  });
}

void BM_ShiftRope(benchmark::State& state) {
  const index_t l = state.range(1), h = state.range(2), d = state.range(3);
  const auto plan = bench_plan(posenc::rope_style::half_split, d);
  auto x = posenc_bench::random_values<float>(static_cast<std::size_t>(l * h * d));
  posenc::strided_view<float, 4> v(x.data(), {1, l, h, d});
  posenc_bench::run_paired(state, x.size() * sizeof(float), [&] {
    posenc::shift_rope(plan, v, -256);
    benchmark::DoNotOptimize(x.data());
  });
}

/// The table path on `threads` threads, each its share of the tokens (sub-views and position slices), as an
/// engine's pool would split it. Threads are started per call (about 20 us, under 1% of a 4096-token call).
void BM_RopeThreads(benchmark::State& state) {
  const index_t l = state.range(1), h = state.range(2), d = state.range(3);
  const int threads = static_cast<int>(state.range(4));
  const auto plan = bench_plan(posenc::rope_style::half_split, d);
  const posenc::rope_cache<float> cache(plan, l + 4096);
  auto x = posenc_bench::random_values<float>(static_cast<std::size_t>(l * h * d));
  posenc::strided_view<float, 4> v(x.data(), {1, l, h, d});
  posenc_bench::run_paired(state, x.size() * sizeof(float), [&] {
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t)
      pool.emplace_back([&, t] {
        const index_t l0 = l * t / threads, l1 = l * (t + 1) / threads;
        posenc::apply_rope(cache, v.slice(1, l0, l1 - l0), kPos.slice(0, 1, l0, l1 - l0));
      });
    posenc::apply_rope(cache, v.slice(1, 0, l / threads), kPos.slice(0, 1, 0, l / threads));
    for (auto& t : pool) t.join();
    benchmark::DoNotOptimize(x.data());
  });
}

// Peer: the Hugging Face formula as a naive Eigen Tensor expression, x*cos + rotate_half(x)*sin, over a
// precomputed [L, D] cos/sin table (what a straightforward port of modeling_llama.py would write).
void BM_RopeNaiveEigen(benchmark::State& state) {
  const Eigen::Index n = state.range(0), l = state.range(1), h = state.range(2), d = state.range(3);
  using T4 = Eigen::Tensor<float, 4, Eigen::RowMajor>;
  T4 x(n, l, h, d), out(n, l, h, d);
  x.setRandom();
  Eigen::Tensor<float, 2, Eigen::RowMajor> cos(l, d), sin(l, d);
  for (Eigen::Index p = 0; p < l; ++p)
    for (Eigen::Index i = 0; i < d; ++i) {
      const double theta = static_cast<double>(p + 4096) * std::pow(500000.0, -2.0 * static_cast<double>(i % (d / 2)) / static_cast<double>(d));
      cos(p, i) = static_cast<float>(std::cos(theta));
      sin(p, i) = static_cast<float>(std::sin(theta));
    }
  const Eigen::DSizes<Eigen::Index, 4> half(n, l, h, d / 2);
  const Eigen::DSizes<Eigen::Index, 4> lo(0, 0, 0, 0), hi(0, 0, 0, d / 2);
  const Eigen::array<Eigen::Index, 4> table_shape{1, l, 1, d}, bcast{n, 1, h, 1};
  posenc_bench::run_paired(state, static_cast<std::size_t>(x.size()) * sizeof(float), [&] {
    out = x * cos.reshape(table_shape).broadcast(bcast) +
          (-x.slice(hi, half)).concatenate(x.slice(lo, half), 3) * sin.reshape(table_shape).broadcast(bcast);
    benchmark::DoNotOptimize(out.data());
  });
}

/// K rotated and V copied from a fused float QKV buffer [N, L, (32 + 2*8) * 128] into a paged cache of T
/// [blocks, 16, 8, 128] through a slot mapping (blocks handed out in reverse), one rope_append_kv call:
/// reads k and v (float), writes them once (T). Unfused: apply_rope into a T scratch, then both copied by slot.
template <class T, bool Fused>
void BM_RopeAppendKvPaged(benchmark::State& state) {
  const index_t n = state.range(0), l = state.range(1), hq = 32, hk = 8, d = 128, row = (hq + 2 * hk) * d, bs = 16;
  const index_t blocks = (n * l + bs - 1) / bs;
  const auto plan = bench_plan(posenc::rope_style::half_split, d);
  const posenc::rope_cache<float> cache(plan, l + 4096);
  const auto qkv = posenc_bench::random_values<float>(static_cast<std::size_t>(n * l * row));
  std::vector<T> kc(static_cast<std::size_t>(blocks * bs * hk * d)), vc(kc.size()), tmp(static_cast<std::size_t>(n * l * hk * d));
  std::vector<std::int64_t> slots(static_cast<std::size_t>(n * l));
  for (index_t t = 0; t < n * l; ++t) slots[static_cast<std::size_t>(t)] = (blocks - 1 - t / bs) * bs + t % bs;
  const posenc::strided_view<const float, 4> k(qkv.data() + hq * d, {n, l, hk, d}, {l * row, row, d, 1});
  const posenc::strided_view<const float, 4> v(qkv.data() + (hq + hk) * d, {n, l, hk, d}, {l * row, row, d, 1});
  const posenc::strided_view<T, 4> kcv(kc.data(), {blocks, bs, hk, d}), vcv(vc.data(), {blocks, bs, hk, d});
  const auto slot_map = posenc::kv_slots::paged(slots.data(), n, l);
  const std::size_t elems = static_cast<std::size_t>(2 * n * l * hk * d);
  posenc_bench::run_paired(state, elems * (sizeof(float) + sizeof(T)) / 2, [&] {
    if constexpr (Fused) {
      posenc::rope_append_kv(cache, k, v, kcv, vcv, kPos, slot_map);
    } else {
      posenc::apply_rope(cache, k, posenc::strided_view<T, 4>(tmp.data(), {n, l, hk, d}), kPos);
      for (index_t t = 0; t < n * l; ++t) {
        const index_t s = slots[static_cast<std::size_t>(t)];
        std::copy_n(tmp.data() + t * hk * d, hk * d, kc.data() + s * hk * d);
        for (index_t e = 0; e < hk * d; ++e)
          vc[static_cast<std::size_t>(s * hk * d + e)] = T(v(t / l, t % l, e / d, e % d));
      }
    }
    benchmark::DoNotOptimize(kc.data());
    benchmark::DoNotOptimize(vc.data());
  });
}

/// The same append into an int8 cache with dynamic per-token-per-head scales (rope_append_kv_quantized).
void BM_RopeAppendKvPagedInt8(benchmark::State& state) {
  const index_t n = state.range(0), l = state.range(1), hq = 32, hk = 8, d = 128, row = (hq + 2 * hk) * d, bs = 16;
  const index_t blocks = (n * l + bs - 1) / bs;
  const auto plan = bench_plan(posenc::rope_style::half_split, d);
  const posenc::rope_cache<float> cache(plan, l + 4096);
  const auto qkv = posenc_bench::random_values<float>(static_cast<std::size_t>(n * l * row));
  std::vector<std::int8_t> kc(static_cast<std::size_t>(blocks * bs * hk * d)), vc(kc.size());
  std::vector<float> ks(static_cast<std::size_t>(blocks * bs * hk)), vs(ks.size());
  std::vector<std::int64_t> slots(static_cast<std::size_t>(n * l));
  for (index_t t = 0; t < n * l; ++t) slots[static_cast<std::size_t>(t)] = (blocks - 1 - t / bs) * bs + t % bs;
  const posenc::strided_view<const float, 4> k(qkv.data() + hq * d, {n, l, hk, d}, {l * row, row, d, 1});
  const posenc::strided_view<const float, 4> v(qkv.data() + (hq + hk) * d, {n, l, hk, d}, {l * row, row, d, 1});
  const std::size_t elems = static_cast<std::size_t>(2 * n * l * hk * d);
  posenc_bench::run_paired(state, elems * (sizeof(float) + 1) / 2, [&] {
    posenc::rope_append_kv_quantized(cache, k, v, posenc::strided_view<std::int8_t, 4>(kc.data(), {blocks, bs, hk, d}),
                                     posenc::strided_view<std::int8_t, 4>(vc.data(), {blocks, bs, hk, d}), kPos,
                                     posenc::kv_slots::paged(slots.data(), n, l), posenc::quant_spec{}, posenc::quant_spec{},
                                     posenc::strided_view<float, 3>(ks.data(), {blocks, bs, hk}),
                                     posenc::strided_view<float, 3>(vs.data(), {blocks, bs, hk}));
    benchmark::DoNotOptimize(kc.data());
  });
}

void append_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"N", "L"})->Args({1, 4096})->Args({64, 1})->UseManualTime();
}

void prefill(benchmark::internal::Benchmark* b) {
  b->ArgNames({"N", "L", "H", "D"})->Args({1, 4096, 32, 128})->UseManualTime();
}
void both(benchmark::internal::Benchmark* b) {
  b->ArgNames({"N", "L", "H", "D"})->Args({1, 4096, 32, 128})->Args({1, 1, 32, 128})->UseManualTime();
}

using posenc::rope_style;
const std::string S = posenc_bench::isa_suffix();
// fp32, both styles, table and cache-free, 4096 tokens and one token.
BENCHMARK(BM_Rope<float, rope_style::half_split, true>)->Name("BM_RopeHalfSplitCache" + S)->Apply(both);
BENCHMARK(BM_Rope<float, rope_style::half_split, false>)->Name("BM_RopeHalfSplitPlan" + S)->Apply(both);
BENCHMARK(BM_Rope<float, rope_style::interleaved, true>)->Name("BM_RopeInterleavedCache" + S)->Apply(both);
BENCHMARK(BM_Rope<float, rope_style::interleaved, false>)->Name("BM_RopeInterleavedPlan" + S)->Apply(both);
// Other storage types (table path; double uses a double table).
BENCHMARK(BM_Rope<Eigen::half, rope_style::half_split, true>)->Name("BM_RopeHalfSplitCacheHalf" + S)->Apply(prefill);
BENCHMARK(BM_Rope<Eigen::bfloat16, rope_style::half_split, true>)->Name("BM_RopeHalfSplitCacheBf16" + S)->Apply(prefill);
BENCHMARK(BM_Rope<double, rope_style::half_split, true>)->Name("BM_RopeHalfSplitCacheDouble" + S)->Apply(prefill);
BENCHMARK(BM_Rope<Eigen::half, rope_style::interleaved, true>)->Name("BM_RopeInterleavedCacheHalf" + S)->Apply(prefill);
// K rotated into a half / bfloat16 KV cache (8 KV heads).
BENCHMARK(BM_RopeIntoCache<Eigen::half>)->Name("BM_RopeFloatIntoHalfCache" + S)->ArgNames({"N", "L", "H", "D"})
    ->Args({1, 4096, 8, 128})->UseManualTime();
BENCHMARK(BM_RopeIntoCache<Eigen::bfloat16>)->Name("BM_RopeFloatIntoBf16Cache" + S)->ArgNames({"N", "L", "H", "D"})
    ->Args({1, 4096, 8, 128})->UseManualTime();
// Decode: one token, 32 q + 8 kv heads of a fused QKV buffer.
BENCHMARK(BM_RopeDecodeFusedQk<true>)->Name("BM_RopeDecodeFusedQkCache" + S)->UseManualTime();
BENCHMARK(BM_RopeDecodeFusedQk<false>)->Name("BM_RopeDecodeFusedQkPlan" + S)->UseManualTime();
// Fused RoPE + paged KV-cache append (prefill of 4096 tokens; a decode step of 64 sequences), and unfused.
BENCHMARK(BM_RopeAppendKvPaged<Eigen::half, true>)->Name("BM_RopeAppendKvPagedHalf" + S)->Apply(append_shapes);
BENCHMARK(BM_RopeAppendKvPaged<Eigen::half, false>)->Name("BM_RopeAppendKvPagedHalfUnfused" + S)->Apply(append_shapes);
BENCHMARK(BM_RopeAppendKvPaged<float, true>)->Name("BM_RopeAppendKvPagedFloat" + S)->Apply(append_shapes);
BENCHMARK(BM_RopeAppendKvPagedInt8)->Name("BM_RopeAppendKvPagedInt8" + S)->Apply(append_shapes);
BENCHMARK(BM_Mrope)->Name("BM_MropeChunked" + S)->Apply(prefill);
BENCHMARK(BM_ShiftRope)->Name("BM_ShiftRope" + S)->Apply(prefill);
BENCHMARK(BM_RopeThreads)->Name("BM_RopeHalfSplitCacheThreads" + S)->ArgNames({"N", "L", "H", "D", "threads"})
    ->Args({1, 4096, 32, 128, 1})->Args({1, 4096, 32, 128, 2})->UseManualTime();
BENCHMARK(BM_RopeNaiveEigen)->Name("BM_RopeNaiveEigenPeer")->Apply(prefill);

}  // namespace
