// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// Kept for source compatibility: the Python-API counterparts moved to posenc/compat/ (namespace
// posenc::compat) and left the umbrella header. This header includes them and keeps the old names
// posenc::zeta and posenc::tiny_llm as namespace aliases. New code includes posenc/compat/<api>.hpp
// (posenc/compat/zeta.hpp, posenc/compat/tiny_llm.hpp) and names posenc::compat::<api>.
#pragma once

#include "posenc/compat/tiny_llm.hpp"  // IWYU pragma: export
#include "posenc/compat/zeta.hpp"      // IWYU pragma: export
#include "posenc/config.hpp"

POSENC_BEGIN_NAMESPACE

namespace zeta = compat::zeta;
namespace tiny_llm = compat::tiny_llm;

POSENC_END_NAMESPACE
