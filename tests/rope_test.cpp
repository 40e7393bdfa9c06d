// RoPE properties and views: rotation keeps pair norms (scaled by the plan magnitude), the backward pass
// inverts the forward, <R(m)q, R(n)k> depends only on m - n, every way of addressing the same (N, L, H, D)
// data (fused QKV views, strides, Eigen row/column major, layouts, position forms) gives the same result,
// the cos/sin cache equals the cache-free plan, and the length-dependent plans switch where documented.
// Expected values come from the test's own formulas or from a second posenc path, never from one path alone.
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <posenc/posenc.hpp>

#include "test_util.hpp"

namespace {

using posenc::index_t;
using posenc::rope_style;
using namespace posenc_test;

constexpr std::array<rope_style, 2> kStyles{rope_style::interleaved, rope_style::half_split};

const char* style_name(rope_style s) { return s == rope_style::interleaved ? "interleaved" : "half_split"; }

posenc::rope_config make_cfg(index_t head_dim, index_t rotary_dim, index_t rotary_offset, rope_style style,
                             const posenc::rope_scaling& scaling = {}) {
  posenc::rope_config cfg;
  cfg.head_dim = head_dim;
  cfg.rotary_dim = rotary_dim;
  cfg.rotary_offset = rotary_offset;
  cfg.style = style;
  cfg.scaling = scaling;
  return cfg;
}

/// Feature indices (a, b) of rotated pair i, from the layout definition (DESIGN.md), not from posenc.
std::pair<index_t, index_t> pair_features(const posenc::rope_plan& plan, index_t i) {
  const index_t o = plan.rotary_offset();
  if (plan.style() == rope_style::interleaved) return {o + 2 * i, o + 2 * i + 1};
  return {o + i, o + i + plan.rotary_dim() / 2};
}

bool in_window(const posenc::rope_plan& plan, index_t f) {
  return f >= plan.rotary_offset() && f < plan.rotary_offset() + plan.rotary_dim();
}

/// Cross-path tolerance: two posenc paths over the same values may round differently (vector vs scalar row).
template <class T>
double path_tol() {
  return std::is_same_v<T, double> ? 1e-14 : 1e-6;
}

template <class T>
void expect_all_near(const std::vector<T>& got, const std::vector<T>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int reported = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got[i]);
    const double w = static_cast<double>(want[i]);
    if (!(std::fabs(g - w) <= tol) && reported++ < 3)
      ADD_FAILURE() << what << ": element " << i << " got " << g << " want " << w << " (tolerance " << tol << ")";
  }
}

// ------------------------------------------------------------------------------------------ norms

// Pair norms after the rotation are m times the pair norms before (m = plan magnitude); features outside
// the window are bit-exact; for m = 1 the norm of each head row is kept.
template <class T>
void check_norms(const posenc::rope_plan& plan, double m, double rel_tol, const std::string& what) {
  constexpr index_t n_batch = 2, n_len = 5, n_heads = 3;
  const index_t d = plan.head_dim();
  const std::vector<T> x = random_values<T>(static_cast<std::size_t>(n_batch * n_len * n_heads * d), 7);
  std::vector<T> y = x;
  const std::vector<std::int64_t> ids{0, 1, 17, 4096, 65535, 3, 100000, 7, 1 << 20, 999983};
  posenc::apply_rope(plan, posenc::strided_view<T, 4>(y.data(), {n_batch, n_len, n_heads, d}),
                     posenc::positions::per_token(ids.data(), n_batch, n_len));
  for (index_t row = 0; row < n_batch * n_len * n_heads; ++row) {
    const std::size_t base = static_cast<std::size_t>(row * d);
    double row_in = 0.0;
    double row_out = 0.0;
    for (index_t i = 0; i < plan.pairs(); ++i) {
      const auto [a, b] = pair_features(plan, i);
      const double xa = static_cast<double>(x[base + a]), xb = static_cast<double>(x[base + b]);
      const double ya = static_cast<double>(y[base + a]), yb = static_cast<double>(y[base + b]);
      const double nx = std::hypot(xa, xb), ny = std::hypot(ya, yb);
      EXPECT_NEAR(ny, m * nx, rel_tol * std::max(1.0, m * nx)) << what << " row " << row << " pair " << i;
      row_in += m * m * (xa * xa + xb * xb);
      row_out += ya * ya + yb * yb;
    }
    for (index_t f = 0; f < d; ++f) {
      if (in_window(plan, f)) continue;
      EXPECT_EQ(y[base + f], x[base + f]) << what << " row " << row << " feature " << f << " outside the window";
      const double v = static_cast<double>(x[base + f]);
      row_in += v * v;
      row_out += v * v;
    }
    EXPECT_NEAR(std::sqrt(row_out), std::sqrt(row_in), rel_tol * std::max(1.0, std::sqrt(row_in)))
        << what << " row " << row;
  }
}

TEST(RopeProperties, RotationKeepsPairAndRowNorms) {
  for (rope_style style : kStyles) {
    // Full rotary, partial rotary (R < D at offset 0) and a window inside the head.
    for (const auto& [r, o] : {std::pair<index_t, index_t>{24, 0}, {16, 0}, {16, 4}, {2, 22}}) {
      const auto plan = posenc::make_rope_plan(make_cfg(24, r, o, style));
      ASSERT_EQ(plan.magnitude(), 1.0);
      const std::string what = std::string(style_name(style)) + " R=" + std::to_string(r) + " o=" + std::to_string(o);
      check_norms<double>(plan, 1.0, 1e-14, what + " double");
      check_norms<float>(plan, 1.0, 1e-6, what + " float");
    }
  }
}

