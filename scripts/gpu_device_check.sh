#!/usr/bin/env bash
# The CUDA path on a real GPU, from binaries built elsewhere: a lent GPU machine has nvcc but no GoogleTest or
# Google Benchmark and no network, so the three CUDA targets are built on the development machine first
#   cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DPOSENC_BUILD_TESTS=ON -DPOSENC_BUILD_EXAMPLES=ON \
#     -DPOSENC_BUILD_BENCHMARKS=ON -DPOSENC_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DPOSENC_CUDA_ARCHITECTURES=90
#   cmake --build build-gpu --target posenc_cuda_tests posenc_cuda_bench cuda_attention_step -j2
#   cp -L /usr/local/cuda/lib/libcudart.so.13 build-gpu/   # in case the GPU machine's runtime differs
# and this script runs there with build-gpu carried: the golden suites (every family the CUDA path has), the
# same suites under compute-sanitizer memcheck, the CUDA example and the benchmark (JSON and text). The golden
# directory is compiled in as an absolute path, so the source tree is linked to where it was built.
# Usage: bash scripts/gpu_device_check.sh BUILD_DIR SOURCE_DIR_AT_BUILD OUT_DIR
set -uo pipefail
build=${1:-build-gpu}
built_at=${2:-/work/main}
out=${3:-${OUT:-/tmp/gpu-out}}
mkdir -p "$out" "$(dirname "$built_at")"
[ -e "$built_at" ] || ln -s "$PWD" "$built_at"
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$PWD/$build"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv | tee "$out/gpu.txt"
rc=0
step() {  # name, command...: time it, keep its log, remember a failure
  local name=$1; shift
  local t0=$SECONDS
  "$@" >"$out/$name.log" 2>&1
  local r=$?
  echo "== $name: rc $r in $((SECONDS - t0)) s"; tail -n 6 "$out/$name.log"
  [ $r -eq 0 ] || rc=1
}
step tests "$build/tests/posenc_cuda_tests" --gtest_output="xml:$out/cuda_tests.xml"
grep -E "^\[  (FAILED|SKIPPED) " "$out/tests.log" | head -n 40
step example "$build/examples/cuda_attention_step"
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
step memcheck timeout 150 "$cs" --tool memcheck --error-exitcode 3 "$build/tests/posenc_cuda_tests" --gtest_brief=1 \
  --gtest_filter=-CudaConversions.*  # 2^32 conversions: seconds on the device, hours under memcheck
step bench "$build/bench/posenc_cuda_bench" --benchmark_min_time=0.2 --benchmark_out="$out/cuda_bench.json" --benchmark_out_format=json
summary() { grep -E "^BM_" "$1" | sed -E 's/^BM_Cuda([^/]*)\/sm_[0-9]+\/([^ ]*)\/manual_time.*ns_per_call=([^ ]*).*vs_copy=([0-9.]*).*/\1 \2 \3 \4/'; }
summary "$out/bench.log"
if [ -x "$build/posenc_cuda_bench_old" ]; then  # a before/after pair: the same rows from a previous build
  step bench_old "$build/posenc_cuda_bench_old" --benchmark_min_time=0.2 --benchmark_out="$out/cuda_bench_old.json" --benchmark_out_format=json
  summary "$out/bench_old.log"
fi
exit $rc
