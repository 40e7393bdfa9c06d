"""Reader of posenc's golden files (tests/golden/*.txt, format in tests/golden/FORMAT.md) and the tolerances of
the C++ tests (tests/test_util.hpp), for the Python binding tests."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np


def golden_dir() -> Optional[Path]:
    """POSENC_GOLDEN_DIR, else tests/golden of the checkout this folder is in (None when absent)."""
    env = os.environ.get("POSENC_GOLDEN_DIR")
    d = Path(env) if env else Path(__file__).resolve().parents[2] / "tests" / "golden"
    return d if (d / "FORMAT.md").is_file() else None


def data_dir(kind: str) -> Optional[Path]:
    """tests/data/<kind> of the checkout (hf, gguf), None when absent."""
    g = golden_dir()
    d = g.parent / "data" / kind if g is not None else None
    return d if d is not None and d.is_dir() else None


class Case:
    """One `case`: scalar params (as text) and arrays (float64 or int64 NumPy arrays of their shape)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.params: Dict[str, str] = {}
        self.arrays: Dict[str, np.ndarray] = {}

    def has(self, key: str) -> bool:
        return key in self.params or key in self.arrays

    def str(self, key: str) -> str:
        return self.params[key]

    def num(self, key: str) -> float:
        return float(self.params[key])

    def int(self, key: str) -> int:
        return int(self.params[key])

    def array(self, key: str) -> np.ndarray:
        return self.arrays[key]

    def __repr__(self) -> str:
        return f"Case({self.name})"


def load(file: str) -> List[Case]:
    """Every case of golden file `file` (e.g. "rope_basic.txt"), in file order."""
    d = golden_dir()
    assert d is not None, "golden files not found"
    tokens: List[str] = []
    for line in (d / file).read_text().splitlines():
        tokens.extend(line.split("#", 1)[0].split())
    cases: List[Case] = []
    i = 0
    cur: Optional[Case] = None
    while i < len(tokens):
        t = tokens[i]
        if t == "case":
            cur = Case(tokens[i + 1])
            i += 2
        elif t == "param":
            assert cur is not None
            cur.params[tokens[i + 1]] = tokens[i + 2]
            i += 3
        elif t == "array":
            assert cur is not None
            key, kind, rank = tokens[i + 1], tokens[i + 2], int(tokens[i + 3])
            shape = tuple(int(v) for v in tokens[i + 4 : i + 4 + rank])
            i += 4 + rank
            n = int(np.prod(shape, dtype=np.int64)) if rank else 1
            vals = tokens[i : i + n]
            i += n
            assert kind in ("f64", "i64"), kind
            arr = np.array([float(v) for v in vals], dtype=np.float64) if kind == "f64" else np.array(
                [int(v) for v in vals], dtype=np.int64)
            cur.arrays[key] = arr.reshape(shape)
        elif t == "end":
            assert cur is not None
            cases.append(cur)
            cur = None
            i += 1
        else:
            raise ValueError(f"{file}: unexpected token {t!r}")
    return cases


def find(file: str, name: str) -> Case:
    for c in load(file):
        if c.name == name:
            return c
    raise KeyError(f"{file}: no case {name}")


def names(file: str) -> List[str]:
    return [c.name for c in load(file)] if golden_dir() is not None else []


# ---- tolerances (tests/test_util.hpp) ------------------------------------------------------------------------

MANTISSA = {"float32": 23, "float64": 52, "float16": 10, "bfloat16": 7}


def tolerance(dtype: str, expected: np.ndarray) -> np.ndarray:
    """tolerance<T>(expected): float and the kernels' float arithmetic within 2e-6 (relative above 1); double
    within 1e-12; half and bfloat16 within one rounding of the float result (half an ulp of T) plus that."""
    e = np.abs(np.asarray(expected, dtype=np.float64))
    if dtype == "float64":
        return 1e-12 * np.maximum(1.0, e)
    tol = 2e-6 * np.maximum(1.0, e)
    m = MANTISSA[dtype]
    if m < 23:
        _, ex = np.frexp(np.asarray(expected, dtype=np.float64))  # |expected| in [2^(ex-1), 2^ex)
        tol = tol + np.ldexp(0.5, ex - 1 - m)
    return tol


