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

import importlib
import numbers
import os
from typing import Any, Dict, Optional, Sequence, Tuple, Union

import numpy as np

from . import _hf

try:
    from . import _posenc as _C
except ImportError as e:  # pragma: no cover - only when the extension was not built
    raise ImportError(
        "posenc: the compiled extension posenc._posenc is missing; install the package (pip install ./python) "
        "rather than importing it from the source folder"
    ) from e

__version__ = "0.2.0"

__all__ = [
    "__version__",
    "isa",
    "set_isa",
    "reset_isa",
    "cpu_supports",
    "RopePlan",
    "RopeCache",
    "XposPlan",
    "MropePlan",
    "apply_rope",
    "apply_rope_qk",
    "rope_append_kv",
    "shift_rope",
    "rerotate_rope",
    "apply_mrope",
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
]

#: Anything posenc accepts as a tensor: a NumPy array, a PyTorch tensor on the CPU, or another DLPack producer.
Array = Any
#: Positions: None (use ``offset``), or int64/int32 of shape (N,) or (N, L).
Positions = Optional[Any]
#: A dtype for arrays posenc allocates: a NumPy dtype (or its name), or a ``torch.dtype``.
DType = Any


# ---------------------------------------------------------------------------------------------------------- ISA


def isa() -> str:
    """The instruction set posenc's kernels use now: ``"scalar"``, ``"avx2"``, ``"avx512"`` or ``"neon"``.

    The widest the CPU and OS support, chosen once from CPUID (posenc::active_isa()), unless capped by the
    environment variable ``POSENC_ISA`` (read at the first call) or by :func:`set_isa`.
    """
    return _C.isa()


def set_isa(name: str) -> str:
    """Caps the kernels at ISA ``name`` for every later call (tests, benchmarks, bug reports) and returns the
    ISA now active: the widest the CPU supports at or below ``name`` (an unsupported request falls back)."""
    return _C.set_isa(name)


def reset_isa() -> str:
    """Undoes :func:`set_isa`: ``POSENC_ISA`` if set, else the widest supported ISA. Returns it."""
    return _C.reset_isa()


def cpu_supports(name: str) -> bool:
    """Whether this CPU and OS can run posenc's kernels for ISA ``name`` (``"avx512"`` needs F/BW/VL/DQ)."""
    return _C.cpu_supports(name)


# ------------------------------------------------------------------------------------------------------ helpers


def _is_torch(x: Any) -> bool:
    return type(x).__module__.split(".", 1)[0] == "torch"


def _check_array(x: Any, name: str, fn: str, writable: bool) -> Any:
    """The array as the extension takes it, with clear errors for what DLPack/buffer import would refuse."""
    if isinstance(x, np.ndarray):
        if writable and not x.flags.writeable:
            raise ValueError(f"posenc.{fn}: {name} is a read-only array; posenc writes it in place")
        if not x.dtype.isnative or x.dtype.kind in "OSUVM":
            raise TypeError(
                f"posenc.{fn}: {name} has dtype {x.dtype.str}; posenc takes float32, float64, float16 or bfloat16 "
                "in native byte order"
            )
        return x
    if _is_torch(x):
        if getattr(x, "requires_grad", False):
            raise ValueError(
                f"posenc.{fn}: {name} requires grad; posenc records no autograd graph: pass {name}.detach()"
            )
        return x
    if hasattr(x, "__dlpack__") or hasattr(x, "__array_interface__"):
        return x
    if writable:
        raise TypeError(f"posenc.{fn}: {name} must be an array (NumPy, PyTorch or DLPack), got {type(x).__name__}")
    return np.asarray(x)


def _empty_like(x: Any, fn: str, dtype: DType = None) -> Any:
    """A new C-contiguous array of x's shape (and dtype, unless given), of x's kind (NumPy or PyTorch; NumPy for
    other DLPack producers whose dtype NumPy has)."""
    if _is_torch(x):
        torch = importlib.import_module("torch")

        return torch.empty(tuple(x.shape), dtype=x.dtype if dtype is None else dtype, device=x.device)
    if isinstance(x, np.ndarray):
        return np.empty(x.shape, dtype=x.dtype if dtype is None else dtype)
    try:
        a = np.from_dlpack(x) if hasattr(x, "__dlpack__") else np.asarray(x)
    except Exception as e:  # e.g. bfloat16, which NumPy has not
        raise TypeError(
            f"posenc.{fn}: cannot allocate an output like this {type(x).__name__} (NumPy cannot hold its dtype): "
            "pass out="
        ) from e
    return np.empty(a.shape, dtype=a.dtype if dtype is None else dtype)


def _copy_into(out: Any, x: Any, fn: str) -> None:
    """out[...] = x (the in-place inverse of xPos and MRoPE works on a copy of x in out)."""
    if _is_torch(out):
        torch = importlib.import_module("torch")

        out.copy_(x if _is_torch(x) else torch.from_numpy(np.asarray(x)))
    elif isinstance(out, np.ndarray):
        np.copyto(out, x.numpy() if _is_torch(x) else np.asarray(x), casting="unsafe")
    else:
        raise TypeError(f"posenc.{fn}: inverse=True needs out=x, or an out that is a NumPy array or PyTorch tensor")


