"""Wrong: not fused: one kernel adds and stores the new residual, a second reads it back and
normalises it (two launches, and a second pass over memory)."""

from __future__ import annotations

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def _add(x_ptr, r_ptr, res_ptr, H, sx, sr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < H
    a = tl.load(x_ptr + row * sx + cols, mask=m, other=0.0)
    b = tl.load(r_ptr + row * sr + cols, mask=m, other=0.0)
    tl.store(res_ptr + row * H + cols, a + b, mask=m)


@triton.jit
def _norm(h_ptr, w_ptr, out_ptr, H, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < H
    h = tl.load(h_ptr + row * H + cols, mask=m, other=0.0).to(tl.float32)
    inv = tl.rsqrt(tl.sum(h * h, axis=0) / H + eps)
    w = tl.load(w_ptr + cols, mask=m, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * H + cols, (h * inv * w).to(out_ptr.dtype.element_ty), mask=m)


def fused_add_rmsnorm(x, residual, weight, eps=1e-6):
    T, H = x.shape
    block = triton.next_power_of_2(H)
    res = torch.empty((T, H), dtype=x.dtype, device=x.device)
    out = torch.empty((T, H), dtype=x.dtype, device=x.device)
    _add[(T,)](x, residual, res, H, x.stride(0), residual.stride(0), BLOCK=block)
    _norm[(T,)](res, weight, out, H, eps, BLOCK=block)
    return out, res
