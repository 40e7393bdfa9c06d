// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// Finds the RoPE keys of a Hugging Face config.json and checks their JSON types, over any JSON tree through a
// small accessor, so that the C++ loader (io/hf_config.hpp, nlohmann/json) and the Python package (a dict from
// json.load) run this one reader and give the same results and messages. What the keys mean (which one wins,
// model-specific defaults) is detail/hf_mapping.hpp's; the rest is the rope_params mapping's.
//
// An accessor A has a node type (A::node, a pointer-like handle; null = absent) and static functions:
//   find(node obj, const char* key) -> node   the member, or null when absent (JSON null is a node, is_null)
//   is_null / is_object / is_array / is_string / is_boolean / is_number (bool is not a number)
//   as_integer(node) -> std::optional<index_t> (an integral number, a float with an integral value < 2^62)
//   as_double, as_bool, as_string; size(node), at(node, i) of an array
//   for_each_member(node, f(const std::string& key, node value)) of an object, in order
//   type_name(node) ("object", "array", "string", "boolean", "number", "null"), shown(node) (JSON text, shortened)
//   equal(node, node)
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/detail/hf_mapping.hpp"
#include "posenc/io/hf_rope_info.hpp"
#include "posenc/status.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail::hf {

/// A JSON object and the dotted name its keys are reported under ("" for the root, "rope_scaling.", ...). The
/// readers never throw: a key of the wrong JSON type comes back as a config_key holding the error, which the
/// mapping (detail/hf_mapping.hpp) reports if it uses the key.
template <class A>
struct section {
  using node = typename A::node;
  node obj{};  // null: an absent section, every key absent
  std::string prefix;

  std::string name(const char* key) const { return prefix + key; }

  /// The key's value, or null when the key is absent or JSON null (HF treats both as "not set").
  node get(const char* key) const {
    if (!obj) return node{};
    const node v = A::find(obj, key);
    return !v || A::is_null(v) ? node{} : v;
  }

  template <class T, class... Parts>
  config_key<T> bad(const char* key, const Parts&... parts) const {
    config_key<T> k(name(key));
    k.error = fail(fn, name(key), parts...);
    return k;
  }
  template <class T>
  config_key<T> found(const char* key, T value) const {
    config_key<T> k(name(key));
    k.value = std::move(value);
    return k;
  }

  config_key<double> number(const char* key) const {
    const node v = get(key);
    if (!v) return config_key<double>(name(key));
    if (!A::is_number(v)) return bad<double>(key, "=", A::shown(v), " must be a number, got ", A::type_name(v));
    return found(key, A::as_double(v));
  }

  /// A count or length: an integer > 0 (a float with an integral value, 4096.0, is accepted, as Python's int()
  /// of a config would).
  config_key<index_t> positive(const char* key) const {
    const node v = get(key);
    if (!v) return config_key<index_t>(name(key));
    const std::optional<index_t> i = A::as_integer(v);
    if (!i) return bad<index_t>(key, "=", A::shown(v), " must be an integer");
    if (*i <= 0) return bad<index_t>(key, "=", *i, " must be > 0");
    return found(key, *i);
  }

  config_key<bool> boolean(const char* key) const {
    const node v = get(key);
    if (!v) return config_key<bool>(name(key));
    if (!A::is_boolean(v)) return bad<bool>(key, "=", A::shown(v), " must be true or false");
    return found(key, A::as_bool(v));
  }

  config_key<std::string> string(const char* key) const {
    const node v = get(key);
    if (!v) return config_key<std::string>(name(key));
    if (!A::is_string(v)) return bad<std::string>(key, "=", A::shown(v), " must be a string, got ", A::type_name(v));
    return found(key, A::as_string(v));
  }

