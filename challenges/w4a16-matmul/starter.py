"""Challenge w4a16-matmul: y = x @ W^T with W packed as unsigned int4 codes, group-wise scales and
zero points, dequantized inside a Triton kernel.

`inferview grade w4a16-matmul <this file>` runs the checks (on a CPU through Triton's
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
def w4a16_kernel(
    x_ptr, w_ptr, scales_ptr, zeros_ptr, y_ptr,  # (M, K), (N, K // 2) uint8, (N, K // G), (N, K // G), (M, N)
    M, N, K, group_size,
    stride_xm, stride_xk,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):
    # 1. Find this program's (BLOCK_M, BLOCK_N) tile of y; start a float32 accumulator.
    # 2. Loop over K: load a tile of x, unpack a (BLOCK_K, BLOCK_N) tile of codes, dequantize it
    #    with each column's group scale and zero point, tl.dot.
    # 3. Cast to y's dtype and store (masked).
    pass


def w4a16_matmul(x: Tensor, w_packed: Tensor, scales: Tensor, zeros: Tensor,
                 group_size: int) -> Tensor:
    """x (M, K), w_packed uint8 (N, K // 2), scales (N, K // group_size) in x's dtype,
    zeros uint8 (N, K // group_size) -> y (M, N) in x's dtype."""
    raise NotImplementedError("w4a16_matmul: allocate y, compute the grid, launch the kernel")
