// The `posenc` command-line tool: positional encodings on NumPy .npy files, to the contract of
// shared/CLI_SPEC.md. Every formula comes from the library; this file only parses flags, reads and writes
// .npy files and maps layouts onto library views.
//
// Exit codes: 0 on success; 1 for bad input (a one-line message on stderr, no output file written); the
// argument parser's own codes (100..114) for unknown flags or malformed values.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <posenc/io/gguf.hpp>
#include <posenc/io/npy.hpp>
#include <posenc/io/npy_tensors.hpp>
#include <posenc/posenc.hpp>
#if POSENC_CLI_HF_CONFIG
#include <posenc/io/hf_config.hpp>
#endif

namespace {

using posenc::index_t;

[[noreturn]] void fail(const std::string& msg) { throw posenc::argument_error("posenc: " + msg); }

// ------------------------------------------------------------------------------------------ .npy helpers

/// The same array seen as rank 1 (the element order is unchanged).
posenc::npy_array flat(posenc::npy_array a) {
  a.shape = {a.size()};
  return a;
}

/// Positions of an int32/int64 .npy file as int64.
std::vector<std::int64_t> read_positions(const std::string& path, std::vector<index_t>& shape) {
  const posenc::npy_array a = posenc::read_npy(path);
  shape = a.shape;
  std::vector<std::int64_t> out(static_cast<std::size_t>(a.size()));
  if (a.dtype != "<i8" && a.dtype != "<i4") fail(path + ": positions must be int32 or int64, got " + a.dtype);
  const auto t = posenc::npy_to_tensor<std::int64_t, 1>(flat(a));
  std::copy(t.data(), t.data() + t.size(), out.begin());
  for (std::size_t i = 0; i < out.size(); ++i)
    if (out[i] < 0) fail(path + ": position " + std::to_string(out[i]) + " at index " + std::to_string(i) + " is negative");
  return out;
}

std::vector<double> read_factors(const std::string& path) {
  const posenc::npy_array a = posenc::read_npy(path);
  if (a.shape.size() != 1) fail(path + ": factors must have shape [R/2]");
  const auto t = posenc::npy_to_tensor<double, 1>(a);
  return std::vector<double>(t.data(), t.data() + t.size());
}

/// Calls f(T{}) with the element type of a float .npy array.
template <class F>
void with_float_dtype(const posenc::npy_array& a, const std::string& path, F&& f) {
  if (a.dtype == "<f4") f(float{});
  else if (a.dtype == "<f8") f(double{});
  else if (a.dtype == "<f2") f(Eigen::half{});
  else fail(path + ": input must be float16, float32 or float64 (<f2, <f4, <f8), got " + a.dtype);
}

/// The (N, L, H, D) view of an input laid out as `layout` (NLHD, NHLD, LHD, LD, NLD).
template <class T>
posenc::strided_view<T, 4> view_as(T* data, const std::vector<index_t>& shape, const std::string& layout,
                                   const std::string& path) {
  const std::size_t rank = layout.size();
  if (shape.size() != rank)
    fail(path + ": layout " + layout + " needs a tensor of rank " + std::to_string(rank) + ", got rank " +
         std::to_string(shape.size()));
  if (layout == "NLHD") return posenc::as_nlhd(posenc::strided_view<T, 4>(data, {shape[0], shape[1], shape[2], shape[3]}));
  if (layout == "NHLD")
    return posenc::as_nlhd(posenc::strided_view<T, 4>(data, {shape[0], shape[1], shape[2], shape[3]}), posenc::layout::nhld);
  if (layout == "LHD") return posenc::as_nlhd(posenc::strided_view<T, 3>(data, {shape[0], shape[1], shape[2]}), posenc::layout::lhd);
  if (layout == "NLD") return posenc::as_nlhd(posenc::strided_view<T, 3>(data, {shape[0], shape[1], shape[2]}), posenc::layout::nld);
  return posenc::as_nlhd(posenc::strided_view<T, 2>(data, {shape[0], shape[1]}));
}

// ------------------------------------------------------------------------------------------------ rope

struct rope_args {
  std::string input, output, layout = "NLHD", style = "half-split", scaling = "none", positions, short_factors,
                          long_factors, mrope_sections, mrope_layout = "chunked", hf_config, gguf;
  index_t rotary_dim = 0, offset = 0, original_max = 0, layer = -1;
  double base = 10000.0, factor = 1.0, beta_fast = 32.0, beta_slow = 1.0, attention_factor = 0.0,
         low_freq_factor = 1.0, high_freq_factor = 4.0;
  bool inverse = false, vision = false;
  // Which flags were given explicitly: with --hf-config / --gguf they override the file's values.
  bool has_attention_factor = false, has_style = false, has_rotary_dim = false, has_base = false, has_scaling = false,
       has_factor = false, has_original_max = false, has_beta_fast = false, has_beta_slow = false,
       has_low_freq_factor = false, has_high_freq_factor = false;
};

std::array<index_t, 3> parse_sections(const std::string& s) {
  std::array<index_t, 3> out{};
  std::size_t at = 0;
  for (std::size_t k = 0; k < 3; ++k) {
    const std::size_t comma = s.find(',', at);
    const std::string tok = s.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (tok.empty() || tok.find_first_not_of("0123456789") != std::string::npos || (k < 2) == (comma == std::string::npos))
      fail("--mrope-sections must be three non-negative integers T,H,W, got '" + s + "'");
    out[k] = std::stoll(tok);
    at = comma + 1;
  }
  return out;
}

/// A flag's value as the enum posenc names it (posenc/enum_names.hpp: "half-split" and "half_split" alike); the
/// flag's validator (named<E>) has already accepted it.
template <class E>
E enum_of(const std::string& s) {
  E e{};
  if (!posenc::parse(s, e)) fail("'" + s + "' is not one of: " + posenc::enum_choices<E>().c_str());
  return e;
}

/// A CLI11 validator accepting exactly the names posenc::parse takes for E.
template <class E>
CLI::Validator named() {
  return CLI::Validator(
      [](std::string& v) {
        E e{};
        return posenc::parse(v, e) ? std::string() : "'" + v + "' is not one of: " + posenc::enum_choices<E>().c_str();
      },
      "");
}

posenc::rope_style style_of(const std::string& s) { return enum_of<posenc::rope_style>(s); }

/// The scaling the flags describe (--scaling and its knobs).
posenc::rope_scaling scaling_from_flags(const rope_args& a) {
  const index_t m = a.original_max;
  using t = posenc::rope_scaling_type;
  switch (enum_of<t>(a.scaling)) {
    case t::linear: return posenc::rope_scaling::linear(a.factor);
    case t::ntk: return posenc::rope_scaling::ntk(a.factor);
    case t::dynamic_ntk: return posenc::rope_scaling::dynamic_ntk(a.factor, m);
    case t::yarn: return posenc::rope_scaling::yarn(a.factor, m, a.beta_fast, a.beta_slow);
    case t::deepseek_yarn: fail("--scaling deepseek-yarn has no flags for mscale / mscale_all_dim: load the model with --hf-config");
    case t::llama3: return posenc::rope_scaling::llama3(a.factor, a.low_freq_factor, a.high_freq_factor, m);
    case t::longrope:
      if (a.short_factors.empty() || a.long_factors.empty()) fail("--scaling longrope needs --short-factors and --long-factors");
      return posenc::rope_scaling::longrope(read_factors(a.short_factors), read_factors(a.long_factors), m, a.factor);
    case t::none: break;
  }
  return posenc::rope_scaling{};
}

/// The RoPE configuration of a model file (--hf-config or --gguf): base, rotary dim, pair style, scaling.
/// With --layer I, layer I's configuration (posenc::model_plan_from_hf_file, posenc::read_gguf_model_plan:
/// Gemma 3's and ModernBERT's local bases, Llama 4's NoPE layers); a layer without RoPE is an error naming it.
posenc::rope_config layer_config(const std::string& file, const posenc::model_positional_plan& model, index_t layer) {
  const posenc::layer_positional& l = model.layer(layer);
  if (!l.rope)
    fail(file + ": layer " + std::to_string(layer) + " of " + model.model_type +
         " has no RoPE (a NoPE layer: q and k are not rotated)");
  return l.config;
}

void check_layer_flag(const rope_args& a) {
  if (a.layer >= 0 && a.hf_config.empty() && a.gguf.empty()) fail("--layer needs --hf-config or --gguf (the model)");
}

posenc::rope_config config_from_file(const rope_args& a) {
  if (a.vision) fail("--vision is the 2D RoPE of a vision tower: it takes no --gguf, --layer or frequency flags");
  if (!a.gguf.empty())
    return a.layer >= 0 ? layer_config(a.gguf, posenc::read_gguf_model_plan(a.gguf), a.layer)
                        : posenc::read_gguf_rope(a.gguf).config;
#if POSENC_CLI_HF_CONFIG
  if (a.layer >= 0) return layer_config(a.hf_config, posenc::model_plan_from_hf_file(a.hf_config), a.layer);
  return posenc::rope_config_from_hf_file(a.hf_config).config;
#else
  fail("--hf-config needs nlohmann/json: this posenc was built without it (install nlohmann-json3-dev and rebuild)");
#endif
}

/// --vision: the 2D RoPE of the --hf-config model's vision tower (posenc::vision_plan_from_hf_file); no flag
/// may change it.
posenc::mrope_plan vision_rope(const rope_args& a) {
#if POSENC_CLI_HF_CONFIG
  if (a.hf_config.empty()) fail("--vision needs --hf-config (the vision-language model's config.json)");
  if (a.has_style || a.has_rotary_dim || a.has_base || a.has_scaling || a.has_factor || a.has_attention_factor ||
      a.layer >= 0 || !a.mrope_sections.empty())
    fail("--vision takes its RoPE from the model's vision_config: no --style, --rotary-dim, --base, --scaling, "
         "--factor, --attention-factor, --layer or --mrope-sections");
  return posenc::vision_plan_from_hf_file(a.hf_config).make_rope();
#else
  (void)a;
  fail("--vision needs nlohmann/json: this posenc was built without it (install nlohmann-json3-dev and rebuild)");
#endif
}

/// The configuration for an input of head dim d: the flags alone, or a model file's with the flags given
/// explicitly overriding it (a --scaling replaces the file's scaling, rope_freqs factors included; a single
/// knob such as --factor changes that field of the file's scaling).
posenc::rope_config rope_config_for(const rope_args& a, const std::optional<posenc::rope_config>& from_file, index_t d) {
  posenc::rope_config cfg;
  if (!from_file) {
    cfg.head_dim = d;
    cfg.rotary_dim = a.rotary_dim == 0 ? d : a.rotary_dim;
    cfg.base = a.base;
    cfg.style = style_of(a.style);
    cfg.scaling = scaling_from_flags(a);
    if (a.has_attention_factor) cfg.scaling.attention_factor = a.attention_factor;
    return cfg;
  }
  const std::string& file = a.gguf.empty() ? a.hf_config : a.gguf;
  cfg = *from_file;
  if (cfg.head_dim != d && !a.has_rotary_dim)
    fail(file + ": the model's head_dim=" + std::to_string(cfg.head_dim) + " does not match the input's head dim D=" +
         std::to_string(d) + " (pass --rotary-dim to rotate R features of D with the file's frequencies)");
  cfg.head_dim = d;
  if (a.has_rotary_dim) cfg.rotary_dim = a.rotary_dim;
  if (a.has_base) cfg.base = a.base;
  if (a.has_style) cfg.style = style_of(a.style);
  posenc::rope_scaling& s = cfg.scaling;
  if (a.has_scaling) {
    s = scaling_from_flags(a);
    cfg.freq_factors.clear();
  } else {
    if (a.has_factor) s.factor = a.factor;
    if (a.has_original_max) s.original_max_positions = a.original_max;
    if (a.has_beta_fast) s.beta_fast = a.beta_fast;
    if (a.has_beta_slow) s.beta_slow = a.beta_slow;
    if (a.has_low_freq_factor) s.low_freq_factor = a.low_freq_factor;
    if (a.has_high_freq_factor) s.high_freq_factor = a.high_freq_factor;
  }
  if (a.has_attention_factor) s.attention_factor = a.attention_factor;
  return cfg;
}

void run_rope(const rope_args& a) {
  check_layer_flag(a);
  // The model file first: a bad file is reported before the input is read.
  std::optional<posenc::rope_config> from_file;
  std::optional<posenc::mrope_plan> vision;
  if (a.vision) vision = vision_rope(a);
  else if (!a.hf_config.empty() || !a.gguf.empty()) from_file = config_from_file(a);
  posenc::npy_array x = posenc::read_npy(a.input);
  with_float_dtype(x, a.input, [&](auto tag) {
    using T = decltype(tag);
    auto* data = reinterpret_cast<T*>(x.data.data());
    const posenc::strided_view<T, 4> v = view_as(data, x.shape, a.layout, a.input);
    const index_t n = v.extent(0), l = v.extent(1), d = v.extent(3);
    if (vision && vision->plan().head_dim() != d)
      fail(a.hf_config + ": the vision tower's head_dim=" + std::to_string(vision->plan().head_dim()) +
           " does not match the input's head dim D=" + std::to_string(d));
    const posenc::rope_config cfg = vision ? posenc::rope_config{} : rope_config_for(a, from_file, d);

    // Positions: explicit ids ([L] or [N, L]; MRoPE: [3, L] or [N, 3, L]) or offset .. offset + L - 1.
    std::vector<index_t> pshape;
    std::vector<std::int64_t> ids;
    if (!a.positions.empty()) ids = read_positions(a.positions, pshape);
    const bool mrope = !a.mrope_sections.empty() || vision;
    index_t max_pos = a.offset + l - 1;
    if (!ids.empty()) max_pos = *std::max_element(ids.begin(), ids.end());
    const posenc::rope_plan plan = vision ? vision->plan() : posenc::make_rope_plan(cfg, max_pos + 1);

    if (mrope) {
      const char* what = vision ? "--vision" : "--mrope-sections";
      if (!vision && cfg.style != posenc::rope_style::half_split) fail("--mrope-sections needs --style half-split");
      if (a.positions.empty()) fail(std::string(what) + " needs --positions of shape [3, L] or [N, 3, L]");
      const posenc::mrope_plan mp = vision ? *vision
                                           : posenc::mrope_plan(plan, parse_sections(a.mrope_sections),
                                                                enum_of<posenc::mrope_layout>(a.mrope_layout));
      posenc::mrope_positions pos = posenc::mrope_positions::shared(ids.data(), l);
      if (pshape.size() == 2 && pshape[0] == 3 && pshape[1] == l) {
      } else if (pshape.size() == 3 && pshape[0] == n && pshape[1] == 3 && pshape[2] == l) {
        pos = posenc::mrope_positions::per_token(ids.data(), n, l);
      } else {
        fail(a.positions + ": MRoPE positions must have shape [3, L] or [N, 3, L] with N=" + std::to_string(n) +
             ", L=" + std::to_string(l));
      }
      if (a.inverse) posenc::apply_mrope_backward(mp, v, pos);
      else posenc::apply_mrope(mp, v, pos);
    } else {
      posenc::positions pos = posenc::positions::offset(a.offset);
      std::vector<std::int64_t> tiled;
      if (!a.positions.empty()) {
        if (pshape.size() == 1 && pshape[0] == l) {
          for (index_t b = 0; b < n; ++b) tiled.insert(tiled.end(), ids.begin(), ids.end());
          pos = posenc::positions::per_token(tiled.data(), n, l);
        } else if (pshape.size() == 2 && pshape[0] == n && pshape[1] == l) {
          pos = posenc::positions::per_token(ids.data(), n, l);
        } else {
          fail(a.positions + ": positions must have shape [L] or [N, L] with N=" + std::to_string(n) + ", L=" + std::to_string(l));
        }
      }
      if (a.inverse) posenc::apply_rope_backward(plan, v, pos);
      else posenc::apply_rope(plan, v, pos);
    }
  });
  posenc::write_npy(a.output, x.dtype, x.shape, x.data.data());
}

// ------------------------------------------------------------------------------------------------ plan

struct plan_args {
  std::string output;
  index_t head_dim = 0, length = 0;
};

/// The plan's per-pair columns: inv_freq (rad per position), wavelength 2*pi/inv_freq, magnitude, logit scale,
/// as float64 [R/2, 4] (.npy) or CSV with a header (and a leading pair column).
/// The plan of run_plan: --vision's 2D RoPE, or the flags' / model file's.
posenc::rope_plan plan_for(const rope_args& a, const plan_args& p) {
  check_layer_flag(a);
  if (a.vision) {
    const posenc::mrope_plan mp = vision_rope(a);
    if (p.head_dim != 0 && p.head_dim != mp.plan().head_dim())
      fail("plan: --head-dim " + std::to_string(p.head_dim) + " is not the vision tower's head_dim=" +
           std::to_string(mp.plan().head_dim()));
    return mp.plan();
  }
  std::optional<posenc::rope_config> from_file;
  if (!a.hf_config.empty() || !a.gguf.empty()) from_file = config_from_file(a);
  index_t d = p.head_dim;
  if (d == 0) {
    if (!from_file) fail("plan: --head-dim is required unless --hf-config or --gguf gives the model's head_dim");
    d = from_file->head_dim;
  }
  const posenc::rope_config cfg = rope_config_for(a, from_file, d);
  // The sequence length the plan is for: dynamic NTK and LongRoPE choose by it (and need it stated); the others
  // ignore it.
  if (p.length == 0 && posenc::depends_on_length(cfg.scaling))
    fail(std::string("plan: --scaling ") + posenc::to_string(cfg.scaling.type) +
         " depends on the sequence length: give --length N (the largest position + 1 the plan serves)");
  return posenc::make_rope_plan(cfg, p.length);
}

void run_plan(const rope_args& a, const plan_args& p) {
  const posenc::rope_plan plan = plan_for(a, p);
  const std::vector<double>& w = plan.inv_freq();
  const double two_pi = 6.283185307179586476925286766559;
  const bool csv = p.output.size() >= 4 && p.output.compare(p.output.size() - 4, 4, ".csv") == 0;
  if (!csv) {
    std::vector<double> rows;
    rows.reserve(4 * w.size());
    for (const double f : w) rows.insert(rows.end(), {f, two_pi / f, plan.magnitude(), plan.logit_scale()});
    posenc::write_npy(p.output, "<f8", {plan.pairs(), 4}, rows.data());
    return;
  }
  std::string text = "pair,inv_freq,wavelength,magnitude,logit_scale\n";
  char line[160];
  for (std::size_t i = 0; i < w.size(); ++i) {
    std::snprintf(line, sizeof line, "%zu,%.17g,%.17g,%.17g,%.17g\n", i, w[i], two_pi / w[i], plan.magnitude(),
                  plan.logit_scale());
    text += line;
  }
  // The same all-or-nothing write as the .npy files: a temporary, then one rename.
  const std::string tmp = p.output + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) fail("cannot create '" + tmp + "'");
  const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !written) {
    std::remove(tmp.c_str());
    fail("cannot write '" + tmp + "'");
  }
  if (std::rename(tmp.c_str(), p.output.c_str()) != 0) {
    std::remove(tmp.c_str());
    fail("cannot rename '" + tmp + "' to '" + p.output + "'");
  }
}

