// The device side of the CUDA tests (see rope_runner.hpp): copies, launches through posenc/cuda/rope.cuh, and
// copies back. Also the translation unit tests/cuda/resource_check.cmake compiles with `ptxas -v`: it
// instantiates every RoPE kernel (four storage types, both sources).
#include "rope_runner.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include <posenc/cuda/alibi.cuh>
#include <posenc/cuda/rope.cuh>
#include <posenc/cuda/learned.cuh>
#include <posenc/cuda/mrope.cuh>
#include <posenc/cuda/t5_bias.cuh>
#include <posenc/cuda/rope_ops.cuh>
#include <posenc/cuda/sinusoidal.cuh>
#include <posenc/cuda/xpos.cuh>

namespace posenc_cuda_test {
namespace {

using posenc::index_t;

posenc::status cuda_fail(const char* what, cudaError_t e) {
  return posenc::status(posenc::errc::device_error, std::string("rope_runner: ") + what + ": " + cudaGetErrorString(e));
}

/// Device memory freed on scope exit.
struct dev {
  void* p = nullptr;
  ~dev() {
    if (p) cudaFree(p);
  }
};

posenc::status alloc(dev& d, std::size_t bytes) {
  if (cudaError_t e = cudaMalloc(&d.p, bytes); e != cudaSuccess) return cuda_fail("cudaMalloc", e);
  return {};
}
posenc::status to_device(const dev& d, const void* src, std::size_t bytes) {
  if (cudaError_t e = cudaMemcpy(d.p, src, bytes, cudaMemcpyHostToDevice); e != cudaSuccess) return cuda_fail("cudaMemcpy", e);
  return {};
}
/// Allocates `bytes` (one more, so that an empty tensor has an address) and copies `src` there.
posenc::status upload(dev& d, const void* src, std::size_t bytes) {
  POSENC_TRY(alloc(d, bytes + 1));
  return to_device(d, src, bytes);
}
/// Waits for the launches (a failed kernel shows here) and copies the result back.
posenc::status download(void* out, const dev& d, std::size_t bytes) {
  if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) return cuda_fail("kernel", e);
  if (cudaError_t e = cudaMemcpy(out, d.p, bytes, cudaMemcpyDeviceToHost); e != cudaSuccess) return cuda_fail("cudaMemcpy", e);
  return {};
}

/// The same positions over a device copy of their array.
posenc::status device_positions(const posenc::positions& h, dev& buf, posenc::positions& out) {
  using form = posenc::positions::form;
  if (h.kind() == form::offset) {
    out = h;
    return {};
  }
  const index_t n = h.kind() == form::per_sequence ? h.count() : (h.count() - 1) * h.row_stride() + h.length();
  const bool wide = h.ids64() != nullptr;
  const std::size_t bytes = static_cast<std::size_t>(n > 0 ? n : 0) * (wide ? 8 : 4);
  if (bytes > 0) {
    const void* src = wide ? static_cast<const void*>(h.ids64()) : static_cast<const void*>(h.ids32());
    POSENC_TRY(upload(buf, src, bytes));
  }
  if (h.kind() == form::per_sequence) {
    out = wide ? posenc::positions::per_sequence(static_cast<const std::int64_t*>(buf.p), h.count())
               : posenc::positions::per_sequence(static_cast<const std::int32_t*>(buf.p), h.count());
  } else {
    out = wide ? posenc::positions::per_token(static_cast<const std::int64_t*>(buf.p), h.count(), h.length(), h.row_stride())
               : posenc::positions::per_token(static_cast<const std::int32_t*>(buf.p), h.count(), h.length(), h.row_stride());
  }
  return {};
}

template <class T>
posenc::status run_typed(const rope_job& job) {
  const auto& s = job.shape;
  const std::size_t bytes = static_cast<std::size_t>(s[0] * s[1] * s[2] * s[3]) * sizeof(T);
  dev x, y, pos_buf;
  POSENC_TRY(upload(x, job.x, bytes));
  if (!job.in_place) {
    POSENC_TRY(alloc(y, bytes + 1));
    if (cudaError_t e = cudaMemset(y.p, 0, bytes); e != cudaSuccess) return cuda_fail("cudaMemset", e);
  }
  posenc::positions pos;
  POSENC_TRY(device_positions(job.pos, pos_buf, pos));
  posenc::cuda::rope_frequencies freq;
  POSENC_TRY(posenc::cuda::rope_frequencies::try_create(*job.plan, freq));
  posenc::cuda::rope_table<float> table;
  if (job.table) POSENC_TRY(posenc::cuda::rope_table<float>::try_create(freq, job.table_rows, nullptr, table));
  const posenc::strided_view<T, 4> vx(static_cast<T*>(x.p), s);
  const posenc::strided_view<T, 4> vy(static_cast<T*>(y.p), s);
  auto apply = [&](const auto& f) -> posenc::status {
    if (job.backward) return posenc::cuda::try_apply_rope_backward(f, vx, pos);
    if (job.in_place) return posenc::cuda::try_apply_rope(f, vx, pos);
    return posenc::cuda::try_apply_rope(f, posenc::strided_view<const T, 4>(vx), vy, pos);
  };
  POSENC_TRY(job.table ? apply(table) : apply(freq));
  return download(job.y, job.in_place || job.backward ? x : y, bytes);
}

template <class T>
posenc::status run_alibi_typed(const posenc::alibi_config& cfg, index_t heads, index_t lq, index_t lk,
                               const posenc::positions& host_pos, bool add, void* inout, posenc::alibi_mask mask) {
  const std::size_t bytes = static_cast<std::size_t>(heads * lq * lk) * sizeof(T);
  dev s, pos_buf;
  POSENC_TRY(upload(s, inout, bytes));
  posenc::positions pos;
  POSENC_TRY(device_positions(host_pos, pos_buf, pos));
  T* p = static_cast<T*>(s.p);
  if (add) {
    POSENC_TRY(posenc::cuda::try_add_alibi_bias(cfg, posenc::strided_view<T, 4>(p, {1, heads, lq, lk}), pos, mask));
  } else {
    POSENC_TRY(posenc::cuda::try_alibi_bias(cfg, posenc::strided_view<T, 3>(p, {heads, lq, lk}), pos, mask));
  }
  return download(inout, s, bytes);
}

template <class T>
posenc::status run_xpos_typed(const posenc::xpos_plan& plan, const std::array<index_t, 4>& s, const void* x, void* y,
                              index_t offset, index_t center, posenc::xpos_mode mode) {
  const std::size_t bytes = static_cast<std::size_t>(s[0] * s[1] * s[2] * s[3]) * sizeof(T);
  dev d;
  POSENC_TRY(upload(d, x, bytes));
  posenc::cuda::xpos_frequencies f;
  POSENC_TRY(posenc::cuda::xpos_frequencies::try_create(plan, f));
  POSENC_TRY(posenc::cuda::try_apply_xpos(f, posenc::strided_view<T, 4>(static_cast<T*>(d.p), s),
                                          posenc::positions::offset(offset), center, mode));
  return download(y, d, bytes);
}

template <class T>
posenc::status run_sinusoidal_typed(const posenc::sinusoidal_config& cfg, const std::array<index_t, 3>& s, const void* x,
                                    void* out, index_t offset, const std::int64_t* ids, bool in_place) {
  const std::size_t bytes = static_cast<std::size_t>(s[0] * s[1] * s[2]) * sizeof(T);
  dev dx, dy, dpos;
  POSENC_TRY(alloc(dy, bytes + 1));
  if (x == nullptr) {
    POSENC_TRY(posenc::cuda::try_sinusoidal_table(cfg, posenc::strided_view<T, 2>(static_cast<T*>(dy.p), {s[1], s[2]}), offset));
  } else {
    const std::size_t pbytes = static_cast<std::size_t>(s[0] * s[1]) * sizeof(std::int64_t);
    POSENC_TRY(upload(dpos, ids, pbytes));
    POSENC_TRY(to_device(dy, x, bytes));
    const auto pos = posenc::positions::per_token(static_cast<const std::int64_t*>(dpos.p), s[0], s[1]);
    const posenc::strided_view<T, 3> vy(static_cast<T*>(dy.p), s);
    if (in_place) {
      POSENC_TRY(posenc::cuda::try_add_sinusoidal(cfg, posenc::strided_view<const T, 3>(vy), vy, pos));
    } else {
      POSENC_TRY(upload(dx, x, bytes));
      POSENC_TRY(posenc::cuda::try_add_sinusoidal(cfg, posenc::strided_view<const T, 3>(static_cast<const T*>(dx.p), s), vy, pos));
    }
  }
  return download(out, dy, bytes);
}

template <class T>
posenc::status run_t5_typed(const posenc::t5_bucket_config& cfg, const float* table, index_t heads, index_t lq,
                            index_t lk, index_t query_offset, bool add, void* inout) {
  const std::size_t bytes = static_cast<std::size_t>(heads * lq * lk) * sizeof(T);
  const std::size_t tbytes = static_cast<std::size_t>(cfg.num_buckets * heads) * sizeof(float);
  dev d, t;
  POSENC_TRY(upload(d, inout, bytes));
  POSENC_TRY(upload(t, table, tbytes));
  const posenc::strided_view<const float, 2> vt(static_cast<const float*>(t.p), {cfg.num_buckets, heads});
  T* p = static_cast<T*>(d.p);
  if (add) {
    POSENC_TRY(posenc::cuda::try_add_t5_bias(vt, cfg, posenc::strided_view<T, 4>(p, {1, heads, lq, lk}),
                                             posenc::positions::offset(query_offset)));
  } else {
    POSENC_TRY(posenc::cuda::try_t5_bias(vt, cfg, posenc::strided_view<T, 3>(p, {heads, lq, lk}), query_offset));
  }
  return download(inout, d, bytes);
}

template <class T>
posenc::status run_mrope_typed(const posenc::mrope_plan& plan, const std::array<index_t, 4>& s, const void* x, void* y,
                               const std::int64_t* ids, bool shared) {
  const std::size_t bytes = static_cast<std::size_t>(s[0] * s[1] * s[2] * s[3]) * sizeof(T);
  const std::size_t pbytes = static_cast<std::size_t>((shared ? 1 : s[0]) * 3 * s[1]) * sizeof(std::int64_t);
  dev dx, dy, dp;
  POSENC_TRY(alloc(dy, bytes + 1));
  POSENC_TRY(upload(dx, x, bytes));
  POSENC_TRY(upload(dp, ids, pbytes));
  const auto* d_ids = static_cast<const std::int64_t*>(dp.p);
  const auto pos = shared ? posenc::mrope_positions::shared(d_ids, s[1]) : posenc::mrope_positions::per_token(d_ids, s[0], s[1]);
  posenc::cuda::mrope_frequencies f;
  POSENC_TRY(posenc::cuda::mrope_frequencies::try_create(plan, f));
  POSENC_TRY(posenc::cuda::try_apply_mrope(f, posenc::strided_view<const T, 4>(static_cast<const T*>(dx.p), s),
                                           posenc::strided_view<T, 4>(static_cast<T*>(dy.p), s), pos));
  return download(y, dy, bytes);
}

template <class T>
posenc::status run_shift_typed(const posenc::rope_plan& plan, const std::array<index_t, 4>& s, const void* x, void* y,
                               const std::int64_t* deltas, index_t delta) {
  const std::size_t bytes = static_cast<std::size_t>(s[0] * s[1] * s[2] * s[3]) * sizeof(T);
  dev dx, dd;
  POSENC_TRY(upload(dx, x, bytes));
  posenc::cuda::rope_frequencies f;
  POSENC_TRY(posenc::cuda::rope_frequencies::try_create(plan, f));
  const posenc::strided_view<T, 4> k(static_cast<T*>(dx.p), s);
  if (deltas != nullptr) {
    POSENC_TRY(upload(dd, deltas, static_cast<std::size_t>(s[0] * s[1]) * sizeof(std::int64_t)));
    POSENC_TRY(posenc::cuda::try_shift_rope(f, k, static_cast<const std::int64_t*>(dd.p), s[0], s[1]));
  } else {
    POSENC_TRY(posenc::cuda::try_shift_rope(f, k, delta));
  }
  return download(y, dx, bytes);
}

template <class T>
posenc::status run_rerotate_typed(const posenc::rope_plan& from, const posenc::rope_plan& to, const std::array<index_t, 4>& s,
                                  const void* x, void* y, const posenc::positions& host_pos) {
  const std::size_t bytes = static_cast<std::size_t>(s[0] * s[1] * s[2] * s[3]) * sizeof(T);
  dev dx, pos_buf;
  POSENC_TRY(upload(dx, x, bytes));
  posenc::positions pos;
  POSENC_TRY(device_positions(host_pos, pos_buf, pos));
  posenc::cuda::rope_frequencies ff, ft;
  POSENC_TRY(posenc::cuda::rope_frequencies::try_create(from, ff));
  POSENC_TRY(posenc::cuda::rope_frequencies::try_create(to, ft));
  const posenc::strided_view<T, 4> k(static_cast<T*>(dx.p), s);
  POSENC_TRY(posenc::cuda::try_apply_rope(ff, k, pos));
  POSENC_TRY(posenc::cuda::try_rerotate_rope(ff, ft, k, pos));
  return download(y, dx, bytes);
}

template <class T>
posenc::status run_learned_typed(const posenc::learned_config& cfg, const double* table, const double* gamma,
                                 const double* beta, const std::array<index_t, 3>& s, const void* x, void* y,
                                 index_t past_length, bool in_place) {
  const std::size_t bytes = static_cast<std::size_t>(s[0] * s[1] * s[2]) * sizeof(T);
  const index_t rows = cfg.max_positions + cfg.position_offset;
  std::vector<float> t(table, table + rows * cfg.dim), g(gamma, gamma + cfg.dim), b(beta, beta + cfg.dim);
  posenc::cuda::learned_table<float> e;
  POSENC_TRY(posenc::cuda::learned_table<float>::try_create(cfg, posenc::strided_view<const float, 2>(t.data(), {rows, cfg.dim}),
                                                          posenc::strided_view<const float, 1>(g.data(), {cfg.dim}),
                                                          posenc::strided_view<const float, 1>(b.data(), {cfg.dim}), e));
  dev dx, dy;
  POSENC_TRY(upload(dx, x, bytes));
  const posenc::strided_view<T, 3> vx(static_cast<T*>(dx.p), s);
  const posenc::positions pos = posenc::positions::offset(past_length);
  if (in_place) {
    POSENC_TRY(posenc::cuda::try_learned_forward(e, vx, pos));
    return download(y, dx, bytes);
  }
  POSENC_TRY(alloc(dy, bytes + 1));
  POSENC_TRY(posenc::cuda::try_learned_forward(e, posenc::strided_view<const T, 3>(vx),
                                               posenc::strided_view<T, 3>(static_cast<T*>(dy.p), s), pos));
  return download(y, dy, bytes);
}

// Instantiated for the resource check, not called by the tests: MRoPE's q+k launch.
[[maybe_unused]] posenc::status mrope_qk_kernel(const posenc::cuda::mrope_frequencies& f, float* q, float* k,
                                                const std::int64_t* ids) {
  return posenc::cuda::try_apply_mrope_qk(f, posenc::strided_view<float, 4>(q, {1, 1, 1, 8}),
                                          posenc::strided_view<float, 4>(k, {1, 1, 1, 8}),
                                          posenc::mrope_positions::shared(ids, 1));
}

// Instantiated for the resource check, not called by the tests: xPos's q+k launch.
[[maybe_unused]] posenc::status xpos_qk_kernel(const posenc::cuda::xpos_frequencies& f, __half* q, __half* k) {
  return posenc::cuda::try_apply_xpos_qk(f, posenc::strided_view<__half, 4>(q, {1, 1, 1, 8}),
                                         posenc::strided_view<__half, 4>(k, {1, 1, 1, 8}), posenc::positions::offset(0), 0);
}

// Instantiated for the resource check, not called by the tests: the explicit-slopes kernel.
[[maybe_unused]] posenc::status alibi_slopes_kernel(const float* slopes, __half* scores) {
  return posenc::cuda::try_add_alibi_bias(posenc::strided_view<const float, 1>(slopes, {2}),
                                          posenc::strided_view<__half, 4>(scores, {1, 2, 1, 1}));
}

/// Calls f with a value of the storage type `type` names.
template <class F>
posenc::status with_dtype(dtype type, F&& f) {
  switch (type) {
    case dtype::f32: return f(float{});
    case dtype::f64: return f(double{});
    case dtype::f16: return f(__half{});
    case dtype::bf16: return f(__nv_bfloat16{});
  }
  return {};
}

}  // namespace

