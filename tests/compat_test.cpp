// The Python-API counterparts (posenc/compat/zeta.hpp, posenc/compat/tiny_llm.hpp) against
// tests/golden/compat.txt (zeta RotaryEmbedding,
// torchscale fixed_pos_embedding / apply_rotary_pos_emb, tiny-llm RoPE) and xpos.txt (torchscale XPOS), the
// small torchscale helpers on hand-written inputs, the equivalent plans against the Python formulas
// evaluated here from the golden tables, every rejected argument, and the no-throw try_ forms (same results,
// same messages, invalid_argument, outputs untouched).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <posenc/compat/tiny_llm.hpp>
#include <posenc/compat/zeta.hpp>
#include <posenc/posenc.hpp>

#include "test_util.hpp"

namespace {

using posenc::index_t;
using namespace posenc_test;
namespace zeta = posenc::compat::zeta;
namespace tiny_llm = posenc::compat::tiny_llm;

template <class T, int Rank>
using tensor = Eigen::Tensor<T, Rank, Eigen::RowMajor>;

/// A golden array as a row-major tensor of T (inputs are exact in every T; see FORMAT.md).
template <class T, int Rank>
tensor<T, Rank> to_tensor(const golden_array& a) {
  EXPECT_EQ(a.shape.size(), static_cast<std::size_t>(Rank));
  std::array<Eigen::Index, Rank> dims{};
  for (int r = 0; r < Rank; ++r) dims[static_cast<std::size_t>(r)] = static_cast<Eigen::Index>(a.shape[static_cast<std::size_t>(r)]);
  tensor<T, Rank> t(dims);
  const std::vector<T> v = to_storage<T>(a);
  std::copy(v.begin(), v.end(), t.data());
  return t;
}

template <class T, int Rank>
std::vector<T> to_vec(const tensor<T, Rank>& t) {
  return std::vector<T>(t.data(), t.data() + t.size());
}

template <class T, int Rank>
std::vector<Eigen::Index> dims_of(const tensor<T, Rank>& t) {
  return std::vector<Eigen::Index>(t.dimensions().begin(), t.dimensions().end());
}

/// Relative criterion for tables that grow with t (freqs): |got - e| <= rel * |e|, so exact zeros stay zero.
template <class T>
double expect_close_rel(const std::vector<T>& got, const golden_array& expected, const std::string& what, double rel) {
  EXPECT_EQ(got.size(), expected.values.size()) << what;
  double max_rel = 0.0;
  int reported = 0;
  for (std::size_t i = 0; i < got.size() && i < expected.values.size(); ++i) {
    const double e = expected.values[i];
    const double err = std::fabs(as_double(got[i]) - e);
    const double r = e == 0.0 ? (err == 0.0 ? 0.0 : std::numeric_limits<double>::infinity()) : err / std::fabs(e);
    max_rel = std::max(max_rel, r);
    if (!(r <= rel) && reported++ < 3)
      ADD_FAILURE() << what << " [" << dtype_info<T>::name << "] element " << i << ": got " << as_double(got[i])
                    << " expected " << e << " (relative error " << r << ", tolerance " << rel << ")";
  }
  return max_rel;
}

void record(const std::string& key, double err) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", err);
  ::testing::Test::RecordProperty(key, buf);
}

/// Expects `f()` to throw posenc::argument_error whose message contains `needle`.
template <class F>
void expect_argument_error(F&& f, const std::string& needle, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << what << ": no exception";
  } catch (const posenc::argument_error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << what << ": message '" << e.what()
                                                                      << "' lacks '" << needle << "'";
  } catch (...) {
    ADD_FAILURE() << what << ": threw something other than posenc::argument_error";
  }
}

zeta::rotary_embedding zeta_of(const golden_case& c) {
  return zeta::rotary_embedding(c.integer("dim"), c.integer("use_xpos") != 0, c.num("scale_base"),
                                        c.num("interpolation_factor"), c.num("base"), c.num("base_rescale_factor"));
}

std::vector<std::string> zeta_case_names() { return {"zeta_rotary_plain", "zeta_rotary_xpos", "zeta_rotary_scaled"}; }

// ------------------------------------------------------------------------------------------ zeta rotary

template <class T>
void check_zeta_forward(const golden_case& c, double rel, const std::string& tag) {
  const auto rot = zeta_of(c);
  const index_t s = c.integer("seq_len");
  const index_t d = c.integer("dim");
  const auto out = rot.template forward<T>(s);
  ASSERT_EQ(dims_of(out.freqs), (std::vector<Eigen::Index>{s, d})) << c.name;
  ASSERT_EQ(dims_of(out.scale), (std::vector<Eigen::Index>{s, d})) << c.name;
  record("max_rel_err_freqs_" + tag, expect_close_rel(to_vec(out.freqs), c.array("freqs"), c.name + " freqs", rel));
  if (c.has("scale_is_one")) {
    for (Eigen::Index k = 0; k < out.scale.size(); ++k) EXPECT_EQ(as_double(out.scale.data()[k]), 1.0) << c.name;
  } else {
    record("max_err_scale_" + tag, expect_close<T>(to_vec(out.scale), c.array("scale"), c.name + " scale"));
  }
}

TEST(CompatZetaRotary, ForwardMatchesGolden) {
  const auto cases = load_golden("compat.txt");
  for (const auto& name : zeta_case_names()) {
    const golden_case& c = find_case(cases, name);
    check_zeta_forward<float>(c, 1e-6, name + "_float");
    check_zeta_forward<double>(c, 1e-12, name + "_double");
  }
}

