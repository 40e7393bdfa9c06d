// RoPE throughput and latency against the paired memory baseline and the plain loop (baseline.hpp, plain.hpp):
// the table path (rope_cache) and the cache-free path (rope_plan, cos/sin formed per position by the vector
// sincos), both pair styles, every storage type, mixed storage (float K into a half cache), the fused q+k
// decode step with GQA, the fused KV-cache appends (fp16, bf16, fp32, int8, fp8), MRoPE, the context shift,
// one and two threads at 4096 tokens, and the naive Eigen peer.
// Shapes (N, L, H, D): [1, L, 32, 128] for L in {1, 16, 64, 65, 512, 4096} (4096 tokens are 64 MiB in float:
// past every cache; 512 sit in L3; 1 to 65 in L1/L2).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>
#include <posenc/posenc.hpp>

#include "baseline.hpp"
#include "plain.hpp"

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
constexpr index_t kP0 = 4096;

/// The plan's frequencies in float, for the plain loops that form cos/sin themselves.
std::vector<float> float_freq(const posenc::rope_plan& plan) {
  return std::vector<float>(plan.inv_freq().begin(), plan.inv_freq().end());
}

/// The plain loops' view of posenc's storage types (the same bits).
template <class T>
auto plain_ptr(T* p) {
  if constexpr (std::is_same_v<T, Eigen::half>) {
    return reinterpret_cast<posenc_bench::plain::f16*>(p);
  } else if constexpr (std::is_same_v<T, Eigen::bfloat16>) {
    return reinterpret_cast<posenc_bench::plain::bf16*>(p);
  } else {
    return p;
  }
}

/// In place on [N, L, H, D] of T, from the cache or the plan; Bound: from the cache, the view bound once
/// (bind_apply_rope, outside the timing), each call checking its positions only. Plain512: against the AVX-512
/// plain loop instead (fp32 half-split from the cache; rows *VsPlain512, registered on AVX-512 CPUs only).
/// Control: the plain loop in posenc's slot too (rows *PlainControl): what the rotation gives two identical
/// loops, the floor the posenc row of the same shape is read against.
template <class T, posenc::rope_style Style, bool Cache, bool Bound = false, bool Plain512 = false, bool Control = false>
void BM_Rope(benchmark::State& state) {
  const index_t n = state.range(0), l = state.range(1), h = state.range(2), d = state.range(3);
  const auto plan = bench_plan(Style, d);
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const posenc::rope_cache<C> cache(plan, l + kP0);
  const auto w = float_freq(plan);
  auto x = posenc_bench::random_values<T>(static_cast<std::size_t>(n * l * h * d));
  posenc::strided_view<T, 4> v(x.data(), {n, l, h, d});
  namespace plain = posenc_bench::plain;
  const auto step = posenc::bind_apply_rope(cache, v);
  const auto plain_loop = [&] {
    for (index_t s = 0; s < n; ++s) {
      auto* xs = plain_ptr(x.data() + s * l * h * d);
      if constexpr (Plain512) {
        plain::rope_half_split_avx512(xs, l, h, d, h * d, cache.cos_data(), cache.sin_data(), kP0);
      } else if constexpr (Cache) {
        if constexpr (Style == posenc::rope_style::half_split) plain::rope_half_split(xs, l, h, d, h * d, cache.cos_data(), cache.sin_data(), kP0);
        else plain::rope_interleaved(xs, l, h, d, h * d, cache.cos_data(), cache.sin_data(), kP0);
      } else {
        if constexpr (Style == posenc::rope_style::half_split) plain::rope_half_split_freq(xs, l, h, d, h * d, w.data(), kP0);
        else plain::rope_interleaved_freq(xs, l, h, d, h * d, w.data(), kP0);
      }
    }
    benchmark::DoNotOptimize(x.data());
  };
  posenc_bench::run_paired(
      state, x.size() * sizeof(T),
      [&] {
        if constexpr (Control) plain_loop();
        else if constexpr (Bound) step.run(kPos);
        else if constexpr (Cache) posenc::apply_rope(cache, v, kPos);
        else posenc::apply_rope(plan, v, kPos);
        benchmark::DoNotOptimize(x.data());
      },
      plain_loop);
}

