// A decoder attention step on the GPU with a KV cache, for two model variants: a RoPE model (positions rotated
// into q and k by posenc::cuda::apply_rope_qk) and an ALiBi model (no position in q or k; each head adds
// slope_h * (j - i) to its scores through posenc::cuda::add_alibi_bias). Both prefill a prompt, then decode
// one token at a time, and the example checks that every output equals a recomputation of the whole sequence
// at once. Grouped-query attention: 4 query heads share 2 key/value heads.
//
// What posenc does here: the rotation (RoPE) and the bias with its causal mask (ALiBi). The attention itself
// (q.K^T, softmax, weights.V) is three deliberately naive kernels below: one thread per output, no tiling.
//
// Build and run: cmake -DPOSENC_ENABLE_CUDA=ON -DPOSENC_BUILD_EXAMPLES=ON ..., then the cuda_attention_step
// target. Without a CUDA device it prints why and returns 77 (CTest: skipped).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <posenc/alibi_config.hpp>
#include <posenc/cuda/alibi.cuh>
#include <posenc/cuda/rope.cuh>
#include <posenc/positions.hpp>
#include <posenc/rope_plan.hpp>
#include <posenc/tensor_view.hpp>

namespace {

constexpr int kQHeads = 4;                  // query heads
constexpr int kKvHeads = 2;                 // key/value heads (GQA: query head h reads kv head h / 2)
constexpr int kDim = 16;                    // head dim
constexpr int kPrompt = 5;                  // prefill tokens
constexpr int kDecode = 4;                  // decoded tokens
constexpr int kTotal = kPrompt + kDecode;   // the KV cache's capacity
constexpr int kQRow = kQHeads * kDim;       // floats per token of q and of the output
constexpr int kKvRow = kKvHeads * kDim;     // floats per token of k and v

enum class model { rope, alibi };

/// A failed CUDA call throws, as posenc's launchers do (device_error); main reports it.
void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + " failed: " + cudaGetErrorString(e));
}

/// n floats of device memory, freed on scope exit.
struct device_floats {
  float* p = nullptr;
  explicit device_floats(int n) { check(cudaMalloc(&p, static_cast<std::size_t>(n) * sizeof(float)), "cudaMalloc"); }
  device_floats(const device_floats&) = delete;
  device_floats& operator=(const device_floats&) = delete;
  ~device_floats() { cudaFree(p); }
};

void copy_rows(float* dst, const float* src, int rows, int row_floats) {
  check(cudaMemcpy(dst, src, static_cast<std::size_t>(rows * row_floats) * sizeof(float), cudaMemcpyDeviceToDevice),
        "cudaMemcpy");
}

/// scores[h, i, j] = q[i, h] . k[j, h / group] / sqrt(D) over lq queries and lk keys. With `causal`, keys after
/// query i (which sits at position q0 + i) get -infinity; the ALiBi model leaves that to its bias instead.
__global__ void scores_kernel(const float* q, const float* k, float* scores, int lq, int lk, int q0, bool causal) {
  const int j = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x), i = static_cast<int>(blockIdx.y);
  const int h = static_cast<int>(blockIdx.z);
  if (j >= lk) return;
  const float* qi = q + i * kQRow + h * kDim;
  const float* kj = k + j * kKvRow + h / (kQHeads / kKvHeads) * kDim;
  float s = 0.0f;
  for (int d = 0; d < kDim; ++d) s = fmaf(qi[d], kj[d], s);
  const bool masked = causal && j > q0 + i;
  scores[(h * lq + i) * lk + j] = masked ? -INFINITY : s * rsqrtf(static_cast<float>(kDim));
}

/// Softmax in place over each row of lk scores; one thread per (head, query) row. -infinity weighs 0.
__global__ void softmax_kernel(float* scores, int rows, int lk) {
  const int r = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (r >= rows) return;
  float* s = scores + r * lk;
  float mx = -INFINITY, z = 0.0f;
  for (int j = 0; j < lk; ++j) mx = fmaxf(mx, s[j]);
  for (int j = 0; j < lk; ++j) z += (s[j] = expf(s[j] - mx));
  for (int j = 0; j < lk; ++j) s[j] /= z;
}

