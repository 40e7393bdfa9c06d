// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// Frequency plans. Every RoPE variant in use is one `rope_plan`: a frequency per rotated pair, a magnitude
// multiplying cos and sin, a logit scale for the attention softmax where a model needs one, the pair layout
// and the rotated window inside the head. Each context-extension method only builds a plan.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/enum_names.hpp"
#include "posenc/detail/check.hpp"
#include "posenc/detail/math/inv_freq.hpp"
#include "posenc/detail/math/scaling.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/status.hpp"
#include "posenc/tensor_view.hpp"
#include "posenc/types.hpp"

POSENC_BEGIN_NAMESPACE

enum class rope_scaling_type {
  none,           ///< w_i = base^(-2i/R)
  linear,         ///< position interpolation (Chen et al. 2023): w_i / factor
  ntk,            ///< NTK-aware: base * factor^(R/(R-2))
  dynamic_ntk,    ///< NTK-aware with a factor that grows with the sequence length
  yarn,           ///< YaRN (Peng et al. 2023), as HF `_compute_yarn_parameters`
  deepseek_yarn,  ///< YaRN with DeepSeek-V2/V3's mscale ratio and softmax (logit) scale
  llama3,         ///< Llama 3.1 wavelength bands
  longrope,       ///< LongRoPE / Phi-3 per-pair short and long factors
};
/// The spellings of rope_scaling_type (posenc/enum_names.hpp: to_string, parse).
template <>
struct enum_names<rope_scaling_type> {
  /// Canonical name first per value, then accepted aliases (Hugging Face's rope_type names "default", "dynamic").
  static constexpr enum_name<rope_scaling_type> list[] = {
      {rope_scaling_type::none, "none"},         {rope_scaling_type::linear, "linear"},
      {rope_scaling_type::ntk, "ntk"},           {rope_scaling_type::dynamic_ntk, "dynamic_ntk"},
      {rope_scaling_type::yarn, "yarn"},         {rope_scaling_type::deepseek_yarn, "deepseek_yarn"},
      {rope_scaling_type::llama3, "llama3"},     {rope_scaling_type::longrope, "longrope"},
      {rope_scaling_type::none, "default"},      {rope_scaling_type::dynamic_ntk, "dynamic"}};
};

/// When dynamic NTK re-evaluates its base.
enum class dynamic_ntk_policy {
  per_length,    ///< Hugging Face: from the current length n (n = max position + 1); unchanged while n <= M
  fixed_at_max,  ///< vLLM: once, at n = M * factor, for every length
};
/// The spellings of dynamic_ntk_policy (posenc/enum_names.hpp: to_string, parse).
template <>
struct enum_names<dynamic_ntk_policy> {
  /// Canonical name first per value, then accepted aliases.
  static constexpr enum_name<dynamic_ntk_policy> list[] = {{dynamic_ntk_policy::per_length, "per_length"},
                                                            {dynamic_ntk_policy::fixed_at_max, "fixed_at_max"}};
};

/// When LongRoPE uses its long factors. n = max position + 1 of the positions the plan serves.
enum class longrope_policy {
  per_length,     ///< Hugging Face (and the CLI): long when n > M
  past_original,  ///< vLLM Phi3LongRoPEScaledRotaryEmbedding: long when some position > M, i.e. n > M + 1
  always_short,
  always_long,
};
/// The spellings of longrope_policy (posenc/enum_names.hpp: to_string, parse).
template <>
struct enum_names<longrope_policy> {
  /// Canonical name first per value, then accepted aliases.
  static constexpr enum_name<longrope_policy> list[] = {
      {longrope_policy::per_length, "per_length"}, {longrope_policy::past_original, "past_original"},
      {longrope_policy::always_short, "always_short"}, {longrope_policy::always_long, "always_long"}};
};

