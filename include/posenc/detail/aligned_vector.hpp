// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// Storage posenc allocates for tables the kernels read with vector loads (rope_cache's cos/sin): aligned to a
// cache line, as engines align their tensors (PyTorch's allocator to 512 bytes, ggml to 32). malloc gives 16
// bytes (and 16 past a page for large blocks), so every other 32-byte load of a float row crossed a cache line.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

#include "posenc/config.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail {

/// std::allocator's interface over C++17's aligned operator new (throws std::bad_alloc like it).
template <class T, std::size_t Align = 64>
struct aligned_allocator {
  using value_type = T;
  template <class U>
  struct rebind {
    using other = aligned_allocator<U, Align>;
  };
  aligned_allocator() noexcept = default;
  template <class U>
  aligned_allocator(const aligned_allocator<U, Align>&) noexcept {}  // NOLINT(google-explicit-constructor)
  // n <= max_size(): std::vector checks it before allocating.
  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{Align}));
  }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, std::align_val_t{Align}); }
  template <class U>
  bool operator==(const aligned_allocator<U, Align>&) const noexcept {
    return true;
  }
  template <class U>
  bool operator!=(const aligned_allocator<U, Align>&) const noexcept {
    return false;
  }
};

/// A std::vector whose data() is 64-byte aligned.
template <class T>
using aligned_vector = std::vector<T, aligned_allocator<T>>;

}  // namespace detail
POSENC_END_NAMESPACE
