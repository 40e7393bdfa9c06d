// posenc Python bindings: RoPE plans and caches (RopePlanCore, RopeCacheCore): from parameter dicts, configs, GGUF, explicit frequencies.
#include "common.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <limits>

#include <posenc/detail/hf_layers.hpp>
#include <posenc/detail/hf_vision.hpp>
#include <posenc/detail/hf_reader.hpp>

namespace pyposenc {
namespace {

nb::dict scaling_dict(const posenc::rope_scaling& s) {
  nb::dict d;
  d["type"] = posenc::to_string(s.type);
  using t = posenc::rope_scaling_type;
  if (s.type != t::none) d["factor"] = s.factor;
  if (s.type == t::dynamic_ntk || s.type == t::yarn || s.type == t::deepseek_yarn || s.type == t::llama3 ||
      s.type == t::longrope)
    d["original_max_positions"] = s.original_max_positions;
  if (s.type == t::dynamic_ntk) d["dynamic_policy"] = posenc::to_string(s.ntk_policy);
  if (s.type == t::yarn || s.type == t::deepseek_yarn) {
    d["beta_fast"] = s.beta_fast;
    d["beta_slow"] = s.beta_slow;
    d["truncate"] = s.truncate;
    d["mscale"] = s.mscale;
    d["mscale_all_dim"] = s.mscale_all_dim;
  }
  if (s.type == t::yarn || s.type == t::deepseek_yarn || s.type == t::longrope)
    d["attention_factor"] = s.attention_factor ? nb::cast(*s.attention_factor) : nb::none();
  if (s.type == t::llama3) {
    d["low_freq_factor"] = s.low_freq_factor;
    d["high_freq_factor"] = s.high_freq_factor;
  }
  if (s.type == t::longrope) {
    d["short_factor"] = s.short_factor;
    d["long_factor"] = s.long_factor;
    d["longrope_policy"] = posenc::to_string(s.long_policy);
  }
  return d;
}

std::optional<nb::dict> config_dict(const std::optional<posenc::rope_config>& c) {
  if (!c) return std::nullopt;
  nb::dict d;
  d["head_dim"] = c->head_dim;
  d["rotary_dim"] = c->rotary_dim == 0 ? c->head_dim : c->rotary_dim;
  d["rotary_offset"] = c->rotary_offset;
  d["base"] = c->base;
  d["style"] = posenc::to_string(c->style);
  d["scaling"] = scaling_dict(c->scaling);
  d["freq_factors"] = c->freq_factors;
  return d;
}

rope_plan_py plan_from_config(posenc::rope_config cfg, index_t seq_len) {
  rope_plan_py p;
  check(posenc::try_make_rope_plan(cfg, seq_len, p.plan));
  p.config = std::move(cfg);
  p.seq_len = seq_len;
  return p;
}

template <class T>
T get(const nb::dict& d, const char* key, T fallback) {
  return d.contains(key) ? nb::cast<T>(d[key]) : fallback;
}
template <class T>
std::optional<T> get_opt(const nb::dict& d, const char* key) {
  if (!d.contains(key)) return std::nullopt;
  nb::object v = d[key];
  if (v.is_none()) return std::nullopt;
  return nb::cast<T>(v);
}

/// A rope_config from a dict in the form RopePlan.config returns (so a loaded configuration can be copied,
/// edited and planned again). Every key is checked: an unknown one is a ValueError naming the known ones, a
/// missing one keeps rope_config's default.
posenc::rope_config config_from_dict(const nb::dict& d, const char* fn) {
  static const char* const top[] = {"head_dim", "rotary_dim", "rotary_offset", "base", "style", "scaling", "freq_factors"};
  static const char* const sc[] = {"type", "factor", "original_max_positions", "dynamic_policy", "beta_fast",
                                   "beta_slow", "truncate", "mscale", "mscale_all_dim", "attention_factor",
                                   "low_freq_factor", "high_freq_factor", "short_factor", "long_factor",
                                   "longrope_policy"};
  const auto check_keys = [fn](const nb::dict& dd, const char* where, const auto& known) {
    for (auto kv : dd) {
      const std::string k = nb::cast<std::string>(kv.first);
      bool ok = false;
      std::string list;
      for (const char* n : known) {
        ok = ok || k == n;
        list += list.empty() ? n : std::string(", ") + n;
      }
      if (!ok) value_error(fn, where, " has no key '", k, "' (known: ", list, ")");
    }
  };
  check_keys(d, "config", top);
  posenc::rope_config c;
  c.head_dim = get<index_t>(d, "head_dim", 0);
  c.rotary_dim = get<index_t>(d, "rotary_dim", 0);
  c.rotary_offset = get<index_t>(d, "rotary_offset", 0);
  c.base = get<double>(d, "base", c.base);
  c.style = parse_style(get<std::string>(d, "style", "half_split"), fn);
  c.freq_factors = get<std::vector<double>>(d, "freq_factors", {});
  if (d.contains("scaling")) {
    const nb::dict s = nb::cast<nb::dict>(d["scaling"]);
    check_keys(s, "config['scaling']", sc);
    posenc::rope_scaling& r = c.scaling;
    r.type = parse_enum<posenc::rope_scaling_type>(get<std::string>(s, "type", "none"), fn, "scaling type");
    r.factor = get<double>(s, "factor", r.factor);
    r.original_max_positions = get<index_t>(s, "original_max_positions", 0);
    r.ntk_policy = parse_enum<posenc::dynamic_ntk_policy>(get<std::string>(s, "dynamic_policy", "per_length"), fn,
                                                         "dynamic_policy");
    r.beta_fast = get<double>(s, "beta_fast", r.beta_fast);
    r.beta_slow = get<double>(s, "beta_slow", r.beta_slow);
    r.truncate = get<bool>(s, "truncate", r.truncate);
    r.mscale = get<double>(s, "mscale", r.mscale);
    r.mscale_all_dim = get<double>(s, "mscale_all_dim", r.mscale_all_dim);
    r.attention_factor = get_opt<double>(s, "attention_factor");
    r.low_freq_factor = get<double>(s, "low_freq_factor", r.low_freq_factor);
    r.high_freq_factor = get<double>(s, "high_freq_factor", r.high_freq_factor);
    r.short_factor = get<std::vector<double>>(s, "short_factor", {});
    r.long_factor = get<std::vector<double>>(s, "long_factor", {});
    r.long_policy = parse_enum<posenc::longrope_policy>(get<std::string>(s, "longrope_policy", "per_length"), fn,
                                                        "longrope_policy");
  }
  return c;
}

/// rope_params from a dict of its field names (already typed by scaling_into_params), mapped by posenc's one
/// rope_params mapping (rope_params.hpp) with the caller's key names in messages, then planned.
std::pair<rope_plan_py, std::string> plan_from_params(const nb::dict& d, const nb::dict& names, index_t seq_len,
                                                      std::optional<double> ntk_factor) {
  constexpr const char* fn = "RopePlan";
  posenc::rope_params p;
  p.head_dim = get<index_t>(d, "head_dim", 0);
  p.rotary_dim = get<index_t>(d, "rotary_dim", 0);
  p.partial_rotary_factor = get<double>(d, "partial_rotary_factor", 1.0);
  p.rotary_offset = get<index_t>(d, "rotary_offset", 0);
  p.base = get<double>(d, "base", 10000.0);
  p.style = parse_style(get<std::string>(d, "style", "half_split"), fn);
  p.scaling_type = get<std::string>(d, "scaling_type", "default");
  p.factor = get_opt<double>(d, "factor");
  p.original_max_positions = get<index_t>(d, "original_max_positions", 0);
  p.max_position_embeddings = get<index_t>(d, "max_position_embeddings", 0);
  p.beta_fast = get_opt<double>(d, "beta_fast");
  p.beta_slow = get_opt<double>(d, "beta_slow");
  p.mscale = get_opt<double>(d, "mscale");
  p.mscale_all_dim = get_opt<double>(d, "mscale_all_dim");
  p.truncate = get<bool>(d, "truncate", true);
  const std::string variant = get<std::string>(d, "yarn_variant", "yarn");
  if (variant != "yarn" && variant != "deepseek") value_error(fn, "yarn_variant='", variant, "' is not 'yarn' or 'deepseek'");
  p.yarn_variant = variant == "deepseek" ? posenc::rope_yarn_variant::deepseek : posenc::rope_yarn_variant::yarn;
  p.attention_factor = get_opt<double>(d, "attention_factor");
  p.low_freq_factor = get_opt<double>(d, "low_freq_factor");
  p.high_freq_factor = get_opt<double>(d, "high_freq_factor");
  p.short_factor = get<std::vector<double>>(d, "short_factor", {});
  p.long_factor = get<std::vector<double>>(d, "long_factor", {});
  p.ntk_policy = parse_enum<posenc::dynamic_ntk_policy>(get<std::string>(d, "dynamic_policy", "per_length"), fn, "dynamic_policy");
  p.long_policy = parse_enum<posenc::longrope_policy>(get<std::string>(d, "longrope_policy", "per_length"), fn, "longrope_policy");
  p.mrope_section = get<std::vector<index_t>>(d, "mrope_section", {});
  p.mrope_interleaved = get<bool>(d, "mrope_interleaved", false);
  p.freq_factors = get<std::vector<double>>(d, "freq_factors", {});

  // How messages name each field: the keys of the caller's dict or config.json (posenc's HF loader does the
  // same through this structure, detail/hf_mapping.hpp).
  posenc::detail::rope_param_names n;
  const std::string function = get<std::string>(names, "function", fn);
  n.function = function.c_str();
  n.context = get<std::string>(names, "context", "");
  const auto name = [&](std::string& field, const char* key) { field = get<std::string>(names, key, field); };
  name(n.head_dim, "head_dim");
  name(n.rotary_dim, "rotary_dim");
  name(n.partial_rotary_factor, "partial_rotary_factor");
  name(n.scaling_type, "scaling_type");
  name(n.scaling_label, "scaling_label");
  name(n.factor, "factor");
  name(n.original_max_positions, "original_max_positions");
  name(n.max_position_embeddings, "max_position_embeddings");
  name(n.beta_fast, "beta_fast");
  name(n.beta_slow, "beta_slow");
  name(n.mscale, "mscale");
  name(n.mscale_all_dim, "mscale_all_dim");
  name(n.attention_factor, "attention_factor");
  name(n.low_freq_factor, "low_freq_factor");
  name(n.high_freq_factor, "high_freq_factor");
  name(n.short_factor, "short_factor");
  name(n.long_factor, "long_factor");
  name(n.mrope_section, "mrope_section");
  name(n.freq_factors, "freq_factors");

  posenc::rope_config cfg;
  std::string canonical;
  check(posenc::detail::guard_alloc(n.function, [&] { return posenc::detail::rope_params_to_config(p, n, cfg, &canonical); }));
  if (ntk_factor) cfg.scaling = posenc::rope_scaling::ntk(*ntk_factor);
  return {plan_from_config(std::move(cfg), seq_len), canonical};
}

/// posenc's Hugging Face reader (detail/hf_reader.hpp) over a parsed config.json as Python holds it (json.load's
/// dicts, lists, str, int, float, bool, None; tuples and numbers.Real accepted too), so the package runs the C++
/// loader's key lookup, precedence and messages instead of a copy. A node is a borrowed reference that the
/// config dict keeps alive.
struct py_access {
  using node = PyObject*;
  static PyObject* real_type() {
    static PyObject* t = nb::object(nb::module_::import_("numbers").attr("Real")).release().ptr();  // kept for the process
    return t;
  }
  static node find(node obj, const char* key) { return PyDict_GetItemString(obj, key); }
  static bool is_null(node v) { return v == Py_None; }
  static bool is_object(node v) { return PyDict_Check(v); }
  static bool is_array(node v) { return PyList_Check(v) || PyTuple_Check(v); }
  static bool is_string(node v) { return PyUnicode_Check(v); }
  static bool is_boolean(node v) { return PyBool_Check(v); }
  static bool is_number(node v) {
    if (PyBool_Check(v)) return false;
    if (PyFloat_Check(v) || PyLong_Check(v)) return true;
    const int r = PyObject_IsInstance(v, real_type());
    if (r < 0) throw nb::python_error();
    return r == 1;
  }
  static std::optional<index_t> as_integer(node v) {
    if (PyBool_Check(v) || !is_number(v)) return std::nullopt;
    if (PyLong_Check(v) || PyIndex_Check(v)) {
      nb::object i = nb::steal(PyNumber_Index(v));
      if (!i.is_valid()) throw nb::python_error();
      int overflow = 0;
      const long long x = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
      if (overflow != 0) return std::nullopt;
      return static_cast<index_t>(x);
    }
    const double d = as_double(v);
    if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 0x1p62) return static_cast<index_t>(d);
    return std::nullopt;
  }
  static double as_double(node v) {
    const double d = PyFloat_AsDouble(v);
    if (d == -1.0 && PyErr_Occurred()) throw nb::python_error();
    return d;
  }
  static bool as_bool(node v) { return v == Py_True; }
  static std::string as_string(node v) { return nb::cast<std::string>(nb::handle(v)); }
  static std::size_t size(node v) {
    return static_cast<std::size_t>(PyList_Check(v) ? PyList_GET_SIZE(v) : PyTuple_GET_SIZE(v));
  }
  static node at(node v, std::size_t i) {
    const auto k = static_cast<Py_ssize_t>(i);
    return PyList_Check(v) ? PyList_GET_ITEM(v, k) : PyTuple_GET_ITEM(v, k);
  }
  template <class F>
  static void for_each_member(node v, F&& f) {
    Py_ssize_t pos = 0;
    PyObject* key = nullptr;
    PyObject* value = nullptr;
    while (PyDict_Next(v, &pos, &key, &value)) f(nb::cast<std::string>(nb::str(key)), value);
  }
  static std::string type_name(node v) {
    if (v == Py_None) return "null";
    if (is_boolean(v)) return "boolean";
    if (is_number(v)) return "number";
    if (is_string(v)) return "string";
    if (is_object(v)) return "object";
    if (is_array(v)) return "array";
    return nb::cast<std::string>(nb::handle(v).type().attr("__name__"));
  }
  /// The value's JSON text (json.dumps, as nlohmann's dump), shortened, for messages.
  static std::string shown(node v) {
    std::string s;
    try {
      nb::object dumps = nb::module_::import_("json").attr("dumps");
      nb::dict kw;
      kw["separators"] = nb::make_tuple(",", ":");
      kw["ensure_ascii"] = false;
      s = nb::cast<std::string>(dumps(nb::handle(v), **kw));
    } catch (const nb::python_error&) {
      s = nb::cast<std::string>(nb::repr(nb::handle(v)));
    }
    if (s.size() > 64) s = s.substr(0, 61) + "...";
    return s;
  }
  static bool equal(node a, node b) {
    const int r = PyObject_RichCompareBool(a, b, Py_EQ);
    if (r < 0) throw nb::python_error();
    return r == 1;
  }
};

/// A typed key's value into the params dict (and its name into `names`), or its error as the ValueError; the
/// first error among the keys used, in the order used, is the one reported (as the C++ HF loader does).
template <class T>
std::optional<T> use(const posenc::detail::hf::config_key<T>& k) {
  check(k.error);
  return k.value;
}

/// RopePlan's own `scaling` dict (Hugging Face rope_scaling keys, plus posenc's "ntk", "deepseek_yarn" and the
/// two policies) into the rope_params fields plan_from_params maps, typed by the C++ reader (section) so a bad
/// value gets the loader's message. Returns the static NTK factor for posenc's "ntk" type (not a HF type).
std::optional<double> scaling_into_params(nb::handle scaling, std::optional<double> base, nb::dict& params,
                                          nb::dict& names) {
  namespace hf = posenc::detail::hf;
  names["function"] = "RopePlan";
  names["scaling_label"] = "scaling.rope_type";
  names["scaling_type"] = "scaling.rope_type";
  nb::dict empty;
  if (scaling.is_none()) scaling = empty;
  if (!PyDict_Check(scaling.ptr()))
    type_error("RopePlan", "scaling must be a dict of Hugging Face rope_scaling keys, got ",
               nb::cast<std::string>(scaling.type().attr("__name__")));
  const hf::section<py_access> s{scaling.ptr(), "scaling."};
  static const char* const known[] = {"attention_factor", "beta_fast", "beta_slow", "dynamic_policy", "factor",
                                      "high_freq_factor", "long_factor", "longrope_policy", "low_freq_factor",
                                      "max_position_embeddings", "mrope_interleaved", "mrope_section", "mscale",
                                      "mscale_all_dim", "original_max_position_embeddings", "partial_rotary_factor",
                                      "rope_theta", "rope_type", "short_factor", "truncate", "type"};
  std::vector<std::string> unknown;
  py_access::for_each_member(scaling.ptr(), [&](const std::string& key, PyObject*) {
    if (std::find_if(std::begin(known), std::end(known), [&](const char* k) { return key == k; }) == std::end(known))
      unknown.push_back(key);
  });
  if (!unknown.empty()) {
    std::sort(unknown.begin(), unknown.end());
    std::string u, k;
    for (const auto& n : unknown) u += (u.empty() ? "" : ", ") + n;
    for (const char* n : known) k += (k.empty() ? "" : ", ") + std::string(n);
    raise(PyExc_ValueError, "posenc::RopePlan: scaling has unknown key(s) " + u + " (known: " + k + ")");
  }
  const auto type_key = s.string("rope_type").given() ? s.string("rope_type") : s.string("type");
  std::string kind = use(type_key).value_or("default");
  names["scaling_type"] = type_key.name;
  if (kind == "none") kind = "default";
  if (kind == "dynamic_ntk") kind = "dynamic";
  if (kind == "deepseek_yarn") {
    kind = "yarn";
    params["yarn_variant"] = "deepseek";
  }
  params["scaling_type"] = kind == "ntk" ? std::string("default") : kind;
  const auto prf = s.number("partial_rotary_factor");
  if (const auto v = use(prf)) {
    params["partial_rotary_factor"] = *v;
    names["partial_rotary_factor"] = prf.name;
  }
  const auto theta = use(s.number("rope_theta"));
  if (theta && base && *theta != *base) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "posenc::RopePlan: base=%.17g and scaling.rope_theta=%.17g differ; give one", *base, *theta);
    raise(PyExc_ValueError, buf);
  }
  params["base"] = theta ? *theta : base.value_or(10000.0);
  const auto omp = s.positive("original_max_position_embeddings");
  if (const auto v = use(omp)) params["original_max_positions"] = *v;
  names["original_max_positions"] = omp.name;
  if (const auto v = use(s.positive("max_position_embeddings"))) params["max_position_embeddings"] = *v;
  names["max_position_embeddings"] = "scaling.max_position_embeddings";
  const auto number = [&](const char* field) {
    const auto k = s.number(field);
    const auto v = use(k);
    params[field] = v ? nb::cast(*v) : nb::none();
    names[field] = k.name;
  };
  for (const char* f : {"factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim", "attention_factor"}) number(f);
  params["truncate"] = use(s.boolean("truncate")).value_or(true);
  for (const char* f : {"low_freq_factor", "high_freq_factor"}) number(f);
  for (const char* f : {"short_factor", "long_factor"}) {
    const auto k = s.numbers(f);
    params[f] = use(k).value_or(std::vector<double>{});
    names[f] = k.name;
  }
  const auto ms = s.integers("mrope_section");
  params["mrope_section"] = use(ms).value_or(std::vector<index_t>{});
  names["mrope_section"] = ms.name;
  params["mrope_interleaved"] = use(s.boolean("mrope_interleaved")).value_or(false);
  for (const char* f : {"dynamic_policy", "longrope_policy"})
    if (const auto v = use(s.string(f))) params[f] = *v;
  if (kind != "ntk") return std::nullopt;
  if (params["factor"].is_none())
    raise(PyExc_ValueError, "posenc::RopePlan: scaling.factor is missing (required for scaling.rope_type=\"ntk\")");
  return nb::cast<double>(params["factor"]);
}

