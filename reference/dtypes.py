"""Bits per stored value, by dtype name, and bytes for a number of values.

Pure Python; no torch.
"""

from __future__ import annotations

DTYPE_BITS: dict[str, int] = {"fp32": 32, "fp16": 16, "bf16": 16, "fp8": 8, "int8": 8, "int4": 4}
"""Bits per stored value for each dtype name the estimators accept."""

_ALIASES = {
    "float32": "fp32", "float": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16",
    "float8": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "e4m3": "fp8", "e5m2": "fp8",
}



def dtype_bits(dtype: str) -> int:
    """Bits per value for ``dtype`` (``fp32 fp16 bf16 fp8 int8 int4`` or a common alias)."""
    key = str(dtype).strip().lower()
    key = _ALIASES.get(key, key)
    if key not in DTYPE_BITS:
        raise ValueError(f"unknown dtype {dtype!r}; use one of {', '.join(DTYPE_BITS)}")
    return DTYPE_BITS[key]


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def bytes_to_fit(values: int, dtype: str) -> int:
    """Bytes for ``values`` values at ``dtype``, rounded up."""
    return _ceil_div(values * dtype_bits(dtype), 8)
