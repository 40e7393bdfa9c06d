#!/usr/bin/env bash
# Builds posenc's ISA test binary (posenc_isa_tests: the sources of posenc_tests that hold a suite per ISA) for
# AArch64 (NEON kernels, run-time dispatch between scalar and NEON) with Debian's cross compiler (warnings as
# errors) and runs it under qemu-user: every golden, kernel, op-list and thread-range suite on NEON. GoogleTest
# is built for the target from the sources Debian's googletest package installs.
# Usage: bash scripts/cross_aarch64.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh g++-aarch64-linux-gnu qemu-user googletest
build=${1:-build/aarch64}
toolchain=$PWD/cmake/toolchains/aarch64-linux-gnu.cmake
if [ ! -f "$build/gtest-prefix/lib/cmake/GTest/GTestConfig.cmake" ]; then
  cmake -S /usr/src/googletest -B "$build/gtest" -DCMAKE_TOOLCHAIN_FILE="$toolchain" -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_GMOCK=OFF -DCMAKE_INSTALL_PREFIX="$PWD/$build/gtest-prefix" > /dev/null
  cmake --build "$build/gtest" -j "$(nproc)" > /dev/null
  cmake --install "$build/gtest" > /dev/null
fi
cmake -S . -B "$build/posenc" -DCMAKE_TOOLCHAIN_FILE="$toolchain" -DCMAKE_BUILD_TYPE=Release -DPOSENC_WERROR=ON \
  -DPOSENC_BUILD_TESTS=ON -DPOSENC_BUILD_EXAMPLES=OFF -DPOSENC_INSTALL=OFF \
  -DCMAKE_PREFIX_PATH="$PWD/$build/gtest-prefix" > /dev/null
cmake --build "$build/posenc" -j "$(nproc)" --target posenc_isa_tests
# Two processes per core (each CTest process would start qemu anew), the tests split between them by
# GoogleTest's sharding: a few suites dominate, and four shards on 2 cores measured 110 s against 127 s for two
# and 175 s for one process. Every suite parameterized by the ISA runs for
# NEON: the golden files of every encoding, the kernels on random shapes, the op list, the thread ranges; plus
# the dispatch tests. The ISA-independent suites and the portable target run natively in the x86-64 jobs.
# NEON is AArch64's baseline: nothing here may skip.
rc=0
shards=$((2 * $(nproc)))
pids=()
for ((i = 0; i < shards; ++i)); do
  GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i qemu-aarch64 -L /usr/aarch64-linux-gnu \
    "$build/posenc/tests/posenc_isa_tests" --gtest_brief=1 --gtest_filter='*neon*:Dispatch*:Slicing*' \
    > "$build/shard-$i.log" 2>&1 &
  pids+=($!)
done
for pid in "${pids[@]}"; do
  wait "$pid" || rc=$?
done
out=$(cat "$build"/shard-*.log)
grep -h "tests from .* test suites ran\|PASSED\|FAILED" "$build"/shard-*.log || true
if [ "$rc" -ne 0 ]; then
  # The failures themselves (gtest_brief prints only them and the summary).
  grep -B2 -A12 "Failure\|FAILED" <<<"$out" | head -n 80 >&2 || true
  echo "cross_aarch64.sh: the NEON suites failed under qemu (exit $rc)" >&2
  exit "$rc"
fi
if grep -q "SKIPPED" <<<"$out"; then
  echo "cross_aarch64.sh: a test skipped on AArch64, where every suite must run" >&2
  exit 1
fi
