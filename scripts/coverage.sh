#!/usr/bin/env bash
# Line coverage of include/posenc/ by posenc_tests and posenc_core_tests: g++ --coverage at -O0, no
# sanitizers, the suites run in one shard per core, gcov's JSON summarised by scripts/coverage_report.py
# (the README's figure). Not part of CI (a full -O0 build: ~10 minutes on 2 cores). The ISA suites the CPU
# lacks skip, so an AVX-512 machine covers the most. Usage: bash scripts/coverage.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
build=$(realpath -m "${1:-build/coverage}")
CXX=g++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS="--coverage -O0" \
  -DCMAKE_EXE_LINKER_FLAGS=--coverage -DPOSENC_BUILD_TESTS=ON -DPOSENC_BUILD_EXAMPLES=OFF \
  -DPOSENC_TEST_EMULATED_CPUS=OFF > /dev/null
cmake --build "$build" -j "$(nproc)" --target posenc_tests posenc_core_tests
find "$build" -name '*.gcda' -delete
shards=$(nproc)
for i in $(seq 0 $((shards - 1))); do
  GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i "$build/tests/posenc_tests" --gtest_brief=1 > "$build/shard$i.log" 2>&1 &
done
"$build/tests/posenc_core_tests" --gtest_brief=1 > "$build/core.log" 2>&1
wait
if grep -q "FAILED" "$build"/shard*.log "$build/core.log"; then
  echo "coverage.sh: a test failed (see $build/shard*.log)" >&2
  exit 1
fi
mkdir -p "$build/gcov"
(cd "$build/gcov" && find "$build/tests/CMakeFiles" -name '*.gcda' | xargs -P "$(nproc)" -n 4 gcov -j -p > /dev/null 2>&1)
/usr/bin/python3 scripts/coverage_report.py "$build/gcov" include/posenc
