#!/usr/bin/env bash
# Builds the .npy reader's libFuzzer target with clang (-fsanitize=fuzzer,address,undefined) and runs it on
# the seed corpus for N seconds (default 60). Fails on any finding. Usage: bash scripts/fuzz_npy.sh [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh clang libclang-rt-14-dev
seconds=${1:-60}
out=build/fuzz
mkdir -p "$out/corpus"
cp tests/fuzz/corpus/* "$out/corpus/"
clang++ -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  -Iinclude -I/usr/include/eigen3 tests/fuzz/npy_fuzz.cpp -o "$out/npy_fuzz"
# -rss_limit_mb: the reader must never allocate more than the input; 256 MB is far above any honest need.
"$out/npy_fuzz" -max_total_time="$seconds" -rss_limit_mb=256 -malloc_limit_mb=64 -print_final_stats=1 \
  "$out/corpus" 2>&1 | tee "$out/fuzz.log" | grep -E "INITED|DONE|stat::|ERROR|SUMMARY|crash" || true
if grep -qE "ERROR: |SUMMARY: |crash-|leak-|timeout-|oom-" "$out/fuzz.log"; then
  echo "fuzz_npy.sh: the fuzzer found a problem (see $out/fuzz.log)" >&2
  exit 1
fi
echo "fuzz_npy.sh: no finding in ${seconds}s"
