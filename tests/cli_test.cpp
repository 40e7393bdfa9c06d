// End-to-end tests of the `posenc` command-line tool (shared/CLI_SPEC.md): each test writes small .npy files,
// runs the binary, and compares its output file with the golden data, or checks how it rejects bad input
// (exit code 1..127, one line on stderr, no output file). `rope --gguf` / `--hf-config` read the model files of
// tests/data/gguf and tests/data/hf and must equal the same parameters given as flags.
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <posenc/io/gguf.hpp>
#include <posenc/io/npy.hpp>
#include <posenc/io/npy_tensors.hpp>
#include <posenc/posenc.hpp>

#include "test_util.hpp"

namespace {

using posenc::index_t;
using namespace posenc_test;

struct cli_result {
  int code;
  std::string err;
};

std::string path(const std::string& name) { return scratch_path(name); }

bool exists(const std::string& p) { return std::ifstream(p).good(); }

cli_result run(const std::string& args) {
  const std::string err = path("stderr.txt");
  const std::string cmd = std::string(POSENC_CLI) + " " + args + " 2> '" + err + "' > /dev/null";
  const int status = std::system(cmd.c_str());
  std::ifstream in(err);
  std::stringstream ss;
  ss << in.rdbuf();
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 255, ss.str()};
}

template <class S>
void save(const std::string& file, const std::vector<index_t>& shape, const std::vector<S>& v) {
  posenc::write_npy(path(file), posenc::detail::npy_dtype_of<S>(), shape, v.data());
}

std::vector<double> load(const std::string& file, std::vector<index_t>* shape = nullptr) {
  const posenc::npy_array a = posenc::read_npy(path(file));
  if (shape) *shape = a.shape;
  posenc::npy_array f = a;
  f.shape = {a.size()};
  if (a.dtype[1] == 'i') {
    const auto t = posenc::npy_to_tensor<std::int64_t, 1>(f);
    return std::vector<double>(t.data(), t.data() + t.size());
  }
  const auto t = posenc::npy_to_tensor<double, 1>(f);
  return std::vector<double>(t.data(), t.data() + t.size());
}

template <class S>
std::vector<S> as(const std::vector<double>& v) {
  std::vector<S> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = static_cast<S>(static_cast<float>(v[i]));
  if constexpr (std::is_same_v<S, double>) out = v;
  return out;
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= tol * std::max(1.0, std::fabs(want[i]))) && bad++ < 3)
      ADD_FAILURE() << what << " element " << i << ": got " << got[i] << " want " << want[i];
}

std::string rope_flags(const golden_case& c) {
  std::ostringstream f;
  f << " --style " << (c.str("style") == "interleaved" ? "interleaved" : "half-split") << " --rotary-dim "
    << c.integer("rotary_dim") << " --base " << c.str("base");
  const std::string s = c.has("scaling") ? c.str("scaling") : "none";
  if (s == "linear") f << " --scaling linear --factor " << c.str("factor");
  if (s == "ntk") f << " --scaling ntk --factor " << c.str("base_rescale_factor");
  if (s == "yarn")
    f << " --scaling yarn --factor " << c.str("factor") << " --original-max-positions " << c.str("original_max_positions")
      << " --beta-fast " << c.str("beta_fast") << " --beta-slow " << c.str("beta_slow");
  if (s == "yarn" && c.has("attention_factor")) f << " --attention-factor " << c.str("attention_factor");
  if (s == "llama3")
    f << " --scaling llama3 --factor " << c.str("factor") << " --original-max-positions " << c.str("original_max_positions")
      << " --low-freq-factor " << c.str("low_freq_factor") << " --high-freq-factor " << c.str("high_freq_factor");
  if (c.str("direction") == "inverse") f << " --inverse";
  return f.str();
}

// Every rope case the CLI can express (positions as an [N, L] file, or --offset for the offset form).
void check_rope_case(const std::string& file, const std::string& name) {
  const auto cases = load_golden(file);
  const golden_case& c = find_case(cases, name);
  const auto& x = c.array("x");
  save("x.npy", x.shape, as<float>(x.values));
  std::string args = "rope --input '" + path("x.npy") + "' --output '" + path("y.npy") + "'" + rope_flags(c);
  if (c.str("pos_form") == "offset") {
    args += " --offset " + c.str("offset");
  } else {
    const auto& p = c.array("positions");
    save("p.npy", p.shape, p.ivalues);
    args += " --positions '" + path("p.npy") + "'";
  }
  std::remove(path("y.npy").c_str());
  const cli_result r = run(args);
  ASSERT_EQ(r.code, 0) << args << "\n" << r.err;
  expect_near_all(load("y.npy"), c.array("y").values, 2e-6, file + ":" + name);
}

TEST(CliRope, GoldenBasic) {
  // The CLI has no rotary-offset flag: the `window` cases are library-only.
  for (const auto& c : load_golden("rope_basic.txt"))
    if (c.integer("rotary_offset") == 0) check_rope_case("rope_basic.txt", c.name);
}

