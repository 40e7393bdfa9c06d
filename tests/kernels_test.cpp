// Every kernel on random shapes against its formula evaluated here, once per ISA (Kernels.*/<isa>; an ISA
// the CPU lacks is skipped by name). The shapes cover loop tails (head dims that no vector width divides,
// rotary_dim < D, windows at an offset), L = 1, empty batches, strided and padded views, every position
// form and every storage type, in and out of place and between storage types. The references are written
// from the formulas in long double, never from posenc's kernels, so a wrong vector op or a wrong tail fails
// here on the ISA that has it.
#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>
#include <posenc/posenc.hpp>
#include <posenc/detail/kernels/kernels.hpp>  // the kernels themselves, also under POSENC_SEPARATE_COMPILATION

#include "test_util.hpp"

namespace {

using posenc::index_t;
using namespace posenc_test;
using ld = long double;

template <class T>
double as_d(T v) {
  return posenc::detail::simd::load_as<double>(v);
}
template <class T>
T from_d(double v) {
  return posenc::detail::simd::store_as<T>(v);
}
template <class T>
constexpr int digits() {
  if constexpr (std::is_same_v<T, Eigen::half>) return 11;
  else if constexpr (std::is_same_v<T, Eigen::bfloat16>) return 8;
  else return std::numeric_limits<T>::digits;
}
/// frexp's exponent of T's smallest normal (numeric_limits' min_exponent): below it T's ulp is fixed.
template <class T>
constexpr int min_exponent() {
  if constexpr (std::is_same_v<T, Eigen::half>) return -13;
  else if constexpr (std::is_same_v<T, Eigen::bfloat16>) return -125;
  else return std::numeric_limits<T>::min_exponent;
}
/// Half an ulp of T at |v| (of the smallest normal below it; subnormals' spacing below T's smallest normal).
template <class T>
double half_ulp(double v) {
  int e = 0;
  std::frexp(std::max(std::fabs(v), 1e-300), &e);
  return std::ldexp(0.5, std::max(e, min_exponent<T>()) - digits<T>());
}
template <class T>
const char* tname() {
  return dtype_info<T>::name;
}

/// A buffer holding an (N, L, H, D) view with feature stride sf and padding after every head row and token,
/// the padding filled with a sentinel that no call may touch.
template <class T>
struct padded4 {
  std::vector<T> buf;
  posenc::strided_view<T, 4> view;
  std::vector<bool> used;
  padded4(std::array<index_t, 4> e, index_t sf, index_t pad_h, index_t pad_l) {
    const index_t sh = e[3] * sf + pad_h, sl = e[2] * sh + pad_l, sn = e[1] * sl + 1;
    const index_t size = std::max<index_t>(e[0] * sn, 1);
    buf.assign(static_cast<std::size_t>(size), from_d<T>(-777.0));
    used.assign(buf.size(), false);
    view = posenc::strided_view<T, 4>(buf.data(), e, {sn, sl, sh, sf});
    for (index_t n = 0; n < e[0]; ++n)
      for (index_t l = 0; l < e[1]; ++l)
        for (index_t h = 0; h < e[2]; ++h)
          for (index_t d = 0; d < e[3]; ++d) used[static_cast<std::size_t>(&view(n, l, h, d) - buf.data())] = true;
  }
  void fill(std::mt19937_64& g) {
    std::uniform_real_distribution<double> u(-2.0, 2.0);
    for (std::size_t i = 0; i < buf.size(); ++i)
      if (used[i]) buf[i] = from_d<T>(u(g));
  }
  bool padding_intact() const {
    for (std::size_t i = 0; i < buf.size(); ++i)
      if (!used[i] && as_d(buf[i]) != as_d(from_d<T>(-777.0))) return false;
    return true;
  }
};

/// Positions of every form for (N, L), with their backing arrays.
struct pos_case {
  std::vector<std::int64_t> p64;
  std::vector<std::int32_t> p32;
  posenc::positions pos = posenc::positions::offset(0);
  std::string name;
  pos_case(std::mt19937_64& g, index_t n, index_t l, index_t max_pos) {
    std::uniform_int_distribution<index_t> any(0, std::max<index_t>(max_pos - l, 0));
    const int form = static_cast<int>(g() % 5);
    if (form == 0 || max_pos < l) {
      pos = posenc::positions::offset(max_pos < l ? 0 : any(g));
      name = "offset";
    } else if (form == 1 || form == 2) {
      for (index_t i = 0; i < n; ++i) {
        p64.push_back(any(g));
        p32.push_back(static_cast<std::int32_t>(std::min<index_t>(p64.back(), 2000000000)));
      }
      pos = form == 1 ? posenc::positions::per_sequence(p64.data(), n) : posenc::positions::per_sequence(p32.data(), n);
      name = form == 1 ? "per_sequence64" : "per_sequence32";
    } else {
      const index_t stride = l + static_cast<index_t>(g() % 3);
      std::uniform_int_distribution<index_t> idp(0, max_pos);
      for (index_t i = 0; i < n * stride; ++i) {
        p64.push_back(idp(g));
        p32.push_back(static_cast<std::int32_t>(std::min<index_t>(p64.back(), 2000000000)));
      }
      pos = form == 3 ? posenc::positions::per_token(p64.data(), n, l, stride)
                      : posenc::positions::per_token(p32.data(), n, l, stride);
      name = form == 3 ? "per_token64" : "per_token32";
    }
  }
};

// ---- RoPE and the rotations built on it ---------------------------------------------------------------------

enum class rot { plan, cache_f, cache_d, backward };

/// The rotation of pair (a, b) by theta with magnitude m, in long double.
void rotate_ld(ld a, ld b, ld theta, ld m, ld& ya, ld& yb) {
  ya = m * (a * std::cos(theta) - b * std::sin(theta));
  yb = m * (b * std::cos(theta) + a * std::sin(theta));
}

struct rope_shape {
  posenc::rope_style style;
  index_t d, r, off, n, l, h, sf, pad_h, pad_l;
};

/// one_token: N = L = 1 (a decode step's call, which rope_rows rotates straight from the table row).
rope_shape random_shape(std::mt19937_64& g, bool one_token = false) {
  rope_shape s{};
  s.style = g() % 2 ? posenc::rope_style::half_split : posenc::rope_style::interleaved;
  s.r = 2 * static_cast<index_t>(1 + g() % 40);          // 2 .. 80: most are not multiples of 16 pairs
  s.off = g() % 3 == 0 ? static_cast<index_t>(g() % 5) : 0;
  s.d = s.r + s.off + (g() % 3 == 0 ? static_cast<index_t>(g() % 7) : 0);
  s.n = static_cast<index_t>(g() % 3) + (g() % 10 == 0 ? 0 : 1);
  s.l = g() % 4 == 0 ? 1 : static_cast<index_t>(g() % 6);
  s.h = static_cast<index_t>(1 + g() % 4);
  s.sf = g() % 5 == 0 ? 2 : 1;
  s.pad_h = g() % 3 == 0 ? static_cast<index_t>(g() % 4) : 0;
  s.pad_l = g() % 3 == 0 ? static_cast<index_t>(g() % 5) : 0;
  if (one_token) s.n = s.l = 1;
  return s;
}

/// Pair indices (first, second) of pair i in a window of r features.
std::pair<index_t, index_t> pair_of(posenc::rope_style st, index_t r, index_t i) {
  return st == posenc::rope_style::interleaved ? std::make_pair(2 * i, 2 * i + 1) : std::make_pair(i, i + r / 2);
}

/// Tolerance of a rotated value: the arithmetic's rounding of the products (a few ulps of A, or of the cache's
/// C when that is narrower), then one rounding to Out.
template <class A, class Out>
double rot_tol(ld mag_ab, ld ref, bool float_table) {
  const double eps = std::is_same_v<A, double> && !float_table ? 0x1p-49 : 0x1p-21;
  return static_cast<double>(mag_ab) * eps + half_ulp<Out>(static_cast<double>(ref)) + 1e-300;
}

template <class In, class Out>
void rope_case(std::mt19937_64& g, int idx, bool one_token = false) {
  constexpr bool same = std::is_same_v<In, Out>;
  const rope_shape s = random_shape(g, one_token);
  posenc::rope_config cfg;
  cfg.head_dim = s.d;
  cfg.rotary_dim = s.r;
  cfg.rotary_offset = s.off;
  cfg.style = s.style;
  cfg.base = g() % 2 ? 10000.0 : 500000.0;
  if (g() % 3 == 0) cfg.scaling = posenc::rope_scaling::yarn(4.0, 64);
  const posenc::rope_plan plan = posenc::make_rope_plan(cfg);
  const rot path = static_cast<rot>(g() % 4);
  const bool cached = path == rot::cache_f || path == rot::cache_d;
  const index_t max_pos = cached ? 3000 : (g() % 2 ? 5000 : 2000000);
  pos_case pc(g, s.n, s.l, max_pos);
  const bool in_place = same && g() % 2 == 0;
  padded4<In> x({s.n, s.l, s.h, s.d}, s.sf, s.pad_h, s.pad_l);
  x.fill(g);
  const auto x0 = x.buf;
  padded4<Out> y({s.n, s.l, s.h, s.d}, in_place ? s.sf : 1 + s.sf % 2, s.pad_l, s.pad_h);
  y.fill(g);
  const double sign = path == rot::backward ? -1.0 : 1.0;
  const std::string what = std::string("case ") + std::to_string(idx) + " " + tname<In>() + "->" + tname<Out>() +
                           (in_place ? " in place " : " out of place ") + pc.name + " path " +
                           std::to_string(static_cast<int>(path)) + " D " + std::to_string(s.d) + " R " +
                           std::to_string(s.r) + " off " + std::to_string(s.off) + " shape " + std::to_string(s.n) + "x" +
                           std::to_string(s.l) + "x" + std::to_string(s.h);
  auto run = [&](const auto& freq) {
    if constexpr (same) {
      if (in_place) {
        if (path == rot::backward) posenc::apply_rope_backward(freq, x.view, pc.pos);
        else posenc::apply_rope(freq, x.view, pc.pos);
        return;
      }
    }
    const posenc::strided_view<const In, 4> in(x.view);
    if (path == rot::backward) posenc::apply_rope_backward(freq, in, y.view, pc.pos);
    else posenc::apply_rope(freq, in, y.view, pc.pos);
  };
  if (path == rot::cache_f) run(posenc::rope_cache<float>(plan, max_pos + 1));
  else if (path == rot::cache_d) run(posenc::rope_cache<double>(plan, max_pos + 1));
  else run(plan);

  using A = posenc::detail::simd::acc2_t<In, Out>;
  const bool float_table = path == rot::cache_f;
  const auto& w = plan.inv_freq();
  const ld m = plan.magnitude();
  const auto in_at = [&](index_t n, index_t l, index_t hh, index_t f) {
    return static_cast<ld>(as_d(x0[static_cast<std::size_t>(&x.view(n, l, hh, f) - x.buf.data())]));
  };
  int bad = 0;
  for (index_t n = 0; n < s.n; ++n)
    for (index_t l = 0; l < s.l; ++l) {
      const index_t p = pc.pos.at(n, l);
      for (index_t hh = 0; hh < s.h; ++hh) {
        const auto out_at = [&](index_t f) -> double {
          return in_place ? as_d(x.view(n, l, hh, f)) : as_d(y.view(n, l, hh, f));
        };
        for (index_t f = 0; f < s.d; ++f) {  // pass-through features: copied, one rounding to Out
          if (f >= s.off && f < s.off + s.r) continue;
          const double want = as_d(from_d<Out>(static_cast<double>(in_at(n, l, hh, f))));
          if (out_at(f) != want && bad++ < 3) {
            ADD_FAILURE() << what << ": pass-through feature " << f;
          }
        }
        for (index_t i = 0; i < s.r / 2; ++i) {
          const auto [fa, fb] = pair_of(s.style, s.r, i);
          const ld a = in_at(n, l, hh, s.off + fa), b = in_at(n, l, hh, s.off + fb);
          const ld theta = sign * static_cast<ld>(static_cast<double>(p) * w[static_cast<std::size_t>(i)]);
          ld ya, yb;
          rotate_ld(a, b, theta, m, ya, yb);
          const double ta = rot_tol<A, Out>(m * (std::fabs(a) + std::fabs(b)), ya, float_table);
          const double tb = rot_tol<A, Out>(m * (std::fabs(a) + std::fabs(b)), yb, float_table);
          if ((!(std::fabs(out_at(s.off + fa) - static_cast<double>(ya)) <= ta) ||
               !(std::fabs(out_at(s.off + fb) - static_cast<double>(yb)) <= tb)) &&
              bad++ < 3)
            ADD_FAILURE() << what << ": token (" << n << ", " << l << ") head " << hh << " pair " << i << " position " << p
                          << ": got (" << out_at(s.off + fa) << ", " << out_at(s.off + fb) << ") want (" << static_cast<double>(ya)
                          << ", " << static_cast<double>(yb) << ")";
        }
      }
    }
  EXPECT_TRUE(x.padding_intact()) << what;
  if (!in_place) {
    EXPECT_TRUE(y.padding_intact()) << what;
    EXPECT_TRUE(x.buf == x0 || std::equal(x.buf.begin(), x.buf.end(), x0.begin(), [](In a, In b) { return same_bits(a, b); })) << what << ": input changed";
  }
}

class Kernels : public IsaOnlyTest {};

TEST_P(Kernels, RopeRandomShapesEveryDtypeAndPath) {
  std::mt19937_64 g(1234 + static_cast<unsigned>(GetParam()));
  for (int i = 0; i < 150; ++i) {
    rope_case<float, float>(g, i);
    rope_case<double, double>(g, i);
    rope_case<Eigen::half, Eigen::half>(g, i);
    rope_case<Eigen::bfloat16, Eigen::bfloat16>(g, i);
  }
}

// One token (N = L = 1), every style, window, stride and path, against the formula. (In place from a table of
// the arithmetic type, half-split, rope_rows rotates straight from the table rows at any token count
// (rope_rows_in_place): RopeRandomShapesEveryDtypeAndPath's in-place cache cases take that way too.)
TEST_P(Kernels, RopeOneTokenEveryDtypeAndPath) {
  std::mt19937_64 g(4321 + static_cast<unsigned>(GetParam()));
  for (int i = 0; i < 100; ++i) {
    rope_case<float, float>(g, i, true);
    rope_case<double, double>(g, i, true);
    rope_case<Eigen::half, Eigen::half>(g, i, true);
    rope_case<Eigen::bfloat16, Eigen::bfloat16>(g, i, true);
  }
}

// Calls whose rows are past L1 (over 128 KiB moved, at most 32 MiB: rope_narrow_bytes): the AVX-512 target runs
// fp32 rows from a table on the AVX2 kernels (rope_rows), and keeps its own for double rows and for the plan's.
// fp32 and double in place, from a table and from the plan, against the formula, as every other size
// (Backward: apply_rope_backward, the angle negated); in L2 (16 and 8 tokens) and in L3.
template <class T, bool Cached, bool Backward = false>
void rope_past_l1_case(index_t tokens) {
  constexpr index_t H = 32, D = 128, P0 = 11;
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  posenc::rope_config cfg;
  cfg.head_dim = D;
  cfg.base = 500000.0;
  const posenc::rope_plan plan = posenc::make_rope_plan(cfg);
  ASSERT_GT(tokens * H * D * index_t{2 * sizeof(T)}, posenc::detail::rope_narrow_bytes);
  ASSERT_LE(tokens * H * D * index_t{2 * sizeof(T)}, posenc::detail::rope_stream_bytes);
  std::vector<T> x(static_cast<std::size_t>(tokens * H * D));
  std::mt19937_64 g(77);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (auto& e : x) e = static_cast<T>(u(g));
  const auto x0 = x;
  posenc::strided_view<T, 4> v(x.data(), {1, tokens, H, D});
  const auto pos = posenc::positions::offset(P0);
  if constexpr (Cached && Backward) posenc::apply_rope_backward(posenc::rope_cache<T>(plan, P0 + tokens), v, pos);
  else if constexpr (Cached) posenc::apply_rope(posenc::rope_cache<T>(plan, P0 + tokens), v, pos);
  else if constexpr (Backward) posenc::apply_rope_backward(plan, v, pos);
  else posenc::apply_rope(plan, v, pos);
  const auto& w = plan.inv_freq();
  int bad = 0;
  for (index_t l = 0; l < tokens; ++l)
    for (index_t h = 0; h < H; ++h)
      for (index_t i = 0; i < D / 2; ++i) {
        const std::size_t ia = static_cast<std::size_t>((l * H + h) * D + i), ib = ia + D / 2;
        const ld a = x0[ia], b = x0[ib];
        ld ya, yb;
        const ld theta = static_cast<ld>(static_cast<double>(P0 + l) * w[static_cast<std::size_t>(i)]);
        rotate_ld(a, b, Backward ? -theta : theta, 1.0L, ya, yb);
        const bool float_table = Cached && std::is_same_v<T, float>;
        const double tol = rot_tol<T, T>(std::fabs(a) + std::fabs(b), ya, float_table);
        const double tol_b = rot_tol<T, T>(std::fabs(a) + std::fabs(b), yb, float_table);
        if ((!(std::fabs(static_cast<double>(x[ia]) - static_cast<double>(ya)) <= tol) ||
             !(std::fabs(static_cast<double>(x[ib]) - static_cast<double>(yb)) <= tol_b)) &&
            bad++ < 3)
          ADD_FAILURE() << tname<T>() << (Cached ? " table" : " plan") << (Backward ? " backward" : "") << ": token " << l << " head " << h << " pair " << i;
      }
}

TEST_P(Kernels, RopeRowsPastL1AgainstFormula) {
  rope_past_l1_case<float, true>(16);
  rope_past_l1_case<float, false>(16);
  rope_past_l1_case<double, true, true>(8);
  rope_past_l1_case<float, true>(136);
  rope_past_l1_case<float, false, true>(136);
  rope_past_l1_case<double, true>(72);
  rope_past_l1_case<double, true, true>(72);
}

// Mixed storage: float q/k rotated straight into a half, bfloat16 or double KV cache (one rounding), and back.
TEST_P(Kernels, RopeMixedStorage) {
  std::mt19937_64 g(99 + static_cast<unsigned>(GetParam()));
  for (int i = 0; i < 80; ++i) {
    rope_case<float, Eigen::half>(g, i);
    rope_case<float, Eigen::bfloat16>(g, i);
    rope_case<float, double>(g, i);
    rope_case<Eigen::half, float>(g, i);
    rope_case<double, float>(g, i);
    rope_case<Eigen::bfloat16, Eigen::half>(g, i);
  }
}

// The exactness contract of the cache-free path: fp32 outputs within 2e-6 of the float64 formula for any
// position below 2^24 (|x| <= 1, magnitude 1), with the angle p * w formed exactly in the reference.
TEST_P(Kernels, CacheFreeFloatWithin2e6UpToTwoToThe24) {
  std::mt19937_64 g(2024);
  std::uniform_int_distribution<index_t> any(0, (index_t{1} << 24) - 1);
  double worst = 0.0;
  for (auto style : {posenc::rope_style::half_split, posenc::rope_style::interleaved})
    for (double base : {10000.0, 500000.0}) {
      posenc::rope_config cfg;
      cfg.head_dim = 128;
      cfg.base = base;
      cfg.style = style;
      const auto plan = posenc::make_rope_plan(cfg);
      std::vector<std::int64_t> ids(256);
      for (auto& v : ids) v = any(g);
      ids[0] = (index_t{1} << 24) - 1;
      ids[1] = 0;
      ids[2] = 16777215 - 12345;
      std::vector<float> x(ids.size() * 128);
      std::uniform_real_distribution<float> u(-1.0f, 1.0f);
      for (auto& v : x) v = u(g);
      const auto x0 = x;
      posenc::apply_rope(plan, posenc::strided_view<float, 4>(x.data(), {1, 256, 1, 128}),
                         posenc::positions::per_token(ids.data(), 1, 256));
      for (index_t t = 0; t < 256; ++t)
        for (index_t i = 0; i < 64; ++i) {
          const auto [fa, fb] = pair_of(style, 128, i);
          // The exact angle: p * w_i with w_i = base^(-2i/128) in long double.
          const ld theta = static_cast<ld>(ids[static_cast<std::size_t>(t)]) * std::pow(static_cast<ld>(base), -2.0L * i / 128);
          ld ya, yb;
          rotate_ld(x0[static_cast<std::size_t>(t * 128 + fa)], x0[static_cast<std::size_t>(t * 128 + fb)], theta, 1.0L, ya, yb);
          const double ea = std::fabs(static_cast<double>(ya) - x[static_cast<std::size_t>(t * 128 + fa)]);
          const double eb = std::fabs(static_cast<double>(yb) - x[static_cast<std::size_t>(t * 128 + fb)]);
          worst = std::max({worst, ea, eb});
          ASSERT_LE(std::max(ea, eb), 2e-6) << "position " << ids[static_cast<std::size_t>(t)] << " pair " << i;
        }
    }
  RecordProperty("max_abs_error", sci(worst));
}

// The float cache-free paths step cos/sin from an anchor every 16 positions by angle addition (rope-inl.hpp,
// polar_stepper): a consecutive walk near 2^24 stays within 2e-6 of the exact formula, and the bits at a
// position do not depend on how it was reached (offset walk, per-token ids in reverse, a walk starting
// mid-period, one token at a time).
TEST_P(Kernels, CacheFreeFloatStepsAreExactAndWalkIndependent) {
  for (auto style : {posenc::rope_style::half_split, posenc::rope_style::interleaved}) {
    posenc::rope_config cfg;
    cfg.head_dim = 64;
    cfg.base = 10000.0;
    cfg.style = style;
    const auto plan = posenc::make_rope_plan(cfg);
    for (index_t start : {index_t{0}, index_t{7}, (index_t{1} << 24) - 70}) {
      const index_t l = 50;
      std::mt19937_64 g(static_cast<std::uint64_t>(start));
      std::uniform_real_distribution<float> u(-1.0f, 1.0f);
      std::vector<float> x0(static_cast<std::size_t>(l * 2 * 64));
      for (auto& v : x0) v = u(g);
      auto walk = x0;
      posenc::apply_rope(plan, posenc::strided_view<float, 4>(walk.data(), {1, l, 2, 64}), posenc::positions::offset(start));
      std::vector<std::int64_t> ids(static_cast<std::size_t>(l));
      for (index_t t = 0; t < l; ++t) ids[static_cast<std::size_t>(t)] = start + t;
      std::vector<std::int64_t> rev(ids.rbegin(), ids.rend());
      std::vector<float> x0_rev(x0.size());
      for (index_t t = 0; t < l; ++t)
        std::copy_n(x0.begin() + (l - 1 - t) * 128, 128, x0_rev.begin() + t * 128);
      auto backwards = x0_rev;
      posenc::apply_rope(plan, posenc::strided_view<float, 4>(backwards.data(), {1, l, 2, 64}),
                         posenc::positions::per_token(rev.data(), 1, l));
      auto singles = x0;
      for (index_t t = 0; t < l; ++t)
        posenc::apply_rope(plan, posenc::strided_view<float, 4>(singles.data() + t * 128, {1, 1, 2, 64}),
                           posenc::positions::offset(start + t));
      for (index_t t = 0; t < l; ++t)
        for (index_t f = 0; f < 128; ++f) {
          const auto i = static_cast<std::size_t>(t * 128 + f);
          const auto j = static_cast<std::size_t>((l - 1 - t) * 128 + f);
          ASSERT_TRUE(same_bits(walk[i], backwards[j])) << "reverse walk, position " << start + t << " feature " << f;
          ASSERT_TRUE(same_bits(walk[i], singles[i])) << "one token per call, position " << start + t << " feature " << f;
        }
      for (index_t t = 0; t < l; ++t)
        for (index_t h = 0; h < 2; ++h)
          for (index_t i = 0; i < 32; ++i) {
            const auto [fa, fb] = pair_of(style, 64, i);
            const auto row = static_cast<std::size_t>((t * 2 + h) * 64);
            const ld theta = static_cast<ld>(start + t) * std::pow(10000.0L, -2.0L * i / 64);
            ld ya, yb;
            rotate_ld(x0[row + static_cast<std::size_t>(fa)], x0[row + static_cast<std::size_t>(fb)], theta, 1.0L, ya, yb);
            ASSERT_LE(std::fabs(static_cast<double>(ya) - walk[row + static_cast<std::size_t>(fa)]), 2e-6) << start + t;
            ASSERT_LE(std::fabs(static_cast<double>(yb) - walk[row + static_cast<std::size_t>(fb)]), 2e-6) << start + t;
          }
    }
  }
}

// Positions past the exact-reduction limit (|theta| >= 2^24) take libm per pair: still the double formula.
TEST_P(Kernels, CacheFreeBeyondTwoToThe24UsesExactReduction) {
  posenc::rope_config cfg;
  cfg.head_dim = 8;
  const auto plan = posenc::make_rope_plan(cfg);
  for (std::int64_t p : {std::int64_t{1} << 24, (std::int64_t{1} << 40) + 7, (std::int64_t{1} << 53) - 1}) {
    std::vector<double> x(8, 0.0);
    x[0] = 1.0;  // pair 0 of half-split: (x[0], x[4]) = (1, 0) -> (cos p, sin p)
    posenc::apply_rope(plan, posenc::strided_view<double, 4>(x.data(), {1, 1, 1, 8}), posenc::positions::offset(p));
    EXPECT_NEAR(x[0], std::cos(static_cast<double>(p)), 1e-15) << p;
    EXPECT_NEAR(x[4], std::sin(static_cast<double>(p)), 1e-15) << p;
  }
}

// q and k of one fused QKV buffer with GQA, both at once, equal the separate calls; xPos and MRoPE too.
TEST_P(Kernels, FusedQkAndVariantsAgainstFormula) {
  std::mt19937_64 g(7);
  const index_t L = 5, HQ = 4, HK = 2, D = 40;  // D = 40: 20 pairs, a tail for every vector width
  const index_t row = (HQ + 2 * HK) * D;
  std::vector<float> qkv(static_cast<std::size_t>(L * row));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto& v : qkv) v = u(g);
  const auto qkv0 = qkv;
  posenc::strided_view<float, 4> q(qkv.data(), {1, L, HQ, D}, {L * row, row, D, 1});
  posenc::strided_view<float, 4> k(qkv.data() + HQ * D, {1, L, HK, D}, {L * row, row, D, 1});
  // xPos on q and k: q scaled up, k down, around centre C.
  posenc::xpos_config xc;
  xc.head_dim = D;
  const posenc::xpos_plan xp(xc);
  const index_t C = 3, P0 = 1000;
  posenc::apply_xpos_qk(xp, q, k, posenc::positions::offset(P0), C);
  for (index_t l = 0; l < L; ++l)
    for (index_t hh = 0; hh < HQ + HK; ++hh)
      for (index_t i = 0; i < D / 2; ++i) {
        const bool is_q = hh < HQ;
        const index_t base = l * row + hh * D;
        const ld a = qkv0[static_cast<std::size_t>(base + 2 * i)], b = qkv0[static_cast<std::size_t>(base + 2 * i + 1)];
        const ld theta = static_cast<ld>(static_cast<double>(P0 + l) * xp.inv_freq()[static_cast<std::size_t>(i)]);
        const ld zeta = (2.0L * i / D + 0.4L) / 1.4L;
        const ld scale = std::pow(zeta, (is_q ? 1.0L : -1.0L) * static_cast<ld>(P0 + l - C) / 512.0L);
        ld ya, yb;
        rotate_ld(a, b, theta, scale, ya, yb);
        EXPECT_NEAR(qkv[static_cast<std::size_t>(base + 2 * i)], static_cast<double>(ya), 2e-6 * std::max(1.0, std::fabs(static_cast<double>(ya))));
        EXPECT_NEAR(qkv[static_cast<std::size_t>(base + 2 * i + 1)], static_cast<double>(yb), 2e-6 * std::max(1.0, std::fabs(static_cast<double>(yb))));
      }
  // V is untouched.
  for (index_t l = 0; l < L; ++l)
    for (index_t f = (HQ + HK) * D; f < row; ++f)
      EXPECT_EQ(qkv[static_cast<std::size_t>(l * row + f)], qkv0[static_cast<std::size_t>(l * row + f)]);

