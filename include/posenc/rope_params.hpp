// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// A model's RoPE metadata in neutral form, and its one mapping to rope_config. The file readers (hf_config.hpp
// for Hugging Face config.json, gguf.hpp for GGUF metadata) only find the values and fill a rope_params; every
// rule about what the values mean (defaults, which keys each scaling needs, derived factors, the checks) lives
// here once. An engine with its own JSON or GGUF parser fills rope_params itself: this header needs neither
// nlohmann/json nor Eigen.
//
// Semantics follow Hugging Face transformers `modeling_rope_utils.py` (v5 `standardize_rope_params` where v4
// and v5 differ); llama.cpp's own knobs (YaRN ext_factor, `rope.scaling.attn_factor`, ggml `rope_freqs`) are
// translated into the same terms, as each field says.
#pragma once

#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/enum_names.hpp"
#include "posenc/detail/math/scaling.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/error.hpp"
#include "posenc/rope_plan.hpp"
#include "posenc/status.hpp"

POSENC_BEGIN_NAMESPACE

/// Which YaRN a "yarn" scaling becomes.
enum class rope_yarn_variant {
  yarn,      ///< rope_scaling_type::yarn (HF `_compute_yarn_parameters`); mscale and mscale_all_dim default to 0
  deepseek,  ///< rope_scaling_type::deepseek_yarn (DeepSeek-V2/V3: magnitude ratio plus a softmax logit scale);
             ///< mscale defaults to 1, mscale_all_dim to 0, as DeepSeek's reference
};
/// The spellings of rope_yarn_variant (posenc/enum_names.hpp: to_string, parse).
template <>
struct enum_names<rope_yarn_variant> {
  /// Canonical name first per value, then accepted aliases.
  static constexpr enum_name<rope_yarn_variant> list[] = {{rope_yarn_variant::yarn, "yarn"},
                                                           {rope_yarn_variant::deepseek, "deepseek"}};
};

/// A model's RoPE metadata as its files state it. Optional fields are absent when the file does not give
/// them; the mapping (rope_config_from_params) supplies Hugging Face's defaults.
///
/// **Example** (an engine's own parser; Llama 3.1 8B):
/// ```
/// posenc::rope_params p;
/// p.head_dim = 128;
/// p.base = 500000.0;
/// p.scaling_type = "llama3";
/// p.factor = 8.0;
/// p.low_freq_factor = 1.0;
/// p.high_freq_factor = 4.0;
/// p.original_max_positions = 8192;
/// const posenc::rope_config cfg = posenc::rope_config_from_params(p);
/// ```
struct rope_params {
  // ---- the rotated window
  index_t head_dim = 0;                ///< D, in (0, rope_params_max_head_dim]
  index_t rotary_dim = 0;              ///< R; 0: int(head_dim * partial_rotary_factor) (Python int(): truncates)
  double partial_rotary_factor = 1.0;  ///< in (0, 1]; used when rotary_dim is 0 (HF partial_rotary_factor)
  index_t rotary_offset = 0;           ///< where the window starts inside the head
  double base = 10000.0;               ///< rope_theta / `<arch>.rope.freq_base`
  rope_style style = rope_style::half_split; ///< how the rotated features pair up