TEST(CliRope, GoldenScaling) {
  for (const char* n : {"none_default", "linear", "ntk", "yarn_default", "yarn_attention_factor", "llama3", "llama3_equal",
                        "partial_linear"})
    check_rope_case("rope_scaling.txt", n);
}

TEST(CliRope, GoldenLongPositions) {
  for (const auto& c : load_golden("rope_long.txt")) check_rope_case("rope_long.txt", c.name);
}

// dynamic-ntk and longrope take n = max position + 1 from the positions given (CLI_SPEC.md); the library
// path with that n is golden-tested, so the CLI must agree with it exactly.
TEST(CliRope, DynamicAndLongRopeUseMaxPosition) {
  const std::vector<double> x = [] {
    std::vector<double> v(1 * 3 * 2 * 16);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::ldexp(static_cast<double>(static_cast<int>(i % 13) - 6), -3);
    return v;
  }();
  save("x.npy", {1, 3, 2, 16}, as<float>(x));
  const std::vector<std::int64_t> ids{0, 5000, 9000};
  save("p.npy", {3}, ids);
  std::vector<double> sf(8), lf(8);
  for (int i = 0; i < 8; ++i) {
    sf[static_cast<std::size_t>(i)] = 1.0 + 0.1 * i;
    lf[static_cast<std::size_t>(i)] = 1.0 + 2.0 * i;
  }
  save("sf.npy", {8}, sf);
  save("lf.npy", {8}, lf);
  struct variant {
    std::string flags;
    posenc::rope_scaling scaling;
  };
  const std::vector<variant> variants{
      {" --scaling dynamic-ntk --factor 4 --original-max-positions 2048", posenc::rope_scaling::dynamic_ntk(4.0, 2048)},
      {" --scaling longrope --factor 8 --original-max-positions 4096 --short-factors '" + path("sf.npy") + "' --long-factors '" +
           path("lf.npy") + "'",
       posenc::rope_scaling::longrope(sf, lf, 4096, 8.0)},
      {" --scaling longrope --factor 8 --original-max-positions 9001 --short-factors '" + path("sf.npy") + "' --long-factors '" +
           path("lf.npy") + "'",
       posenc::rope_scaling::longrope(sf, lf, 9001, 8.0)}};
  for (const auto& v : variants) {
    const cli_result r = run("rope --input '" + path("x.npy") + "' --output '" + path("y.npy") + "' --positions '" + path("p.npy") + "'" + v.flags);
    ASSERT_EQ(r.code, 0) << v.flags << "\n" << r.err;
    posenc::rope_config cfg;
    cfg.head_dim = 16;
    cfg.scaling = v.scaling;
    std::vector<float> want = as<float>(x);
    posenc::apply_rope(posenc::make_rope_plan(cfg, 9001), posenc::strided_view<float, 4>(want.data(), {1, 3, 2, 16}),
                       posenc::positions::per_token(ids.data(), 1, 3));
    expect_near_all(load("y.npy"), std::vector<double>(want.begin(), want.end()), 0.0, v.flags);
  }
}

// `posenc plan` prints the frequencies the golden generator computed independently (mpmath): inv_freq,
// 2*pi/inv_freq, the magnitude and the logit scale, for every scaling the flags can express, in .npy and CSV.
TEST(CliPlan, GoldenScalingPlans) {
  const auto cases = load_golden("rope_scaling.txt");
  int checked = 0;
  for (const golden_case& c : cases) {
    const std::string s = c.str("scaling");
    std::string flags = " --head-dim " + c.str("head_dim") + " --length " + c.str("seq_len");
    if (s == "dynamic_ntk" && c.str("policy") == "hf") {
      flags += " --style half-split --rotary-dim " + c.str("rotary_dim") + " --base " + c.str("base") +
               " --scaling dynamic-ntk --factor " + c.str("factor") + " --original-max-positions " +
               c.str("original_max_positions");
    } else if (s == "longrope") {
      save("sf.npy", c.array("short_factor").shape, c.array("short_factor").values);
      save("lf.npy", c.array("long_factor").shape, c.array("long_factor").values);
      flags += " --rotary-dim " + c.str("rotary_dim") + " --base " + c.str("base") + " --scaling longrope --factor " +
               c.str("factor") + " --original-max-positions " + c.str("original_max_positions") + " --short-factors '" +
               path("sf.npy") + "' --long-factors '" + path("lf.npy") + "'";
    } else if (s == "none" || s == "linear" || s == "ntk" || s == "llama3" ||
               (s == "yarn" && c.num("mscale") == 0 && c.num("mscale_all_dim") == 0 && c.integer("truncate") == 1)) {
      flags += rope_flags(c);
    } else {
      continue;  // fixed-max dynamic NTK, deepseek_yarn, mscale, truncate=false, rope_freqs: no CLI flags
    }
    SCOPED_TRACE(c.name + ":" + flags);
    ++checked;
    const auto& w = c.array("inv_freq").values;
    const double two_pi = 6.283185307179586476925286766559;
    std::remove(path("plan.npy").c_str());
    cli_result r = run("plan --output '" + path("plan.npy") + "'" + flags);
    ASSERT_EQ(r.code, 0) << r.err;
    std::vector<index_t> shape;
    const std::vector<double> got = load("plan.npy", &shape);
    ASSERT_EQ(shape, (std::vector<index_t>{static_cast<index_t>(w.size()), 4}));
    for (std::size_t i = 0; i < w.size(); ++i) {
      // The library forms inv_freq in double from the same formulas: a few ulps from the exact value.
      EXPECT_NEAR(got[4 * i], w[i], 1e-14 * w[i]) << "inv_freq " << i;
      EXPECT_NEAR(got[4 * i + 1], two_pi / w[i], 1e-14 * (two_pi / w[i])) << "wavelength " << i;
      EXPECT_NEAR(got[4 * i + 2], c.num("magnitude"), 1e-15) << "magnitude";
      EXPECT_NEAR(got[4 * i + 3], c.num("logit_scale"), 1e-15) << "logit_scale";
    }
    // The CSV holds the same numbers, 17 significant digits, after a header naming the columns.
    r = run("plan --output '" + path("plan.csv") + "'" + flags);
    ASSERT_EQ(r.code, 0) << r.err;
    std::ifstream in(path("plan.csv"));
    std::string line;
    ASSERT_TRUE(std::getline(in, line));
    EXPECT_EQ(line, "pair,inv_freq,wavelength,magnitude,logit_scale");
    std::size_t rows = 0;
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string f[5];
      for (auto& x : f) std::getline(fields, x, ',');
      ASSERT_LT(rows, w.size());
      EXPECT_EQ(std::stoul(f[0]), rows);
      for (int k = 0; k < 4; ++k) EXPECT_EQ(std::stod(f[k + 1]), got[4 * rows + static_cast<std::size_t>(k)]) << line;
      ++rows;
    }
    EXPECT_EQ(rows, w.size());
  }
  // none, linear, ntk, dynamic NTK short/long, yarn default/attention factor, llama3 x2, longrope x2, partial.
  EXPECT_EQ(checked, 12);
}

