"""The shape of a model as its Hugging Face ``config.json`` gives it: heads, head size, KV heads,
latent attention, which layers slide or attend in chunks, and which hold experts.

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




LAYER_KINDS = ("full_attention", "sliding_attention", "chunked_attention")
"""Attention kinds a layer can have: all earlier tokens, the last ``sliding_window`` tokens, or the
tokens of its own ``attention_chunk_size`` chunk (Llama 4)."""

_LLAMA4 = ("llama4", "llama4_text")


def _llama4_kinds(config: Config, n: int) -> list[str]:
    """Llama 4: RoPE layers attend within chunks, NoPE layers globally. ``no_rope_layers`` holds 1
    for a RoPE layer; without it every ``no_rope_layer_interval``-th layer (default 4, 1-based)
    is NoPE, as transformers' ``Llama4TextConfig`` builds it."""
    flags = config.get("no_rope_layers")
    if not flags:
        interval = _opt_int(config, "no_rope_layer_interval") or 4
        flags = [int((i + 1) % interval != 0) for i in range(n)]
    if len(flags) != n:
        raise ValueError(f"no_rope_layers has {len(flags)} entries for {n} layers")
    return ["chunked_attention" if f else "full_attention" for f in flags]


def layer_kinds(config: Config) -> list[str]:
    """Each layer's attention kind: ``"full_attention"``, ``"sliding_attention"`` or
    ``"chunked_attention"``.

    ``layer_types`` decides when present. Without it and with a ``sliding_window``, every layer
    slides (Mistral), except in configs that encode the layout in other keys, as Hugging Face
    transformers reads them: Qwen2's ``use_sliding_window: true`` with ``max_window_layers``
    (layers ``i >= max_window_layers`` slide), and ``sliding_window_pattern`` (Gemma 3, Cohere2;
    by default 2 for ``model_type`` gemma2 and 6 for gemma3): layer ``i`` is global when
    ``(i + 1) % pattern == 0``.
    ``use_sliding_window: false`` or a null window makes every sliding layer full. Llama 4 (an
    ``attention_chunk_size`` and ``model_type`` llama4): chunked RoPE layers and global NoPE
    layers, from ``no_rope_layers`` (see ``_llama4_kinds``); a chunked layer without a chunk size
    attends fully.
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
            if t not in LAYER_KINDS:
                raise ValueError(f"unknown layer type {t!r}")
        kinds = list(types)
    elif config.get("model_type") in _LLAMA4 and config.get("attention_chunk_size"):
        kinds = _llama4_kinds(config, n)
    elif window is not None:
        pattern = _opt_int(config, "sliding_window_pattern")
        if pattern is None:
            # transformers' defaults when config.json leaves the key out (Gemma 3's usually does)
            pattern = {"gemma2": 2, "gemma3": 6, "gemma3_text": 6}.get(str(config.get("model_type")))
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
        # a sliding layer without a window caches everything
        kinds = ["full_attention" if k == "sliding_attention" else k for k in kinds]
    if not config.get("attention_chunk_size"):
        kinds = ["full_attention" if k == "chunked_attention" else k for k in kinds]
    return kinds


def layer_span(config: Config, kind: str) -> int | None:
    """The most tokens a layer of ``kind`` attends to: ``sliding_window`` for a sliding layer,
    ``attention_chunk_size`` for a chunked one, ``None`` (unbounded) for a full one."""
    if kind == "sliding_attention":
        return _int(config, "sliding_window")
    if kind == "chunked_attention":
        return _int(config, "attention_chunk_size")
    return None


def tokens_cached(config: Config, kind: str, seq_len: int) -> int:
    """Tokens a layer of ``kind`` must keep for a sequence of ``seq_len``: ``min(seq_len, span)``.

    For a chunked layer that is the most it ever holds, a whole chunk: the tokens of the current
    chunk, ``(seq_len - 1) % chunk + 1``, are what attention reads, but an engine reserves the
    chunk's room (as it reserves the window's for a sliding layer).
    """
    span = layer_span(config, kind)
    return seq_len if span is None else min(seq_len, span)


def moe_layers(config: Config, num_experts: int) -> list[bool]:
    """Which layers hold experts, as each family's transformers code decides:

    - DeepSeek-V2/V3, Kimi K2: layer ``i`` is MoE when ``i >= first_k_dense_replace`` and
      ``i % moe_layer_freq == 0``;
    - Llama 4: the layers in ``moe_layers``, else every ``interleave_moe_layer_step``-th
      (``range(step - 1, n, step)``: Maverick's odd layers, every layer of Scout);
    - Qwen2/3-MoE: not in ``mlp_only_layers`` and ``(i + 1) % decoder_sparse_step == 0``;
    - otherwise (Mixtral, gpt-oss) every layer, when the config has experts at all.
    """
    n = _int(config, "num_hidden_layers")
    if not num_experts:
        return [False] * n
    if "first_k_dense_replace" in config or "moe_layer_freq" in config:
        first = _opt_int(config, "first_k_dense_replace") or 0
        freq = _opt_int(config, "moe_layer_freq") or 1
        return [i >= first and i % freq == 0 for i in range(n)]
    if config.get("model_type") in _LLAMA4 or "interleave_moe_layer_step" in config:
        listed = config.get("moe_layers")
        if listed is None:
            step = _opt_int(config, "interleave_moe_layer_step") or 1
            listed = range(step - 1, n, step) if step else []
        chosen = {int(i) for i in listed}
        return [i in chosen for i in range(n)]
    if "decoder_sparse_step" in config or "mlp_only_layers" in config:
        dense = {int(i) for i in config.get("mlp_only_layers") or []}
        step = _opt_int(config, "decoder_sparse_step") or 1
        return [i not in dense and (i + 1) % step == 0 for i in range(n)]
    return [True] * n
