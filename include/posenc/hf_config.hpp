// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// Kept for source compatibility: the Hugging Face config.json reader moved to posenc/io/hf_config.hpp with the
// other model-file readers. New code includes that header.
#pragma once

#include "posenc/io/hf_config.hpp"  // IWYU pragma: export
