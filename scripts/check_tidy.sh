#!/usr/bin/env bash
# clang-tidy over posenc's headers with the check set of .clang-tidy (every finding is an error): one translation
# unit including every public header (src.hpp aside), and src.hpp itself under POSENC_SEPARATE_COMPILATION, which
# instantiates every kernel for every target. The CUDA headers (include/posenc/cuda/) need nvcc and are not
# parsed here; their host-side checks are the same functions the CPU headers use. The C API's source
# (src/c/posenc_c.cpp, libposenc) is checked as it is compiled: with the kernels declared only.
# Usage: bash scripts/check_tidy.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh clang-tidy libeigen3-dev nlohmann-json3-dev
work=build/tidy
mkdir -p "$work"
(cd include && find posenc -name '*.hpp' ! -path '*/detail/*' ! -name src.hpp | sort | sed 's|.*|#include <&>|') \
  > "$work/all_headers.cpp"
printf '#define POSENC_SEPARATE_COMPILATION\n#include <posenc/src.hpp>\n' > "$work/kernels.cpp"
start=$SECONDS
status=0
for tu in all_headers kernels; do
  if ! clang-tidy --quiet "$work/$tu.cpp" -- -std=c++17 -Iinclude -I/usr/include/eigen3 > "$work/$tu.log" 2>&1; then
    status=1
  fi
  grep -E "(warning|error):" "$work/$tu.log" | sed "s|$PWD/||" | sort -u || true
done
if ! clang-tidy --quiet src/c/posenc_c.cpp -- -std=c++17 -Iinclude -I/usr/include/eigen3 -DPOSENC_SEPARATE_COMPILATION \
    -DPOSENC_C_BUILDING -DPOSENC_C_HAS_HF > "$work/c_api.log" 2>&1; then
  status=1
fi
grep -E "(warning|error):" "$work/c_api.log" | sed "s|$PWD/||" | sort -u || true
if [ "$status" -ne 0 ]; then
  echo "check_tidy.sh: clang-tidy findings (logs in $work)" >&2
  exit 1
fi
echo "check_tidy.sh: clang-tidy clean over $(wc -l < "$work/all_headers.cpp") public headers, the kernels and the C API in $((SECONDS - start)) s"
