#!/usr/bin/env bash
# The documentation, checked: Doxygen over the public headers and docs/*.md must finish without a single
# warning, and docs/make_plots.py redraws every plot from the posenc tool's output and must reproduce the
# numbers of the committed docs/plots/summary.txt (so pages and plots cannot drift from the code).
# Usage: bash scripts/check_docs.sh POSENC_BINARY     (e.g. build/tests-g++/examples/cli/posenc)
set -euo pipefail
cd "$(dirname "$0")/.."
exe=${1:?usage: check_docs.sh path/to/posenc}
[ -x "$exe" ] || { echo "check_docs.sh: no posenc binary at $exe (build the examples first)" >&2; exit 1; }
bash scripts/install_deps.sh doxygen python3-matplotlib
mkdir -p build/docs
rm -f build/docs/warnings.txt
doxygen docs/Doxyfile
if [ -s build/docs/warnings.txt ]; then
  echo "check_docs.sh: doxygen warnings ($(wc -l < build/docs/warnings.txt) lines):" >&2
  cat build/docs/warnings.txt >&2
  exit 1
fi
echo "check_docs.sh: doxygen: no warnings ($(find build/docs/html -name '*.html' | wc -l) pages in build/docs/html)"
/usr/bin/python3 docs/make_plots.py --posenc "$exe" --out build/docs/plots
if ! diff -u docs/plots/summary.txt build/docs/plots/summary.txt; then
  echo "check_docs.sh: the plots' numbers changed: run docs/make_plots.py --posenc $exe and commit docs/plots" >&2
  exit 1
fi
echo "check_docs.sh: plots redrawn, numbers as committed"
