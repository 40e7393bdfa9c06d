"""Drop-in for lucidrains' ``rotary-embedding-torch`` (``from rotary_embedding_torch import RotaryEmbedding``).

``RotaryEmbedding(dim, theta=10000, interpolate_factor=1., theta_rescale_factor=1., use_xpos=False,
xpos_scale_base=512, seq_before_head_dim=False, freqs_for="lang")`` with ``rotate_queries_or_keys``,
``rotate_queries_and_keys`` and ``rotate_queries_with_cached_keys``, as the original (version 0.9.1):

* pairs (x[2i], x[2i+1]) of the first ``dim`` features turn by p * w_i, w_i = theta'^(-2i/dim) with
  theta' = theta * theta_rescale_factor^(dim / (dim - 2)) (NTK-aware rescaling), positions divided by
  ``interpolate_factor`` (linear position interpolation); features past ``dim`` pass through;
* xPos (``use_xpos``): queries scaled by zeta_i^((p - C)/xpos_scale_base), keys by its reciprocal,
  zeta_i = (2i/dim + 0.4)/1.4, C = L // 2 of the rotated sequence.

Differences from the original, each deliberate:

* angles in double (posenc's kernels): the original forms p * w_i in float32, off by up to ~p * 2^-24 rad;
* ``rotate_queries_with_cached_keys`` with xPos centres the scales of q and k at one C (the keys' k_len // 2,
  as ``rotate_queries_and_keys`` does for the whole sequence) and scales q at the positions it rotates it at;
  the original centres q's scales at q_len // 2 and k's at k_len // 2, so q.k is not a function of the distance
  when q_len < k_len;
* not implemented (a NotImplementedError names them): ``custom_freqs``, ``freqs_for`` other than "lang",
  ``learned_freq``, xPos with ``interpolate_factor`` != 1, a tensor ``scale`` passed to
  ``rotate_queries_or_keys``.
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

import torch

import posenc
import posenc.torch as _pt

from ._layout import layout_of

__all__ = ["RotaryEmbedding"]


class RotaryEmbedding(torch.nn.Module):
    """rotary-embedding-torch's ``RotaryEmbedding`` over posenc's kernels (see the module docstring)."""

    def __init__(
        self,
        dim: int,
        custom_freqs: Optional[torch.Tensor] = None,
        freqs_for: str = "lang",
        theta: float = 10000,
        max_freq: float = 10,
        num_freqs: int = 1,
        learned_freq: bool = False,
        use_xpos: bool = False,
        xpos_scale_base: float = 512,
        interpolate_factor: float = 1.0,
        theta_rescale_factor: float = 1.0,
        seq_before_head_dim: bool = False,
        cache_if_possible: bool = True,
        cache_max_seq_len: int = 8192,
    ) -> None:
        super().__init__()
        unsupported = []
        if custom_freqs is not None:
            unsupported.append("custom_freqs")
        if freqs_for != "lang":
            unsupported.append(f"freqs_for={freqs_for!r}")
        if learned_freq:
            unsupported.append("learned_freq=True")
        if use_xpos and interpolate_factor != 1.0:
            unsupported.append("use_xpos with interpolate_factor != 1")
        if unsupported:
            raise NotImplementedError(
                "posenc.torch.compat.rotary_embedding_torch.RotaryEmbedding: not implemented: " + ", ".join(unsupported)
            )
        if interpolate_factor < 1.0:
            raise ValueError(f"RotaryEmbedding: interpolate_factor={interpolate_factor} must be >= 1 (as the original)")
        dim = int(dim)
        self.dim = dim
        self.freqs_for = freqs_for
        # The original's NTK-aware rescaling of theta (bloc97), in double here.
        self.theta = float(theta) * float(theta_rescale_factor) ** (dim / (dim - 2))
        self.interpolate_factor = float(interpolate_factor)
        self.use_xpos = bool(use_xpos)
        self.scale_base = float(xpos_scale_base)
        self.seq_before_head_dim = bool(seq_before_head_dim)
        self.default_seq_dim = -3 if seq_before_head_dim else -2
        self._plans: Dict[int, posenc.RopePlan] = {}
        self._xpos: Optional[posenc.XposPlan] = (
            posenc.XposPlan(dim, scale_base=self.scale_base, gamma=0.4, base=self.theta, style="interleaved")
            if use_xpos else None
        )

    def _plan(self, head_dim: int) -> posenc.RopePlan:
        plan = self._plans.get(head_dim)
        if plan is None:
            if self.dim > head_dim:
                raise ValueError(
                    f"RotaryEmbedding: feature dimension {head_dim} is not of sufficient size to rotate in all the "
                    f"positions {self.dim}"
                )
            scaling = None
            if self.interpolate_factor != 1.0:
                scaling = {"rope_type": "linear", "factor": self.interpolate_factor}
            plan = posenc.RopePlan(head_dim, base=self.theta, style="interleaved", rotary_dim=self.dim, scaling=scaling)
            self._plans[head_dim] = plan
        return plan

    def _xpos_part(self, t: torch.Tensor, layout: str, offset: int, center: int, downscale: bool) -> torch.Tensor:
        # xPos turns every feature of its plan: the first `dim` features here, the rest pass through.
        head = t[..., : self.dim]
        out = _pt.xpos(head, self._xpos, offset=offset, center=center, downscale=downscale, layout=layout)
        return out if self.dim == t.shape[-1] else torch.cat((out, t[..., self.dim:]), dim=-1)

    def rotate_queries_or_keys(self, t: torch.Tensor, seq_dim: Optional[int] = None, offset: int = 0,
                               scale: Optional[float] = None) -> torch.Tensor:
        """t (..., L, D) rotated at positions offset .. offset + L - 1 (divided by interpolate_factor)."""
        seq_dim = self.default_seq_dim if seq_dim is None else seq_dim
        if self.use_xpos and scale is None:
            raise ValueError("RotaryEmbedding: you must use `.rotate_queries_and_keys` method instead and pass in both "
                             "queries and keys, for length extrapolatable rotary embeddings")
        if isinstance(scale, torch.Tensor):
            raise NotImplementedError("RotaryEmbedding.rotate_queries_or_keys: a tensor scale is not implemented "
                                      "(xPos: use rotate_queries_and_keys or rotate_queries_with_cached_keys)")
        layout = layout_of(t, seq_dim, "rotate_queries_or_keys")
        out = _pt.rope(t, self._plan(int(t.shape[-1])), offset=int(offset), layout=layout)
        return out if scale is None or scale == 1.0 else out * scale

    def rotate_queries_and_keys(self, q: torch.Tensor, k: torch.Tensor,
                                seq_dim: Optional[int] = None) -> Tuple[torch.Tensor, torch.Tensor]:
        """xPos over a whole sequence: q upscaled, k downscaled, both at positions 0 .. L - 1, C = L // 2."""
        if not self.use_xpos:
            raise ValueError("RotaryEmbedding.rotate_queries_and_keys: needs use_xpos=True (as the original)")
        seq_dim = self.default_seq_dim if seq_dim is None else seq_dim
        length = int(q.shape[seq_dim])
        lq, lk = layout_of(q, seq_dim, "rotate_queries_and_keys"), layout_of(k, seq_dim, "rotate_queries_and_keys")
        return (self._xpos_part(q, lq, 0, length // 2, False), self._xpos_part(k, lk, 0, length // 2, True))

    def rotate_queries_with_cached_keys(self, q: torch.Tensor, k: torch.Tensor, seq_dim: Optional[int] = None,
                                        offset: int = 0) -> Tuple[torch.Tensor, torch.Tensor]:
        """q at positions k_len - q_len + offset .., k at 0 .. k_len - 1 (q_len <= k_len). With xPos both scales
        are centred at k_len // 2 (the original centres q's at q_len // 2: see the module docstring)."""
        seq_dim = self.default_seq_dim if seq_dim is None else seq_dim
        q_len, k_len = int(q.shape[seq_dim]), int(k.shape[seq_dim])
        if q_len > k_len:
            raise ValueError(f"RotaryEmbedding.rotate_queries_with_cached_keys: q_len={q_len} > k_len={k_len}")
        q_off = k_len - q_len + int(offset)
        if not self.use_xpos:
            return (self.rotate_queries_or_keys(q, seq_dim, offset=q_off),
                    self.rotate_queries_or_keys(k, seq_dim, offset=0))
        lq, lk = layout_of(q, seq_dim, "rotate_queries_with_cached_keys"), layout_of(k, seq_dim, "rotate_queries_with_cached_keys")
        center = k_len // 2
        return (self._xpos_part(q, lq, q_off, center, False), self._xpos_part(k, lk, 0, center, True))
