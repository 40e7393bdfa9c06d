// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// The sinusoidal encoding's configuration and its checks, apart from the kernels, so posenc/sinusoidal.hpp
// (CPU) and posenc/cuda/sinusoidal.cuh (GPU) share them. The encoding is documented in posenc/sinusoidal.hpp.
#pragma once

#include <optional>

#include "posenc/config.hpp"
#include "posenc/enum_names.hpp"
#include "posenc/detail/check.hpp"
#include "posenc/detail/kernels/params.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/status.hpp"
#include "posenc/types.hpp"

POSENC_BEGIN_NAMESPACE

/// Where sin and cos of pair i go in a row of D features.
enum class sinusoidal_layout {
  interleaved,  ///< T[p, 2i] = sin(p w_i), T[p, 2i+1] = cos(p w_i), w_i = base^(-2i/D) (Vaswani et al. 2017)
  concat,       ///< T[p, i] = sin(p w_i), T[p, D/2 + i] = cos(p w_i), w_i = base^(-i/(D/2-1)) (tensor2tensor, fairseq)
};
/// The spellings of sinusoidal_layout (posenc/enum_names.hpp: to_string, parse).
template <>
struct enum_names<sinusoidal_layout> {
  /// Canonical name first per value, then accepted aliases.
  static constexpr enum_name<sinusoidal_layout> list[] = {{sinusoidal_layout::interleaved, "interleaved"},
                                                           {sinusoidal_layout::concat, "concat"}};
};

/// A sinusoidal encoding. Validated by every entry: dim even and > 0, base finite and > 1, padding_idx >= 0.
struct sinusoidal_config {
  index_t dim = 0;          ///< D, the model dimension; odd D is rejected (there is no cos for the last sin)
  double base = 10000.0;    ///< 10000 in every reference (tensor2tensor's max_timescale)
  sinusoidal_layout layout = sinusoidal_layout::interleaved; ///< where sin and cos go; it also fixes w_i
  /// fairseq `padding_idx`: the row of this position is all zeros (fairseq zeroes weights[padding_idx]).
  /// With make_padded_positions, non-padding tokens then take positions padding_idx + 1, padding_idx + 2, ...
  /// and padding tokens take padding_idx itself, so they receive nothing.
  std::optional<index_t> padding_idx = std::nullopt;
};

namespace detail {

inline status check_sinusoidal_config(const char* fn, const sinusoidal_config& cfg) {
  if (cfg.dim <= 0 || cfg.dim % 2 != 0) return fail(fn, "dim=", cfg.dim, " must be even and > 0");
  POSENC_TRY(check_base(fn, cfg.base));
  if (cfg.layout != sinusoidal_layout::interleaved && cfg.layout != sinusoidal_layout::concat)
    return fail(fn, "layout=", static_cast<int>(cfg.layout), " is not a sinusoidal_layout");
  if (cfg.padding_idx && *cfg.padding_idx < 0) return fail(fn, "padding_idx=", *cfg.padding_idx, " must be >= 0");
  return {};
}

inline sinusoid_params sinusoid_params_of(const sinusoidal_config& cfg) {
  sinusoid_params sp;
  sp.dim = cfg.dim;
  sp.base = cfg.base;
  sp.concat = cfg.layout == sinusoidal_layout::concat;
  sp.has_padding = cfg.padding_idx.has_value();
  sp.padding_idx = cfg.padding_idx.value_or(0);
  return sp;
}

}  // namespace detail
POSENC_END_NAMESPACE