def _alloc(shape: Tuple[int, ...], dtype: DType, fn: str) -> Any:
    """A new array for a table posenc writes: NumPy, or PyTorch when dtype is a torch.dtype."""
    if type(dtype).__module__.split(".", 1)[0] == "torch":
        torch = importlib.import_module("torch")

        return torch.empty(shape, dtype=dtype)
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(
            f"posenc.{fn}: dtype {dtype!r} is not a NumPy dtype (for bfloat16 pass dtype=torch.bfloat16, or out=)"
        ) from e
    return np.empty(shape, dtype=dt)


def _ids(positions: Positions, fn: str, name: str = "positions", int64_only: bool = False) -> Any:
    """Positions as the extension takes them: C-contiguous int64/int32 (a small copy only if they are not)."""
    if positions is None:
        return None
    if _is_torch(positions):
        torch = importlib.import_module("torch")

        if positions.dtype.is_floating_point or positions.dtype.is_complex or positions.dtype == torch.bool:
            raise TypeError(f"posenc.{fn}: {name} must be integers, got {positions.dtype}")
        if positions.dtype not in ((torch.int64,) if int64_only else (torch.int64, torch.int32)):
            positions = positions.to(torch.int64)
        return positions.contiguous()
    a = np.asarray(positions)
    if a.dtype.kind not in "iu":
        raise TypeError(f"posenc.{fn}: {name} must be integers, got dtype {a.dtype}")
    if a.dtype not in ((np.dtype(np.int64),) if int64_only else (np.dtype(np.int64), np.dtype(np.int32))):
        a = a.astype(np.int64)
    return np.ascontiguousarray(a)


def _pos(positions: Positions, starts: Positions, fn: str) -> Tuple[Any, bool]:
    """The ids and their meaning, each named by its keyword (never guessed from a shape): ``positions`` one id
    per token ((N, L), or (L,) / (1, L) for every sequence), ``starts`` one start per sequence ((N,))."""
    if positions is not None and starts is not None:
        raise ValueError(
            f"posenc.{fn}: give positions (one id per token) or starts (one start per sequence), not both"
        )
    if starts is not None:
        return _ids(starts, fn, "starts"), True
    return _ids(positions, fn), False


def _layout(layout: Optional[str]) -> str:
    return "" if layout is None else str(layout)


def _out(x: Any, out: Optional[Array], fn: str, dtype: DType = None) -> Any:
    if out is None:
        return _empty_like(x, fn, dtype)
    return _check_array(out, "out", fn, True)


def _seq_len(v: Optional[int], fn: str) -> int:
    """seq_len as the C++ API takes it: None (not stated) is 0, which length-dependent scalings reject."""
    return 0 if v is None else _int(v, "seq_len", fn)


def _merged_config(cfg: Dict[str, Any], changes: Dict[str, Any], fn: str) -> Dict[str, Any]:
    """cfg (RopePlan.config form) with `changes`: top-level keys replaced, ``scaling`` merged key by key."""
    out = dict(cfg)
    for key, value in changes.items():
        if key not in out:
            raise TypeError(f"posenc.{fn}: unknown configuration key {key!r} (known: {', '.join(out)})")
        if key == "scaling":
            if not isinstance(value, dict):
                raise TypeError(f"posenc.{fn}: scaling must be a dict of the keys of config['scaling']")
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    return out


def _int(v: Any, name: str, fn: str) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"posenc.{fn}: {name} must be an integer, got {type(v).__name__}")
    return int(v)


# -------------------------------------------------------------------------------------------------------- plans

_SCALING_ALIASES = {"none": "default", "dynamic_ntk": "dynamic"}
_POSENC_SCALING_KEYS = ("max_position_embeddings", "dynamic_policy", "longrope_policy")


def _scaling_params(
    scaling: Optional[Dict[str, Any]], params: Dict[str, Any], names: Dict[str, str], base: Optional[float]
) -> Optional[float]:
    """RopePlan's `scaling` dict (Hugging Face rope_scaling keys) into rope_params fields; returns the static
    NTK factor for posenc's "ntk" type (which Hugging Face does not have)."""
    names["function"] = "RopePlan"
    names["scaling_label"] = "scaling.rope_type"
    names["scaling_type"] = "scaling.rope_type"
    if scaling is None:
        scaling = {}
    if not isinstance(scaling, dict):
        raise TypeError(f"posenc.RopePlan: scaling must be a dict of Hugging Face rope_scaling keys, got {type(scaling).__name__}")
    s = _hf.Section(scaling, "scaling.", "RopePlan")
    keys = _hf.scaling_keys(s)
    known = set(keys) | set(_POSENC_SCALING_KEYS)
    unknown = sorted(str(k) for k in scaling if k not in known)
    if unknown:
        raise ValueError(
            f"posenc::RopePlan: scaling has unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})"
        )
    type_key = keys["rope_type"] if keys["rope_type"].given() else keys["type"]
    kind = _hf.use(type_key) or "default"
    names["scaling_type"] = type_key.name
    kind = _SCALING_ALIASES.get(kind, kind)
    ntk = None
    if kind == "deepseek_yarn":
        kind = "yarn"
        params["yarn_variant"] = "deepseek"
    params["scaling_type"] = "default" if kind == "ntk" else kind
    prf = _hf.use(keys["partial_rotary_factor"])
    if prf is not None:
        params["partial_rotary_factor"] = prf
        names["partial_rotary_factor"] = keys["partial_rotary_factor"].name
    theta = _hf.use(keys["rope_theta"])
    if theta is not None and base is not None and theta != base:
        raise ValueError(f"posenc::RopePlan: base={float(base):.17g} and scaling.rope_theta={theta:.17g} differ; give one")
    params["base"] = theta if theta is not None else (10000.0 if base is None else float(base))
    omp = _hf.use(keys["original_max_position_embeddings"])
    if omp is not None:
        params["original_max_positions"] = omp
    names["original_max_positions"] = keys["original_max_position_embeddings"].name
    mpe = _hf.use(s.positive("max_position_embeddings"))
    if mpe is not None:
        params["max_position_embeddings"] = mpe
    names["max_position_embeddings"] = "scaling.max_position_embeddings"
    _hf.scaling_params(keys, params, names)
    for key in ("dynamic_policy", "longrope_policy"):
        v = _hf.use(s.string(key))
        if v is not None:
            params[key] = v
    if kind == "ntk":
        if params.get("factor") is None:
            raise ValueError('posenc::RopePlan: scaling.factor is missing (required for scaling.rope_type="ntk")')
        ntk = params["factor"]
    return ntk