// Layouts other than NLHD and dtypes other than float32, on the golden half_split_per_token case.
TEST(CliRope, LayoutsAndDtypes) {
  const auto cases = load_golden("rope_basic.txt");
  const golden_case& c = find_case(cases, "half_split_per_token");
  const auto& x = c.array("x");
  const auto& y = c.array("y").values;
  const index_t n = x.shape[0], l = x.shape[1], h = x.shape[2], d = x.shape[3];
  const auto& p = c.array("positions");
  save("p.npy", p.shape, p.ivalues);
  const std::string common = " --positions '" + path("p.npy") + "'" + rope_flags(c);
  // NHLD: transpose in, transpose the expected output.
  std::vector<double> xt(x.values.size()), yt(y.size());
  for (index_t a = 0; a < n; ++a)
    for (index_t b = 0; b < l; ++b)
      for (index_t e = 0; e < h; ++e)
        for (index_t f = 0; f < d; ++f) {
          const auto src = static_cast<std::size_t>(((a * l + b) * h + e) * d + f);
          const auto dst = static_cast<std::size_t>(((a * h + e) * l + b) * d + f);
          xt[dst] = x.values[src];
          yt[dst] = y[src];
        }
  save("x.npy", {n, h, l, d}, as<float>(xt));
  cli_result r = run("rope --layout NHLD --input '" + path("x.npy") + "' --output '" + path("y.npy") + "'" + common);
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<index_t> shape;
  expect_near_all(load("y.npy", &shape), yt, 2e-6, "NHLD");
  EXPECT_EQ(shape, (std::vector<index_t>{n, h, l, d}));
  // float64 and float16 keep their dtype.
  save("x.npy", x.shape, x.values);
  r = run("rope --input '" + path("x.npy") + "' --output '" + path("y.npy") + "'" + common);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(posenc::read_npy(path("y.npy")).dtype, "<f8");
  expect_near_all(load("y.npy"), y, 1e-12, "float64");
  save("x.npy", x.shape, as<Eigen::half>(x.values));
  r = run("rope --input '" + path("x.npy") + "' --output '" + path("y.npy") + "'" + common);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(posenc::read_npy(path("y.npy")).dtype, "<f2");
  expect_near_all(load("y.npy"), y, 1e-3, "float16");
}

TEST(CliRope, LhdAndLdLayouts) {
  const auto cases = load_golden("rope_basic.txt");
  const golden_case& c = find_case(cases, "interleaved_tail");  // N = 1, L = 1, H = 1, D = 6
  const auto& x = c.array("x");
  for (const char* layout : {"LHD", "LD"}) {
    const std::vector<index_t> shape = std::string(layout) == "LHD" ? std::vector<index_t>{1, 1, 6} : std::vector<index_t>{1, 6};
    save("x.npy", shape, as<float>(x.values));
    const cli_result r = run(std::string("rope --layout ") + layout + " --input '" + path("x.npy") + "' --output '" +
                             path("y.npy") + "' --offset " + c.str("offset") + rope_flags(c));
    ASSERT_EQ(r.code, 0) << r.err;
    expect_near_all(load("y.npy"), c.array("y").values, 2e-6, layout);
  }
}

