// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
//
// detail::raise, the one place a failed status becomes an exception. Included by detail/throw.hpp in
// header-only builds (inline) and by posenc/src.hpp once under POSENC_SEPARATE_COMPILATION, so that the light
// headers never pull in <stdexcept> (and with it <string>).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <new>

#include "posenc/config.hpp"
#include "posenc/detail/throw.hpp"
#include "posenc/error.hpp"
#include "posenc/status.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail {

[[noreturn]] POSENC_COLD POSENC_DECL void raise(const status& s) {
#if POSENC_HAS_EXCEPTIONS
  if (s.code() == errc::out_of_memory) throw std::bad_alloc();
  if (s.code() == errc::device_error) throw device_error(s.c_str());
  throw argument_error(s.c_str());
#else
  std::fprintf(stderr, "%s\n", s.c_str());
  std::abort();
#endif
}

}  // namespace detail
POSENC_END_NAMESPACE