/// zeta apply_rotary_pos_emb(t, freqs, scale) = t*cos(freqs)*scale + rotate_half(t)*sin(freqs)*scale with
/// freqs[-L:], evaluated in double from the golden tables; x (N, L, H, D), table rows first_row + l.
std::vector<double> zeta_python_formula(const tensor<double, 4>& x, const golden_array& freqs, const golden_array* scale,
                                        index_t first_row, bool reciprocal) {
  const index_t n = x.dimension(0), l = x.dimension(1), h = x.dimension(2), d = x.dimension(3);
  std::vector<double> y(static_cast<std::size_t>(x.size()));
  for (index_t b = 0; b < n; ++b)
    for (index_t t = 0; t < l; ++t)
      for (index_t hh = 0; hh < h; ++hh)
        for (index_t f = 0; f < d; ++f) {
          const auto row = static_cast<std::size_t>((first_row + t) * d + f);
          const double rot_half = f < d / 2 ? -x(b, t, hh, f + d / 2) : x(b, t, hh, f - d / 2);
          double s = scale ? scale->values[row] : 1.0;
          if (reciprocal) s = 1.0 / s;
          y[static_cast<std::size_t>(((b * l + t) * h + hh) * d + f)] =
              x(b, t, hh, f) * std::cos(freqs.values[row]) * s + rot_half * std::sin(freqs.values[row]) * s;
        }
  return y;
}

tensor<double, 4> test_input(index_t n, index_t l, index_t h, index_t d, unsigned seed) {
  tensor<double, 4> x(n, l, h, d);
  // Values on a 2^-8 grid in [-1, 1]: exact in every storage type, like the golden inputs.
  std::uint32_t st = seed * 2654435761u + 12345u;
  for (Eigen::Index k = 0; k < x.size(); ++k) {
    st = st * 1664525u + 1013904223u;
    x.data()[k] = static_cast<double>(static_cast<int>(st >> 23) - 256) / 256.0;
  }
  return x;
}

TEST(CompatZetaRotary, PlanWithApplyRopeMatchesPythonFormula) {
  const auto cases = load_golden("compat.txt");
  for (const auto& name : zeta_case_names()) {
    const golden_case& c = find_case(cases, name);
    const auto rot = zeta_of(c);
    const index_t s = c.integer("seq_len");
    const index_t d = c.integer("dim");
    EXPECT_EQ(rot.plan().style(), posenc::rope_style::half_split);
    EXPECT_EQ(rot.plan().head_dim(), d);
    EXPECT_EQ(rot.plan().rotary_dim(), d);
    // Full table (L = S, positions 0 ..) and zeta's freqs[-L:] slice (L < S: positions S-L ..).
    for (index_t l : {s, index_t{3}}) {
      const tensor<double, 4> x = test_input(2, l, 3, d, static_cast<unsigned>(l));
      const std::vector<double> want = zeta_python_formula(x, c.array("freqs"), nullptr, s - l, false);
      golden_array expected;
      expected.values = want;
      tensor<float, 4> xf = x.cast<float>();
      posenc::apply_rope(rot.plan(), xf, posenc::positions::offset(s - l));
      record("max_err_plan_float_" + name + "_L" + std::to_string(l),
             expect_close<float>(to_vec(xf), expected, name + " plan (float)"));
      tensor<double, 4> xd = x;
      posenc::apply_rope(rot.plan(), xd, posenc::positions::offset(s - l));
      // The golden freqs are rounded to double before cos/sin: allow that rounding times |freq| <= S.
      const double angle_err = 4.0 * static_cast<double>(s) * std::ldexp(1.0, -52);
      expect_close<double>(to_vec(xd), expected, name + " plan (double)", angle_err);
    }
  }
}

TEST(CompatZetaRotary, XposPlanWithApplyXposMatchesPythonFormula) {
  const auto cases = load_golden("compat.txt");
  const golden_case& c = find_case(cases, "zeta_rotary_xpos");
  const auto rot = zeta_of(c);
  const index_t s = c.integer("seq_len");
  const index_t d = c.integer("dim");
  const posenc::xpos_plan xp = rot.make_xpos_plan();
  // Frequencies identical to the rope plan's (one formula, ntk_base then inv_freq).
  for (std::size_t i = 0; i < xp.inv_freq().size(); ++i) EXPECT_EQ(xp.inv_freq()[i], rot.plan().inv_freq()[i]);
  const tensor<double, 4> q = test_input(2, s, 2, d, 7);
  const tensor<double, 4> k = test_input(2, s, 1, d, 8);
  golden_array want_q, want_k;
  want_q.values = zeta_python_formula(q, c.array("freqs"), &c.array("scale"), 0, false);
  want_k.values = zeta_python_formula(k, c.array("freqs"), &c.array("scale"), 0, true);
  tensor<float, 4> qf = q.cast<float>();
  tensor<float, 4> kf = k.cast<float>();
  posenc::apply_xpos_qk(xp, qf, kf, posenc::positions::offset(0), zeta::rotary_embedding::xpos_center(s));
  record("max_err_xpos_q", expect_close<float>(to_vec(qf), want_q, "zeta xpos q"));
  record("max_err_xpos_k", expect_close<float>(to_vec(kf), want_k, "zeta xpos k"));

  // An odd length (the centre floors: 7 // 2 = 3), against forward's own tables (checked against the golden
  // tables above).
  {
    const zeta::rotary_embedding odd(8, true, 256, 1.0, 500, 1.5);
    const index_t s7 = 7;
    const auto tab = odd.forward<double>(s7);
    golden_array freqs, scale;
    freqs.values = to_vec(tab.freqs);
    scale.values = to_vec(tab.scale);
    const tensor<double, 4> q7 = test_input(1, s7, 2, 8, 9);
    const tensor<double, 4> k7 = test_input(1, s7, 2, 8, 10);
    golden_array wq, wk;
    wq.values = zeta_python_formula(q7, freqs, &scale, 0, false);
    wk.values = zeta_python_formula(k7, freqs, &scale, 0, true);
    tensor<float, 4> q7f = q7.cast<float>();
    tensor<float, 4> k7f = k7.cast<float>();
    EXPECT_EQ(zeta::rotary_embedding::xpos_center(s7), 3);
    posenc::apply_xpos_qk(odd.make_xpos_plan(), q7f, k7f, posenc::positions::offset(0),
                          zeta::rotary_embedding::xpos_center(s7));
    record("max_err_xpos_q_odd", expect_close<float>(to_vec(q7f), wq, "zeta xpos q, odd length"));
    record("max_err_xpos_k_odd", expect_close<float>(to_vec(k7f), wk, "zeta xpos k, odd length"));
  }

  expect_argument_error([&] { (void)zeta_of(find_case(cases, "zeta_rotary_scaled")).make_xpos_plan(); },
                        "interpolation_factor=2", "make_xpos_plan with interpolation");
  expect_argument_error([&] { (void)zeta_of(find_case(cases, "zeta_rotary_plain")).make_xpos_plan(); }, "use_xpos",
                        "make_xpos_plan without xpos");
}

