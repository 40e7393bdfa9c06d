// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// Sinusoidal absolute position encodings: the interleaved table of Vaswani et al. (2017) and the
// concatenated [sin | cos] table of tensor2tensor and fairseq (with fairseq's padding_idx convention), as
// tables, as an in-place addition at any positions, and as a module holding the table ("buffer") with
// dropout, the C++ counterpart of the PyTorch `PositionalEncoding` module.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

#include "posenc/config.hpp"
#include "posenc/sinusoidal_config.hpp"
#include "posenc/detail/check.hpp"
#include "posenc/detail/additive.hpp"
#include "posenc/detail/kernels/entries.hpp"
#include "posenc/detail/kernels/params.hpp"
#include "posenc/detail/math/sinusoid.hpp"
#include "posenc/detail/simd/base.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/positions.hpp"
#include "posenc/status.hpp"
#include "posenc/tensor_view.hpp"

POSENC_BEGIN_NAMESPACE

namespace detail {

/// Every add_sinusoidal entry: all checks first (nothing is written on an error), then the kernels.
template <class T>
status add_sinusoidal_entry(const char* fn, const sinusoidal_config& cfg, const positions& pos,
                            const add_target<T>& t, const char* in_name, const char* out_name) {
  POSENC_TRY(check_sinusoidal_config(fn, cfg));
  POSENC_TRY(check_add_target(fn, in_name, out_name, cfg.dim, t));
  index_t max_pos = -1;
  POSENC_TRY(validate_positions(fn, pos, t.in.extent(0), t.in.extent(1), max_pos));
  if (max_pos < 0) return {};
  const sinusoid_params sp = sinusoid_params_of(cfg);
  run_sinusoid_rows(sp, pos, t.in, t.out);
  return {};
}

}  // namespace detail

// Every function below has a try_ form: noexcept, returning a status with the message the throwing form's
// argument_error carries (posenc/status.hpp); nothing is written when it is not ok.

/// The frequencies w_0 .. w_{D/2-1} of `cfg`, in double: interleaved base^(-2i/D), concat base^(-i/(D/2-1))
/// (D = 2 concat: w_0 = 1, tensor2tensor's max(D/2-1, 1) guard; fairseq divides by zero there).
/// Fails with invalid_argument on an invalid config. The try_ form writes into `out`: resized to D/2 and
/// filled on success (no allocation when its capacity suffices), untouched on error (out_of_memory when it
/// cannot grow).
///
/// **Example**
/// ```
/// auto w = posenc::sinusoidal_frequencies({512});  // w[1] = 10000^(-2/512)
/// ```
inline status try_sinusoidal_frequencies(const sinusoidal_config& cfg, std::vector<double>& out) noexcept {
  constexpr const char* fn = "sinusoidal_frequencies";
  POSENC_TRY(detail::check_sinusoidal_config(fn, cfg));
  if (static_cast<std::size_t>(cfg.dim / 2) > out.max_size()) return detail::out_of_memory(fn);
  return detail::guard_alloc(fn, [&]() -> status {
    out.resize(static_cast<std::size_t>(cfg.dim / 2));  // strong guarantee: unchanged if it throws
    for (std::size_t i = 0; i < out.size(); ++i)
      out[i] = detail::math::sinusoid_inv_freq(cfg.base, static_cast<index_t>(i), cfg.dim,
                                               cfg.layout == sinusoidal_layout::concat);
    return {};
  });
}
inline std::vector<double> sinusoidal_frequencies(const sinusoidal_config& cfg) {
  std::vector<double> w;
  detail::throw_if_error(try_sinusoidal_frequencies(cfg, w));
  return w;
}

