"""Challenge fused-rmsnorm: new_residual = x + residual and normed = RMSNorm(new_residual) * weight
in one Triton kernel.

`inferview grade fused-rmsnorm <this file>` runs the checks (on a CPU through Triton's
interpreter, which must be chosen before `import triton`).
"""

from __future__ import annotations

import os

import torch
from torch import Tensor

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # noqa: E402, F401
import triton.language as tl  # noqa: E402


@triton.jit
def fused_add_rmsnorm_kernel(
    x_ptr, residual_ptr, weight_ptr, normed_ptr, new_residual_ptr,  # (T, H), (T, H), (H,), (T, H), (T, H)
    hidden, stride_x, stride_residual, eps,
    BLOCK: tl.constexpr,
):
    # 1. This program's row: load x and residual (masked past hidden), add, store new_residual.
    # 2. Mean of squares in float32, inv = 1 / sqrt(mean + eps).
    # 3. normed = h * inv * weight, stored in the inputs' dtype.
    pass


def fused_add_rmsnorm(x: Tensor, residual: Tensor, weight: Tensor,
                      eps: float = 1e-6) -> tuple[Tensor, Tensor]:
    """x, residual (T, H), weight (H,) -> (normed, new_residual), both (T, H) in x's dtype."""
    raise NotImplementedError("fused_add_rmsnorm: allocate both outputs, launch one program per row")