class RopePlan:
    """A RoPE frequency plan (posenc::rope_plan): a frequency w_i per rotated pair, the magnitude m on cos and
    sin, the attention logit scale, the pair style and the rotated window [rotary_offset, rotary_offset + R).

    Pair i (i < R/2) of a token at position p turns by theta = p * w_i, scaled by m::

        y_a = m (x_a cos(theta) - x_b sin(theta)),   y_b = m (x_b cos(theta) + x_a sin(theta))

    with (a, b) = (o + i, o + i + R/2) for ``style="half_split"`` (GPT-NeoX, Llama, Qwen2: HF ``rotate_half``)
    and (o + 2i, o + 2i + 1) for ``style="interleaved"`` (RoFormer, GPT-J, Meta/GGUF Llama). Before scaling
    w_i = base^(-2i/R) (Su et al. 2021, RoFormer eq. 34). Features outside the window are copied.

    Args:
        head_dim: D, the head dim of the tensors (their last extent).
        base: rope_theta (default 10000; or ``scaling["rope_theta"]``).
        style: ``"half_split"`` or ``"interleaved"``.
        rotary_dim: R, even, <= head_dim; default ``int(head_dim * scaling["partial_rotary_factor"])`` (that
            factor defaulting to 1), as Hugging Face.
        rotary_offset: where the rotated window starts inside the head.
        scaling: the context extension, as a Hugging Face ``rope_scaling`` / ``rope_parameters`` dict:
            ``{"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}``. Types:
            ``"default"``, ``"linear"`` (w/F), ``"dynamic"`` (NTK with a base growing with the length; needs
            ``"max_position_embeddings"``), ``"yarn"``, ``"longrope"`` (``"su"``), ``"llama3"``, and posenc's
            own ``"ntk"`` (static NTK-aware base * F^(R/(R-2)); ``factor`` = base_rescale_factor) and
            ``"deepseek_yarn"`` (DeepSeek-V2/V3: magnitude ratio and logit scale). Keys and defaults are
            Hugging Face's (``beta_fast`` 32, ``beta_slow`` 1, ``truncate`` true, ...), mapped by posenc's
            rope_params mapping; posenc adds ``"dynamic_policy"`` (``"per_length"`` as HF, ``"fixed_at_max"``
            as vLLM) and ``"longrope_policy"`` (``"per_length"``, ``"past_original"``, ``"always_short"``,
            ``"always_long"``). Unknown keys are rejected.
        seq_len: the sequence length n the plan serves (largest position + 1). Required (a ValueError names the
            two ways out otherwise) for the scalings that depend on it: ``"dynamic"`` under the ``"per_length"``
            policy (HF re-plans per forward) and ``"longrope"`` under ``"per_length"`` / ``"past_original"``;
            else ignored. Rebuild with :meth:`with_seq_len` as the length grows, or choose a fixed policy
            (``"dynamic_policy": "fixed_at_max"`` as vLLM; ``"longrope_policy": "always_short"`` /
            ``"always_long"``).
        freq_factors: per-pair divisors w_i / f_i after the scaling (ggml ``rope_freqs``), R/2 of them.

    Raises:
        ValueError: posenc's message for an invalid configuration (odd rotary dim, a window past the head,
            a missing or non-positive factor, factor lists of the wrong length, ...).

    Example::

        plan = posenc.RopePlan(128, base=500000.0, scaling={"rope_type": "llama3", "factor": 8.0,
                               "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                               "original_max_position_embeddings": 8192})
        q = posenc.apply_rope(q, plan, offset=past_len, out=q)     # in place
    """

    __slots__ = ("_p", "_info")

    def __init__(
        self,
        head_dim: int,
        base: Optional[float] = None,
        style: str = "half_split",
        rotary_dim: Optional[int] = None,
        rotary_offset: int = 0,
        scaling: Optional[Dict[str, Any]] = None,
        seq_len: Optional[int] = None,
        freq_factors: Optional[Sequence[float]] = None,
    ) -> None:
        params: Dict[str, Any] = {
            "head_dim": _int(head_dim, "head_dim", "RopePlan"),
            "rotary_dim": 0 if rotary_dim is None else _int(rotary_dim, "rotary_dim", "RopePlan"),
            "rotary_offset": _int(rotary_offset, "rotary_offset", "RopePlan"),
            "style": style,
        }
        if freq_factors is not None:
            params["freq_factors"] = [float(f) for f in np.asarray(freq_factors, dtype=np.float64).ravel()]
        names: Dict[str, str] = {}
        ntk = _scaling_params(scaling, params, names, base)
        self._p, _ = _C.RopePlanCore.from_params(params, names, _seq_len(seq_len, "RopePlan"), ntk)
        self._info: Optional[Dict[str, Any]] = None

    @classmethod
    def _wrap(cls, core: Any, info: Optional[Dict[str, Any]] = None) -> "RopePlan":
        plan = cls.__new__(cls)
        plan._p = core
        plan._info = info
        return plan

    @classmethod
    def from_hf_config(
        cls,
        config: Union[str, "os.PathLike[str]", Dict[str, Any]],
        *,
        seq_len: Optional[int] = None,
        style: Optional[str] = None,
        yarn_variant: Optional[str] = None,
        dynamic_policy: str = "per_length",
        longrope_policy: str = "per_length",
        layer_type: Optional[str] = None,
        use_text_config: bool = True,
        **overrides: Any,
    ) -> "RopePlan":
        """The plan of a Hugging Face model from its ``config.json`` (a path, or the parsed dict).

        The keys and their precedence are those of posenc's C++ loader (``posenc/io/hf_config.hpp``):
        head_dim from ``qk_rope_head_dim`` (DeepSeek MLA), ``head_dim``, else ``hidden_size //
        num_attention_heads``; rotary dim ``int(head_dim * partial_rotary_factor)`` (or GPT-NeoX's
        ``rotary_pct``); base from ``rope_parameters.rope_theta``, ``rope_theta`` or ``rotary_emb_base``; the
        scaling from ``rope_parameters`` (transformers v5) or ``rope_scaling`` (v4), every ``rope_type``;
        ``text_config`` of multimodal models; DeepSeek-V2/V3 get interleaved pairs and DeepSeek YaRN.

        Args:
            style: override the pair style (e.g. ``"interleaved"`` for weights permuted to Meta/GGUF layout).
            yarn_variant: ``"yarn"`` or ``"deepseek"``; default by model (DeepSeek-V2/V3: deepseek).
            seq_len, dynamic_policy, longrope_policy: see :class:`RopePlan` (a length-dependent scaling needs
                seq_len or a fixed policy).
            layer_type: the layer type of per-layer ``rope_parameters`` (Gemma 3: ``"full_attention"``).
            use_text_config: read ``text_config`` when present.
            overrides: any key of :attr:`config` replacing the file's value, as the CLI's flags override
                ``--hf-config`` (``base=1e6``, ``rotary_dim=64``, ``scaling={"factor": 8.0}`` merged into the
                file's scaling); see :meth:`replace`.

        The model facts (``model_type``, ``rope_type``, ``num_attention_heads``, ``num_key_value_heads``,
        ``max_position_embeddings``, ``mrope_section``, ...) are in :attr:`info`.
        """
        if isinstance(config, (str, os.PathLike)):
            import json

            path = os.fspath(config)
            try:
                with open(path, "rb") as f:
                    config = json.load(f)
            except OSError as e:
                raise OSError(f'posenc::rope_config_from_hf_file: cannot open path="{path}"') from e
            except ValueError as e:
                raise ValueError(f'posenc::rope_config_from_hf_file: path="{path}" is not valid JSON: {e}') from e
        params, names, facts = _hf.hf_params(
            config,
            style=style,
            yarn_variant=yarn_variant,
            dynamic_policy=dynamic_policy,
            longrope_policy=longrope_policy,
            layer_type=layer_type,
            use_text_config=use_text_config,
        )
        n = _seq_len(seq_len, "RopePlan")
        if overrides:
            # The file's configuration before the length rule: an override may be what makes it plannable.
            core, rope_type = _C.RopePlanCore.from_params(params, names, max(n, 1), None)
            facts["rope_type"] = rope_type
            cfg = _merged_config(cls._wrap(core).config, overrides, "RopePlan.from_hf_config")
            return cls._wrap(_C.RopePlanCore.from_config(cfg, n), facts)
        core, rope_type = _C.RopePlanCore.from_params(params, names, n, None)
        facts["rope_type"] = rope_type
        return cls._wrap(core, facts)

    @classmethod
    def from_gguf(
        cls,
        path: Union[str, "os.PathLike[str]"],
        *,
        seq_len: Optional[int] = None,
        style: Optional[str] = None,
        longrope_policy: str = "per_length",
        **overrides: Any,
    ) -> "RopePlan":
        """The plan of a GGUF model file (posenc/io/gguf.hpp: the header and metadata only, plus the small
        ``rope_freqs`` / LongRoPE factor tensors): llama.cpp's keys and its pair style per architecture
        (Llama: interleaved; Qwen2, Phi-3, GPT-NeoX: half_split). Raises OSError when the file cannot be read,
        ValueError naming the key when it is malformed. The file's facts are in :attr:`info`. ``overrides``: any
        key of :attr:`config` replacing the file's value (see :meth:`from_hf_config`)."""
        n = _seq_len(seq_len, "RopePlan")
        if overrides:
            core, info = _C.RopePlanCore.from_gguf(os.fspath(path), style, longrope_policy, max(n, 1))
            cfg = _merged_config(cls._wrap(core).config, overrides, "RopePlan.from_gguf")
            return cls._wrap(_C.RopePlanCore.from_config(cfg, n), info)
        core, info = _C.RopePlanCore.from_gguf(os.fspath(path), style, longrope_policy, n)
        return cls._wrap(core, info)

    @classmethod
    def from_inv_freq(
        cls,
        head_dim: int,
        inv_freq: Sequence[float],
        style: str = "half_split",
        rotary_offset: int = 0,
        magnitude: float = 1.0,
        logit_scale: float = 1.0,
    ) -> "RopePlan":
        """A plan from explicit frequencies w_0..w_{R/2-1} (rad per position), for variants no scaling covers."""
        w = [float(v) for v in np.asarray(inv_freq, dtype=np.float64).ravel()]
        return cls._wrap(_C.RopePlanCore.from_inv_freq(head_dim, w, style, rotary_offset, magnitude, logit_scale))

    @classmethod
    def sectioned(
        cls, head_dim: int, sections: Sequence[int], base: float = 10000.0, style: str = "half_split"
    ) -> "RopePlan":
        """Frequencies restarting in every section: pair j of a section of s pairs gets base^(-j/s), i.e. each
        section is its own RoPE of rotary dim 2s (Qwen2-VL's vision RoPE: sections (0, D/4, D/4) with
        :class:`MropePlan` layout ``"chunked"``)."""
        t, h, w = (int(s) for s in sections)
        return cls._wrap(_C.RopePlanCore.sectioned(head_dim, base, (t, h, w), style))

    @classmethod
    def from_config(cls, config: Dict[str, Any], *, seq_len: Optional[int] = None) -> "RopePlan":
        """A plan from a configuration in the form :attr:`config` returns (``head_dim``, ``rotary_dim``,
        ``rotary_offset``, ``base``, ``style``, ``freq_factors`` and ``scaling`` = {``type``, ``factor``, ...}):
        copy a loaded plan's config, edit it, plan it again. Unknown keys are a ValueError naming the known ones;
        ``seq_len`` as in :class:`RopePlan`."""
        if not isinstance(config, dict):
            raise TypeError(f"posenc.RopePlan.from_config: config must be a dict, got {type(config).__name__}")
        return cls._wrap(_C.RopePlanCore.from_config(config, _seq_len(seq_len, "RopePlan.from_config")))

    def replace(self, *, seq_len: Optional[int] = None, **changes: Any) -> "RopePlan":
        """This plan's configuration with ``changes`` (any key of :attr:`config`; ``scaling`` as a dict merged
        into the current scaling, so ``scaling={"factor": 8.0}`` changes the factor only), planned again for
        ``seq_len`` (default: the length this plan was built for). The model facts of :attr:`info` are kept.

        Example: ``RopePlan.from_hf_config("config.json", seq_len=n).replace(base=1e6)`` (the CLI's
        ``--hf-config config.json --base 1e6``)."""
        fn = "RopePlan.replace"
        cfg = self.config
        if cfg is None:
            raise ValueError(f"posenc.{fn}: the plan was not built from a configuration (from_inv_freq / sectioned)")
        cfg = _merged_config(cfg, changes, fn)
        n = self.seq_len if seq_len is None else _int(seq_len, "seq_len", fn)
        return RopePlan._wrap(_C.RopePlanCore.from_config(cfg, n), self._info)

    def with_seq_len(self, seq_len: int) -> "RopePlan":
        """The same configuration planned for sequences of length ``seq_len`` (dynamic NTK, LongRoPE)."""
        return RopePlan._wrap(self._p.with_seq_len(_int(seq_len, "seq_len", "RopePlan.with_seq_len")), self._info)

    @property
    def head_dim(self) -> int:
        """D, the head dim the plan applies to."""
        return self._p.head_dim

    @property
    def rotary_dim(self) -> int:
        """R = 2 * pairs, the rotated features."""
        return self._p.rotary_dim

    @property
    def rotary_offset(self) -> int:
        """Where the rotated window starts inside the head."""
        return self._p.rotary_offset

    @property
    def pairs(self) -> int:
        """R/2, one frequency each."""
        return self._p.pairs

    @property
    def style(self) -> str:
        """``"half_split"`` or ``"interleaved"``."""
        return self._p.style

    @property
    def magnitude(self) -> float:
        """m, multiplying cos and sin (YaRN / LongRoPE attention factor; 1 otherwise)."""
        return self._p.magnitude

    @property
    def logit_scale(self) -> float:
        """The extra factor of the attention softmax scale (DeepSeek YaRN's mscale^2; 1 otherwise)."""
        return self._p.logit_scale

    @property
    def inv_freq(self) -> np.ndarray:
        """w_i, i = 0..R/2-1, in radians per position after scaling (read-only float64 view of the plan)."""
        return self._p.inv_freq

    @property
    def seq_len(self) -> int:
        """The sequence length the plan was built for (0 for explicit-frequency plans)."""
        return self._p.seq_len

    @property
    def config(self) -> Optional[Dict[str, Any]]:
        """The posenc::rope_config the plan was built from, as a dict (None for explicit frequencies)."""
        return self._p.config

    @property
    def info(self) -> Optional[Dict[str, Any]]:
        """The model facts read by :meth:`from_hf_config` / :meth:`from_gguf` (None otherwise)."""
        return None if self._info is None else dict(self._info)

    def __repr__(self) -> str:
        cfg = self.config
        kind = cfg["scaling"]["type"] if cfg else "explicit"
        return (
            f"RopePlan(head_dim={self.head_dim}, rotary_dim={self.rotary_dim}, rotary_offset={self.rotary_offset}, "
            f"style={self.style!r}, scaling={kind!r}, magnitude={self.magnitude:.17g}, "
            f"logit_scale={self.logit_scale:.17g})"
        )


