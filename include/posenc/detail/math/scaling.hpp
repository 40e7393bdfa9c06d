// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// The context-extension formulas, one small function each, shared by host and device code. Each follows
// Hugging Face transformers' modeling_rope_utils.py in exact (double) arithmetic; where ggml or vLLM differ,
// the comment says how.
#pragma once

#include <cmath>
#include <cstdint>

#include "posenc/config.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail::math {

inline constexpr double pi = 3.14159265358979323846264338327950288;

/// NTK-aware base rescale (bloc97, 2023; lucidrains' `base_rescale_factor`): base' = base * a^(R/(R-2)).
POSENC_HOST_DEVICE inline double ntk_base(double base, double a, std::int64_t rotary_dim) {
  const double r = static_cast<double>(rotary_dim);
  return base * std::pow(a, r / (r - 2.0));
}

/// Dynamic NTK (HF `_compute_dynamic_ntk_parameters`): for n > M, base' = base * (F*n/M - (F-1))^(R/(R-2)),
/// else base. vLLM's DynamicNTKScalingRotaryEmbedding evaluates it once at n = M*F.
POSENC_HOST_DEVICE inline double dynamic_ntk_base(double base, double factor, double n, double original_max,
                                                  std::int64_t rotary_dim) {
  if (n <= original_max) return base;
  return ntk_base(base, factor * n / original_max - (factor - 1.0), rotary_dim);
}

/// YaRN's get_mscale (Peng et al. 2023, eq. 22; HF `get_mscale`): 0.1*m*ln(s) + 1 for s > 1, else 1.
POSENC_HOST_DEVICE inline double yarn_mscale(double scale, double mscale = 1.0) {
  return scale <= 1.0 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

/// The pair index at which a frequency makes `rotations` turns over M positions (HF
/// `find_correction_dim`): R * ln(M / (2*pi*rotations)) / (2 ln base).
POSENC_HOST_DEVICE inline double yarn_correction_dim(double rotations, std::int64_t rotary_dim, double base,
                                                     double original_max) {
  return static_cast<double>(rotary_dim) * std::log(original_max / (rotations * 2.0 * pi)) / (2.0 * std::log(base));
}

struct yarn_range {
  double low;
  double high;
};

/// HF `find_correction_range`: floor/ceil when truncating (the default; vLLM and ggml always truncate,
/// gpt-oss does not), clamped to [0, R-1]; low == high is widened by 0.001 as HF's linear_ramp_factor does.
POSENC_HOST_DEVICE inline yarn_range yarn_correction_range(double beta_fast, double beta_slow, std::int64_t rotary_dim,
                                                           double base, double original_max, bool truncate) {
  double low = yarn_correction_dim(beta_fast, rotary_dim, base, original_max);
  double high = yarn_correction_dim(beta_slow, rotary_dim, base, original_max);
  if (truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = low < 0.0 ? 0.0 : low;
  const double top = static_cast<double>(rotary_dim - 1);
  high = high > top ? top : high;
  if (low == high) high += 0.001;
  return {low, high};
}

/// YaRN blend of pair i: ramp = clamp((i - low)/(high - low), 0, 1); w' = w/F * ramp + w * (1 - ramp)
/// (HF: inv_freq_extrapolation_factor = 1 - ramp). ggml blends the angle instead of the frequency, which is
/// the same thing because the angle is linear in w.
POSENC_HOST_DEVICE inline double yarn_inv_freq(double w, double factor, std::int64_t pair, yarn_range r) {
  double ramp = (static_cast<double>(pair) - r.low) / (r.high - r.low);
  ramp = ramp < 0.0 ? 0.0 : (ramp > 1.0 ? 1.0 : ramp);
  return (w / factor) * ramp + w * (1.0 - ramp);
}

/// Llama 3.1 (HF `_compute_llama3_parameters`; Meta's apply_scaling): wavelengths shorter than M/high keep w,
/// longer than M/low take w/F, and the band between blends with s = (M/wavelen - low)/(high - low). With
/// low == high the band is empty and the smoothing is never evaluated (HF would divide by zero there).
POSENC_HOST_DEVICE inline double llama3_inv_freq(double w, double factor, double low_freq_factor,
                                                 double high_freq_factor, double original_max) {
  const double wavelen = 2.0 * pi / w;
  if (wavelen < original_max / high_freq_factor) return w;
  if (wavelen > original_max / low_freq_factor) return w / factor;
  if (low_freq_factor == high_freq_factor) return w;
  const double s = (original_max / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
  return (1.0 - s) * w / factor + s * w;
}

/// LongRoPE default attention factor (HF `_compute_longrope_parameters`, Phi-3): sqrt(1 + ln F / ln M) for
/// F > 1, else 1.
POSENC_HOST_DEVICE inline double longrope_attention_factor(double factor, double original_max) {
  return factor <= 1.0 ? 1.0 : std::sqrt(1.0 + std::log(factor) / std::log(original_max));
}

}  // namespace detail::math
POSENC_END_NAMESPACE
