"""Wrong: works in place, as vLLM's fused_add_rms_norm does: writes the new residual into
residual and normed into x, and returns them; the inputs must be left unchanged."""

from __future__ import annotations

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def _fused_add_rmsnorm_inplace(x_ptr, r_ptr, w_ptr, H, sx, sr, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < H
    x = tl.load(x_ptr + row * sx + cols, mask=mask, other=0.0)
    r = tl.load(r_ptr + row * sr + cols, mask=mask, other=0.0)
    h = x + r
    tl.store(r_ptr + row * sr + cols, h, mask=mask)
    hf = h.to(tl.float32)
    inv = 1.0 / tl.sqrt(tl.sum(hf * hf, axis=0) / H + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(x_ptr + row * sx + cols, (hf * inv * w).to(x_ptr.dtype.element_ty), mask=mask)


def fused_add_rmsnorm(x, residual, weight, eps=1e-6):
    T, H = x.shape
    _fused_add_rmsnorm_inplace[(T,)](x, residual, weight, H, x.stride(0), residual.stride(0), eps,
                                     BLOCK=triton.next_power_of_2(H))
    return x, residual