TEST(RopeProperties, PairNormScalesByMagnitude) {
  for (rope_style style : kStyles) {
    const auto plan = posenc::make_rope_plan(make_cfg(24, 16, 4, style, posenc::rope_scaling::yarn(4.0, 2048)));
    const double m = 0.1 * std::log(4.0) + 1.0;  // YaRN get_mscale(4)
    ASSERT_NEAR(plan.magnitude(), m, 1e-15);
    check_norms<double>(plan, m, 1e-14, std::string(style_name(style)) + " yarn double");
    check_norms<float>(plan, m, 1e-6, std::string(style_name(style)) + " yarn float");
  }
}

// ------------------------------------------------------------------------------------------ backward

struct named_scaling {
  const char* name;
  posenc::rope_scaling scaling;
  std::vector<double> freq_factors;
};

// Scalings whose plan magnitude is 1, so backward(forward(x)) == x.
std::vector<named_scaling> unit_magnitude_scalings() {
  std::vector<named_scaling> out;
  out.push_back({"none", {}, {}});
  out.push_back({"linear", posenc::rope_scaling::linear(2.5), {}});
  out.push_back({"ntk", posenc::rope_scaling::ntk(3.0), {}});
  out.push_back({"dynamic_ntk", posenc::rope_scaling::dynamic_ntk(2.0, 1024), {}});
  out.push_back({"llama3", posenc::rope_scaling::llama3(8.0, 1.0, 4.0, 256), {}});
  auto yarn = posenc::rope_scaling::yarn(8.0, 512);
  yarn.attention_factor = 1.0;
  out.push_back({"yarn", yarn, {}});
  auto longrope = posenc::rope_scaling::longrope({1.0, 1.5, 2.0, 4.0, 8.0, 16.0}, {2.0, 3.0, 5.0, 9.0, 17.0, 33.0}, 1024,
                                                 4.0);
  longrope.attention_factor = 1.0;
  out.push_back({"longrope", longrope, {}});
  out.push_back({"freq_factors", {}, {1.0, 1.0, 2.0, 4.0, 8.0, 8.0}});
  return out;
}

template <class T, class F>
void check_inverse(const F& freq, const posenc::rope_plan& plan, double tol, const std::string& what) {
  constexpr index_t n_batch = 2, n_len = 6, n_heads = 3;
  const index_t d = plan.head_dim();
  const std::array<index_t, 4> shape{n_batch, n_len, n_heads, d};
  const std::vector<T> x = random_values<T>(static_cast<std::size_t>(n_batch * n_len * n_heads * d), 11);
  std::vector<std::int64_t> ids(static_cast<std::size_t>(n_batch * n_len));
  std::mt19937 gen(5);
  std::uniform_int_distribution<std::int64_t> u(0, 4095);
  for (auto& p : ids) p = u(gen);
  const auto pos = posenc::positions::per_token(ids.data(), n_batch, n_len);
  std::vector<T> y(x.size());
  posenc::apply_rope(freq, posenc::strided_view<const T, 4>(x.data(), shape), posenc::strided_view<T, 4>(y.data(), shape), pos);
  // Out of place backward into z, and in place backward on y.
  std::vector<T> z(x.size());
  posenc::apply_rope_backward(freq, posenc::strided_view<const T, 4>(y.data(), shape), posenc::strided_view<T, 4>(z.data(), shape),
                              pos);
  posenc::apply_rope_backward(freq, posenc::strided_view<T, 4>(y.data(), shape), pos);
  expect_all_near(z, x, tol, what + " out of place");
  expect_all_near(y, x, tol, what + " in place");
}

TEST(RopeProperties, BackwardInvertsForward) {
  for (rope_style style : kStyles) {
    for (const auto& s : unit_magnitude_scalings()) {
      auto cfg = make_cfg(16, 12, 2, style, s.scaling);
      cfg.freq_factors = s.freq_factors;
      const auto plan = posenc::make_rope_plan(cfg, 5000);
      ASSERT_EQ(plan.magnitude(), 1.0) << s.name;
      const posenc::rope_cache<float> cache_f(plan, 4096);
      const posenc::rope_cache<double> cache_d(plan, 4096);
      const std::string what = std::string(style_name(style)) + " " + s.name;
      check_inverse<double>(plan, plan, 1e-13, what + " double plan");
      check_inverse<double>(cache_d, plan, 1e-13, what + " double cache<double>");
      check_inverse<float>(plan, plan, 1e-6, what + " float plan");
      check_inverse<float>(cache_f, plan, 1e-6, what + " float cache<float>");
    }
  }
}

// The backward pass is the transpose: with magnitude m, backward(forward(x)) = m^2 x.
TEST(RopeProperties, BackwardIsTransposeWithMagnitude) {
  for (rope_style style : kStyles) {
    const auto plan = posenc::make_rope_plan(make_cfg(16, 16, 0, style, posenc::rope_scaling::yarn(16.0, 512)));
    const double m = 0.1 * std::log(16.0) + 1.0;
    ASSERT_NEAR(plan.magnitude(), m, 1e-15);
    const std::array<index_t, 4> shape{1, 4, 2, 16};
    const std::vector<double> x = random_values<double>(128, 3);
    std::vector<double> y = x;
    const auto pos = posenc::positions::offset(1000);
    posenc::apply_rope(plan, posenc::strided_view<double, 4>(y.data(), shape), pos);
    posenc::apply_rope_backward(plan, posenc::strided_view<double, 4>(y.data(), shape), pos);
    for (std::size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], m * m * x[i], 1e-13) << style_name(style) << " " << i;
  }
}

// ------------------------------------------------------------------------------------------ relative

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

double rotated_score(const posenc::rope_plan& plan, std::vector<double> q, std::vector<double> k, index_t m, index_t n) {
  const index_t d = plan.head_dim();
  posenc::apply_rope(plan, posenc::strided_view<double, 4>(q.data(), {1, 1, 1, d}), posenc::positions::offset(m));
  posenc::apply_rope(plan, posenc::strided_view<double, 4>(k.data(), {1, 1, 1, d}), posenc::positions::offset(n));
  return dot(q, k);
}

