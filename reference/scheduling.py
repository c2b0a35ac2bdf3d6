"""What a continuous-batching scheduler's choices cost: iterations to prefill a prompt under a
token budget, the roofline time of a mixed prefill/decode step, and the batch a CUDA graph pads to.

Sources:

- vLLM documentation, *Optimization and Tuning* (V1), "Chunked Prefill": the scheduler batches
  every running decode first (one token each) and fills what is left of ``max_num_batched_tokens``
  with prefill tokens, chunking a prompt that does not fit. Smaller budgets give better inter-token
  latency, larger ones better time to first token.
- Agrawal et al. 2024, *Taming Throughput-Latency Tradeoff in LLM Inference with Sarathi-Serve*
  (OSDI 2024): chunked prefills and stall-free hybrid batches of decodes plus one prefill chunk
  under a token budget; a step's time is ``max(T_math, T_mem)``.
- Williams et al. 2009, *Roofline*: a kernel takes at least ``max(FLOPs / peak, bytes /
  bandwidth)``.
- vLLM ``CompilationConfig.max_cudagraph_capture_size`` (vllm/config/compilation.py): without an
  explicit list, CUDA graphs are captured for ``[1, 2, 4] + range(8, 256, 8) + range(256, max + 1,
  16)`` tokens, ``max`` defaulting to ``min(2 x max_num_seqs, 512)``; a batch is padded up to the
  next captured size, and a larger one runs without a graph.

Pure Python; no torch. Each function validates its inputs and raises ``ValueError`` outside their
domain.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from inferview.reference import estimators as est
from inferview.reference.presets import get_gpu
from inferview.reference.quantity import Params, Quantity

__all__ = [
    "QUANTITIES",
    "cuda_graph_capture_sizes",
    "cuda_graph_padded_batch",
    "mixed_step_seconds",
    "prefill_iterations",
]


def _int_at_least(value: Any, name: str, low: int) -> int:
    if isinstance(value, bool) or float(value) != int(float(value)) or int(float(value)) < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(float(value))


def prefill_iterations(prompt_len: int, token_budget: int, running_decodes: int = 0) -> int:
    """Scheduler iterations needed to prefill a ``prompt_len``-token prompt when each iteration
    holds ``token_budget`` tokens and ``running_decodes`` of them go first to the running decodes
    (one token each): ``ceil(prompt_len / (token_budget - running_decodes))``.

    Assumes the number of running decodes stays the same and this prompt is the only prefill.
    """
    n = _int_at_least(prompt_len, "prompt_len", 1)
    budget = _int_at_least(token_budget, "token_budget", 1)
    decodes = _int_at_least(running_decodes, "running_decodes", 0)
    left = budget - decodes
    if left < 1:
        raise ValueError(f"the decodes ({decodes}) take the whole token budget ({budget}): the "
                         "prompt never starts")
    return math.ceil(n / left)


def mixed_step_flops(config: Mapping[str, Any], decodes: int, context_len: int, chunk: int,
                     prefix: int = 0) -> float:
    """FLOPs of one step holding ``decodes`` decode tokens (each over ``context_len`` cached
    tokens) and one prefill chunk of ``chunk`` tokens after ``prefix`` already-prefilled tokens:
    the decodes' step FLOPs, ``2 x matmul parameters x chunk`` for the chunk's linear layers, and
    the chunk's causal attention over the prefix and itself."""
    decodes = _int_at_least(decodes, "decodes", 0)
    chunk = _int_at_least(chunk, "chunk", 0)
    prefix = _int_at_least(prefix, "prefix", 0)
    context_len = _int_at_least(context_len, "context_len", 0)
    flops = est.decode_step_flops(config, decodes, context_len) if decodes else 0.0
    if chunk:
        flops += 2.0 * est.param_counts(config).matmul * chunk
        flops += float(est.attention_flops(config, prefix + chunk, 1, causal=True)
                       - (est.attention_flops(config, prefix, 1, causal=True) if prefix else 0))
    return flops


def mixed_step_bytes(config: Mapping[str, Any], decodes: int, context_len: int, chunk: int,
                     prefix: int = 0, weight_dtype: str = "bf16", kv_dtype: str = "bf16") -> float:
    """Bytes one mixed step moves: the weights its ``decodes + chunk`` tokens touch (read once, for
    MoE the experts they are expected to reach), each decode's KV cache of ``context_len`` tokens,
    and the chunk's cache of ``prefix + chunk`` tokens (the prefix read, its own written)."""
    decodes = _int_at_least(decodes, "decodes", 0)
    chunk = _int_at_least(chunk, "chunk", 0)
    prefix = _int_at_least(prefix, "prefix", 0)
    context_len = _int_at_least(context_len, "context_len", 0)
    tokens = decodes + chunk
    if tokens < 1:
        raise ValueError("a step needs at least one decode or one prefill token")
    weights = est.decode_step_bytes(config, tokens, 0, weight_dtype, kv_dtype)
    kv = est.kv_cache_bytes(config, context_len, decodes, kv_dtype) if decodes and context_len else 0
    if chunk:
        kv += est.kv_cache_bytes(config, prefix + chunk, 1, kv_dtype)
    return float(weights + kv)


