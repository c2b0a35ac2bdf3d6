"""Wrong: adds eps outside the square root: h / (sqrt(mean(h^2)) + eps)."""

from __future__ import annotations

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def _fused_add_rmsnorm(x_ptr, r_ptr, w_ptr, out_ptr, res_ptr, H, sx, sr, eps,
                       BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < H
    x = tl.load(x_ptr + row * sx + cols, mask=mask, other=0.0)
    r = tl.load(r_ptr + row * sr + cols, mask=mask, other=0.0)
    h = x + r  # in the inputs' dtype: this is the new residual
    tl.store(res_ptr + row * H + cols, h, mask=mask)
    hf = h.to(tl.float32)
    inv = 1.0 / (tl.sqrt(tl.sum(hf * hf, axis=0) / H) + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * H + cols, (hf * inv * w).to(out_ptr.dtype.element_ty), mask=mask)


def fused_add_rmsnorm(x, residual, weight, eps=1e-6):
    T, H = x.shape
    out = torch.empty((T, H), dtype=x.dtype, device=x.device)
    new_residual = torch.empty((T, H), dtype=x.dtype, device=x.device)
    _fused_add_rmsnorm[(T,)](x, residual, weight, out, new_residual, H, x.stride(0),
                             residual.stride(0), eps, BLOCK=triton.next_power_of_2(H))
    return out, new_residual