  // MRoPE (chunked sections) against the per-pair formula.
  posenc::rope_config rc;
  rc.head_dim = D;
  const posenc::mrope_plan mp(posenc::make_rope_plan(rc), {4, 8, 8}, posenc::mrope_layout::chunked);
  std::vector<std::int64_t> thw(static_cast<std::size_t>(3 * L));
  for (auto& v : thw) v = static_cast<std::int64_t>(g() % 100000);
  std::vector<double> xm(static_cast<std::size_t>(L * D));
  for (auto& v : xm) v = u(g);
  const auto xm0 = xm;
  posenc::apply_mrope(mp, posenc::strided_view<double, 4>(xm.data(), {1, L, 1, D}), posenc::mrope_positions::shared(thw.data(), L));
  for (index_t l = 0; l < L; ++l)
    for (index_t i = 0; i < D / 2; ++i) {
      const index_t axis = mp.axis()[static_cast<std::size_t>(i)];
      const double p = static_cast<double>(thw[static_cast<std::size_t>(axis * L + l)]);
      ld ya, yb;
      rotate_ld(xm0[static_cast<std::size_t>(l * D + i)], xm0[static_cast<std::size_t>(l * D + i + D / 2)],
                static_cast<ld>(p * mp.plan().inv_freq()[static_cast<std::size_t>(i)]), 1.0L, ya, yb);
      EXPECT_NEAR(xm[static_cast<std::size_t>(l * D + i)], static_cast<double>(ya), 1e-13);
      EXPECT_NEAR(xm[static_cast<std::size_t>(l * D + i + D / 2)], static_cast<double>(yb), 1e-13);
    }
}

