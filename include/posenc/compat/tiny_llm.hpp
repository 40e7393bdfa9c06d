// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// posenc::compat::tiny_llm: the C++ counterpart of
//   package skyzh/tiny-llm (MLX; "LLM serving in a week"), module src/tiny_llm/positional_encoding.py:
//   class RoPE(dims, seq_len, base=10000, traditional=False), called as rope(x, offset) with offset None, a
//   slice, or a list of slices (one per request, continuous batching).
// Version: the seed (shared/seeds/003_*, the book's "Week 1 Day 2: Positional Encodings and RoPE") pins no
// commit; what is mirrored is the behaviour that chapter and tests/golden/gen_golden.py describe.
//
// Inputs and outputs are row-major Eigen tensors (tiny_llm::tensor) in the Python shapes (N, L, H, D); every
// call returns a new tensor, as the Python does. The cos/sin tables are a posenc::rope_cache<float> with angles
// formed in double and rounded to float once. Engines that want in-place work on strided memory take
// rope::cache() to apply_rope directly. Every function and constructor that can fail has a noexcept try_ form
// returning a posenc::status (invalid_argument, or out_of_memory), its result in an out-parameter (the last),
// unchanged on error: rope::try_create / try_call. The throwing forms throw posenc::argument_error with the
// same message.
//
// Not part of the umbrella header posenc/posenc.hpp.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "posenc/compat/common.hpp"
#include "posenc/config.hpp"
#include "posenc/detail/check.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/error.hpp"  // argument_error, which the throwing forms throw
#include "posenc/eigen.hpp"
#include "posenc/positions.hpp"
#include "posenc/rope.hpp"
#include "posenc/status.hpp"
#include "posenc/tensor_view.hpp"

POSENC_BEGIN_NAMESPACE

/// The Python-API counterparts (posenc/compat/): C++ forms of the Python APIs posenc's users know.
namespace compat {

/// skyzh/tiny-llm (week 1, day 2) APIs.
namespace tiny_llm {

/// Row-major Eigen tensor: the layout of an MLX array.
template <class T, int Rank>
using tensor = detail::row_major_tensor<T, Rank>;

/// A Python `slice(start, stop)` of positions (step 1): positions start .. stop-1.
struct slice {
  /// First position, >= 0.
  index_t start = 0;
  /// One past the last position: stop - start must be L, and stop <= seq_len.
  index_t stop = 0;
};

/// tiny-llm `RoPE(dims, seq_len, base=10000, traditional=False)`: RoPE with w_i = base^(-2i/dims) on
/// x (N, L, H, D = dims), pairs (x[2i], x[2i+1]) when traditional (interleaved, MLX `traditional=True`), else
/// (x[i], x[i + dims/2]) (half_split, Qwen2). Like the Python, the cos/sin tables of positions
/// 0 .. seq_len-1 are computed once (a posenc::rope_cache<float>, angles in double rounded to float) and
/// every call looks them up.
/// Differences: positions past seq_len, negative starts and slices of the wrong length throw argument_error
/// (the Python asserts the lengths and lets MLX clamp or fail on the rest); a slice has no step.
///
/// **Example**
/// ```
/// posenc::compat::tiny_llm::rope rope(128, 4096, 1000000.0);        // Qwen2
/// auto q_prefill = rope(q);                                  // positions 0 .. L-1
/// auto q_next = rope(q1, {past, past + 1});                  // one decode step
/// ```
class rope {
 public:
  /// Throws argument_error unless dims is even and > 0, seq_len >= 0 and base is finite and > 1.
  rope(index_t dims, index_t seq_len, double base = 10000, bool traditional = false) {
    posenc::detail::throw_if_error(try_build(dims, seq_len, base, traditional));
  }

