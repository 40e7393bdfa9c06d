// RoPE over a fused QKV buffer on an engine's own thread pool: each worker rotates its share of the tokens
// (q and k of a [tokens, (Hq + 2 Hkv) * D] buffer, GQA) with posenc::apply_rope_qk on sub-views and the
// matching slice of the positions, so cos/sin come from one shared cache and nothing is copied. posenc starts
// no threads; the split is the engine's. The result equals the single call bit for bit.
//
// Usage: thread_pool_rope [threads]   (default: 4)
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include <posenc/posenc.hpp>

namespace {

/// A minimal persistent pool: run(n, fn) calls fn(0 .. n-1) across the workers and waits.
class thread_pool {
 public:
  explicit thread_pool(int workers) {
    for (int w = 0; w < workers; ++w) threads_.emplace_back([this] { loop(); });
  }
  ~thread_pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }
  void run(int tasks, const std::function<void(int)>& fn) {
    std::unique_lock<std::mutex> lock(mu_);
    fn_ = &fn;
    next_ = 0;
    tasks_ = tasks;
    pending_ = tasks;
    ++generation_;
    wake_.notify_all();
    done_.wait(lock, [this] { return pending_ == 0; });
    fn_ = nullptr;
  }

 private:
  void loop() {
    std::uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || (generation_ != seen && next_ < tasks_); });
      if (stop_) return;
      while (next_ < tasks_) {
        const int task = next_++;
        const auto* fn = fn_;
        lock.unlock();
        (*fn)(task);
        lock.lock();
        if (--pending_ == 0) done_.notify_one();
      }
      seen = generation_;
    }
  }
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  const std::function<void(int)>* fn_ = nullptr;
  int next_ = 0, tasks_ = 0, pending_ = 0;
  std::uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 4;
  if (threads < 1) {
    std::fprintf(stderr, "thread_pool_rope: threads must be >= 1\n");
    return 2;
  }
  using posenc::index_t;
  // Two sequences of a continuous batch (per-sequence past lengths), Llama-3-8B-like heads.
  const index_t n = 2, l = 512, hq = 32, hkv = 8, d = 128;
  const index_t row = (hq + 2 * hkv) * d;  // q | k | v of one token
  posenc::rope_config cfg;
  cfg.head_dim = d;
  cfg.base = 500000.0;
  cfg.scaling = posenc::rope_scaling::llama3(8.0, 1.0, 4.0, 8192);
  const posenc::rope_cache<float> cache(posenc::make_rope_plan(cfg), 8192);
  const std::int64_t past[n] = {1000, 37};
  const auto pos = posenc::positions::per_sequence(past, n);

  std::vector<float> qkv(static_cast<std::size_t>(n * l * row));
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& v : qkv) v = u(gen);
  std::vector<float> reference = qkv;

  const auto views = [&](float* base) {
    return std::make_pair(posenc::strided_view<float, 4>(base, {n, l, hq, d}, {l * row, row, d, 1}),
                          posenc::strided_view<float, 4>(base + hq * d, {n, l, hkv, d}, {l * row, row, d, 1}));
  };
  // The single call.
  const auto [q_ref, k_ref] = views(reference.data());
  posenc::apply_rope_qk(cache, q_ref, k_ref, pos);

  // The pool: task t takes tokens [l0, l1) of every sequence.
  thread_pool pool(threads);
  const auto qk = views(qkv.data());
  const auto& q = qk.first;
  const auto& k = qk.second;
  const int tasks = threads;
  const auto t0 = std::chrono::steady_clock::now();
  pool.run(tasks, [&](int t) {
    const index_t l0 = l * t / tasks, l1 = l * (t + 1) / tasks;
    posenc::apply_rope_qk(cache, q.slice(1, l0, l1 - l0), k.slice(1, l0, l1 - l0), pos.slice(0, n, l0, l1 - l0));
  });
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();

  const bool same = std::memcmp(qkv.data(), reference.data(), qkv.size() * sizeof(float)) == 0;
  std::printf("posenc %s, kernels: %s\n", POSENC_VERSION_STRING, posenc::isa_name(posenc::active_isa()));
  std::printf("fused QKV [%lld, %lld, (%lld + 2 x %lld) x %lld], per-sequence positions {%lld, %lld}\n",
              static_cast<long long>(n), static_cast<long long>(l), static_cast<long long>(hq),
              static_cast<long long>(hkv), static_cast<long long>(d), static_cast<long long>(past[0]),
              static_cast<long long>(past[1]));
  std::printf("%d threads, %d token ranges: %.1f us\n", threads, tasks, us);
  std::printf("%s\n", same ? "threaded == single call, bit for bit" : "MISMATCH between threaded and single call");
  return same ? 0 : 1;
}