/// The scaling part of a RoPE configuration. Build one with the named constructors; fields not used by
/// `type` are ignored. Field names follow Hugging Face `rope_scaling` keys.
struct rope_scaling {
  rope_scaling_type type = rope_scaling_type::none; ///< the method; the fields it does not use are ignored
  double factor = 1.0;                  ///< linear, ntk (base_rescale_factor), dynamic_ntk, yarn, llama3, longrope
  index_t original_max_positions = 0;   ///< M: dynamic_ntk, yarn, llama3, longrope
  dynamic_ntk_policy ntk_policy = dynamic_ntk_policy::per_length; ///< dynamic_ntk: when the base is re-evaluated
  double beta_fast = 32.0;              ///< yarn
  double beta_slow = 1.0;               ///< yarn
  bool truncate = true;                 ///< yarn: floor/ceil the correction range (HF default)
  double mscale = 0.0;                  ///< yarn / deepseek_yarn; 0 = absent
  double mscale_all_dim = 0.0;          ///< yarn / deepseek_yarn; 0 = absent
  std::optional<double> attention_factor;  ///< yarn, deepseek_yarn, longrope: overrides the derived magnitude
  double low_freq_factor = 1.0;         ///< llama3
  double high_freq_factor = 4.0;        ///< llama3
  std::vector<double> short_factor;     ///< longrope, R/2 entries
  std::vector<double> long_factor;      ///< longrope, R/2 entries
  longrope_policy long_policy = longrope_policy::per_length; ///< longrope: when the long factors apply

  /// Position interpolation: w_i / factor (Chen et al. 2023; HF "linear").
  static rope_scaling linear(double factor) {
    rope_scaling s;
    s.type = rope_scaling_type::linear;
    s.factor = factor;
    return s;
  }
  /// NTK-aware base rescale: base' = base * a^(R/(R-2)) (lucidrains `base_rescale_factor`).
  static rope_scaling ntk(double base_rescale_factor) {
    rope_scaling s;
    s.type = rope_scaling_type::ntk;
    s.factor = base_rescale_factor;
    return s;
  }
  /// Dynamic NTK (HF "dynamic"): base' = base * (F*n/M - (F-1))^(R/(R-2)) for n > M.
  static rope_scaling dynamic_ntk(double factor, index_t original_max_positions,
                                  dynamic_ntk_policy policy = dynamic_ntk_policy::per_length) {
    rope_scaling s;
    s.type = rope_scaling_type::dynamic_ntk;
    s.factor = factor;
    s.original_max_positions = original_max_positions;
    s.ntk_policy = policy;
    return s;
  }
  /// YaRN (HF "yarn"): magnitude 0.1 ln F + 1 unless mscale/mscale_all_dim or attention_factor say otherwise.
  static rope_scaling yarn(double factor, index_t original_max_positions, double beta_fast = 32.0,
                           double beta_slow = 1.0) {
    rope_scaling s;
    s.type = rope_scaling_type::yarn;
    s.factor = factor;
    s.original_max_positions = original_max_positions;
    s.beta_fast = beta_fast;
    s.beta_slow = beta_slow;
    return s;
  }
  /// DeepSeek-V2/V3 YaRN: frequencies as YaRN, magnitude mscale(F, mscale)/mscale(F, mscale_all_dim), and a
  /// logit scale mscale(F, mscale_all_dim)^2 for the softmax (DeepSeek-V3 modeling; vLLM DeepseekScaling).
  static rope_scaling deepseek_yarn(double factor, index_t original_max_positions, double mscale = 1.0,
                                    double mscale_all_dim = 0.0, double beta_fast = 32.0, double beta_slow = 1.0) {
    rope_scaling s = yarn(factor, original_max_positions, beta_fast, beta_slow);
    s.type = rope_scaling_type::deepseek_yarn;
    s.mscale = mscale;
    s.mscale_all_dim = mscale_all_dim;
    return s;
  }
  /// Llama 3.1 (HF "llama3"): factor 8, low 1, high 4, M 8192 for Llama 3.1.
  static rope_scaling llama3(double factor, double low_freq_factor, double high_freq_factor,
                             index_t original_max_positions) {
    rope_scaling s;
    s.type = rope_scaling_type::llama3;
    s.factor = factor;
    s.low_freq_factor = low_freq_factor;
    s.high_freq_factor = high_freq_factor;
    s.original_max_positions = original_max_positions;
    return s;
  }
  /// LongRoPE (HF "longrope", Phi-3): w_i / ext_i with ext = short or long factors; `factor` (HF: max
  /// positions / original) only sets the default magnitude sqrt(1 + ln F / ln M).
  static rope_scaling longrope(std::vector<double> short_factor, std::vector<double> long_factor,
                               index_t original_max_positions, double factor,
                               longrope_policy policy = longrope_policy::per_length) {
    rope_scaling s;
    s.type = rope_scaling_type::longrope;
    s.short_factor = std::move(short_factor);
    s.long_factor = std::move(long_factor);
    s.original_max_positions = original_max_positions;
    s.factor = factor;
    s.long_policy = policy;
    return s;
  }
};