/// Writes rows offset .. offset+L-1 of the sinusoidal table into `out` [L, D]:
///   interleaved (Vaswani et al. 2017, eq. in sec. 3.5): out[l, 2i] = sin(p w_i), out[l, 2i+1] = cos(p w_i),
///     w_i = base^(-2i/D);
///   concat (tensor2tensor `get_timing_signal_1d`, fairseq `SinusoidalPositionalEmbedding.get_embedding`):
///     out[l, i] = sin(p w_i), out[l, D/2 + i] = cos(p w_i), w_i = base^(-i/(D/2-1)) (w_0 = 1 at D = 2);
/// p = offset + l; the row p = padding_idx (when set) is zero, as fairseq's table. Angles p*w_i and sin/cos
/// are formed in double and rounded to T (half/bfloat16 through float: see add_sinusoidal), so large offsets
/// (10^5 and more) keep full accuracy (the angle is exact to ~p * (2 + ln base) * 2^-53 rad), unlike tables
/// built in float32 (fairseq, tensor2tensor), whose angle error grows as p * 2^-24.
/// `out`: strided_view<T, 2> or a rank-2 Eigen tensor; T float, double, Eigen::half, Eigen::bfloat16.
/// Fails with invalid_argument, writing nothing, on an invalid config, D != cfg.dim, offset < 0, or
/// offset + L - 1 past INT64_MAX.
///
/// **Example**
/// ```
/// Eigen::Tensor<float, 2, Eigen::RowMajor> pe(1024, 512);
/// posenc::sinusoidal_table({512}, pe);  // the buffer of the seed's PositionalEncoding(512, 1024)
/// if (posenc::status s = posenc::try_sinusoidal_table({512}, pe); !s) log_error(s.message());
/// ```
template <class Out>
status try_sinusoidal_table(const sinusoidal_config& cfg, Out&& out, index_t offset = 0) noexcept {
  constexpr const char* fn = "sinusoidal_table";
  auto vo = as_view(out);
  using V = decltype(vo);
  using T = typename V::element_type;
  static_assert(V::rank == 2, "posenc::sinusoidal_table: out has rank 2 (L, D)");
  static_assert(!std::is_const_v<T>, "posenc::sinusoidal_table: out must be writable");
  POSENC_TRY(detail::check_sinusoidal_config(fn, cfg));
  POSENC_TRY(detail::check_view(fn, "out", vo, true));
  if (vo.extent(1) != cfg.dim)
    return detail::fail(fn, "out feature dim (extent 1)=", vo.extent(1), " does not match dim=", cfg.dim);
  using A3 = std::array<index_t, 3>;
  const strided_view<T, 3> o3(vo.data(), A3{1, vo.extent(0), vo.extent(1)}, A3{0, vo.stride(0), vo.stride(1)});
  const positions pos = positions::offset(offset);
  index_t max_pos = -1;
  POSENC_TRY(detail::validate_positions(fn, pos, 1, vo.extent(0), max_pos));
  if (max_pos < 0) return {};
  const detail::sinusoid_params sp = detail::sinusoid_params_of(cfg);
  detail::run_sinusoid_rows(sp, pos, strided_view<const T, 3>(), o3);
  return {};
}
template <class Out>
void sinusoidal_table(const sinusoidal_config& cfg, Out&& out, index_t offset = 0) {
  detail::throw_if_error(try_sinusoidal_table<Out&>(cfg, out, offset));
}

/// Adds the sinusoidal encoding in place: x[n, l, :] += T[p(n, l), :] with T the table of sinusoidal_table
/// (zero row at padding_idx). Positions in any form: an offset (GPT-style decoding: positions::offset(past)),
/// one offset per sequence (continuous batching) or an id per token (fairseq padding: make_padded_positions).
/// The sum is formed in double and rounded to T: once for float and double; for Eigen::half and bfloat16 to float
/// first, then to 16 bits (a double rounding, which can differ from a direct one by one 16-bit ulp in ties).
/// `x`: (N, L, D) or (L, D), strided_view or Eigen tensor, T float, double, Eigen::half, Eigen::bfloat16.
/// Fails with invalid_argument, writing nothing, on an invalid config, D != cfg.dim, or positions that are
/// negative, overflow, or do not match (N, L).
///
/// **Example**
/// ```
/// Eigen::Tensor<float, 3, Eigen::RowMajor> x(2, 16, 512);  // token embeddings
/// posenc::add_sinusoidal(x, {512}, posenc::positions::offset(0));
/// ```
template <class X>
status try_add_sinusoidal(const sinusoidal_config& cfg, X&& x, const positions& pos) noexcept {
  const auto t = detail::make_add_target(x, x);
  return detail::add_sinusoidal_entry("add_sinusoidal", cfg, pos, t, "x", "x");
}
template <class X>
void add_sinusoidal(const sinusoidal_config& cfg, X&& x, const positions& pos) {
  detail::throw_if_error(try_add_sinusoidal<X&>(cfg, x, pos));
}