class RopeCache:
    """A cos/sin table of a plan for positions 0..max_positions-1 (posenc::rope_cache): angles in double, times
    the plan's magnitude, rounded once to ``dtype`` (``"float32"`` or ``"float64"``). Use it wherever a
    :class:`RopePlan` is accepted: table lookups instead of sin/cos per call; positions must be < max_positions.
    """

    __slots__ = ("_c",)

    def __init__(self, plan: RopePlan, max_positions: int, dtype: str = "float32") -> None:
        if not isinstance(plan, RopePlan):
            raise TypeError(f"posenc.RopeCache: plan must be a posenc.RopePlan, got {type(plan).__name__}")
        self._c = _C.RopeCacheCore(plan._p, _int(max_positions, "max_positions", "RopeCache"), str(np.dtype(dtype)))

    @property
    def plan(self) -> RopePlan:
        """The plan the table was built from."""
        return RopePlan._wrap(self._c.plan)

    @property
    def max_positions(self) -> int:
        """Rows of the table: positions 0..max_positions-1."""
        return self._c.max_positions

    @property
    def dtype(self) -> str:
        """``"float32"`` or ``"float64"``."""
        return self._c.dtype

    @property
    def cos(self) -> np.ndarray:
        """m cos(p w_i), shape (max_positions, R/2), a read-only view of the table."""
        return np.asarray(self._c.cos)

    @property
    def sin(self) -> np.ndarray:
        """m sin(p w_i), shape (max_positions, R/2), a read-only view of the table."""
        return np.asarray(self._c.sin)

    def __repr__(self) -> str:
        return f"RopeCache({self.plan!r}, max_positions={self.max_positions}, dtype={self.dtype!r})"


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