posenc::status run_alibi(const posenc::alibi_config& cfg, dtype type, index_t heads, index_t lq, index_t lk,
                         const posenc::positions& pos, bool add, void* inout, posenc::alibi_mask mask) {
  return with_dtype(type, [&](auto t) { return run_alibi_typed<decltype(t)>(cfg, heads, lq, lk, pos, add, inout, mask); });
}

posenc::status run_xpos(const posenc::xpos_plan& plan, dtype type, const std::array<index_t, 4>& shape, const void* x,
                        void* y, index_t offset, index_t center, posenc::xpos_mode mode) {
  return with_dtype(type, [&](auto t) { return run_xpos_typed<decltype(t)>(plan, shape, x, y, offset, center, mode); });
}

posenc::status run_sinusoidal(const posenc::sinusoidal_config& cfg, dtype type, const std::array<index_t, 3>& shape,
                              const void* x, void* out, index_t offset, const std::int64_t* ids, bool in_place) {
  return with_dtype(type, [&](auto t) { return run_sinusoidal_typed<decltype(t)>(cfg, shape, x, out, offset, ids, in_place); });
}

posenc::status run_t5(const posenc::t5_bucket_config& cfg, const float* table, dtype type, index_t heads, index_t lq,
                      index_t lk, index_t query_offset, bool add, void* inout) {
  return with_dtype(type, [&](auto t) { return run_t5_typed<decltype(t)>(cfg, table, heads, lq, lk, query_offset, add, inout); });
}

