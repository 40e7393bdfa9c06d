#!/usr/bin/env bash
# Builds and runs every posenc test on a fresh Debian 12 machine: installs what is missing, then configures,
# builds (warnings are errors) and runs CTest twice, with g++ and with clang++.
# Usage: bash scripts/run_tests.sh [build-dir-prefix]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh clang
prefix=${1:-build/tests}
for cxx in clang++ g++; do
  build="$prefix-$cxx"
  echo "== $cxx: $build"
  CXX=$cxx cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DPOSENC_WERROR=ON -DPOSENC_BUILD_TESTS=ON \
    -DPOSENC_BUILD_EXAMPLES=ON
  cmake --build "$build" -j "$(nproc)"
  ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
done