/// True when the frequencies of `s` depend on the length of the sequences the plan serves, so that
/// make_rope_plan needs a stated length: dynamic NTK under the per_length policy (Hugging Face re-evaluates the
/// base per forward) and LongRoPE under per_length or past_original (short or long factors by length).
inline bool depends_on_length(const rope_scaling& s) noexcept {
  switch (s.type) {
    case rope_scaling_type::dynamic_ntk: return s.ntk_policy == dynamic_ntk_policy::per_length;
    case rope_scaling_type::longrope:
      return s.long_policy == longrope_policy::per_length || s.long_policy == longrope_policy::past_original;
    default: return false;
  }
}

/// Where the rotated window sits in a head and how it pairs features: the one description of a RoPE layout,
/// shared by rope_config (which adds the frequencies), rope_plan::geometry() and rope_table_view (which adds an
/// engine's own cos/sin table).
struct rope_geometry {
  index_t head_dim = 0;       ///< D, the head dim (extent 3 of x); > 0
  index_t rotary_dim = 0;     ///< R, even; 0 means head_dim (HF: head_dim * partial_rotary_factor)
  index_t rotary_offset = 0;  ///< where the rotated window [rotary_offset, rotary_offset + R) starts in the head
  rope_style style = rope_style::half_split; ///< how the rotated features pair up

  /// R with 0 resolved to head_dim.
  constexpr index_t rotated_dim() const noexcept { return rotary_dim ? rotary_dim : head_dim; }
  /// R/2, the rotated pairs.
  constexpr index_t pairs() const noexcept { return rotated_dim() / 2; }
};

/// A model's RoPE configuration, its geometry plus the frequencies; `make_rope_plan` turns it into a plan.
struct rope_config : rope_geometry {
  double base = 10000.0;      ///< rope_theta
  rope_scaling scaling;                      ///< the context extension; none by default
  /// Per-pair divisors applied after the scaling, w_i / f_i (ggml's `rope_freqs` tensor); empty = none.
  std::vector<double> freq_factors;
};

class rope_plan;
namespace detail {
inline status make_rope_plan_into(const rope_config& cfg, index_t seq_len, rope_plan& out, bool* changed) noexcept;
}  // namespace detail

/// A resolved frequency plan: what the kernels consume. Immutable once built; validated on construction, so
/// the apply functions do not re-check it.
class rope_plan {
 public:
  rope_plan() = default;

  /// A plan from explicit frequencies (R/2 of them): for variants the named scalings do not cover.
  /// Throws argument_error unless head_dim > 0, inv_freq is non-empty with every |w| <= 2^960, the window
  /// [rotary_offset, rotary_offset + 2*inv_freq.size()) fits the head, and magnitude/logit_scale are finite > 0.
  rope_plan(index_t head_dim, std::vector<double> inv_freq, rope_style style, index_t rotary_offset = 0,
            double magnitude = 1.0, double logit_scale = 1.0) {
    detail::throw_if_error(try_assign(head_dim, std::move(inv_freq), style, rotary_offset, magnitude, logit_scale));
  }

  /// The constructor without exceptions: `out` is replaced on success, untouched on error.
  static status try_create(index_t head_dim, std::vector<double> inv_freq, rope_style style, index_t rotary_offset,
                           double magnitude, double logit_scale, rope_plan& out) noexcept {
    return out.try_assign(head_dim, std::move(inv_freq), style, rotary_offset, magnitude, logit_scale);
  }