/// Out of place from float into T (K rotated straight into a T KV cache): reads 4 bytes, writes sizeof(T).
template <class T>
void BM_RopeIntoCache(benchmark::State& state) {
  const index_t n = state.range(0), l = state.range(1), h = state.range(2), d = state.range(3);
  const auto plan = bench_plan(posenc::rope_style::half_split, d);
  const posenc::rope_cache<float> cache(plan, l + kP0);
  const auto in = posenc_bench::random_values<float>(static_cast<std::size_t>(n * l * h * d));
  posenc_bench::buffer<T> out(in.size());
  posenc::strided_view<const float, 4> vi(in.data(), {n, l, h, d});
  posenc::strided_view<T, 4> vo(out.data(), {n, l, h, d});
  posenc_bench::run_paired(
      state, in.size() * (sizeof(float) + sizeof(T)) / 2,
      [&] {
        posenc::apply_rope(cache, vi, vo, kPos);
        benchmark::DoNotOptimize(out.data());
      },
      [&] {
        for (index_t s = 0; s < n; ++s)
          posenc_bench::plain::rope_half_split(in.data() + s * l * h * d, plain_ptr(out.data() + s * l * h * d), l, h, d,
                                               cache.cos_data(), cache.sin_data(), kP0);
        benchmark::DoNotOptimize(out.data());
      });
}

/// One decode step of a fused QKV buffer [1, 1, (32 + 2*8) * 128]: q (32 heads) and k (8) rotated together.
/// Bound: the views bound once (bind_apply_rope_qk, outside the timing), each step checking its positions.
template <bool Cache, bool Bound = false>
void BM_RopeDecodeFusedQk(benchmark::State& state) {
  const index_t hq = 32, hk = 8, d = 128, row = (hq + 2 * hk) * d;
  const auto plan = bench_plan(posenc::rope_style::half_split);
  const posenc::rope_cache<float> cache(plan, 8192);
  const auto w = float_freq(plan);
  auto qkv = posenc_bench::random_values<float>(static_cast<std::size_t>(row));
  posenc::strided_view<float, 4> q(qkv.data(), {1, 1, hq, d}, {row, row, d, 1});
  posenc::strided_view<float, 4> k(qkv.data() + hq * d, {1, 1, hk, d}, {row, row, d, 1});
  namespace plain = posenc_bench::plain;
  const auto step = posenc::bind_apply_rope_qk(cache, q, k);
  posenc_bench::run_paired(
      state, static_cast<std::size_t>((hq + hk) * d) * sizeof(float),
      [&] {
        if constexpr (Bound) step.run(kPos);
        else if constexpr (Cache) posenc::apply_rope_qk(cache, q, k, kPos);
        else posenc::apply_rope_qk(plan, q, k, kPos);
        benchmark::DoNotOptimize(qkv.data());
      },
      [&] {
        if constexpr (Cache) {
          plain::rope_half_split(qkv.data(), 1, hq, d, row, cache.cos_data(), cache.sin_data(), kP0);
          plain::rope_half_split(qkv.data() + hq * d, 1, hk, d, row, cache.cos_data(), cache.sin_data(), kP0);
        } else {
          plain::rope_half_split_freq(qkv.data(), 1, hq, d, row, w.data(), kP0);
          plain::rope_half_split_freq(qkv.data() + hq * d, 1, hk, d, row, w.data(), kP0);
        }
        benchmark::DoNotOptimize(qkv.data());
      });
}

