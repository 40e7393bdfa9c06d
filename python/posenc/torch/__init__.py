"""posenc inside PyTorch models: autograd Functions over posenc's kernels, for CPU tensors.

Every function here is differentiable and runs the same kernels as the functions of :mod:`posenc` (nothing
is recomputed in torch); its backward is the transpose of its forward, formed by posenc as well:

* RoPE, MRoPE, xPos: y = s R(p) x per pair (R the rotation by p * w_i, s the plan's magnitude or xPos's scale),
  so dL/dx = s R(-p) dL/dy: posenc's ``inverse=True`` (the transpose, not the inverse, where s != 1).
* ALiBi and sinusoidal additions: y = x + b(p), so dL/dx = dL/dy (zero where a causal mask wrote -inf).
* T5 bias added to scores: y = scores + table[bucket(j - q_i), h]: dL/dscores = dL/dy and dL/dtable[b, h] =
  the sum of dL/dy over the (i, j) of bucket b (posenc's buckets, bit for bit T5's).

Positions are never differentiated (they are integers) and follow the keywords of :mod:`posenc`
(``offset``, ``positions``, ``starts``). The inputs are not modified: each forward writes a new tensor.
Tensors must be on the CPU (posenc's CUDA path is C++ only). Imported as ``posenc.torch``; it needs torch.
"""

from __future__ import annotations

from typing import Optional, Union

import torch

import posenc

from .. import _alibi, _mrope, _rope, _sinusoidal, _t5, _xpos
from .._plans import RopeCache, RopePlan, RopeTable
from .._mrope import MropePlan
from .._xpos import XposPlan

__all__ = [
    "rope",
    "mrope",
    "xpos",
    "add_alibi_bias",
    "add_sinusoidal",
    "add_t5_bias",
    "RopeFunction",
    "MropeFunction",
    "XposFunction",
    "AlibiAddFunction",
    "SinusoidalAddFunction",
    "T5BiasAddFunction",
    "T5RelativeBias",
    "LearnedPositionEmbedding",
]


def _cpu(t: torch.Tensor, name: str, fn: str) -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"posenc.torch.{fn}: {name} must be a torch.Tensor, got {type(t).__name__}")
    if t.device.type != "cpu":
        raise ValueError(f"posenc.torch.{fn}: {name} is on {t.device}; posenc.torch runs on CPU tensors")
    return t


def _grad_input(g: torch.Tensor) -> torch.Tensor:
    # Autograd may hand an expanded gradient (stride 0) or one in another memory order: posenc takes any
    # non-negative strides, but the result is allocated like its input, so give it a dense tensor. The backward
    # is not itself differentiable (no double backward): the gradient enters as data.
    g = g.detach()
    return g if g.is_contiguous() else g.contiguous()


# ---- rotations --------------------------------------------------------------------------------------------------


class RopeFunction(torch.autograd.Function):
    """y = posenc.apply_rope(x, plan, ...); dx = posenc.apply_rope(dy, plan, ..., inverse=True)."""

    @staticmethod
    def forward(ctx, x, plan, positions, starts, offset, layout):  # type: ignore[override]
        ctx.args = (plan, positions, starts, offset, layout)
        return _rope.apply_rope(x.detach(), plan, positions=positions, offset=offset, layout=layout, starts=starts)

    @staticmethod
    def backward(ctx, dy):  # type: ignore[override]
        plan, positions, starts, offset, layout = ctx.args
        dx = _rope.apply_rope(_grad_input(dy), plan, positions=positions, offset=offset, inverse=True, layout=layout,
                              starts=starts)
        return dx, None, None, None, None, None


