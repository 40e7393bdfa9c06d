"""The modules with learned tables: T5RelativeBias (T5's relative attention bias) and LearnedPositionEmbedding
(absolute learned positions: GPT-2 ``wpe``, BERT, OPT), their tables NumPy views of the C++ module's memory."""

from __future__ import annotations

from typing import Optional

import numpy as np

from ._common import _C
from ._common import Array, Positions, _check_array, _int, _out, _pos


def _table_dtype(dtype, fn: str) -> str:
    name = str(np.dtype(str(dtype).replace("torch.", "")))
    if name not in ("float32", "float64"):
        raise TypeError(f"posenc.{fn}: dtype={dtype!r}: the table is float32 or float64")
    return name


class T5RelativeBias:
    """T5's relative attention bias (Raffel et al. 2020; HF ``T5Attention.relative_attention_bias`` and
    ``compute_bias``): a (num_buckets, H) table, bias[h, i, j] = table[bucket(j - (i + query_offset)), h] with
    posenc's buckets (T5's, bit for bit); ``backward`` accumulates into ``table_grad`` each bucket's summed
    gradient. ``table`` is a writable view of the module's own memory (load weights into it)."""

    __slots__ = ("_m",)

    def __init__(self, num_heads: int, bidirectional: bool = True, num_buckets: int = 32, max_distance: int = 128,
                 dtype="float32") -> None:
        fn = "T5RelativeBias"
        self._m = _C.T5RelativeBiasCore(_int(num_heads, "num_heads", fn), bool(bidirectional),
                                        _int(num_buckets, "num_buckets", fn), _int(max_distance, "max_distance", fn),
                                        _table_dtype(dtype, fn))

    table = property(lambda self: self._m.table, doc="The (num_buckets, H) table, writable.")
    table_grad = property(lambda self: self._m.table_grad, doc="Accumulated (num_buckets, H) gradient, read-only.")

    def zero_grad(self) -> None:
        """Zeroes table_grad."""
        self._m.zero_grad()

    def init_normal(self, seed: int, stddev: float = 1.0) -> None:
        """table = stddev * N(0, 1) from posenc's portable generator (the same table on every platform)."""
        self._m.init_normal(int(seed), float(stddev))

    def forward(self, query_len: int, key_len: int, query_offset: int = 0, dtype="float32",
                out: Optional[Array] = None) -> Array:
        """The bias (H, Lq, Lk) (HF ``compute_bias`` without its batch axis); ``out`` allocated when None."""
        fn = "T5RelativeBias.forward"
        if out is None:
            out = np.empty((self.table.shape[1], _int(query_len, "query_len", fn), _int(key_len, "key_len", fn)),
                           dtype=np.dtype(dtype))
        out = _check_array(out, "out", fn, True)
        self._m.forward(out, _int(query_offset, "query_offset", fn))
        return out

    def backward(self, grad_bias: Array, query_offset: int = 0) -> None:
        """table_grad[b, h] += the sum of grad_bias[h, i, j] over the (i, j) of bucket b (grad_bias (H, Lq, Lk))."""
        fn = "T5RelativeBias.backward"
        self._m.backward(_check_array(grad_bias, "grad_bias", fn, False), _int(query_offset, "query_offset", fn))


def add_t5_bias(scores: Array, rel: T5RelativeBias, positions: Positions = None, offset: int = 0, *,
                starts: Positions = None) -> Array:
    """scores[n, h, i, j] += table[bucket(j - q(n, i)), h] in place (scores (N, H, Lq, Lk) or (H, Lq, Lk)); q as
    everywhere: ``offset`` + i, ``positions`` (N, Lq), or ``starts`` (N,). Returns ``scores``."""
    fn = "add_t5_bias"
    if not isinstance(rel, T5RelativeBias):
        raise TypeError(f"posenc.{fn}: rel must be a posenc.T5RelativeBias, got {type(rel).__name__}")
    scores = _check_array(scores, "scores", fn, True)
    rel._m.add(scores, *_pos(positions, starts, fn), _int(offset, "offset", fn))
    return scores


class LearnedPositionEmbedding:
    """Learned absolute positions (GPT-2 ``wpe``, BERT ``position_embeddings``, OPT with ``position_offset=2``):
    y = dropout(LN(x + scale * E[p + position_offset])) (layer norm and dropout optional), the backward into
    ``table_grad`` (and ``gamma_grad``, ``beta_grad``). ``table``, ``gamma``, ``beta``: writable views of the
    module's memory. Dropout draws from ``seed`` (one draw per element, the same mask on every platform)."""

    __slots__ = ("_m",)

    def __init__(self, max_positions: int, dim: int, position_offset: int = 0, scale: float = 1.0,
                 layer_norm: bool = False, eps: float = 1e-5, dropout: float = 0.0, dtype="float32") -> None:
        fn = "LearnedPositionEmbedding"
        self._m = _C.LearnedCore(_int(max_positions, "max_positions", fn), _int(dim, "dim", fn),
                                 _int(position_offset, "position_offset", fn), float(scale), bool(layer_norm), float(eps),
                                 float(dropout), _table_dtype(dtype, fn))

    table = property(lambda self: self._m.table, doc="The (max_positions + position_offset, D) table, writable.")
    gamma = property(lambda self: self._m.gamma, doc="Layer-norm weight (D,), writable.")
    beta = property(lambda self: self._m.beta, doc="Layer-norm bias (D,), writable.")
    table_grad = property(lambda self: self._m.table_grad, doc="Accumulated table gradient, read-only.")
    gamma_grad = property(lambda self: self._m.gamma_grad, doc="Accumulated gamma gradient, read-only.")
    beta_grad = property(lambda self: self._m.beta_grad, doc="Accumulated beta gradient, read-only.")

    def zero_grad(self) -> None:
        """Zeroes the accumulated gradients."""
        self._m.zero_grad()

    def init_normal(self, seed: int, stddev: float = 0.02) -> None:
        """table = stddev * N(0, 1) from posenc's portable generator (GPT-2 / BERT: 0.02)."""
        self._m.init_normal(int(seed), float(stddev))

    def forward(self, x: Array, positions: Positions = None, offset: int = 0, train: bool = False, seed: int = 0,
                out: Optional[Array] = None, cache: Optional[object] = None, *, starts: Positions = None) -> Array:
        """y for x (N, L, D) at the tokens' positions; ``out`` as :func:`posenc.apply_rope` (``out=x`` in place).
        ``cache`` (from :meth:`new_cache`) keeps what :meth:`backward` needs. Returns ``out``."""
        fn = "LearnedPositionEmbedding.forward"
        x = _check_array(x, "x", fn, False)
        out = _out(x, out, fn)
        if cache is None:
            cache = self.new_cache()
        self._m.forward(x, out, *_pos(positions, starts, fn), _int(offset, "offset", fn), bool(train), int(seed), cache)
        return out

    @staticmethod
    def new_cache() -> object:
        """An empty forward cache (one per forward whose backward is still to run)."""
        return _C.LearnedCacheCore()

    def backward(self, grad_out: Array, cache: object, grad_in: Optional[Array] = None) -> Array:
        """dL/dx from dL/dy of the forward that filled ``cache`` (``grad_in`` allocated when None); the table's
        (and gamma's, beta's) gradients accumulate. Returns ``grad_in``."""
        fn = "LearnedPositionEmbedding.backward"
        grad_out = _check_array(grad_out, "grad_out", fn, False)
        grad_in = _out(grad_out, grad_in, fn)
        self._m.backward(grad_out, grad_in, cache)
        return grad_in
