"""What parallelism across GPUs communicates and wastes: tensor-parallel all-reduces, the ring
all-reduce's traffic per GPU, the pipeline bubble and the expert-parallel all-to-all.

Sources:

- Shoeybi et al. 2019, *Megatron-LM: Training Multi-Billion Parameter Language Models Using Model
  Parallelism* (Section 3, Figures 3 and 4): the MLP's first weight is split by columns and the
  second by rows, attention is split by heads, and each layer needs one all-reduce after attention
  and one after the MLP in the forward pass. Each all-reduces one ``hidden_size`` activation per
  token, so a layer all-reduces ``2 x hidden_size x bytes`` per token.
- NVIDIA nccl-tests, ``doc/PERFORMANCE.md`` (AllReduce): an all-reduce of ``S`` bytes over ``n``
  ranks moves ``2 (n - 1) / n x S`` bytes through each rank's link at best (the bus-bandwidth
  correction), which a ring (reduce-scatter then all-gather) achieves.
- Huang et al. 2019, *GPipe* (Section 2.2): with ``p`` stages and ``m`` micro-batches the bubble
  is ``(p - 1) / (m + p - 1)`` of the schedule. (Narayanan et al. 2021 write the same bubble as
  ``(p - 1) / m`` of the ideal time.)
- DeepSeek-AI 2024, *DeepSeek-V3 Technical Report* (Sections 2.1.2 and 3.2) and DeepSeek's
  inference-system overview (2025): each token is dispatched to its ``num_experts_per_tok`` routed
  experts and their outputs combined back; DeepSeek dispatches in FP8 and combines in BF16.

Pure Python; no torch. Each function validates its inputs and raises ``ValueError`` outside their
domain.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inferview.reference.dtypes import dtype_bits
from inferview.reference.quantity import Quantity

__all__ = [
    "QUANTITIES",
    "ep_alltoall_bytes_per_token_layer",
    "pipeline_bubble_fraction",
    "ring_allreduce_bytes_per_gpu",
    "tp_allreduce_bytes_per_token_layer",
    "tp_decode_step_bytes_per_gpu",
]

ALLREDUCES_PER_LAYER = 2
"""Forward all-reduces per transformer layer under Megatron tensor parallelism (attention, MLP)."""


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or int(value) != value or int(value) < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def _hidden(config: Mapping[str, Any]) -> int:
    return _positive_int(config["hidden_size"], "hidden_size")


def _layers(config: Mapping[str, Any]) -> int:
    return _positive_int(config["num_hidden_layers"], "num_hidden_layers")


def tp_allreduce_bytes_per_token_layer(config: Mapping[str, Any], dtype: str = "bf16") -> float:
    """Bytes a tensor-parallel layer all-reduces per token: ``2 x hidden_size x bytes``.

    One all-reduce follows the attention block's row-parallel output projection and one the MLP's
    row-parallel down projection; each sums a ``hidden_size`` vector per token. The figure does not
    depend on the TP degree. Example: Llama-3-70B (hidden 8192), bf16: 2 x 8192 x 2 = 32 KiB.
    """
    return ALLREDUCES_PER_LAYER * _hidden(config) * dtype_bits(dtype) / 8


def ring_allreduce_bytes_per_gpu(message_bytes: float, gpus: int) -> float:
    """Bytes each GPU sends (and receives) in a bandwidth-optimal all-reduce of ``message_bytes``
    over ``gpus`` ranks: ``2 (n - 1) / n x S``; 0 for one GPU."""
    n = _positive_int(gpus, "gpus")
    if message_bytes < 0:
        raise ValueError(f"message_bytes must be >= 0, got {message_bytes!r}")
    return 2 * (n - 1) / n * message_bytes


def tp_decode_step_bytes_per_gpu(config: Mapping[str, Any], batch: int, tp: int,
                                 dtype: str = "bf16") -> float:
    """Bytes each GPU sends for the all-reduces of one decode step of ``batch`` sequences at
    tensor-parallel degree ``tp``: ``layers x 2 (n - 1) / n x (2 x hidden x bytes x batch)``.

    Example: Llama-3-70B, batch 1, TP 8, bf16: 80 x 1.75 x 32 KiB = 4.375 MiB.
    """
    b = _positive_int(batch, "batch")
    per_step = _layers(config) * tp_allreduce_bytes_per_token_layer(config, dtype) * b
    return ring_allreduce_bytes_per_gpu(per_step, tp)


def pipeline_bubble_fraction(stages: int, microbatches: int) -> float:
    """Idle fraction of a GPipe schedule with ``stages`` stages and ``microbatches`` micro-batches:
    ``(p - 1) / (m + p - 1)``. Example: p = 4, m = 8: 3 / 11 = 0.273."""
    p = _positive_int(stages, "stages")
    m = _positive_int(microbatches, "microbatches")
    return (p - 1) / (m + p - 1)


def ep_alltoall_bytes_per_token_layer(config: Mapping[str, Any], dispatch_dtype: str = "fp8",
                                      combine_dtype: str = "bf16") -> float:
    """Bytes an expert-parallel MoE layer moves per token at most: the hidden state dispatched to
    each of its ``num_experts_per_tok`` routed experts plus each expert's output combined back,
    ``top_k x hidden x (dispatch bytes + combine bytes)``. Copies routed to experts on the token's
    own GPU stay local, so real traffic is lower. Example: DeepSeek-V3 (top 8 of 256, hidden 7168),
    FP8 dispatch and BF16 combine: 8 x 7168 x 3 = 168 KiB.
    """
    k = _positive_int(config.get("num_experts_per_tok") or 0, "num_experts_per_tok")
    per_value = (dtype_bits(dispatch_dtype) + dtype_bits(combine_dtype)) / 8
    return k * _hidden(config) * per_value


QUANTITIES: list[Quantity] = [
    Quantity(
        "tp_allreduce_bytes_per_token_layer", "bytes",
        "2 all-reduces per layer (after attention, after the MLP) x hidden_size x bytes per value "
        "(Shoeybi et al. 2019, Megatron-LM)",
        lambda c, p: tp_allreduce_bytes_per_token_layer(c, str(p["dtype"])),
        defaults={"dtype": "bf16"},
    ),
    Quantity(
        "tp_decode_step_bytes_per_gpu", "bytes",
        "layers x 2 (n - 1) / n x (2 x hidden_size x bytes x batch): what each GPU sends for one "
        "decode step's all-reduces (Megatron-LM; nccl-tests PERFORMANCE.md)",
        lambda c, p: tp_decode_step_bytes_per_gpu(c, int(p["batch"]), int(p["tp"]), str(p["dtype"])),
        required=("tp",), defaults={"batch": 1, "dtype": "bf16"},
    ),
    Quantity(
        "pipeline_bubble_fraction", "ratio",
        "(p - 1) / (m + p - 1) for p stages and m micro-batches (Huang et al. 2019, GPipe)",
        lambda c, p: pipeline_bubble_fraction(int(p["stages"]), int(p["microbatches"])),
        needs_model=False, required=("stages", "microbatches"),
    ),
    Quantity(
        "ep_alltoall_bytes_per_token_layer", "bytes",
        "num_experts_per_tok x hidden_size x (dispatch bytes + combine bytes), an upper bound "
        "(DeepSeek-V3 Technical Report; DeepSeek inference-system overview)",
        lambda c, p: ep_alltoall_bytes_per_token_layer(c, str(p["dispatch_dtype"]),
                                                       str(p["combine_dtype"])),
        defaults={"dispatch_dtype": "fp8", "combine_dtype": "bf16"},
    ),
]
"""The parallelism quantities numeric drills ask for (registered in ``formulas``)."""