// <R(m)q, R(n)k> = <q, R(n - m)k> * m^2: it depends only on m - n. Angles are p*w formed in double, each off
// by at most ~p*2^-52 rad (w <= 1), so the score moves by at most |q||k| * 2 * (p+1) * 2^-52 (+ rounding).
TEST(RopeProperties, ScoreDependsOnlyOnDistance) {
  const std::vector<std::pair<const char*, posenc::rope_scaling>> scalings{
      {"none", {}}, {"llama3", posenc::rope_scaling::llama3(8.0, 1.0, 4.0, 8192)}, {"yarn", posenc::rope_scaling::yarn(4.0, 4096)}};
  for (rope_style style : kStyles) {
    for (const auto& [name, scaling] : scalings) {
      const auto plan = posenc::make_rope_plan(make_cfg(64, 64, 0, style, scaling));
      const std::vector<double> q = random_values<double>(64, 21);
      const std::vector<double> k = random_values<double>(64, 22);
      const double qk = std::sqrt(dot(q, q) * dot(k, k)) * plan.magnitude() * plan.magnitude();
      const double ref = rotated_score(plan, q, k, 3, 1);
      for (const auto& [m, n] : {std::pair<index_t, index_t>{1003, 1001}, {70000, 69998}, {2, 0}}) {
        const double tol = qk * (4.0 * static_cast<double>(m + 1) * std::ldexp(1.0, -52) + 1e-14);
        EXPECT_NEAR(rotated_score(plan, q, k, m, n), ref, tol) << style_name(style) << " " << name << " (m, n)=(" << m << ", " << n << ")";
      }
      // The score does change with the distance (the property is not vacuous).
      EXPECT_GT(std::fabs(rotated_score(plan, q, k, 3, 0) - ref), 1e-3) << style_name(style) << " " << name;
      EXPECT_GT(std::fabs(rotated_score(plan, q, k, 1, 3) - ref), 1e-3) << style_name(style) << " " << name;
    }
  }
}

// ------------------------------------------------------------------------------------------ views

// q and k as views into one fused [N, L, (Hq + 2*Hk) * D] buffer (GQA) equal q and k rotated as separate
// contiguous tensors; v is untouched.
template <class T>
void check_fused_qkv(rope_style style) {
  constexpr index_t n_batch = 2, n_len = 3, hq = 4, hk = 2, d = 16;
  constexpr index_t row = (hq + 2 * hk) * d;
  const auto plan = posenc::make_rope_plan(make_cfg(d, 12, 2, style));
  const std::vector<T> orig = random_values<T>(static_cast<std::size_t>(n_batch * n_len * row), 31);
  std::vector<T> qkv = orig;
  const std::int64_t seq[] = {5, 1000};
  const auto pos = posenc::positions::per_sequence(seq, n_batch);

  posenc::strided_view<T, 4> q(qkv.data(), {n_batch, n_len, hq, d}, {n_len * row, row, d, 1});
  posenc::strided_view<T, 4> k(qkv.data() + hq * d, {n_batch, n_len, hk, d}, {n_len * row, row, d, 1});
  posenc::apply_rope_qk(plan, q, k, pos);

  // Reference: contiguous copies of q and k, rotated one at a time.
  std::vector<T> qc(static_cast<std::size_t>(n_batch * n_len * hq * d));
  std::vector<T> kc(static_cast<std::size_t>(n_batch * n_len * hk * d));
  posenc::strided_view<T, 4> vq(qc.data(), {n_batch, n_len, hq, d});
  posenc::strided_view<T, 4> vk(kc.data(), {n_batch, n_len, hk, d});
  const posenc::strided_view<const T, 4> oq(orig.data(), q.extents(), q.strides());
  const posenc::strided_view<const T, 4> ok(orig.data() + hq * d, k.extents(), k.strides());
  for (index_t n = 0; n < n_batch; ++n)
    for (index_t l = 0; l < n_len; ++l)
      for (index_t f = 0; f < d; ++f) {
        for (index_t h = 0; h < hq; ++h) vq(n, l, h, f) = oq(n, l, h, f);
        for (index_t h = 0; h < hk; ++h) vk(n, l, h, f) = ok(n, l, h, f);
      }
  posenc::apply_rope(plan, vq, pos);
  posenc::apply_rope(plan, vk, pos);

  const std::string what = std::string(style_name(style)) + " " + dtype_info<T>::name;
  for (index_t n = 0; n < n_batch; ++n)
    for (index_t l = 0; l < n_len; ++l)
      for (index_t f = 0; f < d; ++f) {
        for (index_t h = 0; h < hq; ++h)
          EXPECT_NEAR(static_cast<double>(q(n, l, h, f)), static_cast<double>(vq(n, l, h, f)), path_tol<T>()) << what << " q";
        for (index_t h = 0; h < hk; ++h)
          EXPECT_NEAR(static_cast<double>(k(n, l, h, f)), static_cast<double>(vk(n, l, h, f)), path_tol<T>()) << what << " k";
      }
  // v: the last Hk*D features of every row, bit-exact.
  for (index_t t = 0; t < n_batch * n_len; ++t)
    for (index_t f = (hq + hk) * d; f < row; ++f)
      ASSERT_EQ(qkv[static_cast<std::size_t>(t * row + f)], orig[static_cast<std::size_t>(t * row + f)]) << what << " v";
  // The rotation did change q and k (the comparison is not between two no-ops).
  EXPECT_NE(qkv[static_cast<std::size_t>(row + 3)], orig[static_cast<std::size_t>(row + 3)]) << what;
}

TEST(RopeViews, FusedQkvGqaEqualsSeparateTensors) {
  for (rope_style style : kStyles) {
    check_fused_qkv<float>(style);
    check_fused_qkv<double>(style);
  }
}