// ------------------------------------------------------------------------------------ torchscale helpers

TEST(CompatTorchscale, FixedPosEmbeddingMatchesGolden) {
  const auto cases = load_golden("compat.txt");
  const golden_case& c = find_case(cases, "fixed_pos_embedding");
  const index_t s = c.integer("seq_len");
  const index_t d = c.integer("dim");
  const auto f = zeta::fixed_pos_embedding<float>(s, d);
  ASSERT_EQ(dims_of(f.sin), (std::vector<Eigen::Index>{s, d}));
  record("max_err_sin_float", expect_close<float>(to_vec(f.sin), c.array("sin"), "fixed_pos_embedding sin"));
  record("max_err_cos_float", expect_close<float>(to_vec(f.cos), c.array("cos"), "fixed_pos_embedding cos"));
  const auto g = zeta::fixed_pos_embedding<double>(s, d);
  record("max_err_sin_double", expect_close<double>(to_vec(g.sin), c.array("sin"), "fixed_pos_embedding sin"));
  record("max_err_cos_double", expect_close<double>(to_vec(g.cos), c.array("cos"), "fixed_pos_embedding cos"));
  // The Python signature: only the shape and scalar type of x matter.
  const tensor<float, 2> shape_only(s, d);
  const auto h = zeta::fixed_pos_embedding(shape_only);
  EXPECT_EQ(to_vec(h.sin), to_vec(f.sin));
  EXPECT_EQ(to_vec(h.cos), to_vec(f.cos));
  EXPECT_EQ(zeta::fixed_pos_embedding<float>(3, 0).sin.dimension(0), 3);
}

template <class T>
void check_apply_rotary(const golden_case& c) {
  const double scale = c.num("scale");
  const auto x = to_tensor<T, 3>(c.array("x"));
  const auto sin = to_tensor<T, 2>(c.array("sin"));
  const auto cos = to_tensor<T, 2>(c.array("cos"));
  const std::string tag = dtype_info<T>::name;
  // sin/cos rounded to T first, as the Python's tensors are: add their rounding to the tolerance.
  const double table_err = std::is_same_v<T, double> ? 1e-15 : std::ldexp(1.0, -dtype_info<T>::mantissa);
  const auto y = zeta::apply_rotary_pos_emb(x, sin, cos, scale);
  record("max_err_apply_rotary_" + tag, expect_close<T>(to_vec(y), c.array("y"), "apply_rotary_pos_emb", table_err));
  // A scale tensor of the same value gives the same result.
  tensor<T, 2> st(sin.dimensions());
  st.setConstant(T(scale));
  EXPECT_EQ(to_vec(zeta::apply_rotary_pos_emb(x, sin, cos, st)), to_vec(y));
  // And the tables from fixed_pos_embedding(L, D/2), as torchscale builds them.
  const auto sc = zeta::fixed_pos_embedding<T>(x.dimension(1), x.dimension(2) / 2);
  expect_close<T>(to_vec(zeta::apply_rotary_pos_emb(x, sc.sin, sc.cos, scale)), c.array("y"),
                  "apply_rotary_pos_emb with fixed_pos_embedding", table_err);
}

TEST(CompatTorchscale, ApplyRotaryPosEmbMatchesGolden) {
  const auto cases = load_golden("compat.txt");
  const golden_case& c = find_case(cases, "apply_rotary_pos_emb");
  check_apply_rotary<float>(c);
  check_apply_rotary<double>(c);
  check_apply_rotary<Eigen::half>(c);
}

TEST(CompatTorchscale, RotateEveryTwoByHand) {
  tensor<float, 3> x(1, 2, 4);
  x.setValues({{{1, 2, 3, 4}, {5, 6, 7, 8}}});
  const auto y = zeta::rotate_every_two(x);
  ASSERT_EQ(dims_of(y), (std::vector<Eigen::Index>{1, 2, 4}));
  EXPECT_EQ(to_vec(y), (std::vector<float>{-2, 1, -4, 3, -6, 5, -8, 7}));
  tensor<double, 2> m(1, 2);
  m.setValues({{0.5, -0.25}});
  EXPECT_EQ(to_vec(zeta::rotate_every_two(m)), (std::vector<double>{0.25, 0.5}));
}

TEST(CompatTorchscale, DuplicateInterleaveByHand) {
  tensor<float, 2> m(2, 3);
  m.setValues({{1, 2, 3}, {4, 5, 6}});
  const auto y = zeta::duplicate_interleave(m);
  ASSERT_EQ(dims_of(y), (std::vector<Eigen::Index>{2, 6}));
  EXPECT_EQ(to_vec(y), (std::vector<float>{1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6}));
}

TEST(CompatTorchscale, ApplyRotaryPosEmbByHand) {
  // One pair, cos 0 and sin 1 (a quarter turn), scale 2: (1, 3) -> 2 * (1*0 - 3*1, 3*0 + 1*1) = (-6, 2).
  tensor<float, 3> x(1, 1, 2);
  x.setValues({{{1, 3}}});
  tensor<float, 2> sin(1, 1), cos(1, 1);
  sin.setValues({{1}});
  cos.setValues({{0}});
  EXPECT_EQ(to_vec(zeta::apply_rotary_pos_emb(x, sin, cos, 2.0)), (std::vector<float>{-6, 2}));
}

// ----------------------------------------------------------------------------------------- torchscale XPOS

std::vector<std::string> xpos_default_cases() {
  std::vector<std::string> out;
  for (const auto& c : load_golden("xpos.txt"))
    if (c.integer("center_default") == 1 && c.str("style") == "interleaved" && c.num("gamma") == 0.4 &&
        c.num("base") == 10000.0)
      out.push_back(c.name);
  return out;
}

