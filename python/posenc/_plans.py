"""RoPE frequency plans (RopePlan) and cos/sin caches (RopeCache)."""

from __future__ import annotations

import importlib
import numbers
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from ._common import _C
from ._common import Array, _check_array, _int, _merged_config, _seq_len


# -------------------------------------------------------------------------------------------------------- plans

def _load_json(config: Any, fn: str) -> Any:
    """A config.json path read and parsed (a dict passes through), with the C++ loader's messages."""
    if not isinstance(config, (str, os.PathLike)):
        return config
    import json

    path = os.fspath(config)
    try:
        with open(path, "rb") as f:
            return json.load(f)
    except OSError as e:
        raise OSError(f'posenc::{fn}: cannot open path="{path}"') from e
    except ValueError as e:
        raise ValueError(f'posenc::{fn}: path="{path}" is not valid JSON: {e}') from e


def model_layers(config: Union[str, "os.PathLike[str]", Dict[str, Any]], *, use_text_config: bool = True) -> List[Dict[str, Any]]:
    """Every layer's positional treatment of a Hugging Face model (posenc::model_plan_from_hf, the C++ reader
    over the dict): one dict per layer with ``rope`` (False for a NoPE layer), ``attention``
    (``"full_attention"``, ``"sliding_attention"`` or ``"chunked_attention"``), ``window`` (tokens; 0 for full)
    and ``temperature`` (Llama 4 NoPE layers: ``{"floor_scale", "attn_scale"}``, the factor on q at position p
    being ``1 + attn_scale * log(floor((p + 1) / floor_scale) + 1)``; None elsewhere). A layer's RoPE plan is
    ``RopePlan.from_hf_config(config, layer=i)``. Family rules: docs/models.md."""
    return _C.model_layers(_load_json(config, "model_plan_from_hf_file"), bool(use_text_config))


