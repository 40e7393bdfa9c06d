#!/usr/bin/env bash
# Builds the RoPE differential libFuzzer target (tests/fuzz/rope_diff_fuzz.cpp: every vector path against the
# scalar path, and the properties backward(forward(x)) = m^2 x, norms kept, split calls equal whole ones) with
# clang (-fsanitize=fuzzer,address,undefined) and runs it from the seed corpus for N seconds (default 60).
# Fails on any finding. Usage: bash scripts/fuzz_rope.sh [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh clang libclang-rt-14-dev
seconds=${1:-60}
out=build/fuzz-rope
rm -rf "$out/corpus"
mkdir -p "$out/corpus"
cp tests/fuzz/corpus_rope/* "$out/corpus/"
clang++ -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Wall -Wextra -Werror \
  -Iinclude tests/fuzz/rope_diff_fuzz.cpp -o "$out/rope_diff_fuzz"
# -max_len: room for the largest shapes the target draws; -rss_limit_mb: ASan's quarantine grows over a run.
"$out/rope_diff_fuzz" -max_total_time="$seconds" -max_len=8192 -rss_limit_mb=2048 -print_final_stats=1 \
  "$out/corpus" 2>&1 | tee "$out/fuzz.log" | grep -E "INITED|DONE|stat::number|rope_diff_fuzz:|ERROR|SUMMARY" || true
if grep -qE "rope_diff_fuzz: |ERROR: |SUMMARY: |crash-|leak-|timeout-|oom-" "$out/fuzz.log"; then
  echo "fuzz_rope.sh: the fuzzer found a problem (see $out/fuzz.log)" >&2
  exit 1
fi
isas=$(for i in avx2 avx512f asimd; do if grep -qw "$i" /proc/cpuinfo; then printf ' %s' "$i"; fi; done)
echo "fuzz_rope.sh: no finding in ${seconds}s (vector paths compared with scalar on this CPU:${isas:- none})"