  /// D, the head dim the plan applies to (extent 3 of x).
  index_t head_dim() const { return head_dim_; }
  /// R = 2 * pairs(), the rotated features (0 only for an empty plan).
  index_t rotary_dim() const { return static_cast<index_t>(2 * inv_freq_.size()); }
  /// Where the rotated window [rotary_offset, rotary_offset + R) starts inside the head.
  index_t rotary_offset() const { return rotary_offset_; }
  /// R/2: the rotated pairs, one frequency each.
  index_t pairs() const { return static_cast<index_t>(inv_freq_.size()); }
  /// How the rotated features pair up.
  rope_style style() const { return style_; }
  /// Multiplies cos and sin (YaRN/LongRoPE "attention factor").
  double magnitude() const { return magnitude_; }
  /// Multiplies the attention logits q.k/sqrt(d) (DeepSeek YaRN's mscale^2); 1 for every other variant.
  double logit_scale() const { return logit_scale_; }
  /// w_i, i = 0 .. R/2-1, in radians per position, after the scaling and freq_factors.
  const std::vector<double>& inv_freq() const { return inv_freq_; }
  /// Head dim, window and style: {head_dim(), rotary_dim(), rotary_offset(), style()}.
  rope_geometry geometry() const { return {head_dim_, rotary_dim(), rotary_offset_, style_}; }
  /// True for a default-constructed plan (no pairs); the apply functions reject it.
  bool empty() const { return inv_freq_.empty(); }

 private:
  friend status detail::make_rope_plan_into(const rope_config&, index_t, rope_plan&, bool*) noexcept;

  status try_assign(index_t head_dim, std::vector<double> inv_freq, rope_style style, index_t rotary_offset,
              double magnitude, double logit_scale) {
    constexpr const char* fn = "rope_plan";
    if (head_dim <= 0) return detail::fail(fn, "head_dim=", head_dim, " must be > 0");
    if (inv_freq.empty()) return detail::fail(fn, "inv_freq is empty (rotary_dim=0)");
    POSENC_TRY(detail::check_window(fn, head_dim, static_cast<index_t>(2 * inv_freq.size()), rotary_offset));
    // |w| <= 2^960 keeps p * w finite for every position p < 2^63, so no angle is ever infinite (a scaling factor
    // like 1e-300 would otherwise give sin(inf) = NaN far into a sequence).
    for (std::size_t i = 0; i < inv_freq.size(); ++i)
      if (!(std::fabs(inv_freq[i]) <= 0x1p960))
        return detail::fail(fn, "inv_freq[", i, "]=", inv_freq[i], " is not finite or above 2^960 (p * w must stay finite)");
    if (!(std::isfinite(magnitude) && magnitude > 0.0))
      return detail::fail(fn, "magnitude=", magnitude, " must be finite and > 0");
    if (!(std::isfinite(logit_scale) && logit_scale > 0.0))
      return detail::fail(fn, "logit_scale=", logit_scale, " must be finite and > 0");
    head_dim_ = head_dim;
    inv_freq_ = std::move(inv_freq);
    style_ = style;
    rotary_offset_ = rotary_offset;
    magnitude_ = magnitude;
    logit_scale_ = logit_scale;
    return {};
  }

  index_t head_dim_ = 0;
  std::vector<double> inv_freq_;
  rope_style style_ = rope_style::half_split;
  index_t rotary_offset_ = 0;
  double magnitude_ = 1.0;
  double logit_scale_ = 1.0;
};

namespace detail {

inline bool finite_positive(double v) { return std::isfinite(v) && v > 0.0; }

inline status check_factor_array(const char* fn, const char* name, const std::vector<double>& f, index_t pairs) {
  if (static_cast<index_t>(f.size()) != pairs) return fail(fn, name, ".size()=", f.size(), " must equal rotary_dim/2=", pairs);
  for (std::size_t i = 0; i < f.size(); ++i)
    if (!finite_positive(f[i])) return fail(fn, name, "[", i, "]=", f[i], " must be finite and > 0");
  return {};
}

}  // namespace detail


