// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <cstdint>
#include <limits>

#include "posenc/config.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/status.hpp"
#include "posenc/tensor_view.hpp"

POSENC_BEGIN_NAMESPACE

class positions;
namespace detail {
status validate_positions(const char* fn, const positions& p, index_t n, index_t l, index_t& max_pos,
                          bool values_readable = true);
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
  /// The three forms, named as their factories.
  enum class form { offset, per_sequence, per_token };

  /// Positions start .. start+L-1 in every sequence (tiny-llm's `offset` slice, a KV-cache length).
  static positions offset(index_t start = 0) {
    positions p;
    p.start_ = start;
    return p;
  }
  /// Sequence n gets offsets[n] .. offsets[n]+L-1 (continuous batching); `count` must equal N.
  static positions per_sequence(const std::int64_t* offsets, index_t count) { return make(form::per_sequence, offsets, nullptr, count, 1, 1); }
  /// As above, with 32-bit offsets.
  static positions per_sequence(const std::int32_t* offsets, index_t count) { return make(form::per_sequence, nullptr, offsets, count, 1, 1); }
  /// Token (n, l) gets ids[n * row_stride + l] (HF `position_ids` of shape (N, L)); row_stride defaults to L, and
  /// 0 gives every sequence the same L ids (HF `position_ids` of shape (1, L), broadcast over the batch).
  static positions per_token(const std::int64_t* ids, index_t batch, index_t length, index_t row_stride = -1) {
    return make(form::per_token, ids, nullptr, batch, length, row_stride < 0 ? length : row_stride);
  }
  /// As above, with 32-bit ids.
  static positions per_token(const std::int32_t* ids, index_t batch, index_t length, index_t row_stride = -1) {
    return make(form::per_token, nullptr, ids, batch, length, row_stride < 0 ? length : row_stride);
  }

  /// Which factory made it: offset, per_sequence or per_token.
  form kind() const { return form_; }

  /// Position of token (n, l); no checks (see detail::validate_positions). Host and device code (a CUDA kernel
  /// takes positions by value, its arrays in device memory).
  /// (An offset, the decode case, is decided inline; the id forms' switch was compiled as a call per token.)
  POSENC_HOST_DEVICE index_t at(index_t n, index_t l) const {
    if (form_ == form::offset) return start_ + l;
    return form_ == form::per_sequence ? value(n) + start_ + l : value(n * stride_ + l);
  }

  /// The positions of the sub-batch [n_begin, n_begin + n_count) and sub-sequence [l_begin, l_begin + l_count):
  /// token (n, l) of the slice has the position of token (n_begin + n, l_begin + l) of this. No copy, so a
  /// thread of an engine's pool takes its share of a call with `x.slice(...)` and the matching positions, and
  /// gets exactly the result of the whole call on those tokens. An offset takes any n range. Throws
  /// argument_error if a begin or count is negative or a range leaves the batch or sequence this describes.
  ///
  /// **Example**
  /// ```
  /// // thread t of T: tokens [l0, l1) of every sequence
  /// posenc::apply_rope(cache, q.slice(1, l0, l1 - l0), pos.slice(0, N, l0, l1 - l0));
  /// ```
  positions slice(index_t n_begin, index_t n_count, index_t l_begin, index_t l_count) const {
    positions p;
    detail::throw_if_error(try_slice(n_begin, n_count, l_begin, l_count, p));
    return p;
  }

  /// slice without exceptions: `out` is set on success, untouched on error.
  status try_slice(index_t n_begin, index_t n_count, index_t l_begin, index_t l_count, positions& out) const noexcept {
    constexpr const char* fn = "positions::slice";
    if (n_begin < 0 || n_count < 0 || l_begin < 0 || l_count < 0)
      return detail::fail(fn, "(n_begin, n_count, l_begin, l_count)=(", n_begin, ", ", n_count, ", ", l_begin,
                                     ", ", l_count, ") must be >= 0");
    if (form_ != form::offset && n_begin > count_ - n_count)
      return detail::fail(fn, "sequences [", n_begin, ", ", n_begin, " + ", n_count, ") leave the batch of ", count_);
    if (form_ == form::per_token && l_begin > length_ - l_count)
      return detail::fail(fn, "tokens [", l_begin, ", ", l_begin, " + ", l_count, ") leave the length ", length_);
    if (start_ > std::numeric_limits<index_t>::max() - l_begin)
      return detail::fail(fn, "l_begin=", l_begin, " past offset ", start_, " overflows int64");
    positions p = *this;
    switch (form_) {
      case form::offset:
      case form::per_sequence:
        p.start_ = start_ + l_begin;
        if (form_ == form::per_sequence) {
          p.shift(n_begin);
          p.count_ = n_count;
        }
        break;
      case form::per_token:
        p.shift(n_begin * stride_ + l_begin);
        p.count_ = n_count;
        p.length_ = l_count;
        break;
    }
    out = p;
    return {};
  }

