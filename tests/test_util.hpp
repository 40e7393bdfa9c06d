// Shared helpers of the posenc tests: golden cases to posenc configs, tolerances per dtype.
#pragma once

#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <posenc/posenc.hpp>

#include "golden.hpp"
#include "messages.hpp"
#include "scratch.hpp"

namespace posenc_test {

/// An error for RecordProperty, readable at 1e-17 (std::to_string prints 6 decimals).
inline std::string sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3e", v);
  return buf;
}

/// n values uniform in [-1, 1) from a fixed seed, converted to T.
template <class T>
std::vector<T> random_values(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(u(gen));
  return v;
}

/// "half_split_full" -> "HalfSplitFull": GoogleTest parameter names without underscores.
inline std::string camel(const std::string& s) {
  std::string out;
  bool up = true;
  for (char ch : s) {
    if (ch == '_' || ch == '.' || ch == '-') {
      up = true;
      continue;
    }
    out += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(ch))) : ch;
    up = false;
  }
  return out;
}

/// The ALiBi configuration of an alibi.txt case (tests/golden/FORMAT.md): num_heads and max_bias, and the shard
/// [head_begin, head_end), the form and the arithmetic where the case gives them.
inline posenc::alibi_config golden_alibi_config(const golden_case& c) {
  posenc::alibi_config cfg;
  cfg.num_heads = c.integer("num_heads");
  cfg.max_bias = c.num("max_bias");
  if (c.has("head_begin")) {
    cfg.head_begin = c.integer("head_begin");
    cfg.head_end = c.integer("head_end");
  }
  if (c.has("form")) cfg.form = c.str("form") == "symmetric" ? posenc::alibi_form::symmetric : posenc::alibi_form::linear;
  if (c.has("arithmetic")) {
    EXPECT_TRUE(posenc::parse(c.str("arithmetic"), cfg.arithmetic)) << c.str("arithmetic");
  }
  return cfg;
}

/// The instruction sets posenc has kernels for on this architecture: every golden suite runs once per entry
/// (the test binary is built with default flags; dispatch picks the kernels at run time).
inline std::vector<posenc::isa> all_isas() {
#if defined(__x86_64__) || defined(_M_X64)
  return {posenc::isa::scalar, posenc::isa::avx2, posenc::isa::avx512};
#elif defined(__aarch64__) || defined(_M_ARM64)
  return {posenc::isa::scalar, posenc::isa::neon};
#else
  return {posenc::isa::scalar};
#endif
}

/// Makes `i` the active ISA for a test, or skips the test naming the ISA the CPU lacks (the one documented
/// reason a kernel test may skip).
inline void activate_isa(posenc::isa i) {
  if (!posenc::cpu_supports(i)) GTEST_SKIP() << "the CPU lacks " << posenc::isa_name(i);
  ASSERT_EQ(posenc::set_isa(i), i) << "posenc::set_isa did not activate " << posenc::isa_name(i);
}

/// A value-parameterized test over (P, ISA): SetUp activates the ISA (or skips by name), TearDown restores the
/// default. Instantiate with ::testing::Combine(values, ::testing::ValuesIn(all_isas())) and IsaParamName.
template <class P>
class IsaTest : public ::testing::TestWithParam<std::tuple<P, posenc::isa>> {
 protected:
  void SetUp() override { activate_isa(isa()); }
  void TearDown() override { posenc::reset_isa(); }
  const P& param() const { return std::get<0>(this->GetParam()); }
  posenc::isa isa() const { return std::get<1>(this->GetParam()); }
};

/// A test over the ISAs alone.
class IsaOnlyTest : public ::testing::TestWithParam<posenc::isa> {
 protected:
  void SetUp() override { activate_isa(GetParam()); }
  void TearDown() override { posenc::reset_isa(); }
};

inline std::string isa_only_name(const ::testing::TestParamInfo<posenc::isa>& info) {
  return posenc::isa_name(info.param);
}

inline std::string param_label(const std::string& s) { return camel(s); }