template <class T>
void check_xpos_case(const golden_case& c) {
  const zeta::xpos xp(c.integer("head_dim"), c.num("scale_base"));
  const auto x = to_tensor<T, 3>(c.array("x"));
  const auto y = xp(x, c.integer("offset"), c.integer("downscale") != 0);
  ASSERT_EQ(dims_of(y), dims_of(x));
  const double angle_err = 1.5 * std::ldexp(static_cast<double>(c.integer("offset") + x.dimension(1)), -52);
  record("max_err_xpos_" + c.name + "_" + dtype_info<T>::name,
         expect_close<T>(to_vec(y), c.array("y"), "xpos " + c.name, angle_err));
}

TEST(CompatXpos, ForwardMatchesXposGolden) {
  const auto names = xpos_default_cases();
  ASSERT_GE(names.size(), 4u);
  const auto cases = load_golden("xpos.txt");
  for (const auto& n : names) {
    check_xpos_case<float>(find_case(cases, n));
    check_xpos_case<double>(find_case(cases, n));
  }
}

TEST(CompatXpos, ForwardEqualsTorchscaleComposition) {
  // XPOS.forward written as the Python composes it: scale = zeta ** arange(min_pos, max_pos)/scale_base,
  // sin, cos = fixed_pos_embedding(scale), the last L rows, 1/scale when downscaling, apply_rotary_pos_emb.
  const index_t d = 12, l = 5;
  const double scale_base = 64;
  const zeta::xpos xp(d, scale_base);
  for (index_t offset : {index_t{0}, index_t{4}}) {
    for (bool down : {false, true}) {
      const tensor<double, 4> x4 = test_input(3, l, 1, d, static_cast<unsigned>(offset + 10 * down));
      const tensor<double, 3> x = x4.reshape(Eigen::array<Eigen::Index, 3>{3, l, d});
      const index_t total = l + offset;
      const index_t min_pos = -((total + 1) / 2);  // Python -(L + offset) // 2 floors
      tensor<double, 2> scale(l, d / 2);
      for (index_t t = 0; t < l; ++t)
        for (index_t i = 0; i < d / 2; ++i) {
          const double zeta = (2.0 * static_cast<double>(i) + 0.4 * static_cast<double>(d)) / (1.4 * static_cast<double>(d));
          const double s = std::pow(zeta, static_cast<double>(min_pos + offset + t) / scale_base);
          scale(t, i) = down ? 1.0 / s : s;
        }
      const auto full = zeta::fixed_pos_embedding<double>(total, d / 2);
      const Eigen::array<Eigen::Index, 2> first{offset, 0}, extent{l, d / 2};
      const tensor<double, 2> sin = full.sin.slice(first, extent);
      const tensor<double, 2> cos = full.cos.slice(first, extent);
      const auto want = zeta::apply_rotary_pos_emb(x, sin, cos, scale);
      const auto got = xp.forward(x, offset, down);
      golden_array expected;
      expected.values = to_vec(want);
      record("max_err_composition_off" + std::to_string(offset) + (down ? "_down" : "_up"),
             expect_close<double>(to_vec(got), expected, "xpos vs composition"));
    }
  }
}

// ------------------------------------------------------------------------------------------ tiny-llm RoPE

std::vector<std::string> tiny_llm_case_names() {
  return {"tiny_llm_slice_traditional", "tiny_llm_requests_traditional", "tiny_llm_slice_half",
          "tiny_llm_requests_half"};
}

template <class T>
void check_tiny_llm_case(const golden_case& c) {
  const tiny_llm::rope rope(c.integer("head_dim"), c.integer("seq_len"), c.num("base"),
                                    c.str("style") == "interleaved");
  const auto x = to_tensor<T, 4>(c.array("x"));
  const index_t l = x.dimension(1);
  tensor<T, 4> y;
  if (c.str("pos_form") == "offset") {
    const index_t start = c.integer("offset");
    y = rope(x, tiny_llm::slice{start, start + l});
  } else {
    std::vector<tiny_llm::slice> slices;
    for (auto s : c.array("seq_offsets").ivalues) slices.push_back({s, s + l});
    y = rope(x, slices);
  }
  ASSERT_EQ(dims_of(y), dims_of(x));
  // The cache is float: double storage is as accurate as the float table.
  record("max_err_" + c.name + "_" + dtype_info<T>::name,
         expect_close<T, std::conditional_t<std::is_same_v<T, double>, float, T>>(to_vec(y), c.array("y"), c.name));
}

TEST(CompatTinyLlm, RopeMatchesGolden) {
  const auto cases = load_golden("compat.txt");
  for (const auto& n : tiny_llm_case_names()) {
    const golden_case& c = find_case(cases, n);
    EXPECT_EQ(c.integer("head_dim"), c.integer("rotary_dim"));
    check_tiny_llm_case<float>(c);
    check_tiny_llm_case<double>(c);
    check_tiny_llm_case<Eigen::half>(c);
    check_tiny_llm_case<Eigen::bfloat16>(c);
  }
}

TEST(CompatTinyLlm, NoOffsetIsSliceFromZero) {
  for (bool traditional : {true, false}) {
    const tiny_llm::rope rope(8, 20, 10000, traditional);
    const tensor<float, 4> x = test_input(2, 6, 3, 8, 3).cast<float>();
    const auto a = rope(x);
    EXPECT_EQ(to_vec(a), to_vec(rope(x, {0, 6})));  // a braced slice
    EXPECT_EQ(to_vec(a), to_vec(rope(x, std::vector<tiny_llm::slice>{{0, 6}, {0, 6}})));
    // Different starts per request equal one slice call per request.
    const auto b = rope(x, std::vector<tiny_llm::slice>{{2, 8}, {14, 20}});
    const Eigen::array<Eigen::Index, 4> ext{1, 6, 3, 8};
    for (index_t n = 0; n < 2; ++n) {
      const tensor<float, 4> xn = x.slice(Eigen::array<Eigen::Index, 4>{n, 0, 0, 0}, ext);
      const tensor<float, 4> yn = b.slice(Eigen::array<Eigen::Index, 4>{n, 0, 0, 0}, ext);
      const index_t start = n == 0 ? 2 : 14;
      EXPECT_EQ(to_vec(yn), to_vec(rope(xn, tiny_llm::slice{start, start + 6})));
    }
  }
}