TEST(CliRope, MultimodalSections) {
  const auto cases = load_golden("mrope.txt");
  for (const char* name : {"qwen2vl_chunked", "qwen3vl_interleaved", "per_token_chunked"}) {
    const golden_case& c = find_case(cases, name);
    const auto& x = c.array("x");
    save("x.npy", x.shape, as<float>(x.values));
    const auto& p = c.array("positions");
    save("p.npy", p.shape, p.ivalues);
    const cli_result r = run("rope --input '" + path("x.npy") + "' --output '" + path("y.npy") + "' --positions '" +
                             path("p.npy") + "' --mrope-sections " + c.str("sections") + " --mrope-layout " + c.str("mrope_layout"));
    ASSERT_EQ(r.code, 0) << name << "\n" << r.err;
    expect_near_all(load("y.npy"), c.array("y").values, 2e-6, name);
  }
}

TEST(CliXpos, Golden) {
  for (const auto& c : load_golden("xpos.txt")) {
    const auto& x = c.array("x");
    save("x.npy", x.shape, x.values);  // float64: the far cases reach 1e+-32
    std::ostringstream a;
    a << "xpos --input '" << path("x.npy") << "' --output '" << path("y.npy") << "' --offset " << c.str("offset")
      << " --scale-base " << c.str("scale_base") << " --gamma " << c.str("gamma") << " --base " << c.str("base")
      << " --style " << (c.str("style") == "interleaved" ? "interleaved" : "half-split");
    if (c.integer("center_default") == 0) a << " --center " << c.str("center");
    if (c.integer("downscale") != 0) a << " --downscale";
    const cli_result r = run(a.str());
    ASSERT_EQ(r.code, 0) << a.str() << "\n" << r.err;
    // float64 end to end: the angle p*w in double is exact to ~p*2^-52 (4e-11 at p = 2*10^5).
    expect_near_all(load("y.npy"), c.array("y").values, 1e-10, "xpos " + c.name);
  }
}

TEST(CliAlibi, GoldenBiasAndSlopes) {
  int checked = 0;
  for (const auto& c : load_golden("alibi.txt")) {
    std::ostringstream a;
    if (c.has("arithmetic")) continue;  // the tool writes the exact bias (CLI_SPEC.md); fp32: library only
    if (c.has("bias")) {
      if (c.integer("head_begin") != 0 || c.integer("head_end") != c.integer("num_heads")) continue;  // shards: library only
      a << "alibi --heads " << c.str("num_heads") << " --query-len " << c.str("query_len") << " --key-len " << c.str("key_len")
        << " --query-offset " << c.str("query_offset") << " --max-bias " << c.str("max_bias")
        << (c.str("form") == "symmetric" ? " --symmetric" : "");
    } else {
      a << "alibi-slopes --heads " << c.str("num_heads") << " --max-bias " << c.str("max_bias");
    }
    a << " --output '" << path("b.npy") << "'";
    const cli_result r = run(a.str());
    ASSERT_EQ(r.code, 0) << a.str() << "\n" << r.err;
    EXPECT_EQ(posenc::read_npy(path("b.npy")).dtype, "<f4");
    // float32 output: relative 2^-24 rounding of each value.
    expect_near_all(load("b.npy"), c.array(c.has("bias") ? "bias" : "slopes").values, 1e-7, "alibi " + c.name);
    ++checked;
  }
  EXPECT_GT(checked, 10);
}

TEST(CliT5, GoldenBuckets) {
  int checked = 0;
  for (const auto& c : load_golden("t5.txt")) {
    if (!c.has("buckets")) continue;
    std::ostringstream a;
    a << "t5-buckets --query-len " << c.str("query_len") << " --key-len " << c.str("key_len") << " --query-offset "
      << c.str("query_offset") << " --num-buckets " << c.str("num_buckets") << " --max-distance " << c.str("max_distance")
      << (c.integer("bidirectional") ? "" : " --causal") << " --output '" << path("b.npy") << "'";
    const cli_result r = run(a.str());
    ASSERT_EQ(r.code, 0) << a.str() << "\n" << r.err;
    EXPECT_EQ(posenc::read_npy(path("b.npy")).dtype, "<i8");
    expect_near_all(load("b.npy"), c.array("buckets").values, 0.0, "t5 " + c.name);
    ++checked;
  }
  EXPECT_GT(checked, 4);
}

TEST(CliSinusoidal, GoldenTables) {
  int checked = 0;
  for (const auto& c : load_golden("sinusoidal.txt")) {
    if (!c.has("table") || c.has("padding_idx")) continue;
    std::ostringstream a;
    a << "sinusoidal --length " << c.str("length") << " --dim " << c.str("dim") << " --base " << c.str("base")
      << " --offset " << c.str("offset") << " --layout " << c.str("layout") << " --output '" << path("t.npy") << "'";
    const cli_result r = run(a.str());
    ASSERT_EQ(r.code, 0) << a.str() << "\n" << r.err;
    expect_near_all(load("t.npy"), c.array("table").values, 2e-6, "sinusoidal " + c.name);
    ++checked;
  }
  EXPECT_GT(checked, 8);
}

