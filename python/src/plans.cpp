// posenc Python bindings: RoPE plans and caches (RopePlanCore, RopeCacheCore): from parameter dicts, configs, GGUF, explicit frequencies.
#include "common.hpp"

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

/// rope_params from a dict of its field names (already type-checked by posenc/_hf.py), mapped by posenc's one
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

std::pair<rope_plan_py, nb::dict> plan_from_gguf(const std::string& path, std::optional<std::string> style,
                                                 const std::string& long_policy, index_t seq_len) {
  constexpr const char* fn = "RopePlan.from_gguf";
  posenc::gguf_options opt;
  if (style) opt.style = parse_style(*style, fn);
  opt.long_policy = parse_enum<posenc::longrope_policy>(long_policy, fn, "longrope_policy");
  posenc::gguf_rope_info info;
  posenc::status s;
  {
    nb::gil_scoped_release unlocked;
    s = posenc::try_read_gguf_rope(path, info, opt);
  }
  check(s);
  nb::dict d;
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
      .def_static("from_gguf", &plan_from_gguf, nb::arg("path"), nb::arg("style").none(), nb::arg("longrope_policy"),
                  nb::arg("seq_len"))
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
}

}  // namespace pyposenc