// K-shift and re-rotation against the formula (double, so the bound is tight).
TEST_P(Kernels, ShiftAndRerotateAgainstFormula) {
  std::mt19937_64 g(8);
  posenc::rope_config a, b;
  a.head_dim = b.head_dim = 36;
  a.base = 10000.0;
  b.base = 10000.0;
  b.scaling = posenc::rope_scaling::linear(3.0);
  const auto pa = posenc::make_rope_plan(a), pb = posenc::make_rope_plan(b);
  const index_t L = 7;
  std::vector<double> x(static_cast<std::size_t>(L * 36));
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (auto& v : x) v = u(g);
  auto y = x;
  std::vector<std::int64_t> deltas(static_cast<std::size_t>(L + 2));
  for (auto& v : deltas) v = static_cast<std::int64_t>(g() % 20001) - 10000;
  posenc::shift_rope(pa, posenc::strided_view<double, 4>(y.data(), {1, L, 1, 36}), deltas.data(), 1, L, L + 2);
  auto z = x;
  posenc::rerotate_rope(pa, pb, posenc::strided_view<double, 4>(z.data(), {1, L, 1, 36}), posenc::positions::offset(500));
  for (index_t l = 0; l < L; ++l)
    for (index_t i = 0; i < 18; ++i) {
      const ld xa = x[static_cast<std::size_t>(l * 36 + i)], xb = x[static_cast<std::size_t>(l * 36 + i + 18)];
      ld ya, yb;
      rotate_ld(xa, xb, static_cast<ld>(static_cast<double>(deltas[static_cast<std::size_t>(l)]) * pa.inv_freq()[static_cast<std::size_t>(i)]),
                1.0L, ya, yb);
      EXPECT_NEAR(y[static_cast<std::size_t>(l * 36 + i)], static_cast<double>(ya), 1e-13);
      EXPECT_NEAR(y[static_cast<std::size_t>(l * 36 + i + 18)], static_cast<double>(yb), 1e-13);
      const double p = static_cast<double>(500 + l);
      const ld th = static_cast<ld>(p * pb.inv_freq()[static_cast<std::size_t>(i)]) - static_cast<ld>(p * pa.inv_freq()[static_cast<std::size_t>(i)]);
      rotate_ld(xa, xb, th, 1.0L, ya, yb);
      EXPECT_NEAR(z[static_cast<std::size_t>(l * 36 + i)], static_cast<double>(ya), 1e-12);
      EXPECT_NEAR(z[static_cast<std::size_t>(l * 36 + i + 18)], static_cast<double>(yb), 1e-12);
    }
}

