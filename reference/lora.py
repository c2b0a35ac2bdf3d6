"""The size of a LoRA adapter on a dense decoder: what a multi-LoRA server keeps per adapter.

LoRA (Hu et al. 2021, *LoRA: Low-Rank Adaptation of Large Language Models*) adds to a frozen
weight ``W`` (``d_out x d_in``) the product ``B A`` with ``A`` (``r x d_in``) and ``B``
(``d_out x r``), so each adapted matrix adds ``r x (d_in + d_out)`` parameters. Serving systems
keep the adapters unmerged and apply ``x A^T B^T`` per request (Chen et al. 2023, Punica; Sheng et
al. 2023, S-LoRA), so an adapter's footprint is the sum over the adapted matrices.

Target sets follow the usual PEFT names for Llama-style blocks: ``qkvo`` adapts the four attention
projections, ``all-linear`` also the gated MLP's ``gate``, ``up`` and ``down`` projections.

Pure Python; no torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inferview.reference.dtypes import dtype_bits
from inferview.reference.model_shape import head_dim, num_kv_heads
from inferview.reference.quantity import Quantity

TARGETS = ("qkvo", "all-linear")
"""The target-module sets the estimator knows."""


def adapted_matrices(config: Mapping[str, Any], targets: str) -> list[tuple[str, int, int]]:
    """``(name, d_in, d_out)`` of each matrix one layer adapts, for a dense Llama-style config."""
    if targets not in TARGETS:
        raise ValueError(f"unknown targets {targets!r}; use one of {', '.join(TARGETS)}")
    if config.get("num_local_experts") or config.get("n_routed_experts") or config.get("kv_lora_rank"):
        raise ValueError("the LoRA estimator covers dense models with standard attention only")
    hidden = int(config["hidden_size"])
    q_out = int(config["num_attention_heads"]) * head_dim(config)   # query heads x head_dim
    kv_out = num_kv_heads(config) * head_dim(config)                # KV heads x head_dim
    mats = [("q_proj", hidden, q_out), ("k_proj", hidden, kv_out), ("v_proj", hidden, kv_out),
            ("o_proj", q_out, hidden)]
    if targets == "all-linear":
        ffn = int(config["intermediate_size"])
        mats += [("gate_proj", hidden, ffn), ("up_proj", hidden, ffn), ("down_proj", ffn, hidden)]
    return mats


def adapter_params(config: Mapping[str, Any], rank: int, targets: str = "all-linear") -> int:
    """Parameters of one rank-``rank`` adapter: layers x sum of ``rank x (d_in + d_out)``."""
    if rank <= 0:
        raise ValueError("rank must be positive")
    per_layer = sum(rank * (d_in + d_out) for _, d_in, d_out in adapted_matrices(config, targets))
    return int(config["num_hidden_layers"]) * per_layer


def adapter_bytes(config: Mapping[str, Any], rank: int, targets: str = "all-linear",
                  dtype: str = "bf16") -> int:
    """Bytes of one adapter's ``A`` and ``B`` matrices at ``dtype``."""
    return adapter_params(config, rank, targets) * dtype_bits(dtype) // 8


QUANTITIES: list[Quantity] = [
    Quantity(
        "lora_adapter_params", "params",
        "layers x sum over adapted matrices of rank x (d_in + d_out); qkvo: q, k, v, o "
        "projections; all-linear: also gate, up and down",
        lambda c, p: float(adapter_params(c or {}, int(p["rank"]), str(p["targets"]))),
        required=("rank",), defaults={"targets": "all-linear"},
    ),
    Quantity(
        "lora_adapter_bytes", "bytes",
        "layers x sum over adapted matrices of rank x (d_in + d_out) x bytes per value",
        lambda c, p: float(adapter_bytes(c or {}, int(p["rank"]), str(p["targets"]),
                                         str(p["dtype"]))),
        required=("rank",), defaults={"targets": "all-linear", "dtype": "bf16"},
    ),
]
"""The quantities of this module, registered in ``inferview.reference.formulas``."""
