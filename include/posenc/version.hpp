// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
#pragma once

#define POSENC_VERSION_MAJOR 0
#define POSENC_VERSION_MINOR 2
#define POSENC_VERSION_PATCH 0
// Single integer for preprocessor comparisons: 10000 * major + 100 * minor + patch.
#define POSENC_VERSION (POSENC_VERSION_MAJOR * 10000 + POSENC_VERSION_MINOR * 100 + POSENC_VERSION_PATCH)
#define POSENC_VERSION_STRING "0.2.0"