/// RopePlan(head_dim, base, style, rotary_dim, rotary_offset, scaling, seq_len, freq_factors).
rope_plan_py plan_from_scaling(nb::dict params, nb::handle scaling, std::optional<double> base, index_t seq_len) {
  nb::dict names;
  const std::optional<double> ntk = scaling_into_params(scaling, base, params, names);
  return plan_from_params(params, names, seq_len, ntk).first;
}

/// RopePlan.from_hf_config: posenc::rope_config_from_hf's reader and mapping over a parsed config.json, then
/// the plan; the model facts as a dict.
/// One layer of posenc::model_positional_plan as a dict: rope, attention, window, temperature (None or its
/// floor_scale and attn_scale).
nb::dict layer_dict(const posenc::layer_positional& l) {
  nb::dict d;
  d["rope"] = l.rope;
  d["attention"] = std::string(posenc::to_string(l.attention));
  d["window"] = l.window;
  if (l.temperature.enabled) {
    nb::dict t;
    t["floor_scale"] = l.temperature.floor_scale;
    t["attn_scale"] = l.temperature.attn_scale;
    t["offset"] = l.temperature.offset;
    d["temperature"] = t;
  } else {
    d["temperature"] = nb::none();
  }
  return d;
}

/// posenc.model_layers: every layer's positional treatment (posenc::try_model_plan_from_hf's reader over the
/// dict), one dict per layer.
nb::list model_layers(const nb::handle& config, bool use_text_config) {
  posenc::hf_options opt;
  opt.use_text_config = use_text_config;
  posenc::model_positional_plan m;
  check(posenc::detail::hf::parse_model<py_access>(config.ptr(), opt, m));
  nb::list out;
  for (const auto& l : m.layers) out.append(layer_dict(l));
  return out;
}

