// Multi-head causal attention with ALiBi over a toy sequence: prefill a prompt, then decode token by token
// with a KV cache, and show that every decoded output equals the output of a full recomputation over the
// whole sequence. ALiBi puts no position into q or k: each head adds slope_h * (j - i) to its scores, so a
// decode step only needs the query's position, the cache length (add_alibi_bias with positions::offset(t),
// Lq = 1). The decode runs as two tensor-parallel shards of 3 heads each (head ranges [0, 3) and [3, 6) of
// the 6 global heads, a non power of two), the recomputation unsharded.
//
// Build and run: bash scripts/run_examples.sh (or cmake --build build --target alibi_kv_cache).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <posenc/posenc.hpp>

namespace {

using posenc::index_t;

constexpr index_t kHeads = 6;   // global heads: slopes 2^-2, 2^-4, 2^-6, 2^-8, then 2^-1, 2^-3
constexpr index_t kDim = 8;     // head dim
constexpr index_t kPrompt = 5;  // prefill tokens
constexpr index_t kDecode = 4;  // decoded tokens
constexpr index_t kTotal = kPrompt + kDecode;
constexpr index_t kShards = 2;
constexpr index_t kShardHeads = kHeads / kShards;

std::size_t at(index_t i) { return static_cast<std::size_t>(i); }

/// q, k, v rows: [tokens, kHeads, kDim] row-major.
using tensor = std::vector<float>;

/// scores[h, i, j] = q_i . k_j / sqrt(D) for heads [h0, h0 + heads), queries [q0, q0 + lq), keys [0, lk), into
/// a [heads, lq, row_stride] buffer (row_stride >= lk: the KV-cache capacity, so rows stay in place as it grows).
void qk_scores(const tensor& q, const tensor& k, index_t h0, index_t heads, index_t q0, index_t lq, index_t lk,
               index_t row_stride, std::vector<float>& scores) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(kDim));
  for (index_t h = 0; h < heads; ++h)
    for (index_t i = 0; i < lq; ++i)
      for (index_t j = 0; j < lk; ++j) {
        double s = 0.0;
        for (index_t d = 0; d < kDim; ++d)
          s += static_cast<double>(q[at(((q0 + i) * kHeads + h0 + h) * kDim + d)]) * k[at((j * kHeads + h0 + h) * kDim + d)];
        scores[at((h * lq + i) * row_stride + j)] = static_cast<float>(s * scale);
      }
}

/// out[i, h0 + h, :] = softmax_j(scores[h, i, :lk]) v[j, h0 + h, :] (masked scores are -inf and weigh 0).
void softmax_v(const std::vector<float>& scores, const tensor& v, index_t h0, index_t heads, index_t lq, index_t lk,
               index_t row_stride, tensor& out) {
  for (index_t h = 0; h < heads; ++h)
    for (index_t i = 0; i < lq; ++i) {
      const float* row = &scores[at((h * lq + i) * row_stride)];
      const double mx = *std::max_element(row, row + lk);
      double z = 0.0;
      std::vector<double> w(at(lk));
      for (index_t j = 0; j < lk; ++j) z += (w[at(j)] = std::exp(static_cast<double>(row[j]) - mx));
      for (index_t d = 0; d < kDim; ++d) {
        double acc = 0.0;
        for (index_t j = 0; j < lk; ++j) acc += w[at(j)] / z * v[at((j * kHeads + h0 + h) * kDim + d)];
        out[at((i * kHeads + h0 + h) * kDim + d)] = static_cast<float>(acc);
      }
    }
}

}  // namespace

