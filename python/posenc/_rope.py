"""RoPE operations: apply_rope, apply_rope_qk, the fused KV-cache append, shift_rope, rerotate_rope."""

from __future__ import annotations

import importlib
import numbers
import os
from typing import Any, Dict, Optional, Sequence, Tuple, Union

import numpy as np

from ._common import _C
from ._common import Array, Positions, _check_array, _ids, _int, _layout, _out, _pos
from ._plans import RopeCache, RopePlan, _freq, _plan


# --------------------------------------------------------------------------------------------------------- RoPE


def apply_rope(
    x: Array,
    plan: Union[RopePlan, RopeCache],
    positions: Positions = None,
    offset: int = 0,
    inverse: bool = False,
    out: Optional[Array] = None,
    layout: Optional[str] = None,
    *,
    starts: Positions = None,
) -> Array:
    """Rotary position embedding: pair i of the rotated window of every head turns by p * w_i, scaled by the
    plan's magnitude m (see :class:`RopePlan` for the formula and pair styles).

    Args:
        x: (N, L, H, D) (or the ``layout`` named), float32/float64/float16/bfloat16; not modified unless
            ``out`` is ``x``.
        plan: a :class:`RopePlan` (angles formed in double per call, any position) or a :class:`RopeCache`.
        positions, offset: see the module docstring (default: positions offset..offset+L-1).
        inverse: the backward pass (the transpose): rotation by -p * w_i with the same magnitude; it inverts
            the forward rotation where m = 1.
        out: where to write (same shape; any float dtype, rounded once); None allocates one like ``x``;
            ``out=x`` works in place.
        layout: ``"NLHD"`` (default for 4-D), ``"NHLD"``, ``"LHD"``, ``"NLD"`` or ``"LD"`` (default for 2-D).

    Returns:
        ``out``.

    Raises:
        ValueError: posenc's message (head dim != plan.head_dim, negative or past-the-cache positions,
            positions not matching (N, L), out overlapping x, negative strides, ...); nothing is written.
        TypeError: an unsupported dtype.
    """
    fn = "apply_rope"
    x = _check_array(x, "x", fn, False)
    out = _out(x, out, fn)
    _C.apply_rope(x, out, _freq(plan, fn), *_pos(positions, starts, fn), _int(offset, "offset", fn), bool(inverse), _layout(layout))
    return out


def apply_rope_qk(
    q: Array,
    k: Array,
    plan: Union[RopePlan, RopeCache],
    positions: Positions = None,
    offset: int = 0,
    layout: Optional[str] = None,
    *,
    starts: Positions = None,
) -> Tuple[Array, Array]:
    """RoPE on queries and keys in one pass, in place: cos/sin are formed once per token for every head of
    both (``k`` may have fewer heads than ``q``: GQA). q and k are typically strided slices of one fused QKV
    array (``qkv[..., :Hq*D].reshape(N, L, Hq, D)`` views); they must share N, L, the head dim and the dtype,
    and no element. Returns ``(q, k)``."""
    fn = "apply_rope_qk"
    q = _check_array(q, "q", fn, True)
    k = _check_array(k, "k", fn, True)
    _C.apply_rope_qk(q, k, _freq(plan, fn), *_pos(positions, starts, fn), _int(offset, "offset", fn), _layout(layout))
    return q, k


def _cache_slots(seq_lens: Optional[Array], slot_mapping: Optional[Array], positions: Positions, starts: Positions,
                 offset: int, fn: str) -> Tuple[Any, bool, Positions]:
    """(slots, paged, starts) of a KV-cache append: exactly one of seq_lens (contiguous cache; the new tokens
    continue each sequence unless positions say otherwise) or slot_mapping (paged cache)."""
    if (seq_lens is None) == (slot_mapping is None):
        raise ValueError(f"posenc.{fn}: give exactly one of seq_lens (contiguous cache) or slot_mapping (paged cache)")
    paged = slot_mapping is not None
    slots = _ids(slot_mapping if paged else seq_lens, fn, "slot_mapping" if paged else "seq_lens", int64_only=True)
    if not paged and positions is None and starts is None and offset == 0:
        starts = slots
    return slots, paged, starts