/// Out of place: out = in + T[p]. `out` must not overlap `in` (pass one tensor twice for in place).
template <class X, class Y>
status try_add_sinusoidal(const sinusoidal_config& cfg, X&& in, Y&& out, const positions& pos) noexcept {
  const auto t = detail::make_add_target(in, out);
  return detail::add_sinusoidal_entry("add_sinusoidal", cfg, pos, t, "in", "out");
}
template <class X, class Y>
void add_sinusoidal(const sinusoidal_config& cfg, X&& in, Y&& out, const positions& pos) {
  detail::throw_if_error(try_add_sinusoidal<X&, Y&>(cfg, in, out, pos));
}

namespace detail {
template <class Id>
status make_padded_positions_impl(const Id* tokens, index_t batch, index_t length, index_t padding_idx,
                                  std::int64_t* out, index_t past_length) {
  constexpr const char* fn = "make_padded_positions";
  if (batch < 0 || length < 0) return fail(fn, "(batch, length)=(", batch, ", ", length, ") must be >= 0");
  if (padding_idx < 0) return fail(fn, "padding_idx=", padding_idx, " must be >= 0");
  if (past_length < 0) return fail(fn, "past_length=", past_length, " must be >= 0");
  if (batch == 0 || length == 0) return {};
  if (tokens == nullptr || out == nullptr) return fail(fn, tokens == nullptr ? "tokens" : "out", " is null");
  constexpr index_t big = std::numeric_limits<index_t>::max();
  if (padding_idx > big - past_length || padding_idx + past_length > big - length)
    return fail(fn, "padding_idx=", padding_idx, " + past_length=", past_length, " + length=", length,
                " overflows int64");
  for (index_t n = 0; n < batch; ++n) {
    index_t count = 0;
    for (index_t l = 0; l < length; ++l) {
      const bool real = static_cast<index_t>(tokens[n * length + l]) != padding_idx;
      count += real ? 1 : 0;
      out[n * length + l] = real ? count + past_length + padding_idx : padding_idx;
    }
  }
  return {};
}
}  // namespace detail

/// fairseq's `utils.make_positions` (and Hugging Face `create_position_ids_from_input_ids`): for token ids
/// [batch, length] (row-major), out[n, l] = (cumsum(mask)[n, l] + past_length) * mask[n, l] + padding_idx with
/// mask = (token != padding_idx). Non-padding tokens get padding_idx + 1, padding_idx + 2, ... (left padding
/// does not shift them); padding tokens get padding_idx, whose sinusoidal row is zero when cfg.padding_idx is
/// set. Pass the result as positions::per_token(out, batch, length). `out` may not alias `tokens` unless both
/// are int64 and the same array.
/// Fails with invalid_argument, writing nothing, on negative sizes, padding_idx or past_length, null arrays, or
/// int64 overflow.
///
/// **Example**
/// ```
/// std::int64_t tok[] = {1, 1, 7, 9};   // padding_idx 1, left padded
/// std::int64_t pos[4];
/// posenc::make_padded_positions(tok, 1, 4, 1, pos);  // pos = {1, 1, 2, 3}
/// posenc::sinusoidal_config cfg{512, 10000.0, posenc::sinusoidal_layout::concat, 1};
/// posenc::add_sinusoidal(x, cfg, posenc::positions::per_token(pos, 1, 4));
/// ```
inline status try_make_padded_positions(const std::int64_t* tokens, index_t batch, index_t length,
                                        index_t padding_idx, std::int64_t* out, index_t past_length = 0) noexcept {
  return detail::make_padded_positions_impl(tokens, batch, length, padding_idx, out, past_length);
}
inline status try_make_padded_positions(const std::int32_t* tokens, index_t batch, index_t length,
                                        index_t padding_idx, std::int64_t* out, index_t past_length = 0) noexcept {
  return detail::make_padded_positions_impl(tokens, batch, length, padding_idx, out, past_length);
}
inline void make_padded_positions(const std::int64_t* tokens, index_t batch, index_t length, index_t padding_idx,
                                  std::int64_t* out, index_t past_length = 0) {
  detail::throw_if_error(try_make_padded_positions(tokens, batch, length, padding_idx, out, past_length));
}
inline void make_padded_positions(const std::int32_t* tokens, index_t batch, index_t length, index_t padding_idx,
                                  std::int64_t* out, index_t past_length = 0) {
  detail::throw_if_error(try_make_padded_positions(tokens, batch, length, padding_idx, out, past_length));
}

