// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
// IWYU pragma: private
#pragma once

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "posenc/config.hpp"
#include "posenc/error.hpp"

POSENC_BEGIN_NAMESPACE
namespace detail {

// Cold and out of line so that the checks at each public entry cost one compare and a never-taken branch.
template <class... Parts>
[[noreturn]] POSENC_NOINLINE POSENC_COLD void throw_invalid_argument(const char* function, const Parts&... parts) {
  std::ostringstream os;
  os.precision(17);
  os << "posenc::" << function << ": ";
  (os << ... << parts);
#if POSENC_HAS_EXCEPTIONS
  throw argument_error(os.str());
#else
  std::fprintf(stderr, "%s\n", os.str().c_str());
  std::abort();
#endif
}

}  // namespace detail
POSENC_END_NAMESPACE
