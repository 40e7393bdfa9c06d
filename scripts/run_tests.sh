#!/usr/bin/env bash
# Builds and runs every posenc test on a fresh Debian 12 machine: installs what is missing, then configures,
# builds (warnings are errors) and runs CTest with clang++ under AddressSanitizer + UndefinedBehaviorSanitizer
# (plus the AVX2/AVX-512 ops emulated through SIMDe on a CPU that lacks either, and the separately compiled
# kernels) and with g++ without sanitizers (optimised as a release build; it also builds the benchmarks and runs
# the emulated old CPUs); runs the concurrent tests under ThreadSanitizer (clang++); builds the Python package
# and runs its tests (scripts/check_python.sh); then cross-builds the ISA suites for AArch64 and runs them on
# NEON under qemu-user.
# Every golden suite runs once per ISA this CPU supports; the ISAs it lacks are reported skipped by name. A
# skip for any reason not on the documented list fails the job (scripts/check_skips.py).
# Usage: bash scripts/run_tests.sh [build-dir-prefix]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh gcc clang libclang-rt-14-dev libsimde-dev libbenchmark-dev qemu-user rustc
prefix=${1:-build/tests}
# allocator_may_return_null: the tests ask for impossible sizes on purpose and expect out_of_memory statuses,
# which ASan's allocator would otherwise turn into a report. Every sanitizer finding fails the test.
export ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1

# The AVX2 and AVX-512 suites through SIMDe (posenc_tests_emulated, clang job) are for a CPU without those ISAs:
# where the CPU has both (AVX2 + FMA + F16C, AVX-512 F/DQ/BW/VL), the native posenc_tests already runs every
# suite on each, and the emulated binary would repeat the op, kernel and RoPE golden suites (~300 s of compiler
# time under the sanitizers, 2026-11-29). Then no suite may skip for an ISA.
cpu_flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
emulation_needed=OFF
for f in avx2 fma f16c avx512f avx512dq avx512bw avx512vl; do
  grep -qw "$f" <<<"$cpu_flags" || emulation_needed=ON
done

# CTest over a build tree, then the skip policy.
run_ctest() {
  local build=$1 job=$2
  shift 2
  ctest --test-dir "$build" --output-on-failure -j "$(nproc)" --output-junit "$(realpath -m "$build")/ctest.xml" "$@"
  /usr/bin/python3 scripts/check_skips.py "$build/ctest.xml" "$job"
}

for cxx in clang++ g++; do
  build="$prefix-$cxx"
  # One job per compiler: clang++ under ASan + UBSan at -O2 (the sanitizers see optimised, vectorised code; -O3
  # cost 14% more compile time under them, clang 14, and -O3 code runs in the Python job: g++, scikit-build's
  # Release), g++ without sanitizers at -O2 (the code an engine ships; its posenc_tests also runs under
  # qemu-x86_64, where ASan's shadow memory cannot, so no second binary is built for the emulated CPUs).
  # clang builds the emulated binary (where the CPU lacks AVX2 or AVX-512), g++ the default-flags benchmark
  # binary (built, not run: they are not tests; the -march=native binary has the same sources and is left out).
  # clang also builds posenc_tests against the separately compiled kernels (posenc::separate), g++ header-only.
  # Once per CI run is enough for what does not depend on the compiler's code generation: clang compiles every
  # public header on its own (in both modes), g++ runs the packaging tests (install, find_package, pkg-config,
  # add_subdirectory, mixed flags) and the emulated old CPUs (qemu-x86_64: the golden suites as a Nehalem, the
  # mixed-flags program as Nehalem and SandyBridge), which the clang job leaves out.
  # Both build libposenc (the C API): clang runs its C consumer under the sanitizers, g++ the ctypes and Rust
  # consumers and the installed C route (pkg-config, find_package) as well.
  emulation=OFF bench=ON separate=OFF opt="-O2 -DNDEBUG" headers=OFF exclude='^$' old_cpus=ON sanitize=""
  [ "$cxx" = clang++ ] && emulation=$emulation_needed bench=OFF separate=ON opt="-O2 -DNDEBUG" headers=ON \
    exclude='^package\.' old_cpus=OFF sanitize=address,undefined

  echo "== $cxx (sanitizers: ${sanitize:-none}, ${opt% *}): $build"
  start=$SECONDS
  CXX=$cxx cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="$opt" -DPOSENC_WERROR=ON \
    -DPOSENC_BUILD_TESTS=ON -DPOSENC_BUILD_EXAMPLES=ON -DPOSENC_TEST_EMULATION=$emulation \
    -DPOSENC_BUILD_BENCHMARKS=$bench -DPOSENC_BENCH_NATIVE=OFF -DPOSENC_TEST_SEPARATE_COMPILATION=$separate \
    -DPOSENC_TEST_HEADERS=$headers -DPOSENC_TEST_EMULATED_CPUS=$old_cpus -DPOSENC_BUILD_C_API=ON \
    -DPOSENC_TEST_C_CONSUMERS=$([ -z "$sanitize" ] && echo ON || echo OFF) \
    -DPOSENC_SANITIZE="$sanitize"
  cmake --build "$build" -j "$(nproc)"
  run_ctest "$build" "$cxx" -E "$exclude"
  if [ "$cxx" = clang++ ] && [ "$emulation" = OFF ] && grep -q "the CPU lacks avx" "$build/ctest.xml"; then
    echo "run_tests.sh: the SIMDe-emulated suites were left out for a CPU with AVX2 and AVX-512, yet a suite" \
      "skipped for one of them" >&2
    exit 1
  fi
  echo "== $cxx: $((SECONDS - start)) s"
done

echo "== clang++ (TSan, concurrent tests): $prefix-tsan"
start=$SECONDS
CXX=clang++ cmake -S . -B "$prefix-tsan" -DCMAKE_BUILD_TYPE=Release -DPOSENC_WERROR=ON -DPOSENC_BUILD_TESTS=ON \
  -DPOSENC_BUILD_EXAMPLES=OFF -DPOSENC_INSTALL=OFF -DPOSENC_SANITIZE=thread
cmake --build "$prefix-tsan" -j "$(nproc)" --target posenc_thread_tests
run_ctest "$prefix-tsan" tsan -R '^tsan\.'
echo "== tsan: $((SECONDS - start)) s"

echo "== python (pip install ./python, pytest, wheel): $prefix-python"
start=$SECONDS
bash scripts/check_python.sh "$prefix-python"
echo "== python: $((SECONDS - start)) s"

echo "== aarch64 (cross build, qemu-user): $prefix-aarch64"
start=$SECONDS
bash scripts/cross_aarch64.sh "$prefix-aarch64"
echo "== aarch64: $((SECONDS - start)) s"
