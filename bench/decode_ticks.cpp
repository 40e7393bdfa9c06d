// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// Where a one-token decode call's time goes (issue 20, bench/README.md "What limits each miss"): min and median
// of the whole public call, of the kernel alone (the detail:: driver the call reaches after its checks) and of
// the plain loop (plain.hpp), calls interleaved so that all see the same machine state. The data stay in L1/L2 (no stream between calls): this isolates per-call costs, which
// Google Benchmark's paired batches (rope_bench.cpp) mix with cache refills. Units: TSC ticks on x86-64,
// steady_clock nanoseconds elsewhere.
//   ./build-bench/bench/posenc_decode_ticks [rounds]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "baseline.hpp"
#include "plain.hpp"
#include "posenc/kv_cache.hpp"
#include "posenc/posenc.hpp"

#if defined(__x86_64__) || defined(_M_X64)
#include <x86intrin.h>
#define POSENC_TICKS_UNIT "TSC ticks"
static std::uint64_t now() { return __rdtsc(); }
#else
#define POSENC_TICKS_UNIT "ns"
static std::uint64_t now() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}
#endif

namespace {

using index_t = posenc::index_t;
namespace dt = posenc::detail;
namespace plain = posenc_bench::plain;

struct timer {
  explicit timer(const char* n) : name(n) {}
  const char* name;
  std::vector<std::uint64_t> times;
  template <class F>
  void run(F&& f) {
    const std::uint64_t t0 = now();
    f();
    const std::uint64_t t1 = now();
    times.push_back(t1 - t0);
  }
  /// The q-quantile of the times (0: the minimum).
  std::uint64_t quantile(double q) {
    const auto k = static_cast<std::size_t>(q * static_cast<double>(times.size() - 1));
    std::nth_element(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(k), times.end());
    return times[k];
  }
};

}  // namespace

int main(int argc, char** argv) {
  const long rounds = argc > 1 ? std::atol(argv[1]) : 200000;
  const index_t hq = 32, hk = 8, d = 128, row = (hq + 2 * hk) * d, blocks = 64, bs = 16, p0 = 4000;
  posenc::rope_config cfg;
  cfg.head_dim = d;
  cfg.base = 500000.0;
  const posenc::rope_cache<float> cache(posenc::make_rope_plan(cfg), 8192);
  posenc_bench::buffer<float> qkv(static_cast<std::size_t>(row), 0.5f);
  posenc_bench::buffer<plain::f16> kc(static_cast<std::size_t>(blocks * bs * hk * d)), vc(kc.size());
  const std::int64_t slot[1] = {37 * bs + 5};
  const posenc::strided_view<float, 4> q(qkv.data(), {1, 1, hq, d}, {row, row, d, 1});
  const posenc::strided_view<const float, 4> k(qkv.data() + hq * d, {1, 1, hk, d}, {row, row, d, 1});
  const posenc::strided_view<const float, 4> v(qkv.data() + (hq + hk) * d, {1, 1, hk, d}, {row, row, d, 1});
  // The caches as posenc's canonical fp16 storage (the plain loop's f16 is the same bits).
  const posenc::strided_view<dt::f16_storage, 4> kcv(reinterpret_cast<dt::f16_storage*>(kc.data()), {blocks, bs, hk, d});
  const posenc::strided_view<dt::f16_storage, 4> vcv(reinterpret_cast<dt::f16_storage*>(vc.data()), {blocks, bs, hk, d});
  const auto pos = posenc::positions::offset(p0);
  const auto slots = posenc::kv_slots::paged(slot, 1, 1);
  const float* cos = cache.cos_data();
  const float* sin = cache.sin_data();

  timer q_call{"apply_rope q [1,1,32,128] fp32 in place: whole call"};
  timer q_kernel{"  kernel only (rope_rows after the checks)"};
  timer q_plain{"  plain loop"};
  timer a_call{"rope_qk_append_kv 32 q + 8 kv heads into fp16 paged caches: whole call"};
  timer a_kernel{"  kernel only (run_append after the checks)"};
  timer a_plain{"  plain loop"};
  timer kv_call{"rope_append_kv 8 kv heads into fp16 paged caches: whole call"};
  timer kv_kernel{"  kernel only (run_append after the checks)"};
  timer kv_plain{"  plain loop"};
  const auto tq = dt::make_target(q, q);
  auto tk = dt::make_cache_target(k, kcv);
  auto tv = dt::make_cache_target(v, vcv);
  tk.map = tv.map = dt::token_map::paged(slot, 1, bs);
  for (long r = 0; r < rounds; ++r) {
    q_call.run([&] { posenc::apply_rope(cache, q, pos); });
    q_kernel.run([&] { dt::run_rope(cache, pos, 1.0, std::array<dt::rope_io<float, float>, 1>{tq}); });
    q_plain.run([&] { plain::rope_half_split(qkv.data(), 1, hq, d, row, cos, sin, p0); });
    a_call.run([&] { posenc::rope_qk_append_kv(cache, q, k, v, kcv, vcv, pos, slots); });
    a_kernel.run([&] { dt::run_append(cache, &tq, tk, tv, pos); });
    a_plain.run([&] {
      plain::rope_half_split(qkv.data(), 1, hq, d, row, cos, sin, p0);
      plain::rope_append_kv(qkv.data() + hq * d, qkv.data() + (hq + hk) * d, 1, hk, d, row, kc.data(), vc.data(), slot, cos,
                            sin, p0);
    });
    kv_call.run([&] { posenc::rope_append_kv(cache, k, v, kcv, vcv, pos, slots); });
    kv_kernel.run([&] { dt::run_append(cache, static_cast<const dt::rope_io<float, float>*>(nullptr), tk, tv, pos); });
    kv_plain.run([&] {
      plain::rope_append_kv(qkv.data() + hq * d, qkv.data() + (hq + hk) * d, 1, hk, d, row, kc.data(), vc.data(), slot, cos,
                            sin, p0);
    });
  }
  std::printf("%ld interleaved rounds, %s, on %s%*s %8s %8s\n", rounds, POSENC_TICKS_UNIT, posenc::isa_name(posenc::active_isa()),
              30, "", "min", "median");
  for (timer* t : {&q_call, &q_kernel, &q_plain, &a_call, &a_kernel, &a_plain, &kv_call, &kv_kernel, &kv_plain})
    std::printf("%-78s %8llu %8llu\n", t->name, static_cast<unsigned long long>(t->quantile(0.0)),
                static_cast<unsigned long long>(t->quantile(0.5)));
  return 0;
}
