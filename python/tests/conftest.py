"""Shared fixtures: the ISAs this CPU runs (every golden test runs once per ISA, like the C++ suites), dtypes."""

from __future__ import annotations

import importlib.util

import pytest

import posenc

from golden import golden_dir

ISAS = [i for i in ("scalar", "avx2", "avx512", "neon") if posenc.cpu_supports(i)]
HAS_TORCH = importlib.util.find_spec("torch") is not None
# float16 and bfloat16 are the 16-bit storage formats. NumPy has no bfloat16: bfloat16 arrays are PyTorch tensors
# when PyTorch is installed, else tests/bf16.py's DLPack producer over uint16 bits (the same DLPack dtype).
DTYPES = ["float32", "float64", "float16", "bfloat16"]

needs_golden = pytest.mark.skipif(golden_dir() is None, reason="posenc's tests/golden folder is not next to python/")


@pytest.fixture(params=ISAS)
def isa(request):
    """Activates one ISA for the test and restores the default after it."""
    assert posenc.set_isa(request.param) == request.param
    yield request.param
    posenc.reset_isa()
