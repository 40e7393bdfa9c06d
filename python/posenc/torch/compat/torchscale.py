"""Drop-in for torchscale's xPos (``from torchscale.component.xpos_relative_position import XPOS``).

``XPOS(head_dim, scale_base=512).forward(x, offset=0, downscale=False)`` on x (B, L, D), as torchscale 0.3.0
(Sun et al. 2022, "A Length-Extrapolatable Transformer"): pairs (x[2i], x[2i+1]) turn by p * w_i,
w_i = 10000^(-2i/D), at positions offset .. offset + L - 1, and are scaled by zeta_i^((p - C)/scale_base)
(1/that with ``downscale``), zeta_i = (2i/D + 0.4)/1.4, C = ceil((L + offset)/2). Through posenc's xPos kernel,
differentiable; angles and scales in double (torchscale forms both in float32: off by up to ~p * 2^-24 rad).
"""

from __future__ import annotations

import torch

import posenc
import posenc.torch as _pt

__all__ = ["XPOS"]


class XPOS(torch.nn.Module):
    """torchscale's ``XPOS`` over posenc's kernels (see the module docstring)."""

    def __init__(self, head_dim: int, scale_base: float = 512) -> None:
        super().__init__()
        self.head_dim = int(head_dim)
        self.scale_base = scale_base
        self._plan = posenc.XposPlan(self.head_dim, scale_base=float(scale_base), gamma=0.4, base=10000.0,
                                     style="interleaved")

    def forward(self, x: torch.Tensor, offset: int = 0, downscale: bool = False) -> torch.Tensor:
        if x.dim() != 3:
            raise ValueError(f"XPOS.forward: x must be (B, L, head_dim), got {tuple(x.shape)}")
        # posenc's default centre is torchscale's ceil((L + offset)/2).
        return _pt.xpos(x, self._plan, offset=int(offset), downscale=bool(downscale), layout="NLD")
