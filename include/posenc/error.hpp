// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
#pragma once

#include <stdexcept>

#include "posenc/config.hpp"

POSENC_BEGIN_NAMESPACE

/// The one exception type posenc throws for bad input. Its message names the function, the argument and
/// its value, e.g. `posenc::apply_rope: rotary_dim=130 exceeds head_dim=128`. Every public function
/// validates all of its arguments before it writes anything, so on this exception the outputs are untouched.
class argument_error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

POSENC_END_NAMESPACE