posenc::status run_mrope(const posenc::mrope_plan& plan, dtype type, const std::array<index_t, 4>& shape, const void* x,
                         void* y, const std::int64_t* ids, bool shared) {
  return with_dtype(type, [&](auto t) { return run_mrope_typed<decltype(t)>(plan, shape, x, y, ids, shared); });
}

posenc::status run_shift(const posenc::rope_plan& plan, dtype type, const std::array<index_t, 4>& shape, const void* x,
                         void* y, const std::int64_t* deltas, index_t delta) {
  return with_dtype(type, [&](auto t) { return run_shift_typed<decltype(t)>(plan, shape, x, y, deltas, delta); });
}

posenc::status run_rerotate(const posenc::rope_plan& from, const posenc::rope_plan& to, dtype type,
                            const std::array<index_t, 4>& shape, const void* x, void* y, const posenc::positions& pos) {
  return with_dtype(type, [&](auto t) { return run_rerotate_typed<decltype(t)>(from, to, shape, x, y, pos); });
}

posenc::status run_learned(const posenc::learned_config& cfg, const double* table, const double* gamma, const double* beta,
                           dtype type, const std::array<index_t, 3>& shape, const void* x, void* y, index_t past_length,
                           bool in_place) {
  return with_dtype(type, [&](auto t) {
    return run_learned_typed<decltype(t)>(cfg, table, gamma, beta, shape, x, y, past_length, in_place);
  });
}