  /// N, the sequences of a per_sequence or per_token form (offsets, or rows of ids); 0 for an offset.
  index_t count() const { return count_; }
  /// L, the ids per sequence of a per_token form; not used by the others (0 for offset, 1 for per_sequence).
  index_t length() const { return length_; }
  /// The first position of an offset form; for per_sequence, what a slice adds to every offset (l_begin); 0 for
  /// per_token.
  index_t start() const { return start_; }
  /// The int64 array of a per_sequence or per_token form (null for int32 ids and for an offset).
  const std::int64_t* ids64() const { return p64_; }
  /// The int32 array of a per_sequence or per_token form (null for int64 ids and for an offset).
  const std::int32_t* ids32() const { return p32_; }
  /// Elements between the rows of a per_token form (1 for per_sequence, 0 for an offset).
  index_t row_stride() const { return stride_; }

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
  POSENC_HOST_DEVICE index_t value(index_t i) const { return p64_ ? p64_[i] : static_cast<index_t>(p32_[i]); }
  void shift(index_t elements) {
    if (p64_) p64_ += elements;
    if (p32_) p32_ += elements;
  }
  bool has_data() const { return p64_ != nullptr || p32_ != nullptr; }
  friend status detail::validate_positions(const char*, const positions&, index_t, index_t, index_t&, bool);

  form form_ = form::offset;
  index_t start_ = 0;
  const std::int64_t* p64_ = nullptr;
  const std::int32_t* p32_ = nullptr;
  index_t count_ = 0;
  index_t length_ = 0;
  index_t stride_ = 0;
};

namespace detail {
/// Checks `p` against a batch of N sequences of L tokens; sets `max_pos` to the largest position (-1 when empty).
/// Checks positions against an (N, L) tensor and finds the largest (-1 when there is no token). With
/// `values_readable` false (arrays in device memory) only the form, shape and pointers are checked, and a
/// per_sequence or per_token form reports INT64_MAX as its largest position: the values are never read here.
inline status validate_positions(const char* fn, const positions& p, index_t n, index_t l, index_t& max_pos,
                                 bool values_readable) {
  constexpr index_t big = std::numeric_limits<index_t>::max();
  // Form, shape and signs are checked even for an empty batch (N or L = 0); values are read only where they
  // exist. The largest position is -1 when there is no token.
  const index_t last = l > 0 ? l - 1 : 0;
  max_pos = -1;
  switch (p.form_) {
    case positions::form::offset:
      if (p.start_ < 0) return fail(fn, "positions offset=", p.start_, " must be >= 0");
      if (p.start_ > big - last) return fail(fn, "positions offset=", p.start_, " + length ", l, " overflows int64");
      if (n > 0 && l > 0) max_pos = p.start_ + last;
      break;
    case positions::form::per_sequence:
      if (p.count_ != n) return fail(fn, "positions per_sequence count=", p.count_, " does not match batch N=", n);
      if (n > 0 && !p.has_data()) return fail(fn, "positions per_sequence offsets are null");
      if (!values_readable) {
        if (n > 0 && l > 0) max_pos = big;
        break;
      }
      for (index_t i = 0; i < n; ++i) {
        const index_t v = p.value(i);
        if (v < 0) return fail(fn, "positions offset[", i, "]=", v, " must be >= 0");
        // start_ > 0 only in a slice: the first tokens of the sequence are another thread's.
        if (v > big - last - p.start_)
          return fail(fn, "positions offset[", i, "]=", v, " + ", p.start_, " + length ", l, " overflows int64");
        if (l > 0) max_pos = v + p.start_ + last > max_pos ? v + p.start_ + last : max_pos;
      }
      break;
    case positions::form::per_token:
      if (p.count_ != n || p.length_ != l)
        return fail(fn, "positions per_token shape (", p.count_, ", ", p.length_, ") does not match (N, L)=(", n, ", ", l, ")");
      if (p.stride_ != 0 && p.stride_ < l)
        return fail(fn, "positions row_stride=", p.stride_, " is less than L=", l, " (0 broadcasts one row)");
      if (n > 0 && l > 0 && !p.has_data()) return fail(fn, "positions per_token ids are null");
      if (!values_readable) {
        if (n > 0 && l > 0) max_pos = big;
        break;
      }
      for (index_t i = 0; i < (p.stride_ == 0 && n > 0 ? 1 : n); ++i)  // a broadcast row is read once
        for (index_t j = 0; j < l; ++j) {
          const index_t v = p.value(i * p.stride_ + j);
          if (v < 0) return fail(fn, "position[", i, ", ", j, "]=", v, " must be >= 0");
          max_pos = v > max_pos ? v : max_pos;
        }
      break;
  }
  return {};
}

}  // namespace detail

