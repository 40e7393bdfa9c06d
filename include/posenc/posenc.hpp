// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// The umbrella header: every public posenc API except the optional utilities (posenc/io/ for .npy files,
// posenc/compat/ for the Python-API counterparts, posenc/io/hf_config.hpp, which needs nlohmann/json, and
// posenc/io/gguf.hpp). Engines that want less include one header per encoding.
#pragma once

#include "posenc/alibi.hpp"        // IWYU pragma: export
#include "posenc/binding.hpp"      // IWYU pragma: export
#include "posenc/config.hpp"       // IWYU pragma: export
#include "posenc/dispatch.hpp"     // IWYU pragma: export
#include "posenc/eigen.hpp"        // IWYU pragma: export
#include "posenc/error.hpp"        // IWYU pragma: export
#include "posenc/kv_cache.hpp"     // IWYU pragma: export
#include "posenc/learned.hpp"      // IWYU pragma: export
#include "posenc/model_plan.hpp"   // IWYU pragma: export
#include "posenc/mrope.hpp"        // IWYU pragma: export
#include "posenc/positions.hpp"    // IWYU pragma: export
#include "posenc/quantize.hpp"     // IWYU pragma: export
#include "posenc/t5_bias.hpp" // IWYU pragma: export
#include "posenc/rope.hpp"         // IWYU pragma: export
#include "posenc/rope_ops.hpp"     // IWYU pragma: export
#include "posenc/rope_plan.hpp" // IWYU pragma: export
#include "posenc/sinusoidal.hpp"   // IWYU pragma: export
#include "posenc/status.hpp"       // IWYU pragma: export
#include "posenc/storage.hpp"      // IWYU pragma: export
#include "posenc/tensor_view.hpp"  // IWYU pragma: export
#include "posenc/types.hpp"        // IWYU pragma: export
#include "posenc/version.hpp"      // IWYU pragma: export
#include "posenc/vision_plan.hpp"  // IWYU pragma: export
#include "posenc/xpos.hpp"         // IWYU pragma: export