// ------------------------------------------------------------------------- --gguf and --hf-config files

std::string model_file(const char* dir, const char* name) {
  return std::string(POSENC_GOLDEN_DIR) + "/../data/" + dir + "/" + name;  // tests/data/{gguf,hf}
}

/// Runs `rope` on a fixed [1, 4, 2, D] input at positions {0, 7, 19, 41} with `flags`, returns the output.
std::vector<double> rope_with(index_t d, const std::string& flags, cli_result* result = nullptr) {
  std::vector<double> x(static_cast<std::size_t>(8 * d));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::ldexp(static_cast<double>(static_cast<int>(i % 17) - 8), -3);
  save("x.npy", {1, 4, 2, d}, as<float>(x));
  save("p.npy", {4}, std::vector<std::int64_t>{0, 7, 19, 41});
  std::remove(path("y.npy").c_str());
  const cli_result r = run("rope --input '" + path("x.npy") + "' --output '" + path("y.npy") + "' --positions '" +
                           path("p.npy") + "'" + flags);
  if (result != nullptr) *result = r;
  if (r.code != 0) {
    if (result == nullptr) ADD_FAILURE() << flags << "\n" << r.err;
    return {};
  }
  return load("y.npy");
}

/// The same input rotated by the library with `cfg` (the reference for the CLI's file flags).
std::vector<double> rope_reference(const posenc::rope_config& cfg) {
  const index_t d = cfg.head_dim;
  std::vector<float> x(static_cast<std::size_t>(8 * d));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::ldexp(static_cast<float>(static_cast<int>(i % 17) - 8), -3);
  const std::vector<std::int64_t> ids{0, 7, 19, 41};
  posenc::apply_rope(posenc::make_rope_plan(cfg, 42), posenc::strided_view<float, 4>(x.data(), {1, 4, 2, d}),
                     posenc::positions::per_token(ids.data(), 1, 4));
  return std::vector<double>(x.begin(), x.end());
}

TEST(CliRopeFiles, GgufGivesBaseStyleAndScaling) {
  // Qwen2 (half-split, YaRN factor 4 over 32768, base 1e6): the file equals the same explicit flags.
  const std::string qwen = " --gguf '" + model_file("gguf", "qwen2_yarn.gguf") + "'";
  const std::vector<double> from_file = rope_with(128, qwen);
  expect_near_all(from_file, rope_with(128, " --style half-split --base 1000000 --scaling yarn --factor 4"
                                            " --original-max-positions 32768"), 0.0, "qwen2 gguf vs flags");
  posenc::rope_config q = posenc::read_gguf_rope(model_file("gguf", "qwen2_yarn.gguf")).config;
  expect_near_all(from_file, rope_reference(q), 0.0, "qwen2 gguf vs library");

  // Llama 3 (interleaved, rope_freqs factors): the library with the file's config, and the explicit llama3
  // flags up to the float32 rounding of the stored factors (angles <= 41 rad here).
  const std::string llama = " --gguf '" + model_file("gguf", "llama3.gguf") + "'";
  const std::vector<double> l = rope_with(128, llama);
  expect_near_all(l, rope_reference(posenc::read_gguf_rope(model_file("gguf", "llama3.gguf")).config), 0.0, "llama3 gguf");
  expect_near_all(l, rope_with(128, " --style interleaved --base 500000 --scaling llama3 --factor 8"
                                    " --original-max-positions 8192"), 2e-5, "llama3 gguf vs flags");
}

TEST(CliRopeFiles, ExplicitFlagsOverrideTheGgufFile) {
  const std::string qwen = " --gguf '" + model_file("gguf", "qwen2_yarn.gguf") + "'";
  // --scaling replaces the scaling; --base replaces the base; the file's style stays.
  expect_near_all(rope_with(128, qwen + " --scaling none --base 10000"), rope_with(128, " --style half-split"), 0.0,
                  "scaling and base overridden");
  // One knob changes that field of the file's scaling.
  expect_near_all(rope_with(128, qwen + " --factor 8"),
                  rope_with(128, " --base 1000000 --scaling yarn --factor 8 --original-max-positions 32768"), 0.0,
                  "factor overridden");
  // --style overrides the architecture's pair style; --scaling none also drops the rope_freqs factors.
  posenc::rope_config c = posenc::read_gguf_rope(model_file("gguf", "llama3.gguf")).config;
  c.style = posenc::rope_style::half_split;
  const std::string llama = " --gguf '" + model_file("gguf", "llama3.gguf") + "'";
  expect_near_all(rope_with(128, llama + " --style half-split"), rope_reference(c), 0.0, "style overridden");
  expect_near_all(rope_with(128, llama + " --scaling none"), rope_with(128, " --style interleaved --base 500000"), 0.0,
                  "rope_freqs dropped");
  // A partial-rotary model file on its own head dim, and a rotary dim override on another.
  const std::string neox = " --gguf '" + model_file("gguf", "gptneox.gguf") + "'";
  expect_near_all(rope_with(96, neox), rope_with(96, " --rotary-dim 24"), 0.0, "gpt-neox rotary 24");
  expect_near_all(rope_with(64, neox + " --rotary-dim 32"), rope_with(64, " --rotary-dim 32"), 0.0, "rotary overridden");
}