// ----------------------------------------------------------------------------------------------- errors

TEST(CompatErrors, EachRejectedArgumentThrowsArgumentError) {
  using tiny_llm::slice;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // zeta RotaryEmbedding
  expect_argument_error([] { zeta::rotary_embedding r(7); }, "dim=7", "odd dim");
  expect_argument_error([] { zeta::rotary_embedding r(2); }, "dim=2", "dim 2");
  expect_argument_error([] { zeta::rotary_embedding r(8, false, 512, 0.5); }, "interpolation_factor=0.5",
                        "interpolation < 1");
  expect_argument_error([&] { zeta::rotary_embedding r(8, false, 512, nan); }, "interpolation_factor=nan",
                        "interpolation NaN");
  expect_argument_error([] { zeta::rotary_embedding r(8, false, 512, 1.0, 1.0); }, "base=1", "base 1");
  expect_argument_error([] { zeta::rotary_embedding r(8, false, 512, 1.0, 10000, 0.0); },
                        "base_rescale_factor=0", "rescale 0");
  expect_argument_error([] { zeta::rotary_embedding r(8, true, 0.0); }, "scale_base=0", "scale_base 0");
  expect_argument_error([] { (void)zeta::rotary_embedding(8).forward(-1); }, "seq_len=-1", "forward(-1)");

  // torchscale helpers
  expect_argument_error([] { (void)zeta::fixed_pos_embedding(-1, 4); }, "seq_len=-1", "fixed_pos seq_len");
  expect_argument_error([] { (void)zeta::fixed_pos_embedding(4, -2); }, "dim=-2", "fixed_pos dim");
  expect_argument_error([] { (void)zeta::rotate_every_two(tensor<float, 3>(1, 2, 5)); }, "dimension=5",
                        "rotate_every_two odd");
  {
    const tensor<float, 3> x(2, 4, 8);
    const tensor<float, 2> ok(4, 4), short_rows(3, 4), wide(4, 8);
    expect_argument_error([&] { (void)zeta::apply_rotary_pos_emb(x, short_rows, ok); }, "sin shape (3, 4)",
                          "apply sin rows");
    expect_argument_error([&] { (void)zeta::apply_rotary_pos_emb(x, ok, wide); }, "cos shape (4, 8)",
                          "apply cos cols");
    expect_argument_error([&] { (void)zeta::apply_rotary_pos_emb(x, ok, ok, short_rows); }, "scale shape (3, 4)",
                          "apply scale shape");
    expect_argument_error([&] { (void)zeta::apply_rotary_pos_emb(tensor<float, 3>(1, 4, 7), ok, ok); }, "D=7",
                          "apply odd D");
  }

  // torchscale XPOS
  expect_argument_error([] { zeta::xpos x(7); }, "head_dim=7", "xpos odd");
  expect_argument_error([&] { zeta::xpos x(8, nan); }, "scale_base=nan", "xpos scale_base");
  {
    const zeta::xpos xp(8);
    expect_argument_error([&] { (void)xp.forward(tensor<float, 3>(1, 3, 6)); }, "D=6", "xpos D");
    expect_argument_error([&] { (void)xp.forward(tensor<float, 3>(1, 3, 8), -1); }, "offset=-1", "xpos offset");
  }

  // tiny-llm RoPE
  expect_argument_error([] { tiny_llm::rope r(7, 20); }, "dims=7", "tiny odd dims");
  expect_argument_error([] { tiny_llm::rope r(8, -1); }, "seq_len=-1", "tiny seq_len");
  {
    const tiny_llm::rope rope(8, 20);
    tensor<float, 4> x(2, 5, 2, 8);
    x.setZero();
    expect_argument_error([&] { (void)rope(x, slice{5, 9}); }, "slice(5, 9) has length 4, x has L=5", "slice length");
    expect_argument_error([&] { (void)rope(x, slice{16, 21}); }, "stop=21", "slice past seq_len");
    expect_argument_error([&] { (void)rope(x, slice{-1, 4}); }, "start=-1", "negative start");
    expect_argument_error([&] { (void)rope(x, std::vector<slice>{{0, 5}}); }, "offsets.size()=1", "slice count");
    expect_argument_error([&] { (void)rope(x, std::vector<slice>{{0, 5}, {3, 7}}); }, "offsets[1] slice(3, 7)",
                          "one request's length");
    expect_argument_error([&] { (void)rope(x, std::vector<slice>{{0, 5}, {18, 23}}); }, "offsets[1].stop=23",
                          "one request past seq_len");
    expect_argument_error([&] { (void)rope(tensor<float, 4>(1, 21, 1, 8)); }, "L=21", "no offset past seq_len");
    expect_argument_error([&] { (void)rope(tensor<float, 4>(1, 2, 1, 6)); }, "D=6", "tiny head dim");
  }
}

// ------------------------------------------------------------------------------------------- try_ forms

/// A tensor no call here produces, to see that a rejected call leaves its out-parameter alone.
template <class T, int Rank>
tensor<T, Rank> marker() {
  std::array<Eigen::Index, Rank> dims{};
  dims.fill(1);
  tensor<T, Rank> t(dims);
  t.data()[0] = T(42);  // one element (setConstant's NEON packet store draws a GCC 12 -Warray-bounds false positive)
  return t;
}
template <class T, int Rank>
bool is_marker(const tensor<T, Rank>& t) {
  return t.size() == 1 && as_double(t.data()[0]) == 42.0;
}

template <class T>
using ref = T&;
template <class T>
using cref = const T&;

static_assert(noexcept(zeta::rotary_embedding::try_create(8, false, 512, 1, 10000, 1,
                                                                   std::declval<ref<zeta::rotary_embedding>>())));
