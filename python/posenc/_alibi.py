"""ALiBi (Press et al. 2022): slopes, the bias tensor, adding it to attention scores."""

from __future__ import annotations

import importlib
import numbers
import os
from typing import Any, Dict, Optional, Sequence, Tuple, Union

import numpy as np

from ._common import _C
from ._common import Array, DType, Positions, _alloc, _check_array, _int, _pos


# -------------------------------------------------------------------------------------------------------- ALiBi


def _head_end(head_end: Optional[int]) -> int:
    return -1 if head_end is None else int(head_end)


def alibi_slopes(
    num_heads: int,
    max_bias: float = 8.0,
    head_begin: int = 0,
    head_end: Optional[int] = None,
    dtype: DType = np.float64,
    out: Optional[Array] = None,
) -> Array:
    """ALiBi slopes of global heads [head_begin, head_end) of ``num_heads`` (Press et al. 2022; ggml's
    max_bias generalisation)::

        n = largest power of two <= num_heads
        slope_h = 2^(-max_bias (h + 1) / n)                 for h < n
        slope_h = 2^(-max_bias (2 (h - n) + 1) / (2 n))     otherwise

    formed in double, rounded once. Returns ``out`` (allocated (head_end - head_begin,) of ``dtype`` when
    None)."""
    fn = "alibi_slopes"
    h1 = int(num_heads) if head_end is None else int(head_end)
    if out is None:
        out = _alloc((max(h1 - int(head_begin), 0),), dtype, fn)
    out = _check_array(out, "out", fn, True)
    _C.alibi_slopes(out, _int(num_heads, "num_heads", fn), float(max_bias), _int(head_begin, "head_begin", fn), _head_end(head_end))
    return out


def alibi_bias(
    num_heads: int,
    query_len: Optional[int] = None,
    key_len: Optional[int] = None,
    query_offset: int = 0,
    max_bias: float = 8.0,
    head_begin: int = 0,
    head_end: Optional[int] = None,
    form: str = "linear",
    causal: bool = False,
    dtype: DType = np.float32,
    out: Optional[Array] = None,
    *,
    arithmetic: str = "exact",
) -> Array:
    """The ALiBi bias tensor (H_local, Lq, Lk) for queries at positions query_offset + i and keys at j::

        linear:    bias[h, i, j] = slope_h * (j - (i + query_offset))
        symmetric: bias[h, i, j] = -slope_h * |j - (i + query_offset)|

    ``causal=True`` writes -inf where j > i + query_offset. ``arithmetic``: "exact" (the double slope, one
    rounding) or "fp32" (float32 engines' rounding: the slope and the distance rounded to float, their float
    product; float32 / float16 / bfloat16 outputs). Returns ``out`` (allocated of ``dtype`` from query_len and
    key_len when None)."""
    fn = "alibi_bias"
    if out is None:
        if query_len is None or key_len is None:
            raise ValueError(f"posenc.{fn}: give query_len and key_len, or out")
        h1 = int(num_heads) if head_end is None else int(head_end)
        out = _alloc((max(h1 - int(head_begin), 0), int(query_len), int(key_len)), dtype, fn)
    out = _check_array(out, "out", fn, True)
    _C.alibi_bias(
        out, _int(num_heads, "num_heads", fn), float(max_bias), _int(head_begin, "head_begin", fn),
        _head_end(head_end), form, _int(query_offset, "query_offset", fn), bool(causal), str(arithmetic),
    )
    return out


def add_alibi_bias(
    scores: Array,
    num_heads: Optional[int] = None,
    positions: Positions = None,
    offset: int = 0,
    max_bias: float = 8.0,
    head_begin: int = 0,
    head_end: Optional[int] = None,
    form: str = "linear",
    causal: bool = False,
    slopes: Optional[Array] = None,
    *,
    starts: Positions = None,
    arithmetic: str = "exact",
) -> Array:
    """Adds ALiBi to attention scores in place, before the softmax::

        scores[n, h, i, j] += slope_h * (j - q(n, i))        (symmetric: -slope_h * |j - q(n, i)|)

    q(n, i) the position of query i of row n: ``offset`` + i by default (a KV cache of ``offset`` entries),
    or ``positions`` ((N, Lq), (Lq,) or (1, Lq)), or ``starts`` (N,) (query i of row n at starts[n] + i).
    ``causal=True`` sets scores with j > q(n, i) to -inf. ``scores``:
    (N, H_local, Lq, Lk) or (H_local, Lq, Lk), any strides. Slopes from ``num_heads`` (default: the scores'
    head count), ``max_bias`` and the shard [head_begin, head_end), or given as ``slopes`` ((H_local,) or
    (N, H_local)). ``arithmetic``: "exact" (fma(slope, j - q, score) in double, one rounding) or "fp32" (the
    float slope and distance, a float fma: what float32 engines such as llama.cpp compute, at twice the SIMD
    width; float32 / float16 / bfloat16 scores). Returns ``scores``."""
    fn = "add_alibi_bias"
    scores = _check_array(scores, "scores", fn, True)
    ids, is_starts = _pos(positions, starts, fn)
    off = _int(offset, "offset", fn)
    if slopes is not None:
        if num_heads is not None or head_begin != 0 or head_end is not None:
            raise ValueError(f"posenc.{fn}: give slopes or (num_heads, head_begin, head_end), not both")
        _C.add_alibi_bias_slopes(scores, _check_array(slopes, "slopes", fn, False), form, ids, is_starts, off, bool(causal),
                                 str(arithmetic))
        return scores
    if num_heads is None:
        shape = tuple(scores.shape)
        if len(shape) not in (3, 4):
            raise ValueError(f"posenc.{fn}: scores must have shape (N, H, Lq, Lk) or (H, Lq, Lk), got {shape}")
        num_heads = shape[-3]
    _C.add_alibi_bias(
        scores, _int(num_heads, "num_heads", fn), float(max_bias), _int(head_begin, "head_begin", fn),
        _head_end(head_end), form, ids, is_starts, off, bool(causal), str(arithmetic),
    )
    return scores