/// posenc.gguf_model_layers: every layer of a GGUF model (posenc::try_read_gguf_model_plan).
nb::list gguf_model_layers(const std::string& path, std::optional<std::string> style) {
  posenc::gguf_options opt;
  if (style) opt.style = parse_style(*style, "gguf_model_layers");
  posenc::model_positional_plan m;
  posenc::status s;
  {
    nb::gil_scoped_release unlocked;
    s = posenc::try_read_gguf_model_plan(path, m, opt);
  }
  check(s);
  nb::list out;
  for (const auto& l : m.layers) out.append(layer_dict(l));
  return out;
}

/// MropePlan.from_hf_vision: a vision tower's 2D RoPE (posenc::try_vision_plan_from_hf's reader over the dict)
/// and the tower's facts.
std::pair<mrope_plan_py, nb::dict> vision_from_hf(const nb::handle& config, std::optional<std::string> style) {
  posenc::hf_options opt;
  if (style) opt.style = parse_style(*style, "MropePlan.from_hf_vision");
  posenc::vision_positional_plan v;
  check(posenc::detail::hf::parse_vision<py_access>(config.ptr(), opt, v));
  mrope_plan_py p;
  check(v.try_make_rope(p.plan));
  nb::dict d;
  d["model_type"] = v.model_type;
  d["head_dim"] = v.head_dim;
  d["base"] = v.base;
  d["layout"] = std::string(posenc::to_string(v.layout));
  d["patch_size"] = v.patch_size;
  d["spatial_merge_size"] = v.spatial_merge_size;
  d["max_patches_per_side"] = v.max_patches_per_side;
  nb::list layers;
  for (const auto& l : v.layers) {
    nb::dict e;
    e["windowed"] = l.windowed;
    e["window"] = l.window;
    layers.append(e);
  }
  d["layers"] = layers;
  return {std::move(p), d};
}