TEST(CliRopeFiles, HfConfigGivesBaseStyleAndScaling) {
  const std::string llama = " --hf-config '" + model_file("hf", "llama3.1.json") + "'";
  cli_result r;
  const std::vector<double> y = rope_with(128, llama, &r);
  if (r.err.find("built without") != std::string::npos) GTEST_SKIP() << r.err;
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string flags = " --style half-split --base 500000 --scaling llama3 --factor 8 --original-max-positions 8192";
  expect_near_all(y, rope_with(128, flags), 0.0, "llama3.1 config vs flags");
  // Overrides: style and one scaling knob.
  expect_near_all(rope_with(128, llama + " --style interleaved --factor 4"),
                  rope_with(128, " --style interleaved --base 500000 --scaling llama3 --factor 4 --original-max-positions 8192"),
                  0.0, "llama3.1 config overridden");
  // GPT-NeoX: rotary_pct 0.25 of head 96, rotary_emb_base.
  expect_near_all(rope_with(96, " --hf-config '" + model_file("hf", "gptneox.json") + "'"), rope_with(96, " --rotary-dim 24"),
                  0.0, "gpt-neox config");
}

// ------------------------------------------------------------------------------------------- bad input

void expect_rejected(const std::string& args, const std::string& needle) {
  std::remove(path("out.npy").c_str());
  const cli_result r = run(args);
  EXPECT_GE(r.code, 1) << args;
  EXPECT_LE(r.code, 127) << args;
  ASSERT_FALSE(r.err.empty()) << args;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << "message: " << r.err << " lacks: " << needle;
  EXPECT_FALSE(exists(path("out.npy"))) << args;
}

class CliBadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<float> x(2 * 3 * 2 * 8, 0.5f);
    save("good.npy", {2, 3, 2, 8}, x);
    std::ofstream(path("garbage.npy"), std::ios::binary) << "not a numpy file at all";
    std::vector<std::int64_t> neg{0, 1, -1};
    save("neg.npy", {3}, neg);
  }
  std::string io(const std::string& in) { return " --input '" + path(in) + "' --output '" + path("out.npy") + "'"; }
};

