// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// Argument checks shared by every public entry: view shapes and strides, aliasing between inputs and outputs.
#pragma once

#include <cstddef>

#include "posenc/config.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/tensor_view.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail {

/// Extents and strides >= 0, non-null data when non-empty; an output must not write one element twice
/// through a zero stride.
template <class T, std::size_t R>
status check_view(const char* fn, const char* name, const strided_view<T, R>& v, bool output) {
  for (std::size_t d = 0; d < R; ++d) {
    if (v.extent(d) < 0) return fail(fn, name, ".extent(", d, ")=", v.extent(d), " must be >= 0");
    if (v.stride(d) < 0) return fail(fn, name, ".stride(", d, ")=", v.stride(d), " must be >= 0");
    if (output && !v.empty() && v.stride(d) == 0 && v.extent(d) > 1)
      return fail(fn, name, ".stride(", d, ")=0 with extent ", v.extent(d), " writes one element several times");
  }
  if (!v.empty() && v.data() == nullptr) return fail(fn, name, " is null");
  return {};
}

template <class T, class U, std::size_t R>
bool same_view(const strided_view<T, R>& a, const strided_view<U, R>& b) {
  return static_cast<const void*>(a.data()) == static_cast<const void*>(b.data()) && a.extents() == b.extents() &&
         a.strides() == b.strides();
}

template <class T, std::size_t R, class U, std::size_t S>
bool spans_overlap(const strided_view<T, R>& a, const strided_view<U, S>& b) {
  if (a.empty() || b.empty()) return false;
  const auto* a0 = reinterpret_cast<const char*>(a.data());
  const auto* b0 = reinterpret_cast<const char*>(b.data());
  const auto* a1 = a0 + a.required_span_size() * static_cast<index_t>(sizeof(T));
  const auto* b1 = b0 + b.required_span_size() * static_cast<index_t>(sizeof(U));
  return a0 < b1 && b0 < a1;
}

}  // namespace detail
POSENC_END_NAMESPACE