posenc::status alibi_bias_on_host(const posenc::alibi_config& cfg, float* out, const std::array<index_t, 3>& shape,
                                  index_t query_offset) {
  return posenc::cuda::try_alibi_bias(cfg, posenc::strided_view<float, 3>(out, shape), posenc::positions::offset(query_offset));
}

posenc::status add_sinusoidal_on_host(const posenc::sinusoidal_config& cfg, float* x, const std::array<index_t, 3>& shape,
                                      const posenc::positions& pos) {
  const posenc::strided_view<float, 3> v(x, shape);
  return posenc::cuda::try_add_sinusoidal(cfg, posenc::strided_view<const float, 3>(v), v, pos);
}

namespace {

__global__ void conversion_kernel(unsigned long long* count, unsigned int* first) {
  namespace m = posenc::detail::math;
  const std::uint64_t step = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (1ull << 32); i += step) {
    const auto x = static_cast<std::uint32_t>(i);
    const float f = m::bits_float(x);
    const bool bad[3] = {
        i < (1u << 16) && m::float_bits(m::half_bits_to_float(static_cast<std::uint16_t>(x))) !=
                              m::float_bits(m::half_bits_to_float_soft(static_cast<std::uint16_t>(x))),
        m::float_to_half_bits(f) != m::float_to_half_bits_soft(f), m::float_to_bf16_bits(f) != m::float_to_bf16_bits_soft(f)};
    for (int k = 0; k < 3; ++k) {
      if (bad[k]) {
        atomicAdd(&count[k], 1ull);
        atomicMin(&first[k], x);
      }
    }
  }
}

}  // namespace