namespace detail {

// try_make_rope_plan's body; `changed`, when given, reports whether the frequencies, magnitude or geometry of
// `out` moved (try_replan_rope).
inline status make_rope_plan_into(const rope_config& cfg, index_t seq_len, rope_plan& out, bool* changed) noexcept {
  return detail::guard_alloc("make_rope_plan", [&]() -> status {
  using namespace detail;
  constexpr const char* fn = "make_rope_plan";
  const rope_scaling& s = cfg.scaling;
  const index_t d = cfg.head_dim;
  const index_t r = cfg.rotary_dim == 0 ? d : cfg.rotary_dim;
  if (d > 0 && cfg.rotary_dim == 0 && d % 2 != 0)
    return fail(fn, "rotary_dim=0 means head_dim=", d, ", which is odd: set an even rotary_dim");
  POSENC_TRY(check_window(fn, d, r, cfg.rotary_offset));
  POSENC_TRY(check_base(fn, cfg.base));
  if (seq_len < 0) return fail(fn, "seq_len=", seq_len, " must be >= 0");
  const index_t pairs = r / 2;
  const auto needs_factor = s.type != rope_scaling_type::none;
  if (needs_factor && !finite_positive(s.factor))
    return fail(fn, "scaling.factor=", s.factor, " must be finite and > 0");
  const bool needs_m = s.type == rope_scaling_type::dynamic_ntk || s.type == rope_scaling_type::yarn ||
                       s.type == rope_scaling_type::deepseek_yarn || s.type == rope_scaling_type::llama3 ||
                       s.type == rope_scaling_type::longrope;
  if (needs_m && s.original_max_positions <= 0)
    return fail(fn, "scaling.original_max_positions=", s.original_max_positions, " must be > 0");
  if ((s.type == rope_scaling_type::ntk || s.type == rope_scaling_type::dynamic_ntk) && r == 2)
    return fail(fn, "rotary_dim=2: NTK scaling needs rotary_dim > 2 (exponent R/(R-2))");
  const bool is_yarn = s.type == rope_scaling_type::yarn || s.type == rope_scaling_type::deepseek_yarn;
  if (is_yarn) {
    if (!finite_positive(s.beta_fast)) return fail(fn, "scaling.beta_fast=", s.beta_fast, " must be finite and > 0");
    if (!finite_positive(s.beta_slow)) return fail(fn, "scaling.beta_slow=", s.beta_slow, " must be finite and > 0");
    if (!(std::isfinite(s.mscale) && s.mscale >= 0.0)) return fail(fn, "scaling.mscale=", s.mscale, " must be finite and >= 0");
    if (!(std::isfinite(s.mscale_all_dim) && s.mscale_all_dim >= 0.0))
      return fail(fn, "scaling.mscale_all_dim=", s.mscale_all_dim, " must be finite and >= 0");
  }
  if (s.attention_factor && (is_yarn || s.type == rope_scaling_type::longrope) && !finite_positive(*s.attention_factor))
    return fail(fn, "scaling.attention_factor=", *s.attention_factor, " must be finite and > 0");
  if (s.type == rope_scaling_type::llama3) {
    if (!finite_positive(s.low_freq_factor)) return fail(fn, "scaling.low_freq_factor=", s.low_freq_factor, " must be finite and > 0");
    if (!finite_positive(s.high_freq_factor)) return fail(fn, "scaling.high_freq_factor=", s.high_freq_factor, " must be finite and > 0");
    if (s.low_freq_factor > s.high_freq_factor)
      return fail(fn, "scaling.low_freq_factor=", s.low_freq_factor, " exceeds high_freq_factor=", s.high_freq_factor);
  }
  if (s.type == rope_scaling_type::longrope) {
    POSENC_TRY(check_factor_array(fn, "scaling.short_factor", s.short_factor, pairs));
    POSENC_TRY(check_factor_array(fn, "scaling.long_factor", s.long_factor, pairs));
  }
  if (!cfg.freq_factors.empty()) POSENC_TRY(check_factor_array(fn, "freq_factors", cfg.freq_factors, pairs));

  // A length-dependent plan built without a length would silently take the unscaled base (dynamic NTK) or the
  // short factors (LongRoPE) at every position: errors of order 1 in q.k far past M, and no message.
  if (seq_len == 0 && depends_on_length(s)) {
    if (s.type == rope_scaling_type::dynamic_ntk)
      return fail(fn, "scaling dynamic_ntk (policy per_length) depends on the sequence length and no seq_len was "
                      "given: pass seq_len = the largest position + 1 the plan serves (as Hugging Face per "
                      "forward; rebuild when it grows), or choose the policy fixed_at_max (as vLLM: the base of "
                      "length M * factor for every length)");
    return fail(fn, "scaling longrope (policy ", s.long_policy == longrope_policy::per_length ? "per_length" : "past_original",
                ") depends on the sequence length and no seq_len was given: pass seq_len = the largest position + 1 "
                "the plan serves (short factors while it is <= original_max_positions, long past it), or choose "
                "the policy always_short or always_long");
  }

  const auto m = static_cast<double>(s.original_max_positions);
  double base = cfg.base;
  double magnitude = 1.0;
  double logit_scale = 1.0;
  switch (s.type) {
    case rope_scaling_type::ntk: base = math::ntk_base(base, s.factor, r); break;
    case rope_scaling_type::dynamic_ntk: {
      const double n = s.ntk_policy == dynamic_ntk_policy::fixed_at_max ? m * s.factor : static_cast<double>(seq_len);
      base = math::dynamic_ntk_base(base, s.factor, n, m, r);
      break;
    }
    case rope_scaling_type::yarn:
      if (s.attention_factor) magnitude = *s.attention_factor;
      else if (s.mscale > 0.0 && s.mscale_all_dim > 0.0)
        magnitude = math::yarn_mscale(s.factor, s.mscale) / math::yarn_mscale(s.factor, s.mscale_all_dim);
      else magnitude = math::yarn_mscale(s.factor);
      break;
    case rope_scaling_type::deepseek_yarn:
      // mscale(F, 0) = 1: an absent mscale_all_dim leaves the numerator alone, as in DeepSeek's reference.
      magnitude = s.attention_factor ? *s.attention_factor
                                     : math::yarn_mscale(s.factor, s.mscale) / math::yarn_mscale(s.factor, s.mscale_all_dim);
      logit_scale = math::yarn_mscale(s.factor, s.mscale_all_dim) * math::yarn_mscale(s.factor, s.mscale_all_dim);
      break;
    case rope_scaling_type::longrope:
      magnitude = s.attention_factor ? *s.attention_factor : math::longrope_attention_factor(s.factor, m);
      break;
    default: break;
  }

  bool use_long = false;
  if (s.type == rope_scaling_type::longrope) {
    switch (s.long_policy) {
      case longrope_policy::per_length: use_long = static_cast<double>(seq_len) > m; break;
      case longrope_policy::past_original: use_long = static_cast<double>(seq_len) > m + 1.0; break;
      case longrope_policy::always_short: use_long = false; break;
      case longrope_policy::always_long: use_long = true; break;
    }
  }
  math::yarn_range range{0.0, 1.0};
  if (is_yarn) range = math::yarn_correction_range(s.beta_fast, s.beta_slow, r, base, m, s.truncate);

  const auto freq = [&](index_t i) {
    double f = math::inv_freq(base, i, r);
    switch (s.type) {
      case rope_scaling_type::linear: f /= s.factor; break;
      case rope_scaling_type::yarn:
      case rope_scaling_type::deepseek_yarn: f = math::yarn_inv_freq(f, s.factor, i, range); break;
      case rope_scaling_type::llama3:
        f = math::llama3_inv_freq(f, s.factor, s.low_freq_factor, s.high_freq_factor, m);
        break;
      case rope_scaling_type::longrope: f /= (use_long ? s.long_factor : s.short_factor)[static_cast<std::size_t>(i)]; break;
      default: break;
    }
    if (!cfg.freq_factors.empty()) f /= cfg.freq_factors[static_cast<std::size_t>(i)];
    return f;
  };
  // Checked before `out` is touched (a denormal divisor can overflow a frequency), so a rejected config
  // leaves `out` as it was; the second pass then reuses out's storage.
  for (index_t i = 0; i < pairs; ++i)
    if (!std::isfinite(freq(i))) return fail(fn, "frequency of pair ", i, "=", freq(i), " is not finite");
  if (!std::isfinite(magnitude)) return fail(fn, "magnitude=", magnitude, " is not finite");
  if (!std::isfinite(logit_scale)) return fail(fn, "logit_scale=", logit_scale, " is not finite");
  bool moved = out.empty() || out.head_dim_ != d || out.style_ != cfg.style || out.rotary_offset_ != cfg.rotary_offset ||
               out.magnitude_ != magnitude || out.logit_scale_ != logit_scale ||
               out.inv_freq_.size() != static_cast<std::size_t>(pairs);
  std::vector<double> w = std::move(out.inv_freq_);
  w.resize(static_cast<std::size_t>(pairs));
  for (index_t i = 0; i < pairs; ++i) {
    const double f = freq(i);
    moved = moved || w[static_cast<std::size_t>(i)] != f;
    w[static_cast<std::size_t>(i)] = f;
  }
  if (changed) *changed = moved;
  return out.try_assign(d, std::move(w), cfg.style, cfg.rotary_offset, magnitude, logit_scale);
  });
}
}  // namespace detail