// Feature stride 2 (every other element of the buffer): same result as contiguous, gaps untouched; out of
// place in both directions (strided -> contiguous, contiguous -> strided).
TEST(RopeViews, NonContiguousFeatureStride) {
  constexpr index_t n_batch = 2, n_len = 3, n_heads = 2, d = 10;
  const std::array<index_t, 4> shape{n_batch, n_len, n_heads, d};
  const std::array<index_t, 4> strides2{n_len * n_heads * d * 2, n_heads * d * 2, d * 2, 2};
  const std::size_t count = static_cast<std::size_t>(n_batch * n_len * n_heads * d);
  for (rope_style style : kStyles) {
    const auto plan = posenc::make_rope_plan(make_cfg(d, 6, 2, style));
    const auto pos = posenc::positions::offset(77);
    const std::vector<float> x = random_values<float>(count, 41);
    std::vector<float> ref = x;
    posenc::apply_rope(plan, posenc::strided_view<float, 4>(ref.data(), shape), pos);

    constexpr float gap = -12345.5f;
    std::vector<float> wide(2 * count, gap);
    for (std::size_t i = 0; i < count; ++i) wide[2 * i] = x[i];
    const std::vector<float> wide_in = wide;
    posenc::apply_rope(plan, posenc::strided_view<float, 4>(wide.data(), shape, strides2), pos);
    std::vector<float> got(count);
    for (std::size_t i = 0; i < count; ++i) {
      got[i] = wide[2 * i];
      ASSERT_EQ(wide[2 * i + 1], gap) << "gap element " << 2 * i + 1 << " written";
    }
    expect_all_near(got, ref, path_tol<float>(), std::string(style_name(style)) + " stride 2 in place");

    // Strided in -> contiguous out.
    std::vector<float> out(count, gap);
    posenc::apply_rope(plan, posenc::strided_view<const float, 4>(wide_in.data(), shape, strides2),
                       posenc::strided_view<float, 4>(out.data(), shape), pos);
    expect_all_near(out, ref, path_tol<float>(), std::string(style_name(style)) + " stride 2 -> contiguous");
    // Contiguous in -> strided out.
    std::vector<float> wide_out(2 * count, gap);
    posenc::apply_rope(plan, posenc::strided_view<const float, 4>(x.data(), shape),
                       posenc::strided_view<float, 4>(wide_out.data(), shape, strides2), pos);
    for (std::size_t i = 0; i < count; ++i) {
      got[i] = wide_out[2 * i];
      ASSERT_EQ(wide_out[2 * i + 1], gap);
    }
    expect_all_near(got, ref, path_tol<float>(), std::string(style_name(style)) + " contiguous -> stride 2");
  }
}