/// The sinusoidal encoding as a module: the table for positions 0 .. max_len-1 built once (the registered
/// buffer `pe` of the PyTorch `PositionalEncoding` module), forward = x + pe[positions], then inverted dropout
/// in training mode. The table is stored in C (float, like the PyTorch buffer, or double); rows formed in
/// double and rounded once.
///
/// **Example**
/// ```
/// posenc::sinusoidal_embedding<> pe({512}, 5000, 0.1);   // PositionalEncoding(512, 5000, dropout=0.1)
/// std::mt19937_64 rng(1234);
/// pe.forward(x, true, rng);   // training: x + pe[:L], then dropout
/// pe.forward(x);              // evaluation: x + pe[:L]
/// ```
template <class C = float>
class sinusoidal_embedding {
  static_assert(std::is_same_v<C, float> || std::is_same_v<C, double>, "posenc::sinusoidal_embedding: C is float or double");

 public:
  /// Builds the [max_len, D] table. Throws argument_error on an invalid config (odd dim: the seed's
  /// "emb_dim must be even" check), max_len < 0, a table size that overflows, or dropout outside [0, 1]
  /// (std::bad_alloc when the table cannot be allocated).
  sinusoidal_embedding(const sinusoidal_config& cfg, index_t max_len, double dropout = 0.0) {
    detail::throw_if_error(try_build(cfg, max_len, dropout));
  }

  /// The constructor without exceptions: `out` holds the module on success, is unchanged on error (an
  /// out_of_memory status when the table cannot be allocated).
  ///
  /// **Example**
  /// ```
  /// posenc::sinusoidal_embedding<> pe;
  /// if (posenc::status s = posenc::sinusoidal_embedding<>::try_create({512}, 5000, 0.1, pe); !s) return s;
  /// ```
  static status try_create(const sinusoidal_config& cfg, index_t max_len, double dropout,
                           sinusoidal_embedding& out) noexcept {
    sinusoidal_embedding e;
    POSENC_TRY(e.try_build(cfg, max_len, dropout));
    out = std::move(e);
    return {};
  }
  /// try_create without dropout.
  static status try_create(const sinusoidal_config& cfg, index_t max_len, sinusoidal_embedding& out) noexcept {
    return try_create(cfg, max_len, 0.0, out);
  }

  /// An empty module (dim 0, no positions), to be filled by try_create; its forward accepts only empty x.
  sinusoidal_embedding() = default;

  /// The configuration the table was built from.
  const sinusoidal_config& config() const { return cfg_; }
  /// Rows of the table: positions 0 .. max_len-1.
  index_t max_len() const { return max_len_; }
  /// The dropout probability of training mode, in [0, 1].
  double dropout() const { return dropout_; }
  /// The [max_len, D] table (read-only: it is a constant of the encoding, not a parameter).
  strided_view<const C, 2> table() const { return strided_view<const C, 2>(table_.data(), {max_len_, cfg_.dim}); }

  /// Evaluation mode, in place: x += pe[p(n, l)] (default positions 0 .. L-1). No dropout.
  /// Throws argument_error, writing nothing, if D != dim or a position is negative or >= max_len.
  template <class X>
  void forward(X&& x, const positions& pos = positions::offset(0)) const {
    detail::throw_if_error(try_forward<X&>(x, pos));
  }
  /// forward without exceptions: a status with the message of the throwing form; x is unchanged on error.
  /// (Overloads rather than a default argument: the positions::offset(0) of a default argument would be
  /// evaluated outside the noexcept function.)
  template <class X>
  status try_forward(X&& x, const positions& pos) const noexcept {
    return run(x, pos, false, nullptr);
  }
  /// try_forward(x, pos) with positions 0 .. L-1.
  template <class X>
  status try_forward(X&& x) const noexcept {
    return run(x, positions::offset(0), false, nullptr);
  }

