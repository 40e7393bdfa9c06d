"""Multimodal RoPE (Qwen2-VL, Qwen3-VL): MropePlan and apply_mrope."""

from __future__ import annotations

import importlib
import numbers
import os
from typing import Any, Dict, Optional, Sequence, Tuple, Union

import numpy as np

from ._common import _C
from ._common import Array, _check_array, _copy_into, _ids, _layout, _out
from ._plans import RopePlan


class MropePlan:
    """Multimodal RoPE (Qwen2-VL, Qwen3-VL): a :class:`RopePlan` whose pair i turns by p[axis(i)] * w_i, the
    axis (t, h, w) given by ``sections`` (T, H, W), T + H + W = R/2. ``layout="chunked"`` (Qwen2-VL): pairs
    [0, T) take t, [T, T+H) h, the rest w. ``"interleaved"`` (Qwen3-VL): h if i % 3 == 1 and i < 3H, w if
    i % 3 == 2 and i < 3W, else t."""

    __slots__ = ("_m", "_info")

    def __init__(self, plan: RopePlan, sections: Sequence[int], layout: str = "chunked") -> None:
        t, h, w = (int(s) for s in sections)
        self._m = _C.MropePlanCore(plan._p, (t, h, w), layout)

    sections = property(lambda self: tuple(self._m.sections), doc="(T, H, W) pairs per axis.")
    layout = property(lambda self: self._m.layout, doc="'chunked' or 'interleaved'.")
    plan = property(lambda self: RopePlan._wrap(self._m.plan), doc="The frequency plan.")
    axis = property(lambda self: self._m.axis, doc="The axis (0 t, 1 h, 2 w) of every pair (read-only view).")

    @classmethod
    def from_hf_vision(
        cls, config: Union[str, "os.PathLike[str]", Dict[str, Any]], *, style: Optional[str] = None
    ) -> "MropePlan":
        """The 2D RoPE of a vision-language model's vision tower from its ``config.json`` (a path or the parsed
        dict; posenc::vision_plan_from_hf): Qwen2-VL / Qwen2.5-VL (each axis its own RoPE of dim D/2) or Pixtral /
        Mistral Small 3 (rows the even, columns the odd frequencies of one RoPE of dim D); sections (0, D/4, D/4),
        positions (0, patch row, patch column) per token (:func:`vision_positions`). ``style``: ``"half_split"``
        (Hugging Face weights, the default) or ``"interleaved"`` (Mistral's own format). The tower's facts
        (``head_dim``, ``base``, ``layout``, ``patch_size``, ``spatial_merge_size``, ``max_patches_per_side``,
        ``layers``: ``{"windowed", "window"}`` per block, Qwen2.5-VL's window attention) are in :attr:`info`."""
        from ._plans import _load_json

        core, info = _C.vision_from_hf(_load_json(config, "vision_plan_from_hf_file"), style)
        m = cls.__new__(cls)
        m._m = core
        m._info = info
        return m

    info = property(lambda self: getattr(self, "_info", None), doc="The vision tower's facts (from_hf_vision), else None.")

    def __repr__(self) -> str:
        return f"MropePlan({self.plan!r}, sections={self.sections}, layout={self.layout!r})"


def vision_positions(frames: int, grid_h: int, grid_w: int, merge: int = 1) -> np.ndarray:
    """The (3, L) int64 positions of ``frames`` frames of a grid_h x grid_w patch grid, L = frames * grid_h *
    grid_w, in a vision tower's token order (posenc::vision_positions): t = 0, h = patch row, w = patch column;
    ``merge=1`` row-major (Pixtral), ``merge=m`` in m x m blocks (Qwen2-VL / Qwen2.5-VL rot_pos_emb)."""
    ids = _C.vision_positions(int(frames), int(grid_h), int(grid_w), int(merge))
    return np.asarray(ids, dtype=np.int64).reshape(3, -1)


def apply_mrope(
    x: Array,
    plan: MropePlan,
    positions: Array,
    inverse: bool = False,
    out: Optional[Array] = None,
    layout: Optional[str] = None,
) -> Array:
    """Multimodal RoPE (HF Qwen2-VL ``apply_multimodal_rotary_pos_emb``, Qwen3-VL interleaved): pair i turns by
    p[axis(i)] * w_i. ``positions``: int64 (3, L) shared by the batch, or (N, 3, L): (t, h, w) per token (text
    tokens carry one value on all three). ``inverse``: the transpose. ``out`` as :func:`apply_rope` (the
    inverse is computed in place on ``out`` after copying ``x`` there). Returns ``out``."""
    fn = "apply_mrope"
    if not isinstance(plan, MropePlan):
        raise TypeError(f"posenc.{fn}: plan must be a posenc.MropePlan, got {type(plan).__name__}")
    x = _check_array(x, "x", fn, False)
    out = _out(x, out, fn)
    ids = _ids(positions, fn, int64_only=True)
    if inverse and out is not x:
        _copy_into(out, x, fn)
        x = out
    _C.apply_mrope(x, out, plan._m, ids, bool(inverse), _layout(layout))
    return out