TEST_F(CliBadInput, MissingFile) { expect_rejected("rope" + io("nope.npy"), "nope.npy"); }
TEST_F(CliBadInput, MalformedFile) { expect_rejected("rope" + io("garbage.npy"), "garbage.npy"); }
TEST_F(CliBadInput, BadShape) { expect_rejected("rope --layout LHD" + io("good.npy"), "rank"); }
TEST_F(CliBadInput, OddRotaryDim) { expect_rejected("rope --rotary-dim 7" + io("good.npy"), "rotary_dim=7"); }
TEST_F(CliBadInput, RotaryDimPastHead) { expect_rejected("rope --rotary-dim 10" + io("good.npy"), "rotary_dim=10"); }
TEST_F(CliBadInput, UnknownFlag) { expect_rejected("rope --bogus 1" + io("good.npy"), "--bogus"); }
TEST_F(CliBadInput, UnknownValue) { expect_rejected("rope --style diagonal" + io("good.npy"), "diagonal"); }
TEST_F(CliBadInput, UnknownSubcommand) { expect_rejected("rotate" + io("good.npy"), "rotate"); }
TEST_F(CliBadInput, NegativePosition) {
  expect_rejected("rope --positions '" + path("neg.npy") + "'" + io("good.npy"), "-1");
}
TEST_F(CliBadInput, NegativeOffset) { expect_rejected("rope --offset -3" + io("good.npy"), "-3"); }
TEST_F(CliBadInput, PositionsShapeMismatch) {
  save("p4.npy", {4}, std::vector<std::int64_t>{0, 1, 2, 3});
  expect_rejected("rope --positions '" + path("p4.npy") + "'" + io("good.npy"), "shape");
}
TEST_F(CliBadInput, LongRopeWithoutFactors) {
  expect_rejected("rope --scaling longrope --original-max-positions 16" + io("good.npy"), "--short-factors");
}
// Issue 21: a plan that depends on the length is not built for an unstated one (it used to give the unscaled base).
TEST_F(CliBadInput, LengthDependentPlanWithoutLength) {
  expect_rejected("plan --head-dim 64 --scaling dynamic-ntk --factor 4 --original-max-positions 2048 --output '" +
                      path("p.csv") + "'",
                  "--length N");
  EXPECT_FALSE(exists(path("p.csv")));
}
// Issue 21: one spelling table (posenc/enum_names.hpp): the CLI takes '-' or '_' in any case, with the same result.
TEST_F(CliBadInput, BothSpellingsOfAValue) {
  const auto text = [](const std::string& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  ASSERT_EQ(run("plan --head-dim 8 --style half-split --scaling linear --factor 2 --output '" + path("a.csv") + "'").code, 0);
  ASSERT_EQ(run("plan --head-dim 8 --style HALF_SPLIT --scaling Linear --factor 2 --output '" + path("b.csv") + "'").code, 0);
  EXPECT_FALSE(text(path("a.csv")).empty());
  EXPECT_EQ(text(path("a.csv")), text(path("b.csv")));
  expect_rejected("plan --head-dim 8 --style neox --output '" + path("c.csv") + "'", "is not one of: interleaved, half_split");
}
TEST_F(CliBadInput, XposOddDim) {
  save("odd.npy", {1, 3, 7}, std::vector<float>(21, 0.25f));
  expect_rejected("xpos" + io("odd.npy"), "head_dim=7");
}
TEST_F(CliBadInput, MissingRequiredFlag) { expect_rejected("rope --input '" + path("good.npy") + "'", "--output"); }
TEST_F(CliBadInput, SinusoidalOddDim) {
  expect_rejected("sinusoidal --length 4 --dim 5 --output '" + path("out.npy") + "'", "dim=5");
}
TEST_F(CliBadInput, AlibiZeroHeads) {
  expect_rejected("alibi --heads 0 --query-len 1 --key-len 2 --output '" + path("out.npy") + "'", "--heads");
}
TEST_F(CliBadInput, T5NegativeOffset) {
  expect_rejected("t5-buckets --query-len 1 --key-len 2 --query-offset -4 --output '" + path("out.npy") + "'", "-4");
}

// A model file gives the plan (and its head_dim when --head-dim is left out); explicit flags override it.
TEST(CliPlan, ModelFilesAndOverrides) {
  const posenc::gguf_rope_info info = posenc::read_gguf_rope(model_file("gguf", "llama3.gguf"));
  const posenc::rope_plan want = posenc::make_rope_plan(info.config, 16384);
  cli_result r = run("plan --gguf '" + model_file("gguf", "llama3.gguf") + "' --length 16384 --output '" + path("g.npy") + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<index_t> shape;
  std::vector<double> got = load("g.npy", &shape);
  ASSERT_EQ(shape, (std::vector<index_t>{want.pairs(), 4}));
  for (index_t i = 0; i < want.pairs(); ++i) EXPECT_EQ(got[static_cast<std::size_t>(4 * i)], want.inv_freq()[static_cast<std::size_t>(i)]);
  r = run("plan --gguf '" + model_file("gguf", "llama3.gguf") + "' --scaling none --base 10000 --output '" + path("g.npy") + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  got = load("g.npy", &shape);
  EXPECT_EQ(got[4], std::pow(10000.0, -2.0 / static_cast<double>(2 * shape[0])));
}

// --layer: the layer's own RoPE from the model's layer structure (tests/golden/models.txt, gen_models.py): Gemma 3's
// sliding layer 0 rotates with the local base and no scaling, its global layer 5 with rope_theta and linear 8.
TEST(CliPlan, LayerOfAModel) {
  const std::string gemma = " --hf-config '" + model_file("hf", "models/gemma3_4b.json") + "'";
  const golden_case* want = nullptr;
  const auto cases = load_golden("models.txt");
  for (const auto& c : cases)
    if (c.name == "gemma3_4b") want = &c;
  ASSERT_NE(want, nullptr);
  const auto& inv = want->array("plan_inv_freq");
  for (const index_t layer : {0, 5}) {
    cli_result r = run("plan" + gemma + " --layer " + std::to_string(layer) + " --output '" + path("l.npy") + "'");
    ASSERT_EQ(r.code, 0) << r.err;
    std::vector<index_t> shape;
    const std::vector<double> got = load("l.npy", &shape);
    ASSERT_EQ(shape, (std::vector<index_t>{inv.shape[1], 4}));
    const auto k = static_cast<std::size_t>(want->array("plan").ivalues[static_cast<std::size_t>(layer)]);
    for (std::size_t i = 0; i < static_cast<std::size_t>(shape[0]); ++i)
      EXPECT_NEAR(got[4 * i], inv.values[k * static_cast<std::size_t>(inv.shape[1]) + i], 4e-15 * got[4 * i])
          << "layer " << layer << " pair " << i;
  }
  expect_rejected("plan --hf-config '" + model_file("hf", "models/llama4_scout.json") + "' --layer 3 --output '" +
                      path("l.npy") + "'",
                  "layer 3 of llama4_text has no RoPE");
  expect_rejected("plan" + gemma + " --layer 34 --output '" + path("l.npy") + "'", "layer 34 is not in [0, 34)");
  expect_rejected("plan --head-dim 64 --layer 1 --output '" + path("l.npy") + "'", "--layer needs --hf-config or --gguf");
}

// The same layer of the GGUF model (posenc::read_gguf_model_plan): Gemma 3's local layer 0 and global layer 5.
TEST(CliPlan, LayerOfAGgufModel) {
  const std::string gemma = " --gguf '" + model_file("gguf", "model_gemma3_4b.gguf") + "'";
  const auto cases = load_golden("models.txt");
  const golden_case& want = find_case(cases, "gguf_gemma3_4b");
  const auto& inv = want.array("plan_inv_freq");
  for (const index_t layer : {0, 5}) {
    const cli_result r = run("plan" + gemma + " --layer " + std::to_string(layer) + " --output '" + path("l.npy") + "'");
    ASSERT_EQ(r.code, 0) << r.err;
    const std::vector<double> got = load("l.npy");
    const auto k = static_cast<std::size_t>(want.array("plan").ivalues[static_cast<std::size_t>(layer)]);
    for (std::size_t i = 0; i < static_cast<std::size_t>(inv.shape[1]); ++i)
      EXPECT_NEAR(got[4 * i], inv.values[k * static_cast<std::size_t>(inv.shape[1]) + i], 4e-15 * got[4 * i])
          << "layer " << layer << " pair " << i;
  }
  expect_rejected("plan --gguf '" + model_file("gguf", "model_llama4_layers.gguf") + "' --layer 3 --output '" +
                      path("l.npy") + "'",
                  "layer 3 of llama4 has no RoPE");
}

// --vision: a vision tower's 2D RoPE from its config (posenc::vision_plan_from_hf_file), as a plan and applied
// to one head at sample (row, column) positions, against tests/golden/vision.txt.
TEST(CliRope, VisionTower) {
  const auto cases = load_golden("vision.txt");
  for (const char* name : {"qwen2_5_vl_7b", "pixtral_12b"}) {
    const golden_case& c = find_case(cases, name);
    const std::string config = " --hf-config '" + model_file("hf", ("models/" + c.str("config")).c_str()) + "'";
    cli_result r = run("plan" + config + " --vision --output '" + path("v.npy") + "'");
    ASSERT_EQ(r.code, 0) << name << "\n" << r.err;
    const std::vector<double> plan = load("v.npy");
    const auto& w = c.array("inv_freq").values;
    ASSERT_EQ(plan.size(), 4 * w.size());
    for (std::size_t j = 0; j < w.size(); ++j) EXPECT_NEAR(plan[4 * j], w[j], 4e-15 * w[j]) << name << " pair " << j;
    const auto& x = c.array("x").values;
    const auto& rp = c.array("rot_pos").ivalues;
    const index_t d = static_cast<index_t>(x.size()), k = static_cast<index_t>(rp.size() / 2);
    std::vector<double> xs;
    for (index_t t = 0; t < k; ++t) xs.insert(xs.end(), x.begin(), x.end());
    save("x.npy", {1, k, 1, d}, xs);
    std::vector<std::int64_t> thw(static_cast<std::size_t>(3 * k), 0);
    for (index_t t = 0; t < k; ++t) {
      thw[static_cast<std::size_t>(k + t)] = rp[static_cast<std::size_t>(2 * t)];
      thw[static_cast<std::size_t>(2 * k + t)] = rp[static_cast<std::size_t>(2 * t + 1)];
    }
    save("p.npy", {3, k}, thw);
    r = run("rope" + config + " --vision --input '" + path("x.npy") + "' --output '" + path("y.npy") + "' --positions '" +
            path("p.npy") + "'");
    ASSERT_EQ(r.code, 0) << name << "\n" << r.err;
    expect_near_all(load("y.npy"), c.array("rotated").values, 1e-12, name);
  }
  const std::string pixtral = " --hf-config '" + model_file("hf", "models/pixtral_12b.json") + "'";
  expect_rejected("rope" + pixtral + " --vision --input '" + path("x.npy") + "' --output '" + path("y.npy") + "'",
                  "--vision needs --positions of shape [3, L]");
  expect_rejected("plan" + pixtral + " --vision --base 5 --output '" + path("v.npy") + "'",
                  "--vision takes its RoPE from the model's vision_config");
  expect_rejected("plan --hf-config '" + model_file("hf", "models/gemma3_4b.json") + "' --vision --output '" +
                      path("v.npy") + "'",
                  "has no vision tower posenc reads");
}

TEST(Cli, HelpAndVersion) {
  cli_result r = run("--version");
  EXPECT_EQ(r.code, 0);
  for (const char* sub : {"", "rope ", "plan ", "xpos ", "alibi ", "alibi-slopes ", "t5-buckets ", "sinusoidal "}) {
    r = run(std::string(sub) + "--help");
    EXPECT_EQ(r.code, 0) << sub;
  }
}

TEST(CliRopeFiles, BadModelFiles) {
  save("good.npy", {1, 2, 1, 64}, std::vector<float>(128, 0.5f));
  const std::string io = " --input '" + path("good.npy") + "' --output '" + path("out.npy") + "'";
  expect_rejected("rope --gguf '" + model_file("gguf", "bad_magic.gguf") + "'" + io, "bad magic");
  expect_rejected("rope --gguf '" + model_file("gguf", "no_such.gguf") + "'" + io, "cannot open");
  expect_rejected("rope --gguf '" + model_file("gguf", "llama3.gguf") + "'" + io, "head_dim=128 does not match");
  expect_rejected("rope --gguf '" + model_file("gguf", "llama3.gguf") + "' --hf-config '" + model_file("hf", "qwen2.json") +
                      "'" + io,
                  "excludes");
}

}  // namespace
