"""posenc: transformer positional encodings on NumPy arrays and PyTorch tensors, zero-copy.

Python bindings of the C++ library posenc (RoPE with every context-extension scaling, MRoPE, xPos, ALiBi,
sinusoidal tables, T5 relative buckets), running posenc's SIMD kernels (chosen at run time from the CPU:
``posenc.isa()``) directly on the caller's memory.

Arrays
    Any CPU array NumPy or a DLPack producer (PyTorch, JAX, ...) gives: float32, float64, float16, or bfloat16
    (through DLPack, e.g. ``torch.bfloat16``), with any non-negative strides. An array is never copied: posenc
    sees it as a strided view of the same memory with the array's own element strides, so slices of a fused
    QKV buffer, transposed views and padded rows work in place. Negative strides are rejected (ValueError).
    The GIL is released while a kernel runs.

Tensor layout
    RoPE-family tensors are (N, L, H, D) (batch, sequence, heads, head dim) by default. ``layout="NHLD"``
    (PyTorch's transposed attention layout), ``"LHD"``, ``"NLD"`` (one head) or ``"LD"`` only permute the
    view's strides. A 2-D array is (L, D) by default; a 3-D array needs its layout named.

Outputs
    * Functions with an ``out`` argument (``apply_rope``, ``apply_xpos``, ``apply_mrope``, ``add_sinusoidal``
      and the table builders) return ``out``: a new array like the input when ``out`` is None, otherwise the
      array given, written in place. ``out=x`` rotates ``x`` itself. ``out`` may be another array of another
      float dtype (e.g. float32 q rotated straight into a float16 KV cache): one rounding.
    * Functions without ``out`` (``apply_rope_qk``, ``apply_xpos_qk``, ``shift_rope``, ``rerotate_rope``,
      ``add_alibi_bias``) work in place and return the array(s) they were given.

Positions
    Each meaning has its own keyword; none is guessed from an array's shape.

    * ``offset=P`` (no arrays): tokens 0..L-1 of every sequence sit at P..P+L-1 (a KV cache of P entries).
    * ``positions=``: one id per token, int64 or int32, Hugging Face ``position_ids``: shape (N, L), or (L,) /
      (1, L) for the same ids in every sequence (broadcast over the batch, as HF does).
    * ``starts=``: one start per sequence, shape (N,): sequence n sits at starts[n]..starts[n]+L-1 (continuous
      batching).

    Any other shape is a ValueError naming the expected ones; ``positions`` and ``starts`` together, or either
    with a non-zero ``offset``, too.

Errors
    posenc validates every argument before writing anything: a bad shape, stride, position or configuration
    raises ValueError with posenc's message (``posenc::apply_rope: x head dim (extent 3)=96 does not match the
    plan's head_dim=128``) and leaves every array unchanged. An unsupported dtype raises TypeError.
"""

from __future__ import annotations

# The package is split by encoding (_plans, _rope, _mrope, _xpos, _alibi, _sinusoidal, _t5; _modules: the
# modules with learned tables; _common holds what they share); this file only re-exports the public names.
# posenc.torch (autograd, drop-in modules) is imported on its own: it needs torch.
from ._common import isa, set_isa, reset_isa, cpu_supports, Array, Positions, DType
from ._plans import RopePlan, RopeCache, RopeTable, model_layers, gguf_model_layers
from ._rope import apply_rope, apply_rope_qk, rope_append_kv, shift_rope, rerotate_rope
from ._mrope import MropePlan, apply_mrope, vision_positions
from ._xpos import XposPlan, apply_xpos, apply_xpos_qk, xpos_default_center
from ._alibi import alibi_slopes, alibi_bias, add_alibi_bias
from ._sinusoidal import sinusoidal_table, add_sinusoidal, make_padded_positions
from ._t5 import t5_relative_bucket, t5_bucket_table
from ._modules import T5RelativeBias, LearnedPositionEmbedding, add_t5_bias
from ._quant import apply_rope_quantized, rope_append_kv_quantized, convert_rope_layout, convert_rope_weight_layout

__version__ = "0.2.0"

__all__ = [
    "__version__",
    "isa",
    "set_isa",
    "reset_isa",
    "cpu_supports",
    "RopePlan",
    "RopeCache",
    "RopeTable",
    "model_layers",
    "gguf_model_layers",
    "XposPlan",
    "MropePlan",
    "apply_rope",
    "apply_rope_qk",
    "rope_append_kv",
    "shift_rope",
    "rerotate_rope",
    "apply_mrope",
    "vision_positions",
    "apply_xpos",
    "apply_xpos_qk",
    "xpos_default_center",
    "alibi_slopes",
    "alibi_bias",
    "add_alibi_bias",
    "sinusoidal_table",
    "add_sinusoidal",
    "make_padded_positions",
    "t5_relative_bucket",
    "t5_bucket_table",
    "T5RelativeBias",
    "add_t5_bias",
    "LearnedPositionEmbedding",
    "apply_rope_quantized",
    "rope_append_kv_quantized",
    "convert_rope_layout",
    "convert_rope_weight_layout",
]
