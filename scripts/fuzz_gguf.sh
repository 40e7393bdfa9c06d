#!/usr/bin/env bash
# Builds the GGUF reader's libFuzzer target with clang (-fsanitize=fuzzer,address,undefined) and runs it for N
# seconds (default 30), seeded with the test files of tests/data/gguf/ and a dictionary of GGUF tokens and
# llama.cpp keys. Fails on any finding. Usage: bash scripts/fuzz_gguf.sh [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh clang libclang-rt-14-dev
seconds=${1:-30}
out=build/fuzz-gguf
mkdir -p "$out/corpus"
cp tests/data/gguf/*.gguf "$out/corpus/"
# Tokens the mutator splices in: the magic, value-type and count fields, keys the RoPE mapping reads.
{
  printf 'magic="GGUF"\nv3="\\x03\\x00\\x00\\x00"\nv2="\\x02\\x00\\x00\\x00"\n'
  printf 't_string="\\x08\\x00\\x00\\x00"\nt_array="\\x09\\x00\\x00\\x00"\nt_f32="\\x06\\x00\\x00\\x00"\n'
  printf 'u64_big="\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\x7f"\n'
  for k in general.architecture general.alignment llama qwen2 phi3 deepseek2 .context_length .embedding_length \
           .attention.head_count .attention.key_length .rope.dimension_count .rope.freq_base .rope.scaling.type \
           .rope.scaling.factor .rope.scaling.original_context_length .rope.scaling.attn_factor \
           .rope.scaling.yarn_log_multiplier .rope.dimension_sections rope_freqs.weight rope_factors_long.weight \
           rope_factors_short.weight yarn longrope linear; do
    printf 'k="%s"\n' "$k"
  done
} > "$out/gguf.dict"
clang++ -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  -Iinclude tests/fuzz/gguf_fuzz.cpp -o "$out/gguf_fuzz"   # no Eigen: gguf.hpp does not need it
# -malloc_limit_mb: the reader allocates about the input's size; 64 MB is far above any honest need. ASan's
# freed-memory quarantine (256 MB by default) is capped so that the RSS limit measures the reader, not it.
ASAN_OPTIONS="${ASAN_OPTIONS:-quarantine_size_mb=16}" \
"$out/gguf_fuzz" -max_total_time="$seconds" -rss_limit_mb=256 -malloc_limit_mb=64 -max_len=4096 -artifact_prefix="$out/" \
  -dict="$out/gguf.dict" -print_final_stats=1 "$out/corpus" 2>&1 | tee "$out/fuzz.log" |
  grep -E "INITED|DONE|stat::|ERROR|SUMMARY|crash" || true
if grep -qE "ERROR: |SUMMARY: |crash-|leak-|timeout-|oom-" "$out/fuzz.log"; then
  echo "fuzz_gguf.sh: the fuzzer found a problem (see $out/fuzz.log)" >&2
  exit 1
fi
echo "fuzz_gguf.sh: no finding in ${seconds}s"
