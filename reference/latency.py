"""Latency metrics and capacity: time per output token, the concurrency a request rate implies,
and the GPUs a memory-bound decode pool needs for a request rate at a TPOT target.

Sources:

- vLLM ``benchmarks/serve.py`` (``vllm bench serve``): per request, ``TPOT = (latency - TTFT) /
  (output_len - 1)``; ITL is the list of gaps between successive tokens, pooled over requests.
- Little 1961, *A Proof for the Queuing Formula L = lambda W*: the mean number in a stable system
  is the arrival rate times the mean time each spends in it.
- Zhong et al. 2024, *DistServe* (OSDI 2024): per-phase SLOs (TTFT for prefill, TPOT for decode)
  and sizing each phase's GPUs for its own SLO.
- Williams et al. 2009, *Roofline*, and Pope et al. 2022, *Efficiently Scaling Transformer
  Inference*: a decode step takes at least ``max(FLOPs / peak, bytes / bandwidth)``, and at
  serving batches the bytes (weights once per step, plus every sequence's KV cache) dominate.

Pure Python; no torch. Each function validates its inputs and raises ``ValueError`` outside their
domain.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from inferview.reference import estimators as est
from inferview.reference.presets import get_gpu
from inferview.reference.quantity import Params, Quantity

__all__ = [
    "QUANTITIES",
    "DecodePlan",
    "concurrent_requests",
    "decode_plan",
    "request_seconds",
    "tpot_seconds",
]


def _positive(value: Any, name: str) -> float:
    v = float(value)
    if not v > 0 or math.isinf(v):
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return v


def _int_at_least(value: Any, name: str, low: int) -> int:
    if isinstance(value, bool) or float(value) != int(float(value)) or int(float(value)) < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(float(value))


def tpot_seconds(e2e_s: float, ttft_s: float, output_tokens: int) -> float:
    """Time per output token of one request: ``(E2E - TTFT) / (N - 1)``, the mean gap after the
    first token (vLLM's benchmark definition)."""
    e2e, ttft = _positive(e2e_s, "e2e_s"), _positive(ttft_s, "ttft_s")
    n = _int_at_least(output_tokens, "output_tokens", 2)
    if e2e < ttft:
        raise ValueError("the end-to-end latency cannot be shorter than the time to first token")
    return (e2e - ttft) / (n - 1)


def request_seconds(ttft_s: float, tpot_s: float, output_tokens: int) -> float:
    """End-to-end time of a request: ``TTFT + (N - 1) x TPOT``."""
    n = _int_at_least(output_tokens, "output_tokens", 1)
    return _positive(ttft_s, "ttft_s") + (n - 1) * _positive(tpot_s, "tpot_s")


def concurrent_requests(qps: float, ttft_s: float, tpot_s: float, output_tokens: int) -> float:
    """Requests in flight on average (Little's law): ``QPS x (TTFT + (N - 1) x TPOT)``."""
    return _positive(qps, "qps") * request_seconds(ttft_s, tpot_s, output_tokens)


@dataclass(frozen=True)
class DecodePlan:
    """A memory-bound decode pool sized for a request rate at a TPOT target."""

    batch: int
    """Sequences each replica decodes per step (the largest both the TPOT target and memory allow)."""
    step_s: float
    """Roofline time of one decode step at that batch."""
    tokens_per_s: float
    """Output tokens per second of one replica: ``batch / step_s``."""
    replicas: int
    """Replicas needed: ``ceil(QPS x output tokens / tokens_per_s)``."""
    gpus: int
    """``replicas x tp``."""
    memory_bound: bool
    """True when the batch is capped by memory for the KV cache, false when by the TPOT target."""


def _step_s(config: Mapping[str, Any], batch: int, context_len: int, weight_dtype: str,
            kv_dtype: str, flops_per_s: float, bytes_per_s: float) -> float:
    flops = est.decode_step_flops(config, batch, context_len)
    moved = est.decode_step_bytes(config, batch, context_len, weight_dtype, kv_dtype)
    return max(flops / flops_per_s, moved / bytes_per_s)


def decode_plan(config: Mapping[str, Any], gpu: str, tp: int, qps: float, output_tokens: int,
                context_len: int, tpot_s: float, weight_dtype: str = "bf16",
                kv_dtype: str = "bf16") -> DecodePlan:
    """GPUs for a decode pool serving ``qps`` requests/s of ``output_tokens`` each at a TPOT
    target, every sequence holding ``context_len`` tokens of cache (the average over its life).

    Each replica is ``tp`` GPUs whose memory and bandwidth add up (tensor-parallel traffic
    ignored). Its batch is the largest ``B`` with ``weights + B x KV per sequence <= tp x memory``
    and a roofline step time ``max(FLOPs / (tp x peak), bytes / (tp x bandwidth)) <= tpot_s``; it
    then makes ``B / step time`` tokens per second. Prefill, activations, framework reservations
    and load peaks are not counted: they are the caller's headroom.
    """
    g = get_gpu(gpu)
    tp = _int_at_least(tp, "tp", 1)
    rate = _positive(qps, "qps")
    n = _int_at_least(output_tokens, "output_tokens", 1)
    ctx = _int_at_least(context_len, "context_len", 1)
    slo = _positive(tpot_s, "tpot_s")
    flops_per_s, bytes_per_s = tp * g.bf16_flops, tp * g.bandwidth_bytes_per_s
    free = tp * g.memory_bytes - est.weight_bytes(config, weight_dtype)
    per_seq = est.kv_cache_bytes(config, ctx, 1, kv_dtype)
    mem_batch = int(free // per_seq) if free > 0 else 0
    if mem_batch < 1:
        raise ValueError(f"one sequence of {ctx} tokens does not fit next to the weights on "
                         f"{tp} x {g.title}")

    def fits(b: int) -> bool:
        return _step_s(config, b, ctx, weight_dtype, kv_dtype, flops_per_s, bytes_per_s) <= slo

    if not fits(1):
        raise ValueError(f"even one sequence misses a TPOT of {slo:g} s on {tp} x {g.title}")
    lo, hi = 1, mem_batch
    while lo < hi:  # largest b in [1, mem_batch] that meets the TPOT target (step time grows with b)
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    step = _step_s(config, lo, ctx, weight_dtype, kv_dtype, flops_per_s, bytes_per_s)
    per_replica = lo / step
    replicas = math.ceil(rate * n / per_replica)
    return DecodePlan(lo, step, per_replica, replicas, replicas * tp, lo == mem_batch)


def _plan(c: dict[str, Any] | None, p: Params) -> float:
    assert c is not None
    plan = decode_plan(c, str(p["gpu"]), int(p["tp"]), float(p["qps"]), int(p["output_tokens"]),
                       int(p["context_len"]), float(p["tpot_ms"]) / 1e3, str(p["weight_dtype"]),
                       str(p["dtype"]))
    return float(plan.gpus)


QUANTITIES: list[Quantity] = [
    Quantity(
        "tpot_seconds", "seconds",
        "(E2E latency - TTFT) / (output tokens - 1), per request (vLLM's benchmark definition)",
        lambda c, p: tpot_seconds(float(p["e2e_s"]), float(p["ttft_s"]), int(p["output_tokens"])),
        needs_model=False, required=("e2e_s", "ttft_s", "output_tokens"),
    ),
    Quantity(
        "concurrent_requests", "count",
        "Little's law: L = QPS x W, with W = TTFT + (output tokens - 1) x TPOT",
        lambda c, p: concurrent_requests(float(p["qps"]), float(p["ttft_s"]), float(p["tpot_s"]),
                                         int(p["output_tokens"])),
        needs_model=False, required=("qps", "ttft_s", "tpot_s", "output_tokens"),
    ),
    Quantity(
        "decode_gpus_for_qps", "count",
        "tp x ceil(QPS x output tokens / (B / step time)), B the largest batch with weights + B x "
        "KV(context) <= tp x memory and roofline step time max(FLOPs / (tp x peak), bytes / "
        "(tp x bandwidth)) <= TPOT target; prefill, TP traffic and headroom not counted",
        _plan,
        required=("gpu", "qps", "output_tokens", "context_len", "tpot_ms"),
        defaults={"tp": 1, "weight_dtype": "bf16", "dtype": "bf16"},
    ),
]
"""The latency and capacity quantities numeric drills can ask for."""