def as_double(a) -> np.ndarray:
    """Values as double: 16-bit types through float (as_double of test_util.hpp); torch tensors too."""
    from bf16 import BF16Array

    if isinstance(a, BF16Array):
        return a.to_float().astype(np.float64)
    if type(a).__module__.split(".", 1)[0] == "torch":
        return a.float().numpy().astype(np.float64) if a.dtype != __import__("torch").float64 else a.numpy()
    a = np.asarray(a)
    return a.astype(np.float32).astype(np.float64) if a.dtype == np.float16 else a.astype(np.float64)


def to_storage(values: np.ndarray, dtype: str):
    """to_storage<T>: T(float(v)) (double keeps v). bfloat16 is a torch tensor."""
    if dtype == "float64":
        return np.array(values, dtype=np.float64)
    if dtype == "bfloat16":
        return bf16_full(np.asarray(values, dtype=np.float32))
    return np.asarray(values, dtype=np.float32).astype(dtype)


def bf16_full(values: np.ndarray):
    """A bfloat16 array of `values` (rounded): a torch tensor when PyTorch is installed, else a BF16Array."""
    try:
        import torch
    except ImportError:
        from bf16 import BF16Array

        return BF16Array.from_float(values)
    return torch.from_numpy(np.ascontiguousarray(values, dtype=np.float32)).to(torch.bfloat16)


def full(shape, value: float, dtype: str):
    """An array of `shape` filled with `value`, of dtype (bfloat16 as bf16_full)."""
    if dtype == "bfloat16":
        return bf16_full(np.full(shape, value, dtype=np.float32))
    return np.full(shape, value, dtype=dtype)


def copy(x):
    return x.clone() if type(x).__module__.startswith("torch") else x.copy()


def expect_close(got, expected: np.ndarray, dtype: str, what: str, angle_err: float = 0.0,
                 tol_dtype: Optional[str] = None) -> float:
    """Max |got - expected|; fails naming the first elements past tolerance(tol_dtype or dtype) + angle_err."""
    g = as_double(got).reshape(-1)
    e = np.asarray(expected, dtype=np.float64).reshape(-1)
    assert g.shape == e.shape, f"{what}: {g.shape} values, {e.shape} expected"
    err = np.abs(g - e)
    tol = tolerance(tol_dtype or dtype, e) + angle_err
    bad = np.flatnonzero(~(err <= tol))
    assert bad.size == 0, (
        f"{what} [{dtype}]: {bad.size} element(s) past tolerance, first {bad[:3].tolist()}: got {g[bad[:3]].tolist()} "
        f"expected {e[bad[:3]].tolist()} (error {err[bad[:3]].tolist()}, tolerance {tol[bad[:3]].tolist()})"
    )
    return float(err.max()) if err.size else 0.0


def angle_error_bound(c: Case) -> float:
    """|theta_double - theta| for the case's positions (w <= 1): (max position + 1) * 2^-52 * 1.5."""
    return 1.5 * math.ldexp(float(c.array("positions").max() + 1), -52)


def sinusoid_angle_bound(max_pos: int, base: float) -> float:
    return (max_pos + 1) * (2.0 + math.log(base)) * math.ldexp(1.0, -53)


def out_like(x):
    """None (let posenc allocate) for NumPy arrays and torch tensors; a NaN-filled output for a BF16Array, which
    NumPy cannot allocate."""
    from bf16 import BF16Array

    return BF16Array.full(x.shape, float("nan")) if isinstance(x, BF16Array) else None


def is_numpy(x) -> bool:
    return isinstance(x, np.ndarray)