// ---- ALiBi: fma(slope, j - q, score) in double rounded to T once (or the product first): bit for bit ---------

template <class T>
void alibi_case(std::mt19937_64& g, int idx) {
  // Up to 5 heads, or more than one 64-head chunk of the kernel's slopes.
  const index_t N = static_cast<index_t>(1 + g() % 2), H = static_cast<index_t>(g() % 8 == 0 ? 66 + g() % 6 : 1 + g() % 5);
  const index_t lq = static_cast<index_t>(1 + g() % 4), lk = static_cast<index_t>(g() % 70);
  const index_t sk = g() % 4 == 0 ? 2 : 1;
  const bool heads_inner = g() % 3 == 0;  // [N, Lq, H, Lk] in memory: the kernel walks heads inside each query
  std::vector<T> buf(static_cast<std::size_t>(N * H * lq * (lk * sk + 3) + 1));
  std::uniform_real_distribution<double> u(-4.0, 4.0);
  for (auto& v : buf) v = from_d<T>(u(g));
  const auto buf0 = buf;
  const index_t si = lk * sk + 3;
  const std::array<index_t, 4> strides =
      heads_inner ? std::array<index_t, 4>{H * lq * si, si, H * si, sk} : std::array<index_t, 4>{H * lq * si, lq * si, si, sk};
  posenc::strided_view<T, 4> s(buf.data(), {N, H, lq, lk}, strides);
  pos_case pc(g, N, lq, 5000);
  posenc::alibi_config cfg;
  // Head counts up to 8 have power-of-two slopes (the kernels' float path), larger ones irrational slopes
  // for most heads (the double path): both, against the same one-rounding rule.
  cfg.num_heads = H + static_cast<index_t>(g() % 3) + (g() % 2 ? 16 : 0);
  cfg.head_end = H;
  cfg.form = g() % 3 == 0 ? posenc::alibi_form::symmetric : posenc::alibi_form::linear;
  const auto mask = g() % 2 ? posenc::alibi_mask::causal : posenc::alibi_mask::none;
  posenc::add_alibi_bias(cfg, s, pc.pos, mask);
  int bad = 0;
  for (std::size_t e = 0; e < buf.size(); ++e) {
    const index_t off = static_cast<index_t>(e);
    const index_t n = off / (H * lq * si), rem = off % (H * lq * si);
    const index_t outer = heads_inner ? rem / (H * si) : rem / (lq * si), r2 = heads_inner ? rem % (H * si) : rem % (lq * si);
    const index_t h = heads_inner ? r2 / si : outer, i = heads_inner ? outer : r2 / si, c = r2 % si;
    T want = buf0[e], want2 = buf0[e];
    if (n < N && c % sk == 0 && c / sk < lk) {
      const index_t j = c / sk, q = pc.pos.at(n, i);
      const double slope = posenc::alibi_slope(h, cfg.num_heads, cfg.max_bias);
      const index_t d = j - q;
      const double dist = static_cast<double>(cfg.form == posenc::alibi_form::symmetric && d > 0 ? -d : d);
      if (mask == posenc::alibi_mask::causal && d > 0) {
        want = want2 = from_d<T>(-INFINITY);
      } else {  // one fused multiply-add, or (portable kernel without FMA) the product rounded first
        want = from_d<T>(std::fma(slope, dist, as_d(buf0[e])));
        want2 = from_d<T>(as_d(buf0[e]) + slope * dist);
      }
    }
    if (!same_bits(buf[e], want) && !same_bits(buf[e], want2) && bad++ < 3)
      ADD_FAILURE() << "alibi case " << idx << " " << tname<T>() << " " << pc.name << (heads_inner ? " heads inner" : "") << " H=" << H
                    << " element " << e << ": got " << as_d(buf[e])
                    << " want " << as_d(want);
  }
}