/// One decode step of a whole layer (rope_qk_append_kv): q (32 heads) rotated in place in a fused float QKV
/// buffer, k (8 heads) rotated into a paged T cache and v copied into its own, at one slot. Bound: the views
/// bound once (bind_rope_qk_append_kv, outside the timing), each step checking its positions and slots only.
template <class T, bool Bound = false>
void BM_RopeQkAppendKvDecode(benchmark::State& state) {
  const index_t hq = 32, hk = 8, d = 128, row = (hq + 2 * hk) * d, blocks = 64, bs = 16;
  const auto plan = bench_plan(posenc::rope_style::half_split);
  const posenc::rope_cache<float> cache(plan, 8192);
  auto qkv = posenc_bench::random_values<float>(static_cast<std::size_t>(row));
  posenc_bench::buffer<T> kc(static_cast<std::size_t>(blocks * bs * hk * d)), vc(kc.size());
  const std::int64_t slot[1] = {37 * bs + 5};
  const posenc::strided_view<float, 4> q(qkv.data(), {1, 1, hq, d}, {row, row, d, 1});
  const posenc::strided_view<const float, 4> k(qkv.data() + hq * d, {1, 1, hk, d}, {row, row, d, 1});
  const posenc::strided_view<const float, 4> v(qkv.data() + (hq + hk) * d, {1, 1, hk, d}, {row, row, d, 1});
  const posenc::strided_view<T, 4> kcv(kc.data(), {blocks, bs, hk, d}), vcv(vc.data(), {blocks, bs, hk, d});
  // Bytes: q read and written (float), k and v read (float) and written (T), halved as for an in-place pass.
  const std::size_t bytes = static_cast<std::size_t>(hq * d) * sizeof(float) +
                            static_cast<std::size_t>(2 * hk * d) * (sizeof(float) + sizeof(T)) / 2;
  namespace plain = posenc_bench::plain;
  auto step = posenc::bind_rope_qk_append_kv(cache, q, k, v, kcv, vcv);
  posenc_bench::run_paired(
      state, bytes,
      [&] {
        if constexpr (Bound)
          step.run(kPos, posenc::kv_slots::paged(slot, 1, 1));
        else
          posenc::rope_qk_append_kv(cache, q, k, v, kcv, vcv, kPos, posenc::kv_slots::paged(slot, 1, 1));
        benchmark::DoNotOptimize(kc.data());
      },
      [&] {
        plain::rope_half_split(qkv.data(), 1, hq, d, row, cache.cos_data(), cache.sin_data(), kP0);
        plain::rope_append_kv(qkv.data() + hq * d, qkv.data() + (hq + hk) * d, 1, hk, d, row, plain_ptr(kc.data()),
                              plain_ptr(vc.data()), slot, cache.cos_data(), cache.sin_data(), kP0);
        benchmark::DoNotOptimize(kc.data());
      });
}

/// MRoPE (Qwen2-VL sections) and the context shift, cache-free, on [1, L, 32, 128] float.
void BM_Mrope(benchmark::State& state) {
  const index_t l = state.range(1), h = state.range(2), d = state.range(3);
  const posenc::mrope_plan mp(bench_plan(posenc::rope_style::half_split, d), {16, 24, 24}, posenc::mrope_layout::chunked);
  const auto w = float_freq(mp.plan());
  std::vector<std::int64_t> thw(static_cast<std::size_t>(3 * l));
  for (std::size_t i = 0; i < thw.size(); ++i) thw[i] = static_cast<std::int64_t>(i % static_cast<std::size_t>(l));
  auto x = posenc_bench::random_values<float>(static_cast<std::size_t>(l * h * d));
  posenc::strided_view<float, 4> v(x.data(), {1, l, h, d});
  posenc_bench::run_paired(
      state, x.size() * sizeof(float),
      [&] {
        posenc::apply_mrope(mp, v, posenc::mrope_positions::shared(thw.data(), l));
        benchmark::DoNotOptimize(x.data());
      },
      [&] {
        posenc_bench::plain::mrope_half_split(x.data(), l, h, d, w.data(), mp.axis().data(), thw.data());
        benchmark::DoNotOptimize(x.data());
      });
}

void BM_ShiftRope(benchmark::State& state) {
  const index_t l = state.range(1), h = state.range(2), d = state.range(3);
  const auto plan = bench_plan(posenc::rope_style::half_split, d);
  const auto w = float_freq(plan);
  auto x = posenc_bench::random_values<float>(static_cast<std::size_t>(l * h * d));
  posenc::strided_view<float, 4> v(x.data(), {1, l, h, d});
  posenc_bench::run_paired(
      state, x.size() * sizeof(float),
      [&] {
        posenc::shift_rope(plan, v, -256);
        benchmark::DoNotOptimize(x.data());
      },
      [&] {
        posenc_bench::plain::shift_half_split(x.data(), l, h, d, w.data(), -256);
        benchmark::DoNotOptimize(x.data());
      });
}

