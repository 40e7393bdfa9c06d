// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// The no-throw error channel. Every public apply/build function has a `try_` form that is noexcept and returns
// a posenc::status; the throwing function is a thin wrapper that throws argument_error with the same message.
// A build with -fno-exceptions calls the try_ forms and never aborts on user input.
#pragma once

#include <string>
#include <utility>

#include "posenc/config.hpp"

POSENC_BEGIN_NAMESPACE

/// What went wrong, coarsely; the message says exactly what.
enum class errc : int {
  ok = 0,
  invalid_argument,  ///< a bad shape, stride, position, config value or aliasing (argument_error when thrown)
  invalid_file,      ///< a file that is not what it claims (bad magic, truncated, huge counts, wrong types)
  io_error,          ///< a file that cannot be opened or read
  out_of_memory,     ///< an allocation a build function needed failed (std::bad_alloc when thrown)
};

/// The result of a `try_` function: ok, or a code and the message the throwing form would carry, e.g.
/// `posenc::apply_rope: x head dim (extent 3)=130 does not match the plan's head_dim=128`. An ok status holds
/// an empty string, so the success path allocates nothing.
///
/// **Example**
/// ```
/// if (posenc::status s = posenc::try_apply_rope(plan, q, pos); !s) {
///   log_error(s.message());   // nothing was written to q
///   return;
/// }
/// ```
class [[nodiscard]] status {
 public:
  status() noexcept = default;
  status(errc code, std::string message) noexcept : code_(code), message_(std::move(message)) {}

  bool ok() const noexcept { return code_ == errc::ok; }
  explicit operator bool() const noexcept { return ok(); }
  errc code() const noexcept { return code_; }
  /// Empty when ok.
  const std::string& message() const noexcept { return message_; }

 private:
  errc code_ = errc::ok;
  std::string message_;
};

POSENC_END_NAMESPACE

/// Returns the status of `expr` from the enclosing function unless it is ok.
#define POSENC_TRY(expr)                                \
  do {                                                  \
    ::posenc::status posenc_try_status_ = (expr);       \
    if (!posenc_try_status_.ok()) return posenc_try_status_; \
  } while (0)
