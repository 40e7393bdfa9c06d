// The core without Eigen: this file is compiled with posenc's include directory only (no Eigen on the path,
// tests/CMakeLists.txt), so it fails to build if a core header reaches for Eigen. It drives the raw-memory API
// with an engine's own 16-bit types (ggml's uint16_t fp16 and struct bf16, declared through
// posenc::storage_traits) on every ISA this CPU runs, against RoPE evaluated here in long double.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <posenc/dispatch.hpp>
#include <posenc/rope.hpp>

#ifdef EIGEN_WORLD_VERSION
#error "core_test.cpp must build without Eigen"
#endif

namespace engine {
using fp16 = std::uint16_t;            // ggml_fp16_t
struct bf16 { std::uint16_t bits; };   // ggml_bf16_t
}  // namespace engine

template <>
struct posenc::storage_traits<engine::fp16> {
  static constexpr posenc::storage_format format = posenc::storage_format::f16;
};
template <>
struct posenc::storage_traits<engine::bf16> {
  static constexpr posenc::storage_format format = posenc::storage_format::bf16;
};

namespace {

using posenc::index_t;
using ld = long double;

// IEEE binary16 / bfloat16 decoding written here, not taken from posenc.
double from_fp16(std::uint16_t h) {
  const int e = (h >> 10) & 31;
  const int m = h & 1023;
  const double s = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 0) return s * std::ldexp(m, -24);
  return s * std::ldexp(1024 + m, e - 25);
}
double from_bf16(engine::bf16 b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b.bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// RoPE of one head row in long double (RoFormer eq. 34; half-split pairs (i, i + R/2), interleaved (2i, 2i+1)).
std::vector<ld> rope_ref(const std::vector<double>& x, index_t p, double base, bool interleaved) {
  const auto d = static_cast<index_t>(x.size());
  std::vector<ld> y(x.begin(), x.end());
  for (index_t i = 0; i < d / 2; ++i) {
    const ld w = std::pow(static_cast<ld>(base), -static_cast<ld>(2 * i) / static_cast<ld>(d));
    const ld t = static_cast<ld>(p) * w;
    const index_t a = interleaved ? 2 * i : i;
    const index_t b = interleaved ? 2 * i + 1 : i + d / 2;
    y[a] = x[a] * std::cos(t) - x[b] * std::sin(t);
    y[b] = x[b] * std::cos(t) + x[a] * std::sin(t);
  }
  return y;
}

std::vector<posenc::isa> isas() {
  std::vector<posenc::isa> v;
  for (auto i : {posenc::isa::scalar, posenc::isa::avx2, posenc::isa::avx512, posenc::isa::neon})
    if (posenc::cpu_supports(i)) v.push_back(i);
  return v;
}

struct Shape {
  index_t n = 2, l = 5, h = 3, d = 40;  // D = 40: a vector body and a tail on every ISA
  index_t size() const { return n * l * h * d; }
};

TEST(CoreWithoutEigen, RawFloatAndEngine16BitTypesEveryIsa) {
  const Shape s;
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> x(static_cast<std::size_t>(s.size()));
  for (auto& v : x) v = u(gen);
  const index_t p0 = 1000;
  for (const bool inter : {false, true}) {
    posenc::rope_config cfg;
    cfg.head_dim = s.d;
    cfg.style = inter ? posenc::rope_style::interleaved : posenc::rope_style::half_split;
    const posenc::rope_plan plan = posenc::make_rope_plan(cfg);
    for (const posenc::isa i : isas()) {
      SCOPED_TRACE(std::string(posenc::isa_name(i)) + (inter ? " interleaved" : " half_split"));
      posenc::set_isa(i);
      // float in place, fp16 (uint16_t) and bf16 (struct) out of place from the same float input.
      std::vector<float> yf = x;
      std::vector<engine::fp16> yh(x.size());
      std::vector<engine::bf16> yb(x.size());
      const posenc::strided_view<float, 4> vf(yf.data(), {s.n, s.l, s.h, s.d});
      const posenc::strided_view<const float, 4> vx(x.data(), {s.n, s.l, s.h, s.d});
      posenc::apply_rope(plan, vf, posenc::positions::offset(p0));
      posenc::apply_rope(plan, vx, posenc::strided_view<engine::fp16, 4>(yh.data(), {s.n, s.l, s.h, s.d}),
                         posenc::positions::offset(p0));
      posenc::apply_rope(plan, vx, posenc::strided_view<engine::bf16, 4>(yb.data(), {s.n, s.l, s.h, s.d}),
                         posenc::positions::offset(p0));
      for (index_t n = 0; n < s.n; ++n)
        for (index_t l = 0; l < s.l; ++l)
          for (index_t h = 0; h < s.h; ++h) {
            const index_t row = ((n * s.l + l) * s.h + h) * s.d;
            const std::vector<double> in(x.begin() + row, x.begin() + row + s.d);
            const std::vector<ld> ref = rope_ref(in, p0 + l, 10000.0, inter);
            for (index_t k = 0; k < s.d; ++k) {
              const auto j = static_cast<std::size_t>(row + k);
              const double r = static_cast<double>(ref[static_cast<std::size_t>(k)]);
              // float: the rotation's few roundings (|x| <= 2, so |y| <= 2.9); 16-bit: one final rounding on top.
              EXPECT_NEAR(yf[j], r, 4e-6) << "float at " << j;
              EXPECT_NEAR(from_fp16(yh[j]), r, std::ldexp(std::fabs(r), -11) + 4e-6) << "fp16 at " << j;
              EXPECT_NEAR(from_bf16(yb[j]), r, std::ldexp(std::fabs(r), -8) + 4e-6) << "bf16 at " << j;
            }
          }
    }
    posenc::reset_isa();
  }
}

TEST(CoreWithoutEigen, Engine16BitInPlaceMatchesOneRoundingOfFloat) {
  // In place on the engine's bf16 buffer: each result is the float rotation rounded once to bf16.
  const Shape s;
  std::vector<engine::bf16> buf(static_cast<std::size_t>(s.size()));
  std::vector<float> xf(buf.size());
  std::mt19937 gen(11);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (std::size_t j = 0; j < buf.size(); ++j) {
    const float f = u(gen);
    std::uint32_t w;
    std::memcpy(&w, &f, sizeof w);
    buf[j].bits = static_cast<std::uint16_t>(w >> 16);  // truncation: any bf16 value will do as input
    xf[j] = static_cast<float>(from_bf16(buf[j]));
  }
  posenc::rope_config cfg;
  cfg.head_dim = s.d;
  const posenc::rope_plan plan = posenc::make_rope_plan(cfg);
  posenc::apply_rope(plan, posenc::strided_view<engine::bf16, 4>(buf.data(), {s.n, s.l, s.h, s.d}),
                     posenc::positions::offset(3));
  for (index_t r = 0; r < s.n * s.l * s.h; ++r) {
    const index_t l = (r / s.h) % s.l;
    const std::vector<double> in(xf.begin() + r * s.d, xf.begin() + (r + 1) * s.d);
    const std::vector<ld> ref = rope_ref(in, 3 + l, 10000.0, false);
    for (index_t k = 0; k < s.d; ++k) {
      const double want = static_cast<double>(ref[static_cast<std::size_t>(k)]);
      EXPECT_NEAR(from_bf16(buf[static_cast<std::size_t>(r * s.d + k)]), want, std::ldexp(std::fabs(want), -8) + 2e-6);
    }
  }
}

}  // namespace