TEST_P(Kernels, AlibiAddOneRoundingEveryDtypeStrideAndForm) {
  std::mt19937_64 g(31);
  for (int i = 0; i < 60; ++i) {
    alibi_case<float>(g, i);
    alibi_case<double>(g, i);
    alibi_case<Eigen::half>(g, i);
    alibi_case<Eigen::bfloat16>(g, i);
  }
}

// ---- sinusoidal and learned additions ------------------------------------------------------------------------------

template <class T>
void sinusoidal_case(std::mt19937_64& g, int idx) {
  posenc::sinusoidal_config cfg;
  // One in four rows long enough for several spans of pairs (sinusoid_span) and chunks (sinusoid_chunk), ending
  // mid-span and mid-vector.
  cfg.dim = 2 * static_cast<index_t>(g() % 4 == 0 ? 1 + g() % 1100 : 1 + g() % 40);
  cfg.layout = g() % 2 ? posenc::sinusoidal_layout::concat : posenc::sinusoidal_layout::interleaved;
  if (g() % 3 == 0) cfg.padding_idx = 1;
  const index_t N = static_cast<index_t>(1 + g() % 3), L = static_cast<index_t>(1 + g() % 5), sd = g() % 4 == 0 ? 2 : 1;
  std::vector<T> buf(static_cast<std::size_t>(N * L * cfg.dim * sd));
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (auto& v : buf) v = from_d<T>(u(g));
  const auto buf0 = buf;
  // One in three out of place, into a buffer of the same strides whose gaps must keep their fill.
  const bool oop = g() % 3 == 0;
  std::vector<T> out(oop ? buf.size() : 0, from_d<T>(7.0));
  const std::array<index_t, 3> shape{N, L, cfg.dim}, strides{L * cfg.dim * sd, cfg.dim * sd, sd};
  posenc::strided_view<T, 3> x(buf.data(), shape, strides);
  pos_case pc(g, N, L, cfg.padding_idx ? 6 : 100000);  // small positions with a padding index: some rows are zero
  if (oop) {
    posenc::add_sinusoidal(cfg, posenc::strided_view<const T, 3>(buf.data(), shape, strides),
                           posenc::strided_view<T, 3>(out.data(), shape, strides), pc.pos);
  } else {
    posenc::add_sinusoidal(cfg, x, pc.pos);
  }
  const std::vector<T>& got = oop ? out : buf;
  const auto w = posenc::sinusoidal_frequencies(cfg);
  const index_t half = cfg.dim / 2;
  for (index_t n = 0; n < N; ++n)
    for (index_t l = 0; l < L; ++l) {
      const index_t p = pc.pos.at(n, l);
      for (index_t f = 0; f < cfg.dim; ++f) {
        const index_t i = cfg.layout == posenc::sinusoidal_layout::concat ? f % half : f / 2;
        const bool is_sin = cfg.layout == posenc::sinusoidal_layout::concat ? f < half : f % 2 == 0;
        const ld th = static_cast<ld>(static_cast<double>(p) * w[static_cast<std::size_t>(i)]);
        ld add = is_sin ? std::sin(th) : std::cos(th);
        if (cfg.padding_idx && p == *cfg.padding_idx) add = 0;
        const std::size_t e = static_cast<std::size_t>(&x(n, l, f) - buf.data());
        const ld want = static_cast<ld>(as_d(buf0[e])) + add;
        // Narrower rows step the angle (polar_stepper): their sum is within 2^-46 of sin(p w_i) with p w_i exact,
        // not of sin(fl(p w_i)) taken here (up to |theta| 2^-53 apart); rounded once to float, and 16-bit types
        // through float (store_as: two roundings, as Eigen's half(double)).
        const double wd = static_cast<double>(want);
        const double slack = std::ldexp(std::fabs(static_cast<double>(th)), -53) + 0x1p-45;
        const double tol = std::is_same_v<T, double>
                               ? 1e-14
                               : half_ulp<T>(wd) + (sizeof(T) == 2 ? half_ulp<float>(wd) : 0.0) + slack;
        ASSERT_NEAR(as_d(got[e]), static_cast<double>(want), tol)
            << "sinusoidal case " << idx << " " << tname<T>() << (oop ? " out of place" : " in place") << " D "
            << cfg.dim << " (" << n << ", " << l << ", " << f << ") position " << p;
      }
    }
  for (std::size_t e = 0; e < buf.size(); ++e) {
    if (oop) {
      ASSERT_TRUE(same_bits(buf[e], buf0[e])) << "input written, case " << idx;
    }
    if ((e % static_cast<std::size_t>(sd)) != 0) {
      ASSERT_TRUE(same_bits(got[e], oop ? from_d<T>(7.0) : buf0[e])) << "stride gap written, case " << idx;
    }
  }
}

