"""bfloat16 arrays without PyTorch, for the tests: NumPy has no bfloat16, so this is a minimal DLPack producer
(ctypes) over a uint16 NumPy buffer holding bfloat16 bits, exported with DLPack's bfloat16 type code, which is
what posenc's bindings receive from torch.bfloat16 tensors."""

from __future__ import annotations

import ctypes
from typing import List, Tuple

import numpy as np


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


_NAME = b"dltensor"
_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_KDL_CPU = 1
_KDL_BFLOAT = 4


def bits_of(values) -> np.ndarray:
    """float -> bfloat16 bits, round to nearest even (as posenc's and PyTorch's conversions)."""
    u = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    one, half, shift = np.uint64(1), np.uint64(0x7FFF), np.uint64(16)
    return ((u + half + ((u >> shift) & one)) >> shift).astype(np.uint16)


class BF16Array:
    """A bfloat16 array: `bits` (uint16, any strides) is the storage; exported through __dlpack__."""

    def __init__(self, bits: np.ndarray) -> None:
        assert bits.dtype == np.uint16
        self.bits = bits
        self._keep: List[object] = []  # the DLPack structs handed out (no deleter: they live as long as this)

    @classmethod
    def from_float(cls, values) -> "BF16Array":
        return cls(bits_of(values))

    @classmethod
    def full(cls, shape, value: float) -> "BF16Array":
        return cls(np.full(shape, bits_of(value), dtype=np.uint16))

    @property
    def shape(self) -> Tuple[int, ...]:
        return self.bits.shape

    def to_float(self) -> np.ndarray:
        return (self.bits.astype(np.uint32) << np.uint32(16)).view(np.float32)

    def copy(self) -> "BF16Array":
        return BF16Array(self.bits.copy())

    def __eq__(self, other):  # element-wise, on the bits
        return self.bits == other.bits

    def __dlpack_device__(self):
        return (_KDL_CPU, 0)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        b = self.bits
        n = b.ndim
        shape = (ctypes.c_int64 * max(n, 1))(*b.shape)
        strides = (ctypes.c_int64 * max(n, 1))(*(s // b.itemsize for s in b.strides))
        m = _DLManagedTensor()
        m.dl_tensor.data = b.ctypes.data
        m.dl_tensor.device = _DLDevice(_KDL_CPU, 0)
        m.dl_tensor.ndim = n
        m.dl_tensor.dtype = _DLDataType(_KDL_BFLOAT, 16, 1)
        m.dl_tensor.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
        m.dl_tensor.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
        m.dl_tensor.byte_offset = 0
        m.manager_ctx = None
        m.deleter = None
        self._keep.extend((m, shape, strides))
        return _capsule_new(ctypes.addressof(m), _NAME, None)
