// A llama-style decode step with a paged fp16 KV cache, as an inference engine runs it: three sequences of
// different lengths share a pool of cache blocks through per-sequence block tables (vLLM's PagedAttention
// layout [num_blocks, block_size, kv_heads, head_dim]). Each step, the model's QKV projection writes one fused
// buffer [N, 1, (Hq + 2 Hk) * D]; posenc::rope_qk_append_kv rotates q in place and writes the rotated k and
// the v of every sequence straight into its cache slot (fp16, one rounding), in one call. Attention then reads
// the cache through the block tables (GQA: Hq / Hk query heads per KV head).
//
// The check: every step's attention output is recomputed from scratch in double from the float q/k/v the
// model produced (keys rotated at their positions by the formula, no cache, no fp16), and must agree within
// the fp16 cache's rounding.
//
// Build and run: bash scripts/run_examples.sh (or cmake --build build --target paged_decode).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include <posenc/posenc.hpp>

namespace {

using posenc::index_t;

constexpr index_t kHq = 8, kHk = 2, kD = 64;  // GQA: 4 query heads per KV head
constexpr index_t kBlock = 16, kBlocks = 32;  // the cache pool
constexpr index_t kRow = (kHq + 2 * kHk) * kD;

/// RoPE of one head row at position p in double, from the plan's frequencies (half-split pairs).
std::vector<double> rotate(const float* x, const std::vector<double>& w, index_t p) {
  std::vector<double> y(x, x + kD);
  for (std::size_t i = 0; i < w.size(); ++i) {
    const double t = static_cast<double>(p) * w[i];
    const double a = x[i], b = x[i + kD / 2];
    y[i] = a * std::cos(t) - b * std::sin(t);
    y[i + kD / 2] = b * std::cos(t) + a * std::sin(t);
  }
  return y;
}

}  // namespace