TEST_P(Kernels, SinusoidalAddEveryLayoutDtypeAndStride) {
  std::mt19937_64 g(41);
  for (int i = 0; i < 40; ++i) {
    sinusoidal_case<float>(g, i);
    sinusoidal_case<double>(g, i);
    sinusoidal_case<Eigen::half>(g, i);
    sinusoidal_case<Eigen::bfloat16>(g, i);
  }
}

template <class T, class C>
void learned_case(std::mt19937_64& g, int idx) {
  posenc::learned_config cfg;
  cfg.max_positions = 50;
  cfg.dim = static_cast<index_t>(1 + g() % 70);
  cfg.scale = g() % 2 ? 1.0 : 0.75;
  cfg.position_offset = static_cast<index_t>(g() % 3);
  posenc::learned_position_embedding<C> m(cfg);
  m.init_normal(g(), 0.5);
  const index_t N = static_cast<index_t>(1 + g() % 3), L = static_cast<index_t>(1 + g() % 5), sd = g() % 4 == 0 ? 3 : 1;
  std::vector<T> buf(static_cast<std::size_t>(N * L * cfg.dim * sd));
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (auto& v : buf) v = from_d<T>(u(g));
  const auto buf0 = buf;
  posenc::strided_view<T, 3> x(buf.data(), {N, L, cfg.dim}, {L * cfg.dim * sd, cfg.dim * sd, sd});
  pos_case pc(g, N, L, cfg.max_positions - 1);
  m.forward(x, pc.pos);
  using A = posenc::detail::simd::acc2_t<T, C>;
  for (index_t n = 0; n < N; ++n)
    for (index_t l = 0; l < L; ++l)
      for (index_t f = 0; f < cfg.dim; ++f) {
        const std::size_t e = static_cast<std::size_t>(&x(n, l, f) - buf.data());
        const ld ev = static_cast<ld>(static_cast<double>(m.table()(pc.pos.at(n, l) + cfg.position_offset, f)));
        const ld want = static_cast<ld>(as_d(buf0[e])) + static_cast<ld>(cfg.scale) * ev;
        const double tol = (std::is_same_v<A, double> ? 0x1p-51 : 0x1p-22) * (1.0 + std::fabs(static_cast<double>(ev))) +
                           half_ulp<T>(static_cast<double>(want));
        EXPECT_NEAR(as_d(buf[e]), static_cast<double>(want), tol) << "learned case " << idx << " " << tname<T>() << " (" << n << ", "
                                                                << l << ", " << f << ")";
      }
}

