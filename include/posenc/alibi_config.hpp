// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// ALiBi's configuration (form, mask, the tensor-parallel head range) and the checks of an ALiBi call, apart
// from the kernels: posenc/alibi.hpp (CPU) and posenc/cuda/alibi.cuh (GPU) reject the same inputs with the same
// messages. The encoding itself is documented in posenc/alibi.hpp.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <type_traits>

#include "posenc/config.hpp"
#include "posenc/enum_names.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/positions.hpp"
#include "posenc/status.hpp"
#include "posenc/storage.hpp"
#include "posenc/tensor_view.hpp"
#include "posenc/types.hpp"

POSENC_BEGIN_NAMESPACE

/// How the bias grows with the distance d = j - q between key position j and query position q.
enum class alibi_form {
  linear,     ///< slope * d: the paper's decoder form (BLOOM, MPT, Falcon-RW, ggml); d <= 0 under a causal mask
  symmetric,  ///< -slope * |d|: bidirectional encoders (e.g. the symmetric ALiBi of MosaicBERT)
};
/// The spellings of alibi_form (posenc/enum_names.hpp: to_string, parse).
template <>
struct enum_names<alibi_form> {
  /// Canonical name first per value, then accepted aliases.
  static constexpr enum_name<alibi_form> list[] = {{alibi_form::linear, "linear"}, {alibi_form::symmetric, "symmetric"}};
};

/// What add_alibi_bias does with the keys after the query (j > q).
enum class alibi_mask {
  none,    ///< the bias only
  causal,  ///< the score is set to -infinity (overwritten, not added): a fused causal mask
};
/// The spellings of alibi_mask (posenc/enum_names.hpp: to_string, parse).
template <>
struct enum_names<alibi_mask> {
  /// Canonical name first per value, then accepted aliases.
  static constexpr enum_name<alibi_mask> list[] = {{alibi_mask::none, "none"}, {alibi_mask::causal, "causal"}};
};

/// The arithmetic of the bias. `exact` (the default) forms slope * (j - q) from the double slope and adds it to
/// the score in double, one rounding to the scores' type: the published formula, the same bits on every ISA.
/// `fp32` is the arithmetic engines ship (llama.cpp's ggml_soft_max_ext: a float slope times the float distance
/// in the KQ mask, fused into the score; vLLM's and Hugging Face's float32 slopes): the slope rounded to float
/// once, then fma(slope, j - q, score) in float (write: slope * (j - q) in float), the distance rounded to float
/// (exact below 2^24), one rounding; it runs in float lanes at twice the width of `exact` and without its
/// conversions. Scores of float or a 16-bit type (double scores take `exact`).
enum class alibi_arithmetic {
  exact,  ///< double slope and sum, one rounding to the scores' type
  fp32,   ///< float slope, float fma (what float32 engines compute)
};
/// The spellings of alibi_arithmetic (posenc/enum_names.hpp: to_string, parse).
template <>
struct enum_names<alibi_arithmetic> {
  /// Canonical name first per value, then accepted aliases.
  static constexpr enum_name<alibi_arithmetic> list[] = {
      {alibi_arithmetic::exact, "exact"}, {alibi_arithmetic::fp32, "fp32"}, {alibi_arithmetic::fp32, "float32"}};
};

/// One ALiBi configuration. The slopes depend on the *global* head count, so a tensor-parallel shard names
/// its heads [head_begin, head_end) of num_heads and local head k gets the slope of global head head_begin + k.
///
/// **Example**
/// ```
/// posenc::alibi_config cfg;            // BLOOM-176B: 112 heads over 8 GPUs, 14 per shard
/// cfg.num_heads = 112;
/// cfg.head_begin = 14 * rank;
/// cfg.head_end = 14 * (rank + 1);
/// ```
struct alibi_config {
  index_t num_heads = 0;   ///< H, the model's global head count
  double max_bias = 8.0;   ///< m: slopes 2^(-m(h+1)/n); 8 in the paper, BLOOM and MPT (ggml's max_bias)
  index_t head_begin = 0;  ///< first global head of this shard
  index_t head_end = -1;   ///< one past the last global head of this shard; -1 means num_heads
  alibi_form form = alibi_form::linear; ///< linear for causal decoders, symmetric for bidirectional encoders
  alibi_arithmetic arithmetic = alibi_arithmetic::exact;  ///< exact (double) or fp32 (float32 engines' rounding)
};