/// "<CamelCaseParam>_<isa>", e.g. RopeBasicHalfSplitFull_avx2.
struct IsaParamName {
  template <class P>
  std::string operator()(const ::testing::TestParamInfo<std::tuple<P, posenc::isa>>& info) const {
    return param_label(std::get<0>(info.param)) + "_" + posenc::isa_name(std::get<1>(info.param));
  }
};

/// Storage types under test, with names for test output.
template <class T>
struct dtype_info;
template <>
struct dtype_info<float> {
  static constexpr const char* name = "float";
  static constexpr int mantissa = 23;
};
template <>
struct dtype_info<double> {
  static constexpr const char* name = "double";
  static constexpr int mantissa = 52;
};
template <>
struct dtype_info<Eigen::half> {
  static constexpr const char* name = "half";
  static constexpr int mantissa = 10;
};
template <>
struct dtype_info<Eigen::bfloat16> {
  static constexpr const char* name = "bfloat16";
  static constexpr int mantissa = 7;
};

/// Stated tolerances (issue #2): float and the kernels' float arithmetic within 2e-6 absolute for unit-scale
/// inputs; double within 1e-12; half and bfloat16 within one rounding of the float result (half an ulp of T
/// at the expected value) plus the float error.
template <class T>
double tolerance(double expected) {
  if constexpr (std::is_same_v<T, double>) {
    return 1e-12 * std::max(1.0, std::fabs(expected));
  } else {
    double tol = 2e-6 * std::max(1.0, std::fabs(expected));
    if constexpr (dtype_info<T>::mantissa < 23) {
      int e = 0;
      std::frexp(expected, &e);  // |expected| in [2^(e-1), 2^e)
      tol += std::ldexp(0.5, e - 1 - dtype_info<T>::mantissa);
    }
    return tol;
  }
}

