#!/usr/bin/env bash
# The Python package (python/): builds it with pip (scikit-build-core + nanobind from PyPI) into a virtual
# environment over Debian's python3 (system site packages: numpy, pytest and PyTorch 1.13 from apt), runs its
# pytest suite (the C++ golden files, zero-copy and error checks, PyTorch against the Hugging Face formula in
# float64, the autograd Functions of posenc.torch by gradcheck, the drop-ins of posenc.torch.compat against
# rotary-embedding-torch, zeta and torchscale), runs the tiny Hugging Face Llama example with transformers
# 4.46.3 from PyPI (the last release that works with torch 1.13); the wheel is built first and installed. Debian's python3 is named
# explicitly: the first python3 on PATH may be another interpreter without numpy.
# Usage: bash scripts/check_python.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh python3-venv python3-dev python3-numpy python3-pytest python3-torch
build=${1:-build/python}
start=$SECONDS
rm -rf "$build/venv"
/usr/bin/python3 -m venv --system-site-packages "$build/venv"
py="$build/venv/bin/python"
# The kernels compile once in the module (POSENC_SEPARATE_COMPILATION); two jobs on two cores.
# One build of the extension: the wheel, then the package installed from it.
rm -rf "$build/wheels"
CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" "$py" -m pip wheel --quiet --no-deps ./python -w "$build/wheels"
"$py" -m pip install --quiet "$build"/wheels/posenc-*.whl
"$py" -c 'import posenc; print("check_python.sh: posenc", posenc.__version__, "kernels:", posenc.isa())'
# The packages posenc.torch.compat replaces, pinned, installed as their users do but without dependencies (they
# would pull a PyTorch from PyPI over Debian's): tests/test_torch_compat.py compares each drop-in with them.
"$py" -m pip install --quiet --no-deps "rotary-embedding-torch==0.9.1" "einops==0.8.1" "torchscale==0.3.0" \
  "zetascale==2.8.8"
# transformers (the last release for torch 1.13): the seeds' tests compare with its M2M100 / FSMT sinusoidal
# embeddings and BLOOM / MPT ALiBi, and the Llama example below runs in it.
"$py" -m pip install --quiet "transformers==4.46.3" || echo "check_python.sh: transformers 4.46.3 could not be installed"
# From outside the source tree, so the installed package (not python/posenc) is what is tested.
out=$(cd "$build" && "$PWD/venv/bin/python" -m pytest -q -rs -p no:cacheprovider "$OLDPWD/python/tests")
tail -n 4 <<<"$out"
# The skip policy of scripts/check_skips.py: the one documented skip here is the PyTorch test without PyTorch.
if grep "^SKIPPED" <<<"$out" | grep -v "PyTorch is not installed"; then
  echo "check_python.sh: a test skipped for a reason not on the documented list" >&2
  exit 1
fi
# The model example: transformers from PyPI; where it cannot be installed the example says "skipped" by name.
example=$("$py" python/examples/hf_llama.py)
echo "$example"
grep -qE "^posenc == HF at short positions, closer to float64 past 100k$|^hf_llama.py: skipped: " <<<"$example"
# The tiny transformer trained with posenc's RotaryEmbedding and with rotary-embedding-torch's, same seed.
tiny=$("$py" python/examples/train_tiny.py)
echo "$tiny"
grep -q "^posenc == rotary-embedding-torch in training, to float32 rounding$" <<<"$tiny"
echo "check_python.sh: ok in $((SECONDS - start)) s ($(ls "$build/wheels"))"
