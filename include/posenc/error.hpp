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

/// What the CUDA launchers (posenc/cuda/) throw when the CUDA runtime reports an error: an allocation, copy or
/// launch that failed, with the runtime's own error string, e.g. `posenc::cuda::apply_rope: launch failed:
/// no kernel image is available for execution on the device`. Never thrown by the CPU API.
class device_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

POSENC_END_NAMESPACE
