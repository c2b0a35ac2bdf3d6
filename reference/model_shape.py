"""The shape of a model as its Hugging Face ``config.json`` gives it: heads, head size, KV heads,
latent attention, and which layers slide.

Pure Python; no torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Config = Mapping[str, Any]


def _int(config: Config, key: str) -> int:
    if key not in config or config[key] is None:
        raise ValueError(f"config lacks {key!r}")
    v = config[key]
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError(f"config {key!r} must be a non-negative integer, got {v!r}")
    return v


def _opt_int(config: Config, key: str) -> int | None:
    v = config.get(key)
    if v is None:
        return None
    return _int(config, key)


def head_dim(config: Config) -> int:
    """``head_dim`` if given, else ``hidden_size // num_attention_heads``."""
    hd = _opt_int(config, "head_dim")
    if hd is not None:
        return hd
    heads = _int(config, "num_attention_heads")
    if heads == 0:
        raise ValueError("num_attention_heads must be positive")
    return _int(config, "hidden_size") // heads


def num_kv_heads(config: Config) -> int:
    """``num_key_value_heads``, defaulting to ``num_attention_heads`` (MHA)."""
    kv = _opt_int(config, "num_key_value_heads")
    return kv if kv is not None else _int(config, "num_attention_heads")


def is_mla(config: Config) -> bool:
    """Whether the layers use multi-head latent attention (``kv_lora_rank`` set and non-zero)."""
    return bool(config.get("kv_lora_rank"))




def layer_kinds(config: Config) -> list[str]:
    """Each layer's attention kind, ``"full_attention"`` or ``"sliding_attention"``.

    ``layer_types`` decides when present. Without it and with a ``sliding_window``, every layer
    slides (Mistral), except in configs that encode the layout in other keys, as Hugging Face
    transformers reads them: Qwen2's ``use_sliding_window: true`` with ``max_window_layers``
    (layers ``i >= max_window_layers`` slide), and ``sliding_window_pattern`` (Gemma 3, Cohere2;
    2 for ``model_type`` gemma2): layer ``i`` is global when ``(i + 1) % pattern == 0``.
    ``use_sliding_window: false`` or a null window makes every layer full.
    """
    n = _int(config, "num_hidden_layers")
    window = config.get("sliding_window")
    types = config.get("layer_types")
    if types is not None:
        if not isinstance(types, list | tuple):
            raise ValueError(f"layer_types must be a list, got {types!r}")
        if len(types) != n:
            raise ValueError(f"layer_types has {len(types)} entries for {n} layers")
        for t in types:
            if t not in ("full_attention", "sliding_attention"):
                raise ValueError(f"unknown layer type {t!r}")
        kinds = list(types)
    elif window is not None:
        pattern = _opt_int(config, "sliding_window_pattern")
        if pattern is None and config.get("model_type") == "gemma2":
            pattern = 2
        if config.get("use_sliding_window") is True and config.get("max_window_layers") is not None:
            # Qwen2: layers from max_window_layers on slide, the ones below attend fully
            first = _int(config, "max_window_layers")
            kinds = ["sliding_attention" if i >= first else "full_attention" for i in range(n)]
        elif pattern:
            # Gemma 2/3, Cohere2: every pattern-th layer (1-based) is global, the others slide
            kinds = ["full_attention" if (i + 1) % pattern == 0 else "sliding_attention"
                     for i in range(n)]
        else:
            kinds = ["sliding_attention"] * n
    else:
        kinds = ["full_attention"] * n
    if config.get("use_sliding_window") is False or window is None:
        kinds = ["full_attention"] * n  # a sliding layer without a window caches everything
    return kinds
