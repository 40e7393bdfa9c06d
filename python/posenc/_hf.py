"""Hugging Face ``config.json`` keys -> posenc ``rope_params`` fields, without JSON in C++.

This is the Python counterpart of posenc's C++ loader (``include/posenc/io/hf_config.hpp``, which finds the keys
and checks their JSON types, and ``include/posenc/detail/hf_mapping.hpp``, which decides which key wins): it
reads the same keys with the same precedence and reports the same messages. What the values mean (rope type
names, defaults such as ``beta_fast`` 32, the implied YaRN/LongRoPE factor, every range check) is decided once,
in C++, by posenc's ``rope_params`` mapping (``include/posenc/rope_params.hpp``), which the extension module
calls with the key names collected here, so an error names the key of the file.
"""

from __future__ import annotations

import json
import math
import numbers
from typing import Any, Dict, List, Optional, Tuple

FN = "rope_config_from_hf"


class _Key:
    """One key as read: absent, a value, or an error message (reported only if the mapping uses the key)."""

    __slots__ = ("name", "value", "error")

    def __init__(self, name: str, value: Any = None, error: Optional[str] = None) -> None:
        self.name = name
        self.value = value
        self.error = error

    def given(self) -> bool:
        return self.value is not None or self.error is not None


def _shown(v: Any) -> str:
    """A value for a message: its JSON text, shortened (as hf_config.hpp's ``shown``)."""
    try:
        s = json.dumps(v, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        s = repr(v)
    return s[:61] + "..." if len(s) > 64 else s


def _type_name(v: Any) -> str:
    """The JSON type name nlohmann/json reports."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, numbers.Real):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, dict):
        return "object"
    if isinstance(v, (list, tuple)):
        return "array"
    return type(v).__name__


def _is_number(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _as_integer(v: Any) -> Optional[int]:
    """Integers; a float with an integral value (4096.0) too, as Python's int() of a config would."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        return None
    if isinstance(v, numbers.Integral):
        i = int(v)
        return i if -(2**63) <= i < 2**63 else None
    d = float(v)
    if math.isfinite(d) and math.floor(d) == d and abs(d) < 2.0**62:
        return int(d)
    return None


def fail(function: str, message: str) -> ValueError:
    return ValueError(f"posenc::{function}: {message}")


class Section:
    """A dict and the dotted name its keys are reported under ("" for the root, "rope_scaling.", ...)."""

    def __init__(self, obj: Optional[Dict[str, Any]], prefix: str, function: str = FN) -> None:
        self.obj = obj
        self.prefix = prefix
        self.function = function

    def name(self, key: str) -> str:
        return self.prefix + key

    def get(self, key: str) -> Any:
        """The value, or None when the key is absent or null (Hugging Face treats both as unset)."""
        return None if self.obj is None else self.obj.get(key)

    def _bad(self, key: str, message: str) -> _Key:
        return _Key(self.name(key), error=f"posenc::{self.function}: {self.name(key)}{message}")

    def number(self, key: str) -> _Key:
        v = self.get(key)
        if v is None:
            return _Key(self.name(key))
        if not _is_number(v):
            return self._bad(key, f"={_shown(v)} must be a number, got {_type_name(v)}")
        return _Key(self.name(key), float(v))

    def positive(self, key: str) -> _Key:
        v = self.get(key)
        if v is None:
            return _Key(self.name(key))
        i = _as_integer(v)
        if i is None:
            return self._bad(key, f"={_shown(v)} must be an integer")
        if i <= 0:
            return self._bad(key, f"={i} must be > 0")
        return _Key(self.name(key), i)

    def boolean(self, key: str) -> _Key:
        v = self.get(key)
        if v is None:
            return _Key(self.name(key))
        if not isinstance(v, bool):
            return self._bad(key, f"={_shown(v)} must be true or false")
        return _Key(self.name(key), v)

    def string(self, key: str) -> _Key:
        v = self.get(key)
        if v is None:
            return _Key(self.name(key))
        if not isinstance(v, str):
            return self._bad(key, f"={_shown(v)} must be a string, got {_type_name(v)}")
        return _Key(self.name(key), v)

    def numbers(self, key: str) -> _Key:
        v = self.get(key)
        if v is None:
            return _Key(self.name(key))
        if not isinstance(v, (list, tuple)):
            return self._bad(key, f"={_shown(v)} must be an array of numbers")
        out: List[float] = []
        for i, e in enumerate(v):
            if not _is_number(e):
                return self._bad(key, f"[{i}]={_shown(e)} must be a number")
            out.append(float(e))
        return _Key(self.name(key), out)

    def integers(self, key: str) -> _Key:
        v = self.get(key)
        if v is None:
            return _Key(self.name(key))
        if not isinstance(v, (list, tuple)):
            return self._bad(key, f"={_shown(v)} must be an array of integers")
        out: List[int] = []
        for i, e in enumerate(v):
            n = _as_integer(e)
            if n is None or n < 0:
                return self._bad(key, f"[{i}]={_shown(e)} must be an integer >= 0")
            out.append(n)
        return _Key(self.name(key), out)

    def strings(self, key: str, out: List[str]) -> None:
        v = self.get(key)
        if isinstance(v, (list, tuple)):
            out.extend(e for e in v if isinstance(e, str))

    def object_or_null(self, key: str) -> Optional[Dict[str, Any]]:
        v = self.get(key)
        if v is not None and not isinstance(v, dict):
            raise fail(self.function, f"{self.name(key)}={_shown(v)} must be an object or null, got {_type_name(v)}")
        return v


def use(key: _Key) -> Any:
    """The key's value; its error if it has one (the first error among the keys used is the result)."""
    if key.error is not None:
        raise ValueError(key.error)
    return key.value


def scaling_keys(d: Section) -> Dict[str, _Key]:
    """The keys of a scaling dict (`rope_parameters` / `rope_scaling`), typed as hf_config.hpp reads them."""
    return {
        "partial_rotary_factor": d.number("partial_rotary_factor"),
        "rope_theta": d.number("rope_theta"),
        "rope_type": d.string("rope_type"),
        "type": d.string("type"),
        "original_max_position_embeddings": d.positive("original_max_position_embeddings"),
        "factor": d.number("factor"),
        "beta_fast": d.number("beta_fast"),
        "beta_slow": d.number("beta_slow"),
        "mscale": d.number("mscale"),
        "mscale_all_dim": d.number("mscale_all_dim"),
        "attention_factor": d.number("attention_factor"),
        "low_freq_factor": d.number("low_freq_factor"),
        "high_freq_factor": d.number("high_freq_factor"),
        "truncate": d.boolean("truncate"),
        "short_factor": d.numbers("short_factor"),
        "long_factor": d.numbers("long_factor"),
        "mrope_section": d.integers("mrope_section"),
        "mrope_interleaved": d.boolean("mrope_interleaved"),
    }


def scaling_params(dict_keys: Dict[str, _Key], params: Dict[str, Any], names: Dict[str, str]) -> None:
    """The scaling keys into rope_params fields (and the names messages give them), in the order they are used."""
    for field in ("factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim", "attention_factor"):
        k = dict_keys[field]
        params[field] = use(k)
        names[field] = k.name
    params["truncate"] = True if use(dict_keys["truncate"]) is None else dict_keys["truncate"].value
    for field in ("low_freq_factor", "high_freq_factor"):
        k = dict_keys[field]
        params[field] = use(k)
        names[field] = k.name
    for field in ("short_factor", "long_factor", "mrope_section"):
        k = dict_keys[field]
        params[field] = use(k) or []
        names[field] = k.name
    params["mrope_interleaved"] = bool(use(dict_keys["mrope_interleaved"]))


def _is_per_layer(d: Dict[str, Any]) -> bool:
    """v5 per-layer rope_parameters: a non-empty object whose values are all objects or null."""
    if not d or "rope_type" in d or "type" in d:
        return False
    return all(isinstance(v, dict) or v is None for v in d.values())


def _is_deepseek(model_type: str, architectures: List[str]) -> bool:
    if model_type in ("deepseek_v2", "deepseek_v3"):
        return True
    return any(a.startswith("DeepseekV2") or a.startswith("DeepseekV3") for a in architectures)


def hf_params(
    root: Any,
    *,
    style: Optional[str] = None,
    yarn_variant: Optional[str] = None,
    dynamic_policy: str = "per_length",
    longrope_policy: str = "per_length",
    layer_type: Optional[str] = None,
    use_text_config: bool = True,
) -> Tuple[Dict[str, Any], Dict[str, str], Dict[str, Any]]:
    """A parsed config.json -> (rope_params fields, their key names, model facts), as posenc's C++ loader.

    Raises ValueError with the C++ loader's message for a config it would reject while finding keys; what
    the values mean is checked by the C++ mapping the caller runs next.
    """
    if not isinstance(root, dict):
        raise fail(FN, f"the config must be a JSON object, got {_type_name(root)}")
    root_s = Section(root, "")
    text = root_s.object_or_null("text_config") if use_text_config else None
    top = Section(text if text is not None else root, "text_config." if text is not None else "")

    model_type_key = top.string("model_type")
    if not model_type_key.given() and text is not None:
        model_type_key = root_s.string("model_type")
    model_type = use(model_type_key) or ""
    architectures: List[str] = []
    top.strings("architectures", architectures)
    if text is not None:
        root_s.strings("architectures", architectures)

    rs = top.object_or_null("rope_scaling")
    rp = top.object_or_null("rope_parameters")
    if rs is not None and rp is not None and rs != rp:
        raise fail(FN, f"{top.name('rope_scaling')} and {top.name('rope_parameters')} are both given and differ; keep one")
    dict_s = Section(rp if rp is not None else rs, top.name("rope_parameters" if rp is not None else "rope_scaling") + ".")
    if dict_s.obj is not None and _is_per_layer(dict_s.obj):
        prefix = dict_s.prefix
        layers = ", ".join(dict_s.obj.keys())
        if not layer_type:
            raise fail(FN, f"{prefix[:-1]} is per layer type ({layers}): set hf_options::layer_type")
        if layer_type not in dict_s.obj:
            raise fail(FN, f'hf_options::layer_type="{layer_type}" is not in {prefix[:-1]} ({layers})')
        dict_s = Section(dict_s.obj[layer_type], prefix + layer_type + ".")

    m = {
        key: getattr(top, kind)(key)
        for key, kind in (
            ("num_attention_heads", "positive"),
            ("num_key_value_heads", "positive"),
            ("max_position_embeddings", "positive"),
            ("qk_rope_head_dim", "positive"),
            ("head_dim", "positive"),
            ("hidden_size", "positive"),
            ("partial_rotary_factor", "number"),
            ("rotary_pct", "number"),
            ("rope_theta", "number"),
            ("rotary_emb_base", "number"),
            ("rope_interleave", "boolean"),
            ("original_max_position_embeddings", "positive"),
        )
    }
    d = scaling_keys(dict_s)

    # --- detail::hf::map_config
    params: Dict[str, Any] = {}
    names: Dict[str, str] = {"function": FN}
    facts: Dict[str, Any] = {"model_type": model_type}

    heads = use(m["num_attention_heads"])
    facts["num_attention_heads"] = heads or 0
    kv = use(m["num_key_value_heads"])
    facts["num_key_value_heads"] = kv if kv is not None else facts["num_attention_heads"]
    facts["max_position_embeddings"] = use(m["max_position_embeddings"]) or 0
    qk_rope = use(m["qk_rope_head_dim"])
    explicit_head = use(m["head_dim"])
    if qk_rope is not None:
        head_dim = qk_rope
    elif explicit_head is not None:
        head_dim = explicit_head
    else:
        width = use(m["hidden_size"])
        why = "the head dimension: no head_dim in the config"
        if width is None:
            raise fail(FN, f"{m['hidden_size'].name} is missing (required for {why})")
        if not heads:
            raise fail(FN, f"{m['num_attention_heads'].name} is missing (required for {why})")
        head_dim = width // heads
        if head_dim == 0:
            raise fail(FN, f"{m['hidden_size'].name}={width} is smaller than num_attention_heads={heads}")
    params["head_dim"] = head_dim
    names["head_dim"] = "head_dim"

    prf = (
        d["partial_rotary_factor"]
        if d["partial_rotary_factor"].given()
        else m["partial_rotary_factor"] if m["partial_rotary_factor"].given() else m["rotary_pct"]
    )
    names["partial_rotary_factor"] = prf.name
    prf_value = use(prf)
    params["partial_rotary_factor"] = facts["partial_rotary_factor"] = 1.0 if prf_value is None else prf_value

    theta = use(d["rope_theta"])
    if theta is None:
        theta = use(m["rope_theta"])
    if theta is None:
        theta = use(m["rotary_emb_base"])
    params["base"] = 10000.0 if theta is None else theta

    deepseek = _is_deepseek(model_type, architectures)
    interleave = deepseek and (use(m["rope_interleave"]) is not False)
    params["style"] = style if style is not None else ("interleaved" if interleave else "half_split")

    type_key = d["rope_type"] if d["rope_type"].given() else d["type"]
    type_value = use(type_key)
    params["scaling_type"] = "default" if type_value is None else type_value
    names["scaling_type"] = type_key.name
    names["scaling_label"] = "rope_type"

    names["original_max_positions"] = d["original_max_position_embeddings"].name
    m1 = use(m["original_max_position_embeddings"])
    if m1 is not None:
        params["original_max_positions"] = m1
        names["original_max_positions"] = m["original_max_position_embeddings"].name
    else:
        m2 = use(d["original_max_position_embeddings"])
        if m2 is not None:
            params["original_max_positions"] = m2
    params["max_position_embeddings"] = facts["max_position_embeddings"]
    names["max_position_embeddings"] = m["max_position_embeddings"].name

    scaling_params(d, params, names)
    params["yarn_variant"] = yarn_variant if yarn_variant is not None else ("deepseek" if deepseek else "yarn")
    params["dynamic_policy"] = dynamic_policy
    params["longrope_policy"] = longrope_policy
    facts["mrope_section"] = list(params["mrope_section"])
    facts["mrope_interleaved"] = params["mrope_interleaved"]
    return params, names, facts
