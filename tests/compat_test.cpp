// The Python-API counterparts (posenc/compat.hpp) against tests/golden/compat.txt (zeta RotaryEmbedding,
// torchscale fixed_pos_embedding / apply_rotary_pos_emb, tiny-llm RoPE) and xpos.txt (torchscale XPOS), the
// small torchscale helpers on hand-written inputs, the equivalent plans against the Python formulas
// evaluated here from the golden tables, and every rejected argument.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <posenc/compat.hpp>
#include <posenc/posenc.hpp>

#include "test_util.hpp"

namespace {

using posenc::index_t;
using namespace posenc_test;

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

posenc::zeta::rotary_embedding zeta_of(const golden_case& c) {
  return posenc::zeta::rotary_embedding(c.integer("dim"), c.integer("use_xpos") != 0, c.num("scale_base"),
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
  posenc::apply_xpos_qk(xp, qf, kf, posenc::positions::offset(0), posenc::zeta::rotary_embedding::xpos_center(s));
  record("max_err_xpos_q", expect_close<float>(to_vec(qf), want_q, "zeta xpos q"));
  record("max_err_xpos_k", expect_close<float>(to_vec(kf), want_k, "zeta xpos k"));

  // An odd length (the centre floors: 7 // 2 = 3), against forward's own tables (checked against the golden
  // tables above).
  {
    const posenc::zeta::rotary_embedding odd(8, true, 256, 1.0, 500, 1.5);
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
    EXPECT_EQ(posenc::zeta::rotary_embedding::xpos_center(s7), 3);
    posenc::apply_xpos_qk(odd.make_xpos_plan(), q7f, k7f, posenc::positions::offset(0),
                          posenc::zeta::rotary_embedding::xpos_center(s7));
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
  const auto f = posenc::zeta::fixed_pos_embedding<float>(s, d);
  ASSERT_EQ(dims_of(f.sin), (std::vector<Eigen::Index>{s, d}));
  record("max_err_sin_float", expect_close<float>(to_vec(f.sin), c.array("sin"), "fixed_pos_embedding sin"));
  record("max_err_cos_float", expect_close<float>(to_vec(f.cos), c.array("cos"), "fixed_pos_embedding cos"));
  const auto g = posenc::zeta::fixed_pos_embedding<double>(s, d);
  record("max_err_sin_double", expect_close<double>(to_vec(g.sin), c.array("sin"), "fixed_pos_embedding sin"));
  record("max_err_cos_double", expect_close<double>(to_vec(g.cos), c.array("cos"), "fixed_pos_embedding cos"));
  // The Python signature: only the shape and scalar type of x matter.
  const tensor<float, 2> shape_only(s, d);
  const auto h = posenc::zeta::fixed_pos_embedding(shape_only);
  EXPECT_EQ(to_vec(h.sin), to_vec(f.sin));
  EXPECT_EQ(to_vec(h.cos), to_vec(f.cos));
  EXPECT_EQ(posenc::zeta::fixed_pos_embedding<float>(3, 0).sin.dimension(0), 3);
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
  const auto y = posenc::zeta::apply_rotary_pos_emb(x, sin, cos, scale);
  record("max_err_apply_rotary_" + tag, expect_close<T>(to_vec(y), c.array("y"), "apply_rotary_pos_emb", table_err));
  // A scale tensor of the same value gives the same result.
  tensor<T, 2> st(sin.dimensions());
  st.setConstant(T(scale));
  EXPECT_EQ(to_vec(posenc::zeta::apply_rotary_pos_emb(x, sin, cos, st)), to_vec(y));
  // And the tables from fixed_pos_embedding(L, D/2), as torchscale builds them.
  const auto sc = posenc::zeta::fixed_pos_embedding<T>(x.dimension(1), x.dimension(2) / 2);
  expect_close<T>(to_vec(posenc::zeta::apply_rotary_pos_emb(x, sc.sin, sc.cos, scale)), c.array("y"),
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
  const auto y = posenc::zeta::rotate_every_two(x);
  ASSERT_EQ(dims_of(y), (std::vector<Eigen::Index>{1, 2, 4}));
  EXPECT_EQ(to_vec(y), (std::vector<float>{-2, 1, -4, 3, -6, 5, -8, 7}));
  tensor<double, 2> m(1, 2);
  m.setValues({{0.5, -0.25}});
  EXPECT_EQ(to_vec(posenc::zeta::rotate_every_two(m)), (std::vector<double>{0.25, 0.5}));
}

TEST(CompatTorchscale, DuplicateInterleaveByHand) {
  tensor<float, 2> m(2, 3);
  m.setValues({{1, 2, 3}, {4, 5, 6}});
  const auto y = posenc::zeta::duplicate_interleave(m);
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
  EXPECT_EQ(to_vec(posenc::zeta::apply_rotary_pos_emb(x, sin, cos, 2.0)), (std::vector<float>{-6, 2}));
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
  const posenc::zeta::xpos xp(c.integer("head_dim"), c.num("scale_base"));
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
  const posenc::zeta::xpos xp(d, scale_base);
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
      const auto full = posenc::zeta::fixed_pos_embedding<double>(total, d / 2);
      const Eigen::array<Eigen::Index, 2> first{offset, 0}, extent{l, d / 2};
      const tensor<double, 2> sin = full.sin.slice(first, extent);
      const tensor<double, 2> cos = full.cos.slice(first, extent);
      const auto want = posenc::zeta::apply_rotary_pos_emb(x, sin, cos, scale);
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
  const posenc::tiny_llm::rope rope(c.integer("head_dim"), c.integer("seq_len"), c.num("base"),
                                    c.str("style") == "interleaved");
  const auto x = to_tensor<T, 4>(c.array("x"));
  const index_t l = x.dimension(1);
  tensor<T, 4> y;
  if (c.str("pos_form") == "offset") {
    const index_t start = c.integer("offset");
    y = rope(x, posenc::tiny_llm::slice{start, start + l});
  } else {
    std::vector<posenc::tiny_llm::slice> slices;
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
    const posenc::tiny_llm::rope rope(8, 20, 10000, traditional);
    const tensor<float, 4> x = test_input(2, 6, 3, 8, 3).cast<float>();
    const auto a = rope(x);
    EXPECT_EQ(to_vec(a), to_vec(rope(x, {0, 6})));  // a braced slice
    EXPECT_EQ(to_vec(a), to_vec(rope(x, std::vector<posenc::tiny_llm::slice>{{0, 6}, {0, 6}})));
    // Different starts per request equal one slice call per request.
    const auto b = rope(x, std::vector<posenc::tiny_llm::slice>{{2, 8}, {14, 20}});
    const Eigen::array<Eigen::Index, 4> ext{1, 6, 3, 8};
    for (index_t n = 0; n < 2; ++n) {
      const tensor<float, 4> xn = x.slice(Eigen::array<Eigen::Index, 4>{n, 0, 0, 0}, ext);
      const tensor<float, 4> yn = b.slice(Eigen::array<Eigen::Index, 4>{n, 0, 0, 0}, ext);
      const index_t start = n == 0 ? 2 : 14;
      EXPECT_EQ(to_vec(yn), to_vec(rope(xn, posenc::tiny_llm::slice{start, start + 6})));
    }
  }
}

// ----------------------------------------------------------------------------------------------- errors

TEST(CompatErrors, EachRejectedArgumentThrowsArgumentError) {
  using posenc::tiny_llm::slice;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // zeta RotaryEmbedding
  expect_argument_error([] { posenc::zeta::rotary_embedding r(7); }, "dim=7", "odd dim");
  expect_argument_error([] { posenc::zeta::rotary_embedding r(2); }, "dim=2", "dim 2");
  expect_argument_error([] { posenc::zeta::rotary_embedding r(8, false, 512, 0.5); }, "interpolation_factor=0.5",
                        "interpolation < 1");
  expect_argument_error([&] { posenc::zeta::rotary_embedding r(8, false, 512, nan); }, "interpolation_factor=nan",
                        "interpolation NaN");
  expect_argument_error([] { posenc::zeta::rotary_embedding r(8, false, 512, 1.0, 1.0); }, "base=1", "base 1");
  expect_argument_error([] { posenc::zeta::rotary_embedding r(8, false, 512, 1.0, 10000, 0.0); },
                        "base_rescale_factor=0", "rescale 0");
  expect_argument_error([] { posenc::zeta::rotary_embedding r(8, true, 0.0); }, "scale_base=0", "scale_base 0");
  expect_argument_error([] { (void)posenc::zeta::rotary_embedding(8).forward(-1); }, "seq_len=-1", "forward(-1)");

  // torchscale helpers
  expect_argument_error([] { (void)posenc::zeta::fixed_pos_embedding(-1, 4); }, "seq_len=-1", "fixed_pos seq_len");
  expect_argument_error([] { (void)posenc::zeta::fixed_pos_embedding(4, -2); }, "dim=-2", "fixed_pos dim");
  expect_argument_error([] { (void)posenc::zeta::rotate_every_two(tensor<float, 3>(1, 2, 5)); }, "dimension=5",
                        "rotate_every_two odd");
  {
    const tensor<float, 3> x(2, 4, 8);
    const tensor<float, 2> ok(4, 4), short_rows(3, 4), wide(4, 8);
    expect_argument_error([&] { (void)posenc::zeta::apply_rotary_pos_emb(x, short_rows, ok); }, "sin shape (3, 4)",
                          "apply sin rows");
    expect_argument_error([&] { (void)posenc::zeta::apply_rotary_pos_emb(x, ok, wide); }, "cos shape (4, 8)",
                          "apply cos cols");
    expect_argument_error([&] { (void)posenc::zeta::apply_rotary_pos_emb(x, ok, ok, short_rows); }, "scale shape (3, 4)",
                          "apply scale shape");
    expect_argument_error([&] { (void)posenc::zeta::apply_rotary_pos_emb(tensor<float, 3>(1, 4, 7), ok, ok); }, "D=7",
                          "apply odd D");
  }

  // torchscale XPOS
  expect_argument_error([] { posenc::zeta::xpos x(7); }, "head_dim=7", "xpos odd");
  expect_argument_error([&] { posenc::zeta::xpos x(8, nan); }, "scale_base=nan", "xpos scale_base");
  {
    const posenc::zeta::xpos xp(8);
    expect_argument_error([&] { (void)xp.forward(tensor<float, 3>(1, 3, 6)); }, "D=6", "xpos D");
    expect_argument_error([&] { (void)xp.forward(tensor<float, 3>(1, 3, 8), -1); }, "offset=-1", "xpos offset");
  }

  // tiny-llm RoPE
  expect_argument_error([] { posenc::tiny_llm::rope r(7, 20); }, "dims=7", "tiny odd dims");
  expect_argument_error([] { posenc::tiny_llm::rope r(8, -1); }, "seq_len=-1", "tiny seq_len");
  {
    const posenc::tiny_llm::rope rope(8, 20);
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

}  // namespace