def mixed_step_seconds(config: Mapping[str, Any], peak_flops: float, bandwidth: float,
                       decodes: int, context_len: int, chunk: int, prefix: int = 0,
                       weight_dtype: str = "bf16", kv_dtype: str = "bf16", gpus: int = 1) -> float:
    """Roofline lower bound on one mixed step's time, ``max(FLOPs / (gpus x peak), bytes / (gpus
    x bandwidth))``, with the work split evenly over ``gpus`` tensor-parallel GPUs and their
    communication ignored."""
    g = _int_at_least(gpus, "gpus", 1)
    if peak_flops <= 0 or bandwidth <= 0:
        raise ValueError("peak_flops and bandwidth must be positive")
    f = mixed_step_flops(config, decodes, context_len, chunk, prefix)
    b = mixed_step_bytes(config, decodes, context_len, chunk, prefix, weight_dtype, kv_dtype)
    return max(f / (g * peak_flops), b / (g * bandwidth))


def cuda_graph_capture_sizes(max_capture_size: int = 512) -> list[int]:
    """vLLM's default CUDA-graph capture sizes up to ``max_capture_size``: 1, 2, 4, multiples of 8
    below 256, then multiples of 16 up to the maximum."""
    top = _int_at_least(max_capture_size, "max_capture_size", 1)
    sizes = [1, 2, 4, *range(8, 256, 8), *range(256, top + 1, 16)]
    return [s for s in sizes if s <= top]


def cuda_graph_padded_batch(batch: int, max_capture_size: int = 512) -> int:
    """The captured size a batch of ``batch`` tokens runs at: the smallest capture size that holds
    it. Raises ``ValueError`` above the largest size, where the step runs without a graph."""
    b = _int_at_least(batch, "batch", 1)
    for size in cuda_graph_capture_sizes(max_capture_size):
        if size >= b:
            return size
    raise ValueError(f"batch {b} exceeds the largest captured size; it runs eagerly, unpadded")


def _mixed_step(c: dict[str, Any] | None, p: Params) -> float:
    assert c is not None
    g = get_gpu(str(p["gpu"]))
    return mixed_step_seconds(c, g.bf16_flops, g.bandwidth_bytes_per_s, int(p["decodes"]),
                              int(p["context_len"]), int(p["chunk"]), int(p["prefix"]),
                              str(p["weight_dtype"]), str(p["dtype"]), int(p["tp"]))


QUANTITIES: list[Quantity] = [
    Quantity(
        "chunked_prefill_iterations", "count",
        "ceil(prompt_len / (token_budget - running_decodes)): the decodes take one token each of "
        "the budget first, the prompt gets the rest of every step (vLLM V1; Sarathi-Serve)",
        lambda c, p: float(prefill_iterations(int(p["prompt_len"]), int(p["token_budget"]),
                                              int(p["decodes"]))),
        needs_model=False, required=("prompt_len", "token_budget"), defaults={"decodes": 0},
    ),
    Quantity(
        "mixed_step_seconds", "seconds",
        "max(FLOPs / (tp x peak), bytes / (tp x bandwidth)) for one step of `decodes` decode "
        "tokens plus a prefill chunk: FLOPs = decode-step FLOPs + 2 x matmul params x chunk + the "
        "chunk's causal attention; bytes = weights once + the decodes' KV caches + the chunk's",
        _mixed_step,
        required=("gpu", "decodes", "chunk"),
        defaults={"context_len": 0, "prefix": 0, "weight_dtype": "bf16", "dtype": "bf16", "tp": 1},
    ),
    Quantity(
        "cuda_graph_padded_batch", "count",
        "the smallest captured size >= batch, captured sizes 1, 2, 4, multiples of 8 below 256, "
        "then multiples of 16 up to max_capture_size (vLLM's default list)",
        lambda c, p: float(cuda_graph_padded_batch(int(p["batch"]), int(p["max_capture_size"]))),
        needs_model=False, required=("batch",), defaults={"max_capture_size": 512},
    ),
]
"""The scheduling quantities numeric drills can ask for."""
