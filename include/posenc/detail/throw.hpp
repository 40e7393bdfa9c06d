// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// How errors are made and reported: detail::fail formats the message into a status (the no-throw channel);
// detail::raise turns a failed status into the exception of the throwing API. Validation code returns statuses
// (POSENC_TRY propagates them), so the same checks serve both APIs and -fno-exceptions builds.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "posenc/config.hpp"
#include "posenc/error.hpp"
#include "posenc/status.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail {

// The message text, formatted without <sstream> (which would add ~25k lines to every includer): strings as
// they are, integers in decimal, floating point as %.17g (what an ostream with precision 17 prints).
inline void append_part(std::string& s, const char* v) { s += v; }
inline void append_part(std::string& s, const std::string& v) { s += v; }
inline void append_part(std::string& s, std::string_view v) { s.append(v.data(), v.size()); }
inline void append_part(std::string& s, char v) { s += v; }
inline void append_part(std::string& s, bool v) { s += v ? '1' : '0'; }
template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
void append_part(std::string& s, T v) {
  s += std::to_string(v);
}
template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
void append_part(std::string& s, T v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", static_cast<double>(v));
  s += buf;
}

template <class... Parts>
std::string format_message(const char* function, const Parts&... parts) {
  std::string s = "posenc::";
  s += function;
  s += ": ";
  (append_part(s, parts), ...);
  return s;
}

// Cold and out of line so that the checks at each public entry cost one compare and a never-taken branch.
template <class... Parts>
POSENC_NOINLINE POSENC_COLD status fail_with(errc code, const char* function, const Parts&... parts) {
  return status(code, format_message(function, parts...));
}

/// An invalid_argument status "posenc::<function>: <parts...>".
template <class... Parts>
POSENC_NOINLINE POSENC_COLD status fail(const char* function, const Parts&... parts) {
  return status(errc::invalid_argument, format_message(function, parts...));
}

/// The throwing API's side of a failed status: argument_error (std::bad_alloc for out_of_memory). Without
/// exceptions the message goes to stderr and the program aborts: use the try_ forms there.
[[noreturn]] POSENC_NOINLINE POSENC_COLD inline void raise(const status& s) {
#if POSENC_HAS_EXCEPTIONS
  if (s.code() == errc::out_of_memory) throw std::bad_alloc();
  throw argument_error(s.message());
#else
  std::fprintf(stderr, "%s\n", s.message().c_str());
  std::abort();
#endif
}

inline void throw_if_error(const status& s) {
  if (!s.ok()) raise(s);
}

template <class... Parts>
[[noreturn]] POSENC_NOINLINE POSENC_COLD void throw_invalid_argument(const char* function, const Parts&... parts) {
  raise(status(errc::invalid_argument, format_message(function, parts...)));
}

/// Runs a build step that allocates, for a try_ form: std::bad_alloc becomes an out_of_memory status instead of
/// escaping a noexcept function.
template <class F>
status guard_alloc(const char* function, F&& f) noexcept {
#if POSENC_HAS_EXCEPTIONS
  try {
    return std::forward<F>(f)();
  } catch (const std::bad_alloc&) {
    return status(errc::out_of_memory, std::string("posenc::") + function + ": out of memory");
  }
#else
  (void)function;
  return std::forward<F>(f)();
#endif
}

}  // namespace detail
POSENC_END_NAMESPACE