  // ---- scaling
  /// As the file names it: Hugging Face `rope_type` ("default", "linear", "dynamic", "yarn", "longrope",
  /// "llama3"; legacy "su" = longrope, "mrope" = default with mrope_section required) or llama.cpp's
  /// `rope.scaling.type` ("none", "linear", "yarn", "longrope"). "" means default.
  std::string scaling_type = "default";
  std::optional<double> factor;        ///< absent for yarn/longrope: max_position_embeddings / M (HF v5)
  index_t original_max_positions = 0;  ///< M, the pretraining context; 0: max_position_embeddings (HF v5)
  index_t max_position_embeddings = 0; ///< the model's context (GGUF `context_length`); 0: unknown. dynamic's M
  // YaRN
  std::optional<double> beta_fast;     ///< absent or 0: 32 (HF `get("beta_fast") or 32`)
  std::optional<double> beta_slow;     ///< absent or 0: 1
  std::optional<double> mscale;        ///< absent: 0 (yarn) or 1 (deepseek)
  std::optional<double> mscale_all_dim;///< absent: 0
  bool truncate = true;                ///< HF `truncate`; ggml always truncates
  rope_yarn_variant yarn_variant = rope_yarn_variant::yarn; ///< which YaRN a "yarn" scaling_type becomes
  /// llama.cpp `yarn_ext_factor`: the weight of the extrapolated frequencies in YaRN's ramp. Hugging Face's
  /// YaRN is 1 (ggml's default for YaRN); other values are rejected.
  std::optional<double> ext_factor;
  /// HF `attention_factor` (yarn, longrope; llama.cpp's converter writes it to `rope.scaling.yarn_attn_factor`):
  /// replaces the magnitude on cos/sin the scaling would derive.
  std::optional<double> attention_factor;
  /// llama.cpp `rope.scaling.attn_factor` (`hparams.rope_attn_factor`): multiplies the magnitude the scaling
  /// derives (llama-context.cpp: `yarn_attn_factor *= rope_attn_factor`). Only YaRN and LongRoPE plans carry a
  /// magnitude, so any other scaling with a value other than 1 is rejected.
  std::optional<double> attn_factor;
  // Llama 3
  std::optional<double> low_freq_factor;  ///< llama3: required
  std::optional<double> high_freq_factor; ///< llama3: required
  // LongRoPE: rotary_dim/2 entries each
  std::vector<double> short_factor;       ///< longrope: required
  std::vector<double> long_factor;        ///< longrope: required
  // Policies the files do not state
  dynamic_ntk_policy ntk_policy = dynamic_ntk_policy::per_length; ///< dynamic: when the base is re-evaluated
  longrope_policy long_policy = longrope_policy::per_length;      ///< longrope: when the long factors apply

  // ---- MRoPE (Qwen2-VL family): pairs per temporal, height, width axis, summing to rotary_dim/2; empty = none
  std::vector<index_t> mrope_section; ///< pairs per (t, h, w) axis, summing to R/2 (HF `mrope_section`); empty = none
  bool mrope_interleaved = false;  ///< Qwen3-VL (mrope_layout::interleaved); else chunked

  /// Per-pair divisors after the scaling, w_i / f_i (ggml's `rope_freqs` tensor); empty = none.
  std::vector<double> freq_factors;
};

/// The widest head rope_config_from_params accepts (models use 64..512).
inline constexpr index_t rope_params_max_head_dim = index_t{1} << 16;