/// Builds the plan of `cfg` for sequences whose largest position is n - 1 (`seq_len` = n), into `out`,
/// reusing its storage: only dynamic NTK (per_length) and LongRoPE (per_length, past_original) depend on n
/// (depends_on_length), and an engine can rebuild them when n crosses M without allocating (try_replan_rope).
/// seq_len = 0 states no length, which those scalings reject: there is no silent default. Formulas: HF
/// modeling_rope_utils.py in double (see detail/math/scaling.hpp for each, and where vLLM and ggml differ).
/// Returns an invalid_argument status (make_rope_plan throws argument_error), leaving `out` unchanged, on:
/// head_dim <= 0; rotary_dim odd, < 0 or past the head;
/// base not finite or <= 1; a factor, beta, mscale or attention factor that is not finite or not > 0 (mscale
/// >= 0); original_max_positions <= 0 where needed; ntk/dynamic NTK with rotary_dim 2 (R/(R-2) undefined);
/// llama3 low_freq_factor > high_freq_factor; factor arrays of the wrong length; seq_len < 0; seq_len = 0 with a
/// length-dependent scaling.
inline status try_make_rope_plan(const rope_config& cfg, index_t seq_len, rope_plan& out) noexcept {
  return detail::make_rope_plan_into(cfg, seq_len, out, nullptr);
}

