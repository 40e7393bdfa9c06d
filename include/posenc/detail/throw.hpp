// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// How errors are made and reported: detail::fail formats the message into a status (the no-throw channel);
// detail::raise turns a failed status into the exception of the throwing API. Validation code returns statuses
// (POSENC_TRY propagates them), so the same checks serve both APIs and -fno-exceptions builds.
//
// Nothing here includes <string>, <sstream> or <stdexcept>: the message is formatted with snprintf into a
// malloc'd buffer the status adopts, and raise() (which needs argument_error) is defined in
// detail/raise-impl.hpp, compiled once under POSENC_SEPARATE_COMPILATION (posenc/src.hpp).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>
#include <type_traits>
#include <utility>

#include "posenc/config.hpp"
#include "posenc/status.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail {

/// A growing malloc'd character buffer; on allocation failure it stops growing and reports it (the status then
/// says "out of memory while formatting").
class message_builder {
 public:
  message_builder() = default;
  message_builder(const message_builder&) = delete;
  message_builder& operator=(const message_builder&) = delete;
  message_builder(message_builder&&) = delete;
  message_builder& operator=(message_builder&&) = delete;
  ~message_builder() { std::free(buf_); }

  void append(const char* s, std::size_t n) noexcept {
    if (failed_ || !reserve(len_ + n + 1)) return;
    if (n) std::memcpy(buf_ + len_, s, n);
    len_ += n;
    buf_[len_] = '\0';
  }
  /// Hands the buffer to a status (nullptr, and so the out-of-memory text, if any allocation failed).
  status finish(errc code) noexcept {
    if (failed_ || buf_ == nullptr) {
      std::free(buf_);
      buf_ = nullptr;
      return status::adopt(code, nullptr, 0);
    }
    char* b = buf_;
    buf_ = nullptr;
    return status::adopt(code, b, len_);
  }

 private:
  bool reserve(std::size_t need) noexcept {
    if (need <= cap_) return true;
    std::size_t cap = cap_ ? cap_ : 128;
    while (cap < need) cap *= 2;
    char* p = static_cast<char*>(std::realloc(buf_, cap));
    if (p == nullptr) {
      failed_ = true;
      return false;
    }
    buf_ = p;
    cap_ = cap;
    return true;
  }

  char* buf_ = nullptr;
  std::size_t len_ = 0;
  std::size_t cap_ = 0;
  bool failed_ = false;
};

// The message parts: strings as they are, integers in decimal, floating point as %.17g (what an ostream with
// precision 17 prints), bool as 1/0.
inline void append_part(message_builder& b, std::string_view v) { b.append(v.data(), v.size()); }
inline void append_part(message_builder& b, const char* v) { append_part(b, std::string_view(v)); }
inline void append_part(message_builder& b, char v) { b.append(&v, 1); }
inline void append_part(message_builder& b, bool v) { append_part(b, v ? '1' : '0'); }
template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, char>, int> = 0>
void append_part(message_builder& b, T v) {
  char buf[32];
  const int n = std::is_signed_v<T> ? std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v))
                                    : std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(v));
  b.append(buf, static_cast<std::size_t>(n));
}
template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
void append_part(message_builder& b, T v) {
  char buf[40];
  const int n = std::snprintf(buf, sizeof buf, "%.17g", static_cast<double>(v));
  b.append(buf, static_cast<std::size_t>(n));
}
/// std::string and anything else with data() and size() of char.
template <class S, std::enable_if_t<std::is_convertible_v<const S&, std::string_view> && !std::is_pointer_v<S> &&
                                        !std::is_array_v<S> && !std::is_same_v<S, std::string_view>,
                                    int> = 0>
void append_part(message_builder& b, const S& v) {
  append_part(b, std::string_view(v));
}

/// The status "posenc::<function>: <parts...>" with code `code`.
template <class... Parts>
status make_status(errc code, const char* function, const Parts&... parts) noexcept {
  message_builder b;
  append_part(b, "posenc::");
  append_part(b, function);
  append_part(b, ": ");
  (append_part(b, parts), ...);
  return b.finish(code);
}

// Cold and out of line so that the checks at each public entry cost one compare and a never-taken branch.
template <class... Parts>
POSENC_NOINLINE POSENC_COLD status fail_with(errc code, const char* function, const Parts&... parts) {
  return make_status(code, function, parts...);
}

/// An invalid_argument status "posenc::<function>: <parts...>".
template <class... Parts>
POSENC_NOINLINE POSENC_COLD status fail(const char* function, const Parts&... parts) {
  return make_status(errc::invalid_argument, function, parts...);
}

/// The throwing API's side of a failed status: argument_error (std::bad_alloc for out_of_memory). Without
/// exceptions the message goes to stderr and the program aborts: use the try_ forms there. Defined in
/// detail/raise-impl.hpp.
[[noreturn]] POSENC_COLD POSENC_DECL void raise(const status& s);

inline void throw_if_error(const status& s) {
  if (!s.ok()) raise(s);
}

template <class... Parts>
[[noreturn]] POSENC_NOINLINE POSENC_COLD void throw_invalid_argument(const char* function, const Parts&... parts) {
  raise(make_status(errc::invalid_argument, function, parts...));
}

/// The status of an allocation that failed inside `function` (guard_alloc's, and a size past a vector's
/// max_size(), where std::vector would throw std::length_error, which must not leave a noexcept try_ form).
inline status out_of_memory(const char* function) { return make_status(errc::out_of_memory, function, "out of memory"); }

/// Runs a build step that allocates, for a try_ form: std::bad_alloc becomes an out_of_memory status instead of
/// escaping a noexcept function.
template <class F>
status guard_alloc(const char* function, F&& f) noexcept {
#if POSENC_HAS_EXCEPTIONS
  try {
    return std::forward<F>(f)();
  } catch (const std::bad_alloc&) {
    return out_of_memory(function);
  }
#else
  (void)function;
  return std::forward<F>(f)();
#endif
}

}  // namespace detail
POSENC_END_NAMESPACE

#if !defined(POSENC_SEPARATE_COMPILATION)
#include "posenc/detail/raise-impl.hpp"
#endif