static_assert(noexcept(std::declval<cref<zeta::rotary_embedding>>().try_forward(
    3, std::declval<ref<zeta::rotary_tables<float>>>())));
static_assert(noexcept(std::declval<cref<zeta::rotary_embedding>>().try_make_xpos_plan(
    std::declval<ref<posenc::xpos_plan>>())));
static_assert(noexcept(zeta::try_fixed_pos_embedding(3, 4, std::declval<ref<zeta::sin_cos<double>>>())));
static_assert(noexcept(zeta::try_fixed_pos_embedding(std::declval<cref<tensor<float, 2>>>(),
                                                             std::declval<ref<zeta::sin_cos<float>>>())));
static_assert(noexcept(zeta::try_rotate_every_two(std::declval<cref<tensor<float, 3>>>(),
                                                          std::declval<ref<tensor<float, 3>>>())));
static_assert(noexcept(zeta::try_duplicate_interleave(std::declval<cref<tensor<float, 2>>>(),
                                                              std::declval<ref<tensor<float, 2>>>())));
static_assert(noexcept(zeta::try_apply_rotary_pos_emb(
    std::declval<cref<tensor<float, 3>>>(), std::declval<cref<tensor<float, 2>>>(), std::declval<cref<tensor<float, 2>>>(),
    1.0, std::declval<ref<tensor<float, 3>>>())));
static_assert(noexcept(zeta::try_apply_rotary_pos_emb(
    std::declval<cref<tensor<float, 3>>>(), std::declval<cref<tensor<float, 2>>>(), std::declval<cref<tensor<float, 2>>>(),
    std::declval<cref<tensor<float, 2>>>(), std::declval<ref<tensor<float, 3>>>())));
static_assert(noexcept(zeta::xpos::try_create(8, 512, std::declval<ref<zeta::xpos>>())));
static_assert(noexcept(std::declval<cref<zeta::xpos>>().try_forward(
    std::declval<cref<tensor<double, 3>>>(), 0, false, std::declval<ref<tensor<double, 3>>>())));
static_assert(noexcept(tiny_llm::rope::try_create(8, 20, 10000, false, std::declval<ref<tiny_llm::rope>>())));
static_assert(noexcept(std::declval<cref<tiny_llm::rope>>().try_call(std::declval<cref<tensor<float, 4>>>(),
                                                                           std::declval<ref<tensor<float, 4>>>())));
static_assert(noexcept(std::declval<cref<tiny_llm::rope>>().try_call(
    std::declval<cref<tensor<float, 4>>>(), tiny_llm::slice{0, 1}, std::declval<ref<tensor<float, 4>>>())));
static_assert(noexcept(std::declval<cref<tiny_llm::rope>>().try_call(
    std::declval<cref<tensor<float, 4>>>(), std::declval<cref<std::vector<tiny_llm::slice>>>(),
    std::declval<ref<tensor<float, 4>>>())));

TEST(CompatNoThrow, ZetaRotaryEmbedding) {
  using zeta::rotary_embedding;
  // Accepted: the same object and tables as the throwing forms.
  rotary_embedding r;
  ASSERT_TRUE(rotary_embedding::try_create(8, true, 256, 1.0, 500, 1.5, r).ok());
  const rotary_embedding t(8, true, 256, 1.0, 500, 1.5);
  EXPECT_EQ(r.dim(), 8);
  EXPECT_TRUE(r.use_xpos());
  EXPECT_EQ(r.plan().inv_freq(), t.plan().inv_freq());
  zeta::rotary_tables<double> tab;
  const posenc::status fs = r.try_forward(7, tab);
  EXPECT_TRUE(fs.ok());
  EXPECT_TRUE(fs.message().empty());
  const auto want = t.forward<double>(7);
  EXPECT_EQ(to_vec(tab.freqs), to_vec(want.freqs));
  EXPECT_EQ(to_vec(tab.scale), to_vec(want.scale));
  posenc::xpos_plan xp;
  ASSERT_TRUE(r.try_make_xpos_plan(xp).ok());
  EXPECT_EQ(xp.inv_freq(), t.make_xpos_plan().inv_freq());

  // Rejected constructor arguments: invalid_argument, the constructor's message, `out` unchanged.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  struct args {
    index_t dim;
    bool use_xpos;
    double scale_base, interpolation_factor, base, base_rescale_factor;
  };
  for (const args& a : {args{7, false, 512, 1, 10000, 1}, args{2, false, 512, 1, 10000, 1}, args{8, false, 512, 0.5, 10000, 1},
                        args{8, false, 512, nan, 10000, 1}, args{8, false, 512, 1, 1, 1}, args{8, false, 512, 1, 10000, 0},
                        args{8, true, 0, 1, 10000, 1}}) {
    const std::string msg = thrown_message([&] {
      rotary_embedding x(a.dim, a.use_xpos, a.scale_base, a.interpolation_factor, a.base, a.base_rescale_factor);
    });
    expect_rejection(rotary_embedding::try_create(a.dim, a.use_xpos, a.scale_base, a.interpolation_factor, a.base,
                                                 a.base_rescale_factor, r),
                    msg, "rotary_embedding::try_create " + msg);
    EXPECT_EQ(r.dim(), 8);
    EXPECT_EQ(r.base(), 500.0);
    EXPECT_EQ(r.plan().inv_freq(), t.plan().inv_freq());
  }

  // forward and make_xpos_plan.
  zeta::rotary_tables<float> tf{marker<float, 2>(), marker<float, 2>()};
  expect_rejection(r.try_forward(-1, tf), thrown_message([&] { (void)r.forward(-1); }), "forward(-1)");
  const index_t huge = std::numeric_limits<index_t>::max() / 4;
  expect_rejection(r.try_forward(huge, tf), thrown_message([&] { (void)r.forward(huge); }), "forward overflow");
  EXPECT_TRUE(is_marker(tf.freqs) && is_marker(tf.scale));
  posenc::xpos_plan kept;
  const rotary_embedding plain(8), scaled(8, true, 512, 2.0);
  expect_rejection(plain.try_make_xpos_plan(kept), thrown_message([&] { (void)plain.make_xpos_plan(); }), "no xpos");
  expect_rejection(scaled.try_make_xpos_plan(kept), thrown_message([&] { (void)scaled.make_xpos_plan(); }),
                  "interpolation");
  EXPECT_TRUE(kept.empty());
  ASSERT_TRUE(plain.try_make_xpos_plan(xp).code() == posenc::errc::invalid_argument);
  EXPECT_EQ(xp.inv_freq(), t.make_xpos_plan().inv_freq());  // unchanged by the rejected call

  // A default-constructed (empty) embedding is rejected by both forms.
  const rotary_embedding empty;
  const std::string empty_msg = thrown_message([&] { (void)empty.forward(3); });
  EXPECT_NE(empty_msg.find("empty"), std::string::npos) << empty_msg;
  expect_rejection(empty.try_forward(3, tf), empty_msg, "empty forward");
  expect_rejection(empty.try_make_xpos_plan(kept), thrown_message([&] { (void)empty.make_xpos_plan(); }),
                  "empty make_xpos_plan");
  EXPECT_TRUE(is_marker(tf.freqs));
}

