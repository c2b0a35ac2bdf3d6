"""Wrong: does the residual add in torch (x + residual) and only the norm in Triton."""

from __future__ import annotations

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402


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
    res = (x + residual).contiguous()
    out = torch.empty((T, H), dtype=x.dtype, device=x.device)
    _norm[(T,)](res, weight, out, H, eps, BLOCK=triton.next_power_of_2(H))
    return out, res