std::pair<rope_plan_py, nb::dict> plan_from_hf(const nb::handle& config, std::optional<std::string> style,
                                               std::optional<std::string> yarn_variant, const std::string& ntk_policy,
                                               const std::string& long_policy, std::optional<std::string> layer_type,
                                               bool use_text_config, std::optional<index_t> layer, index_t seq_len) {
  constexpr const char* fn = "RopePlan.from_hf_config";
  posenc::hf_options opt;
  if (style) opt.style = parse_style(*style, fn);
  if (yarn_variant) {
    const auto v = parse_enum<posenc::rope_yarn_variant>(*yarn_variant, fn, "yarn_variant");
    opt.yarn = v == posenc::rope_yarn_variant::deepseek ? posenc::hf_yarn_variant::deepseek : posenc::hf_yarn_variant::yarn;
  }
  opt.ntk_policy = parse_enum<posenc::dynamic_ntk_policy>(ntk_policy, fn, "dynamic_policy");
  opt.long_policy = parse_enum<posenc::longrope_policy>(long_policy, fn, "longrope_policy");
  if (layer_type) opt.layer_type = *layer_type;
  opt.use_text_config = use_text_config;
  nb::dict d;
  std::optional<posenc::layer_positional> chosen;
  if (layer) {  // that layer's configuration (local bases, NoPE layers): posenc::model_plan_from_hf
    posenc::model_positional_plan m;
    check(posenc::detail::hf::parse_model<py_access>(config.ptr(), opt, m));
    check(m.check_layer(*layer));
    chosen = m.layer(*layer);
    if (!chosen->rope)
      check(posenc::detail::fail(fn, "layer ", *layer, " of ", m.model_type, " has no RoPE (a NoPE layer: q and k are "
                                 "not rotated; posenc.model_layers lists its attention and temperature)"));
    // The facts below from the layer's own type of a per-layer rope_parameters (ignored for a flat dict).
    if (opt.layer_type.empty()) opt.layer_type = posenc::to_string(chosen->attention);
    d["layer"] = layer_dict(*chosen);
  }
  posenc::hf_rope_info info;
  check(posenc::detail::hf::parse<py_access>(config.ptr(), opt, info));
  if (chosen) info.config = chosen->config;
  d["model_type"] = info.model_type;
  d["rope_type"] = info.rope_type;
  d["num_attention_heads"] = info.num_attention_heads;
  d["num_key_value_heads"] = info.num_key_value_heads;
  d["max_position_embeddings"] = info.max_position_embeddings;
  d["partial_rotary_factor"] = info.partial_rotary_factor;
  d["mrope_section"] = info.mrope_section;
  d["mrope_interleaved"] = info.mrope_interleaved;
  return {plan_from_config(info.config, seq_len), d};
}