// ------------------------------------------------------------------------------------------------ xpos

struct xpos_args {
  std::string input, output, layout = "NLD", style = "interleaved";
  index_t offset = 0, center = -1;
  double scale_base = 512.0, gamma = 0.4, base = 10000.0;
  bool downscale = false;
};

void run_xpos(const xpos_args& a) {
  posenc::npy_array x = posenc::read_npy(a.input);
  with_float_dtype(x, a.input, [&](auto tag) {
    using T = decltype(tag);
    const posenc::strided_view<T, 4> v = view_as(reinterpret_cast<T*>(x.data.data()), x.shape, a.layout, a.input);
    posenc::xpos_config cfg;
    cfg.head_dim = v.extent(3);
    cfg.scale_base = a.scale_base;
    cfg.gamma = a.gamma;
    cfg.base = a.base;
    cfg.style = style_of(a.style);
    const posenc::xpos_plan plan(cfg);
    const index_t center = a.center >= 0 ? a.center : posenc::xpos_default_center(v.extent(1), a.offset);
    posenc::apply_xpos(plan, v, posenc::positions::offset(a.offset), center,
                       a.downscale ? posenc::xpos_mode::downscale : posenc::xpos_mode::upscale);
  });
  posenc::write_npy(a.output, x.dtype, x.shape, x.data.data());
}

