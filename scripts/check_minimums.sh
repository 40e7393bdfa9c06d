#!/usr/bin/env bash
# The declared floor, tested: CMake 3.20 (the oldest cmake_minimum_required posenc states; PyPI's cmake 3.20.x
# in a virtual environment, since Debian 12 ships 3.25) configures the whole project (tests, examples,
# benchmarks), installs it, and builds and runs the find_package consumer against the installed package.
# Eigen's floor, 3.4, is what Debian 12 ships (libeigen3-dev 3.4.0), so every other job tests it.
# Usage: bash scripts/check_minimums.sh [work-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh python3-venv libbenchmark-dev
work=$(realpath -m "${1:-build/minimums}")
rm -rf "$work"
mkdir -p "$work"
/usr/bin/python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q "cmake==3.20.*"
cmake="$work/venv/bin/cmake"
"$cmake" --version | head -1
"$cmake" -S . -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DPOSENC_BUILD_TESTS=ON -DPOSENC_BUILD_EXAMPLES=OFF \
  -DPOSENC_BUILD_BENCHMARKS=ON >/dev/null
"$cmake" --install "$work/build" --prefix "$work/prefix" >/dev/null
"$cmake" -S tests/package/find_package -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
"$cmake" --build "$work/consumer" -j "$(nproc)" >/dev/null
"$work/consumer/consumer"
echo "check_minimums: ok (CMake $("$cmake" --version | head -1 | cut -d' ' -f3), Eigen from libeigen3-dev)"
