#!/usr/bin/env bash
# Installs the Debian packages posenc's build needs, only those missing. Works as root or through sudo.
# Usage: scripts/install_deps.sh [extra-package ...]
set -euo pipefail

packages=(g++ make cmake pkg-config libeigen3-dev libgtest-dev libgmock-dev libcli11-dev nlohmann-json3-dev python3-numpy
          python3-mpmath "$@")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "install_deps.sh: need root or sudo to install: ${missing[*]}" >&2
  exit 1
fi
echo "install_deps.sh: installing ${missing[*]}"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