// ------------------------------------------------------------------------------ alibi, t5, sinusoidal

struct table_args {
  std::string output, layout = "interleaved";
  index_t heads = 0, query_len = 0, key_len = 0, query_offset = 0, num_buckets = 32, max_distance = 128, length = 0,
          dim = 0, offset = 0;
  double max_bias = 8.0, base = 10000.0;
  bool symmetric = false, causal = false;
};

void run_alibi(const table_args& a) {
  posenc::alibi_config cfg;
  cfg.num_heads = a.heads;
  cfg.max_bias = a.max_bias;
  cfg.form = a.symmetric ? posenc::alibi_form::symmetric : posenc::alibi_form::linear;
  std::vector<float> b(static_cast<std::size_t>(a.heads * a.query_len * a.key_len));
  posenc::alibi_bias(cfg, posenc::strided_view<float, 3>(b.data(), {a.heads, a.query_len, a.key_len}), posenc::positions::offset(a.query_offset));
  posenc::write_npy(a.output, "<f4", {a.heads, a.query_len, a.key_len}, b.data());
}

void run_alibi_slopes(const table_args& a) {
  posenc::alibi_config cfg;
  cfg.num_heads = a.heads;
  cfg.max_bias = a.max_bias;
  std::vector<float> s(static_cast<std::size_t>(a.heads));
  posenc::alibi_slopes(cfg, posenc::strided_view<float, 1>(s.data(), {a.heads}));
  posenc::write_npy(a.output, "<f4", {a.heads}, s.data());
}

