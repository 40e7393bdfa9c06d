"""T5 relative-position buckets (Raffel et al. 2020)."""

from __future__ import annotations

import importlib
import numbers
import os
from typing import Any, Dict, Optional, Sequence, Tuple, Union

import numpy as np

from ._common import _C
from ._common import Array, DType, _alloc, _check_array, _ids, _int, _is_torch


# ----------------------------------------------------------------------------------------------------------- T5


def t5_relative_bucket(
    relative_position: Union[int, Array],
    bidirectional: bool = True,
    num_buckets: int = 32,
    max_distance: int = 128,
) -> Union[int, np.ndarray]:
    """T5's bucket of relative position r = key position - query position (Raffel et al. 2020; HF
    ``T5Attention._relative_position_bucket``), bit for bit including its float32 log::

        bidirectional: nb = num_buckets / 2, offset nb if r > 0, n = |r|;   causal: nb = num_buckets, n = max(-r, 0)
        e = nb / 2;  bucket = n if n < e else min(e + trunc(logf(n / e) / log(max_distance / e) * (nb - e)), nb - 1)

    An int gives an int; an integer array gives an int64 array of the same shape."""
    fn = "t5_relative_bucket"
    if isinstance(relative_position, numbers.Integral) and not isinstance(relative_position, bool):
        return _C.t5_relative_bucket(int(relative_position), bool(bidirectional), int(num_buckets), int(max_distance))
    r = _ids(relative_position, fn, "relative_position", int64_only=True)
    if _is_torch(r):
        r = r.numpy()
    out = np.empty(r.shape, dtype=np.int64)
    _C.t5_relative_bucket_array(r.reshape(-1), out.reshape(-1), bool(bidirectional), int(num_buckets), int(max_distance))
    return out


def t5_bucket_table(
    query_len: Optional[int] = None,
    key_len: Optional[int] = None,
    query_offset: int = 0,
    bidirectional: bool = True,
    num_buckets: int = 32,
    max_distance: int = 128,
    dtype: DType = np.int64,
    out: Optional[Array] = None,
) -> Array:
    """buckets[i, j] = t5_relative_bucket(j - (i + query_offset)) for (Lq, Lk) (HF ``compute_bias`` with
    cache_position = query_offset + arange(Lq)). Returns ``out`` (allocated int64/int32 when None)."""
    fn = "t5_bucket_table"
    if out is None:
        if query_len is None or key_len is None:
            raise ValueError(f"posenc.{fn}: give query_len and key_len, or out")
        out = _alloc((int(query_len), int(key_len)), dtype, fn)
    out = _check_array(out, "out", fn, True)
    _C.t5_bucket_table(out, bool(bidirectional), _int(num_buckets, "num_buckets", fn), _int(max_distance, "max_distance", fn),
                       _int(query_offset, "query_offset", fn))
    return out
