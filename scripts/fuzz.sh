#!/usr/bin/env bash
# Builds one of posenc's libFuzzer targets with clang (-fsanitize=fuzzer,address,undefined) and runs it for N
# seconds, seeded with its corpus; fails on any finding. One script, per-target settings below:
#   npy   tests/fuzz/npy_fuzz.cpp       the .npy reader (seeds tests/fuzz/corpus/)
#   gguf  tests/fuzz/gguf_fuzz.cpp      the GGUF reader and its RoPE mapping (seeds tests/data/gguf/*.gguf, a
#                                       dictionary of GGUF tokens and llama.cpp keys)
#   rope  tests/fuzz/rope_diff_fuzz.cpp differential: every vector path of this CPU against scalar
#                                       (seeds tests/fuzz/corpus_rope/)
# -malloc_limit_mb: a reader allocates about its input's size; 64 MB is far above any honest need. ASan's
# freed-memory quarantine is capped so that the RSS limit measures the reader, not it.
# Usage: bash scripts/fuzz.sh npy|gguf|rope [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: fuzz.sh npy|gguf|rope [seconds]}
seconds=${2:-30}
bash scripts/install_deps.sh clang libclang-rt-14-dev
out=build/fuzz-$target
rm -rf "$out/corpus"
mkdir -p "$out/corpus"
flags=(-Iinclude)
opts=(-rss_limit_mb=256 -malloc_limit_mb=64)
report="INITED|DONE|stat::|ERROR|SUMMARY|crash"
finding="ERROR: |SUMMARY: |crash-|leak-|timeout-|oom-"
case "$target" in
  npy)
    src=tests/fuzz/npy_fuzz.cpp
    flags+=(-I/usr/include/eigen3)
    cp tests/fuzz/corpus/* "$out/corpus/" ;;
  gguf)
    src=tests/fuzz/gguf_fuzz.cpp   # no Eigen: gguf.hpp does not need it
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
    opts+=(-max_len=4096 -dict="$out/gguf.dict") ;;
  rope)
    src=tests/fuzz/rope_diff_fuzz.cpp
    flags+=(-Wall -Wextra -Werror)
    cp tests/fuzz/corpus_rope/* "$out/corpus/"
    opts=(-max_len=8192 -rss_limit_mb=2048)
    report="INITED|DONE|stat::number|rope_diff_fuzz:|ERROR|SUMMARY"
    finding="rope_diff_fuzz: |$finding" ;;
  *) echo "fuzz.sh: unknown target '$target' (npy, gguf or rope)" >&2; exit 2 ;;
esac
clang++ -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all "${flags[@]}" "$src" \
  -o "$out/fuzz"
ASAN_OPTIONS="${ASAN_OPTIONS:-quarantine_size_mb=16}" \
"$out/fuzz" -max_total_time="$seconds" "${opts[@]}" -artifact_prefix="$out/" -print_final_stats=1 "$out/corpus" 2>&1 |
  tee "$out/fuzz.log" | grep -E "$report" || true
if grep -qE "$finding" "$out/fuzz.log"; then
  echo "fuzz.sh $target: the fuzzer found a problem (see $out/fuzz.log)" >&2
  exit 1
fi
extra=""
if [ "$target" = rope ]; then
  isas=$(for i in avx2 avx512f asimd; do if grep -qw "$i" /proc/cpuinfo; then printf ' %s' "$i"; fi; done)
  extra=" (vector paths compared with scalar on this CPU:${isas:- none})"
fi
echo "fuzz.sh $target: no finding in ${seconds}s$extra"