void run_t5_buckets(const table_args& a) {
  const posenc::t5_bucket_config cfg{!a.causal, a.num_buckets, a.max_distance};
  std::vector<std::int64_t> b(static_cast<std::size_t>(a.query_len * a.key_len));
  posenc::t5_bucket_table(posenc::strided_view<std::int64_t, 2>(b.data(), {a.query_len, a.key_len}), cfg, a.query_offset);
  posenc::write_npy(a.output, "<i8", {a.query_len, a.key_len}, b.data());
}

void run_sinusoidal(const table_args& a) {
  posenc::sinusoidal_config cfg;
  cfg.dim = a.dim;
  cfg.base = a.base;
  cfg.layout = enum_of<posenc::sinusoidal_layout>(a.layout);
  std::vector<float> t(static_cast<std::size_t>(a.length * a.dim));
  posenc::sinusoidal_table(cfg, posenc::strided_view<float, 2>(t.data(), {a.length, a.dim}), a.offset);
  posenc::write_npy(a.output, "<f4", {a.length, a.dim}, t.data());
}

/// The options of an Option* per frequency flag, to tell afterwards which were given explicitly.
struct frequency_flags {
  CLI::Option *style, *rotary_dim, *base, *scaling, *factor, *original_max, *beta_fast, *beta_slow, *attention_factor,
      *low_freq, *high_freq, *hf_config;