class MropePlan:
    """Multimodal RoPE (Qwen2-VL, Qwen3-VL): a :class:`RopePlan` whose pair i turns by p[axis(i)] * w_i, the
    axis (t, h, w) given by ``sections`` (T, H, W), T + H + W = R/2. ``layout="chunked"`` (Qwen2-VL): pairs
    [0, T) take t, [T, T+H) h, the rest w. ``"interleaved"`` (Qwen3-VL): h if i % 3 == 1 and i < 3H, w if
    i % 3 == 2 and i < 3W, else t."""

    __slots__ = ("_m",)

    def __init__(self, plan: RopePlan, sections: Sequence[int], layout: str = "chunked") -> None:
        t, h, w = (int(s) for s in sections)
        self._m = _C.MropePlanCore(plan._p, (t, h, w), layout)

    sections = property(lambda self: tuple(self._m.sections), doc="(T, H, W) pairs per axis.")
    layout = property(lambda self: self._m.layout, doc="'chunked' or 'interleaved'.")
    plan = property(lambda self: RopePlan._wrap(self._m.plan), doc="The frequency plan.")
    axis = property(lambda self: self._m.axis, doc="The axis (0 t, 1 h, 2 w) of every pair (read-only view).")

    def __repr__(self) -> str:
        return f"MropePlan({self.plan!r}, sections={self.sections}, layout={self.layout!r})"


