#!/usr/bin/env bash
# `conan create` of the recipe (conanfile.py) and its test_package, with Conan 2 from PyPI in a virtual
# environment and a throw-away CONAN_HOME. ConanCenter cannot be reached from CI, so the test-only profile
# tests/package/conan/profiles/debian-system takes Eigen and nlohmann/json from Debian's packages ([platform_requires]) and
# no remote is used. Both option sets: the core package, and hf_config=True.
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
for hf in False True; do
  "$conan" create . -pr:a tests/package/conan/profiles/debian-system -o "posenc/*:hf_config=$hf" --build=missing -nr \
    > "$work/create-hf_config-$hf.log" 2>&1 || { tail -40 "$work/create-hf_config-$hf.log"; exit 1; }
  grep -E "consumer: ok" "$work/create-hf_config-$hf.log"
done
rm -rf tests/package/conan/build tests/package/conan/CMakeUserPresets.json
echo "check_conan: ok"