/// The table path on `threads` threads, each its share of the tokens (sub-views and position slices), as an
/// engine's pool would split it; the plain loop split the same way. Threads are started per call (about 20
/// us, under 1% of a 4096-token call).
void BM_RopeThreads(benchmark::State& state) {
  const index_t l = state.range(1), h = state.range(2), d = state.range(3);
  const int threads = static_cast<int>(state.range(4));
  const auto plan = bench_plan(posenc::rope_style::half_split, d);
  const posenc::rope_cache<float> cache(plan, l + kP0);
  auto x = posenc_bench::random_values<float>(static_cast<std::size_t>(l * h * d));
  posenc::strided_view<float, 4> v(x.data(), {1, l, h, d});
  const auto split = [&](auto&& part) {
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back([&, t] { part(l * t / threads, l * (t + 1) / threads); });
    part(0, l / threads);
    for (auto& t : pool) t.join();
  };
  posenc_bench::run_paired(
      state, x.size() * sizeof(float),
      [&] {
        split([&](index_t l0, index_t l1) { posenc::apply_rope(cache, v.slice(1, l0, l1 - l0), kPos.slice(0, 1, l0, l1 - l0)); });
        benchmark::DoNotOptimize(x.data());
      },
      [&] {
        split([&](index_t l0, index_t l1) {
          posenc_bench::plain::rope_half_split(x.data() + l0 * h * d, l1 - l0, h, d, h * d, cache.cos_data(), cache.sin_data(),
                                               kP0 + l0);
        });
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

/// The fused appends' common setup: a fused float QKV buffer [N, L, (32 + 2*8) * 128], k and v views into it, a
/// paged cache of `blocks` blocks of 16 tokens [blocks, 16, 8, 128] and a slot mapping handing the blocks out in
/// reverse (token t of the call in block blocks - 1 - t / 16).
struct append_setup {
  static constexpr index_t hq = 32, hk = 8, d = 128, row = (hq + 2 * hk) * d, bs = 16;
  index_t n, l, blocks;
  posenc_bench::buffer<float> qkv;
  std::vector<std::int64_t> slots;
  posenc::strided_view<const float, 4> k, v;
  explicit append_setup(index_t n_, index_t l_)
      : n(n_), l(l_), blocks((n_ * l_ + bs - 1) / bs), qkv(posenc_bench::random_values<float>(static_cast<std::size_t>(n_ * l_ * row))),
        slots(static_cast<std::size_t>(n_ * l_)),
        k(qkv.data() + hq * d, {n_, l_, hk, d}, {l_ * row, row, d, 1}),
        v(qkv.data() + (hq + hk) * d, {n_, l_, hk, d}, {l_ * row, row, d, 1}) {
    for (index_t t = 0; t < n * l; ++t) slots[static_cast<std::size_t>(t)] = (blocks - 1 - t / bs) * bs + t % bs;
  }
  std::size_t cache_elems() const { return static_cast<std::size_t>(blocks * bs * hk * d); }
  /// k and v read (float) and written (Code bytes each), halved as for an in-place pass.
  std::size_t bytes(std::size_t code_bytes) const {
    return static_cast<std::size_t>(2 * n * l * hk * d) * (sizeof(float) + code_bytes) / 2;
  }
  /// Runs f(k, v, L, slots) per sequence: the plain loops take one sequence's tokens at positions kP0 + l.
  template <class F>
  void per_sequence(F&& f) const {
    for (index_t s = 0; s < n; ++s)
      f(qkv.data() + s * l * row + hq * d, qkv.data() + s * l * row + (hq + hk) * d, slots.data() + s * l);
  }
};

/// K rotated and V copied from a fused float QKV buffer into a paged cache of T through a slot mapping, one
/// rope_append_kv call: reads k and v (float), writes them once (T). Unfused: apply_rope into a T scratch, then
/// both copied by slot (two posenc calls and a copy: a composition, shown without a plain loop). Bound: the
/// views bound once (bind_rope_append_kv), each call checking its positions and slots only.
template <class T, bool Fused, bool Bound = false>
void BM_RopeAppendKvPaged(benchmark::State& state) {
  const append_setup a(state.range(0), state.range(1));
  const index_t n = a.n, l = a.l, hk = a.hk, d = a.d, bs = a.bs;
  const auto plan = bench_plan(posenc::rope_style::half_split, d);
  const posenc::rope_cache<float> cache(plan, l + kP0);
  posenc_bench::buffer<T> kc(a.cache_elems()), vc(kc.size()), tmp(static_cast<std::size_t>(n * l * hk * d));
  const posenc::strided_view<T, 4> kcv(kc.data(), {a.blocks, bs, hk, d}), vcv(vc.data(), {a.blocks, bs, hk, d});
  const auto slot_map = posenc::kv_slots::paged(a.slots.data(), n, l);
  auto step = posenc::bind_rope_append_kv(cache, a.k, a.v, kcv, vcv);
  const auto fused = [&] {
    if constexpr (Bound)
      step.run(kPos, slot_map);
    else
      posenc::rope_append_kv(cache, a.k, a.v, kcv, vcv, kPos, slot_map);
    benchmark::DoNotOptimize(kc.data());
    benchmark::DoNotOptimize(vc.data());
  };
  if constexpr (Fused) {
    posenc_bench::run_paired(state, a.bytes(sizeof(T)), fused, [&] {
      a.per_sequence([&](const float* k, const float* v, const std::int64_t* s) {
        posenc_bench::plain::rope_append_kv(k, v, l, hk, d, a.row, plain_ptr(kc.data()), plain_ptr(vc.data()), s,
                                            cache.cos_data(), cache.sin_data(), kP0);
      });
      benchmark::DoNotOptimize(kc.data());
      benchmark::DoNotOptimize(vc.data());
    });
  } else {
    posenc_bench::run_paired(state, a.bytes(sizeof(T)), [&] {
      posenc::apply_rope(cache, a.k, posenc::strided_view<T, 4>(tmp.data(), {n, l, hk, d}), kPos);
      for (index_t t = 0; t < n * l; ++t) {
        const index_t s = a.slots[static_cast<std::size_t>(t)];
        std::copy_n(tmp.data() + t * hk * d, hk * d, kc.data() + s * hk * d);
        for (index_t e = 0; e < hk * d; ++e)
          vc[static_cast<std::size_t>(s * hk * d + e)] = T(a.v(t / l, t % l, e / d, e % d));
      }
      benchmark::DoNotOptimize(kc.data());
      benchmark::DoNotOptimize(vc.data());
    });
  }
}

/// The same append into an int8 cache with dynamic per-token-per-head scales (rope_append_kv_quantized).
void BM_RopeAppendKvPagedInt8(benchmark::State& state) {
  const append_setup a(state.range(0), state.range(1));
  const index_t n = a.n, l = a.l, hk = a.hk, d = a.d, bs = a.bs;
  const posenc::rope_cache<float> cache(bench_plan(posenc::rope_style::half_split, d), l + kP0);
  posenc_bench::buffer<std::int8_t> kc(a.cache_elems()), vc(kc.size());
  posenc_bench::buffer<float> ks(static_cast<std::size_t>(a.blocks * bs * hk)), vs(ks.size());
  posenc_bench::run_paired(
      state, a.bytes(1),
      [&] {
        posenc::rope_append_kv_quantized(cache, a.k, a.v, posenc::strided_view<std::int8_t, 4>(kc.data(), {a.blocks, bs, hk, d}),
                                         posenc::strided_view<std::int8_t, 4>(vc.data(), {a.blocks, bs, hk, d}), kPos,
                                         posenc::kv_slots::paged(a.slots.data(), n, l), posenc::quant_spec{},
                                         posenc::quant_spec{}, posenc::strided_view<float, 3>(ks.data(), {a.blocks, bs, hk}),
                                         posenc::strided_view<float, 3>(vs.data(), {a.blocks, bs, hk}));
        benchmark::DoNotOptimize(kc.data());
      },
      [&] {
        a.per_sequence([&](const float* k, const float* v, const std::int64_t* s) {
          posenc_bench::plain::rope_append_kv_int8(k, v, l, hk, d, a.row, kc.data(), vc.data(), ks.data(), vs.data(), s,
                                                   cache.cos_data(), cache.sin_data(), kP0);
        });
        benchmark::DoNotOptimize(kc.data());
      });
}

/// The same append into an fp8 E4M3 cache with given per-tensor scales (vLLM's fp8 KV cache).
void BM_RopeAppendKvPagedFp8(benchmark::State& state) {
  const append_setup a(state.range(0), state.range(1));
  const index_t n = a.n, l = a.l, hk = a.hk, d = a.d, bs = a.bs;
  const posenc::rope_cache<float> cache(bench_plan(posenc::rope_style::half_split, d), l + kP0);
  posenc_bench::buffer<std::uint8_t> kc(a.cache_elems()), vc(kc.size());
  const float k_scale = 0.01f, v_scale = 0.02f;
  posenc::quant_spec ks, vs;
  ks.format = vs.format = posenc::quant_format::fp8_e4m3;
  ks.scales = &k_scale;
  vs.scales = &v_scale;
  ks.scale_stride = vs.scale_stride = 0;  // one scale per tensor
  posenc_bench::run_paired(
      state, a.bytes(1),
      [&] {
        posenc::rope_append_kv_quantized(cache, a.k, a.v, posenc::strided_view<std::uint8_t, 4>(kc.data(), {a.blocks, bs, hk, d}),
                                         posenc::strided_view<std::uint8_t, 4>(vc.data(), {a.blocks, bs, hk, d}), kPos,
                                         posenc::kv_slots::paged(a.slots.data(), n, l), ks, vs);
        benchmark::DoNotOptimize(kc.data());
      },
      [&] {
        a.per_sequence([&](const float* k, const float* v, const std::int64_t* s) {
          posenc_bench::plain::rope_append_kv_e4m3(k, v, l, hk, d, a.row, kc.data(), vc.data(), k_scale, v_scale, s,
                                                   cache.cos_data(), cache.sin_data(), kP0);
        });
        benchmark::DoNotOptimize(kc.data());
      });
}

/// The RoPE token counts: decode (1), small batches in L1/L2 (16, 64, and 65 past the old 64-token switch),
/// a prompt in L3 (512) and one from DRAM (4096).
void rope_tokens(benchmark::internal::Benchmark* b) {
  b->ArgNames({"N", "L", "H", "D"});
  for (index_t l : {1, 16, 64, 65, 512, 4096}) b->Args({1, l, 32, 128});
  b->UseManualTime();
}
void append_shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"N", "L"})->Args({1, 4096})->Args({64, 1})->UseManualTime();
}
void prefill(benchmark::internal::Benchmark* b) {
  b->ArgNames({"N", "L", "H", "D"})->Args({1, 4096, 32, 128})->UseManualTime();
}