def _freq(plan: Any, fn: str) -> Any:
    if isinstance(plan, RopePlan):
        return plan._p
    if isinstance(plan, RopeCache):
        return plan._c
    raise TypeError(f"posenc.{fn}: plan must be a posenc.RopePlan or posenc.RopeCache, got {type(plan).__name__}")


def _plan(plan: Any, fn: str, name: str = "plan") -> Any:
    if isinstance(plan, RopePlan):
        return plan._p
    raise TypeError(f"posenc.{fn}: {name} must be a posenc.RopePlan, got {type(plan).__name__}")


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
    if (seq_lens is None) == (slot_mapping is None):
        raise ValueError(f"posenc.{fn}: give exactly one of seq_lens (contiguous cache) or slot_mapping (paged cache)")
    k = _check_array(k, "k", fn, False)
    v = _check_array(v, "v", fn, False)
    k_cache = _check_array(k_cache, "k_cache", fn, True)
    v_cache = _check_array(v_cache, "v_cache", fn, True)
    if q is not None:
        q = _check_array(q, "q", fn, True)
    paged = slot_mapping is not None
    slots = _ids(slot_mapping if paged else seq_lens, fn, "slot_mapping" if paged else "seq_lens", int64_only=True)
    if not paged and positions is None and starts is None and offset == 0:
        starts = slots  # the new tokens continue each sequence
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


# -------------------------------------------------------------------------------------------------------- ALiBi


def _head_end(head_end: Optional[int]) -> int:
    return -1 if head_end is None else int(head_end)