// Issue 21: one spelling table per enum. Every value round-trips through its canonical name; parse takes the
// CLI's spelling ('-') and Python's ('_') in any case, and the aliases (Hugging Face's rope_type names); an
// unknown name leaves the value untouched.
template <class E>
void expect_round_trip(std::initializer_list<E> values) {
  for (const E v : values) {
    E back{};
    ASSERT_TRUE(posenc::parse(posenc::to_string(v), back)) << posenc::to_string(v);
    EXPECT_EQ(back, v) << posenc::to_string(v);
  }
}

TEST(EnumNames, RoundTripAndBothSpellings) {
  using posenc::rope_scaling_type;
  expect_round_trip({posenc::rope_style::interleaved, posenc::rope_style::half_split});
  expect_round_trip({rope_scaling_type::none, rope_scaling_type::linear, rope_scaling_type::ntk,
                     rope_scaling_type::dynamic_ntk, rope_scaling_type::yarn, rope_scaling_type::deepseek_yarn,
                     rope_scaling_type::llama3, rope_scaling_type::longrope});
  expect_round_trip({posenc::dynamic_ntk_policy::per_length, posenc::dynamic_ntk_policy::fixed_at_max});
  expect_round_trip({posenc::longrope_policy::per_length, posenc::longrope_policy::past_original,
                     posenc::longrope_policy::always_short, posenc::longrope_policy::always_long});
  expect_round_trip({posenc::isa::scalar, posenc::isa::avx2, posenc::isa::avx512, posenc::isa::neon});
  expect_round_trip({posenc::layout::nlhd, posenc::layout::nhld, posenc::layout::lhd, posenc::layout::nld, posenc::layout::ld});
  expect_round_trip({posenc::errc::ok, posenc::errc::invalid_argument, posenc::errc::invalid_file, posenc::errc::io_error,
                     posenc::errc::out_of_memory, posenc::errc::device_error});

  EXPECT_STREQ(posenc::to_string(posenc::rope_style::half_split), "half_split");
  EXPECT_STREQ(posenc::to_string(rope_scaling_type::dynamic_ntk), "dynamic_ntk");
  posenc::rope_style s = posenc::rope_style::interleaved;
  EXPECT_TRUE(posenc::parse("half-split", s));
  EXPECT_EQ(s, posenc::rope_style::half_split);
  s = posenc::rope_style::interleaved;
  EXPECT_TRUE(posenc::parse("HALF_SPLIT", s));
  EXPECT_EQ(s, posenc::rope_style::half_split);
  rope_scaling_type t = rope_scaling_type::none;
  EXPECT_TRUE(posenc::parse("dynamic-ntk", t));
  EXPECT_EQ(t, rope_scaling_type::dynamic_ntk);
  EXPECT_TRUE(posenc::parse("default", t));  // HF alias
  EXPECT_EQ(t, rope_scaling_type::none);
  EXPECT_TRUE(posenc::parse("dynamic", t));
  EXPECT_EQ(t, rope_scaling_type::dynamic_ntk);
  for (const char* bad : {"", "half", "half_splitx", "neox", "half split"}) {
    s = posenc::rope_style::interleaved;
    EXPECT_FALSE(posenc::parse(bad, s)) << bad;
    EXPECT_EQ(s, posenc::rope_style::interleaved) << bad;
  }
  EXPECT_STREQ(posenc::enum_choices<posenc::rope_style>().c_str(), "interleaved, half_split");
  EXPECT_TRUE(posenc::parse(std::string("Half-Split"), s));  // std::string and string_view take the same path
  static_assert(
      [] {
        posenc::rope_style v = posenc::rope_style::interleaved;
        return posenc::parse("Half-Split", v) && v == posenc::rope_style::half_split;
      }(),
      "parse is usable in constant expressions");
}