// Eigen::Tensor (row- and column-major), Eigen::TensorMap, strided_view, and as_nlhd of the NHLD, LHD, NLD
// and LD layouts give the canonical NLHD result. Rows rotate independently and positions are an offset, so
// a slice (n = 0, h = 0) of the canonical result is the reference of a tensor without that dimension.
TEST(RopeViews, EigenTensorsAndLayoutsMatchCanonical) {
  constexpr index_t N = 2, L = 5, H = 3, D = 12;
  using RowMajor4 = Eigen::Tensor<float, 4, Eigen::RowMajor>;
  const auto pos = posenc::positions::offset(9);
  for (rope_style style : kStyles) {
    const auto plan = posenc::make_rope_plan(make_cfg(D, 8, 2, style));
    const std::string sname = style_name(style);
    const std::vector<float> x = random_values<float>(static_cast<std::size_t>(N * L * H * D), 51);
    const auto X = [&](index_t n, index_t l, index_t h, index_t d) {
      return x[static_cast<std::size_t>(((n * L + l) * H + h) * D + d)];
    };
    RowMajor4 ref(N, L, H, D);
    for (index_t n = 0; n < N; ++n)
      for (index_t l = 0; l < L; ++l)
        for (index_t h = 0; h < H; ++h)
          for (index_t d = 0; d < D; ++d) ref(n, l, h, d) = X(n, l, h, d);
    posenc::apply_rope(plan, ref, pos);

    const double tol = path_tol<float>();
    const auto check4 = [&](const auto& get, index_t n_max, index_t h_max, const std::string& what) {
      for (index_t n = 0; n < n_max; ++n)
        for (index_t l = 0; l < L; ++l)
          for (index_t h = 0; h < h_max; ++h)
            for (index_t d = 0; d < D; ++d)
              ASSERT_NEAR(get(n, l, h, d), ref(n, l, h, d), tol) << sname << " " << what << " at " << n << "," << l << "," << h << "," << d;
    };

    {  // Column-major Eigen::Tensor, passed directly.
      Eigen::Tensor<float, 4, Eigen::ColMajor> t(N, L, H, D);
      for (index_t n = 0; n < N; ++n)
        for (index_t l = 0; l < L; ++l)
          for (index_t h = 0; h < H; ++h)
            for (index_t d = 0; d < D; ++d) t(n, l, h, d) = X(n, l, h, d);
      posenc::apply_rope(plan, t, pos);
      check4([&](index_t n, index_t l, index_t h, index_t d) { return t(n, l, h, d); }, N, H, "ColMajor Tensor");
    }
    {  // Row-major TensorMap and column-major TensorMap over caller memory.
      std::vector<float> buf = x;
      Eigen::TensorMap<RowMajor4> m(buf.data(), N, L, H, D);
      posenc::apply_rope(plan, m, pos);
      check4([&](index_t n, index_t l, index_t h, index_t d) { return m(n, l, h, d); }, N, H, "RowMajor TensorMap");
      std::vector<float> cbuf(x.size());
      Eigen::TensorMap<Eigen::Tensor<float, 4, Eigen::ColMajor>> cm(cbuf.data(), N, L, H, D);
      for (index_t n = 0; n < N; ++n)
        for (index_t l = 0; l < L; ++l)
          for (index_t h = 0; h < H; ++h)
            for (index_t d = 0; d < D; ++d) cm(n, l, h, d) = X(n, l, h, d);
      posenc::apply_rope(plan, cm, pos);
      check4([&](index_t n, index_t l, index_t h, index_t d) { return cm(n, l, h, d); }, N, H, "ColMajor TensorMap");
    }
    {  // strided_view over raw memory.
      std::vector<float> buf = x;
      posenc::strided_view<float, 4> v(buf.data(), {N, L, H, D});
      posenc::apply_rope(plan, v, pos);
      check4([&](index_t n, index_t l, index_t h, index_t d) { return v(n, l, h, d); }, N, H, "strided_view");
    }
    {  // (N, H, L, D): PyTorch's transposed layout.
      RowMajor4 t(N, H, L, D);
      for (index_t n = 0; n < N; ++n)
        for (index_t l = 0; l < L; ++l)
          for (index_t h = 0; h < H; ++h)
            for (index_t d = 0; d < D; ++d) t(n, h, l, d) = X(n, l, h, d);
      posenc::apply_rope(plan, posenc::as_nlhd(t, posenc::layout::nhld), pos);
      check4([&](index_t n, index_t l, index_t h, index_t d) { return t(n, h, l, d); }, N, H, "nhld");
    }
    {  // (L, H, D) = sequence 0.
      Eigen::Tensor<float, 3, Eigen::RowMajor> t(L, H, D);
      for (index_t l = 0; l < L; ++l)
        for (index_t h = 0; h < H; ++h)
          for (index_t d = 0; d < D; ++d) t(l, h, d) = X(0, l, h, d);
      posenc::apply_rope(plan, posenc::as_nlhd(t, posenc::layout::lhd), pos);
      check4([&](index_t, index_t l, index_t h, index_t d) { return t(l, h, d); }, 1, H, "lhd");
    }
    {  // (N, L, D) = head 0, row-major and column-major.
      Eigen::Tensor<float, 3, Eigen::RowMajor> t(N, L, D);
      Eigen::Tensor<float, 3, Eigen::ColMajor> c(N, L, D);
      for (index_t n = 0; n < N; ++n)
        for (index_t l = 0; l < L; ++l)
          for (index_t d = 0; d < D; ++d) t(n, l, d) = c(n, l, d) = X(n, l, 0, d);
      posenc::apply_rope(plan, posenc::as_nlhd(t, posenc::layout::nld), pos);
      posenc::apply_rope(plan, posenc::as_nlhd(c, posenc::layout::nld), pos);
      check4([&](index_t n, index_t l, index_t, index_t d) { return t(n, l, d); }, N, 1, "nld");
      check4([&](index_t n, index_t l, index_t, index_t d) { return c(n, l, d); }, N, 1, "nld ColMajor");
    }
    {  // (L, D) = sequence 0, head 0: named, and the rank-2 default.
      Eigen::Tensor<float, 2, Eigen::RowMajor> t(L, D);
      for (index_t l = 0; l < L; ++l)
        for (index_t d = 0; d < D; ++d) t(l, d) = X(0, l, 0, d);
      Eigen::Tensor<float, 2, Eigen::RowMajor> u = t;
      posenc::apply_rope(plan, posenc::as_nlhd(t, posenc::layout::ld), pos);
      posenc::apply_rope(plan, u, pos);
      check4([&](index_t, index_t l, index_t, index_t d) { return t(l, d); }, 1, 1, "ld");
      check4([&](index_t, index_t l, index_t, index_t d) { return u(l, d); }, 1, 1, "rank 2 default");
    }
  }
}

// int32 and int64 ids, per_token and per_sequence, and offset(P0) vs per_token P0 + l: identical positions,
// identical results.
TEST(RopeViews, PositionFormsAgree) {
  constexpr index_t N = 3, L = 4, H = 2, D = 8;
  const std::array<index_t, 4> shape{N, L, H, D};
  const auto plan = posenc::make_rope_plan(make_cfg(D, 8, 0, rope_style::half_split));
  const std::vector<float> x = random_values<float>(static_cast<std::size_t>(N * L * H * D), 61);
  const auto run = [&](const posenc::positions& pos) {
    std::vector<float> y = x;
    posenc::apply_rope(plan, posenc::strided_view<float, 4>(y.data(), shape), pos);
    return y;
  };
  const std::int64_t seq64[] = {0, 7, 123456};
  const std::int32_t seq32[] = {0, 7, 123456};
  std::vector<std::int64_t> tok64(N * L);
  std::vector<std::int32_t> tok32(N * L);
  std::vector<std::int64_t> padded(N * (L + 3), -1);  // row stride L + 3; the padding is never read
  for (index_t n = 0; n < N; ++n)
    for (index_t l = 0; l < L; ++l) {
      tok64[static_cast<std::size_t>(n * L + l)] = seq64[n] + l;
      tok32[static_cast<std::size_t>(n * L + l)] = static_cast<std::int32_t>(seq64[n] + l);
      padded[static_cast<std::size_t>(n * (L + 3) + l)] = seq64[n] + l;
    }
  const auto ref = run(posenc::positions::per_sequence(seq64, N));
  EXPECT_NE(ref, x);
  EXPECT_EQ(run(posenc::positions::per_sequence(seq32, N)), ref) << "per_sequence int32";
  EXPECT_EQ(run(posenc::positions::per_token(tok64.data(), N, L)), ref) << "per_token int64";
  EXPECT_EQ(run(posenc::positions::per_token(tok32.data(), N, L)), ref) << "per_token int32";
  EXPECT_EQ(run(posenc::positions::per_token(padded.data(), N, L, L + 3)), ref) << "per_token row_stride";
  // row_stride 0: one row of ids for every sequence (HF position_ids of shape (1, L)) equals the tiled (N, L).
  std::vector<std::int64_t> tiled(N * L);
  for (index_t n = 0; n < N; ++n)
    for (index_t l = 0; l < L; ++l) tiled[static_cast<std::size_t>(n * L + l)] = tok64[static_cast<std::size_t>(L + l)];
  EXPECT_EQ(run(posenc::positions::per_token(tok64.data() + L, N, L, 0)), run(posenc::positions::per_token(tiled.data(), N, L)))
      << "per_token broadcast";

  constexpr std::int64_t p0 = 4321;
  std::vector<std::int64_t> shifted(N * L);
  for (index_t n = 0; n < N; ++n)
    for (index_t l = 0; l < L; ++l) shifted[static_cast<std::size_t>(n * L + l)] = p0 + l;
  EXPECT_EQ(run(posenc::positions::offset(p0)), run(posenc::positions::per_token(shifted.data(), N, L)));
  EXPECT_EQ(run(posenc::positions::offset(0)), run(posenc::positions::offset()));
}