int main() {
  posenc::rope_config cfg;  // Llama 3.1-style frequencies
  cfg.head_dim = kD;
  cfg.base = 500000.0;
  cfg.scaling = posenc::rope_scaling::llama3(8.0, 1.0, 4.0, 8192);
  const posenc::rope_plan plan = posenc::make_rope_plan(cfg);
  const posenc::rope_cache<float> table(plan, 4096);

  // The cache pool, fp16, and three sequences with their block tables (blocks handed out as they fill).
  std::vector<Eigen::half> k_pool(static_cast<std::size_t>(kBlocks * kBlock * kHk * kD));
  std::vector<Eigen::half> v_pool(k_pool.size());
  const posenc::strided_view<Eigen::half, 4> k_cache(k_pool.data(), {kBlocks, kBlock, kHk, kD});
  const posenc::strided_view<Eigen::half, 4> v_cache(v_pool.data(), {kBlocks, kBlock, kHk, kD});
  const index_t n_seq = 3;
  std::vector<std::int64_t> len = {0, 0, 0};
  std::vector<std::vector<index_t>> blocks(n_seq);
  index_t next_block = kBlocks - 1;  // hand blocks out from the top: a sequence's blocks are not contiguous
  // What the model produced, kept in float for the recomputation: [seq][token] rows of k and v.
  std::vector<std::vector<std::vector<float>>> k_hist(n_seq), v_hist(n_seq);

  std::mt19937 gen(42);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const std::vector<index_t> steps_of = {37, 5, 20};  // tokens each sequence decodes (prompts fed token by token)
  double worst = 0.0;
  index_t checked = 0;
  for (index_t step = 0; step < 37; ++step) {
    // The sequences still running this step, one token each.
    std::vector<index_t> live;
    for (index_t s = 0; s < n_seq; ++s)
      if (step < steps_of[static_cast<std::size_t>(s)]) live.push_back(s);
    const auto N = static_cast<index_t>(live.size());
    std::vector<float> qkv(static_cast<std::size_t>(N * kRow));
    for (auto& x : qkv) x = nd(gen);
    std::vector<std::int64_t> slot(static_cast<std::size_t>(N)), pos(static_cast<std::size_t>(N));
    for (index_t i = 0; i < N; ++i) {
      const auto s = static_cast<std::size_t>(live[static_cast<std::size_t>(i)]);
      if (len[s] % kBlock == 0) blocks[s].push_back(next_block--);
      slot[static_cast<std::size_t>(i)] = blocks[s][static_cast<std::size_t>(len[s] / kBlock)] * kBlock + len[s] % kBlock;
      pos[static_cast<std::size_t>(i)] = len[s];
      const float* row = &qkv[static_cast<std::size_t>(i * kRow)];
      k_hist[s].emplace_back(row + kHq * kD, row + (kHq + kHk) * kD);
      v_hist[s].emplace_back(row + (kHq + kHk) * kD, row + kRow);
    }
    const std::vector<float> q_raw(qkv);
    // The fused step: q in place, k rotated into its slot, v copied into its slot; fp16 cache.
    const posenc::strided_view<float, 4> q(qkv.data(), {N, 1, kHq, kD}, {kRow, kRow, kD, 1});
    const posenc::strided_view<float, 4> k(qkv.data() + kHq * kD, {N, 1, kHk, kD}, {kRow, kRow, kD, 1});
    const posenc::strided_view<float, 4> v(qkv.data() + (kHq + kHk) * kD, {N, 1, kHk, kD}, {kRow, kRow, kD, 1});
    const posenc::status st = posenc::try_rope_qk_append_kv(table, q, k, v, k_cache, v_cache,
                                                            posenc::positions::per_sequence(pos.data(), N),
                                                            posenc::kv_slots::paged(slot.data(), N, 1));
    if (!st) {
      std::fprintf(stderr, "paged_decode: %s\n", st.c_str());
      return 1;
    }
    for (index_t i = 0; i < N; ++i) ++len[static_cast<std::size_t>(live[static_cast<std::size_t>(i)])];

    // Attention over the paged cache, and the recomputation in double.
    for (index_t i = 0; i < N; ++i) {
      const auto s = static_cast<std::size_t>(live[static_cast<std::size_t>(i)]);
      const index_t T = len[s];
      for (index_t h = 0; h < kHq; ++h) {
        const index_t g = h / (kHq / kHk);
        const float* qh = &qkv[static_cast<std::size_t>(i * kRow + h * kD)];
        const std::vector<double> q_ref = rotate(&q_raw[static_cast<std::size_t>(i * kRow + h * kD)], plan.inv_freq(), T - 1);
        std::vector<double> sc(static_cast<std::size_t>(T)), sc_ref(static_cast<std::size_t>(T));
        for (index_t t = 0; t < T; ++t) {
          const index_t blk = blocks[s][static_cast<std::size_t>(t / kBlock)];
          const std::vector<double> k_ref = rotate(&k_hist[s][static_cast<std::size_t>(t)][static_cast<std::size_t>(g * kD)],
                                                   plan.inv_freq(), t);
          double a = 0, b = 0;
          for (index_t e = 0; e < kD; ++e) {
            a += static_cast<double>(qh[e]) * static_cast<double>(static_cast<float>(k_cache(blk, t % kBlock, g, e)));
            b += q_ref[static_cast<std::size_t>(e)] * k_ref[static_cast<std::size_t>(e)];
          }
          sc[static_cast<std::size_t>(t)] = a / std::sqrt(static_cast<double>(kD));
          sc_ref[static_cast<std::size_t>(t)] = b / std::sqrt(static_cast<double>(kD));
        }
        auto softmax = [](std::vector<double>& x) {
          const double m = *std::max_element(x.begin(), x.end());
          double z = 0;
          for (double& e : x) z += (e = std::exp(e - m));
          for (double& e : x) e /= z;
        };
        softmax(sc);
        softmax(sc_ref);
        for (index_t e = 0; e < kD; ++e) {
          double o = 0, o_ref = 0;
          for (index_t t = 0; t < T; ++t) {
            const index_t blk = blocks[s][static_cast<std::size_t>(t / kBlock)];
            o += sc[static_cast<std::size_t>(t)] * static_cast<double>(static_cast<float>(v_cache(blk, t % kBlock, g, e)));
            o_ref += sc_ref[static_cast<std::size_t>(t)] * v_hist[s][static_cast<std::size_t>(t)][static_cast<std::size_t>(g * kD + e)];
          }
          worst = std::max(worst, std::fabs(o - o_ref));
          ++checked;
        }
      }
    }
  }
  std::printf("paged_decode: %lld sequences decoded %lld, %lld and %lld tokens into a paged fp16 cache of %lld blocks\n",
              static_cast<long long>(n_seq), static_cast<long long>(steps_of[0]), static_cast<long long>(steps_of[1]),
              static_cast<long long>(steps_of[2]), static_cast<long long>(kBlocks));
  std::printf("paged_decode: %lld attention outputs, max |fused fp16 cache - float recompute| = %.3g\n",
              static_cast<long long>(checked), worst);
  // Unit-normal inputs: fp16 keeps ~3 decimal digits of k and v; measured ~1e-3 on the outputs, 5e-3 allowed.
  if (!(worst < 5e-3)) {
    std::printf("paged_decode: MISMATCH\n");
    return 1;
  }
  std::printf("paged_decode: attention over the paged cache == float recompute (within fp16 rounding)\n");
  return 0;
}