/// The apply-time form of a length-dependent scaling, as Hugging Face re-plans per forward: rebuilds `plan` for
/// a call whose positions reach `seq_len` - 1 (the largest position + 1 of everything the plan will serve, cached
/// keys included) and sets `changed` when its frequencies or magnitude moved: keys cached under the old plan
/// then hold the old rotation and must be re-rotated (rerotate_rope) or recomputed before they are attended.
/// Reuses the plan's storage (no allocation once it has its size); `plan` is unchanged on error.
///
/// **Example** (dynamic NTK, Hugging Face policy)
/// ```
/// bool changed = false;
/// posenc::rope_plan next = plan;                    // keep the old one for the re-rotation
/// if (posenc::try_replan_rope(cfg, past_len + n_new, next, changed).ok() && changed)
///   posenc::rerotate_rope(plan, next, k_cache, posenc::positions::offset(0));
/// ```
inline status try_replan_rope(const rope_config& cfg, index_t seq_len, rope_plan& plan, bool& changed) noexcept {
  bool moved = false;
  status st = detail::make_rope_plan_into(cfg, seq_len, plan, &moved);
  changed = st.ok() && moved;
  return st;
}

/// make_rope_plan into `out`, throwing argument_error (see try_make_rope_plan).
inline void make_rope_plan(const rope_config& cfg, index_t seq_len, rope_plan& out) {
  detail::throw_if_error(try_make_rope_plan(cfg, seq_len, out));
}

/// The plan of `cfg` for sequences of length `seq_len` (see the overload that fills an existing plan). The
/// default seq_len = 0 states no length: accepted for every scaling whose frequencies do not depend on it
/// (depends_on_length), an argument_error for dynamic NTK (per_length) and LongRoPE (per_length, past_original).
///
/// **Example**
/// ```
/// posenc::rope_config cfg;                       // Llama 3.1 8B
/// cfg.head_dim = 128;
/// cfg.base = 500000.0;
/// cfg.scaling = posenc::rope_scaling::llama3(8.0, 1.0, 4.0, 8192);
/// const posenc::rope_plan plan = posenc::make_rope_plan(cfg);
/// ```
inline rope_plan make_rope_plan(const rope_config& cfg, index_t seq_len = 0) {
  rope_plan p;
  make_rope_plan(cfg, seq_len, p);
  return p;
}

POSENC_END_NAMESPACE