/// out[i, h, d] = sum_j weights[h, i, j] v[j, h / group, d]; a block per query, a thread per (head, feature).
__global__ void weighted_v_kernel(const float* weights, const float* v, float* out, int lq, int lk) {
  const int i = static_cast<int>(blockIdx.x), h = static_cast<int>(threadIdx.x) / kDim;
  const int d = static_cast<int>(threadIdx.x) % kDim;
  float acc = 0.0f;
  for (int j = 0; j < lk; ++j)
    acc = fmaf(weights[(h * lq + i) * lk + j], v[j * kKvRow + h / (kQHeads / kKvHeads) * kDim + d], acc);
  out[i * kQRow + h * kDim + d] = acc;
}

/// Attention of lq queries (rows [lq, kQHeads, kDim], at positions q0 .. q0 + lq - 1) over the first lk rows of
/// k and v ([lk, kKvHeads, kDim]), into out [lq, kQHeads, kDim]. `scores` holds kQHeads * lq * lk floats.
void attend(model m, const posenc::alibi_config& alibi, const float* q, const float* k, const float* v, int lq,
            int lk, int q0, float* scores, float* out) {
  scores_kernel<<<dim3((lk + 31) / 32, lq, kQHeads), 32>>>(q, k, scores, lq, lk, q0, m == model::rope);
  if (m == model::alibi) {
    // The bias needs only where the queries sit (positions::offset(q0)); the keys are 0 .. lk - 1. The causal
    // mask rides along with the bias, so the scores kernel above did not mask.
    const posenc::strided_view<float, 4> view(scores, {1, kQHeads, lq, lk});
    posenc::cuda::add_alibi_bias(alibi, view, posenc::positions::offset(q0), posenc::alibi_mask::causal);
  }
  const int rows = kQHeads * lq;
  softmax_kernel<<<(rows + 63) / 64, 64>>>(scores, rows, lk);
  weighted_v_kernel<<<lq, kQRow>>>(scores, v, out, lq, lk);
  check(cudaGetLastError(), "kernel launch");
}

/// (1, tokens, heads, kDim): the shape posenc's launchers take (N, L, H, D).
posenc::strided_view<float, 4> tokens_view(float* p, int tokens, int heads) {
  return posenc::strided_view<float, 4>(p, {1, tokens, heads, kDim});
}