  config_key<std::vector<double>> numbers(const char* key) const {
    using list = std::vector<double>;
    const node v = get(key);
    if (!v) return config_key<list>(name(key));
    if (!A::is_array(v)) return bad<list>(key, "=", A::shown(v), " must be an array of numbers");
    list out;
    out.reserve(A::size(v));
    for (std::size_t i = 0; i < A::size(v); ++i) {
      const node e = A::at(v, i);
      if (!A::is_number(e)) return bad<list>(key, "[", i, "]=", A::shown(e), " must be a number");
      out.push_back(A::as_double(e));
    }
    return found(key, std::move(out));
  }

  config_key<std::vector<index_t>> integers(const char* key) const {
    using list = std::vector<index_t>;
    const node v = get(key);
    if (!v) return config_key<list>(name(key));
    if (!A::is_array(v)) return bad<list>(key, "=", A::shown(v), " must be an array of integers");
    list out;
    for (std::size_t i = 0; i < A::size(v); ++i) {
      const std::optional<index_t> e = A::as_integer(A::at(v, i));
      if (!e || *e < 0) return bad<list>(key, "[", i, "]=", A::shown(A::at(v, i)), " must be an integer >= 0");
      out.push_back(*e);
    }
    return found(key, std::move(out));
  }

  /// The string entries of an array (`architectures`); other entries, or another type, are left out.
  void strings(const char* key, std::vector<std::string>& out) const {
    const node v = get(key);
    if (!v || !A::is_array(v)) return;
    for (std::size_t i = 0; i < A::size(v); ++i)
      if (A::is_string(A::at(v, i))) out.push_back(A::as_string(A::at(v, i)));
  }

  /// An object value (or null: absent) into `out`; another type is an error naming the key.
  status object_or_null(const char* key, node& out) const {
    const node v = get(key);
    if (v && !A::is_object(v))
      return fail(fn, name(key), "=", A::shown(v), " must be an object or null, got ", A::type_name(v));
    out = v;
    return {};
  }
};

/// v5 per-layer rope_parameters: a non-empty object whose values are all objects or null (a flat dict always
/// holds at least one number or string: rope_type, rope_theta, factor...).
template <class A>
bool is_per_layer(typename A::node dict) {
  bool any = false, all = true;
  A::for_each_member(dict, [&](const std::string& key, typename A::node v) {
    any = true;
    if (key == "rope_type" || key == "type" || !(A::is_object(v) || A::is_null(v))) all = false;
  });
  return any && all;
}

template <class A>
std::string layer_list(typename A::node dict) {
  std::string s;
  A::for_each_member(dict, [&](const std::string& key, typename A::node) { s += (s.empty() ? "" : ", ") + key; });
  return s;
}

/// Where a config's model keys are: the root, or `text_config` of a multimodal config (when opt.use_text_config
/// and it is an object); the model_type from there, else from the root.
template <class A>
struct model_root {
  section<A> root;
  section<A> top;
  bool text = false;
  std::string model_type;

  status find(const char* function, typename A::node r, const hf_options& opt) {
    if (!A::is_object(r)) return fail(function, "the config must be a JSON object, got ", A::type_name(r));
    root = section<A>{r, ""};
    typename A::node t{};
    if (opt.use_text_config) POSENC_TRY(root.object_or_null("text_config", t));
    text = static_cast<bool>(t);
    top = text ? section<A>{t, "text_config."} : root;
    config_key<std::string> mt = top.string("model_type");
    if (!mt.given() && text) mt = root.string("model_type");
    POSENC_TRY(mt.error);
    model_type = mt.value.value_or("");
    return {};
  }
};