std::pair<rope_plan_py, nb::dict> plan_from_gguf(const std::string& path, std::optional<std::string> style,
                                                 const std::string& long_policy, std::optional<index_t> layer,
                                                 index_t seq_len) {
  constexpr const char* fn = "RopePlan.from_gguf";
  posenc::gguf_options opt;
  if (style) opt.style = parse_style(*style, fn);
  opt.long_policy = parse_enum<posenc::longrope_policy>(long_policy, fn, "longrope_policy");
  posenc::gguf_rope_info info;
  posenc::model_positional_plan m;
  posenc::status s;
  {
    nb::gil_scoped_release unlocked;
    s = posenc::try_read_gguf_rope(path, info, opt);
    if (s.ok() && layer) s = posenc::try_read_gguf_model_plan(path, m, opt);
  }
  check(s);
  nb::dict d;
  if (layer) {  // that layer's configuration (local bases, NoPE layers): posenc::read_gguf_model_plan
    check(m.check_layer(*layer));
    const posenc::layer_positional& l = m.layer(*layer);
    if (!l.rope)
      check(posenc::detail::fail(fn, "layer ", *layer, " of ", m.model_type, " has no RoPE (a NoPE layer: q and k are "
                                 "not rotated; posenc.gguf_model_layers lists its attention and temperature)"));
    info.config = l.config;
    d["layer"] = layer_dict(l);
  }
  d["version"] = info.version;
  d["architecture"] = info.architecture;
  d["name"] = info.name;
  d["rope_type"] = info.rope_type;
  d["file_scaling_type"] = info.file_scaling_type;
  d["scaling_type"] = info.scaling_type;
  d["context_length"] = info.context_length;
  d["original_context_length"] = info.original_context_length;
  d["embedding_length"] = info.embedding_length;
  d["head_count"] = info.head_count;
  d["head_count_kv"] = info.head_count_kv;
  d["mrope_sections"] = info.mrope_sections;
  d["freq_factors_tensor"] = info.freq_factors_tensor;
  return {plan_from_config(info.config, seq_len), d};
}

}  // namespace

