#!/usr/bin/env bash
# The CUDA path without a GPU: configures with POSENC_ENABLE_CUDA=ON, builds posenc_cuda_tests for every
# architecture of POSENC_CUDA_ARCHITECTURES (Ampere, Hopper, Blackwell), runs the CUDA CTests (the device
# suites skip with "no CUDA device" where there is none and run where there is) and the static resource check
# (ptxas -v: no spills, at most 64 registers per RoPE kernel). The kernels' bodies are tested on the CPU by
# posenc_tests (tests/gpu_body_test.cpp) in scripts/run_tests.sh.
# Usage: bash scripts/check_cuda.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
nvcc=$(command -v nvcc || true)
[ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
if [ -z "$nvcc" ]; then
  echo "check_cuda.sh: SKIPPED: no nvcc on this machine (install the CUDA toolkit to build the CUDA path)" >&2
  exit 0
fi
build=${1:-build/cuda}
start=$SECONDS
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DPOSENC_WERROR=ON -DPOSENC_BUILD_TESTS=ON -DPOSENC_BUILD_EXAMPLES=OFF \
  -DPOSENC_ENABLE_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc"
cmake --build "$build" --target posenc_cuda_tests -j "$(nproc)"
ctest --test-dir "$build" -R '^cuda\.' --output-on-failure -j "$(nproc)"
echo "check_cuda.sh: ok in $((SECONDS - start)) s"
