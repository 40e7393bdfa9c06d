#!/usr/bin/env bash
# The CUDA path without a GPU: configures with POSENC_ENABLE_CUDA=ON, builds posenc_cuda_tests, the CUDA
# benchmark (bench/cuda_bench.cu) and the CUDA example (examples/cuda/attention_step.cu) for every
# architecture of POSENC_CUDA_ARCHITECTURES (Ampere, Hopper, Blackwell), runs the CUDA CTests (the device
# suites and the example skip with "no CUDA device" where there is none and run where there is), the static
# resource check (ptxas -v: no spills, at most 80 registers per RoPE kernel) and a short run of the benchmark
# (one line and exit 0 without a device; with one, every row must run without an error). The kernels' bodies
# are tested on the CPU by posenc_tests (tests/gpu_body_test.cpp) in scripts/run_tests.sh.
# Usage: bash scripts/check_cuda.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh libbenchmark-dev  # Google Benchmark, for posenc_cuda_bench
nvcc=$(command -v nvcc || true)
[ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
if [ -z "$nvcc" ]; then
  echo "check_cuda.sh: SKIPPED: no nvcc on this machine (install the CUDA toolkit to build the CUDA path)" >&2
  exit 0
fi
build=${1:-build/cuda}
start=$SECONDS
# Examples and benchmarks are configured for their CUDA targets; only those three targets are built.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DPOSENC_WERROR=ON -DPOSENC_BUILD_TESTS=ON -DPOSENC_BUILD_EXAMPLES=ON \
  -DPOSENC_BUILD_BENCHMARKS=ON -DPOSENC_ENABLE_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc"
cmake --build "$build" --target posenc_cuda_tests posenc_cuda_bench cuda_attention_step -j "$(nproc)"
ctest --test-dir "$build" -R '^(cuda\.|example\.cuda_)' --output-on-failure -j "$(nproc)" --output-junit "$(realpath -m "$build")/ctest.xml"
/usr/bin/python3 scripts/check_skips.py "$build/ctest.xml" cuda
# A benchmark row that fails reports "ERROR OCCURRED" and the binary still exits 0: look for it.
bench_out=$("$build/bench/posenc_cuda_bench" --benchmark_min_time=0.01)
echo "$bench_out"
if grep -q "ERROR OCCURRED" <<<"$bench_out"; then
  echo "check_cuda.sh: posenc_cuda_bench reported an error" >&2
  exit 1
fi
echo "check_cuda.sh: ok in $((SECONDS - start)) s"