// Out of place: the input is untouched, the features outside the rotated window are copied bit-exactly,
// the rotated window equals the in-place result; the same for the backward pass.
TEST(RopeViews, OutOfPlaceLeavesInputAndCopiesPassThrough) {
  constexpr index_t N = 2, L = 3, H = 2, D = 16;
  const std::array<index_t, 4> shape{N, L, H, D};
  const std::size_t count = static_cast<std::size_t>(N * L * H * D);
  const std::int64_t seq[] = {3, 300};
  const auto pos = posenc::positions::per_sequence(seq, N);
  for (rope_style style : kStyles) {
    const auto plan = posenc::make_rope_plan(make_cfg(D, 8, 4, style));  // window [4, 12)
    const std::vector<float> x = random_values<float>(count, 71);
    for (bool backward : {false, true}) {
      std::vector<float> in = x;
      std::vector<float> out(count, 999.0f);
      std::vector<float> ref = x;
      const posenc::strided_view<const float, 4> vin(in.data(), shape);
      const posenc::strided_view<float, 4> vout(out.data(), shape);
      if (backward) {
        posenc::apply_rope_backward(plan, vin, vout, pos);
        posenc::apply_rope_backward(plan, posenc::strided_view<float, 4>(ref.data(), shape), pos);
      } else {
        posenc::apply_rope(plan, vin, vout, pos);
        posenc::apply_rope(plan, posenc::strided_view<float, 4>(ref.data(), shape), pos);
      }
      const std::string what = std::string(style_name(style)) + (backward ? " backward" : " forward");
      EXPECT_EQ(in, x) << what << ": input modified";
      for (std::size_t i = 0; i < count; ++i) {
        const index_t f = static_cast<index_t>(i) % D;
        if (in_window(plan, f)) {
          EXPECT_NEAR(out[i], ref[i], path_tol<float>()) << what << " element " << i;
          EXPECT_NE(out[i], 999.0f) << what << " element " << i << " not written";
        } else {
          EXPECT_EQ(out[i], x[i]) << what << " pass-through element " << i;
        }
      }
    }
  }
}

// An empty (N, L, H, D) tensor: nothing to do, nothing thrown, nothing written (even positions that would be
// rejected for a non-empty batch, or lie past the cache, are not read).
void check_empty_is_noop(const std::array<index_t, 4>& shape) {
  const auto plan = posenc::make_rope_plan(make_cfg(8, 8, 0, rope_style::interleaved));
  const posenc::rope_cache<float> cache(plan, 4);
  std::vector<float> buf(16, 5.5f);  // a real pointer: an empty view must still not touch it
  std::vector<float> out(16, 6.5f);
  posenc::strided_view<float, 4> v(buf.data(), shape);
  posenc::strided_view<float, 4> o(out.data(), shape);
  posenc::strided_view<float, 4> null_view(nullptr, shape);
  const std::int64_t big[3] = {1000, 1000, 1000};  // one offset per sequence (N <= 3 here)
  const std::string what = "shape (" + std::to_string(shape[0]) + ", " + std::to_string(shape[1]) + ", " +
                           std::to_string(shape[2]) + ", " + std::to_string(shape[3]) + ")";
  EXPECT_NO_THROW(posenc::apply_rope(plan, v, posenc::positions::offset(3))) << what;
  EXPECT_NO_THROW(posenc::apply_rope(plan, null_view, posenc::positions::offset(3))) << what;
  EXPECT_NO_THROW(posenc::apply_rope(cache, v, posenc::positions::offset(100))) << what;  // past the cache, no token
  EXPECT_NO_THROW(posenc::apply_rope(plan, posenc::strided_view<const float, 4>(v), o, posenc::positions::offset(0))) << what;
  EXPECT_NO_THROW(posenc::apply_rope_qk(plan, v, o, posenc::positions::per_sequence(big, shape[0]))) << what;
  EXPECT_NO_THROW(posenc::apply_rope_backward(plan, v, posenc::positions::per_token(big, shape[0], shape[1]))) << what;
  posenc::xpos_config xc;
  xc.head_dim = 8;
  EXPECT_NO_THROW(posenc::apply_xpos(posenc::xpos_plan(xc), v, posenc::positions::offset(0), 0, posenc::xpos_mode::upscale))
      << what;
  EXPECT_EQ(buf, std::vector<float>(16, 5.5f)) << what;
  EXPECT_EQ(out, std::vector<float>(16, 6.5f)) << what;
}

