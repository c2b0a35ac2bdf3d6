"""Row-by-row solution: explicit loops over rows and groups, packing with integer arithmetic."""

from __future__ import annotations

import torch
from torch import Tensor


def _quantize_row(x: Tensor, qmax: int) -> tuple[Tensor, Tensor]:
    amax = x.abs().max()
    scale = amax / qmax if float(amax) > 0 else torch.tensor(1.0, device=x.device)
    codes = (x / scale).round().clamp(min=-qmax, max=qmax)
    return codes.to(torch.int8), scale.to(torch.float32)


def quantize_int8_per_channel(w: Tensor) -> tuple[Tensor, Tensor]:
    w = w.to(torch.float32)
    q = torch.empty(w.shape, dtype=torch.int8, device=w.device)
    scale = torch.empty(w.shape[0], dtype=torch.float32, device=w.device)
    for r in range(w.shape[0]):
        q[r], scale[r] = _quantize_row(w[r], 127)
    return q, scale


def dequantize_int8(q: Tensor, scale: Tensor) -> Tensor:
    out = torch.empty(q.shape, dtype=torch.float32, device=q.device)
    for r in range(q.shape[0]):
        out[r] = q[r].to(torch.float32) * scale[r]
    return out


def quantize_int4_per_group(w: Tensor, group_size: int) -> tuple[Tensor, Tensor]:
    w = w.to(torch.float32)
    rows, cols = w.shape
    codes = torch.empty(rows, cols, dtype=torch.int32, device=w.device)
    scale = torch.empty(rows, cols // group_size, dtype=torch.float32, device=w.device)
    for r in range(rows):
        for g in range(cols // group_size):
            sl = slice(g * group_size, (g + 1) * group_size)
            c, s = _quantize_row(w[r, sl], 7)
            codes[r, sl] = c.to(torch.int32)
            scale[r, g] = s
    unsigned = torch.remainder(codes, 16)  # two's complement nibble: -1 -> 15
    packed = unsigned[:, 0::2] + 16 * unsigned[:, 1::2]
    return packed.to(torch.uint8), scale


def unpack_int4(packed: Tensor) -> Tensor:
    p = packed.to(torch.int32)
    low = torch.remainder(p, 16)
    high = torch.div(p, 16, rounding_mode="floor")
    out = torch.empty(p.shape[0], 2 * p.shape[1], dtype=torch.int32, device=p.device)
    out[:, 0::2] = low
    out[:, 1::2] = high
    out = out - 16 * (out > 7).to(torch.int32)
    return out.to(torch.int8)