def gguf_model_layers(path: Union[str, "os.PathLike[str]"], *, style: Optional[str] = None) -> List[Dict[str, Any]]:
    """Every layer's positional treatment of a GGUF model (posenc::read_gguf_model_plan: llama.cpp's per-layer
    keys and its per-architecture rules), one dict per layer as :func:`model_layers`. A layer's RoPE plan is
    ``RopePlan.from_gguf(path, layer=i)``. Rules per architecture: docs/models.md."""
    return _C.gguf_model_layers(os.fspath(path), style)


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
        b = None if base is None else float(base)
        self._p = _C.RopePlanCore.from_scaling(params, scaling, b, _seq_len(seq_len, "RopePlan"))
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
        layer: Optional[int] = None,
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
            layer: the plan of this layer (posenc::model_plan_from_hf: Gemma 3's and ModernBERT's local bases,
                per-layer ``rope_parameters``); a NoPE layer (Llama 4, SmolLM3) raises ValueError. The layer's
                attention, window and temperature are in ``info["layer"]``; :func:`model_layers` lists them all.
            overrides: any key of :attr:`config` replacing the file's value, as the CLI's flags override
                ``--hf-config`` (``base=1e6``, ``rotary_dim=64``, ``scaling={"factor": 8.0}`` merged into the
                file's scaling); see :meth:`replace`.

        The model facts (``model_type``, ``rope_type``, ``num_attention_heads``, ``num_key_value_heads``,
        ``max_position_embeddings``, ``mrope_section``, ...) are in :attr:`info`.
        """
        config = _load_json(config, "rope_config_from_hf_file")
        # posenc's C++ reader and mapping (detail/hf_reader.hpp, the loader of io/hf_config.hpp) over the dict.
        n = _seq_len(seq_len, "RopePlan")
        args = (style, yarn_variant, dynamic_policy, longrope_policy, layer_type, bool(use_text_config), layer)
        if overrides:
            # The file's configuration before the length rule: an override may be what makes it plannable.
            core, facts = _C.RopePlanCore.from_hf(config, *args, max(n, 1))
            cfg = _merged_config(cls._wrap(core).config, overrides, "RopePlan.from_hf_config")
            return cls._wrap(_C.RopePlanCore.from_config(cfg, n), facts)
        core, facts = _C.RopePlanCore.from_hf(config, *args, n)
        return cls._wrap(core, facts)

    @classmethod
    def from_gguf(
        cls,
        path: Union[str, "os.PathLike[str]"],
        *,
        seq_len: Optional[int] = None,
        style: Optional[str] = None,
        longrope_policy: str = "per_length",
        layer: Optional[int] = None,
        **overrides: Any,
    ) -> "RopePlan":
        """The plan of a GGUF model file (posenc/io/gguf.hpp: the header and metadata only, plus the small
        ``rope_freqs`` / LongRoPE factor tensors): llama.cpp's keys and its pair style per architecture
        (Llama: interleaved; Qwen2, Phi-3, GPT-NeoX: half_split). Raises OSError when the file cannot be read,
        ValueError naming the key when it is malformed. The file's facts are in :attr:`info`. ``overrides``: any
        key of :attr:`config` replacing the file's value (see :meth:`from_hf_config`). ``layer``: the plan of
        that layer (posenc::read_gguf_model_plan: the sliding layers' base, NoPE layers are a ValueError), its
        attention and temperature in ``info["layer"]``; :func:`gguf_model_layers` lists them all."""
        n = _seq_len(seq_len, "RopePlan")
        if overrides:
            core, info = _C.RopePlanCore.from_gguf(os.fspath(path), style, longrope_policy, layer, max(n, 1))
            cfg = _merged_config(cls._wrap(core).config, overrides, "RopePlan.from_gguf")
            return cls._wrap(_C.RopePlanCore.from_config(cfg, n), info)
        core, info = _C.RopePlanCore.from_gguf(os.fspath(path), style, longrope_policy, layer, n)
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


class RopeTable:
    """An engine's own cos/sin table, used in place (posenc::rope_table_view): accepted wherever a
    :class:`RopePlan` or :class:`RopeCache` is. Pair i of position p is ``cos[p, i]`` / ``sin[p, i]``, of float32,
    float64, float16 or bfloat16, any strides; any magnitude is already in the values. The arrays are kept alive
    by this object and read at each call (positions past the table are rejected). Build it with a factory:

    * :meth:`separate`: cos and sin (max_positions, R/2) arrays (or Hugging Face's (max_positions, R) caches whose
      halves repeat: pass them, the first R/2 columns are read);
    * :meth:`cos_sin_cache`: vLLM's ``cos_sin_cache`` (max_positions, R), each row the R/2 cos then the R/2 sin;
    * :meth:`interleaved_pairs`: (max_positions, R/2, 2) (cos, sin) pairs.

    ``head_dim``, ``rotary_dim`` (default head_dim - rotary_offset), ``rotary_offset`` and ``style`` describe
    the tensors it rotates."""

    __slots__ = ("_t",)

    def __init__(self, core: Any) -> None:
        self._t = core

    @staticmethod
    def _make(cos: Any, sin: Any, keep: Any, row_stride: int, pair_stride: int, head_dim: int,
              rotary_dim: Optional[int], rotary_offset: int, style: str, fn: str) -> "RopeTable":
        hd = _int(head_dim, "head_dim", fn)
        off = _int(rotary_offset, "rotary_offset", fn)
        rd = hd - off if rotary_dim is None else _int(rotary_dim, "rotary_dim", fn)
        return RopeTable(_C.RopeTableCore(cos, sin, keep, int(cos.shape[0]), int(row_stride), int(pair_stride), hd, rd, off,
                                          style))

    @staticmethod
    def _strides(a: Any) -> Tuple[int, ...]:
        if hasattr(a, "stride") and callable(a.stride):  # torch: element strides
            return tuple(int(v) for v in a.stride())
        return tuple(int(v) // a.itemsize for v in a.strides)

    @classmethod
    def separate(cls, cos: Array, sin: Array, head_dim: int, rotary_dim: Optional[int] = None, rotary_offset: int = 0,
                 style: str = "half_split") -> "RopeTable":
        """cos, sin of shape (max_positions, >= R/2), one dtype and the same strides."""
        fn = "RopeTable.separate"
        cos, sin = _check_array(cos, "cos", fn, False), _check_array(sin, "sin", fn, False)
        if len(cos.shape) != 2 or tuple(cos.shape) != tuple(sin.shape) or cls._strides(cos) != cls._strides(sin):
            raise ValueError(f"posenc.{fn}: cos and sin must be 2-D arrays of one shape and strides")
        rs, ps = cls._strides(cos)
        return cls._make(cos, sin, (cos, sin), rs, ps, head_dim, rotary_dim, rotary_offset, style, fn)

    @classmethod
    def cos_sin_cache(cls, table: Array, head_dim: int, rotary_dim: Optional[int] = None, rotary_offset: int = 0,
                      style: str = "half_split") -> "RopeTable":
        """vLLM's cos_sin_cache (max_positions, R): row p is cos of the R/2 pairs, then their sin."""
        fn = "RopeTable.cos_sin_cache"
        table = _check_array(table, "table", fn, False)
        if len(table.shape) != 2 or table.shape[1] % 2:
            raise ValueError(f"posenc.{fn}: table must have shape (max_positions, R), R even, got {tuple(table.shape)}")
        half = int(table.shape[1]) // 2
        rs, ps = cls._strides(table)
        return cls._make(table[:, :half], table[:, half:], table, rs, ps, head_dim, rotary_dim, rotary_offset, style, fn)

    @classmethod
    def interleaved_pairs(cls, table: Array, head_dim: int, rotary_dim: Optional[int] = None, rotary_offset: int = 0,
                          style: str = "half_split") -> "RopeTable":
        """(max_positions, R/2, 2): (cos, sin) of each pair."""
        fn = "RopeTable.interleaved_pairs"
        table = _check_array(table, "table", fn, False)
        if len(table.shape) != 3 or table.shape[2] != 2:
            raise ValueError(f"posenc.{fn}: table must have shape (max_positions, R/2, 2), got {tuple(table.shape)}")
        rs, ps, _ = cls._strides(table)
        return cls._make(table[:, :, 0], table[:, :, 1], table, rs, ps, head_dim, rotary_dim, rotary_offset, style, fn)

    max_positions = property(lambda self: self._t.max_positions, doc="Rows of the table.")
    head_dim = property(lambda self: self._t.head_dim, doc="D of the tensors it rotates.")
    rotary_dim = property(lambda self: self._t.rotary_dim, doc="R, the rotated features.")

    def __repr__(self) -> str:
        return f"RopeTable(max_positions={self.max_positions}, head_dim={self.head_dim}, rotary_dim={self.rotary_dim})"


def _freq(plan: Any, fn: str) -> Any:
    if isinstance(plan, RopePlan):
        return plan._p
    if isinstance(plan, RopeCache):
        return plan._c
    if isinstance(plan, RopeTable):
        return plan._t
    raise TypeError(f"posenc.{fn}: plan must be a posenc.RopePlan, RopeCache or RopeTable, got {type(plan).__name__}")


def _plan(plan: Any, fn: str, name: str = "plan") -> Any:
    if isinstance(plan, RopePlan):
        return plan._p
    raise TypeError(f"posenc.{fn}: {name} must be a posenc.RopePlan, got {type(plan).__name__}")
