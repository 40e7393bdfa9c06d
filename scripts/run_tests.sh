#!/usr/bin/env bash
# Builds and runs every posenc test on a fresh Debian 12 machine: installs what is missing, configures with
# warnings as errors, builds, runs CTest. Usage: bash scripts/run_tests.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
build=${1:-build/tests-release}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DPOSENC_WERROR=ON -DPOSENC_BUILD_TESTS=ON -DPOSENC_BUILD_EXAMPLES=ON
cmake --build "$build" -j "$(nproc)"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