/// Finds the RoPE keys of `root` (where the model and the scaling dict are, each key's JSON type); what they
/// mean is map_config's (detail/hf_mapping.hpp). `result` is assigned only on success.
template <class A>
status parse(typename A::node root, const hf_options& opt, hf_rope_info& result) {
  using node = typename A::node;
  model_root<A> where;
  POSENC_TRY(where.find(fn, root, opt));
  const section<A>& root_s = where.root;
  const section<A>& top = where.top;
  const bool text = where.text;

  config_keys k;
  k.model_type = where.model_type;
  top.strings("architectures", k.architectures);
  if (text) root_s.strings("architectures", k.architectures);

  // The scaling dict: v5 rope_parameters or v4 rope_scaling (the same object under two names; transformers
  // v5 takes either). Both given and different is ambiguous.
  node rs{};
  node rp{};
  POSENC_TRY(top.object_or_null("rope_scaling", rs));
  POSENC_TRY(top.object_or_null("rope_parameters", rp));
  if (rs && rp && !A::equal(rs, rp))
    return fail(fn, top.name("rope_scaling"), " and ", top.name("rope_parameters"), " are both given and differ; keep one");
  section<A> dict{rp ? rp : rs, top.name(rp ? "rope_parameters" : "rope_scaling") + "."};
  if (dict.obj && is_per_layer<A>(dict.obj)) {
    const std::string prefix = dict.prefix;
    if (opt.layer_type.empty())
      return fail(fn, prefix.substr(0, prefix.size() - 1), " is per layer type (", layer_list<A>(dict.obj),
                  "): set hf_options::layer_type");
    const node layer = A::find(dict.obj, opt.layer_type.c_str());
    if (!layer)
      return fail(fn, "hf_options::layer_type=\"", opt.layer_type, "\" is not in ", prefix.substr(0, prefix.size() - 1),
                  " (", layer_list<A>(dict.obj), ")");
    dict = section<A>{A::is_null(layer) ? node{} : layer, prefix + opt.layer_type + "."};
  }

  model_keys& m = k.top;
  m.num_attention_heads = top.positive("num_attention_heads");
  m.num_key_value_heads = top.positive("num_key_value_heads");
  m.max_position_embeddings = top.positive("max_position_embeddings");
  m.qk_rope_head_dim = top.positive("qk_rope_head_dim");
  m.head_dim = top.positive("head_dim");
  m.hidden_size = top.positive("hidden_size");
  m.partial_rotary_factor = top.number("partial_rotary_factor");
  m.rotary_pct = top.number("rotary_pct");
  m.rope_theta = top.number("rope_theta");
  m.rotary_emb_base = top.number("rotary_emb_base");
  m.rope_interleave = top.boolean("rope_interleave");
  m.original_max_position_embeddings = top.positive("original_max_position_embeddings");

  scaling_keys& d = k.dict;
  d.partial_rotary_factor = dict.number("partial_rotary_factor");
  d.rope_theta = dict.number("rope_theta");
  d.rope_type = dict.string("rope_type");
  d.type = dict.string("type");
  d.original_max_position_embeddings = dict.positive("original_max_position_embeddings");
  d.factor = dict.number("factor");
  d.beta_fast = dict.number("beta_fast");
  d.beta_slow = dict.number("beta_slow");
  d.mscale = dict.number("mscale");
  d.mscale_all_dim = dict.number("mscale_all_dim");
  d.attention_factor = dict.number("attention_factor");
  d.low_freq_factor = dict.number("low_freq_factor");
  d.high_freq_factor = dict.number("high_freq_factor");
  d.truncate = dict.boolean("truncate");
  d.short_factor = dict.numbers("short_factor");
  d.long_factor = dict.numbers("long_factor");
  d.mrope_section = dict.integers("mrope_section");
  d.mrope_interleaved = dict.boolean("mrope_interleaved");

  choices c;
  c.style = opt.style;
  if (opt.yarn == hf_yarn_variant::yarn) c.yarn = rope_yarn_variant::yarn;
  if (opt.yarn == hf_yarn_variant::deepseek) c.yarn = rope_yarn_variant::deepseek;
  c.ntk_policy = opt.ntk_policy;
  c.long_policy = opt.long_policy;

  return map_config(k, c, result);
}

}  // namespace detail::hf
POSENC_END_NAMESPACE