TEST(RopeViews, EmptyBatchIsNoOp) {
  check_empty_is_noop({0, 3, 2, 8});
  check_empty_is_noop({0, 0, 2, 8});
  const auto plan = posenc::make_rope_plan(make_cfg(8, 8, 0, rope_style::interleaved));
  Eigen::Tensor<float, 4, Eigen::RowMajor> t(0, 4, 2, 8);
  EXPECT_NO_THROW(posenc::apply_rope(plan, t, posenc::positions::offset(0)));
  Eigen::Tensor<double, 2, Eigen::RowMajor> e(0, 8);
  EXPECT_NO_THROW(posenc::apply_rope(plan, e, posenc::positions::offset(0)));
}

// L = 0 with N > 1 (and a column-major N = 0): the contiguous strides of an empty tensor include a 0 (the
// product of the extents after a zero extent), which an output check must not mistake for one element
// written several times (it did once).
TEST(RopeViews, EmptyLengthIsNoOp) {
  check_empty_is_noop({2, 0, 2, 8});
  check_empty_is_noop({3, 0, 0, 8});
  const auto plan = posenc::make_rope_plan(make_cfg(8, 8, 0, rope_style::interleaved));
  Eigen::Tensor<float, 4, Eigen::RowMajor> t(2, 0, 2, 8);
  EXPECT_NO_THROW(posenc::apply_rope(plan, t, posenc::positions::offset(0)));
  Eigen::Tensor<float, 4, Eigen::ColMajor> c(0, 4, 2, 8);  // strides (1, 0, 0, 0)
  EXPECT_NO_THROW(posenc::apply_rope(plan, c, posenc::positions::offset(0)));
  const posenc::rope_plan p2(2, {1.0}, rope_style::interleaved);
  Eigen::Tensor<float, 2, Eigen::RowMajor> f(0, 2);
  Eigen::Tensor<float, 2, Eigen::ColMajor> g(0, 2);  // strides (1, 0)
  EXPECT_NO_THROW(posenc::apply_rope(p2, f, posenc::positions::offset(0)));
  EXPECT_NO_THROW(posenc::apply_rope(p2, g, posenc::positions::offset(0)));
}

// ------------------------------------------------------------------------------------------ cache

// The tables are 64-byte aligned (a row of 64 floats is whole cache lines; vector loads of a malloc'd table
// crossed a line every other load), float and double, a copy included.
TEST(RopeCache, TablesAreCacheLineAligned) {
  const auto plan = posenc::make_rope_plan(make_cfg(128, 0, 0, rope_style::half_split, posenc::rope_scaling{}));
  const auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 64 == 0; };
  const posenc::rope_cache<float> f(plan, 8192);
  const posenc::rope_cache<double> d(plan, 3);
  const posenc::rope_cache<float> copy = f;
  for (const void* p : {static_cast<const void*>(f.cos_data()), static_cast<const void*>(f.sin_data()),
                        static_cast<const void*>(d.cos_data()), static_cast<const void*>(d.sin_data()),
                        static_cast<const void*>(copy.cos_data()), static_cast<const void*>(copy.sin_data())})
    EXPECT_TRUE(aligned(p)) << p;
}

TEST(RopeCache, DoubleCacheEqualsPlan) {
  constexpr index_t N = 2, L = 8, H = 3, D = 32;
  const std::array<index_t, 4> shape{N, L, H, D};
  std::vector<std::int64_t> ids(N * L);
  std::mt19937 gen(9);
  std::uniform_int_distribution<std::int64_t> u(0, 4999);
  for (auto& p : ids) p = u(gen);
  ids[0] = 4999;  // the last row of the cache
  ids[1] = 0;
  const auto pos = posenc::positions::per_token(ids.data(), N, L);
  for (rope_style style : kStyles) {
    for (const auto& scaling : {posenc::rope_scaling{}, posenc::rope_scaling::yarn(4.0, 1024),
                                posenc::rope_scaling::llama3(8.0, 1.0, 4.0, 512)}) {
      const auto plan = posenc::make_rope_plan(make_cfg(D, 24, 4, style, scaling));
      const posenc::rope_cache<double> cache(plan, 5000);
      EXPECT_EQ(cache.max_positions(), 5000);
      const std::vector<double> x = random_values<double>(static_cast<std::size_t>(N * L * H * D), 81);
      std::vector<double> a = x;
      std::vector<double> b = x;
      posenc::apply_rope(plan, posenc::strided_view<double, 4>(a.data(), shape), pos);
      posenc::apply_rope(cache, posenc::strided_view<double, 4>(b.data(), shape), pos);
      expect_all_near(b, a, 1e-12, std::string(style_name(style)) + " cache<double> vs plan");
      std::vector<double> c = a;
      posenc::apply_rope_backward(cache, posenc::strided_view<double, 4>(c.data(), shape), pos);
      std::vector<double> e = a;
      posenc::apply_rope_backward(plan, posenc::strided_view<double, 4>(e.data(), shape), pos);
      expect_all_near(c, e, 1e-12, std::string(style_name(style)) + " backward cache<double> vs plan");
    }
  }
}

// ------------------------------------------------------------------------------------------ plans

void expect_same_plan(const posenc::rope_plan& a, const posenc::rope_plan& b, const std::string& what) {
  EXPECT_EQ(a.head_dim(), b.head_dim()) << what;
  EXPECT_EQ(a.rotary_dim(), b.rotary_dim()) << what;
  EXPECT_EQ(a.rotary_offset(), b.rotary_offset()) << what;
  EXPECT_EQ(a.style(), b.style()) << what;
  EXPECT_EQ(a.magnitude(), b.magnitude()) << what;
  EXPECT_EQ(a.logit_scale(), b.logit_scale()) << what;
  EXPECT_EQ(a.inv_freq(), b.inv_freq()) << what;
}