using posenc::rope_style;
const std::string S = posenc_bench::isa_suffix();
// Both styles, every storage type, table and cache-free (fp32), over the token counts.
BENCHMARK(BM_Rope<float, rope_style::half_split, true>)->Name("BM_RopeHalfSplitCache" + S)->Apply(rope_tokens);
// The rotation's floor at 16 tokens (rows in L2): the plain loop against itself.
BENCHMARK(BM_Rope<float, rope_style::half_split, true, false, false, true>)->Name("BM_RopeHalfSplitCachePlainControl" + S)
    ->ArgNames({"N", "L", "H", "D"})->Args({1, 16, 32, 128})->UseManualTime();
BENCHMARK(BM_Rope<float, rope_style::half_split, false>)->Name("BM_RopeHalfSplitPlan" + S)->Apply(rope_tokens);
// The fp32 table row against the plain loop widened to AVX-512, where the CPU has it (bench/README.md, run 9).
[[maybe_unused]] const bool kVsPlain512 =
    posenc_bench::plain::has_avx512() &&
    benchmark::RegisterBenchmark(("BM_RopeHalfSplitCacheVsPlain512" + S).c_str(),
                                 BM_Rope<float, rope_style::half_split, true, false, true>)
        ->ArgNames({"N", "L", "H", "D"})->Args({1, 512, 32, 128})->Args({1, 4096, 32, 128})->UseManualTime();
