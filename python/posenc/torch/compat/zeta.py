"""Drop-in for zeta's rotary embedding (``from zeta.nn.embeddings.rope import RotaryEmbedding,
apply_rotary_pos_emb``), as zetascale 2.8.8:

``RotaryEmbedding(dim, use_xpos=False, scale_base=512, interpolation_factor=1., base=10000,
base_rescale_factor=1.).forward(seq_len, device)`` returns ``(freqs, scale)``: freqs (L, dim) the angles
p / interpolation_factor * w_i (w_i = base'^(-2i/dim), base' = base * base_rescale_factor^(dim/(dim - 2))),
repeated over both halves; scale (L, dim) the xPos factor zeta_i^((p - L//2)/scale_base), zeta_i =
(2i/dim + 0.4)/1.4, repeated likewise (1.0 without xPos). ``apply_rotary_pos_emb(t, freqs, scale)`` rotates t
(..., L', dim) by the last L' rows: t * cos(freqs) * scale + rotate_half(t) * sin(freqs) * scale, the
half-split pairs (t[i], t[i + dim/2]). Keys take ``scale ** -1``.

Differences from the original, each deliberate:

* zeta's ``rotate_half`` splits the last dimension into (2, dim/2) and unbinds the wrong axis: it raises for
  every dim but 4 and pairs the wrong features at 4. This one is the half-split rotate_half the formula
  (and Hugging Face's Llama) uses.
* ``freqs`` and ``scale`` are formed in double and rounded once to float32 (zeta forms them in float32).
* ``apply_rotary_pos_emb`` runs posenc's kernels (differentiable) when ``freqs`` is the tensor this module's
  forward returned (it carries its plan) and ``scale`` is 1, that forward's scale or its reciprocal; any other
  angles go through the formula in torch (double cos/sin, then t's dtype).
* xPos with ``interpolation_factor`` != 1 is not implemented (NotImplementedError).
"""

from __future__ import annotations

from typing import Tuple, Union

import torch

import posenc
import posenc.torch as _pt

__all__ = ["RotaryEmbedding", "apply_rotary_pos_emb", "rotate_half"]


class RotaryEmbedding(torch.nn.Module):
    """zeta's ``RotaryEmbedding`` (see the module docstring)."""

    def __init__(self, dim: int, use_xpos: bool = False, scale_base: float = 512, interpolation_factor: float = 1.0,
                 base: float = 10000, base_rescale_factor: float = 1.0) -> None:
        super().__init__()
        if interpolation_factor < 1:
            raise ValueError(f"RotaryEmbedding: interpolation_factor={interpolation_factor} must be >= 1 (as zeta)")
        if use_xpos and interpolation_factor != 1:
            raise NotImplementedError("posenc.torch.compat.zeta.RotaryEmbedding: use_xpos with interpolation_factor != 1")
        dim = int(dim)
        self.dim = dim
        self.base = float(base) * float(base_rescale_factor) ** (dim / (dim - 2))
        self.interpolation_factor = float(interpolation_factor)
        self.use_xpos = bool(use_xpos)
        self.scale_base = float(scale_base)
        scaling = None if interpolation_factor == 1 else {"rope_type": "linear", "factor": float(interpolation_factor)}
        self._plan = posenc.RopePlan(dim, base=self.base, style="half_split", scaling=scaling)
        self._xpos = posenc.XposPlan(dim, scale_base=self.scale_base, gamma=0.4, base=self.base, style="half_split")
        # zeta registers inv_freq (and scale) as buffers; kept for code that reads them.
        self.register_buffer("inv_freq", torch.tensor(self._plan.inv_freq, dtype=torch.float64).float())
        zeta = ((torch.arange(0, dim, 2, dtype=torch.float64) / dim + 0.4) / 1.4).float()
        self.register_buffer("scale", zeta if use_xpos else None)

    def forward(self, seq_len: int, device=None) -> Tuple[torch.Tensor, Union[torch.Tensor, float]]:
        seq_len = int(seq_len)
        p = torch.arange(seq_len, dtype=torch.float64)
        w = torch.tensor(self._plan.inv_freq, dtype=torch.float64)  # already divided by interpolation_factor
        f = p[:, None] * w[None, :]
        freqs = torch.cat((f, f), dim=-1).float()
        scale: Union[torch.Tensor, float] = 1.0
        if self.use_xpos:
            log_zeta = torch.tensor(self._xpos.log_zeta, dtype=torch.float64)
            s = torch.exp(log_zeta[None, :] * ((p - seq_len // 2) / self.scale_base)[:, None])
            scale = torch.cat((s, s), dim=-1).float()
        if device is not None:
            freqs = freqs.to(device)
            scale = scale.to(device) if isinstance(scale, torch.Tensor) else scale
        freqs._posenc = (self, seq_len, scale)  # what apply_rotary_pos_emb needs to run posenc's kernels
        return freqs, scale


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(-x2, x1) for the halves (x1, x2) of the last dimension (the half-split pairing; see the module docstring
    for zeta's)."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and bool(torch.equal(a, b))


def apply_rotary_pos_emb(t: torch.Tensor, freqs: torch.Tensor, scale: Union[torch.Tensor, float] = 1) -> torch.Tensor:
    """t (..., L', dim) rotated by the last L' rows of freqs, times scale (see the module docstring)."""
    seq_len = int(t.shape[-2])
    info = getattr(freqs, "_posenc", None)
    if info is not None and t.dim() in (2, 3, 4) and seq_len <= info[1] and t.shape[-1] == info[0].dim:
        module, length, up = info
        layout = {2: "LD", 3: "NLD", 4: "NHLD"}[t.dim()]
        offset = length - seq_len
        if not module.use_xpos and not isinstance(scale, torch.Tensor) and scale == 1:
            return _pt.rope(t, module._plan, offset=offset, layout=layout)
        if module.use_xpos and isinstance(scale, torch.Tensor) and seq_len == length:
            for downscale, want in ((False, up), (True, up ** -1)):
                if _same(scale, want):
                    return _pt.xpos(t, module._xpos, offset=0, center=length // 2, downscale=downscale, layout=layout)
    # Any other angles: the formula in torch, cos/sin in double.
    f = freqs[-seq_len:, :].double()
    cos, sin = f.cos(), f.sin()
    out = (t.double() * cos + rotate_half(t.double()) * sin) * (scale.double() if isinstance(scale, torch.Tensor) else scale)
    return out.to(t.dtype)
