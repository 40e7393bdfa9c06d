// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// Argument checks shared by every public entry: view shapes and strides, aliasing between inputs and outputs,
// the rotary window, the frequency base, and tensors that must hold the same tokens. One function per check, so
// a rule and its message are written once.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>

#include "posenc/config.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/tensor_view.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail {

/// r = a * b for a, b >= 0; true (r unspecified) when the product exceeds index_t.
inline bool mul_overflows(index_t a, index_t b, index_t& r) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  return __builtin_mul_overflow(a, b, &r);
#else
  if (b != 0 && a > std::numeric_limits<index_t>::max() / b) return true;
  r = a * b;
  return false;
#endif
}
/// r = a + b for a >= 0, b >= -1; true (r unspecified) when the sum exceeds index_t.
inline bool add_overflows(index_t a, index_t b, index_t& r) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  return __builtin_add_overflow(a, b, &r);
#else
  if (b > 0 && a > std::numeric_limits<index_t>::max() - b) return true;
  r = a + b;
  return false;
#endif
}

/// A view's validity as check_view decides it and its byte range [lo, hi) (lo == hi when empty or invalid),
/// formed in one pass without early exits or a status: a decode call checks five views and the overlaps of
/// seven pairs of them, and most calls are valid. Decided in integers without dependency chains when every
/// extent and stride is below 2^31 (then each (e - 1) * s is below 2^62 and their sum fits 64 bits unsigned):
/// the sum of those products, two products of extent pairs, and one overflow-checked product. A view with a
/// larger extent or stride is "not ok" here and goes to check_view's exact rule-by-rule pass, which accepts it
/// when valid. (The double estimates this replaced were a chain of eight conversions and multiplies per view:
/// the probes were a sixth of a one-token KV append.)
struct view_probe {
  bool ok;
  const char* lo;
  const char* hi;
  /// Whether the byte ranges of two probed views share a byte (never for an empty one).
  bool overlaps(const view_probe& o) const noexcept { return lo < o.hi && o.lo < hi; }
};

template <class T, std::size_t R, std::size_t... D>
POSENC_ALWAYS_INLINE view_probe probe_view_of(const strided_view<T, R>& v, bool output, std::index_sequence<D...>) {
  // Straight-line over the dimensions (a loop kept its partial products on the stack), no dependency chains.
  // Extents and strides below 2^31 (2^28 past rank 4, whose reach sums more products) keep every product and
  // the sum below 2^64.
  constexpr std::uint64_t limit = std::uint64_t{1} << (R <= 4 ? 31 : 28);
  const auto u = [](index_t x) { return static_cast<std::uint64_t>(x); };
  const index_t e[R] = {v.extent(D)...};
  const index_t s[R] = {v.stride(D)...};
  const bool small = ((u(e[D]) | u(s[D])) | ...) < limit;  // and none negative
  const std::uint64_t reach = ((u(e[D] - 1) * u(s[D])) + ...);  // the last element's offset (wraps when empty)
  const bool repeats = ((s[D] == 0 && e[D] > 1) || ...);
  index_t count = 0;
  bool count_overflows = false;
  if constexpr (R <= 4) {
    // The extents' products two by two (below 2^62 when small), then one overflow-checked product.
    const std::uint64_t lo_dims = ((D < 2 ? u(e[D]) : 1) * ...), hi_dims = ((D < 2 ? 1 : u(e[D])) * ...);
    count_overflows = small && mul_overflows(static_cast<index_t>(lo_dims), static_cast<index_t>(hi_dims), count);
  } else {
    count = 1;
    for (std::size_t d = 0; d < R; ++d) count_overflows = mul_overflows(count, e[d] < 0 ? 0 : e[d], count) || count_overflows;
  }
  const bool empty = count == 0 && !count_overflows;
  const auto* lo = reinterpret_cast<const char*>(v.data());
  // count and span below 2^62 (as check_view's exact rules need: a view that clears this fits index_t).
  const bool ok = small && !(output && repeats && !empty) &&
                  (empty || (lo != nullptr && !count_overflows && count < (index_t{1} << 62) &&
                             reach < (std::uint64_t{1} << 62) / sizeof(T)));
  const std::size_t bytes = ok && !empty ? static_cast<std::size_t>(reach + 1) * sizeof(T) : 0;
  return {ok, lo, lo + bytes};
}

template <class T, std::size_t R>
POSENC_ALWAYS_INLINE view_probe probe_view(const strided_view<T, R>& v, bool output) {
  return probe_view_of(v, output, std::make_index_sequence<R>{});
}

/// Whether check_view accepts `v` (probe_view's verdict). Inlined: a call was a fifth of a one-head RoPE call's
/// checks.
template <class T, std::size_t R>
POSENC_ALWAYS_INLINE bool view_ok(const strided_view<T, R>& v, bool output) {
  return probe_view(v, output).ok;
}