BENCHMARK(BM_Rope<float, rope_style::half_split, true, true>)->Name("BM_RopeHalfSplitCacheBound" + S)
    ->ArgNames({"N", "L", "H", "D"})->Args({1, 1, 32, 128})->Args({1, 16, 32, 128})->UseManualTime();
BENCHMARK(BM_Rope<float, rope_style::interleaved, true>)->Name("BM_RopeInterleavedCache" + S)->Apply(rope_tokens);
BENCHMARK(BM_Rope<float, rope_style::interleaved, false>)->Name("BM_RopeInterleavedPlan" + S)->Apply(rope_tokens);
BENCHMARK(BM_Rope<Eigen::half, rope_style::half_split, true>)->Name("BM_RopeHalfSplitCacheHalf" + S)->Apply(rope_tokens);
BENCHMARK(BM_Rope<Eigen::bfloat16, rope_style::half_split, true>)->Name("BM_RopeHalfSplitCacheBf16" + S)->Apply(rope_tokens);
BENCHMARK(BM_Rope<double, rope_style::half_split, true>)->Name("BM_RopeHalfSplitCacheDouble" + S)->Apply(rope_tokens);
BENCHMARK(BM_Rope<Eigen::half, rope_style::interleaved, true>)->Name("BM_RopeInterleavedCacheHalf" + S)->Apply(rope_tokens);
BENCHMARK(BM_Rope<Eigen::bfloat16, rope_style::interleaved, true>)->Name("BM_RopeInterleavedCacheBf16" + S)->Apply(rope_tokens);
BENCHMARK(BM_Rope<double, rope_style::interleaved, true>)->Name("BM_RopeInterleavedCacheDouble" + S)->Apply(rope_tokens);
// K rotated into a half / bfloat16 KV cache (8 KV heads).
BENCHMARK(BM_RopeIntoCache<Eigen::half>)->Name("BM_RopeFloatIntoHalfCache" + S)->ArgNames({"N", "L", "H", "D"})
    ->Args({1, 4096, 8, 128})->UseManualTime();