  /// Marks in `a` the flags given on the command line (they override a model file's values).
  void record(rope_args& a) const {
    a.has_attention_factor = attention_factor->count() > 0;
    a.has_style = style->count() > 0;
    a.has_rotary_dim = rotary_dim->count() > 0;
    a.has_base = base->count() > 0;
    a.has_scaling = scaling->count() > 0;
    a.has_factor = factor->count() > 0;
    a.has_original_max = original_max->count() > 0;
    a.has_beta_fast = beta_fast->count() > 0;
    a.has_beta_slow = beta_slow->count() > 0;
    a.has_low_freq_factor = low_freq->count() > 0;
    a.has_high_freq_factor = high_freq->count() > 0;
  }
};

/// The flags that describe a frequency plan, shared by `rope` and `plan` (CLI_SPEC.md).
frequency_flags add_frequency_flags(CLI::App* app, rope_args& ra, const CLI::Validator& positive) {
  frequency_flags f{};
  f.style =
      app->add_option("--style", ra.style, "half-split|interleaved")->check(named<posenc::rope_style>());
  f.rotary_dim = app->add_option("--rotary-dim", ra.rotary_dim, "rotated features R (default D)")->check(positive);
  f.base = app->add_option("--base", ra.base, "rope theta (default 10000)")->check(positive);
  f.scaling = app->add_option("--scaling", ra.scaling, "none|linear|ntk|dynamic-ntk|yarn|llama3|longrope")
                  ->check(named<posenc::rope_scaling_type>());
  f.factor = app->add_option("--factor", ra.factor, "scaling factor")->check(positive);
  f.original_max =
      app->add_option("--original-max-positions", ra.original_max, "original context M")->check(positive);
  f.beta_fast = app->add_option("--beta-fast", ra.beta_fast, "yarn (default 32)")->check(positive);
  f.beta_slow = app->add_option("--beta-slow", ra.beta_slow, "yarn (default 1)")->check(positive);
  f.attention_factor =
      app->add_option("--attention-factor", ra.attention_factor, "yarn/longrope cos/sin multiplier")->check(positive);
  f.low_freq = app->add_option("--low-freq-factor", ra.low_freq_factor, "llama3 (default 1)")->check(positive);
  f.high_freq = app->add_option("--high-freq-factor", ra.high_freq_factor, "llama3 (default 4)")->check(positive);
  f.hf_config = app->add_option(
      "--hf-config", ra.hf_config,
      "base, rotary dim, pair style and scaling from a Hugging Face config.json; explicit flags override it");
  app->add_option("--gguf", ra.gguf,
                   "the same from a GGUF file's metadata (llama.cpp keys, rope_freqs.weight, the architecture's pair "
                   "style); explicit flags override it")
      ->excludes(f.hf_config);
  app->add_option("--layer", ra.layer,
                  "the RoPE of this layer of the --hf-config or --gguf model (local and global bases, NoPE layers)")
      ->check(CLI::NonNegativeNumber);
  app->add_flag("--vision", ra.vision,
                "the 2D RoPE of the --hf-config model's vision tower (Qwen2-VL, Qwen2.5-VL, Pixtral); rope takes "
                "--positions [3, L]: 0, patch row, patch column")
      ->needs(f.hf_config);
  app->add_option("--short-factors", ra.short_factors, "longrope short factors .npy [R/2]");
  app->add_option("--long-factors", ra.long_factors, "longrope long factors .npy [R/2]");
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"posenc: transformer positional encodings on NumPy .npy files (shared/CLI_SPEC.md)", "posenc"};
  app.set_version_flag("--version", std::string("posenc ") + POSENC_VERSION_STRING);
  app.require_subcommand(1);
  // One-line messages naming the value; CLI11's own range validators print the double range's bounds.
  const auto number_check = [](bool strict) {
    return CLI::Validator(
        [strict](std::string& s) -> std::string {
          char* end = nullptr;
          const double v = std::strtod(s.c_str(), &end);
          if (end == s.c_str() || *end != '\0' || !std::isfinite(v)) return "'" + s + "' is not a number";
          if (strict ? !(v > 0) : !(v >= 0)) return "value " + s + (strict ? " must be > 0" : " must be >= 0");
          return std::string();
        },
        strict ? "POSITIVE" : "NONNEGATIVE");
  };
  const auto non_negative = number_check(false);
  const auto positive = number_check(true);

  rope_args ra;
  CLI::App* rope = app.add_subcommand("rope", "Rotary position embedding (RoPE) of q or k");
  rope->add_option("--input", ra.input, "input .npy (float16/32/64)")->required();
  rope->add_option("--output", ra.output, "output .npy (same dtype and shape)")->required();
  rope->add_option("--layout", ra.layout, "NLHD|NHLD|LHD|LD")->check(CLI::IsMember({"NLHD", "NHLD", "LHD", "LD"}));
  const frequency_flags rope_flags = add_frequency_flags(rope, ra, positive);
  rope->add_option("--offset", ra.offset, "first position P0 (default 0)")->check(non_negative);
  rope->add_option("--positions", ra.positions, "explicit positions .npy, [L] or [N, L] (MRoPE: [3, L] or [N, 3, L])");
  rope->add_flag("--inverse", ra.inverse, "the transpose (backward pass)");
  rope->add_option("--mrope-sections", ra.mrope_sections, "multimodal RoPE sections T,H,W (T+H+W = R/2)");
  rope->add_option("--mrope-layout", ra.mrope_layout, "chunked|interleaved")->check(named<posenc::mrope_layout>());

  rope_args pa;
  plan_args pl;
  CLI::App* plan = app.add_subcommand("plan", "a RoPE plan's per-pair inv_freq, wavelength, magnitude, logit scale");
  plan->add_option("--head-dim", pl.head_dim, "D (default: the model file's head_dim)")->check(positive);
  plan->add_option("--output", pl.output, "PLAN.npy (float64 [R/2, 4]) or PLAN.csv")->required();
  plan->add_option("--length", pl.length, "sequence length N (dynamic NTK, LongRoPE's switch)")->check(non_negative);
  const frequency_flags plan_flags = add_frequency_flags(plan, pa, positive);

  xpos_args xa;
  CLI::App* xpos = app.add_subcommand("xpos", "xPos (torchscale): RoPE times zeta^((p - C)/scale_base)");
  xpos->add_option("--input", xa.input, "input .npy")->required();
  xpos->add_option("--output", xa.output, "output .npy")->required();
  xpos->add_option("--layout", xa.layout, "NLD|LD|NLHD")->check(CLI::IsMember({"NLD", "LD", "NLHD"}));
  xpos->add_option("--offset", xa.offset, "first position P0")->check(non_negative);
  xpos->add_option("--center", xa.center, "scale centre C (default ceil((L + P0)/2))")->check(non_negative);
  xpos->add_option("--scale-base", xa.scale_base, "default 512")->check(positive);
  xpos->add_option("--gamma", xa.gamma, "default 0.4")->check(positive);
  xpos->add_option("--base", xa.base, "default 10000")->check(positive);
  xpos->add_flag("--downscale", xa.downscale, "divide by the scale (keys)");
  xpos->add_option("--style", xa.style, "interleaved|half-split")->check(named<posenc::rope_style>());

  table_args ta;
  CLI::App* alibi = app.add_subcommand("alibi", "ALiBi bias [H, LQ, LK] = slope_h * (j - (i + P0)), float32");
  alibi->add_option("--heads", ta.heads, "H")->required()->check(positive);
  alibi->add_option("--query-len", ta.query_len, "LQ")->required()->check(non_negative);
  alibi->add_option("--key-len", ta.key_len, "LK")->required()->check(non_negative);
  alibi->add_option("--output", ta.output, "output .npy")->required();
  alibi->add_option("--query-offset", ta.query_offset, "P0, position of the first query (default 0)")->check(non_negative);
  alibi->add_option("--max-bias", ta.max_bias, "default 8")->check(positive);
  alibi->add_flag("--symmetric", ta.symmetric, "-slope_h * |j - (i + P0)| (encoders)");

  CLI::App* slopes = app.add_subcommand("alibi-slopes", "ALiBi slopes [H], float32");
  slopes->add_option("--heads", ta.heads, "H")->required()->check(positive);
  slopes->add_option("--output", ta.output, "output .npy")->required();
  slopes->add_option("--max-bias", ta.max_bias, "default 8")->check(positive);

  CLI::App* t5 = app.add_subcommand("t5-buckets", "T5 relative-position buckets [LQ, LK], int64");
  t5->add_option("--query-len", ta.query_len, "LQ")->required()->check(non_negative);
  t5->add_option("--key-len", ta.key_len, "LK")->required()->check(non_negative);
  t5->add_option("--output", ta.output, "output .npy")->required();
  t5->add_option("--query-offset", ta.query_offset, "P0 (default 0)")->check(non_negative);
  t5->add_option("--num-buckets", ta.num_buckets, "default 32")->check(positive);
  t5->add_option("--max-distance", ta.max_distance, "default 128")->check(positive);
  t5->add_flag("--causal", ta.causal, "decoder (unidirectional) buckets");

  CLI::App* sin = app.add_subcommand("sinusoidal", "sinusoidal table [L, D], float32");
  sin->add_option("--length", ta.length, "L")->required()->check(non_negative);
  sin->add_option("--dim", ta.dim, "D (even)")->required()->check(positive);
  sin->add_option("--output", ta.output, "output .npy")->required();
  sin->add_option("--base", ta.base, "default 10000")->check(positive);
  sin->add_option("--offset", ta.offset, "first position P0 (default 0)")->check(non_negative);
  sin->add_option("--layout", ta.layout, "interleaved|concat")->check(named<posenc::sinusoidal_layout>());

  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) known = known || sub->get_name() == argv[1];
    if (!known) {
      std::string names;
      for (const CLI::App* sub : app.get_subcommands({})) names += (names.empty() ? "" : ", ") + sub->get_name();
      std::fprintf(stderr, "posenc: unknown subcommand '%s' (known: %s)\n", argv[1], names.c_str());
      return static_cast<int>(CLI::ExitCodes::ExtrasError);
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    std::fprintf(stderr, "posenc: %s (run with --help)\n", what.c_str());
    return e.get_exit_code() > 0 && e.get_exit_code() < 128 ? e.get_exit_code() : 2;
  }
  rope_flags.record(ra);
  plan_flags.record(pa);
  try {
    if (rope->parsed()) run_rope(ra);
    else if (plan->parsed()) run_plan(pa, pl);
    else if (xpos->parsed()) run_xpos(xa);
    else if (alibi->parsed()) run_alibi(ta);
    else if (slopes->parsed()) run_alibi_slopes(ta);
    else if (t5->parsed()) run_t5_buckets(ta);
    else if (sin->parsed()) run_sinusoidal(ta);
  } catch (const std::exception& e) {
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    std::fprintf(stderr, "%s%s\n", what.rfind("posenc", 0) == 0 ? "" : "posenc: ", what.c_str());
    return 1;
  }
  return 0;
}
