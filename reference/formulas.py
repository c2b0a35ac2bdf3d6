"""Registry of the quantities numeric drills ask for, each computed by a reference function.

``QUANTITIES[name].compute(config, params)`` returns the exact answer for one rendered drill, where
``config`` is the preset's ``config.json`` dict (``None`` for quantities that need no model) and
``params`` the drill's chosen parameters (``seq_len``, ``batch``, ``dtype``, ``gpu``, ``alpha``...).
Question banks name a quantity in ``NumericQuestion.quantity``; numbers are never typed by hand.

Sources: ``inferview.reference.estimators`` (KV cache, parameters, FLOPs, arithmetic intensity) and
``inferview.reference.speculative_theory`` (Leviathan et al. 2023, Eq. 1 and Theorem 3.8). Pure
Python; no torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inferview.reference import (
    block_formats,
    caching,
    latency,
    long_context,
    lora,
    parallelism,
    sampling,
    scheduling,
    ssm_state,
)
from inferview.reference import estimators as est
from inferview.reference import speculative_theory as spec
from inferview.reference.presets import get_gpu
from inferview.reference.quantity import Params, Quantity


def _gpu_bytes(p: Params) -> int:
    return get_gpu(str(p["gpu"])).memory_bytes


def _weights(c: dict[str, Any], p: Params) -> int:
    return est.weight_bytes(c, str(p["weight_dtype"]))


def _max_ctx(c: dict[str, Any], p: Params) -> float:
    limit = int(p["limit"]) if p.get("limit") else None
    n = est.max_context_length(c, _gpu_bytes(p), _weights(c, p), int(p["batch"]), str(p["dtype"]),
                               limit=limit)
    if n is None:
        raise ValueError("memory never bounds the context for this model (every layer slides)")
    return float(n)


def _decode_time(c: dict[str, Any], p: Params) -> float:
    g = get_gpu(str(p["gpu"]))
    b = est.decode_step_bytes(c, int(p["batch"]), int(p["context_len"]), str(p["weight_dtype"]),
                              str(p["dtype"]))
    return b / g.bandwidth_bytes_per_s


_Q = [
    Quantity(
        "kv_cache_bytes", "bytes",
        "batch x layers x 2 (K and V) x kv_heads x head_dim x bytes_per_value x tokens_cached "
        "(MLA: kv_lora_rank + qk_rope_head_dim values per token and layer; sliding layers cache "
        "min(seq_len, window) tokens)",
        lambda c, p: float(est.kv_cache_bytes(c, int(p["seq_len"]), int(p["batch"]), str(p["dtype"]))),
        required=("seq_len",), defaults={"batch": 1, "dtype": "bf16"},
    ),
    Quantity(
        "kv_bytes_per_token", "bytes/token",
        "layers x 2 x kv_heads x head_dim x bytes_per_value (MLA: layers x (kv_lora_rank + "
        "qk_rope_head_dim) x bytes_per_value)",
        lambda c, p: est.kv_bytes_per_token(c, str(p["dtype"])),
        defaults={"dtype": "bf16"},
    ),
    Quantity(
        "weight_bytes", "bytes", "total parameters x bits per parameter / 8",
        lambda c, p: float(est.weight_bytes(c, str(p["dtype"]))),
        defaults={"dtype": "bf16"},
    ),
    Quantity(
        "total_params", "params",
        "embeddings + layers x (attention + MLP or all experts + router + norms) + output head",
        lambda c, p: float(est.param_counts(c).total),
    ),
    Quantity(
        "moe_total_params", "params",
        "embeddings + attention + every expert in every MoE layer (+ shared experts, dense layers, "
        "routers) + output head",
        lambda c, p: float(est.param_counts(c).total),
    ),
    Quantity(
        "moe_active_params", "params",
        "total - routed experts + (top_k / num_experts) x routed experts, counting the output head "
        "but not the input-embedding lookup",
        lambda c, p: float(est.param_counts(c).active(include_embedding=False)),
    ),
    Quantity(
        "max_batch_size", "count",
        "floor((GPU memory - weight bytes) / KV-cache bytes of one sequence)",
        lambda c, p: float(est.max_batch_size(c, int(p["seq_len"]), _gpu_bytes(p), _weights(c, p),
                                              str(p["dtype"]))),
        required=("seq_len", "gpu"), defaults={"dtype": "bf16", "weight_dtype": "bf16"},
    ),
    Quantity(
        "max_context_tokens", "tokens",
        "(GPU memory - weight bytes) / (batch x KV bytes per token), rounded down",
        _max_ctx,
        required=("gpu",), defaults={"batch": 1, "dtype": "bf16", "weight_dtype": "bf16",
                                     "limit": 0},
    ),
    Quantity(
        "spec_expected_tokens", "tokens",
        "(1 - alpha^(gamma + 1)) / (1 - alpha)  (Leviathan et al. 2023, Eq. 1)",
        lambda c, p: spec.expected_tokens_per_step(float(p["alpha"]), int(p["gamma"])),
        needs_model=False, required=("alpha", "gamma"),
    ),
    Quantity(
        "spec_walltime_factor", "ratio",
        "(1 - alpha^(gamma + 1)) / ((1 - alpha) (gamma c + 1))  (Leviathan et al. 2023, Thm 3.8)",
        lambda c, p: spec.walltime_improvement(float(p["alpha"]), int(p["gamma"]), float(p["c"])),
        needs_model=False, required=("alpha", "gamma", "c"),
    ),
    Quantity(
        "attention_flops", "flops",
        "layers x 2 x heads x (d_qk + d_v) x scored pairs; pairs = T^2 without a mask, T(T+1)/2 "
        "causal (for d_qk = d_v = d, no mask: 4 T^2 d heads per layer)",
        lambda c, p: float(est.attention_flops(c, int(p["seq_len"]), int(p["batch"]),
                                               causal=str(p["causal"]).lower() in ("1", "true", "yes"))),
        required=("seq_len",), defaults={"batch": 1, "causal": "false"},
    ),
    Quantity(
        "attention_matrix_bytes", "bytes",
        "batch x heads x T x T x bytes per element, for one layer's score matrix",
        lambda c, p: float(est.attention_matrix_bytes(c, int(p["seq_len"]), int(p["batch"]),
                                                      str(p["dtype"]))),
        required=("seq_len",), defaults={"batch": 1, "dtype": "fp16"},
    ),
    Quantity(
        "decode_step_flops", "flops",
        "2 x matmul parameters x batch + attention over the cached tokens",
        lambda c, p: est.decode_step_flops(c, int(p["batch"]), int(p["context_len"])),
        defaults={"batch": 1, "context_len": 0},
    ),
    Quantity(
        "decode_arithmetic_intensity", "flop/byte",
        "decode-step FLOPs (2 x params x batch + attention) / bytes moved (weights once + KV cache)",
        lambda c, p: est.decode_arithmetic_intensity(c, int(p["batch"]), int(p["context_len"]),
                                                     str(p["weight_dtype"]), str(p["dtype"])),
        required=("batch",), defaults={"context_len": 0, "weight_dtype": "bf16", "dtype": "bf16"},
    ),
    Quantity(
        "ridge_point", "flop/byte", "peak FLOP/s / memory bandwidth (bytes/s)",
        lambda c, p: est.ridge_point(get_gpu(str(p["gpu"])).bf16_flops,
                                     get_gpu(str(p["gpu"])).bandwidth_bytes_per_s),
        needs_model=False, required=("gpu",),
    ),
    Quantity(
        "decode_step_seconds", "seconds",
        "bytes moved per decode step (weights + KV cache) / memory bandwidth: the memory-bound "
        "lower limit on time per step",
        _decode_time,
        required=("gpu",), defaults={"batch": 1, "context_len": 0, "weight_dtype": "bf16",
                                     "dtype": "bf16"},
    ),
    Quantity(
        "gqa_kv_reduction", "ratio", "num_attention_heads / num_key_value_heads",
        lambda c, p: int(c["num_attention_heads"]) / est.num_kv_heads(c),
    ),
]

# Quantities of other topics live in a module each (``QUANTITIES: list[Quantity]`` there), one line
# per module below.
_Q += block_formats.QUANTITIES
_Q += lora.QUANTITIES
_Q += ssm_state.QUANTITIES
_Q += parallelism.QUANTITIES
_Q += caching.QUANTITIES
_Q += scheduling.QUANTITIES
_Q += latency.QUANTITIES
_Q += long_context.QUANTITIES
_Q += sampling.QUANTITIES

QUANTITIES: dict[str, Quantity] = {q.name: q for q in _Q}
"""Every quantity by name."""


def compute(name: str, config: Mapping[str, Any] | None, params: Params) -> float:
    """``QUANTITIES[name].compute(config, params)`` with a clear error for an unknown name."""
    if name not in QUANTITIES:
        raise KeyError(f"unknown quantity {name!r}; known: {', '.join(QUANTITIES)}")
    return QUANTITIES[name].compute(config, params)
