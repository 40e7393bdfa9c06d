// Differential libFuzzer target for the RoPE kernels: every input draws a shape (N, L, H, D with padded strides),
// a rotated window and pair style, a plan (every scaling), a position form (offset, per sequence, per token;
// int32 or int64; positions up to 2^53), a storage type (float, double, f16, bf16), the source (cache-free
// plan or a rope_cache) and a direction. It then checks:
//   1. every vector path the CPU has (AVX2, AVX-512, NEON) against the portable scalar path, within a few
//      units in the last place of the storage type;
//   2. backward(forward(x)) = m^2 x (the transpose undoes the rotation; m the plan's magnitude);
//   3. where m = 1, each rotated pair keeps its norm;
//   4. the call split in two token ranges (sub-views with sliced positions) equals the whole call bit for bit.
// A rejected configuration is fine (a status, nothing written); a crash, a sanitizer report or a broken
// property aborts with a message.
//
// Build and run: bash scripts/fuzz.sh rope [seconds]   (clang, -fsanitize=fuzzer,address,undefined; seeds:
// tests/fuzz/corpus_rope/)
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <posenc/dispatch.hpp>
#include <posenc/rope.hpp>
#include <posenc/rope_plan.hpp>

namespace {

using posenc::index_t;
using f16 = posenc::detail::f16_storage;
using bf16 = posenc::detail::bf16_storage;

[[noreturn]] void fail(const char* what, double got, double want, double tol, std::size_t at) {
  std::fprintf(stderr, "rope_diff_fuzz: %s at element %zu: got %.17g, want %.17g (tolerance %.3g)\n", what, at, got,
               want, tol);
  std::abort();
}

template <class T>
double value_of(const T& v) {
  if constexpr (std::is_same_v<T, f16> || std::is_same_v<T, bf16>) {
    std::uint16_t bits;
    std::memcpy(&bits, &v, 2);
    return std::is_same_v<T, f16> ? posenc::detail::math::half_bits_to_float(bits)
                                  : posenc::detail::math::bf16_bits_to_float(bits);
  } else {
    return static_cast<double>(v);
  }
}

template <class T>
T from_double(double x) {
  if constexpr (std::is_same_v<T, f16> || std::is_same_v<T, bf16>) {
    const std::uint16_t bits = std::is_same_v<T, f16> ? posenc::detail::math::float_to_half_bits(static_cast<float>(x))
                                                      : posenc::detail::math::float_to_bf16_bits(static_cast<float>(x));
    T t;
    std::memcpy(&t, &bits, 2);
    return t;
  } else {
    return static_cast<T>(x);
  }
}

/// Relative precision of the storage type (the arithmetic is float for f16/bf16, double for double).
template <class T>
double eps_of() {
  if constexpr (std::is_same_v<T, double>) return 0x1p-52;
  else if constexpr (std::is_same_v<T, float>) return 0x1p-23;
  else if constexpr (std::is_same_v<T, f16>) return 0x1p-10;
  else return 0x1p-7;
}

struct drawn {
  posenc::rope_config cfg;
  index_t seq_len = 0;
  index_t n = 1, l = 1, h = 1, pad_head = 0, pad_token = 0;
  int pos_form = 0;
  bool wide_ids = true;
  bool use_cache = false;
  bool backward = false;
  index_t split = 0;
  std::vector<std::int64_t> ids64;
  std::vector<std::int32_t> ids32;
  index_t start = 0;
  std::vector<double> x;
};

posenc::rope_scaling draw_scaling(FuzzedDataProvider& in, index_t pairs) {
  const auto factor = in.ConsumeFloatingPointInRange<double>(1.0, 64.0);
  const auto orig = in.ConsumeIntegralInRange<index_t>(1, 1 << 20);
  switch (in.ConsumeIntegralInRange<int>(0, 8)) {
    case 0: return {};
    case 1: return posenc::rope_scaling::linear(factor);
    case 2: return posenc::rope_scaling::ntk(factor);
    case 3: return posenc::rope_scaling::dynamic_ntk(factor, orig, in.ConsumeBool() ? posenc::dynamic_ntk_policy::per_length
                                                                                    : posenc::dynamic_ntk_policy::fixed_at_max);
    case 4: return posenc::rope_scaling::yarn(factor, orig, in.ConsumeFloatingPointInRange<double>(1.0, 64.0),
                                              in.ConsumeFloatingPointInRange<double>(0.0, 2.0));
    case 5: return posenc::rope_scaling::deepseek_yarn(factor, orig, in.ConsumeFloatingPointInRange<double>(0.0, 2.0),
                                                       in.ConsumeFloatingPointInRange<double>(0.0, 2.0));
    case 6: {
      const double low = in.ConsumeFloatingPointInRange<double>(0.5, 4.0);
      return posenc::rope_scaling::llama3(factor, low, low + in.ConsumeFloatingPointInRange<double>(0.0, 8.0), orig);
    }
    case 7: {
      std::vector<double> s(static_cast<std::size_t>(pairs)), g(s.size());
      for (std::size_t i = 0; i < s.size(); ++i) {
        s[i] = in.ConsumeFloatingPointInRange<double>(1.0, 8.0);
        g[i] = in.ConsumeFloatingPointInRange<double>(1.0, 64.0);
      }
      return posenc::rope_scaling::longrope(s, g, orig, factor,
                                            in.ConsumeBool() ? posenc::longrope_policy::always_long
                                                             : posenc::longrope_policy::per_length);
    }
    default: return posenc::rope_scaling::linear(1.0);
  }
}

drawn draw(FuzzedDataProvider& in) {
  drawn d;
  d.cfg.head_dim = 2 * in.ConsumeIntegralInRange<index_t>(1, 72);
  const index_t r = 2 * in.ConsumeIntegralInRange<index_t>(1, d.cfg.head_dim / 2);
  d.cfg.rotary_dim = r;
  d.cfg.rotary_offset = in.ConsumeIntegralInRange<index_t>(0, d.cfg.head_dim - r);
  d.cfg.style = in.ConsumeBool() ? posenc::rope_style::interleaved : posenc::rope_style::half_split;
  static constexpr double bases[] = {10000.0, 500000.0, 1e6, 1.5, 2.0};
  d.cfg.base = bases[in.ConsumeIntegralInRange<int>(0, 4)];
  d.cfg.scaling = draw_scaling(in, r / 2);
  if (in.ConsumeIntegralInRange<int>(0, 7) == 0) {
    d.cfg.freq_factors.resize(static_cast<std::size_t>(r / 2));
    for (double& f : d.cfg.freq_factors) f = in.ConsumeFloatingPointInRange<double>(1.0, 64.0);
  }
  d.seq_len = in.ConsumeIntegralInRange<index_t>(0, 1 << 22);
  d.n = in.ConsumeIntegralInRange<index_t>(1, 3);
  d.l = in.ConsumeIntegralInRange<index_t>(1, 9);
  d.h = in.ConsumeIntegralInRange<index_t>(1, 4);
  d.pad_head = in.ConsumeIntegralInRange<index_t>(0, 3);
  d.pad_token = in.ConsumeIntegralInRange<index_t>(0, 5);
  d.use_cache = in.ConsumeBool();
  d.backward = in.ConsumeBool();
  d.split = in.ConsumeIntegralInRange<index_t>(0, d.l);
  // Positions: small, near a cache's end, or huge (up to 2^53 on the cache-free path).
  const index_t limit = d.use_cache ? 4096 : (index_t{1} << in.ConsumeIntegralInRange<int>(4, 53));
  d.pos_form = in.ConsumeIntegralInRange<int>(0, 2);
  d.wide_ids = d.use_cache || limit > (index_t{1} << 30) || in.ConsumeBool();
  const auto pick = [&](index_t room) { return in.ConsumeIntegralInRange<index_t>(0, std::max<index_t>(0, room)); };
  if (d.pos_form == 0) {
    d.start = pick(limit - d.l);
  } else {
    const index_t count = d.pos_form == 1 ? d.n : d.n * d.l;
    for (index_t i = 0; i < count; ++i) {
      const index_t v = pick(d.pos_form == 1 ? limit - d.l : limit - 1);
      d.ids64.push_back(v);
      d.ids32.push_back(static_cast<std::int32_t>(std::min<index_t>(v, INT32_MAX)));
    }
  }
  // Inputs: anything finite the byte stream gives, scaled to [-2, 2].
  const index_t elems = d.n * d.l * d.h * d.cfg.head_dim;
  d.x.resize(static_cast<std::size_t>(elems));
  for (double& v : d.x) v = in.ConsumeFloatingPointInRange<double>(-2.0, 2.0);
  return d;
}

posenc::positions positions_of(const drawn& d) {
  if (d.pos_form == 0) return posenc::positions::offset(d.start);
  if (d.pos_form == 1)
    return d.wide_ids ? posenc::positions::per_sequence(d.ids64.data(), d.n)
                      : posenc::positions::per_sequence(d.ids32.data(), d.n);
  return d.wide_ids ? posenc::positions::per_token(d.ids64.data(), d.n, d.l)
                    : posenc::positions::per_token(d.ids32.data(), d.n, d.l);
}

/// The storage of one run: x in a padded (N, L, H, D) buffer (padding set to a marker that must survive).
template <class T>
struct buffer {
  std::vector<T> data;
  posenc::strided_view<T, 4> view;
};

template <class T>
buffer<T> make_buffer(const drawn& d) {
  const index_t dh = d.cfg.head_dim, head = dh + d.pad_head, token = d.h * head + d.pad_token;
  buffer<T> b{std::vector<T>(static_cast<std::size_t>(d.n * d.l * token), from_double<T>(7.0)), {}};
  b.view = posenc::strided_view<T, 4>(b.data.data(), {d.n, d.l, d.h, dh}, {d.l * token, token, head, 1});
  std::size_t k = 0;
  for (index_t a = 0; a < d.n; ++a)
    for (index_t l = 0; l < d.l; ++l)
      for (index_t h = 0; h < d.h; ++h)
        for (index_t f = 0; f < dh; ++f) b.view(a, l, h, f) = from_double<T>(d.x[k++]);
  return b;
}

template <class T, class F>
posenc::status rotate(const F& freq, const posenc::strided_view<T, 4>& v, const posenc::positions& pos, bool backward) {
  return backward ? posenc::try_apply_rope_backward(freq, v, pos) : posenc::try_apply_rope(freq, v, pos);
}

/// Every check on one storage type and one source (plan or cache).
/// `source_eps`: the relative precision of cos and sin themselves (a float cache: 2^-24).
template <class T, class F>
void check(const drawn& d, const F& freq, double magnitude, double source_eps) {
  const posenc::positions pos = positions_of(d);
  posenc::set_isa(posenc::isa::scalar);
  buffer<T> ref = make_buffer<T>(d);
  if (!rotate(freq, ref.view, pos, d.backward).ok()) return;  // a rejected call (positions past the cache)
  const double eps = std::max(eps_of<T>(), source_eps);

  // 1. Every vector path against the scalar path.
  for (posenc::isa i : {posenc::isa::avx2, posenc::isa::avx512, posenc::isa::neon}) {
    if (!posenc::cpu_supports(i)) continue;
    posenc::set_isa(i);
    buffer<T> b = make_buffer<T>(d);
    if (!rotate(freq, b.view, pos, d.backward).ok()) std::abort();
    for (std::size_t k = 0; k < b.data.size(); ++k) {
      const double got = value_of(b.data[k]), want = value_of(ref.data[k]);
      // Each output is m(a cos - b sin): both paths round it in the arithmetic type, cos and sin within ulps.
      const double tol = 8.0 * eps * (std::fabs(want) + 2.0 * magnitude * 2.0) + 1e-300;
      if (!(std::fabs(got - want) <= tol)) fail(posenc::isa_name(i), got, want, tol, k);
    }
  }
  posenc::set_isa(posenc::isa::scalar);

  // 4. Two token ranges equal the whole call, bit for bit (the padding included).
  {
    buffer<T> b = make_buffer<T>(d);
    const index_t l0 = d.split;
    posenc::strided_view<T, 4> first, second;
    posenc::positions p0, p1;
    if (!b.view.try_slice(1, 0, l0, first).ok() || !b.view.try_slice(1, l0, d.l - l0, second).ok() ||
        !pos.try_slice(0, d.n, 0, l0, p0).ok() || !pos.try_slice(0, d.n, l0, d.l - l0, p1).ok())
      std::abort();
    if (!rotate(freq, first, p0, d.backward).ok() || !rotate(freq, second, p1, d.backward).ok()) std::abort();
    if (std::memcmp(b.data.data(), ref.data.data(), b.data.size() * sizeof(T)) != 0) fail("split call", 0, 0, 0, 0);
  }

  // 2. The transpose undoes the rotation: backward(forward(x)) = m^2 x; 3. with m = 1 each pair keeps its norm.
  buffer<T> round = ref;
  round.view = posenc::strided_view<T, 4>(round.data.data(), ref.view.extents(), ref.view.strides());
  if (!rotate(freq, round.view, pos, !d.backward).ok()) std::abort();
  const buffer<T> x = make_buffer<T>(d);
  const double m2 = magnitude * magnitude;
  // Two roundings to T of values up to 2 m |x| and 2 m^2 |x|, plus the arithmetic's.
  const double tol2 = 8.0 * eps * (m2 + magnitude) * 2.0 * 2.0 + 1e-300;
  const index_t pairs = d.cfg.rotary_dim / 2, o = d.cfg.rotary_offset;
  std::size_t k = 0;
  for (index_t a = 0; a < d.n; ++a)
    for (index_t l = 0; l < d.l; ++l)
      for (index_t h = 0; h < d.h; ++h)
        for (index_t f = 0; f < d.cfg.head_dim; ++f, ++k) {
          // Inside the window the two passes scale by m^2; outside it the features are never touched.
          const bool rotated = f >= o && f < o + 2 * pairs;
          const double got = value_of(round.view(a, l, h, f)), want = (rotated ? m2 : 1.0) * value_of(x.view(a, l, h, f));
          if (!(std::fabs(got - want) <= (rotated ? tol2 : 0.0))) fail("backward(forward(x))", got, want, tol2, k);
        }
  // The padding between heads and tokens is never written.
  const std::size_t marked = static_cast<std::size_t>(std::count_if(ref.data.begin(), ref.data.end(),
                                                                    [](const T& v) { return value_of(v) == 7.0; }));
  const std::size_t padding = ref.data.size() - static_cast<std::size_t>(d.n * d.l * d.h * d.cfg.head_dim);
  if (marked < padding) fail("padding written", static_cast<double>(marked), static_cast<double>(padding), 0, 0);
  if (magnitude == 1.0) {
    const bool inter = d.cfg.style == posenc::rope_style::interleaved;
    for (index_t a = 0; a < d.n; ++a)
      for (index_t l = 0; l < d.l; ++l)
        for (index_t h = 0; h < d.h; ++h)
          for (index_t i = 0; i < pairs; ++i) {
            const index_t fa = o + (inter ? 2 * i : i), fb = o + (inter ? 2 * i + 1 : i + pairs);
            const double xa = value_of(x.view(a, l, h, fa)), xb = value_of(x.view(a, l, h, fb));
            const double ya = value_of(ref.view(a, l, h, fa)), yb = value_of(ref.view(a, l, h, fb));
            const double nx = std::hypot(xa, xb), ny = std::hypot(ya, yb);
            const double tol = 8.0 * eps * (nx + 1.0) + 1e-300;
            if (!(std::fabs(nx - ny) <= tol)) fail("pair norm", ny, nx, tol, static_cast<std::size_t>(i));
          }
  }
}

template <class T>
void check_type(const drawn& d, const posenc::rope_plan& plan) {
  if (!d.use_cache) {
    check<T>(d, plan, plan.magnitude(), 0.0);
    return;
  }
  posenc::rope_cache<float> cache;
  if (!posenc::rope_cache<float>::try_create(plan, 4096, cache).ok()) std::abort();
  check<T>(d, cache, plan.magnitude(), 0x1p-24);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const int type = in.ConsumeIntegralInRange<int>(0, 3);
  const drawn d = draw(in);
  posenc::rope_plan plan;
  if (!posenc::try_make_rope_plan(d.cfg, d.seq_len, plan).ok()) return 0;  // a rejected configuration
  switch (type) {
    case 0: check_type<float>(d, plan); break;
    case 1: check_type<double>(d, plan); break;
    case 2: check_type<f16>(d, plan); break;
    default: check_type<bf16>(d, plan); break;
  }
  posenc::reset_isa();
  return 0;
}
