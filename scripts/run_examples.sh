#!/usr/bin/env bash
# Builds and runs posenc's example programs on a fresh Debian 12 machine: installs what is missing, builds
# the examples, runs each and prints its output. Usage: bash scripts/run_examples.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
build=${1:-build/examples-release}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DPOSENC_BUILD_TESTS=OFF -DPOSENC_BUILD_EXAMPLES=ON
cmake --build "$build" -j "$(nproc)"
for ex in rope_kv_cache continuous_batching alibi_kv_cache thread_pool_rope paged_decode; do
  echo "== examples/$ex"
  "$build/examples/$ex"
done
echo "== examples/gguf_plan tests/data/gguf/llama3.gguf"
"$build/examples/gguf_plan" tests/data/gguf/llama3.gguf
echo "== examples/hf_config_plan tests/data/hf/phi3.json 8192"
"$build/examples/hf_config_plan" tests/data/hf/phi3.json 8192
cli="$build/examples/cli/posenc"
out=$(mktemp -d)
echo "== the posenc tool (shared/CLI_SPEC.md): a table, then RoPE on it, ALiBi slopes, T5 buckets, into $out"
"$cli" --version
"$cli" sinusoidal --length 16 --dim 64 --output "$out/table.npy"
"$cli" rope --input "$out/table.npy" --layout LD --output "$out/rotated.npy" --offset 100 --scaling yarn --factor 4 --original-max-positions 4096
"$cli" alibi-slopes --heads 12 --output "$out/slopes.npy"
"$cli" t5-buckets --query-len 8 --key-len 8 --output "$out/buckets.npy" --causal
ls -l "$out"
