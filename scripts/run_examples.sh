#!/usr/bin/env bash
# Builds and runs posenc's example programs on a fresh Debian 12 machine: installs what is missing, builds
# the examples, runs each and prints its output. Usage: bash scripts/run_examples.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
build=${1:-build/examples-release}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DPOSENC_BUILD_TESTS=OFF -DPOSENC_BUILD_EXAMPLES=ON
cmake --build "$build" -j "$(nproc)"
for ex in rope_kv_cache continuous_batching alibi_kv_cache; do
  echo "== examples/$ex"
  "$build/examples/$ex"
done
echo "== examples/hf_config_plan tests/data/hf/phi3.json 8192"
"$build/examples/hf_config_plan" tests/data/hf/phi3.json 8192
