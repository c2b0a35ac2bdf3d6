"""Wrong: rounds the factor rsqrt(mean + eps) to the inputs' dtype and multiplies in it. The
statistics are float32, but for float16 rows with a root mean square under about 1.5e-5 the
factor is past 65504 and becomes inf."""

from __future__ import annotations

import os

import torch
from torch import Tensor

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def _kernel(x_ptr, r_ptr, w_ptr, n_ptr, nr_ptr, hidden, sx, sr, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < hidden
    x = tl.load(x_ptr + row * sx + cols, mask=mask, other=0.0)
    r = tl.load(r_ptr + row * sr + cols, mask=mask, other=0.0)
    h = x + r
    tl.store(nr_ptr + row * hidden + cols, h, mask=mask)
    hf = h.to(tl.float32)
    mean = tl.sum(hf * hf, axis=0) / hidden
    inv = tl.rsqrt(mean + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = h * inv.to(h.dtype) * w.to(h.dtype)
    tl.store(n_ptr + row * hidden + cols, y.to(h.dtype), mask=mask)


def fused_add_rmsnorm(x: Tensor, residual: Tensor, weight: Tensor,
                      eps: float = 1e-6) -> tuple[Tensor, Tensor]:
    T, H = x.shape
    normed = torch.empty((T, H), dtype=x.dtype, device=x.device)
    newr = torch.empty((T, H), dtype=x.dtype, device=x.device)
    _kernel[(T,)](x, residual, weight, normed, newr, H, x.stride(0), residual.stride(0), eps,
             BLOCK=triton.next_power_of_2(H))
    return normed, newr
