"""Shared by every posenc submodule: the extension module, the type aliases, ISA selection, argument
checks, allocation of outputs and the position keywords (defaults and allocation live here only)."""

from __future__ import annotations

import importlib
import numbers
import os
from typing import Any, Dict, Optional, Sequence, Tuple, Union

import numpy as np

try:
    from . import _posenc as _C
except ImportError as e:  # pragma: no cover - only when the extension was not built
    raise ImportError(
        "posenc: the compiled extension posenc._posenc is missing; install the package (pip install ./python) "
        "rather than importing it from the source folder"
    ) from e


#: Anything posenc accepts as a tensor: a NumPy array, a PyTorch tensor on the CPU, or another DLPack producer.
Array = Any
#: Positions: None (use ``offset``), or int64/int32 of shape (N,) or (N, L).
Positions = Optional[Any]
#: A dtype for arrays posenc allocates: a NumPy dtype (or its name), or a ``torch.dtype``.
DType = Any


# ---------------------------------------------------------------------------------------------------------- ISA


def isa() -> str:
    """The instruction set posenc's kernels use now: ``"scalar"``, ``"avx2"``, ``"avx512"`` or ``"neon"``.

    The widest the CPU and OS support, chosen once from CPUID (posenc::active_isa()), unless capped by the
    environment variable ``POSENC_ISA`` (read at the first call) or by :func:`set_isa`.
    """
    return _C.isa()


def set_isa(name: str) -> str:
    """Caps the kernels at ISA ``name`` for every later call (tests, benchmarks, bug reports) and returns the
    ISA now active: the widest the CPU supports at or below ``name`` (an unsupported request falls back)."""
    return _C.set_isa(name)


def reset_isa() -> str:
    """Undoes :func:`set_isa`: ``POSENC_ISA`` if set, else the widest supported ISA. Returns it."""
    return _C.reset_isa()


def cpu_supports(name: str) -> bool:
    """Whether this CPU and OS can run posenc's kernels for ISA ``name`` (``"avx512"`` needs F/BW/VL/DQ)."""
    return _C.cpu_supports(name)


# ------------------------------------------------------------------------------------------------------ helpers


def _is_torch(x: Any) -> bool:
    return type(x).__module__.split(".", 1)[0] == "torch"


def _check_array(x: Any, name: str, fn: str, writable: bool) -> Any:
    """The array as the extension takes it, with clear errors for what DLPack/buffer import would refuse."""
    if isinstance(x, np.ndarray):
        if writable and not x.flags.writeable:
            raise ValueError(f"posenc.{fn}: {name} is a read-only array; posenc writes it in place")
        if not x.dtype.isnative or x.dtype.kind in "OSUVM":
            raise TypeError(
                f"posenc.{fn}: {name} has dtype {x.dtype.str}; posenc takes float32, float64, float16 or bfloat16 "
                "in native byte order"
            )
        return x
    if _is_torch(x):
        if getattr(x, "requires_grad", False):
            raise ValueError(
                f"posenc.{fn}: {name} requires grad; posenc records no autograd graph: pass {name}.detach()"
            )
        return x
    if hasattr(x, "__dlpack__") or hasattr(x, "__array_interface__"):
        return x
    if writable:
        raise TypeError(f"posenc.{fn}: {name} must be an array (NumPy, PyTorch or DLPack), got {type(x).__name__}")
    return np.asarray(x)


def _empty_like(x: Any, fn: str, dtype: DType = None) -> Any:
    """A new C-contiguous array of x's shape (and dtype, unless given), of x's kind (NumPy or PyTorch; NumPy for
    other DLPack producers whose dtype NumPy has)."""
    if _is_torch(x):
        torch = importlib.import_module("torch")

        return torch.empty(tuple(x.shape), dtype=x.dtype if dtype is None else dtype, device=x.device)
    if isinstance(x, np.ndarray):
        return np.empty(x.shape, dtype=x.dtype if dtype is None else dtype)
    try:
        a = np.from_dlpack(x) if hasattr(x, "__dlpack__") else np.asarray(x)
    except Exception as e:  # e.g. bfloat16, which NumPy has not
        raise TypeError(
            f"posenc.{fn}: cannot allocate an output like this {type(x).__name__} (NumPy cannot hold its dtype): "
            "pass out="
        ) from e
    return np.empty(a.shape, dtype=a.dtype if dtype is None else dtype)


