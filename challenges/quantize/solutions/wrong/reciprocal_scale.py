"""Multiplies by the reciprocal of the scale (w * (1 / scale)) instead of dividing: the same code
except on exact ties with a scale that is not a power of two, where about one in eight rounds
the other way."""

from __future__ import annotations

import torch
from torch import Tensor


def _absmax_codes(w: Tensor, qmax: int) -> tuple[Tensor, Tensor]:
    """w (..., n) -> (codes int8 (..., n), scale float32 (...,)), one scale per leading index."""
    amax = w.abs().amax(dim=-1)
    scale = torch.where(amax > 0, amax / qmax, torch.ones_like(amax))
    inv = 1.0 / scale.unsqueeze(-1)  # one division per row, then a multiply per weight
    q = torch.clamp(torch.round(w * inv), -qmax, qmax).to(torch.int8)
    return q, scale


def quantize_int8_per_channel(w: Tensor) -> tuple[Tensor, Tensor]:
    return _absmax_codes(w.float(), 127)


def dequantize_int8(q: Tensor, scale: Tensor) -> Tensor:
    return q.float() * scale.float()[:, None]


def quantize_int4_per_group(w: Tensor, group_size: int) -> tuple[Tensor, Tensor]:
    out, n = w.shape
    q, scale = _absmax_codes(w.float().reshape(out, n // group_size, group_size), 7)
    q = q.reshape(out, n).to(torch.int16) & 0xF
    packed = q[:, 0::2] | (q[:, 1::2] << 4)
    return packed.to(torch.uint8), scale


def unpack_int4(packed: Tensor) -> Tensor:
    p = packed.to(torch.int16)
    nibbles = torch.stack((p & 0xF, p >> 4), dim=-1).reshape(p.shape[0], -1)
    return torch.where(nibbles >= 8, nibbles - 16, nibbles).to(torch.int8)