template <class T>
std::vector<T> to_storage(const golden_array& a) {
  std::vector<T> v(a.values.size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<T>(static_cast<float>(a.values[i]));
  if constexpr (std::is_same_v<T, double>)
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = a.values[i];
  return v;
}

template <class T>
double as_double(T v) {
  return static_cast<double>(static_cast<float>(v));
}
inline double as_double(double v) { return v; }

inline posenc::rope_style style_of(const golden_case& c) {
  return c.str("style") == "interleaved" ? posenc::rope_style::interleaved : posenc::rope_style::half_split;
}

/// The rope_config a golden RoPE case describes.
inline posenc::rope_config rope_config_of(const golden_case& c) {
  posenc::rope_config cfg;
  cfg.head_dim = c.integer("head_dim");
  cfg.rotary_dim = c.integer("rotary_dim");
  cfg.rotary_offset = c.integer("rotary_offset");
  cfg.base = c.num("base");
  cfg.style = style_of(c);
  const std::string scaling = c.has("scaling") ? c.str("scaling") : "none";
  auto& s = cfg.scaling;
  if (scaling == "linear") {
    s = posenc::rope_scaling::linear(c.num("factor"));
  } else if (scaling == "ntk") {
    s = posenc::rope_scaling::ntk(c.num("base_rescale_factor"));
  } else if (scaling == "dynamic_ntk") {
    s = posenc::rope_scaling::dynamic_ntk(c.num("factor"), c.integer("original_max_positions"),
                                          c.str("policy") == "hf" ? posenc::dynamic_ntk_policy::per_length
                                                                  : posenc::dynamic_ntk_policy::fixed_at_max);
  } else if (scaling == "yarn" || scaling == "deepseek_yarn") {
    if (scaling == "yarn") {
      s = posenc::rope_scaling::yarn(c.num("factor"), c.integer("original_max_positions"), c.num("beta_fast"),
                                     c.num("beta_slow"));
      s.mscale = c.num("mscale");
      s.mscale_all_dim = c.num("mscale_all_dim");
    } else {
      s = posenc::rope_scaling::deepseek_yarn(c.num("factor"), c.integer("original_max_positions"), c.num("mscale"),
                                              c.num("mscale_all_dim"), c.num("beta_fast"), c.num("beta_slow"));
    }
    s.truncate = c.integer("truncate") != 0;
    if (c.has("attention_factor")) s.attention_factor = c.num("attention_factor");
  } else if (scaling == "llama3") {
    s = posenc::rope_scaling::llama3(c.num("factor"), c.num("low_freq_factor"), c.num("high_freq_factor"),
                                     c.integer("original_max_positions"));
  } else if (scaling == "longrope") {
    s = posenc::rope_scaling::longrope(c.array("short_factor").values, c.array("long_factor").values,
                                       c.integer("original_max_positions"), c.num("factor"));
  } else if (scaling == "freq_factors") {
    cfg.freq_factors = c.array("freq_factors").values;
  } else if (scaling != "none") {
    ADD_FAILURE() << c.name << ": unknown scaling " << scaling;
  }
  return cfg;
}

/// The positions of a golden RoPE case in the form it names; backing arrays live in the case.
inline posenc::positions positions_of(const golden_case& c) {
  const std::string form = c.str("pos_form");
  const auto& pos = c.array("positions");
  if (form == "offset") return posenc::positions::offset(c.integer("offset"));
  if (form == "per_sequence") {
    const auto& so = c.array("seq_offsets");
    return posenc::positions::per_sequence(so.ivalues.data(), static_cast<posenc::index_t>(so.ivalues.size()));
  }
  return posenc::positions::per_token(pos.ivalues.data(), pos.shape[0], pos.shape[1]);
}

inline std::int64_t max_position(const golden_case& c) {
  std::int64_t m = -1;
  for (auto v : c.array("positions").ivalues) m = std::max<std::int64_t>(m, v);
  return m;
}

/// Positions past this many rows make the table paths of the RoPE golden suites form only the rows a case reads
/// (`lazy_table`): rope_long.txt reaches position 1,048,576 and compares 8 rows, and forming the 1,048,577 rows
/// took 12-50 s per ISA under SIMDe emulation and ASan, 36 s under qemu-aarch64.
inline constexpr std::int64_t kWholeTableRows = std::int64_t{1} << 16;

/// A zeroed table of n elements whose pages are touched only where rows are written: calloc hands large blocks
/// the kernel's zero pages without clearing them (glibc's allocator and ASan's alike), so a table of a million
/// rows costs only the rows a test forms.
template <class C>
class lazy_table {
 public:
  explicit lazy_table(std::size_t n) : p_(static_cast<C*>(std::calloc(n, sizeof(C)))) {
    if (p_ == nullptr) throw std::bad_alloc();
  }
  C* data() const { return p_.get(); }

 private:
  struct release {
    void operator()(C* p) const { std::free(p); }
  };
  std::unique_ptr<C, release> p_;
};

/// Bound of |theta_double - theta| for the case's positions (w <= 1): (max position + 1) * 2^-52 * 1.5.
inline double angle_error_bound(const golden_case& c) {
  return 1.5 * std::ldexp(static_cast<double>(max_position(c) + 1), -52);
}

/// Angle bound for cases whose `positions` may have any shape.
inline double angle_error_bound_max(const golden_case& c) {
  std::int64_t m = 0;
  for (auto v : c.array("positions").ivalues) m = std::max<std::int64_t>(m, v);
  return 1.5 * std::ldexp(static_cast<double>(m + 1), -52);
}

/// Max |got - expected| over all elements, failing (at most 3 reports) where it passes the tolerance of
/// `Tol` (the storage type, or float where a float cos/sin table bounds the accuracy of double storage).
/// `angle_err` adds the bound of the angle itself: theta = p*w in double is exact to p*w*2^-52, which at
/// p = 2^20 is ~2e-10 rad (and the output moves by at most that times |x| <= 1).
template <class T, class Tol = T>
double expect_close(const std::vector<T>& got, const golden_array& expected, const std::string& what,
                    double angle_err = 0.0) {
  EXPECT_EQ(got.size(), expected.values.size()) << what;
  double max_err = 0.0;
  int reported = 0;
  for (std::size_t i = 0; i < got.size() && i < expected.values.size(); ++i) {
    const double e = expected.values[i];
    const double err = std::fabs(as_double(got[i]) - e);
    max_err = std::max(max_err, err);
    if (!(err <= tolerance<Tol>(e) + angle_err) && reported++ < 3)
      ADD_FAILURE() << what << " [" << dtype_info<T>::name << "] element " << i << ": got " << as_double(got[i])
                    << " expected " << e << " (error " << err << ", tolerance " << tolerance<Tol>(e) << ")";
  }
  return max_err;
}

// ---- the no-throw API: a try_ form against its throwing form --------------------------------------------------


/// `s` is the throwing form's rejection: invalid_argument with exactly its message `thrown`.
inline void expect_rejection(const posenc::status& s, const std::string& thrown, const std::string& what) {
  EXPECT_FALSE(s.ok()) << what;
  EXPECT_FALSE(static_cast<bool>(s)) << what;
  EXPECT_EQ(s.code(), posenc::errc::invalid_argument) << what;
  EXPECT_EQ(s.message(), thrown) << what;
  EXPECT_FALSE(thrown.empty()) << what;
}

/// The try_ call and the throwing call reject alike: invalid_argument, a message containing `part`, the same
/// message as the exception.
template <class TryCall, class ThrowCall>
void expect_same_failure(TryCall&& try_call, ThrowCall&& throw_call, const std::string& part, const std::string& what) {
  const posenc::status s = try_call();
  EXPECT_NE(s.message().find(part), std::string::npos) << what << ": \"" << s.message() << "\" lacks \"" << part << "\"";
  expect_rejection(s, thrown_message(throw_call), what);
}

inline void expect_ok(const posenc::status& s, const std::string& what) {
  EXPECT_TRUE(s.ok()) << what << ": " << s.message();
  EXPECT_EQ(s.code(), posenc::errc::ok) << what;
  EXPECT_TRUE(s.message().empty()) << what;
}

/// Bit equality (NaN payloads, signed zeros, 16-bit types), of values and of whole vectors.
template <class T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}
template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// ---- xPos golden cases (xpos.txt) ----------------------------------------------------------------------------