  /// Training (train = true) or evaluation mode, in place: x += pe[p(n, l)], then, in training mode with
  /// dropout p > 0, each element is zeroed with probability p and the kept ones scaled by 1/(1-p) (inverted
  /// dropout, as torch.nn.Dropout). One draw of `rng` per element in (n, l, d) order, dropped iff
  /// (draw >> 11) * 2^-53 < p: the same seed gives the same mask on every platform. No draws in eval mode.
  /// Throws argument_error as forward above, changing neither x nor rng.
  template <class X>
  void forward(X&& x, bool train, std::mt19937_64& rng, const positions& pos = positions::offset(0)) const {
    detail::throw_if_error(try_forward<X&>(x, train, rng, pos));
  }
  /// forward in training or evaluation mode without exceptions; on error neither x nor rng is changed (every
  /// check runs before the first draw).
  template <class X>
  status try_forward(X&& x, bool train, std::mt19937_64& rng, const positions& pos) const noexcept {
    return run(x, pos, train, &rng);
  }
  /// try_forward(x, train, rng, pos) with positions 0 .. L-1.
  template <class X>
  status try_forward(X&& x, bool train, std::mt19937_64& rng) const noexcept {
    return run(x, positions::offset(0), train, &rng);
  }

 private:
  status try_build(const sinusoidal_config& cfg, index_t max_len, double dropout) noexcept {
    constexpr const char* fn = "sinusoidal_embedding";
    POSENC_TRY(detail::check_sinusoidal_config(fn, cfg));
    if (max_len < 0) return detail::fail(fn, "max_len=", max_len, " must be >= 0");
    if (max_len > static_cast<index_t>(table_.max_size()) / cfg.dim)
      return detail::fail(fn, "max_len=", max_len, " times dim=", cfg.dim, " overflows");
    if (!(dropout >= 0.0 && dropout <= 1.0)) return detail::fail(fn, "dropout=", dropout, " must be in [0, 1]");
    return detail::guard_alloc(fn, [&]() -> status {
      table_.resize(static_cast<std::size_t>(max_len * cfg.dim));
      cfg_ = cfg;
      max_len_ = max_len;
      dropout_ = dropout;
      if (max_len > 0) return try_sinusoidal_table(cfg, strided_view<C, 2>(table_.data(), {max_len, cfg.dim}));
      return {};
    });
  }

  template <class X>
  status run(X& x, const positions& pos, bool train, std::mt19937_64* rng) const noexcept {
    constexpr const char* fn = "sinusoidal_embedding::forward";
    const auto t = detail::make_add_target(x, x);
    POSENC_TRY(detail::check_add_target(fn, "x", "x", cfg_.dim, t));
    index_t max_pos = -1;
    POSENC_TRY(detail::validate_positions(fn, pos, t.in.extent(0), t.in.extent(1), max_pos));
    if (max_pos >= max_len_) return detail::fail(fn, "position ", max_pos, " is past the table of max_len=", max_len_);
    if (max_pos < 0) return {};
    using T = typename decltype(t.out)::element_type;
    using A = detail::simd::acc2_t<T, C>;
    const auto drop = detail::dropout_draw::make(train, dropout_, rng);
    if (drop.active()) {
      detail::table_rows_dropout<A>(table_.data(), cfg_.dim, 0, A(1), pos, t, drop);
      return {};
    }
    const C* table = table_.data();
    const index_t dim = cfg_.dim;
    detail::run_table_rows(table, dim, 0, 1.0, pos, t);
    return {};
  }

  sinusoidal_config cfg_;
  index_t max_len_ = 0;
  double dropout_ = 0.0;
  std::vector<C> table_;
};

POSENC_END_NAMESPACE
