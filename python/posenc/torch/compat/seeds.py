"""The positional-encoding modules of the documents posenc was created from (``shared/seeds``: the notes on
sinusoidal, learned, RoPE and ALiBi modules), as drop-ins over posenc's kernels:

* ``SinusoidalPositionalEncoding(emb_dim, max_len=5000, dropout=0.0)``: x (N, L, emb_dim) + pe[:, :L], sin at
  the even features and cos at the odd ones (Vaswani et al. 2017, interleaved), then dropout; ``emb_dim`` must be
  even; ``pe`` (1, max_len, emb_dim) is a buffer, as the notes register it.
* ``LearnedPositionalEmbedding(emb_dim, dropout=0.0, seq_len=1024, scale=1.0, use_ln=False)``: x + scale *
  E[0..L-1] (an embedding table of seq_len rows, N(0, 1) initialised as nn.Embedding), then LayerNorm with
  ``use_ln``, then dropout. The notes' ``relative=True`` ("additional learnable bias terms") is not defined
  there: use :class:`posenc.torch.T5RelativeBias` for a learned relative bias; here it raises
  NotImplementedError.
* ``RotaryPositionalEmbedding(dim, max_len=..., base=10000.0)``: ``forward(q, k)`` returns both rotated, the
  pairs (x[2i], x[2i+1]) as the notes' "real and imaginary parts" (interleaved), q and k (N, H, L, dim).
* ``ALiBiPositionalBias(num_heads, max_len=..., max_bias=8.0)``: ``forward(scores)`` returns scores + the bias
  sliced to (Lq, Lk) (query i at position i, key j at j: slope_h * (j - i)), ``slopes`` a buffer (Press et al.
  2022: 2^(-8/n (h+1)) for n a power of two, interleaved for other head counts).

Every forward is differentiable (:mod:`posenc.torch`); values are posenc's (angles in double, sums rounded
once), tested against the golden files.
"""

from __future__ import annotations

from typing import Tuple

import numpy as np
import torch

import posenc
import posenc.torch as _pt

__all__ = ["SinusoidalPositionalEncoding", "LearnedPositionalEmbedding", "RotaryPositionalEmbedding",
           "ALiBiPositionalBias"]


def _check_len(fn: str, length: int, max_len: int) -> None:
    if length > max_len:
        raise ValueError(f"{fn}: sequence length {length} exceeds max_len={max_len}")


class SinusoidalPositionalEncoding(torch.nn.Module):
    """Fixed sinusoidal encoding added to x, then dropout (see the module docstring)."""

    def __init__(self, emb_dim: int, max_len: int = 5000, dropout: float = 0.0) -> None:
        super().__init__()
        if emb_dim % 2 != 0:
            raise ValueError(f"emb_dim must be even, but got {emb_dim}")
        self.emb_dim, self.max_len = int(emb_dim), int(max_len)
        self.dropout = torch.nn.Dropout(dropout)
        pe = posenc.sinusoidal_table(self.max_len, self.emb_dim, style="interleaved", dtype=np.float32)
        self.register_buffer("pe", torch.from_numpy(pe).unsqueeze(0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_len("SinusoidalPositionalEncoding", int(x.shape[-2]), self.max_len)
        return self.dropout(_pt.add_sinusoidal(x, style="interleaved"))


class LearnedPositionalEmbedding(torch.nn.Module):
    """A learned table of seq_len positions added to x (scaled), LayerNorm with use_ln, dropout (see above)."""

    def __init__(self, emb_dim: int, dropout: float = 0.0, seq_len: int = 1024, scale: float = 1.0,
                 use_ln: bool = False, relative: bool = False) -> None:
        super().__init__()
        if relative:
            raise NotImplementedError("LearnedPositionalEmbedding: relative=True is not defined by the notes; use "
                                      "posenc.torch.T5RelativeBias for a learned relative bias")
        self.seq_len = int(seq_len)
        self.embedding = _pt.LearnedPositionEmbedding(self.seq_len, int(emb_dim), scale=float(scale), layer_norm=use_ln,
                                                      dropout=float(dropout))
        with torch.no_grad():
            torch.nn.init.normal_(self.embedding.weight)  # nn.Embedding's initialisation, from torch's RNG

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_len("LearnedPositionalEmbedding", int(x.shape[-2]), self.seq_len)
        return self.embedding(x if x.dim() == 3 else x.unsqueeze(0)).reshape(x.shape)


class RotaryPositionalEmbedding(torch.nn.Module):
    """RoPE on (x[2i], x[2i+1]) pairs of q and k (N, H, L, dim) (see the module docstring)."""

    def __init__(self, dim: int, max_len: int = 4096, base: float = 10000.0) -> None:
        super().__init__()
        self.dim, self.max_len = int(dim), int(max_len)
        self.plan = posenc.RopePlan(self.dim, base=float(base), style="interleaved")

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        _check_len("RotaryPositionalEmbedding", int(q.shape[-2]), self.max_len)
        return _pt.rope(q, self.plan, layout="NHLD"), _pt.rope(k, self.plan, layout="NHLD")


class ALiBiPositionalBias(torch.nn.Module):
    """ALiBi added to attention scores (N, H, Lq, Lk) or (H, Lq, Lk) (see the module docstring)."""

    def __init__(self, num_heads: int, max_len: int = 4096, max_bias: float = 8.0) -> None:
        super().__init__()
        self.num_heads, self.max_len, self.max_bias = int(num_heads), int(max_len), float(max_bias)
        self.register_buffer("slopes", torch.from_numpy(posenc.alibi_slopes(self.num_heads, self.max_bias)))

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        _check_len("ALiBiPositionalBias", int(scores.shape[-1]), self.max_len)
        return _pt.add_alibi_bias(scores, num_heads=self.num_heads, max_bias=self.max_bias)