/// The xpos_config of an xpos.txt case.
inline posenc::xpos_config xpos_config_of(const golden_case& c) {
  posenc::xpos_config cfg;
  cfg.head_dim = c.integer("head_dim");
  cfg.scale_base = c.num("scale_base");
  cfg.gamma = c.num("gamma");
  cfg.base = c.num("base");
  cfg.style = style_of(c);
  return cfg;
}

/// Relative tolerance of storage type T for the `relative` cases: one rounding to T (half an ulp relative to
/// the value, 2^-(mantissa+1)) plus the float arithmetic allowance of test_util's tolerance.
template <class T>
double xpos_relative_tolerance() {
  if constexpr (std::is_same_v<T, double>) return 1e-12;
  else return 2e-6 + std::ldexp(1.0, -dtype_info<T>::mantissa - 1);
}

/// The feature indices (a, b) of pair i, by the layout definition.
inline std::array<posenc::index_t, 2> pair_features(posenc::rope_style style, posenc::index_t d, posenc::index_t i) {
  if (style == posenc::rope_style::interleaved) return {2 * i, 2 * i + 1};
  return {i, i + d / 2};
}

// Compares `got` (N, L, D) with the case's y. Tolerance per element: absolute cases as test_util's
// tolerance<T>, relative cases xpos_relative_tolerance<T>() * |y|; both plus the angle bound times the pair's
// norm (theta = p*w in double is off by up to (p+1)*1.5*2^-52 rad, which moves y by that times |y pair|).
template <class T>
void expect_xpos_close(const std::vector<T>& got, const golden_case& c, const std::string& what) {
  const auto& y = c.array("y");
  ASSERT_EQ(got.size(), y.values.size()) << what;
  const posenc::index_t d = c.integer("head_dim");
  const bool relative = c.str("tolerance_mode") == "relative";
  const double angle_err = 1.5 * std::ldexp(static_cast<double>(c.integer("offset") + y.shape[1]), -52);
  const posenc::rope_style style = style_of(c);
  int reported = 0;
  for (std::size_t row = 0; row < got.size() / static_cast<std::size_t>(d); ++row) {
    for (posenc::index_t i = 0; i < d / 2; ++i) {
      const auto ab = pair_features(style, d, i);
      const std::size_t a = row * static_cast<std::size_t>(d) + static_cast<std::size_t>(ab[0]);
      const std::size_t b = row * static_cast<std::size_t>(d) + static_cast<std::size_t>(ab[1]);
      const double pair_norm = std::hypot(y.values[a], y.values[b]);
      for (std::size_t e : {a, b}) {
        const double want = y.values[e];
        const double err = std::fabs(as_double(got[e]) - want);
        const double tol = (relative ? xpos_relative_tolerance<T>() * std::fabs(want) : tolerance<T>(want)) + angle_err * pair_norm;
        if (!(err <= tol) && reported++ < 3)
          ADD_FAILURE() << what << " [" << dtype_info<T>::name << "] element " << e << ": got " << as_double(got[e])
                        << " expected " << want << " (error " << err << ", tolerance " << tol << ")";
      }
    }
  }
}