  /// The constructor without exceptions (the Python's defaults: base 10000, traditional false): `out` holds
  /// the module on success, is unchanged on error (out_of_memory when the cache cannot be allocated).
  ///
  /// **Example**
  /// ```
  /// posenc::compat::tiny_llm::rope rope;
  /// if (posenc::status s = posenc::compat::tiny_llm::rope::try_create(128, 4096, 1e6, false, rope); !s) return s;
  /// ```
  static status try_create(index_t dims, index_t seq_len, double base, bool traditional, rope& out) noexcept {
    rope r;
    POSENC_TRY(r.try_build(dims, seq_len, base, traditional));
    out = std::move(r);
    return {};
  }

  /// An empty module (no cache), to be filled by try_create; its calls reject every x.
  rope() = default;

  /// `rope(x)` (offset None) into `out` (which may be x): token l of every sequence at position l. Returns
  /// invalid_argument if D != dims, L > seq_len or the module is empty.
  template <class T>
  status try_call(const tensor<T, 4>& x, tensor<T, 4>& out) const noexcept {
    constexpr const char* fn = "compat::tiny_llm::rope";
    return posenc::detail::guard_alloc(fn, [&]() -> status {
      POSENC_TRY(check_x(fn, x));
      const auto l = static_cast<index_t>(x.dimension(1));
      if (l > seq_len())
        return posenc::detail::fail(fn, "x length L=", l, " exceeds seq_len=", seq_len(), " (positions 0 .. L-1)");
      return try_apply(x, positions::offset(0), out);
    });
  }

  /// The throwing form of try_call(x, out): argument_error with the same message.
  template <class T>
  tensor<T, 4> operator()(const tensor<T, 4>& x) const {
    tensor<T, 4> out;
    posenc::detail::throw_if_error(try_call(x, out));
    return out;
  }

  /// `rope(x, offset=slice(start, stop))` into `out`: token l of every sequence at position start + l.
  /// Returns invalid_argument if D != dims, stop - start != L, start < 0, stop > seq_len or the module is empty.
  template <class T>
  status try_call(const tensor<T, 4>& x, slice offset, tensor<T, 4>& out) const noexcept {
    constexpr const char* fn = "compat::tiny_llm::rope";
    return posenc::detail::guard_alloc(fn, [&]() -> status {
      POSENC_TRY(check_x(fn, x));
      POSENC_TRY(check_slice(fn, offset, static_cast<index_t>(x.dimension(1)), -1));
      return try_apply(x, positions::offset(offset.start), out);
    });
  }

  /// The throwing form of try_call(x, offset, out): argument_error with the same message.
  template <class T>
  tensor<T, 4> operator()(const tensor<T, 4>& x, slice offset) const {
    tensor<T, 4> out;
    posenc::detail::throw_if_error(try_call(x, offset, out));
    return out;
  }

  /// `rope(x, offset=[slice, ...])` (continuous batching) into `out`: one slice per sequence, token l of
  /// sequence n at position offsets[n].start + l (posenc::positions::per_sequence; no per-token index array).
  /// Returns invalid_argument if D != dims, offsets.size() != N, any slice has stop - start != L, start < 0
  /// or stop > seq_len, or the module is empty.
  template <class T>
  status try_call(const tensor<T, 4>& x, const std::vector<slice>& offsets, tensor<T, 4>& out) const noexcept {
    constexpr const char* fn = "compat::tiny_llm::rope";
    return posenc::detail::guard_alloc(fn, [&]() -> status {
      POSENC_TRY(check_x(fn, x));
      const auto n = static_cast<index_t>(x.dimension(0));
      if (static_cast<index_t>(offsets.size()) != n)
        return posenc::detail::fail(fn, "offsets.size()=", offsets.size(), " does not match batch N=", n);
      std::vector<std::int64_t> starts(offsets.size());
      for (std::size_t i = 0; i < offsets.size(); ++i) {
        POSENC_TRY(check_slice(fn, offsets[i], static_cast<index_t>(x.dimension(1)), static_cast<index_t>(i)));
        starts[i] = offsets[i].start;
      }
      return try_apply(x, positions::per_sequence(starts.data(), n), out);
    });
  }