def rope(
    x: torch.Tensor,
    plan: Union[RopePlan, RopeCache, RopeTable],
    positions: Optional[torch.Tensor] = None,
    offset: int = 0,
    layout: Optional[str] = None,
    *,
    starts: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Differentiable :func:`posenc.apply_rope` (any plan or cache: both pair styles, every scaling). Returns a
    new tensor; the gradient to ``x`` is the transposed rotation."""
    _cpu(x, "x", "rope")
    if not isinstance(plan, (RopePlan, RopeCache, RopeTable)):
        raise TypeError(f"posenc.torch.rope: plan must be a posenc.RopePlan, RopeCache or RopeTable, got {type(plan).__name__}")
    return RopeFunction.apply(x, plan, positions, starts, offset, layout)


class MropeFunction(torch.autograd.Function):
    """y = posenc.apply_mrope(x, plan, positions); dx = the same with inverse=True."""

    @staticmethod
    def forward(ctx, x, plan, positions, layout):  # type: ignore[override]
        ctx.args = (plan, positions, layout)
        return _mrope.apply_mrope(x.detach(), plan, positions, layout=layout)

    @staticmethod
    def backward(ctx, dy):  # type: ignore[override]
        plan, positions, layout = ctx.args
        return _mrope.apply_mrope(_grad_input(dy), plan, positions, inverse=True, layout=layout), None, None, None


def mrope(x: torch.Tensor, plan: MropePlan, positions: torch.Tensor, layout: Optional[str] = None) -> torch.Tensor:
    """Differentiable :func:`posenc.apply_mrope` (positions (3, L) or (N, 3, L), int64)."""
    _cpu(x, "x", "mrope")
    if not isinstance(plan, MropePlan):
        raise TypeError(f"posenc.torch.mrope: plan must be a posenc.MropePlan, got {type(plan).__name__}")
    return MropeFunction.apply(x, plan, positions, layout)


class XposFunction(torch.autograd.Function):
    """y = posenc.apply_xpos(x, plan, ...); dx = the same with inverse=True (rotation by -p w_i, same scale)."""

    @staticmethod
    def forward(ctx, x, plan, positions, starts, offset, center, downscale, layout):  # type: ignore[override]
        # The centre must be the forward's in the backward: resolve torchscale's default from this call's length.
        ctx.args = (plan, positions, starts, offset, center, downscale, layout)
        return _xpos.apply_xpos(x.detach(), plan, positions=positions, offset=offset, center=center, downscale=downscale,
                                layout=layout, starts=starts)

    @staticmethod
    def backward(ctx, dy):  # type: ignore[override]
        plan, positions, starts, offset, center, downscale, layout = ctx.args
        dx = _xpos.apply_xpos(_grad_input(dy), plan, positions=positions, offset=offset, center=center,
                              downscale=downscale, inverse=True, layout=layout, starts=starts)
        return dx, None, None, None, None, None, None, None


def xpos(
    x: torch.Tensor,
    plan: XposPlan,
    positions: Optional[torch.Tensor] = None,
    offset: int = 0,
    center: Optional[int] = None,
    downscale: bool = False,
    layout: Optional[str] = None,
    *,
    starts: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Differentiable :func:`posenc.apply_xpos` (queries: ``downscale=False``, keys: ``True``)."""
    _cpu(x, "x", "xpos")
    if not isinstance(plan, XposPlan):
        raise TypeError(f"posenc.torch.xpos: plan must be a posenc.XposPlan, got {type(plan).__name__}")
    return XposFunction.apply(x, plan, positions, starts, offset, center, bool(downscale), layout)


# ---- additions --------------------------------------------------------------------------------------------------


class AlibiAddFunction(torch.autograd.Function):
    """y = scores + ALiBi bias (posenc.add_alibi_bias on a copy); dscores = dy, zero where the mask wrote -inf."""

    @staticmethod
    def forward(ctx, scores, kwargs):  # type: ignore[override]
        ctx.kwargs = kwargs
        y = scores.detach().clone()
        return _alibi.add_alibi_bias(y, **kwargs)

    @staticmethod
    def backward(ctx, dy):  # type: ignore[override]
        ds = dy.detach().clone()
        if ctx.kwargs.get("causal", False):
            # The masked entries are the ones posenc's mask sets to -inf for these positions: ask it.
            mask = _alibi.add_alibi_bias(torch.zeros(dy.shape, dtype=torch.float32), **ctx.kwargs)
            ds.masked_fill_(torch.isneginf(mask), 0)
        return ds, None


def add_alibi_bias(
    scores: torch.Tensor,
    num_heads: Optional[int] = None,
    positions: Optional[torch.Tensor] = None,
    offset: int = 0,
    max_bias: float = 8.0,
    head_begin: int = 0,
    head_end: Optional[int] = None,
    form: str = "linear",
    causal: bool = False,
    slopes: Optional[torch.Tensor] = None,
    *,
    starts: Optional[torch.Tensor] = None,
    arithmetic: str = "exact",
) -> torch.Tensor:
    """Differentiable :func:`posenc.add_alibi_bias`, out of place: returns scores + bias (slopes are constants:
    no gradient to ``slopes``). ``arithmetic``: "exact" or "fp32" (float32 engines' rounding)."""
    _cpu(scores, "scores", "add_alibi_bias")
    if slopes is not None and slopes.requires_grad:
        raise ValueError("posenc.torch.add_alibi_bias: slopes are constants here (no gradient); detach them")
    kwargs = dict(num_heads=num_heads, positions=positions, offset=offset, max_bias=max_bias, head_begin=head_begin,
                  head_end=head_end, form=form, causal=bool(causal), slopes=slopes, starts=starts,
                  arithmetic=arithmetic)
    return AlibiAddFunction.apply(scores, kwargs)


class SinusoidalAddFunction(torch.autograd.Function):
    """y = x + T[p] (posenc.add_sinusoidal, the sum rounded once); dx = dy."""

    @staticmethod
    def forward(ctx, x, kwargs):  # type: ignore[override]
        return _sinusoidal.add_sinusoidal(x.detach(), **kwargs)

    @staticmethod
    def backward(ctx, dy):  # type: ignore[override]
        return dy.detach(), None


def add_sinusoidal(
    x: torch.Tensor,
    positions: Optional[torch.Tensor] = None,
    offset: int = 0,
    base: float = 10000.0,
    style: str = "interleaved",
    padding_idx: Optional[int] = None,
    *,
    starts: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Differentiable :func:`posenc.add_sinusoidal` ((N, L, D) or (L, D)); returns a new tensor."""
    _cpu(x, "x", "add_sinusoidal")
    kwargs = dict(positions=positions, offset=offset, base=base, style=style, padding_idx=padding_idx, starts=starts)
    return SinusoidalAddFunction.apply(x, kwargs)


class T5BiasAddFunction(torch.autograd.Function):
    """y[n, h, i, j] = scores[n, h, i, j] + table[bucket(j - (i + query_offset)), h], the buckets posenc's
    (T5's relative_position_bucket bit for bit); dscores = dy, dtable[b, h] = sum of dy over bucket b."""

    @staticmethod
    def forward(ctx, scores, table, buckets):  # type: ignore[override]
        ctx.save_for_backward(buckets)
        ctx.table_shape = (table.shape[0], table.dtype)
        bias = table.detach()[buckets].permute(2, 0, 1)  # (H, Lq, Lk)
        return scores.detach() + bias.to(scores.dtype)

    @staticmethod
    def backward(ctx, dy):  # type: ignore[override]
        (buckets,) = ctx.saved_tensors
        dy = dy.detach()
        heads = dy.shape[-3]
        g = dy.reshape(-1, heads, buckets.numel()).sum(0)  # (H, Lq * Lk): summed over the batch
        num_buckets, dtype = ctx.table_shape
        dtable = torch.zeros(num_buckets, heads, dtype=dtype)
        dtable.index_add_(0, buckets.reshape(-1), g.t().to(dtype))
        return dy, dtable, None


def add_t5_bias(
    scores: torch.Tensor,
    table: torch.Tensor,
    query_offset: int = 0,
    bidirectional: bool = True,
    max_distance: int = 128,
) -> torch.Tensor:
    """T5's relative attention bias added to ``scores`` (N, H, Lq, Lk) or (H, Lq, Lk), differentiable in both:
    ``table`` is the layer's (num_buckets, H) ``relative_attention_bias.weight`` (HF ``T5Attention``), query i at
    position query_offset + i (a KV cache of query_offset entries), key j at j."""
    fn = "add_t5_bias"
    _cpu(scores, "scores", fn)
    _cpu(table, "table", fn)
    if scores.dim() not in (3, 4):
        raise ValueError(f"posenc.torch.{fn}: scores must be (N, H, Lq, Lk) or (H, Lq, Lk), got {tuple(scores.shape)}")
    if table.dim() != 2 or table.shape[1] != scores.shape[-3]:
        raise ValueError(f"posenc.torch.{fn}: table must be (num_buckets, H={scores.shape[-3]}), got {tuple(table.shape)}")
    lq, lk = int(scores.shape[-2]), int(scores.shape[-1])
    buckets = torch.from_numpy(_t5.t5_bucket_table(lq, lk, query_offset=query_offset, bidirectional=bidirectional,
                                                   num_buckets=int(table.shape[0]), max_distance=max_distance))
    return T5BiasAddFunction.apply(scores, table, buckets)


# ---- modules with learned tables ----------------------------------------------------------------------------------
# Each module's Parameters share the memory of its posenc module's tables (torch.from_numpy of the writable
# views), so an optimiser's in-place update is what the kernels read. A Parameter replaced by another tensor
# (assignment, not copy_) is copied back into posenc's memory at the next forward.


def _share(param: torch.nn.Parameter, view) -> None:
    target = torch.from_numpy(view)
    if param.data_ptr() != target.data_ptr():
        with torch.no_grad():
            target.copy_(param)


class _T5AddFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, scores, weight, core, starts, offset):  # type: ignore[override]
        ctx.args = (core, starts, offset, scores.dim())
        y = scores.detach().clone()
        return posenc.add_t5_bias(y, core, offset=offset, starts=starts)

    @staticmethod
    def backward(ctx, dy):  # type: ignore[override]
        core, starts, offset, ndim = ctx.args
        dy = dy.detach()
        core.zero_grad()
        if ndim == 3:
            core.backward(dy.contiguous(), offset)
        elif starts is None:
            core.backward(dy.sum(0).contiguous(), offset)
        else:
            for n, s in enumerate(torch.as_tensor(starts).tolist()):
                core.backward(dy[n].contiguous(), int(s) + offset)
        return dy, torch.from_numpy(core.table_grad.copy()), None, None, None


class _T5BiasFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, weight, core, query_len, key_len, offset, dtype):  # type: ignore[override]
        ctx.args = (core, offset)
        out = torch.empty(weight.shape[1], query_len, key_len, dtype=dtype)
        return core.forward(query_len, key_len, query_offset=offset, out=out)

    @staticmethod
    def backward(ctx, dy):  # type: ignore[override]
        core, offset = ctx.args
        core.zero_grad()
        core.backward(dy.detach().contiguous(), offset)
        return torch.from_numpy(core.table_grad.copy()), None, None, None, None, None


class T5RelativeBias(torch.nn.Module):
    """T5's relative attention bias (HF ``T5Attention.relative_attention_bias`` + ``compute_bias``) over posenc:
    ``weight`` (num_buckets, H) is the Parameter (memory shared with posenc's table); ``forward(scores,
    offset=0, *, starts=None)`` returns scores + bias (queries at offset + i, or starts[n] + i), and
    ``compute_bias(query_length, key_length, query_offset)`` the (1, H, Lq, Lk) bias as HF's. Both differentiate
    into ``weight`` (each bucket's summed gradient, posenc's backward) and, for forward, into ``scores``."""

    def __init__(self, num_heads: int, bidirectional: bool = True, num_buckets: int = 32, max_distance: int = 128,
                 dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self._core = posenc.T5RelativeBias(num_heads, bidirectional, num_buckets, max_distance,
                                           str(dtype).replace("torch.", ""))
        self.weight = torch.nn.Parameter(torch.from_numpy(self._core.table))

    def forward(self, scores: torch.Tensor, offset: int = 0, *, starts: Optional[torch.Tensor] = None) -> torch.Tensor:
        _cpu(scores, "scores", "T5RelativeBias")
        _share(self.weight, self._core.table)
        return _T5AddFunction.apply(scores, self.weight, self._core, starts, int(offset))

    def compute_bias(self, query_length: int, key_length: int, query_offset: int = 0,
                     dtype: Optional[torch.dtype] = None) -> torch.Tensor:
        _share(self.weight, self._core.table)
        bias = _T5BiasFunction.apply(self.weight, self._core, int(query_length), int(key_length), int(query_offset),
                                     dtype or self.weight.dtype)
        return bias.unsqueeze(0)


class _LearnedFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, gamma, beta, core, positions, starts, offset, train, seed):  # type: ignore[override]
        cache = core.new_cache()
        out = core.forward(x.detach(), positions=positions, offset=offset, train=train, seed=seed, cache=cache,
                           starts=starts)
        ctx.args = (core, cache, gamma is not None)
        return out

    @staticmethod
    def backward(ctx, dy):  # type: ignore[override]
        core, cache, ln = ctx.args
        core.zero_grad()
        dx = core.backward(_grad_input(dy), cache)
        dw = torch.from_numpy(core.table_grad.copy())
        dg = torch.from_numpy(core.gamma_grad.copy()) if ln else None
        db = torch.from_numpy(core.beta_grad.copy()) if ln else None
        return dx, dw, dg, db, None, None, None, None, None, None


class LearnedPositionEmbedding(torch.nn.Module):
    """Learned absolute positions over posenc: y = dropout(LN(x + scale * E[p + position_offset])) for x
    (N, L, D) (GPT-2 ``wpe`` added to the token embeddings, BERT's embeddings with their LayerNorm, OPT with
    ``position_offset=2``). Parameters: ``weight`` (the table), and with ``layer_norm`` ``ln_weight``,
    ``ln_bias``; all share posenc's memory, all receive gradients (posenc's backward). Dropout in training mode
    only, its mask from a seed drawn from ``generator`` (torch's default when None)."""

    def __init__(self, max_positions: int, dim: int, position_offset: int = 0, scale: float = 1.0,
                 layer_norm: bool = False, eps: float = 1e-5, dropout: float = 0.0,
                 dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self._core = posenc.LearnedPositionEmbedding(max_positions, dim, position_offset, scale, layer_norm, eps,
                                                     dropout, str(dtype).replace("torch.", ""))
        self.dropout = float(dropout)
        self.weight = torch.nn.Parameter(torch.from_numpy(self._core.table))
        self.ln_weight = torch.nn.Parameter(torch.from_numpy(self._core.gamma)) if layer_norm else None
        self.ln_bias = torch.nn.Parameter(torch.from_numpy(self._core.beta)) if layer_norm else None

    def forward(self, x: torch.Tensor, positions: Optional[torch.Tensor] = None, offset: int = 0, *,
                starts: Optional[torch.Tensor] = None, generator: Optional[torch.Generator] = None) -> torch.Tensor:
        _cpu(x, "x", "LearnedPositionEmbedding")
        _share(self.weight, self._core.table)
        if self.ln_weight is not None:
            _share(self.ln_weight, self._core.gamma)
            _share(self.ln_bias, self._core.beta)
        train = self.training and self.dropout > 0
        seed = int(torch.randint(0, 2**62, (1,), generator=generator)) if train else 0
        return _LearnedFunction.apply(x, self.weight, self.ln_weight, self.ln_bias, self._core, positions, starts,
                                      int(offset), bool(self.training), seed)
