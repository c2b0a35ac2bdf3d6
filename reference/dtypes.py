"""Storage formats by name: bits per stored value, scales included, and bytes for a number of
values.

Plain formats store every value on its own (``fp32 fp16 bf16 fp8 int8 int4``; a per-tensor or
per-channel scale is negligible and not counted). Block-scaled formats share one scale (and for
``int4-gN`` a zero point) among a block of values, and the scale's bits are spread over the block:

- ``mxfp4``: OCP Microscaling Formats (MX) Specification v1.0 — 32 FP4 (E2M1) values share one
  8-bit power-of-two (E8M0) scale: ``4 + 8/32 = 4.25`` bits per value.
- ``nvfp4``: NVIDIA, "Introducing NVFP4 for Efficient and Accurate Low-Precision Inference"
  (2025) — 16 FP4 (E2M1) values share one FP8 (E4M3) scale: ``4 + 8/16 = 4.5`` bits (plus one
  FP32 scale per tensor, negligible and not counted).
- ``int4-g32``/``int4-g64``/``int4-g128``: 4-bit integers in groups of ``g`` input values with one
  fp16 scale per group and output column (Frantar et al. 2023, GPTQ; Lin et al. 2024, AWQ; the
  ``scales`` tensor of AutoGPTQ's ``QuantLinear``): ``4 + 16/g`` bits, 4.125 for g = 128, as
  ``inferview.reference.block_formats`` counts it. Symmetric groups need nothing more; an
  asymmetric checkpoint (AWQ, or AutoGPTQ's packed ``qzeros``) adds a 4-bit zero point per group,
  4.15625 bits at g = 128, which is not counted.
- ``fp8-mla``: the "FP8 with scale" MLA cache of FlashMLA (DeepSeek, README): per token and layer
  the 512 latent values in FP8 E4M3 with one fp32 scale per 128 of them, and the 64-value RoPE key
  kept in bf16 — 656 bytes for DeepSeek-V3's 512 + 64. It only applies to an MLA cache.

Block-scaled sizes are averages: exact when the values come in whole blocks, which holds for every
layer width of the presets. Pure Python; no torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction


@dataclass(frozen=True)
class DType:
    """A storage format: element bits and the scale bits shared by each block of values."""

    name: str
    """Name on the command line and in drills, e.g. ``nvfp4``."""
    value_bits: int
    """Bits of each stored element (4 for FP4 and int4)."""
    block: int = 1
    """Values that share one scale (1: no per-block scale)."""
    scale_bits: int = 0
    """Bits of the block's scale and zero point together (0 for plain formats)."""
    rope_dtype: str | None = None
    """For MLA caches only: the format of the decoupled RoPE key, when it differs (``fp8-mla``)."""
    mla_only: bool = False
    """Whether the format describes an MLA latent cache and nothing else."""
    description: str = ""
    """One line for ``--help`` and the calculator."""

    @property
    def bits(self) -> Fraction:
        """Bits per value, the block's scale spread over its values."""
        return self.value_bits + Fraction(self.scale_bits, self.block)


_PLAIN = [("fp32", 32), ("fp16", 16), ("bf16", 16), ("fp8", 8), ("int8", 8), ("int4", 4)]

DTYPES: dict[str, DType] = {d.name: d for d in [
    *(DType(n, b, description=f"{b} bits per value (per-tensor scale, not counted)")
      for n, b in _PLAIN),
    DType("mxfp4", 4, 32, 8, description="FP4 E2M1, one E8M0 scale per 32 values: 4.25 bits (OCP MX v1.0)"),
    DType("nvfp4", 4, 16, 8, description="FP4 E2M1, one FP8 E4M3 scale per 16 values: 4.5 bits (NVIDIA NVFP4)"),
    *(DType(f"int4-g{g}", 4, g, 16,
            description=f"int4, one fp16 scale per group of {g} values (GPTQ/AWQ): {4 + 16 / g:g} bits")
      for g in (32, 64, 128)),
    DType("fp8-mla", 8, 128, 32, rope_dtype="bf16", mla_only=True,
          description="MLA cache only: fp8 latent with an fp32 scale per 128 values, bf16 RoPE key "
                      "(FlashMLA, 656 B per token and layer for DeepSeek-V3)"),
]}
"""Every storage format by name."""

DTYPE_BITS: dict[str, float] = {n: (int(d.bits) if d.bits.denominator == 1 else float(d.bits))
                                for n, d in DTYPES.items() if not d.mla_only}
"""Bits per value (scales included) of every format that stores any tensor: weights or a cache."""

KV_DTYPES: list[str] = list(DTYPES)
"""Formats a KV cache may use (``fp8-mla`` only for MLA models)."""

WEIGHT_DTYPES: list[str] = list(DTYPE_BITS)
"""Formats weights may use."""

_ALIASES = {
    "float32": "fp32", "float": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16",
    "float8": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "e4m3": "fp8", "e5m2": "fp8",
    "mx-fp4": "mxfp4", "mxfp4_e2m1": "mxfp4", "nv-fp4": "nvfp4",
    "int4_g32": "int4-g32", "int4_g64": "int4-g64", "int4_g128": "int4-g128",
    "w4g128": "int4-g128", "fp8_mla": "fp8-mla",
}


def get_dtype(dtype: str) -> DType:
    """The format called ``dtype`` (case-insensitive, common aliases accepted).

    Raises ``ValueError`` naming the known formats when there is none.
    """
    key = str(dtype).strip().lower()
    key = _ALIASES.get(key, key)
    if key not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; use one of {', '.join(DTYPES)}")
    return DTYPES[key]


def exact_bits(dtype: str) -> Fraction:
    """Bits per value of ``dtype`` as an exact fraction (``mxfp4``: 17/4)."""
    d = get_dtype(dtype)
    if d.mla_only:
        raise ValueError(f"{d.name} is a format for MLA caches only (latent and RoPE key stored "
                         "differently); it has no single bits-per-value")
    return d.bits


def dtype_bits(dtype: str) -> float:
    """Bits per value for ``dtype``, scales included: an ``int`` for whole numbers (``bf16`` 16,
    ``int4`` 4), a ``float`` otherwise (``mxfp4`` 4.25, ``nvfp4`` 4.5, ``int4-g128`` 4.125)."""
    b = exact_bits(dtype)
    return int(b) if b.denominator == 1 else float(b)


def bits_to_bytes(bits: Fraction | int) -> int:
    """Whole bytes that hold ``bits`` bits, rounded up once."""
    return -(-Fraction(bits) // 8)


def bytes_to_fit(values: int, dtype: str) -> int:
    """Bytes for ``values`` values at ``dtype``, rounded up."""
    return bits_to_bytes(values * exact_bits(dtype))
