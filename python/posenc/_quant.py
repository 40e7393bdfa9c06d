"""RoPE fused with 8-bit quantisation, and the pair-layout conversions of tensors and q/k projection weights."""

from __future__ import annotations

from typing import Optional, Tuple, Union

import numpy as np

from ._common import _C
from ._common import Array, Positions, _check_array, _int, _layout, _pos
from ._plans import RopeCache, RopePlan, _freq
from ._rope import _cache_slots


def _scales(scales: Optional[Array], name: str, fn: str) -> Optional[Array]:
    if scales is None:
        return None
    if isinstance(scales, (int, float)):
        return np.array([float(scales)], dtype=np.float32)
    return _check_array(scales, name, fn, False)


def apply_rope_quantized(
    x: Array,
    plan: Union[RopePlan, RopeCache],
    codes: Array,
    positions: Positions = None,
    offset: int = 0,
    format: str = "int8",
    scales: Optional[Union[Array, float]] = None,
    scales_out: Optional[Array] = None,
    layout: Optional[str] = None,
    *,
    starts: Positions = None,
) -> Tuple[Array, Optional[Array]]:
    """RoPE then 8-bit codes in one pass (posenc::apply_rope_quantized): codes = Q(RoPE(x)), x ~= code * scale.

    ``format``: ``"int8"`` (codes int8: round half to even of x / scale, saturated to [-128, 127], NaN -> 0),
    ``"fp8_e4m3"`` or ``"fp8_e5m2"`` (codes uint8 holding the OCP FP8 bit patterns, saturating, NaN kept).
    ``scales``: float32 (H,) per head, or one float for the tensor; None (int8 only) is dynamic: one scale per
    token and head, absmax / 127 of the rotated row, written to ``scales_out`` (float32 (N, L, H)). ``codes``
    has x's shape and layout. Returns ``(codes, scales_out)``."""
    fn = "apply_rope_quantized"
    x = _check_array(x, "x", fn, False)
    codes = _check_array(codes, "codes", fn, True)
    if scales_out is not None:
        scales_out = _check_array(scales_out, "scales_out", fn, True)
    _C.apply_rope_quantized(x, codes, scales_out, _freq(plan, fn), *_pos(positions, starts, fn), _int(offset, "offset", fn),
                            format, _scales(scales, "scales", fn), _layout(layout))
    return codes, scales_out


def rope_append_kv_quantized(
    k: Array,
    v: Array,
    k_cache: Array,
    v_cache: Array,
    plan: Union[RopePlan, RopeCache],
    *,
    seq_lens: Optional[Array] = None,
    slot_mapping: Optional[Array] = None,
    positions: Positions = None,
    starts: Positions = None,
    offset: int = 0,
    k_format: str = "int8",
    k_scales: Optional[Union[Array, float]] = None,
    v_format: str = "int8",
    v_scales: Optional[Union[Array, float]] = None,
    k_scales_out: Optional[Array] = None,
    v_scales_out: Optional[Array] = None,
    layout: Optional[str] = None,
) -> None:
    """:func:`posenc.rope_append_kv` into 8-bit caches (vLLM's fp8 KV cache with k_scale / v_scale, or int8 with
    dynamic scales per token and head written to ``k_scales_out`` / ``v_scales_out``, float32 [dim0, dim1, Hk]
    beside the caches). Slots and positions as :func:`posenc.rope_append_kv`; formats and scales as
    :func:`apply_rope_quantized`. Nothing is written if any argument is rejected."""
    fn = "rope_append_kv_quantized"
    k = _check_array(k, "k", fn, False)
    v = _check_array(v, "v", fn, False)
    k_cache = _check_array(k_cache, "k_cache", fn, True)
    v_cache = _check_array(v_cache, "v_cache", fn, True)
    ko = None if k_scales_out is None else _check_array(k_scales_out, "k_scales_out", fn, True)
    vo = None if v_scales_out is None else _check_array(v_scales_out, "v_scales_out", fn, True)
    slots, paged, starts = _cache_slots(seq_lens, slot_mapping, positions, starts, offset, fn)
    _C.rope_append_kv_quantized(
        k, v, k_cache, v_cache, _freq(plan, fn), *_pos(positions, starts, fn), _int(offset, "offset", fn), slots, paged,
        k_format, _scales(k_scales, "k_scales", fn), v_format, _scales(v_scales, "v_scales", fn), ko, vo, _layout(layout),
    )


def convert_rope_layout(
    x: Array,
    from_style: str,
    to_style: str,
    rotary_dim: Optional[int] = None,
    rotary_offset: int = 0,
    out: Optional[Array] = None,
    layout: Optional[str] = None,
) -> Array:
    """Moves the features of (N, L, H, D) tensors between pair layouts, out of place: in the window
    [rotary_offset, rotary_offset + rotary_dim) (default: all of D) interleaved feature 2i + j is half-split
    feature j R/2 + i; the rest is copied. RoPE commutes with it. Returns ``out`` (allocated like x)."""
    fn = "convert_rope_layout"
    x = _check_array(x, "x", fn, False)
    if out is None:
        out = x.new_empty(x.shape) if hasattr(x, "new_empty") else np.empty_like(x)
    out = _check_array(out, "out", fn, True)
    d = int(x.shape[-1])
    _C.convert_rope_layout(x, out, d - _int(rotary_offset, "rotary_offset", fn) if rotary_dim is None else
                           _int(rotary_dim, "rotary_dim", fn), _int(rotary_offset, "rotary_offset", fn), from_style,
                           to_style, _layout(layout))
    return out


def convert_rope_weight_layout(
    weight: Array,
    num_heads: int,
    head_dim: int,
    from_style: str,
    to_style: str,
    rotary_dim: Optional[int] = None,
    rotary_offset: int = 0,
    out: Optional[Array] = None,
) -> Array:
    """Permutes the rows of a q or k projection weight (num_heads * head_dim, in_features), or a bias
    (num_heads * head_dim,), between pair layouts, so the model computes the same attention with the other RoPE
    style: half_split -> interleaved is llama.cpp convert_hf_to_gguf's ``permute``, interleaved -> half_split
    HF's convert_llama_weights_to_hf ``permute``. Returns ``out`` (allocated like weight)."""
    fn = "convert_rope_weight_layout"
    weight = _check_array(weight, "weight", fn, False)
    if out is None:
        out = weight.new_empty(weight.shape) if hasattr(weight, "new_empty") else np.empty_like(weight)
    out = _check_array(out, "out", fn, True)
    hd = _int(head_dim, "head_dim", fn)
    off = _int(rotary_offset, "rotary_offset", fn)
    _C.convert_rope_weight_layout(weight, out, _int(num_heads, "num_heads", fn), hd,
                                  hd - off if rotary_dim is None else _int(rotary_dim, "rotary_dim", fn), off, from_style,
                                  to_style)
    return out