// ---- sinusoidal golden cases (sinusoidal.txt) -----------------------------------------------------------------

/// The sinusoidal_config of a sinusoidal.txt case.
inline posenc::sinusoidal_config sinusoidal_config_of(const golden_case& c) {
  posenc::sinusoidal_config cfg;
  cfg.dim = c.integer("dim");
  cfg.base = c.num("base");
  cfg.layout = c.str("layout") == "concat" ? posenc::sinusoidal_layout::concat : posenc::sinusoidal_layout::interleaved;
  if (c.has("padding_idx")) cfg.padding_idx = c.integer("padding_idx");
  return cfg;
}

// |theta_double - theta| for positions <= max_pos: the exponent of w_i is rounded (relative error 2^-53,
// amplified by |exponent| * ln(base) <= ln(base)), pow adds an ulp, the product p * w another:
// (max_pos + 1) * (2 + ln(base)) * 2^-53.
inline double sinusoid_angle_bound(posenc::index_t max_pos, double base) {
  return static_cast<double>(max_pos + 1) * (2.0 + std::log(base)) * std::ldexp(1.0, -53);
}

// ---- MRoPE golden cases (mrope.txt) --------------------------------------------------------------------------

/// The (T, H, W) sections of an mrope.txt case.
inline std::array<posenc::index_t, 3> sections_of(const golden_case& c) {
  std::array<posenc::index_t, 3> s{};
  std::istringstream is(c.str("sections"));
  std::string tok;
  for (std::size_t i = 0; i < 3 && std::getline(is, tok, ','); ++i) s[i] = std::stoll(tok);
  return s;
}

/// The mrope_plan of an mrope.txt case.
inline posenc::mrope_plan mrope_plan_of(const golden_case& c) {
  const posenc::index_t d = c.integer("head_dim");
  const auto sections = sections_of(c);
  const auto layout = c.str("mrope_layout") == "chunked" ? posenc::mrope_layout::chunked : posenc::mrope_layout::interleaved;
  if (c.str("freq_mode") == "sectioned")
    return posenc::mrope_plan(posenc::make_sectioned_rope_plan(d, c.num("base"), sections), sections, layout);
  posenc::rope_config cfg;
  cfg.head_dim = d;
  cfg.rotary_dim = c.integer("rotary_dim");
  cfg.base = c.num("base");
  return posenc::mrope_plan(posenc::make_rope_plan(cfg), sections, layout);
}

/// The positions of an mrope.txt case (over its own arrays).
inline posenc::mrope_positions mrope_positions_of(const golden_case& c) {
  const auto& p = c.array("positions");
  if (c.str("pos_form") == "shared") return posenc::mrope_positions::shared(p.ivalues.data(), p.shape[1]);
  return posenc::mrope_positions::per_token(p.ivalues.data(), p.shape[0], p.shape[2]);
}