TEST(RopePlan, RebuildIntoExistingPlanEqualsFreshPlan) {
  posenc::rope_plan plan = posenc::make_rope_plan(make_cfg(64, 64, 0, rope_style::half_split));
  const double* storage = plan.inv_freq().data();
  const std::vector<posenc::rope_config> cfgs{
      make_cfg(64, 32, 8, rope_style::interleaved, posenc::rope_scaling::yarn(8.0, 1024)),
      make_cfg(48, 48, 0, rope_style::half_split, posenc::rope_scaling::deepseek_yarn(40.0, 4096, 1.0, 1.0)),
      make_cfg(16, 8, 8, rope_style::half_split, posenc::rope_scaling::linear(4.0)),
      make_cfg(64, 64, 0, rope_style::half_split, posenc::rope_scaling::dynamic_ntk(4.0, 2048))};
  for (std::size_t i = 0; i < cfgs.size(); ++i) {
    for (index_t seq_len : {1, 100, 4096}) {
      posenc::make_rope_plan(cfgs[i], seq_len, plan);
      expect_same_plan(plan, posenc::make_rope_plan(cfgs[i], seq_len), "config " + std::to_string(i) + " seq_len " +
                                                                             std::to_string(seq_len));
      // No more pairs than the first plan: its storage is reused (no allocation on a rebuild).
      EXPECT_EQ(plan.inv_freq().data(), storage) << "config " << i;
    }
  }
}

// HF dynamic NTK: the base is unchanged while n <= M, and base*(F n/M - (F-1))^(R/(R-2)) after.
TEST(RopePlan, DynamicNtkPerLength) {
  constexpr index_t M = 2048, R = 64;
  constexpr double F = 4.0, base = 10000.0;
  const auto unscaled = posenc::make_rope_plan(make_cfg(R, R, 0, rope_style::half_split));
  const auto cfg = make_cfg(R, R, 0, rope_style::half_split, posenc::rope_scaling::dynamic_ntk(F, M));
  for (index_t n : std::array<index_t, 3>{1, 1000, M}) expect_same_plan(posenc::make_rope_plan(cfg, n), unscaled, "seq_len " + std::to_string(n));
  for (index_t n : std::array<index_t, 3>{M + 1, 3 * M, 100000}) {
    const auto plan = posenc::make_rope_plan(cfg, n);
    const double b = base * std::pow(F * static_cast<double>(n) / M - (F - 1.0), static_cast<double>(R) / (R - 2));
    for (index_t i = 0; i < R / 2; ++i) {
      const double w = std::pow(b, -2.0 * static_cast<double>(i) / R);
      EXPECT_NEAR(plan.inv_freq()[static_cast<std::size_t>(i)], w, 1e-14 * w) << "seq_len " << n << " pair " << i;
    }
    EXPECT_LT(plan.inv_freq()[1], unscaled.inv_freq()[1]) << "seq_len " << n;
  }
}

// vLLM dynamic NTK: evaluated once at n = M*F, whatever the length.
TEST(RopePlan, DynamicNtkFixedAtMaxIgnoresSeqLen) {
  constexpr index_t M = 1024, R = 32;
  constexpr double F = 3.0, base = 10000.0;
  const auto cfg = make_cfg(R, R, 0, rope_style::interleaved,
                            posenc::rope_scaling::dynamic_ntk(F, M, posenc::dynamic_ntk_policy::fixed_at_max));
  const auto ref = posenc::make_rope_plan(cfg, 0);
  const double b = base * std::pow(F * F - (F - 1.0), static_cast<double>(R) / (R - 2));  // n = M*F
  for (index_t i = 0; i < R / 2; ++i) {
    const double w = std::pow(b, -2.0 * static_cast<double>(i) / R);
    EXPECT_NEAR(ref.inv_freq()[static_cast<std::size_t>(i)], w, 1e-14 * w) << "pair " << i;
  }
  for (index_t n : std::array<index_t, 5>{1, M, M + 1, 3 * M, 1000000}) expect_same_plan(posenc::make_rope_plan(cfg, n), ref, "seq_len " + std::to_string(n));
}

// LongRoPE: which factor array each policy selects at which length; inv_freq_i = base^(-2i/R) / ext_i.
TEST(RopePlan, LongRopePolicies) {
  constexpr index_t M = 4096, R = 8;
  const std::vector<double> short_f{1.0, 1.25, 1.5, 2.0};
  const std::vector<double> long_f{1.5, 3.0, 7.0, 20.0};
  const auto expect_factors = [&](const posenc::rope_plan& plan, const std::vector<double>& ext, const std::string& what) {
    for (index_t i = 0; i < R / 2; ++i) {
      const double w = std::pow(10000.0, -2.0 * static_cast<double>(i) / R) / ext[static_cast<std::size_t>(i)];
      EXPECT_NEAR(plan.inv_freq()[static_cast<std::size_t>(i)], w, 1e-15 * w) << what << " pair " << i;
    }
    EXPECT_NEAR(plan.magnitude(), std::sqrt(1.0 + std::log(16.0) / std::log(4096.0)), 1e-15) << what;
  };
  const auto plan_for = [&](posenc::longrope_policy policy, index_t seq_len) {
    return posenc::make_rope_plan(
        make_cfg(R, R, 0, rope_style::half_split, posenc::rope_scaling::longrope(short_f, long_f, M, 16.0, policy)), seq_len);
  };
  using P = posenc::longrope_policy;
  expect_factors(plan_for(P::per_length, 1), short_f, "per_length 1");
  expect_factors(plan_for(P::per_length, M), short_f, "per_length M");
  expect_factors(plan_for(P::per_length, M + 1), long_f, "per_length M+1");
  expect_factors(plan_for(P::past_original, M + 1), short_f, "past_original M+1");
  expect_factors(plan_for(P::past_original, M + 2), long_f, "past_original M+2");
  expect_factors(plan_for(P::always_short, 1000000), short_f, "always_short 10^6");
  expect_factors(plan_for(P::always_long, 0), long_f, "always_long 0");
  expect_factors(plan_for(P::always_long, M), long_f, "always_long M");
}

}  // namespace
