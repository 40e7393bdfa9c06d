#!/usr/bin/env bash
# `conan create` of the recipe (conanfile.py) and its test_package, with Conan 2 from PyPI in a virtual
# environment and a throw-away CONAN_HOME. ConanCenter cannot be reached from CI, so the test-only profile
# tests/package/conan/profiles/debian-system takes Eigen and nlohmann/json from Debian's packages ([platform_requires]) and
# no remote is used. Three option sets: the core package, hf_config=True, and c_api=True (libposenc built and
# the C consumer run against it).
# Usage: bash scripts/check_conan.sh [work-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh python3-venv
work=$(realpath -m "${1:-build/conan}")
rm -rf "$work"
mkdir -p "$work"
/usr/bin/python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q "conan>=2,<3"
export CONAN_HOME="$work/home"
conan="$work/venv/bin/conan"
"$conan" --version
"$conan" profile detect >/dev/null
for opts in "hf_config=False" "hf_config=True" "c_api=True"; do
  # c_api=True: the default shared libposenc; the static one differs only in what package() copies. It is
  # built as Debug (-O0: 34 s for posenc_c.cpp here, against 118 s at -O2): this checks the package's layout,
  # exports and consumers; the Release library's results are the test jobs'.
  build_type=Release
  [ "$opts" = "c_api=True" ] && build_type=Debug
  "$conan" create . -pr:a tests/package/conan/profiles/debian-system -s "build_type=$build_type" -o "posenc/*:$opts" \
    --build=missing -nr > "$work/create-$opts.log" 2>&1 || { tail -40 "$work/create-$opts.log"; exit 1; }
  grep -E "consumer: ok" "$work/create-$opts.log"
done
grep -q "c_consumer: ok" "$work/create-c_api=True.log" || { echo "check_conan: the C consumer did not run" >&2; exit 1; }
rm -rf tests/package/conan/build tests/package/conan/CMakeUserPresets.json
echo "check_conan: ok"
