// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// The no-throw error channel. Every public apply/build function has a `try_` form that is noexcept and returns
// a posenc::status; the throwing function is a thin wrapper that throws argument_error with the same message.
// A build with -fno-exceptions calls the try_ forms and never aborts on user input.
//
// The message is held in a malloc'd buffer rather than a std::string: <string> alone preprocesses to ~22k
// lines, and every header that can fail includes this one.
#pragma once

#include <cstdlib>
#include <cstring>
#include <string_view>

#include "posenc/config.hpp"
#include "posenc/enum_names.hpp"

POSENC_BEGIN_NAMESPACE

/// What went wrong, coarsely; the message says exactly what.
enum class errc : int {
  ok = 0,
  invalid_argument,  ///< a bad shape, stride, position, config value or aliasing (argument_error when thrown)
  invalid_file,      ///< a file that is not what it claims (bad magic, truncated, huge counts, wrong types)
  io_error,          ///< a file that cannot be opened or read
  out_of_memory,     ///< an allocation a build function needed failed (std::bad_alloc when thrown)
  device_error,      ///< a CUDA runtime call or kernel launch failed (posenc/cuda/; device_error when thrown)
};
/// The spellings of errc (posenc/enum_names.hpp: to_string, parse).
template <>
struct enum_names<errc> {
  /// Canonical name first per value, then accepted aliases.
  static constexpr enum_name<errc> list[] = {{errc::ok, "ok"},
                                             {errc::invalid_argument, "invalid_argument"},
                                             {errc::invalid_file, "invalid_file"},
                                             {errc::io_error, "io_error"},
                                             {errc::out_of_memory, "out_of_memory"},
                                             {errc::device_error, "device_error"}};
};

/// The result of a `try_` function: ok, or a code and the message the throwing form would carry, e.g.
/// `posenc::apply_rope: x head dim (extent 3)=130 does not match the plan's head_dim=128`. An ok status holds
/// no message, so the success path allocates nothing. If the message itself cannot be allocated, the code is
/// kept and the message says so.
///
/// **Example**
/// ```
/// if (posenc::status s = posenc::try_apply_rope(plan, q, pos); !s) {
///   log_error(s.c_str());   // nothing was written to q
///   return;
/// }
/// ```
class [[nodiscard]] status {
 public:
  status() noexcept = default;
  /// A status of `code` holding a copy of `message` (an ok code holds none). If the copy cannot be allocated,
  /// the code is kept and the message says so.
  status(errc code, std::string_view message) noexcept : code_(code) { assign(message); }
  /// Copies o's code and message (allocating, as the constructor above; never throws).
  status(const status& o) noexcept : code_(o.code_) { assign(o.message()); }
  /// Takes o's message without copying; o is left ok, with no message.
  status(status&& o) noexcept : code_(o.code_), msg_(o.msg_), len_(o.len_) {
    o.code_ = errc::ok;
    o.msg_ = nullptr;
    o.len_ = 0;
  }
  /// Frees this message, then copies o's code and message (as the copy constructor).
  status& operator=(const status& o) noexcept {
    if (this != &o) {
      release();
      code_ = o.code_;
      assign(o.message());
    }
    return *this;
  }
  /// Frees this message and takes o's without copying; o is left ok, with no message.
  status& operator=(status&& o) noexcept {
    if (this != &o) {
      release();
      code_ = o.code_;
      msg_ = o.msg_;
      len_ = o.len_;
      o.code_ = errc::ok;
      o.msg_ = nullptr;
      o.len_ = 0;
    }
    return *this;
  }
  ~status() { release(); }

  /// True when code() is errc::ok.
  bool ok() const noexcept { return code_ == errc::ok; }
  /// ok(): `if (!s)` tests for an error.
  explicit operator bool() const noexcept { return ok(); }
  /// What went wrong; errc::ok on success.
  errc code() const noexcept { return code_; }
  /// Empty when ok.
  std::string_view message() const noexcept { return msg_ ? std::string_view(msg_, len_) : std::string_view(); }
  /// The message, null-terminated ("" when ok).
  const char* c_str() const noexcept { return msg_ ? msg_ : ""; }

  /// Takes a buffer from std::malloc holding `len` characters and a terminating null (detail::message_builder).
  static status adopt(errc code, char* buf, std::size_t len) noexcept {
    status s;
    s.code_ = code;
    if (buf == nullptr) {
      s.assign(no_memory);
    } else {
      s.msg_ = buf;
      s.len_ = len;
    }
    return s;
  }

 private:
  static constexpr const char* no_memory = "posenc: out of memory while formatting an error message";

  void assign(std::string_view m) noexcept {
    if (code_ == errc::ok) return;
    char* p = static_cast<char*>(std::malloc(m.size() + 1));
    if (p == nullptr) {
      m = no_memory;
      p = static_cast<char*>(std::malloc(m.size() + 1));
      if (p == nullptr) return;  // message() is then empty; the code still tells what happened
    }
    if (!m.empty()) std::memcpy(p, m.data(), m.size());
    p[m.size()] = '\0';
    msg_ = p;
    len_ = m.size();
  }
  void release() noexcept {
    if (msg_ != nullptr) std::free(msg_);  // an ok status (every successful call) never reaches libc
    msg_ = nullptr;
    len_ = 0;
  }

  errc code_ = errc::ok;
  char* msg_ = nullptr;
  std::size_t len_ = 0;
};

POSENC_END_NAMESPACE

/// Returns the status of `expr` from the enclosing function unless it is ok.
#define POSENC_TRY(expr)                                \
  do {                                                  \
    ::posenc::status posenc_try_status_ = (expr);       \
    if (!posenc_try_status_.ok()) return posenc_try_status_; \
  } while (0)