namespace detail {

template <class T>
inline constexpr bool is_alibi_dtype_v = is_storage_v<T>;

inline status check_alibi_form(const char* fn, alibi_form form) {
  if (form != alibi_form::linear && form != alibi_form::symmetric)
    return fail(fn, "form=", static_cast<int>(form), " is not an alibi_form");
  return {};
}

/// Whether scores of type T are double (which the fp32 arithmetic refuses).
template <class T>
inline constexpr bool is_double_scores_v = std::is_same_v<std::remove_const_t<T>, double>;

/// Validates the arithmetic for the scores: fp32 computes in float, so double scores are refused rather than
/// given float's rounding quietly.
inline status check_alibi_arithmetic(const char* fn, alibi_arithmetic a, bool double_scores) {
  if (a != alibi_arithmetic::exact && a != alibi_arithmetic::fp32)
    return fail(fn, "arithmetic=", static_cast<int>(a), " is not an alibi_arithmetic");
  if (a == alibi_arithmetic::fp32 && double_scores)
    return fail(fn, "arithmetic=fp32 rounds in float: double scores take arithmetic=exact");
  return {};
}

/// Validates a configuration (its arithmetic for double scores where `double_scores`); sets `range` to the
/// global head range [begin, end) (unchanged on error).
inline status check_alibi_config(const char* fn, const alibi_config& cfg, std::array<index_t, 2>& range,
                                 bool double_scores = false) {
  if (cfg.num_heads <= 0) return fail(fn, "num_heads=", cfg.num_heads, " must be > 0");
  if (!(std::isfinite(cfg.max_bias) && cfg.max_bias > 0.0))
    return fail(fn, "max_bias=", cfg.max_bias, " must be finite and > 0");
  POSENC_TRY(check_alibi_form(fn, cfg.form));
  POSENC_TRY(check_alibi_arithmetic(fn, cfg.arithmetic, double_scores));
  const index_t end = cfg.head_end == -1 ? cfg.num_heads : cfg.head_end;
  if (cfg.head_begin < 0 || cfg.head_begin >= cfg.num_heads)
    return fail(fn, "head_begin=", cfg.head_begin, " is outside [0, num_heads=", cfg.num_heads, ")");
  if (end <= cfg.head_begin || end > cfg.num_heads)
    return fail(fn, "head_end=", cfg.head_end, " gives the head range [", cfg.head_begin, ", ", end,
                "), empty or past num_heads=", cfg.num_heads);
  range = {cfg.head_begin, end};
  return {};
}

inline status check_alibi_mask(const char* fn, alibi_mask mask) {
  if (mask != alibi_mask::none && mask != alibi_mask::causal)
    return fail(fn, "mask=", static_cast<int>(mask), " is not an alibi_mask");
  return {};
}

/// The scores (or bias) view of a call: [N, H, Lq, Lk] as it is, [H, Lq, Lk] as [1, H, Lq, Lk].
template <class T, std::size_t R>
strided_view<T, 4> as_scores_view(const strided_view<T, R>& v) {
  static_assert(R == 3 || R == 4, "posenc: attention scores are [N, H, Lq, Lk] or [H, Lq, Lk]");
  static_assert(!std::is_const_v<T>, "posenc: the attention scores must be writable");
  static_assert(is_alibi_dtype_v<T>, "posenc: scores of float, double or a 16-bit storage type (posenc/storage.hpp)");
  if constexpr (R == 4) {
    return v;
  } else {
    using A = std::array<index_t, 4>;
    return strided_view<T, 4>(v.data(), A{1, v.extent(0), v.extent(1), v.extent(2)},
                              A{0, v.stride(0), v.stride(1), v.stride(2)});
  }
}

/// Checks a (checked) scores view against the local head count and the query positions; `max_query` is set to
/// the largest query position, or -1 when there is nothing to do (no query or no key). A CUDA launcher passes
/// `values_readable` false for positions in device memory (see validate_positions); max_query is then only
/// known to be >= 0.
template <class T>
status check_alibi_scores(const char* fn, const char* name, const strided_view<T, 4>& s, index_t heads,
                          const positions& pos, index_t& max_query, bool values_readable = true) {
  if (s.extent(1) != heads)
    return fail(fn, name, " has ", s.extent(1), " heads where the configuration's shard has ", heads);
  // validate_positions skips empty tensors; a negative offset is rejected whatever the shape.
  if (pos.kind() == positions::form::offset && pos.start() < 0)
    return fail(fn, "query offset=", pos.start(), " must be >= 0");
  index_t max_pos = -1;
  POSENC_TRY(validate_positions(fn, pos, s.extent(0), s.extent(2), max_pos, values_readable));
  max_query = s.extent(3) > 0 ? max_pos : -1;
  return {};
}

}  // namespace detail

POSENC_END_NAMESPACE
