// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// Kept for source compatibility: the .npy utilities moved to posenc/io/npy.hpp (the format: npy_array,
// parse/serialize, read/write files) and posenc/io/npy_tensors.hpp (Eigen tensors and the learned modules'
// tables); same names, still in namespace posenc. New code includes the one it needs. Not in the umbrella header.
#pragma once

#include "posenc/io/npy.hpp"          // IWYU pragma: export
#include "posenc/io/npy_tensors.hpp"  // IWYU pragma: export