TEST(CompatNoThrow, TorchscaleHelpers) {
  using namespace posenc::compat::zeta;
  // fixed_pos_embedding
  sin_cos<float> sc{marker<float, 2>(), marker<float, 2>()};
  ASSERT_TRUE(try_fixed_pos_embedding(5, 3, sc).ok());
  const auto want = fixed_pos_embedding<float>(5, 3);
  EXPECT_EQ(to_vec(sc.sin), to_vec(want.sin));
  EXPECT_EQ(to_vec(sc.cos), to_vec(want.cos));
  sin_cos<double> sd;
  ASSERT_TRUE(try_fixed_pos_embedding(tensor<double, 2>(4, 0), sd).ok());
  EXPECT_EQ(sd.sin.dimension(0), 4);
  EXPECT_EQ(sd.sin.dimension(1), 0);
  sin_cos<float> kept{marker<float, 2>(), marker<float, 2>()};
  const index_t big = std::numeric_limits<index_t>::max();
  for (const std::array<index_t, 2>& a : {std::array<index_t, 2>{-1, 4}, std::array<index_t, 2>{4, -2},
                                          std::array<index_t, 2>{4, big}, std::array<index_t, 2>{big / 2, 4}}) {
    expect_rejection(try_fixed_pos_embedding(a[0], a[1], kept),
                    thrown_message([&] { (void)fixed_pos_embedding<float>(a[0], a[1]); }), "fixed_pos_embedding");
    EXPECT_TRUE(is_marker(kept.sin) && is_marker(kept.cos));
  }

  // rotate_every_two
  tensor<float, 3> x(1, 2, 4);
  x.setValues({{{1, 2, 3, 4}, {5, 6, 7, 8}}});
  tensor<float, 3> y = marker<float, 3>();
  ASSERT_TRUE(try_rotate_every_two(x, y).ok());
  EXPECT_EQ(to_vec(y), to_vec(rotate_every_two(x)));
  tensor<float, 3> in_place = x;
  ASSERT_TRUE(try_rotate_every_two(in_place, in_place).ok());  // out may be the input
  EXPECT_EQ(to_vec(in_place), to_vec(y));
  const tensor<float, 3> odd(1, 2, 5);
  y = marker<float, 3>();
  expect_rejection(try_rotate_every_two(odd, y), thrown_message([&] { (void)rotate_every_two(odd); }), "rotate odd");
  EXPECT_TRUE(is_marker(y));

  // duplicate_interleave: every shape is accepted.
  tensor<float, 2> m(2, 3);
  m.setValues({{1, 2, 3}, {4, 5, 6}});
  tensor<float, 2> dm = marker<float, 2>();
  ASSERT_TRUE(try_duplicate_interleave(m, dm).ok());
  EXPECT_EQ(to_vec(dm), to_vec(duplicate_interleave(m)));

  // apply_rotary_pos_emb, both scale forms.
  const auto tables = fixed_pos_embedding<float>(2, 2);
  tensor<float, 2> st(2, 2);
  st.setConstant(1.5f);
  tensor<float, 3> z = marker<float, 3>();
  ASSERT_TRUE(try_apply_rotary_pos_emb(x, tables.sin, tables.cos, 1.5, z).ok());
  EXPECT_EQ(to_vec(z), to_vec(apply_rotary_pos_emb(x, tables.sin, tables.cos, 1.5)));
  ASSERT_TRUE(try_apply_rotary_pos_emb(x, tables.sin, tables.cos, st, z).ok());
  EXPECT_EQ(to_vec(z), to_vec(apply_rotary_pos_emb(x, tables.sin, tables.cos, st)));
  const tensor<float, 2> short_rows(1, 2), wide(2, 4);
  z = marker<float, 3>();
  expect_rejection(try_apply_rotary_pos_emb(x, short_rows, tables.cos, 1.0, z),
                  thrown_message([&] { (void)apply_rotary_pos_emb(x, short_rows, tables.cos); }), "apply sin rows");
  expect_rejection(try_apply_rotary_pos_emb(x, tables.sin, wide, 1.0, z),
                  thrown_message([&] { (void)apply_rotary_pos_emb(x, tables.sin, wide); }), "apply cos cols");
  expect_rejection(try_apply_rotary_pos_emb(odd, tables.sin, tables.cos, 1.0, z),
                  thrown_message([&] { (void)apply_rotary_pos_emb(odd, tables.sin, tables.cos); }), "apply odd D");
  expect_rejection(try_apply_rotary_pos_emb(x, tables.sin, tables.cos, short_rows, z),
                  thrown_message([&] { (void)apply_rotary_pos_emb(x, tables.sin, tables.cos, short_rows); }),
                  "apply scale shape");
  expect_rejection(try_apply_rotary_pos_emb(x, tables.sin, short_rows, st, z),
                  thrown_message([&] { (void)apply_rotary_pos_emb(x, tables.sin, short_rows, st); }),
                  "apply scale form, cos rows");
  EXPECT_TRUE(is_marker(z));
}