/// Runs one model both ways on the same projections (device rows [kTotal, heads, kDim]); returns the largest
/// |decode - recompute| over every token, head and feature. `freq` is used by the RoPE model, `alibi` by the
/// ALiBi model.
double run(model m, const posenc::cuda::rope_frequencies& freq, const posenc::alibi_config& alibi, const float* q_all,
           const float* k_all, const float* v_all) {
  device_floats scores(kQHeads * kTotal * kTotal), reference(kTotal * kQRow), decoded(kTotal * kQRow);

  // Recompute: the whole sequence at once, positions 0 .. T-1, a causal [T, T] attention.
  device_floats q(kTotal * kQRow), k(kTotal * kKvRow);
  copy_rows(q.p, q_all, kTotal, kQRow);
  copy_rows(k.p, k_all, kTotal, kKvRow);
  if (m == model::rope)
    posenc::cuda::apply_rope_qk(freq, tokens_view(q.p, kTotal, kQHeads), tokens_view(k.p, kTotal, kKvHeads),
                                posenc::positions::offset(0));
  attend(m, alibi, q.p, k.p, v_all, kTotal, kTotal, 0, scores.p, reference.p);

  // Cached: a step's new tokens have their k and v written straight into their cache rows (where a fused QKV
  // projection would put them), and k is rotated there, once, at its own position; later steps read it as is.
  device_floats k_cache(kTotal * kKvRow), v_cache(kTotal * kKvRow), q_step(kTotal * kQRow);
  const auto step = [&](int len, int n) {  // n new tokens after a cache of len: positions len .. len + n - 1
    copy_rows(q_step.p, q_all + len * kQRow, n, kQRow);
    copy_rows(k_cache.p + len * kKvRow, k_all + len * kKvRow, n, kKvRow);
    copy_rows(v_cache.p + len * kKvRow, v_all + len * kKvRow, n, kKvRow);
    // q and the new k rows in one launch (different head counts: GQA), at the cache length: offset(len).
    if (m == model::rope)
      posenc::cuda::apply_rope_qk(freq, tokens_view(q_step.p, n, kQHeads),
                                  tokens_view(k_cache.p + len * kKvRow, n, kKvHeads), posenc::positions::offset(len));
    attend(m, alibi, q_step.p, k_cache.p, v_cache.p, n, len + n, len, scores.p, decoded.p + len * kQRow);
  };
  step(0, kPrompt);                                            // prefill: the prompt at positions 0 .. P-1
  for (int len = kPrompt; len < kTotal; ++len) step(len, 1);  // decode: one token at a time

  std::vector<float> want(kTotal * kQRow), got(want.size());
  check(cudaMemcpy(want.data(), reference.p, want.size() * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
  check(cudaMemcpy(got.data(), decoded.p, got.size() * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
  double max_diff = 0.0;
  for (std::size_t e = 0; e < want.size(); ++e)
    max_diff = std::max(max_diff, std::fabs(static_cast<double>(got[e]) - static_cast<double>(want[e])));
  std::printf("%-5s model: prefill %d tokens, decode %d, %d q heads over %d kv heads, head dim %d; "
              "last token head 0 out[0..2] = % .6f % .6f % .6f; max |decode - recompute| = %.2e\n",
              m == model::rope ? "RoPE" : "ALiBi", kPrompt, kDecode, kQHeads, kKvHeads, kDim,
              static_cast<double>(got[(kTotal - 1) * kQRow]), static_cast<double>(got[(kTotal - 1) * kQRow + 1]),
              static_cast<double>(got[(kTotal - 1) * kQRow + 2]), max_diff);
  return max_diff;
}

}  // namespace

int main() {
  int devices = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&devices); e != cudaSuccess || devices == 0) {
    std::printf("cuda_attention_step: no CUDA device (%s): skipped\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "cudaGetDeviceCount found 0 devices");
    return 77;
  }
  try {
    // The un-rotated projections of every token, what the model would produce, in device memory.
    std::mt19937 gen(42);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> hq(kTotal * kQRow), hk(kTotal * kKvRow), hv(kTotal * kKvRow);
    for (auto* h : {&hq, &hk, &hv})
      for (float& x : *h) x = nd(gen);
    device_floats q(kTotal * kQRow), k(kTotal * kKvRow), v(kTotal * kKvRow);
    check(cudaMemcpy(q.p, hq.data(), hq.size() * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
    check(cudaMemcpy(k.p, hk.data(), hk.size() * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
    check(cudaMemcpy(v.p, hv.data(), hv.size() * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");

    // The two models' position encodings. RoPE: Llama 3's base on a 16-dim head, half-split pairs;
    // rope_frequencies forms the angles on the device in double, at any position (no table to outgrow as the
    // sequence grows). ALiBi: one slope per query head, 2^-2, 2^-4, 2^-6, 2^-8 (max_bias 8, as BLOOM and MPT).
    posenc::rope_config cfg;
    cfg.head_dim = kDim;
    cfg.base = 500000.0;
    const posenc::cuda::rope_frequencies freq(posenc::make_rope_plan(cfg));
    posenc::alibi_config alibi;
    alibi.num_heads = kQHeads;

    const double rope_diff = run(model::rope, freq, alibi, q.p, k.p, v.p);
    const double alibi_diff = run(model::alibi, freq, alibi, q.p, k.p, v.p);
    const double diff = std::max(rope_diff, alibi_diff);
    const bool ok = diff <= 1e-5;
    std::printf("max |decode - recompute| over both models = %.2e: %s\n", diff, ok ? "decode == recompute" : "MISMATCH");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {  // posenc::argument_error, posenc::device_error, or check() above
    std::fprintf(stderr, "cuda_attention_step: %s\n", e.what());
    return 1;
  }
}