// ---- golden cases as test parameters ---------------------------------------------------------------------

/// One case of a golden file, as a test parameter (the RoPE suites of every backend share the list).
struct golden_ref {
  std::string file;
  std::string name;
};
inline void PrintTo(const golden_ref& p, std::ostream* os) { *os << p.file << ":" << p.name; }
/// The test-name part of a case: RopeBasicHalfSplitFull for rope_basic.txt:half_split_full.
inline std::string param_label(const golden_ref& p) { return camel(p.file.substr(0, p.file.find('.')) + "_" + p.name); }
/// GoogleTest's name generator for a golden_ref parameter.
struct golden_ref_name {
  std::string operator()(const ::testing::TestParamInfo<golden_ref>& p) const { return param_label(p.param); }
};
/// Every case of the RoPE golden files (rope_basic, rope_scaling, rope_long).
inline std::vector<golden_ref> rope_golden_cases() {
  std::vector<golden_ref> out;
  for (const char* f : {"rope_basic.txt", "rope_scaling.txt", "rope_long.txt"})
    for (const auto& name : golden_case_names(f)) out.push_back({f, name});
  return out;
}

// ---- learned embeddings ----------------------------------------------------------------------------------

/// Fills a module's table from golden values (row-major).
template <class C>
void fill_table(posenc::learned_position_embedding<C>& m, const std::vector<double>& values) {
  auto t = m.table();
  ASSERT_EQ(static_cast<std::size_t>(t.size()), values.size());
  for (posenc::index_t i = 0; i < t.size(); ++i) t.data()[i] = static_cast<C>(values[static_cast<std::size_t>(i)]);
}

/// learned.txt's layer_norm case: its configuration and a module holding its table, gamma and beta.
struct ln_case {
  golden_case c;
  posenc::learned_config cfg;
  explicit ln_case(const golden_case& g) : c(g) {
    cfg.max_positions = c.integer("max_positions");
    cfg.dim = c.integer("dim");
    cfg.scale = c.num("scale");
    cfg.layer_norm = true;
    cfg.eps = c.num("eps");
    cfg.position_offset = c.integer("position_offset");
  }
  template <class C>
  posenc::learned_position_embedding<C> module() const {
    posenc::learned_position_embedding<C> m(cfg);
    fill_table(m, c.array("table").values);
    for (posenc::index_t d = 0; d < cfg.dim; ++d) {
      m.gamma()(d) = static_cast<C>(c.array("gamma").values[static_cast<std::size_t>(d)]);
      m.beta()(d) = static_cast<C>(c.array("beta").values[static_cast<std::size_t>(d)]);
    }
    return m;
  }
};

inline const ln_case& golden_ln() {
  static const ln_case c(find_case(load_golden("learned.txt"), "layer_norm"));
  return c;
}


/// A fused QKV buffer [N, L, (Hq + 2 Hk) * D] of random floats and its q, k, v views.
struct Qkv {
  posenc::index_t n, l, hq, hk, d;
  std::vector<float> buf;
  Qkv(posenc::index_t n_, posenc::index_t l_, posenc::index_t hq_, posenc::index_t hk_, posenc::index_t d_, unsigned seed)
      : n(n_), l(l_), hq(hq_), hk(hk_), d(d_), buf(static_cast<std::size_t>(n_ * l_ * (hq_ + 2 * hk_) * d_)) {
    std::mt19937 g(seed);
    std::uniform_real_distribution<float> u(-1.5f, 1.5f);
    for (auto& v : buf) v = u(g);
  }
  posenc::index_t row() const { return (hq + 2 * hk) * d; }
  posenc::strided_view<float, 4> part(posenc::index_t head0, posenc::index_t heads) {
    return {buf.data() + head0 * d, {n, l, heads, d}, {l * row(), row(), d, 1}};
  }
  posenc::strided_view<float, 4> q() { return part(0, hq); }
  posenc::strided_view<float, 4> k() { return part(hq, hk); }
  posenc::strided_view<float, 4> v() { return part(hq + hk, hk); }
};

}  // namespace posenc_test
