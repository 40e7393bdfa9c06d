// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// The learned absolute position embedding's configuration and its checks, apart from the module and its kernels,
// so posenc/learned.hpp (CPU) and posenc/cuda/learned.cuh (GPU) share them. The module is documented in
// posenc/learned.hpp.
#pragma once

#include <cmath>

#include "posenc/config.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/status.hpp"
#include "posenc/types.hpp"

POSENC_BEGIN_NAMESPACE

/// A learned absolute position embedding. y = dropout(LN(x + scale * E[p + position_offset])), LN optional.
struct learned_config {
  index_t max_positions = 0;    ///< positions 0 .. max_positions-1 (HF `max_position_embeddings`); > 0
  index_t dim = 0;              ///< D; > 0
  double scale = 1.0;           ///< multiplies the embedding row (finite)
  bool layer_norm = false;      ///< LN over the D features after the addition, with gamma (init 1), beta (init 0)
  double eps = 1e-5;            ///< LN epsilon inside the square root (torch.nn.LayerNorm default); > 0
  double dropout = 0.0;         ///< dropout probability in training mode, in [0, 1]
  /// Row of position p is p + position_offset; the table has max_positions + position_offset rows. OPT: 2
  /// (HF `OPTLearnedPositionalEmbedding`, whose table is [max_position_embeddings + 2, D]); GPT-2, BERT: 0.
  index_t position_offset = 0;
};

namespace detail {

/// The configuration's own rules (the table size is checked where it is allocated).
inline status check_learned_config(const char* fn, const learned_config& cfg) {
  if (cfg.max_positions <= 0) return fail(fn, "max_positions=", cfg.max_positions, " must be > 0");
  if (cfg.dim <= 0) return fail(fn, "dim=", cfg.dim, " must be > 0");
  if (cfg.position_offset < 0) return fail(fn, "position_offset=", cfg.position_offset, " must be >= 0");
  if (!std::isfinite(cfg.scale)) return fail(fn, "scale=", cfg.scale, " must be finite");
  if (cfg.layer_norm && !(std::isfinite(cfg.eps) && cfg.eps > 0.0)) return fail(fn, "eps=", cfg.eps, " must be finite and > 0");
  if (!(cfg.dropout >= 0.0 && cfg.dropout <= 1.0)) return fail(fn, "dropout=", cfg.dropout, " must be in [0, 1]");
  return {};
}

}  // namespace detail
POSENC_END_NAMESPACE