/// The three positions of every token: (N, 3, L) row-major (per_token), or one (3, L) array shared by every
/// sequence of the batch (shared). Text tokens carry the same value on all three axes. Non-owning.
class mrope_positions {
 public:
  /// No tokens (a shared array of length 0): a placeholder, e.g. for try_slice's `out`.
  mrope_positions() noexcept = default;

  /// (N, 3, L) row-major ids: axis a (0 t, 1 h, 2 w) of token (n, l) at ids[(3 * n + a) * L + l].
  static mrope_positions per_token(const std::int64_t* ids, index_t batch, index_t length) {
    return mrope_positions(ids, batch, length, 3 * length, length);
  }
  /// One (3, L) array for every sequence of the batch: axis a of token l at ids[a * L + l].
  static mrope_positions shared(const std::int64_t* ids, index_t length) {
    return mrope_positions(ids, -1, length, 0, length);
  }

  /// Token (n, l) of sequence n: ids at n * batch_stride + axis * axis_stride + l.
  std::array<index_t, 3> at(index_t n, index_t l) const {
    const std::int64_t* b = ids_ + n * batch_stride_ + l;
    return {b[0], b[axis_stride_], b[2 * axis_stride_]};
  }
  /// The t id of token (0, 0); null for the placeholder.
  POSENC_HOST_DEVICE const std::int64_t* data() const { return ids_; }
  index_t batch() const { return batch_; }  ///< -1 when shared
  /// L, the tokens per sequence.
  index_t length() const { return length_; }
  /// Elements from a sequence's ids to the next's: 3 * L of the whole array for per_token, 0 for shared.
  POSENC_HOST_DEVICE index_t batch_stride() const { return batch_stride_; }
  /// Elements from an axis's ids to the next's: L of the whole array (a slice keeps it).
  POSENC_HOST_DEVICE index_t axis_stride() const { return axis_stride_; }

  /// Sequences [n_begin, n_begin + n_count) and tokens [l_begin, l_begin + l_count), no copy (a thread's share
  /// of a call; see positions::slice). A shared array takes any sequence range. Throws argument_error if a
  /// begin or count is negative or a range leaves the batch or the length.
  mrope_positions slice(index_t n_begin, index_t n_count, index_t l_begin, index_t l_count) const {
    mrope_positions p;
    detail::throw_if_error(try_slice(n_begin, n_count, l_begin, l_count, p));
    return p;
  }

  /// slice without exceptions: `out` is set on success, untouched on error.
  status try_slice(index_t n_begin, index_t n_count, index_t l_begin, index_t l_count, mrope_positions& out) const noexcept {
    constexpr const char* fn = "mrope_positions::slice";
    if (n_begin < 0 || n_count < 0 || l_begin < 0 || l_count < 0)
      return detail::fail(fn, "(n_begin, n_count, l_begin, l_count)=(", n_begin, ", ", n_count, ", ", l_begin, ", ",
                          l_count, ") must be >= 0");
    if (batch_ >= 0 && n_begin > batch_ - n_count)
      return detail::fail(fn, "sequences [", n_begin, ", ", n_begin, " + ", n_count, ") leave the batch of ", batch_);
    if (l_begin > length_ - l_count)
      return detail::fail(fn, "tokens [", l_begin, ", ", l_begin, " + ", l_count, ") leave the length ", length_);
    mrope_positions p = *this;
    if (ids_ != nullptr) p.ids_ = ids_ + (batch_ >= 0 ? n_begin * batch_stride_ : 0) + l_begin;
    p.batch_ = batch_ >= 0 ? n_count : -1;
    p.length_ = l_count;
    out = p;
    return {};
  }

 private:
  mrope_positions(const std::int64_t* ids, index_t batch, index_t length, index_t batch_stride, index_t axis_stride)
      : ids_(ids), batch_(batch), length_(length), batch_stride_(batch_stride), axis_stride_(axis_stride) {}
  const std::int64_t* ids_ = nullptr;
  index_t batch_ = -1;
  index_t length_ = 0;
  index_t batch_stride_ = 0;
  index_t axis_stride_ = 0;
};

POSENC_END_NAMESPACE
