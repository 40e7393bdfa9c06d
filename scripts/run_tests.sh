#!/usr/bin/env bash
# Builds and runs every posenc test on a fresh Debian 12 machine: installs what is missing, then configures,
# builds (warnings are errors) and runs CTest with clang++ (plus the AVX2/AVX-512 ops emulated through
# SIMDe) and with g++ (which also builds the benchmarks), then cross-builds the test binary for AArch64 and
# runs its NEON suites under qemu-user.
# Every golden suite runs once per ISA this CPU supports; the ISAs it lacks are reported skipped by name.
# Usage: bash scripts/run_tests.sh [build-dir-prefix]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh clang libsimde-dev libbenchmark-dev
prefix=${1:-build/tests}
for cxx in clang++ g++; do
  build="$prefix-$cxx"
  # clang builds the emulated binary, g++ the benchmarks (built, not run: they are not tests).
  # clang also builds posenc_tests against the separately compiled kernels (posenc::separate), g++ header-only.
  emulation=OFF bench=ON separate=OFF
  [ "$cxx" = clang++ ] && emulation=ON bench=OFF separate=ON
  echo "== $cxx: $build"
  start=$SECONDS
  CXX=$cxx cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DPOSENC_WERROR=ON -DPOSENC_BUILD_TESTS=ON \
    -DPOSENC_BUILD_EXAMPLES=ON -DPOSENC_TEST_EMULATION=$emulation -DPOSENC_BUILD_BENCHMARKS=$bench \
    -DPOSENC_TEST_SEPARATE_COMPILATION=$separate
  cmake --build "$build" -j "$(nproc)"
  ctest --test-dir "$build" --output-on-failure -j "$(nproc)"
  echo "== $cxx: $((SECONDS - start)) s"
done
echo "== aarch64 (cross build, qemu-user): $prefix-aarch64"
start=$SECONDS
bash scripts/cross_aarch64.sh "$prefix-aarch64"
echo "== aarch64: $((SECONDS - start)) s"