def alibi_slopes(
    num_heads: int,
    max_bias: float = 8.0,
    head_begin: int = 0,
    head_end: Optional[int] = None,
    dtype: DType = np.float64,
    out: Optional[Array] = None,
) -> Array:
    """ALiBi slopes of global heads [head_begin, head_end) of ``num_heads`` (Press et al. 2022; ggml's
    max_bias generalisation)::

        n = largest power of two <= num_heads
        slope_h = 2^(-max_bias (h + 1) / n)                 for h < n
        slope_h = 2^(-max_bias (2 (h - n) + 1) / (2 n))     otherwise

    formed in double, rounded once. Returns ``out`` (allocated (head_end - head_begin,) of ``dtype`` when
    None)."""
    fn = "alibi_slopes"
    h1 = int(num_heads) if head_end is None else int(head_end)
    if out is None:
        out = _alloc((max(h1 - int(head_begin), 0),), dtype, fn)
    out = _check_array(out, "out", fn, True)
    _C.alibi_slopes(out, _int(num_heads, "num_heads", fn), float(max_bias), _int(head_begin, "head_begin", fn), _head_end(head_end))
    return out


def alibi_bias(
    num_heads: int,
    query_len: Optional[int] = None,
    key_len: Optional[int] = None,
    query_offset: int = 0,
    max_bias: float = 8.0,
    head_begin: int = 0,
    head_end: Optional[int] = None,
    form: str = "linear",
    causal: bool = False,
    dtype: DType = np.float32,
    out: Optional[Array] = None,
) -> Array:
    """The ALiBi bias tensor (H_local, Lq, Lk) for queries at positions query_offset + i and keys at j::

        linear:    bias[h, i, j] = slope_h * (j - (i + query_offset))
        symmetric: bias[h, i, j] = -slope_h * |j - (i + query_offset)|

    ``causal=True`` writes -inf where j > i + query_offset. Returns ``out`` (allocated of ``dtype`` from
    query_len and key_len when None)."""
    fn = "alibi_bias"
    if out is None:
        if query_len is None or key_len is None:
            raise ValueError(f"posenc.{fn}: give query_len and key_len, or out")
        h1 = int(num_heads) if head_end is None else int(head_end)
        out = _alloc((max(h1 - int(head_begin), 0), int(query_len), int(key_len)), dtype, fn)
    out = _check_array(out, "out", fn, True)
    _C.alibi_bias(
        out, _int(num_heads, "num_heads", fn), float(max_bias), _int(head_begin, "head_begin", fn),
        _head_end(head_end), form, _int(query_offset, "query_offset", fn), bool(causal),
    )
    return out


def add_alibi_bias(
    scores: Array,
    num_heads: Optional[int] = None,
    positions: Positions = None,
    offset: int = 0,
    max_bias: float = 8.0,
    head_begin: int = 0,
    head_end: Optional[int] = None,
    form: str = "linear",
    causal: bool = False,
    slopes: Optional[Array] = None,
    *,
    starts: Positions = None,
) -> Array:
    """Adds ALiBi to attention scores in place, before the softmax::

        scores[n, h, i, j] += slope_h * (j - q(n, i))        (symmetric: -slope_h * |j - q(n, i)|)

    q(n, i) the position of query i of row n: ``offset`` + i by default (a KV cache of ``offset`` entries),
    or ``positions`` ((N, Lq), (Lq,) or (1, Lq)), or ``starts`` (N,) (query i of row n at starts[n] + i).
    ``causal=True`` sets scores with j > q(n, i) to -inf. ``scores``:
    (N, H_local, Lq, Lk) or (H_local, Lq, Lk), any strides. Slopes from ``num_heads`` (default: the scores'
    head count), ``max_bias`` and the shard [head_begin, head_end), or given as ``slopes`` ((H_local,) or
    (N, H_local)). Returns ``scores``."""
    fn = "add_alibi_bias"
    scores = _check_array(scores, "scores", fn, True)
    ids, is_starts = _pos(positions, starts, fn)
    off = _int(offset, "offset", fn)
    if slopes is not None:
        if num_heads is not None or head_begin != 0 or head_end is not None:
            raise ValueError(f"posenc.{fn}: give slopes or (num_heads, head_begin, head_end), not both")
        _C.add_alibi_bias_slopes(scores, _check_array(slopes, "slopes", fn, False), form, ids, is_starts, off, bool(causal))
        return scores
    if num_heads is None:
        shape = tuple(scores.shape)
        if len(shape) not in (3, 4):
            raise ValueError(f"posenc.{fn}: scores must have shape (N, H, Lq, Lk) or (H, Lq, Lk), got {shape}")
        num_heads = shape[-3]
    _C.add_alibi_bias(
        scores, _int(num_heads, "num_heads", fn), float(max_bias), _int(head_begin, "head_begin", fn),
        _head_end(head_end), form, ids, is_starts, off, bool(causal),
    )
    return scores


# --------------------------------------------------------------------------------------------------- sinusoidal


