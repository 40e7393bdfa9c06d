// Single-head causal attention with RoPE over a toy sequence: prefill a prompt, then decode token by token
// with a KV cache of already-rotated keys, and show that every decoded output equals the output of a full
// recomputation over the whole sequence. Keys are rotated once, at their own position, when they enter the
// cache; each new query is rotated at its position; relative positions then come out of q.k alone.
//
// Build and run: bash scripts/run_examples.sh (or cmake --build build --target rope_kv_cache).
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <posenc/posenc.hpp>

namespace {

constexpr posenc::index_t kDim = 16;     // head dim
constexpr posenc::index_t kPrompt = 6;   // prefill tokens
constexpr posenc::index_t kDecode = 4;   // decoded tokens
constexpr posenc::index_t kTotal = kPrompt + kDecode;

using matrix = std::vector<float>;  // row-major [tokens, kDim]

// softmax(q k^T * scale) v for query i over keys 0..last (causal), all rows already rotated.
std::vector<float> attend(const float* q, const matrix& k, const matrix& v, posenc::index_t last, double scale) {
  std::vector<double> w(static_cast<std::size_t>(last + 1));
  double mx = -1e300;
  for (posenc::index_t j = 0; j <= last; ++j) {
    double s = 0;
    for (posenc::index_t d = 0; d < kDim; ++d) s += static_cast<double>(q[d]) * k[static_cast<std::size_t>(j * kDim + d)];
    w[static_cast<std::size_t>(j)] = s * scale;
    mx = std::max(mx, s * scale);
  }
  double z = 0;
  for (double& x : w) z += (x = std::exp(x - mx));
  std::vector<float> out(kDim, 0.0f);
  for (posenc::index_t j = 0; j <= last; ++j)
    for (posenc::index_t d = 0; d < kDim; ++d)
      out[static_cast<std::size_t>(d)] += static_cast<float>(w[static_cast<std::size_t>(j)] / z) * v[static_cast<std::size_t>(j * kDim + d)];
  return out;
}

posenc::strided_view<float, 4> rows(float* data, posenc::index_t tokens) {
  return posenc::strided_view<float, 4>(data, {1, tokens, 1, kDim});  // (N, L, H, D) = (1, tokens, 1, 16)
}

}  // namespace

int main() {
  // A Llama-3.1-style plan, shrunk to a 16-dim head: base 500000, llama3 scaling over a 32-token "original" context.
  posenc::rope_config cfg;
  cfg.head_dim = kDim;
  cfg.base = 500000.0;
  cfg.style = posenc::rope_style::half_split;
  cfg.scaling = posenc::rope_scaling::llama3(8.0, 1.0, 4.0, 32);
  const posenc::rope_plan plan = posenc::make_rope_plan(cfg);
  const double scale = plan.logit_scale() / std::sqrt(static_cast<double>(kDim));

  // The un-rotated projections of every token (what the model would produce).
  std::mt19937 gen(42);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  matrix q(kTotal * kDim), k(kTotal * kDim), v(kTotal * kDim);
  for (auto* m : {&q, &k, &v})
    for (float& x : *m) x = nd(gen);

  // Reference: rotate the whole sequence at once, from a precomputed cos/sin cache, and attend causally.
  const posenc::rope_cache<float> cache(plan, kTotal);
  matrix q_full = q, k_full = k;
  posenc::apply_rope_qk(cache, rows(q_full.data(), kTotal), rows(k_full.data(), kTotal), posenc::positions::offset(0));
  std::vector<std::vector<float>> reference;
  for (posenc::index_t i = 0; i < kTotal; ++i) reference.push_back(attend(&q_full[static_cast<std::size_t>(i * kDim)], k_full, v, i, scale));

  // Prefill: rotate the prompt's q and k at positions 0..kPrompt-1; the rotated keys start the cache.
  matrix k_cache(k.begin(), k.begin() + kPrompt * kDim);
  matrix v_cache(v.begin(), v.begin() + kPrompt * kDim);
  matrix q_prompt(q.begin(), q.begin() + kPrompt * kDim);
  posenc::apply_rope_qk(plan, rows(q_prompt.data(), kPrompt), rows(k_cache.data(), kPrompt), posenc::positions::offset(0));
  double max_diff = 0.0;
  std::printf("prefill %lld tokens, decode %lld tokens, head dim %lld, plan: llama3 factor 8\n",
              static_cast<long long>(kPrompt), static_cast<long long>(kDecode), static_cast<long long>(kDim));
  for (posenc::index_t i = 0; i < kPrompt; ++i) {
    const auto out = attend(&q_prompt[static_cast<std::size_t>(i * kDim)], k_cache, v_cache, i, scale);
    for (posenc::index_t d = 0; d < kDim; ++d)
      max_diff = std::max(max_diff, static_cast<double>(std::fabs(out[static_cast<std::size_t>(d)] - reference[static_cast<std::size_t>(i)][static_cast<std::size_t>(d)])));
  }

  // Decode: one token at a time; its position is the cache length (positions::offset(past)). Decode uses the
  // cache-free path (angles formed in double at any position), the reference the table: both round cos/sin
  // from the same double values, so they agree to float rounding of the attention arithmetic.
  for (posenc::index_t t = kPrompt; t < kTotal; ++t) {
    std::vector<float> q_t(q.begin() + t * kDim, q.begin() + (t + 1) * kDim);
    std::vector<float> k_t(k.begin() + t * kDim, k.begin() + (t + 1) * kDim);
    posenc::apply_rope_qk(plan, rows(q_t.data(), 1), rows(k_t.data(), 1), posenc::positions::offset(t));
    k_cache.insert(k_cache.end(), k_t.begin(), k_t.end());
    v_cache.insert(v_cache.end(), v.begin() + t * kDim, v.begin() + (t + 1) * kDim);
    const auto out = attend(q_t.data(), k_cache, v_cache, t, scale);
    double diff = 0.0;
    for (posenc::index_t d = 0; d < kDim; ++d)
      diff = std::max(diff, static_cast<double>(std::fabs(out[static_cast<std::size_t>(d)] - reference[static_cast<std::size_t>(t)][static_cast<std::size_t>(d)])));
    max_diff = std::max(max_diff, diff);
    std::printf("token %lld: out[0..3] = % .6f % .6f % .6f % .6f   |decode - recompute| = %.2e\n",
                static_cast<long long>(t), static_cast<double>(out[0]), static_cast<double>(out[1]),
                static_cast<double>(out[2]), static_cast<double>(out[3]), diff);
  }
  const bool ok = max_diff <= 1e-6;
  std::printf("max |decode - recompute| over all %lld tokens = %.2e: %s\n", static_cast<long long>(kTotal), max_diff,
              ok ? "decode == recompute" : "MISMATCH");
  return ok ? 0 : 1;
}