def rope_append_kv(
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
    q: Optional[Array] = None,
    layout: Optional[str] = None,
) -> None:
    """RoPE fused with the KV-cache append (posenc::rope_append_kv): the new keys ``k`` are rotated straight into
    their cache slots and ``v`` is copied next to them, in one pass, rounded once to the caches' dtype (float32
    k into a float16 cache); with ``q``, q is also rotated in place (rope_qk_append_kv). Nothing is written if
    any argument is rejected.

    Where the N x L new tokens go, exactly one of:
      - ``seq_lens`` (int64, shape (N,)): a contiguous cache [B, max_len, Hk, D]; token (n, l) goes to row
        seq_lens[n] + l of batch row n. Positions default to the same (sequence n continues at seq_lens[n]).
      - ``slot_mapping`` (int64, shape (N, L) or (N*L,)): vLLM's paged cache [num_blocks, block_size, Hk, D];
        token (n, l) goes to slot s = slot_mapping[n, l], i.e. row s % block_size of block s // block_size;
        s = -1 skips the token (padding). Positions must be given (``positions`` or ``offset``).

    k and v share a dtype (q too), and so do the two caches. The caches are 4-D as above; ``layout`` names the
    layout of q, k and v (default (N, L, H, D))."""
    fn = "rope_qk_append_kv" if q is not None else "rope_append_kv"
    k = _check_array(k, "k", fn, False)
    v = _check_array(v, "v", fn, False)
    k_cache = _check_array(k_cache, "k_cache", fn, True)
    v_cache = _check_array(v_cache, "v_cache", fn, True)
    if q is not None:
        q = _check_array(q, "q", fn, True)
    slots, paged, starts = _cache_slots(seq_lens, slot_mapping, positions, starts, offset, fn)
    _C.rope_append_kv(
        q, k, v, k_cache, v_cache, _freq(plan, fn), *_pos(positions, starts, fn), _int(offset, "offset", fn), slots, paged,
        _layout(layout),
    )


def shift_rope(
    k: Array, plan: RopePlan, delta: Union[int, Array], layout: Optional[str] = None
) -> Array:
    """Context shift of cached keys (llama.cpp K-shift), in place: keys rotated at position p become keys at
    p + delta, one extra rotation by delta * w_i per pair (rotations compose); the magnitude is not applied
    again. ``delta``: an int for every token, or an int64 array (N, L), one per cached token; any sign.
    Returns ``k``."""
    fn = "shift_rope"
    k = _check_array(k, "k", fn, True)
    if isinstance(delta, numbers.Integral) and not isinstance(delta, bool):
        _C.shift_rope(k, _plan(plan, fn), int(delta), None, _layout(layout))
    else:
        _C.shift_rope(k, _plan(plan, fn), 0, _ids(delta, fn, "delta", int64_only=True), _layout(layout))
    return k


def rerotate_rope(
    k: Array,
    from_plan: RopePlan,
    to_plan: RopePlan,
    positions: Positions = None,
    offset: int = 0,
    layout: Optional[str] = None,
    *,
    starts: Positions = None,
) -> Array:
    """Re-rotates keys cached under ``from_plan`` into ``to_plan`` at the same positions, in place, in one
    pass: angle p (w_to - w_from), magnitude m_to / m_from (LongRoPE short -> long switch, dynamic NTK growth).
    The plans must share head_dim, rotary dim, offset and style. Returns ``k``."""
    fn = "rerotate_rope"
    k = _check_array(k, "k", fn, True)
    _C.rerotate_rope(
        k, _plan(from_plan, fn, "from_plan"), _plan(to_plan, fn, "to_plan"), *_pos(positions, starts, fn),
        _int(offset, "offset", fn), _layout(layout),
    )
    return k
