// RoPE throughput and latency: the cache-free plan path and the cos/sin cache, both styles, against the
// same-run memory baseline. Shapes: decode (1 token, 32 heads x 128: latency-bound, read ns/call), prefill
// (512 tokens), and a batch of 4 x 2048 tokens with 8 KV heads (32 MiB, larger than the caches).
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <posenc/dispatch.hpp>
#include <posenc/posenc.hpp>

#include "baseline.hpp"

namespace {

template <posenc::rope_style Style, bool UseCache>
void BM_Rope(benchmark::State& state) {
  const posenc::index_t n = state.range(0), l = state.range(1), h = state.range(2), d = state.range(3);
  posenc::rope_config cfg;
  cfg.head_dim = d;
  cfg.base = 500000.0;
  cfg.style = Style;
  const posenc::rope_plan plan = posenc::make_rope_plan(cfg);
  const posenc::rope_cache<float> cache(plan, l + 4096);
  std::vector<float> x(static_cast<std::size_t>(n * l * h * d));
  std::mt19937 gen(1);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& v : x) v = u(gen);
  posenc::strided_view<float, 4> view(x.data(), {n, l, h, d});
  const auto pos = posenc::positions::offset(4096);  // decode-like positions past a prompt
  const posenc_bench::loop_timer timer;
  for (auto _ : state) {
    if constexpr (UseCache) posenc::apply_rope(cache, view, pos);
    else posenc::apply_rope(plan, view, pos);
    benchmark::ClobberMemory();
  }
  posenc_bench::report_bytes(state, x.size(), sizeof(float), timer.seconds());
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
  const posenc_bench::loop_timer timer;
  for (auto _ : state) {
    out = x * cos.reshape(table_shape).broadcast(bcast) +
          (-x.slice(hi, half)).concatenate(x.slice(lo, half), 3) * sin.reshape(table_shape).broadcast(bcast);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  posenc_bench::report_bytes(state, static_cast<std::size_t>(x.size()), sizeof(float), timer.seconds());
}

void shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"N", "L", "H", "D"})->Args({1, 1, 32, 128})->Args({1, 512, 32, 128})->Args({4, 2048, 8, 128});
}

}  // namespace

// Named by the instruction set the kernels were compiled for (the static dispatch of this build's flags).
const std::string isa_suffix = std::string("/") + posenc::isa_name(posenc::compiled_isa());
BENCHMARK(BM_Rope<posenc::rope_style::half_split, false>)->Name("BM_RopeHalfSplitPlan" + isa_suffix)->Apply(shapes);
BENCHMARK(BM_Rope<posenc::rope_style::half_split, true>)->Name("BM_RopeHalfSplitCache" + isa_suffix)->Apply(shapes);
BENCHMARK(BM_Rope<posenc::rope_style::interleaved, false>)->Name("BM_RopeInterleavedPlan" + isa_suffix)->Apply(shapes);
BENCHMARK(BM_Rope<posenc::rope_style::interleaved, true>)->Name("BM_RopeInterleavedCache" + isa_suffix)->Apply(shapes);
BENCHMARK(BM_RopeNaiveEigen)->Name("BM_RopeNaiveEigenPeer")->Apply(shapes);