int main() {
  std::mt19937 gen(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  tensor q(at(kTotal * kHeads * kDim)), k(q.size()), v(q.size());
  for (auto* t : {&q, &k, &v})
    for (float& x : *t) x = nd(gen);

  posenc::alibi_config full;
  full.num_heads = kHeads;  // max_bias 8, linear form: BLOOM / MPT

  // Reference: the whole sequence at once, scores [1, H, T, T] with the causal mask fused into the bias.
  std::vector<float> scores(at(kHeads * kTotal * kTotal));
  qk_scores(q, k, 0, kHeads, 0, kTotal, kTotal, kTotal, scores);
  posenc::add_alibi_bias(full, posenc::strided_view<float, 4>(scores.data(), {1, kHeads, kTotal, kTotal}),
                         posenc::positions::offset(0), posenc::alibi_mask::causal);
  tensor reference(q.size());
  softmax_v(scores, v, 0, kHeads, kTotal, kTotal, kTotal, reference);

  std::printf("ALiBi attention: %lld heads (slopes", static_cast<long long>(kHeads));
  for (index_t h = 0; h < kHeads; ++h) std::printf(" %g", posenc::alibi_slope(h, kHeads));
  std::printf("), head dim %lld, prefill %lld tokens, decode %lld tokens as %lld shards of %lld heads\n",
              static_cast<long long>(kDim), static_cast<long long>(kPrompt), static_cast<long long>(kDecode),
              static_cast<long long>(kShards), static_cast<long long>(kShardHeads));

  // Each shard holds its heads' slice of the KV cache (here: k and v themselves, read up to the cache length)
  // and a scores buffer of the cache's capacity, [heads, 1, kTotal]: a decode step views its first t+1 keys.
  double max_diff = 0.0;
  tensor out(q.size());
  for (index_t s = 0; s < kShards; ++s) {
    posenc::alibi_config shard = full;
    shard.head_begin = s * kShardHeads;
    shard.head_end = (s + 1) * kShardHeads;
    const index_t h0 = shard.head_begin;
    // Prefill: queries 0 .. P-1 over keys 0 .. P-1, offset 0, causal.
    std::vector<float> prefill(at(kShardHeads * kPrompt * kPrompt));
    qk_scores(q, k, h0, kShardHeads, 0, kPrompt, kPrompt, kPrompt, prefill);
    posenc::add_alibi_bias(shard, posenc::strided_view<float, 3>(prefill.data(), {kShardHeads, kPrompt, kPrompt}),
                           posenc::positions::offset(0), posenc::alibi_mask::causal);
    softmax_v(prefill, v, h0, kShardHeads, kPrompt, kPrompt, kPrompt, out);
    // Decode: token t is query 0 of a one-token step after a cache of t entries; keys 0 .. t.
    std::vector<float> step(at(kShardHeads * kTotal), 0.0f);
    for (index_t t = kPrompt; t < kTotal; ++t) {
      qk_scores(q, k, h0, kShardHeads, t, 1, t + 1, kTotal, step);
      const posenc::strided_view<float, 4> view(step.data(), {1, kShardHeads, 1, t + 1}, {0, kTotal, kTotal, 1});
      posenc::add_alibi_bias(shard, view, posenc::positions::offset(t), posenc::alibi_mask::causal);
      tensor one(at(kHeads * kDim));
      softmax_v(step, v, h0, kShardHeads, 1, t + 1, kTotal, one);
      std::copy(one.begin() + h0 * kDim, one.begin() + (h0 + kShardHeads) * kDim, out.begin() + (t * kHeads + h0) * kDim);
    }
  }

  for (index_t t = 0; t < kTotal; ++t) {
    double diff = 0.0;
    for (index_t e = 0; e < kHeads * kDim; ++e)
      diff = std::max(diff, std::fabs(static_cast<double>(out[at(t * kHeads * kDim + e)]) - reference[at(t * kHeads * kDim + e)]));
    max_diff = std::max(max_diff, diff);
    std::printf("%s token %lld: head 0 out[0..2] = % .6f % .6f % .6f, head 5 out[0] = % .6f   |decode - recompute| = %.2e\n",
                t < kPrompt ? "prefill" : "decode ", static_cast<long long>(t),
                static_cast<double>(out[at(t * kHeads * kDim)]), static_cast<double>(out[at(t * kHeads * kDim + 1)]),
                static_cast<double>(out[at(t * kHeads * kDim + 2)]), static_cast<double>(out[at((t * kHeads + 5) * kDim)]), diff);
  }
  const bool ok = max_diff <= 1e-6;
  std::printf("max |decode - recompute| over all %lld tokens and heads = %.2e: %s\n", static_cast<long long>(kTotal),
              max_diff, ok ? "decode == recompute" : "MISMATCH");
  return ok ? 0 : 1;
}
