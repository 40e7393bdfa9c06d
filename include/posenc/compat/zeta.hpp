// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// posenc::compat::zeta: the C++ counterparts of the positional-encoding APIs of kyegomez/zeta (the Python
// package `zeta`, PyPI zetascale), one header per Python module, both included here:
//   posenc/compat/zeta/rope.hpp                    zeta/nn/embeddings/rope.py: RotaryEmbedding (after
//                                                  lucidrains' rotary-embedding-torch) -> rotary_embedding
//   posenc/compat/zeta/xpos_relative_position.hpp  zeta/nn/embeddings/xpos_relative_position.py (Microsoft
//                                                  torchscale's torchscale/component/xpos_relative_position.py):
//                                                  fixed_pos_embedding, rotate_every_two, duplicate_interleave,
//                                                  apply_rotary_pos_emb, XPOS -> xpos
// Version: the seeds (shared/seeds/000_*, 001_*: zeta's documentation pages) pin no release or commit; what is
// mirrored is the behaviour those pages and tests/golden/gen_golden.py describe.
//
// Inputs and outputs are row-major Eigen tensors (zeta::tensor) in the Python shapes; every function returns a
// new tensor, as the Python does. Angles and scales are formed in double and rounded to the storage type once,
// where torch works in float32: results agree to float rounding, and are closer to the exact values. Engines
// that want in-place work on strided memory take the equivalent plans (rotary_embedding::plan,
// rotary_embedding::make_xpos_plan, xpos::plan) to apply_rope / apply_xpos directly.
// Every function and constructor that can fail has a noexcept try_ form returning a posenc::status
// (invalid_argument, or out_of_memory), its result in an out-parameter (the last), unchanged on error; the
// throwing forms throw posenc::argument_error with the same message.
//
// Not part of the umbrella header posenc/posenc.hpp.
//
// **Example**
// ```
// #include <posenc/compat/zeta.hpp>
// posenc::compat::zeta::xpos xp(64);
// auto k2 = xp.forward(k, /*offset=*/0, /*downscale=*/true);   // k: (B*H, L, 64), as torchscale's XPOS
// ```
#pragma once

#include "posenc/compat/common.hpp"                  // IWYU pragma: export
#include "posenc/compat/zeta/rope.hpp"               // IWYU pragma: export
#include "posenc/compat/zeta/xpos_relative_position.hpp" // IWYU pragma: export
