"""xPos (Sun et al. 2022, torchscale XPOS): XposPlan, apply_xpos, apply_xpos_qk."""

from __future__ import annotations

import importlib
import numbers
import os
from typing import Any, Dict, Optional, Sequence, Tuple, Union

import numpy as np

from ._common import _C
from ._common import Array, DType, Positions, _check_array, _copy_into, _int, _layout, _out, _pos


class XposPlan:
    """An xPos plan (Sun et al. 2022, torchscale ``XPOS``): RoPE over every feature (w_i = base^(-2i/D)) whose
    pair i is also scaled by zeta_i^((p - C)/scale_base) for queries (upscale) and by its reciprocal for keys
    (downscale), zeta_i = (2i/D + gamma)/(1 + gamma), so q.k decays with the distance."""

    __slots__ = ("_x",)

    def __init__(
        self,
        head_dim: int,
        scale_base: float = 512.0,
        gamma: float = 0.4,
        base: float = 10000.0,
        style: str = "interleaved",
    ) -> None:
        self._x = _C.XposPlanCore(_int(head_dim, "head_dim", "XposPlan"), scale_base, gamma, base, style)

    head_dim = property(lambda self: self._x.head_dim, doc="D, even: every feature rotates.")
    scale_base = property(lambda self: self._x.scale_base, doc="torchscale's scale_base (512).")
    gamma = property(lambda self: self._x.gamma, doc="zeta_i = (2i/D + gamma)/(1 + gamma).")
    base = property(lambda self: self._x.base, doc="The rotary base.")
    style = property(lambda self: self._x.style, doc="Pair style (torchscale: interleaved).")
    inv_freq = property(lambda self: self._x.inv_freq, doc="w_i = base^(-2i/D) (read-only view).")
    log_zeta = property(lambda self: self._x.log_zeta, doc="ln zeta_i (read-only view).")

    def max_safe_distance(self, dtype: DType = "float32") -> float:
        """The largest |p - C| at which every scale and its reciprocal stay in ``dtype``'s normal range."""
        name = str(dtype).replace("torch.", "")
        return self._x.max_safe_distance(name if name == "bfloat16" else str(np.dtype(name)))

    def __repr__(self) -> str:
        return (
            f"XposPlan(head_dim={self.head_dim}, scale_base={self.scale_base}, gamma={self.gamma}, "
            f"base={self.base}, style={self.style!r})"
        )


# --------------------------------------------------------------------------------------------------------- xPos


def xpos_default_center(length: int, offset: int = 0) -> int:
    """torchscale's centre for a call on ``length`` tokens after ``offset`` cached ones: ceil((L + P0) / 2)."""
    return length // 2 + offset // 2 + (length % 2 + offset % 2 + 1) // 2


def apply_xpos(
    x: Array,
    plan: XposPlan,
    positions: Positions = None,
    offset: int = 0,
    center: Optional[int] = None,
    downscale: bool = False,
    inverse: bool = False,
    out: Optional[Array] = None,
    layout: Optional[str] = None,
    *,
    starts: Positions = None,
) -> Array:
    """xPos: pair i turns by p * w_i and is scaled by s = zeta_i^((p - C)/scale_base) (queries), or 1/s with
    ``downscale=True`` (keys)::

        y_a = s (x_a cos(p w_i) - x_b sin(p w_i)),   y_b = s (x_b cos(p w_i) + x_a sin(p w_i))

    torchscale ``XPOS.forward(x, offset, downscale)`` on (N, L, D) is ``apply_xpos(x, plan, offset=offset,
    downscale=downscale, layout="NLD")``. ``center`` C defaults to torchscale's ceil((L + offset)/2) (a KV
    cache must keep one centre for all its entries: pass it). ``inverse``: the transpose (rotation by
    -p * w_i, same scale), computed in place on ``out``. ``out`` as :func:`apply_rope`. Returns ``out``."""
    fn = "apply_xpos"
    if not isinstance(plan, XposPlan):
        raise TypeError(f"posenc.{fn}: plan must be a posenc.XposPlan, got {type(plan).__name__}")
    x = _check_array(x, "x", fn, False)
    out = _out(x, out, fn)
    if inverse and out is not x:
        _copy_into(out, x, fn)
        x = out
    _C.apply_xpos(
        x, out, plan._x, *_pos(positions, starts, fn), _int(offset, "offset", fn),
        None if center is None else _int(center, "center", fn), bool(downscale), bool(inverse), _layout(layout),
    )
    return out


def apply_xpos_qk(
    q: Array,
    k: Array,
    plan: XposPlan,
    positions: Positions = None,
    offset: int = 0,
    center: Optional[int] = None,
    layout: Optional[str] = None,
    *,
    starts: Positions = None,
) -> Tuple[Array, Array]:
    """xPos on queries (upscaled) and keys (downscaled) around one centre, in place: <q_m, k_n> then depends on
    m - n only. Returns ``(q, k)``."""
    fn = "apply_xpos_qk"
    if not isinstance(plan, XposPlan):
        raise TypeError(f"posenc.{fn}: plan must be a posenc.XposPlan, got {type(plan).__name__}")
    q = _check_array(q, "q", fn, True)
    k = _check_array(k, "k", fn, True)
    _C.apply_xpos_qk(
        q, k, plan._x, *_pos(positions, starts, fn), _int(offset, "offset", fn),
        None if center is None else _int(center, "center", fn), _layout(layout),
    )
    return q, k
