"""Block-scaled number formats and the bytes they take, scales included.

A block-scaled format stores narrow elements and one shared scale per block of consecutive values
(along the reduction dimension of a matmul), so its cost per value is
``element_bits + scale_bits / block`` (a per-tensor scale, where there is one, adds 32 bits to the
whole tensor and is negligible per value).

Sources:

- Open Compute Project 2023, *OCP Microscaling Formats (MX) Specification v1.0*: blocks of 32
  elements sharing one E8M0 (8-bit power-of-two) scale; MXFP8 (E4M3/E5M2), MXFP6 (E2M3/E3M2),
  MXFP4 (E2M1). MXFP4 costs 4 + 8/32 = 4.25 bits per value.
- NVIDIA 2025, *Introducing NVFP4 for Efficient and Accurate Low-Precision Inference* (NVIDIA
  technical blog): E2M1 elements in blocks of 16 with an FP8 E4M3 scale, plus one FP32 scale per
  tensor: 4 + 8/16 = 4.5 bits per value.
- Frantar et al. 2023 (GPTQ) and Lin et al. 2024 (AWQ): 4-bit integers in groups of 128 with an
  fp16 scale (4.125 bits per value for a symmetric group; AWQ's zero points add 4 more bits per
  group, not modelled here).
- deepseek-ai/FlashMLA README, "FP8 KV Cache": each token's MLA cache entry is 656 bytes: 512
  ``float8_e4m3`` latent values, 4 ``float32`` scales (one per 128 values) and the 64-value RoPE
  key kept in bf16.

Pure Python; no torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from inferview.reference.dtypes import DTYPES
from inferview.reference.kv_memory import kv_bytes_per_token
from inferview.reference.param_counts import param_counts, quantized_part
from inferview.reference.quantity import Quantity


@dataclass(frozen=True)
class BlockFormat:
    """A block-scaled format: narrow elements, one scale per ``block`` values."""

    name: str
    """Registry key, e.g. ``mxfp4``."""
    element_bits: int
    """Bits of each stored element (4 for E2M1)."""
    block: int
    """Values that share one scale."""
    scale_bits: int
    """Bits of each block scale (8 for E8M0 or E4M3, 16 for an fp16 group scale)."""
    tensor_scale_bits: int = 0
    """Bits of the one scale per tensor (32 for NVFP4's FP32 scale), 0 when there is none."""

    @property
    def bits_per_value(self) -> float:
        """Average bits per value, block scales included (the per-tensor scale is negligible)."""
        # element + its share of the block scale
        return self.element_bits + self.scale_bits / self.block


def _from_dtype(name: str, tensor_scale_bits: int = 0) -> BlockFormat:
    """A format the estimators' dtype table already defines (its element, block and scale bits)."""
    d = DTYPES[name]
    return BlockFormat(name, d.value_bits, d.block, d.scale_bits, tensor_scale_bits)


FORMATS: dict[str, BlockFormat] = {
    f.name: f
    for f in [
        BlockFormat("mxfp8", 8, 32, 8),         # OCP MX v1.0: E4M3/E5M2 + E8M0 per 32
        BlockFormat("mxfp6", 6, 32, 8),         # OCP MX v1.0: E2M3/E3M2 + E8M0 per 32
        _from_dtype("mxfp4"),                   # OCP MX v1.0: E2M1 + E8M0 per 32
        _from_dtype("nvfp4", 32),               # NVIDIA: E2M1 + E4M3 per 16, FP32 per tensor
        _from_dtype("int4-g128"),               # GPTQ/AWQ-style symmetric int4, fp16 per 128
    ]
}
"""The formats the estimators know, by name."""


def get_format(name: str) -> BlockFormat:
    """The format called ``name`` (case-insensitive). Raises ``ValueError`` when unknown."""
    key = str(name).strip().lower()
    if key not in FORMATS:
        raise ValueError(f"unknown block format {name!r}; use one of {', '.join(FORMATS)}")
    return FORMATS[key]


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def tensor_bytes(rows: int, cols: int, fmt: str) -> int:
    """Bytes of a ``rows x cols`` weight matrix stored in ``fmt``, blocks running along ``cols``
    (the reduction dimension), every block scale and the per-tensor scale counted; a partial last
    block in a row still carries a whole scale. Rounded up to a whole byte once."""
    if rows <= 0 or cols <= 0:
        raise ValueError("rows and cols must be positive")
    f = get_format(fmt)
    blocks = rows * _ceil_div(cols, f.block)                 # one scale per block of each row
    bits = rows * cols * f.element_bits + blocks * f.scale_bits + f.tensor_scale_bits
    return _ceil_div(bits, 8)


SCOPES = ("linear", "experts")
"""What a model's quantized part is: every matmul weight of the transformer layers (``linear``),
or only the routed experts (``experts``, as gpt-oss ships its checkpoint)."""


def model_weight_bytes(config: Mapping[str, Any], fmt: str, scope: str = "linear",
                       rest_bits: int = 16) -> float:
    """Bytes of a model's weights with one part in ``fmt`` and the rest at ``rest_bits``.

    ``scope="linear"``: attention projections, dense MLPs, routed and shared experts in ``fmt``;
    embeddings, output head, router and norms at ``rest_bits`` (bf16). ``scope="experts"``: only
    the routed experts in ``fmt``. Each quantized matrix is assumed to divide into whole blocks
    (true of every preset); per-tensor scales are left out (4 bytes a matrix).
    """
    if scope not in SCOPES:
        raise ValueError(f"unknown scope {scope!r}; use one of {', '.join(SCOPES)}")
    f = get_format(fmt)
    pc = param_counts(config)
    quantized = quantized_part(pc, scope)  # the scope rule of the estimators
    if quantized == 0:
        raise ValueError(f"the model has no {scope} weights to quantize")
    rest = pc.total - quantized
    # quantized params at the format's bits (scales included) + the rest at rest_bits
    return quantized * f.bits_per_value / 8 + rest * rest_bits / 8


@dataclass(frozen=True)
class MlaFp8Layout:
    """FlashMLA's FP8 cache entry for one token and one layer (the estimators' ``fp8-mla`` format,
    ``inferview.reference.dtypes``, spelled out)."""

    latent_values: int
    """Compressed latent values, stored as FP8 E4M3 (``kv_lora_rank``)."""
    rope_values: int
    """Decoupled RoPE key values, kept in bf16 (``qk_rope_head_dim``)."""

    @property
    def bytes(self) -> int:
        """Bytes of the entry: 1 per latent value, 4 per scale of 128, 2 per RoPE value."""
        return int(kv_bytes_per_token({"num_hidden_layers": 1, "kv_lora_rank": self.latent_values,
                                       "qk_rope_head_dim": self.rope_values}, "fp8-mla"))


def mla_fp8_kv_bytes_per_token(config: Mapping[str, Any]) -> int:
    """KV-cache bytes per token, over all layers, of an MLA model stored in FlashMLA's FP8 format
    (656 bytes per layer for DeepSeek-V3's 512 + 64 dimensions)."""
    rank = config.get("kv_lora_rank")
    if not rank:
        raise ValueError("the FP8 MLA layout needs an MLA model (kv_lora_rank in the config)")
    # the estimators' ``fp8-mla`` format: 1 byte per latent value, a 4-byte scale per 128, bf16 RoPE
    return int(kv_bytes_per_token(config, "fp8-mla"))


def _quantities() -> list[Quantity]:
    return [
        Quantity(
            "block_scaled_tensor_bytes", "bytes",
            "rows x cols x element_bits / 8 + rows x ceil(cols / block) x scale_bits / 8 (+ 4 bytes "
            "for NVFP4's FP32 tensor scale): MXFP4 4 + 8/32 = 4.25 bits, NVFP4 4 + 8/16 = 4.5 bits, "
            "int4 with an fp16 scale per 128 4.125 bits per value",
            lambda c, p: float(tensor_bytes(int(p["rows"]), int(p["cols"]), str(p["format"]))),
            needs_model=False, required=("rows", "cols", "format"),
        ),
        Quantity(
            "block_scaled_weight_bytes", "bytes",
            "quantized params x bits_per_value / 8 + other params x 2 bytes (bf16); "
            "scope linear: attention + MLP + experts quantized, embeddings, output head, router "
            "and norms in bf16; scope experts: only the routed experts quantized",
            lambda c, p: model_weight_bytes(c or {}, str(p["format"]), str(p["scope"])),
            required=("format",), defaults={"scope": "linear"},
        ),
        Quantity(
            "mla_fp8_kv_bytes_per_token", "bytes/token",
            "layers x (kv_lora_rank x 1 byte (FP8 E4M3) + kv_lora_rank / 128 x 4 bytes (FP32 "
            "scales) + qk_rope_head_dim x 2 bytes (bf16 RoPE key)): 656 bytes per layer for "
            "512 + 64 (FlashMLA's FP8 cache format)",
            lambda c, p: float(mla_fp8_kv_bytes_per_token(c or {})),
        ),
    ]


QUANTITIES: list[Quantity] = _quantities()
"""The quantities of this module, registered in ``inferview.reference.formulas``."""