def sinusoidal_table(
    length: Optional[int] = None,
    dim: Optional[int] = None,
    offset: int = 0,
    base: float = 10000.0,
    style: str = "interleaved",
    padding_idx: Optional[int] = None,
    dtype: DType = np.float32,
    out: Optional[Array] = None,
) -> Array:
    """Rows offset..offset+L-1 of the sinusoidal position table (L, D), angles in double::

        interleaved (Vaswani et al. 2017): T[p, 2i] = sin(p w_i), T[p, 2i+1] = cos(p w_i), w_i = base^(-2i/D)
        concat (tensor2tensor, fairseq):   T[p, i] = sin(p w_i), T[p, D/2+i] = cos(p w_i), w_i = base^(-i/(D/2-1))

    The row p = ``padding_idx`` is zero (fairseq). Returns ``out`` (allocated (length, dim) of ``dtype``
    when None; else its shape gives L and D)."""
    fn = "sinusoidal_table"
    if out is None:
        if length is None or dim is None:
            raise ValueError(f"posenc.{fn}: give length and dim, or out")
        out = _alloc((int(length), int(dim)), dtype, fn)
    out = _check_array(out, "out", fn, True)
    if dim is None:
        dim = int(out.shape[-1]) if len(out.shape) > 0 else 0
    d = _int(dim, "dim", fn)
    _C.sinusoidal_table(out, d, float(base), style, None if padding_idx is None else int(padding_idx), _int(offset, "offset", fn))
    return out


def add_sinusoidal(
    x: Array,
    positions: Positions = None,
    offset: int = 0,
    base: float = 10000.0,
    style: str = "interleaved",
    padding_idx: Optional[int] = None,
    out: Optional[Array] = None,
    *,
    starts: Positions = None,
) -> Array:
    """Adds the sinusoidal encoding: out[n, l, :] = x[n, l, :] + T[p(n, l), :] (T as :func:`sinusoidal_table`,
    D = x's last extent), the sum formed in double and rounded once. ``x``: (N, L, D) or (L, D). Positions as
    everywhere (fairseq padding: :func:`make_padded_positions`). ``out`` as :func:`apply_rope` (same dtype as
    x). Returns ``out``."""
    fn = "add_sinusoidal"
    x = _check_array(x, "x", fn, False)
    out = _out(x, out, fn)
    shape = tuple(x.shape)
    dim = int(shape[-1]) if shape else 0
    _C.add_sinusoidal(
        x, out, dim, float(base), style, None if padding_idx is None else int(padding_idx), *_pos(positions, starts, fn),
        _int(offset, "offset", fn),
    )
    return out


def make_padded_positions(tokens: Array, padding_idx: int, past_length: int = 0) -> np.ndarray:
    """fairseq ``utils.make_positions`` (HF ``create_position_ids_from_input_ids``) for token ids (N, L):
    non-padding tokens get padding_idx + 1, + 2, ... (plus past_length), padding tokens padding_idx. Returns
    int64 (N, L), to pass as ``positions`` with ``padding_idx`` to :func:`add_sinusoidal`."""
    fn = "make_padded_positions"
    t = _ids(tokens, fn, "tokens")
    if _is_torch(t):
        t = t.numpy()
    out = np.empty(t.shape, dtype=np.int64)
    _C.make_padded_positions(t, out, _int(padding_idx, "padding_idx", fn), _int(past_length, "past_length", fn))
    return out


# ----------------------------------------------------------------------------------------------------------- T5


def t5_relative_bucket(
    relative_position: Union[int, Array],
    bidirectional: bool = True,
    num_buckets: int = 32,
    max_distance: int = 128,
) -> Union[int, np.ndarray]:
    """T5's bucket of relative position r = key position - query position (Raffel et al. 2020; HF
    ``T5Attention._relative_position_bucket``), bit for bit including its float32 log::

        bidirectional: nb = num_buckets / 2, offset nb if r > 0, n = |r|;   causal: nb = num_buckets, n = max(-r, 0)
        e = nb / 2;  bucket = n if n < e else min(e + trunc(logf(n / e) / log(max_distance / e) * (nb - e)), nb - 1)

    An int gives an int; an integer array gives an int64 array of the same shape."""
    fn = "t5_relative_bucket"
    if isinstance(relative_position, numbers.Integral) and not isinstance(relative_position, bool):
        return _C.t5_relative_bucket(int(relative_position), bool(bidirectional), int(num_buckets), int(max_distance))
    r = _ids(relative_position, fn, "relative_position", int64_only=True)
    if _is_torch(r):
        r = r.numpy()
    out = np.empty(r.shape, dtype=np.int64)
    _C.t5_relative_bucket_array(r.reshape(-1), out.reshape(-1), bool(bidirectional), int(num_buckets), int(max_distance))
    return out


def t5_bucket_table(
    query_len: Optional[int] = None,
    key_len: Optional[int] = None,
    query_offset: int = 0,
    bidirectional: bool = True,
    num_buckets: int = 32,
    max_distance: int = 128,
    dtype: DType = np.int64,
    out: Optional[Array] = None,
) -> Array:
    """buckets[i, j] = t5_relative_bucket(j - (i + query_offset)) for (Lq, Lk) (HF ``compute_bias`` with
    cache_position = query_offset + arange(Lq)). Returns ``out`` (allocated int64/int32 when None)."""
    fn = "t5_bucket_table"
    if out is None:
        if query_len is None or key_len is None:
            raise ValueError(f"posenc.{fn}: give query_len and key_len, or out")
        out = _alloc((int(query_len), int(key_len)), dtype, fn)
    out = _check_array(out, "out", fn, True)
    _C.t5_bucket_table(out, bool(bidirectional), _int(num_buckets, "num_buckets", fn), _int(max_distance, "max_distance", fn),
                       _int(query_offset, "query_offset", fn))
    return out
