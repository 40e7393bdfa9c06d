// Continuous batching with RoPE: three sequences of different lengths share one batch. The prompts are
// packed into one ragged row with an explicit position per token (positions::per_token), then every decode
// step rotates one new token per sequence at that sequence's own length (positions::per_sequence). Each
// sequence's rotated keys must equal what a single-sequence run would give: that is what is checked.
//
// Build and run: bash scripts/run_examples.sh
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <posenc/posenc.hpp>

namespace {

constexpr posenc::index_t kHeads = 2;  // KV heads
constexpr posenc::index_t kDim = 8;    // head dim
constexpr posenc::index_t kRow = kHeads * kDim;

std::vector<float> random_rows(posenc::index_t tokens, std::mt19937& gen) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(tokens * kRow));
  for (float& x : v) x = nd(gen);
  return v;
}

}  // namespace

int main() {
  posenc::rope_config cfg;  // Qwen2-style: half-split, base 1e6
  cfg.head_dim = kDim;
  cfg.base = 1000000.0;
  const posenc::rope_plan plan = posenc::make_rope_plan(cfg);
  std::mt19937 gen(7);

  const std::vector<posenc::index_t> prompt_len{5, 2, 7};
  const posenc::index_t steps = 3;
  const auto seqs = static_cast<posenc::index_t>(prompt_len.size());

  // Un-rotated keys of every token of every sequence (prompt, then the decoded ones).
  std::vector<std::vector<float>> raw;
  for (posenc::index_t s = 0; s < seqs; ++s) raw.push_back(random_rows(prompt_len[static_cast<std::size_t>(s)] + steps, gen));

  // Prefill: all prompts packed into one row of 14 tokens; position ids restart for each sequence.
  std::vector<float> packed;
  std::vector<std::int64_t> ids;
  for (posenc::index_t s = 0; s < seqs; ++s) {
    const auto len = prompt_len[static_cast<std::size_t>(s)];
    packed.insert(packed.end(), raw[static_cast<std::size_t>(s)].begin(), raw[static_cast<std::size_t>(s)].begin() + len * kRow);
    for (posenc::index_t p = 0; p < len; ++p) ids.push_back(p);
  }
  const auto total = static_cast<posenc::index_t>(ids.size());
  posenc::apply_rope(plan, posenc::strided_view<float, 4>(packed.data(), {1, total, kHeads, kDim}),
                     posenc::positions::per_token(ids.data(), 1, total));
  std::vector<std::vector<float>> cache(static_cast<std::size_t>(seqs));
  for (posenc::index_t s = 0, at = 0; s < seqs; ++s) {
    const auto len = prompt_len[static_cast<std::size_t>(s)];
    cache[static_cast<std::size_t>(s)].assign(packed.begin() + at * kRow, packed.begin() + (at + len) * kRow);
    at += len;
  }
  std::printf("prefill: %lld tokens of %lld sequences packed in one row, position ids:", static_cast<long long>(total),
              static_cast<long long>(seqs));
  for (auto p : ids) std::printf(" %lld", static_cast<long long>(p));
  std::printf("\n");

  // Decode: one new token per sequence per step, batch N = 3, L = 1, position = that sequence's length.
  for (posenc::index_t t = 0; t < steps; ++t) {
    std::vector<float> step;
    std::vector<std::int64_t> past;
    for (posenc::index_t s = 0; s < seqs; ++s) {
      const auto len = prompt_len[static_cast<std::size_t>(s)] + t;
      const auto& r = raw[static_cast<std::size_t>(s)];
      step.insert(step.end(), r.begin() + len * kRow, r.begin() + (len + 1) * kRow);
      past.push_back(len);
    }
    posenc::apply_rope(plan, posenc::strided_view<float, 4>(step.data(), {seqs, 1, kHeads, kDim}),
                       posenc::positions::per_sequence(past.data(), seqs));
    for (posenc::index_t s = 0; s < seqs; ++s)
      cache[static_cast<std::size_t>(s)].insert(cache[static_cast<std::size_t>(s)].end(), step.begin() + s * kRow,
                                                step.begin() + (s + 1) * kRow);
    std::printf("decode step %lld: positions %lld %lld %lld\n", static_cast<long long>(t), static_cast<long long>(past[0]),
                static_cast<long long>(past[1]), static_cast<long long>(past[2]));
  }

  // Check: each sequence alone, rotated in one call at positions 0 .. len-1.
  double max_diff = 0.0;
  for (posenc::index_t s = 0; s < seqs; ++s) {
    std::vector<float> alone = raw[static_cast<std::size_t>(s)];
    const auto len = static_cast<posenc::index_t>(alone.size()) / kRow;
    posenc::apply_rope(plan, posenc::strided_view<float, 4>(alone.data(), {1, len, kHeads, kDim}), posenc::positions::offset(0));
    double d = 0.0;
    for (std::size_t i = 0; i < alone.size(); ++i)
      d = std::max(d, static_cast<double>(std::fabs(alone[i] - cache[static_cast<std::size_t>(s)][i])));
    std::printf("sequence %lld: %lld cached keys, max |batched - alone| = %.2e\n", static_cast<long long>(s),
                static_cast<long long>(len), d);
    max_diff = std::max(max_diff, d);
  }
  const bool ok = max_diff == 0.0;
  std::printf("%s\n", ok ? "batched == alone" : "MISMATCH");
  return ok ? 0 : 1;
}