posenc::status conversion_mismatches(std::array<unsigned long long, 3>& count, std::array<std::uint32_t, 3>& first) {
  dev c, f;
  const std::array<unsigned long long, 3> zero{};
  const std::array<unsigned int, 3> none{0xffffffffu, 0xffffffffu, 0xffffffffu};
  POSENC_TRY(upload(c, zero.data(), sizeof zero));
  POSENC_TRY(upload(f, none.data(), sizeof none));
  conversion_kernel<<<1024, 256>>>(static_cast<unsigned long long*>(c.p), static_cast<unsigned int*>(f.p));
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return cuda_fail("launch", e);
  POSENC_TRY(download(count.data(), c, sizeof count));
  std::array<unsigned int, 3> fb{};
  POSENC_TRY(download(fb.data(), f, sizeof fb));
  for (int k = 0; k < 3; ++k) first[k] = fb[k];
  return {};
}

bool device_available(std::string& why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    why = std::string("no CUDA device (cudaGetDeviceCount: ") + cudaGetErrorString(e) + ")";
    return false;
  }
  if (count == 0) {
    why = "no CUDA device";
    return false;
  }
  return true;
}

posenc::status run_rope(const rope_job& job) {
  return with_dtype(job.type, [&](auto t) { return run_typed<decltype(t)>(job); });
}

}  // namespace posenc_cuda_test