BENCHMARK(BM_RopeIntoCache<Eigen::bfloat16>)->Name("BM_RopeFloatIntoBf16Cache" + S)->ArgNames({"N", "L", "H", "D"})
    ->Args({1, 4096, 8, 128})->UseManualTime();
// Decode: one token, 32 q + 8 kv heads of a fused QKV buffer; and the whole layer step into a 16-bit cache.
BENCHMARK(BM_RopeDecodeFusedQk<true>)->Name("BM_RopeDecodeFusedQkCache" + S)->UseManualTime();
BENCHMARK(BM_RopeDecodeFusedQk<false>)->Name("BM_RopeDecodeFusedQkPlan" + S)->UseManualTime();
BENCHMARK(BM_RopeDecodeFusedQk<true, true>)->Name("BM_RopeDecodeFusedQkCacheBound" + S)->UseManualTime();
BENCHMARK(BM_RopeQkAppendKvDecode<Eigen::half>)->Name("BM_RopeQkAppendKvDecodeHalf" + S)->UseManualTime();
BENCHMARK(BM_RopeQkAppendKvDecode<Eigen::bfloat16>)->Name("BM_RopeQkAppendKvDecodeBf16" + S)->UseManualTime();
// The same steps with the views bound once (posenc/binding.hpp).
BENCHMARK(BM_RopeQkAppendKvDecode<Eigen::half, true>)->Name("BM_RopeQkAppendKvDecodeHalfBound" + S)->UseManualTime();
BENCHMARK(BM_RopeQkAppendKvDecode<Eigen::bfloat16, true>)->Name("BM_RopeQkAppendKvDecodeBf16Bound" + S)->UseManualTime();
// Fused RoPE + paged KV-cache append (prefill of 4096 tokens; a decode step of 64 sequences), and unfused.
BENCHMARK(BM_RopeAppendKvPaged<Eigen::half, true>)->Name("BM_RopeAppendKvPagedHalf" + S)->Apply(append_shapes);
BENCHMARK(BM_RopeAppendKvPaged<Eigen::bfloat16, true>)->Name("BM_RopeAppendKvPagedBf16" + S)->Apply(append_shapes);
BENCHMARK(BM_RopeAppendKvPaged<Eigen::half, false>)->Name("BM_RopeAppendKvPagedHalfUnfused" + S)->Apply(append_shapes);
BENCHMARK(BM_RopeAppendKvPaged<float, true>)->Name("BM_RopeAppendKvPagedFloat" + S)->Apply(append_shapes);
BENCHMARK(BM_RopeAppendKvPaged<Eigen::half, true, true>)->Name("BM_RopeAppendKvPagedHalfBound" + S)
    ->ArgNames({"N", "L"})->Args({64, 1})->UseManualTime();
BENCHMARK(BM_RopeAppendKvPagedInt8)->Name("BM_RopeAppendKvPagedInt8" + S)->Apply(append_shapes);
BENCHMARK(BM_RopeAppendKvPagedFp8)->Name("BM_RopeAppendKvPagedFp8" + S)->Apply(append_shapes);
BENCHMARK(BM_Mrope)->Name("BM_MropeChunked" + S)->Apply(prefill);
BENCHMARK(BM_ShiftRope)->Name("BM_ShiftRope" + S)->Apply(prefill);
BENCHMARK(BM_RopeThreads)->Name("BM_RopeHalfSplitCacheThreads" + S)->ArgNames({"N", "L", "H", "D", "threads"})
    ->Args({1, 4096, 32, 128, 1})->Args({1, 4096, 32, 128, 2})->UseManualTime();
BENCHMARK(BM_RopeNaiveEigen)->Name("BM_RopeNaiveEigenPeer")->Apply(prefill);

}  // namespace
