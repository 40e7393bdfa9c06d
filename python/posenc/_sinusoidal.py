"""Sinusoidal position encodings (Vaswani et al. 2017; fairseq padding)."""

from __future__ import annotations

import importlib
import numbers
import os
from typing import Any, Dict, Optional, Sequence, Tuple, Union

import numpy as np

from ._common import _C
from ._common import Array, DType, Positions, _alloc, _check_array, _ids, _int, _is_torch, _out, _pos


# --------------------------------------------------------------------------------------------------- sinusoidal


def sinusoidal_table(
    length: Optional[int] = None,
    dim: Optional[int] = None,
    offset: int = 0,
    base: float = 10000.0,
    style: str = "interleaved",
    padding_idx: Optional[int] = None,
    dtype: DType = np.float32,
    out: Optional[Array] = None,
) -> Array:
    """Rows offset..offset+L-1 of the sinusoidal position table (L, D), angles in double::

        interleaved (Vaswani et al. 2017): T[p, 2i] = sin(p w_i), T[p, 2i+1] = cos(p w_i), w_i = base^(-2i/D)
        concat (tensor2tensor, fairseq):   T[p, i] = sin(p w_i), T[p, D/2+i] = cos(p w_i), w_i = base^(-i/(D/2-1))

    The row p = ``padding_idx`` is zero (fairseq). Returns ``out`` (allocated (length, dim) of ``dtype``
    when None; else its shape gives L and D)."""
    fn = "sinusoidal_table"
    if out is None:
        if length is None or dim is None:
            raise ValueError(f"posenc.{fn}: give length and dim, or out")
        out = _alloc((int(length), int(dim)), dtype, fn)
    out = _check_array(out, "out", fn, True)
    if dim is None:
        dim = int(out.shape[-1]) if len(out.shape) > 0 else 0
    d = _int(dim, "dim", fn)
    _C.sinusoidal_table(out, d, float(base), style, None if padding_idx is None else int(padding_idx), _int(offset, "offset", fn))
    return out


def add_sinusoidal(
    x: Array,
    positions: Positions = None,
    offset: int = 0,
    base: float = 10000.0,
    style: str = "interleaved",
    padding_idx: Optional[int] = None,
    out: Optional[Array] = None,
    *,
    starts: Positions = None,
) -> Array:
    """Adds the sinusoidal encoding: out[n, l, :] = x[n, l, :] + T[p(n, l), :] (T as :func:`sinusoidal_table`,
    D = x's last extent), the sum formed in double and rounded once. ``x``: (N, L, D) or (L, D). Positions as
    everywhere (fairseq padding: :func:`make_padded_positions`). ``out`` as :func:`apply_rope` (same dtype as
    x). Returns ``out``."""
    fn = "add_sinusoidal"
    x = _check_array(x, "x", fn, False)
    out = _out(x, out, fn)
    shape = tuple(x.shape)
    dim = int(shape[-1]) if shape else 0
    _C.add_sinusoidal(
        x, out, dim, float(base), style, None if padding_idx is None else int(padding_idx), *_pos(positions, starts, fn),
        _int(offset, "offset", fn),
    )
    return out


def make_padded_positions(tokens: Array, padding_idx: int, past_length: int = 0) -> np.ndarray:
    """fairseq ``utils.make_positions`` (HF ``create_position_ids_from_input_ids``) for token ids (N, L):
    non-padding tokens get padding_idx + 1, + 2, ... (plus past_length), padding tokens padding_idx. Returns
    int64 (N, L), to pass as ``positions`` with ``padding_idx`` to :func:`add_sinusoidal`."""
    fn = "make_padded_positions"
    t = _ids(tokens, fn, "tokens")
    if _is_torch(t):
        t = t.numpy()
    out = np.empty(t.shape, dtype=np.int64)
    _C.make_padded_positions(t, out, _int(padding_idx, "padding_idx", fn), _int(past_length, "past_length", fn))
    return out
