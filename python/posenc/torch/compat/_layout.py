"""What the drop-ins share: the posenc layout of a tensor whose sequence axis is ``seq_dim``."""

from __future__ import annotations

import torch


def layout_of(t: torch.Tensor, seq_dim: int, fn: str) -> str:
    """posenc's layout name for t (..., L, D) with its sequence at seq_dim (-2: L just before the features,
    -3: L before the heads)."""
    nd = t.dim()
    seq = seq_dim + nd if seq_dim < 0 else seq_dim
    if nd == 4 and seq == 2:
        return "NHLD"
    if nd == 4 and seq == 1:
        return "NLHD"
    if nd == 3 and seq == 1:
        return "NLD"
    if nd == 3 and seq == 0:
        return "LHD"
    if nd == 2 and seq == 0:
        return "LD"
    raise ValueError(
        f"posenc.torch.compat: {fn}: a tensor of shape {tuple(t.shape)} with its sequence at dim {seq_dim} is not "
        "one of (N, H, L, D) with seq_dim -2, (N, L, H, D) with -3, (N, L, D) with -2, (L, H, D) with -3, (L, D)"
    )