namespace detail {

/// How a front end names rope_params' fields in its messages, so that an error says which key of which file
/// is wrong ("rope_scaling.factor is missing", "llama.rope.scaling.factor=-2 ..."). The defaults are the
/// rope_params field names.
struct rope_param_names {
  const char* function = "rope_config_from_params";
  std::string context;  ///< put after the function name, e.g. `path="model.gguf": `
  std::string head_dim = "head_dim";
  std::string rotary_dim = "rotary_dim";
  std::string partial_rotary_factor = "partial_rotary_factor";
  std::string scaling_type = "scaling_type";   ///< the key, for "is not supported"
  std::string scaling_label = "scaling_type";  ///< the short name in "(required for rope_type=\"yarn\")"
  std::string factor = "factor";
  std::string original_max_positions = "original_max_positions";
  std::string max_position_embeddings = "max_position_embeddings";
  std::string beta_fast = "beta_fast";
  std::string beta_slow = "beta_slow";
  std::string mscale = "mscale";
  std::string mscale_all_dim = "mscale_all_dim";
  std::string ext_factor = "ext_factor";
  std::string attention_factor = "attention_factor";
  std::string attn_factor = "attn_factor";
  std::string low_freq_factor = "low_freq_factor";
  std::string high_freq_factor = "high_freq_factor";
  std::string short_factor = "short_factor";
  std::string long_factor = "long_factor";
  std::string mrope_section = "mrope_section";
  std::string freq_factors = "freq_factors";
};

inline constexpr const char* rope_known_types =
    "default, linear, dynamic, yarn, longrope, llama3; legacy: su, mrope; llama.cpp: none";

/// The canonical (Hugging Face) name of a scaling type: "" / "none" / "mrope" -> "default", "su" -> "longrope";
/// anything else unchanged (and rejected later if unknown).
inline std::string canonical_scaling_type(const std::string& t) {
  if (t.empty() || t == "none" || t == "default" || t == "mrope") return "default";
  if (t == "su") return "longrope";
  return t;
}

inline std::string format_sections(const std::vector<index_t>& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

/// Where model_head_dim found the head dim, or which fact it lacked.
enum class head_dim_source { rotary_head, head_dim, width_over_heads, no_width, no_heads };

/// A model's head dim, looked up in the order Hugging Face and llama.cpp both use: the rotary head of an MLA
/// model (DeepSeek-V2/V3: HF `qk_rope_head_dim`, GGUF deepseek2's `rope.dimension_count`), else the stated head
/// dim (`head_dim`; `attention.key_length`), else the width over the heads (`hidden_size / num_attention_heads`;
/// `embedding_length / attention.head_count`), in integer division as both. Sets `out` (0 when the width is
/// smaller than the heads) unless the width, or the head count (absent or 0), is missing; the caller words the
/// error, naming its file's keys.
inline head_dim_source model_head_dim(std::optional<index_t> rotary_head, std::optional<index_t> head_dim,
                                      std::optional<index_t> width, std::optional<index_t> heads, index_t& out) {
  if (rotary_head) {
    out = *rotary_head;
    return head_dim_source::rotary_head;
  }
  if (head_dim) {
    out = *head_dim;
    return head_dim_source::head_dim;
  }
  if (!width) return head_dim_source::no_width;
  if (!heads || *heads == 0) return head_dim_source::no_heads;
  out = *width / *heads;
  return head_dim_source::width_over_heads;
}

/// make_rope_plan is the one validator of a rope_config (base, factor ranges, llama3 bands, array lengths, a
/// finite result); its message is reported as it is. A loaded config is valid whatever length it will serve,
/// so it is checked at length 1 (a length-dependent scaling then asks its user for the length at plan time).
inline status check_rope_plan(const rope_config& cfg) noexcept {
  rope_plan plan;
  return try_make_rope_plan(cfg, 1, plan);
}

/// The mapping: rope_params -> rope_config, messages naming fields as `n` says. `canonical_type`, when given,
/// receives the Hugging Face name of the scaling type. `out` is assigned only on success.
inline status rope_params_to_config(const rope_params& p, const rope_param_names& n, rope_config& out,
                                    std::string* canonical_type = nullptr) {
  const char* function = n.function;
  const auto fail = [&](const auto&... parts) { return detail::fail(function, n.context, parts...); };
  const auto missing = [&](const std::string& name, const std::string& why) {
    return fail(name, " is missing (required for ", why, ")");
  };

  if (p.head_dim <= 0) return fail(n.head_dim, "=", p.head_dim, " must be > 0");
  // A bound for values read from files: the plan allocates and computes per pair, so a corrupt head dim of
  // 2^40 must not become a terabyte allocation.
  if (p.head_dim > rope_params_max_head_dim)
    return fail(n.head_dim, "=", p.head_dim, " exceeds ", rope_params_max_head_dim,
                " (no model's head is that wide: a corrupt value?)");
  index_t r = p.rotary_dim;
  if (r == 0) {
    const double prf = p.partial_rotary_factor;
    if (!(std::isfinite(prf) && prf > 0.0 && prf <= 1.0))
      return fail(n.partial_rotary_factor, "=", prf, " must be in (0, 1]");
    r = static_cast<index_t>(static_cast<double>(p.head_dim) * prf);  // Python int(): truncates
    if (r < 2 || r % 2 != 0)
      return fail("rotary dim int(", n.head_dim, " * ", n.partial_rotary_factor, ") = int(", p.head_dim, " * ", prf,
                  ") = ", r, " must be even and >= 2");
  } else if (r < 0) {
    return fail(n.rotary_dim, "=", r, " must be > 0");
  }
  const index_t pairs = r / 2;

  rope_config cfg;
  cfg.head_dim = p.head_dim;
  cfg.rotary_dim = r;
  cfg.rotary_offset = p.rotary_offset;
  cfg.base = p.base;
  cfg.style = p.style;

  const std::string& as_given = p.scaling_type;
  const std::string type = canonical_scaling_type(as_given);
  const std::string why = n.scaling_label + "=\"" + as_given + "\"";
  if (p.original_max_positions < 0)
    return fail(n.original_max_positions, "=", p.original_max_positions, " must be > 0");
  if (p.max_position_embeddings < 0)
    return fail(n.max_position_embeddings, "=", p.max_position_embeddings, " must be >= 0");

  // M: the pretraining context; HF v5 falls back to max_position_embeddings.
  const index_t m = p.original_max_positions > 0 ? p.original_max_positions : p.max_position_embeddings;
  const auto need_m = [&]() -> status {
    if (m == 0) return missing(n.original_max_positions, why + " without " + n.max_position_embeddings);
    return {};
  };
  // yarn and longrope without a factor: max_position_embeddings / M (HF v5; Phi-3's 131072 / 4096 = 32).
  double f = p.factor.value_or(0.0);
  const auto need_implied_factor = [&]() -> status {
    if (p.factor) return {};
    if (p.max_position_embeddings == 0) return missing(n.factor, why + " without " + n.max_position_embeddings);
    f = static_cast<double>(p.max_position_embeddings) / static_cast<double>(m);
    return {};
  };
  const auto check_factors = [&](const std::vector<double>& v, const std::string& name) -> status {
    if (v.empty()) return missing(name, why);
    if (static_cast<index_t>(v.size()) != pairs)
      return fail(name, " has ", v.size(), " entries, rotary_dim/2=", pairs, " needed");
    return {};
  };

  rope_scaling& s = cfg.scaling;
  if (type == "default") {
    s = rope_scaling{};
  } else if (type == "linear") {
    if (!p.factor) return missing(n.factor, why);
    s = rope_scaling::linear(*p.factor);
  } else if (type == "dynamic") {
    if (!p.factor) return missing(n.factor, why);
    // HF's M for dynamic NTK is max_position_embeddings (an original_max_position_embeddings is unused).
    if (p.max_position_embeddings == 0) return missing(n.max_position_embeddings, why);
    s = rope_scaling::dynamic_ntk(*p.factor, p.max_position_embeddings, p.ntk_policy);
  } else if (type == "yarn") {
    POSENC_TRY(need_m());
    POSENC_TRY(need_implied_factor());
    // HF: `get("beta_fast") or 32`, so 0 also means the default.
    const double bf = p.beta_fast.value_or(0.0) == 0.0 ? 32.0 : *p.beta_fast;
    const double bs = p.beta_slow.value_or(0.0) == 0.0 ? 1.0 : *p.beta_slow;
    if (p.yarn_variant == rope_yarn_variant::deepseek) {
      s = rope_scaling::deepseek_yarn(f, m, p.mscale.value_or(1.0), p.mscale_all_dim.value_or(0.0), bf, bs);
    } else {
      s = rope_scaling::yarn(f, m, bf, bs);
      s.mscale = p.mscale.value_or(0.0);
      s.mscale_all_dim = p.mscale_all_dim.value_or(0.0);
    }
    s.attention_factor = p.attention_factor;
    s.truncate = p.truncate;
    if (p.ext_factor && *p.ext_factor != 1.0)
      return fail(n.ext_factor, "=", *p.ext_factor,
                  " is not supported: YaRN as Hugging Face defines it is ext_factor 1 (ggml's default for YaRN)");
  } else if (type == "longrope") {
    POSENC_TRY(check_factors(p.short_factor, n.short_factor));
    POSENC_TRY(check_factors(p.long_factor, n.long_factor));
    POSENC_TRY(need_m());
    POSENC_TRY(need_implied_factor());
    s = rope_scaling::longrope(p.short_factor, p.long_factor, m, f, p.long_policy);
    s.attention_factor = p.attention_factor;
  } else if (type == "llama3") {
    if (!p.factor) return missing(n.factor, why);
    if (!p.low_freq_factor) return missing(n.low_freq_factor, why);
    if (!p.high_freq_factor) return missing(n.high_freq_factor, why);
    POSENC_TRY(need_m());
    s = rope_scaling::llama3(*p.factor, *p.low_freq_factor, *p.high_freq_factor, m);
  } else {
    return fail(n.scaling_type, "=\"", as_given, "\" is not supported (known: ", rope_known_types, ")");
  }
  if (p.ext_factor && *p.ext_factor != 0.0 && type != "yarn")
    return fail(n.ext_factor, "=", *p.ext_factor, " is only meaningful with YaRN, not ", why);

  // llama.cpp's extra multiplier on cos/sin, folded into the one magnitude a YaRN or LongRoPE plan carries.
  if (p.attn_factor && *p.attn_factor != 1.0) {
    const double a = *p.attn_factor;
    if (!(std::isfinite(a) && a > 0.0)) return fail(n.attn_factor, "=", a, " must be finite and > 0");
    const bool is_yarn = s.type == rope_scaling_type::yarn || s.type == rope_scaling_type::deepseek_yarn;
    if (!is_yarn && s.type != rope_scaling_type::longrope)
      return fail(n.attn_factor, "=", a, " needs a YaRN or LongRoPE scaling (the only plans with a magnitude on cos/sin), not ",
                  why);
    // The magnitude make_rope_plan would derive (rope_plan.hpp), times a.
    double derived = 1.0;
    if (s.attention_factor) derived = *s.attention_factor;
    else if (s.type == rope_scaling_type::longrope) derived = math::longrope_attention_factor(s.factor, static_cast<double>(m));
    else if (s.type == rope_scaling_type::deepseek_yarn || (s.mscale > 0.0 && s.mscale_all_dim > 0.0))
      derived = math::yarn_mscale(s.factor, s.mscale) / math::yarn_mscale(s.factor, s.mscale_all_dim);
    else derived = math::yarn_mscale(s.factor);
    s.attention_factor = derived * a;
  }

  // Multimodal sections (any type; legacy "mrope" requires them).
  if (as_given == "mrope" && p.mrope_section.empty()) return missing(n.mrope_section, why);
  if (!p.mrope_section.empty()) {
    index_t sum = 0;
    bool negative = false;
    for (index_t v : p.mrope_section) {
      negative = negative || v < 0;
      // Capped past pairs: a file's sections can be anything, and their int64 sum would overflow.
      if (v >= 0 && sum <= pairs) sum += v > pairs ? pairs + 1 : v;
    }
    if (negative || p.mrope_section.size() != 3 || sum != pairs)
      return fail(n.mrope_section, "=", format_sections(p.mrope_section),
                  " must be 3 sections summing to rotary_dim/2=", pairs, ", each >= 0");
  }

  if (!p.freq_factors.empty() && static_cast<index_t>(p.freq_factors.size()) != pairs)
    return fail(n.freq_factors, " has ", p.freq_factors.size(), " entries, rotary_dim/2=", pairs, " needed");
  cfg.freq_factors = p.freq_factors;

  if (status checked = check_rope_plan(cfg); !checked) {
    if (n.context.empty()) return checked;
    return make_status(checked.code(), function, n.context, checked.message());
  }
  out = std::move(cfg);
  if (canonical_type != nullptr) *canonical_type = type;
  return {};
}

}  // namespace detail

/// The rope_config a model's RoPE metadata describes (see rope_params for each field's source and default).
/// Rules, after Hugging Face `modeling_rope_utils.py` (v5) and llama.cpp where noted: R = rotary_dim, else
/// int(head_dim * partial_rotary_factor); M = original_max_positions, else max_position_embeddings.
/// - "default" (also "", "none", "mrope"): no scaling. "linear": linear(factor).
/// - "dynamic": dynamic_ntk(factor, max_position_embeddings, ntk_policy) (HF's M for dynamic NTK).
/// - "yarn": factor (default max_position_embeddings / M), M, beta_fast/beta_slow (absent or 0: 32/1), mscale,
///   mscale_all_dim, attention_factor, truncate; yarn_variant picks deepseek_yarn. ext_factor must be 1.
/// - "longrope" ("su"): short/long factors (R/2 each), M, factor (default max_position_embeddings / M),
///   attention_factor, long_policy. "llama3": factor, low_freq_factor, high_freq_factor, M.
/// - attn_factor (llama.cpp) multiplies the YaRN/LongRoPE magnitude; freq_factors divide each frequency.
/// Returns ok and sets `out`, or (out unchanged) an invalid_argument status naming the field: a required
/// field missing, an unknown scaling type, a partial factor outside (0, 1] or giving an odd R, factor arrays or
/// mrope_section of the wrong length, ext_factor != 1, attn_factor on a scaling without magnitude, and
/// everything make_rope_plan rejects (reported with its message); out_of_memory if an allocation fails.
///
/// **Example**
/// ```
/// posenc::rope_config cfg;
/// if (posenc::status s = posenc::try_rope_config_from_params(params, cfg); !s) return s;
/// ```
inline status try_rope_config_from_params(const rope_params& params, rope_config& out) noexcept {
  return detail::guard_alloc("rope_config_from_params", [&] {
    return detail::rope_params_to_config(params, detail::rope_param_names{}, out);
  });
}

/// The throwing form of try_rope_config_from_params: argument_error with the same message.
inline rope_config rope_config_from_params(const rope_params& params) {
  rope_config cfg;
  detail::throw_if_error(try_rope_config_from_params(params, cfg));
  return cfg;
}

POSENC_END_NAMESPACE
