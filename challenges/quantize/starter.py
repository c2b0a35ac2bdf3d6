"""Challenge quantize: symmetric int8 per channel and packed int4 per group.

Fill in the four functions. `inferview grade quantize <this file>` runs the checks.
"""

from __future__ import annotations

import torch  # noqa: F401  (you will need it)
from torch import Tensor


def quantize_int8_per_channel(w: Tensor) -> tuple[Tensor, Tensor]:
    """w (out, in) -> (q int8 (out, in), scale float32 (out,)), symmetric absmax per row."""
    raise NotImplementedError("quantize_int8_per_channel: one absmax scale per row, codes in [-127, 127]")


def dequantize_int8(q: Tensor, scale: Tensor) -> Tensor:
    """q int8 (out, in), scale (out,) -> float32 (out, in)."""
    raise NotImplementedError("dequantize_int8: multiply each row's codes by its scale")


def quantize_int4_per_group(w: Tensor, group_size: int) -> tuple[Tensor, Tensor]:
    """w (out, in) -> (packed uint8 (out, in // 2), scale float32 (out, in // group_size))."""
    raise NotImplementedError("quantize_int4_per_group: per-group absmax, codes in [-7, 7], two per byte")


def unpack_int4(packed: Tensor) -> Tensor:
    """packed uint8 (out, m) -> int8 (out, 2m), code 2j from the low nibble of byte j."""
    raise NotImplementedError("unpack_int4: split the nibbles and sign-extend them")