def _copy_into(out: Any, x: Any, fn: str) -> None:
    """out[...] = x (the in-place inverse of xPos and MRoPE works on a copy of x in out)."""
    if _is_torch(out):
        torch = importlib.import_module("torch")

        out.copy_(x if _is_torch(x) else torch.from_numpy(np.asarray(x)))
    elif isinstance(out, np.ndarray):
        np.copyto(out, x.numpy() if _is_torch(x) else np.asarray(x), casting="unsafe")
    else:
        raise TypeError(f"posenc.{fn}: inverse=True needs out=x, or an out that is a NumPy array or PyTorch tensor")


def _alloc(shape: Tuple[int, ...], dtype: DType, fn: str) -> Any:
    """A new array for a table posenc writes: NumPy, or PyTorch when dtype is a torch.dtype."""
    if type(dtype).__module__.split(".", 1)[0] == "torch":
        torch = importlib.import_module("torch")

        return torch.empty(shape, dtype=dtype)
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(
            f"posenc.{fn}: dtype {dtype!r} is not a NumPy dtype (for bfloat16 pass dtype=torch.bfloat16, or out=)"
        ) from e
    return np.empty(shape, dtype=dt)


def _ids(positions: Positions, fn: str, name: str = "positions", int64_only: bool = False) -> Any:
    """Positions as the extension takes them: C-contiguous int64/int32 (a small copy only if they are not)."""
    if positions is None:
        return None
    if _is_torch(positions):
        torch = importlib.import_module("torch")

        if positions.dtype.is_floating_point or positions.dtype.is_complex or positions.dtype == torch.bool:
            raise TypeError(f"posenc.{fn}: {name} must be integers, got {positions.dtype}")
        if positions.dtype not in ((torch.int64,) if int64_only else (torch.int64, torch.int32)):
            positions = positions.to(torch.int64)
        return positions.contiguous()
    a = np.asarray(positions)
    if a.dtype.kind not in "iu":
        raise TypeError(f"posenc.{fn}: {name} must be integers, got dtype {a.dtype}")
    if a.dtype not in ((np.dtype(np.int64),) if int64_only else (np.dtype(np.int64), np.dtype(np.int32))):
        a = a.astype(np.int64)
    return np.ascontiguousarray(a)


def _pos(positions: Positions, starts: Positions, fn: str) -> Tuple[Any, bool]:
    """The ids and their meaning, each named by its keyword (never guessed from a shape): ``positions`` one id
    per token ((N, L), or (L,) / (1, L) for every sequence), ``starts`` one start per sequence ((N,))."""
    if positions is not None and starts is not None:
        raise ValueError(
            f"posenc.{fn}: give positions (one id per token) or starts (one start per sequence), not both"
        )
    if starts is not None:
        return _ids(starts, fn, "starts"), True
    return _ids(positions, fn), False


def _layout(layout: Optional[str]) -> str:
    return "" if layout is None else str(layout)


def _out(x: Any, out: Optional[Array], fn: str, dtype: DType = None) -> Any:
    if out is None:
        return _empty_like(x, fn, dtype)
    return _check_array(out, "out", fn, True)


def _seq_len(v: Optional[int], fn: str) -> int:
    """seq_len as the C++ API takes it: None (not stated) is 0, which length-dependent scalings reject."""
    return 0 if v is None else _int(v, "seq_len", fn)


def _merged_config(cfg: Dict[str, Any], changes: Dict[str, Any], fn: str) -> Dict[str, Any]:
    """cfg (RopePlan.config form) with `changes`: top-level keys replaced, ``scaling`` merged key by key."""
    out = dict(cfg)
    for key, value in changes.items():
        if key not in out:
            raise TypeError(f"posenc.{fn}: unknown configuration key {key!r} (known: {', '.join(out)})")
        if key == "scaling":
            if not isinstance(value, dict):
                raise TypeError(f"posenc.{fn}: scaling must be a dict of the keys of config['scaling']")
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def _int(v: Any, name: str, fn: str) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"posenc.{fn}: {name} must be an integer, got {type(v).__name__}")
    return int(v)