TEST_P(Kernels, LearnedAddEveryDtypeTableTypeAndStride) {
  std::mt19937_64 g(51);
  for (int i = 0; i < 30; ++i) {
    learned_case<float, float>(g, i);
    learned_case<double, float>(g, i);
    learned_case<Eigen::half, float>(g, i);
    learned_case<Eigen::bfloat16, double>(g, i);
    learned_case<float, double>(g, i);
  }
}

// ---- T5 bias expansion and layout conversion: bit for bit ---------------------------------------------------------

template <class T>
void t5_case(std::mt19937_64& g, int idx) {
  posenc::t5_bucket_config cfg;
  cfg.bidirectional = g() % 2 == 0;
  cfg.num_buckets = static_cast<index_t>(4 + g() % 61);
  const index_t per_dir = cfg.bidirectional ? cfg.num_buckets / 2 : cfg.num_buckets;
  cfg.max_distance = per_dir / 2 + 1 + static_cast<index_t>(g() % 300);
  const index_t H = static_cast<index_t>(1 + g() % 4), lq = static_cast<index_t>(1 + g() % 9), lk = static_cast<index_t>(g() % 400);
  const index_t off = g() % 2 ? 0 : static_cast<index_t>(g() % 1000);
  posenc::t5_relative_bias<double> rel(H, cfg);
  rel.init_normal(g(), 1.0);
  const index_t sk = g() % 4 == 0 ? 2 : 1;
  std::vector<T> buf(static_cast<std::size_t>(H * lq * lk * sk + 1), from_d<T>(-5.0));
  posenc::strided_view<T, 3> bias(buf.data(), {H, lq, lk}, {lq * lk * sk, lk * sk, sk});
  rel.forward(bias, off);
  int bad = 0;
  for (index_t h = 0; h < H; ++h)
    for (index_t i = 0; i < lq; ++i)
      for (index_t j = 0; j < lk; ++j) {
        const auto b = posenc::t5_relative_bucket(j - (i + off), cfg.bidirectional, cfg.num_buckets, cfg.max_distance);
        const T want = from_d<T>(rel.table()(b, h));
        if (!same_bits(bias(h, i, j), want) && bad++ < 3)
          ADD_FAILURE() << "t5 case " << idx << " " << tname<T>() << " buckets " << cfg.num_buckets << " maxd " << cfg.max_distance
                        << (cfg.bidirectional ? " bidir" : " causal") << " (" << h << ", " << i << ", " << j << ") offset " << off;
      }
  for (std::size_t e = 0; e < buf.size(); ++e)
    if (e % static_cast<std::size_t>(sk) != 0 || e + 1 == buf.size()) {
      EXPECT_EQ(as_d(buf[e]), -5.0) << "gap written";
    }
}