TEST(CompatNoThrow, TorchscaleXpos) {
  using zeta::xpos;
  xpos xp;
  ASSERT_TRUE(xpos::try_create(8, 64, xp).ok());
  EXPECT_EQ(xp.head_dim(), 8);
  EXPECT_EQ(xp.scale_base(), 64.0);
  const xpos ref_xp(8, 64);
  const tensor<double, 4> x4 = test_input(2, 5, 1, 8, 3);
  const tensor<double, 3> x = x4.reshape(Eigen::array<Eigen::Index, 3>{2, 5, 8});
  tensor<double, 3> y = marker<double, 3>();
  ASSERT_TRUE(xp.try_forward(x, 3, true, y).ok());
  EXPECT_EQ(to_vec(y), to_vec(ref_xp.forward(x, 3, true)));
  tensor<double, 3> in_place = x;
  ASSERT_TRUE(xp.try_forward(in_place, 3, true, in_place).ok());  // out may be the input
  EXPECT_EQ(to_vec(in_place), to_vec(y));

  const double nan = std::numeric_limits<double>::quiet_NaN();
  expect_rejection(xpos::try_create(7, 512, xp), thrown_message([] { xpos bad(7); }), "xpos odd");
  expect_rejection(xpos::try_create(8, nan, xp), thrown_message([&] { xpos bad(8, nan); }), "xpos scale_base");
  EXPECT_EQ(xp.head_dim(), 8);
  EXPECT_EQ(xp.scale_base(), 64.0);

  y = marker<double, 3>();
  const tensor<double, 3> d6(1, 3, 6);
  expect_rejection(xp.try_forward(d6, 0, false, y), thrown_message([&] { (void)xp.forward(d6); }), "xpos D");
  expect_rejection(xp.try_forward(x, -1, false, y), thrown_message([&] { (void)xp.forward(x, -1); }), "xpos offset");
  const index_t big = std::numeric_limits<index_t>::max() - 2;
  expect_rejection(xp.try_forward(x, big, false, y), thrown_message([&] { (void)xp.forward(x, big); }),
                  "xpos offset overflow");
  const xpos empty;
  expect_rejection(empty.try_forward(x, 0, false, y), thrown_message([&] { (void)empty.forward(x); }), "xpos empty");
  EXPECT_TRUE(is_marker(y));
}

TEST(CompatNoThrow, TinyLlmRope) {
  using tiny_llm::rope;
  using tiny_llm::slice;
  rope r;
  ASSERT_TRUE(rope::try_create(8, 20, 10000, true, r).ok());
  const rope t(8, 20, 10000, true);
  EXPECT_EQ(r.dims(), 8);
  EXPECT_EQ(r.seq_len(), 20);
  EXPECT_TRUE(r.traditional());
  const tensor<float, 4> x = test_input(2, 5, 3, 8, 4).cast<float>();
  tensor<float, 4> y = marker<float, 4>();
  ASSERT_TRUE(r.try_call(x, y).ok());
  EXPECT_EQ(to_vec(y), to_vec(t(x)));
  ASSERT_TRUE(r.try_call(x, slice{4, 9}, y).ok());
  EXPECT_EQ(to_vec(y), to_vec(t(x, slice{4, 9})));
  const std::vector<slice> two{{2, 7}, {15, 20}};
  ASSERT_TRUE(r.try_call(x, two, y).ok());
  EXPECT_EQ(to_vec(y), to_vec(t(x, two)));
  tensor<float, 4> in_place = x;
  ASSERT_TRUE(r.try_call(in_place, two, in_place).ok());  // out may be the input
  EXPECT_EQ(to_vec(in_place), to_vec(y));

  const double nan = std::numeric_limits<double>::quiet_NaN();
  expect_rejection(rope::try_create(7, 20, 10000, false, r), thrown_message([] { rope bad(7, 20); }), "dims odd");
  expect_rejection(rope::try_create(8, -1, 10000, false, r), thrown_message([] { rope bad(8, -1); }), "seq_len");
  expect_rejection(rope::try_create(8, 20, nan, false, r), thrown_message([&] { rope bad(8, 20, nan); }), "base");
  EXPECT_EQ(r.dims(), 8);
  EXPECT_EQ(r.seq_len(), 20);
  EXPECT_TRUE(r.traditional());

  y = marker<float, 4>();
  const tensor<float, 4> long_x(1, 21, 1, 8), d6(1, 2, 1, 6);
  expect_rejection(r.try_call(long_x, y), thrown_message([&] { (void)r(long_x); }), "no offset past seq_len");
  expect_rejection(r.try_call(d6, y), thrown_message([&] { (void)r(d6); }), "head dim");
  expect_rejection(r.try_call(x, slice{5, 9}, y), thrown_message([&] { (void)r(x, slice{5, 9}); }), "slice length");
  expect_rejection(r.try_call(x, slice{16, 21}, y), thrown_message([&] { (void)r(x, slice{16, 21}); }), "past seq_len");
  expect_rejection(r.try_call(x, slice{-1, 4}, y), thrown_message([&] { (void)r(x, slice{-1, 4}); }), "negative start");
  const std::vector<slice> one{{0, 5}}, bad_len{{0, 5}, {3, 7}}, past{{0, 5}, {18, 23}};
  expect_rejection(r.try_call(x, one, y), thrown_message([&] { (void)r(x, one); }), "slice count");
  expect_rejection(r.try_call(x, bad_len, y), thrown_message([&] { (void)r(x, bad_len); }), "one request's length");
  expect_rejection(r.try_call(x, past, y), thrown_message([&] { (void)r(x, past); }), "one request past seq_len");
  const rope empty;
  const std::string empty_msg = thrown_message([&] { (void)empty(x); });
  EXPECT_NE(empty_msg.find("empty"), std::string::npos) << empty_msg;
  expect_rejection(empty.try_call(x, y), empty_msg, "empty rope");
  expect_rejection(empty.try_call(x, slice{0, 5}, y), thrown_message([&] { (void)empty(x, slice{0, 5}); }),
                  "empty rope, slice");
  EXPECT_TRUE(is_marker(y));
}

}  // namespace