/// Extents and strides >= 0, non-null data when non-empty; an output must not write one element twice
/// through a zero stride.
template <class T, std::size_t R>
status check_view(const char* fn, const char* name, const strided_view<T, R>& v, bool output) {
  // Only a view that view_ok does not clear takes the rule-by-rule pass, which finds the first broken rule.
  if (view_ok(v, output)) return {};
  for (std::size_t d = 0; d < R; ++d) {
    if (v.extent(d) < 0) return fail(fn, name, ".extent(", d, ")=", v.extent(d), " must be >= 0");
    if (v.stride(d) < 0) return fail(fn, name, ".stride(", d, ")=", v.stride(d), " must be >= 0");
    if (output && !v.empty() && v.stride(d) == 0 && v.extent(d) > 1)
      return fail(fn, name, ".stride(", d, ")=0 with extent ", v.extent(d), " writes one element several times");
  }
  if (v.empty()) return {};
  if (v.data() == nullptr) return fail(fn, name, " is null");
  // The element count and the byte span must be representable: a view whose size overflows is rejected before
  // anything is read, written or allocated for it.
  // Overflow-checked products, not divisions: a decode call checks several views, and a 64-bit division costs
  // more than the rest of a check.
  index_t span = 1, count = 1;
  for (std::size_t d = 0; d < R; ++d) {
    const index_t e = v.extent(d), s = v.stride(d);
    if (mul_overflows(count, e, count))
      return fail(fn, name, " has more than 2^63 - 1 elements (extent(", d, ")=", e, ")");
    index_t reach = 0;
    if (mul_overflows(e - 1, s, reach) || add_overflows(span, reach, span))
      return fail(fn, name, " spans more than 2^63 - 1 elements (extent(", d, ")=", e, ", stride ", s, ")");
  }
  index_t bytes = 0;
  if (mul_overflows(span, static_cast<index_t>(sizeof(T)), bytes))
    return fail(fn, name, " spans ", span, " elements of ", sizeof(T), " bytes: more than 2^63 - 1 bytes");
  return {};
}

template <class T, class U, std::size_t R>
POSENC_ALWAYS_INLINE bool same_view(const strided_view<T, R>& a, const strided_view<U, R>& b) {
  // The differences of the 2R + 1 words ORed, without a branch: std::array's == called memcmp (3% of a one-token
  // RoPE call), and a chain of && compiled to a compare and branch per word (56 instructions for rank 4).
  const auto addr = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p); };
  std::uint64_t diff = addr(a.data()) ^ addr(b.data());
  for (std::size_t d = 0; d < R; ++d)
    diff |= static_cast<std::uint64_t>((a.extent(d) ^ b.extent(d)) | (a.stride(d) ^ b.stride(d)));
  return diff == 0;
}

/// Whether the byte ranges [a, a + an) and [b, b + bn) share a byte (never for an empty range).
inline bool bytes_overlap(const void* a, std::size_t an, const void* b, std::size_t bn) {
  if (an == 0 || bn == 0) return false;
  const auto* a0 = static_cast<const char*>(a);
  const auto* b0 = static_cast<const char*>(b);
  return a0 < b0 + bn && b0 < a0 + an;
}

/// Bytes from a view's first element to one past its last (0 when empty).
template <class T, std::size_t R>
std::size_t span_bytes(const strided_view<T, R>& v) {
  return v.empty() ? 0 : static_cast<std::size_t>(v.required_span_size()) * sizeof(T);
}

/// Whether two views' address ranges intersect (conservative for interleaved strides: same as "may alias").
template <class T, std::size_t R, class U, std::size_t S>
bool spans_overlap(const strided_view<T, R>& a, const strided_view<U, S>& b) {
  return bytes_overlap(a.data(), span_bytes(a), b.data(), span_bytes(b));
}

/// Whether a view's address range intersects `count` elements at `p` (a table the call reads).
template <class T, std::size_t R, class C>
bool spans_overlap(const strided_view<T, R>& a, const C* p, std::size_t count) {
  return bytes_overlap(a.data(), span_bytes(a), p, count * sizeof(C));
}

/// The rotary window: head_dim > 0, rotary_dim even in (0, head_dim], and [rotary_offset, rotary_offset +
/// rotary_dim) inside the head. `what` prefixes the names in the message ("table geometry ").
inline status check_window(const char* fn, index_t head_dim, index_t rotary_dim, index_t rotary_offset,
                           const char* what = "") {
  if (head_dim <= 0) return fail(fn, what, "head_dim=", head_dim, " must be > 0");
  if (rotary_dim <= 0 || rotary_dim % 2 != 0) return fail(fn, what, "rotary_dim=", rotary_dim, " must be even and > 0");
  if (rotary_dim > head_dim) return fail(fn, what, "rotary_dim=", rotary_dim, " exceeds head_dim=", head_dim);
  if (rotary_offset < 0 || rotary_offset > head_dim - rotary_dim)
    return fail(fn, what, "rotary_offset=", rotary_offset, " with rotary_dim=", rotary_dim, " does not fit head_dim=",
                head_dim);
  return {};
}

/// A frequency base: finite and > 1, so that base^(-2i/R) decreases with i (every RoPE family, xPos, sinusoids).
inline status check_base(const char* fn, double base, const char* name = "base") {
  if (!(std::isfinite(base) && base > 1.0)) return fail(fn, name, "=", base, " must be finite and > 1");
  return {};
}

/// Two tensors that must hold the same tokens: equal (N, L), the first two extents.
inline status check_same_tokens(const char* fn, const char* a, index_t an, index_t al, const char* b, index_t bn,
                                index_t bl) {
  if (an != bn || al != bl)
    return fail(fn, a, " (N, L)=(", an, ", ", al, ") does not match ", b, " (N, L)=(", bn, ", ", bl, ")");
  return {};
}

/// Two outputs that must not be one tensor (each would be rotated twice).
inline status check_distinct(const char* fn, const char* a, const void* pa, const char* b, const void* pb) {
  if (pa != nullptr && pa == pb) return fail(fn, a, " and ", b, " are the same tensor");
  return {};
}

}  // namespace detail
POSENC_END_NAMESPACE