  /// The throwing form of try_call(x, offsets, out): argument_error with the same message.
  template <class T>
  tensor<T, 4> operator()(const tensor<T, 4>& x, const std::vector<slice>& offsets) const {
    tensor<T, 4> out;
    posenc::detail::throw_if_error(try_call(x, offsets, out));
    return out;
  }

  /// The cos/sin cache (seq_len positions), for in-place use with apply_rope.
  const rope_cache<float>& cache() const { return cache_; }
  /// The cache's plan: head_dim = rotary_dim = dims, base, interleaved if traditional, else half_split.
  const rope_plan& plan() const { return cache_.plan(); }
  /// The constructor's dims: D, every feature rotated.
  index_t dims() const { return cache_.plan().head_dim(); }
  /// The constructor's seq_len: the cache holds positions 0 .. seq_len-1.
  index_t seq_len() const { return cache_.max_positions(); }
  /// The constructor's traditional: interleaved pairs (MLX traditional=True) if true, else half_split.
  bool traditional() const { return traditional_; }

 private:
  status try_build(index_t dims, index_t seq_len, double base, bool traditional) noexcept {
    constexpr const char* fn = "compat::tiny_llm::rope";
    return posenc::detail::guard_alloc(fn, [&]() -> status {
      if (dims <= 0 || dims % 2 != 0) return posenc::detail::fail(fn, "dims=", dims, " must be even and > 0");
      if (seq_len < 0) return posenc::detail::fail(fn, "seq_len=", seq_len, " must be >= 0");
      POSENC_TRY(posenc::detail::check_base(fn, base));
      rope_config cfg;
      cfg.head_dim = dims;
      cfg.base = base;
      cfg.style = traditional ? rope_style::interleaved : rope_style::half_split;
      rope_plan plan;
      POSENC_TRY(try_make_rope_plan(cfg, 0, plan));
      POSENC_TRY(rope_cache<float>::try_create(std::move(plan), seq_len, cache_));
      traditional_ = traditional;
      return {};
    });
  }

  template <class T>
  status check_x(const char* fn, const tensor<T, 4>& x) const {
    if (cache_.plan().empty()) return posenc::detail::fail(fn, detail::empty_message);
    if (x.dimension(3) != dims())
      return posenc::detail::fail(fn, "x head dim D=", x.dimension(3), " does not match dims=", dims());
    return {};
  }

  /// `which` is the slice's index in a list, or -1 for a single slice.
  status check_slice(const char* fn, const slice& s, index_t length, index_t which) const {
    const char* name = which < 0 ? "offset" : "offsets";
    const auto idx = [&]() { return which < 0 ? std::string() : "[" + std::to_string(which) + "]"; };
    if (s.start < 0) return posenc::detail::fail(fn, name, idx(), ".start=", s.start, " must be >= 0");
    if (s.stop < s.start || s.stop - s.start != length)
      return posenc::detail::fail(fn, name, idx(), " slice(", s.start, ", ", s.stop, ") has length ",
                                  s.stop - s.start, ", x has L=", length);
    if (s.stop > seq_len())
      return posenc::detail::fail(fn, name, idx(), ".stop=", s.stop, " is past seq_len=", seq_len(),
                                  " (last position ", s.stop - 1, ")");
    return {};
  }

  /// The rotation into a new tensor, moved into `out` once it is complete (so `out` may be `x`).
  template <class T>
  status try_apply(const tensor<T, 4>& x, const positions& pos, tensor<T, 4>& out) const {
    tensor<T, 4> y(x.dimensions());
    POSENC_TRY(try_apply_rope(cache_, x, y, pos));
    out = std::move(y);
    return {};
  }

  rope_cache<float> cache_;
  bool traditional_ = false;
};

}  // namespace tiny_llm
}  // namespace compat

POSENC_END_NAMESPACE