TEST_P(Kernels, T5ForwardRunsEqualPerElementBuckets) {
  std::mt19937_64 g(61);
  for (int i = 0; i < 40; ++i) {
    t5_case<float>(g, i);
    t5_case<double>(g, i);
    t5_case<Eigen::half>(g, i);
    t5_case<Eigen::bfloat16>(g, i);
  }
}

template <class T>
void layout_case(std::mt19937_64& g, int idx) {
  // Every fourth case converts whole rows (no offset, no copied tail): layout_rows' head loop without copies;
  // every eighth one at a head dim of 64, 128 or 256, the halves its loop is compiled for as constants.
  const bool whole = idx % 4 == 0;
  const index_t r = idx % 8 == 0 ? index_t{64} << (idx / 8 % 3) : 2 * static_cast<index_t>(1 + g() % 40);
  const index_t off = whole ? 0 : static_cast<index_t>(g() % 4);
  const index_t d = whole ? r : r + off + static_cast<index_t>(g() % 5);
  const index_t N = 1, L = static_cast<index_t>(1 + g() % 3), H = static_cast<index_t>(1 + g() % 3);
  std::vector<T> in(static_cast<std::size_t>(N * L * H * d)), out(in.size());
  for (auto& v : in) {  // any bit pattern, NaN payloads included
    const std::uint64_t bits = g();
    std::memcpy(static_cast<void*>(&v), &bits, sizeof(T));
  }
  const auto from = g() % 2 ? posenc::rope_style::half_split : posenc::rope_style::interleaved;
  const auto to = g() % 4 == 0 ? from : (from == posenc::rope_style::half_split ? posenc::rope_style::interleaved : posenc::rope_style::half_split);
  posenc::convert_rope_layout(posenc::strided_view<const T, 4>(in.data(), {N, L, H, d}), posenc::strided_view<T, 4>(out.data(), {N, L, H, d}),
                              r, off, from, to);
  for (index_t row = 0; row < N * L * H; ++row)
    for (index_t f = 0; f < d; ++f) {
      index_t src = f;
      if (f >= off && f < off + r && from != to) {
        const index_t k = f - off, half = r / 2;
        src = off + (to == posenc::rope_style::half_split ? (k < half ? 2 * k : 2 * (k - half) + 1) : (k % 2) * half + k / 2);
      }
      ASSERT_TRUE(same_bits(out[static_cast<std::size_t>(row * d + f)], in[static_cast<std::size_t>(row * d + src)]))
          << "layout case " << idx << " " << tname<T>() << " row " << row << " feature " << f;
    }
}

TEST_P(Kernels, LayoutConversionMovesBitsEveryDtype) {
  std::mt19937_64 g(71);
  for (int i = 0; i < 40; ++i) {
    layout_case<float>(g, i);
    layout_case<double>(g, i);
    layout_case<Eigen::half>(g, i);
    layout_case<Eigen::bfloat16>(g, i);
  }
}

/// A conversion that moves more than detail::rope_stream_bytes: its contiguous windows are written with streaming
/// stores where every vector store is aligned (the case's `shift` elements off a 64-byte boundary, the window,
/// the head stride and the half decide it) and with ordinary stores elsewhere; the bits are the same.
template <class T>
void large_layout_case(index_t H, index_t d, index_t r, index_t off, index_t head_stride, index_t shift, bool to_half_split) {
  const index_t token = H * head_stride;
  const index_t L = posenc::detail::rope_stream_bytes / 2 / (H * d * static_cast<index_t>(sizeof(T))) + 1;
  std::vector<T> in(static_cast<std::size_t>(L * token)), buf(in.size() + 64 / sizeof(T) + static_cast<std::size_t>(shift));
  for (std::size_t e = 0; e < in.size(); ++e) {
    const std::uint64_t bits = 0x9e3779b97f4a7c15ull * (e + 1);
    std::memcpy(static_cast<void*>(&in[e]), &bits, sizeof(T));
  }
  T* out = buf.data();
  while (reinterpret_cast<std::uintptr_t>(out) % 64 != 0) ++out;
  out += shift;
  const std::array<index_t, 4> shape{1, L, H, d}, strides{L * token, token, head_stride, 1};
  const auto from = to_half_split ? posenc::rope_style::interleaved : posenc::rope_style::half_split;
  const auto to = to_half_split ? posenc::rope_style::half_split : posenc::rope_style::interleaved;
  posenc::convert_rope_layout(posenc::strided_view<const T, 4>(in.data(), shape, strides), posenc::strided_view<T, 4>(out, shape, strides),
                              r, off, from, to);
  const index_t half = r / 2;
  for (index_t row = 0; row < L * H; ++row)
    for (index_t f = 0; f < d; ++f) {
      const index_t k = f - off;
      const index_t src = f < off || f >= off + r ? f : off + (to_half_split ? (k < half ? 2 * k : 2 * (k - half) + 1) : (k % 2) * half + k / 2);
      const std::size_t at = static_cast<std::size_t>(row / H * token + row % H * head_stride);
      ASSERT_TRUE(same_bits(out[at + static_cast<std::size_t>(f)], in[at + static_cast<std::size_t>(src)]))
          << tname<T>() << " d " << d << " r " << r << " off " << off << " head stride " << head_stride << " shift " << shift
          << " row " << row << " feature " << f;
    }
}

TEST_P(Kernels, LayoutConversionPastTheCacheStreamsTheSameBits) {
  large_layout_case<float>(32, 128, 128, 0, 128, 0, false);   // whole rows, aligned: streamed
  large_layout_case<float>(32, 128, 128, 0, 128, 0, true);
  large_layout_case<float>(32, 128, 128, 0, 128, 1, true);    // 4 bytes off: stored
  large_layout_case<float>(32, 128, 96, 8, 128, 0, false);    // window at 32 bytes: streamed by AVX2 only
  large_layout_case<float>(8, 80, 80, 0, 80, 0, true);        // half 40: a multiple of AVX2's 8 lanes, not of 16
  large_layout_case<float>(8, 64, 64, 0, 65, 0, false);       // head stride 65: stored
  large_layout_case<double>(16, 128, 128, 0, 128, 0, true);
  large_layout_case<double>(16, 72, 64, 4, 72, 0, false);
  large_layout_case<Eigen::half>(32, 128, 128, 0, 128, 0, false);  // 16-bit: stored
}

INSTANTIATE_TEST_SUITE_P(Isa, Kernels, ::testing::ValuesIn(all_isas()), isa_only_name);

}  // namespace