void bind_plans(nb::module_& m) {
  m.def("model_layers", &model_layers, nb::arg("config"), nb::arg("use_text_config"));
  m.def("gguf_model_layers", &gguf_model_layers, nb::arg("path"), nb::arg("style").none());
  m.def("vision_from_hf", &vision_from_hf, nb::arg("config"), nb::arg("style").none());
  m.def(
      "vision_positions",
      [](index_t frames, index_t grid_h, index_t grid_w, index_t merge) {
        std::vector<std::int64_t> ids;
        check(posenc::try_vision_positions(frames, grid_h, grid_w, merge, ids));
        return ids;
      },
      nb::arg("frames"), nb::arg("grid_h"), nb::arg("grid_w"), nb::arg("merge"));
  // ---- plans
  nb::class_<rope_plan_py>(m, "RopePlanCore", "A posenc::rope_plan (immutable).")
      .def_static("from_params", &plan_from_params, nb::arg("params"), nb::arg("names"), nb::arg("seq_len"),
                  nb::arg("ntk_factor").none())
      .def_static(
          "from_inv_freq",
          [](index_t head_dim, std::vector<double> inv_freq, const std::string& style, index_t rotary_offset,
             double magnitude, double logit_scale) {
            rope_plan_py p;
            check(posenc::rope_plan::try_create(head_dim, std::move(inv_freq), parse_style(style, "RopePlan.from_inv_freq"),
                                                rotary_offset, magnitude, logit_scale, p.plan));
            return p;
          },
          nb::arg("head_dim"), nb::arg("inv_freq"), nb::arg("style"), nb::arg("rotary_offset"), nb::arg("magnitude"),
          nb::arg("logit_scale"))
      .def_static("from_scaling", &plan_from_scaling, nb::arg("params"), nb::arg("scaling").none(),
                  nb::arg("base").none(), nb::arg("seq_len"))
      .def_static("from_hf", &plan_from_hf, nb::arg("config"), nb::arg("style").none(), nb::arg("yarn_variant").none(),
                  nb::arg("dynamic_policy"), nb::arg("longrope_policy"), nb::arg("layer_type").none(),
                  nb::arg("use_text_config"), nb::arg("layer").none(), nb::arg("seq_len"))
      .def_static("from_gguf", &plan_from_gguf, nb::arg("path"), nb::arg("style").none(), nb::arg("longrope_policy"),
                  nb::arg("layer").none(), nb::arg("seq_len"))
      .def_static(
          "sectioned",
          [](index_t head_dim, double base, std::array<index_t, 3> sections, const std::string& style) {
            rope_plan_py p;
            check(posenc::try_make_sectioned_rope_plan(head_dim, base, sections,
                                                       parse_style(style, "RopePlan.sectioned"), p.plan));
            return p;
          },
          nb::arg("head_dim"), nb::arg("base"), nb::arg("sections"), nb::arg("style"))
      .def_static("from_config",
                  [](const nb::dict& d, index_t seq_len) { return plan_from_config(config_from_dict(d, "RopePlan.from_config"), seq_len); },
                  nb::arg("config"), nb::arg("seq_len"))
      .def("with_seq_len",
           [](const rope_plan_py& p, index_t seq_len) {
             if (!p.config) value_error("RopePlan.with_seq_len", "the plan was not built from a configuration");
             return plan_from_config(*p.config, seq_len);
           },
           nb::arg("seq_len"))
      .def_prop_ro("head_dim", [](const rope_plan_py& p) { return p.plan.head_dim(); })
      .def_prop_ro("rotary_dim", [](const rope_plan_py& p) { return p.plan.rotary_dim(); })
      .def_prop_ro("rotary_offset", [](const rope_plan_py& p) { return p.plan.rotary_offset(); })
      .def_prop_ro("pairs", [](const rope_plan_py& p) { return p.plan.pairs(); })
      .def_prop_ro("style", [](const rope_plan_py& p) { return std::string(posenc::to_string(p.plan.style())); })
      .def_prop_ro("magnitude", [](const rope_plan_py& p) { return p.plan.magnitude(); })
      .def_prop_ro("logit_scale", [](const rope_plan_py& p) { return p.plan.logit_scale(); })
      .def_prop_ro("seq_len", [](const rope_plan_py& p) { return p.seq_len; })
      .def_prop_ro("config", [](const rope_plan_py& p) { return config_dict(p.config); })
      .def_prop_ro("inv_freq", [](const rope_plan_py& p) {
        const auto& w = p.plan.inv_freq();
        return ro_view<double, 1>(w.data(), {w.size()}, nb::find(&p));
      });

  nb::class_<rope_cache_py>(m, "RopeCacheCore", "A posenc::rope_cache<float or double>.")
      .def(
          "__init__",
          [](rope_cache_py* self, const rope_plan_py& plan, index_t max_positions, const std::string& dtype) {
            if (dtype == "float32") {
              posenc::rope_cache<float> c;
              check(posenc::rope_cache<float>::try_create(plan.plan, max_positions, c));
              new (self) rope_cache_py{std::move(c)};
            } else if (dtype == "float64") {
              posenc::rope_cache<double> c;
              check(posenc::rope_cache<double>::try_create(plan.plan, max_positions, c));
              new (self) rope_cache_py{std::move(c)};
            } else {
              value_error("RopeCache", "dtype='", dtype, "' is not 'float32' or 'float64'");
            }
          },
          nb::arg("plan"), nb::arg("max_positions"), nb::arg("dtype"))
      .def_prop_ro("max_positions", &rope_cache_py::max_positions)
      .def_prop_ro("dtype", [](const rope_cache_py& c) {
        return std::string(std::holds_alternative<posenc::rope_cache<float>>(c.cache) ? "float32" : "float64");
      })
      .def_prop_ro("plan", [](const rope_cache_py& c) { return rope_plan_py{c.plan(), std::nullopt, 0}; })
      .def_prop_ro("cos", [](const rope_cache_py& c) {
        const std::array<std::size_t, 2> shape{static_cast<std::size_t>(c.max_positions()),
                                               static_cast<std::size_t>(c.plan().pairs())};
        return std::visit([&](const auto& t) { return nb::cast(ro_view(t.cos_data(), shape, nb::find(&c))); }, c.cache);
      })
      .def_prop_ro("sin", [](const rope_cache_py& c) {
        const std::array<std::size_t, 2> shape{static_cast<std::size_t>(c.max_positions()),
                                               static_cast<std::size_t>(c.plan().pairs())};
        return std::visit([&](const auto& t) { return nb::cast(ro_view(t.sin_data(), shape, nb::find(&c))); }, c.cache);
      });

  // An engine's table: cos and sin are arrays (or views of one array) whose first element is pair 0 of position
  // 0; the strides in elements come from the Python wrapper (posenc.RopeTable), which knows the layout.
  nb::class_<rope_table_py>(m, "RopeTableCore", "A posenc::rope_table_view over the caller's arrays.")
      .def(
          "__init__",
          [](rope_table_py* self, const ro_array& cos, const ro_array& sin, nb::object keep, index_t max_positions,
             index_t row_stride, index_t pair_stride, index_t head_dim, index_t rotary_dim, index_t rotary_offset,
             const std::string& style) {
            constexpr const char* fn = "RopeTable";
            const arr c = describe(cos, fn, "cos"), s = describe(sin, fn, "sin");
            const dt tc = float_dtype(c.dtype, fn, "cos");
            if (float_dtype(s.dtype, fn, "sin") != tc) type_error(fn, "cos and sin must have one dtype");
            const posenc::rope_geometry g{head_dim, rotary_dim, rotary_offset, parse_style(style, fn)};
            new (self) rope_table_py{c.data, s.data, tc, max_positions, row_stride, pair_stride, g, std::move(keep)};
          },
          nb::arg("cos").noconvert(), nb::arg("sin").noconvert(), nb::arg("keep"), nb::arg("max_positions"),
          nb::arg("row_stride"), nb::arg("pair_stride"), nb::arg("head_dim"), nb::arg("rotary_dim"),
          nb::arg("rotary_offset"), nb::arg("style"))
      .def_prop_ro("max_positions", [](const rope_table_py& t) { return t.max_positions; })
      .def_prop_ro("head_dim", [](const rope_table_py& t) { return t.geometry.head_dim; })
      .def_prop_ro("rotary_dim", [](const rope_table_py& t) { return t.geometry.rotated_dim(); });
}

}  // namespace pyposenc
