// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <limits>

#include "posenc/config.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/tensor_view.hpp"

POSENC_BEGIN_NAMESPACE

class positions;
namespace detail {
index_t validate_positions(const char* fn, const positions& p, index_t n, index_t l);
}

/// The position of every token of an (N, L, ...) tensor, in one of three forms. Non-owning: the arrays must
/// outlive the call. Positions are >= 0 and may be anything up to INT64_MAX.
///
/// **Example**
/// ```
/// auto prefill = posenc::positions::offset(0);                    // 0 .. L-1 for every sequence
/// std::int64_t past[] = {17, 3, 250};                             // continuous batching, N = 3
/// auto decode = posenc::positions::per_sequence(past, 3);         // sequence n: past[n] .. past[n]+L-1
/// auto ids = posenc::positions::per_token(pos_ids.data(), N, L);  // an explicit id per token
/// ```
class positions {
 public:
  enum class form { offset, per_sequence, per_token };

  /// Positions start .. start+L-1 in every sequence (tiny-llm's `offset` slice, a KV-cache length).
  static positions offset(index_t start = 0) {
    positions p;
    p.start_ = start;
    return p;
  }
  /// Sequence n gets offsets[n] .. offsets[n]+L-1 (continuous batching); `count` must equal N.
  static positions per_sequence(const std::int64_t* offsets, index_t count) { return make(form::per_sequence, offsets, nullptr, count, 1, 1); }
  static positions per_sequence(const std::int32_t* offsets, index_t count) { return make(form::per_sequence, nullptr, offsets, count, 1, 1); }
  /// Token (n, l) gets ids[n * row_stride + l] (HF `position_ids` of shape (N, L)); row_stride defaults to L.
  static positions per_token(const std::int64_t* ids, index_t batch, index_t length, index_t row_stride = -1) {
    return make(form::per_token, ids, nullptr, batch, length, row_stride < 0 ? length : row_stride);
  }
  static positions per_token(const std::int32_t* ids, index_t batch, index_t length, index_t row_stride = -1) {
    return make(form::per_token, nullptr, ids, batch, length, row_stride < 0 ? length : row_stride);
  }

  form kind() const { return form_; }

  /// Position of token (n, l); no checks (see detail::validate_positions).
  index_t at(index_t n, index_t l) const {
    switch (form_) {
      case form::offset: return start_ + l;
      case form::per_sequence: return value(n) + l;
      case form::per_token: return value(n * stride_ + l);
    }
    return 0;
  }

  index_t count() const { return count_; }
  index_t length() const { return length_; }
  index_t start() const { return start_; }

 private:
  static positions make(form f, const std::int64_t* p64, const std::int32_t* p32, index_t count, index_t length,
                        index_t stride) {
    positions p;
    p.form_ = f;
    p.p64_ = p64;
    p.p32_ = p32;
    p.count_ = count;
    p.length_ = length;
    p.stride_ = stride;
    return p;
  }
  index_t value(index_t i) const { return p64_ ? p64_[i] : static_cast<index_t>(p32_[i]); }
  bool has_data() const { return p64_ != nullptr || p32_ != nullptr; }
  friend index_t detail::validate_positions(const char*, const positions&, index_t, index_t);

  form form_ = form::offset;
  index_t start_ = 0;
  const std::int64_t* p64_ = nullptr;
  const std::int32_t* p32_ = nullptr;
  index_t count_ = 0;
  index_t length_ = 0;
  index_t stride_ = 0;
};

namespace detail {
/// Checks `p` against a batch of N sequences of L tokens; returns the largest position (-1 when empty).
inline index_t validate_positions(const char* fn, const positions& p, index_t n, index_t l) {
  constexpr index_t big = std::numeric_limits<index_t>::max();
  // Form, shape and signs are checked even for an empty batch (N or L = 0); values are read only where they
  // exist. The largest position is -1 when there is no token.
  const index_t last = l > 0 ? l - 1 : 0;
  index_t max_pos = -1;
  switch (p.form_) {
    case positions::form::offset:
      if (p.start_ < 0) throw_invalid_argument(fn, "positions offset=", p.start_, " must be >= 0");
      if (p.start_ > big - last) throw_invalid_argument(fn, "positions offset=", p.start_, " + length ", l, " overflows int64");
      if (n > 0 && l > 0) max_pos = p.start_ + last;
      break;
    case positions::form::per_sequence:
      if (p.count_ != n) throw_invalid_argument(fn, "positions per_sequence count=", p.count_, " does not match batch N=", n);
      if (n > 0 && !p.has_data()) throw_invalid_argument(fn, "positions per_sequence offsets are null");
      for (index_t i = 0; i < n; ++i) {
        const index_t v = p.value(i);
        if (v < 0) throw_invalid_argument(fn, "positions offset[", i, "]=", v, " must be >= 0");
        if (v > big - last) throw_invalid_argument(fn, "positions offset[", i, "]=", v, " + length ", l, " overflows int64");
        if (l > 0) max_pos = v + last > max_pos ? v + last : max_pos;
      }
      break;
    case positions::form::per_token:
      if (p.count_ != n || p.length_ != l)
        throw_invalid_argument(fn, "positions per_token shape (", p.count_, ", ", p.length_, ") does not match (N, L)=(", n, ", ", l, ")");
      if (p.stride_ < l) throw_invalid_argument(fn, "positions row_stride=", p.stride_, " is less than L=", l);
      if (n > 0 && l > 0 && !p.has_data()) throw_invalid_argument(fn, "positions per_token ids are null");
      for (index_t i = 0; i < n; ++i)
        for (index_t j = 0; j < l; ++j) {
          const index_t v = p.value(i * p.stride_ + j);
          if (v < 0) throw_invalid_argument(fn, "position[", i, ", ", j, "]=", v, " must be >= 0");
          max_pos = v > max_pos ? v : max_pos;
        }
      break;
  }
  return max_pos;
}
}  // namespace detail

POSENC_END_NAMESPACE
