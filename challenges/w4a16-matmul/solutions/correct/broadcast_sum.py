"""No tl.dot: each program takes BLOCK_M rows of x and BLOCK_N outputs and, per K tile, forms the
(BLOCK_M, BLOCK_N, BLOCK_K) products by broadcasting and reduces them with tl.sum, the weight tile
dequantized in float32 (the style of a decode GEMV, which gains nothing from tensor cores)."""

from __future__ import annotations

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def _gemv(x_ptr, w_ptr, s_ptr, z_ptr, y_ptr, M, N, K, G, sxm, sxk,
          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        ks = k0 + tl.arange(0, BLOCK_K)
        kmask = ks < K
        xv = tl.load(x_ptr + rows[:, None] * sxm + ks[None, :] * sxk,
                     mask=(rows[:, None] < M) & kmask[None, :], other=0.0).to(tl.float32)
        m2 = (cols[:, None] < N) & kmask[None, :]
        byte = tl.load(w_ptr + cols[:, None] * (K // 2) + ks[None, :] // 2, mask=m2, other=0)
        byte = byte.to(tl.int32)
        code = tl.where(ks[None, :] % 2 == 1, byte >> 4, byte & 15).to(tl.float32)
        grp = cols[:, None] * (K // G) + ks[None, :] // G
        scale = tl.load(s_ptr + grp, mask=m2, other=0.0).to(tl.float32)
        zero = tl.load(z_ptr + grp, mask=m2, other=0).to(tl.float32)
        w = (code - zero) * scale  # (BLOCK_N, BLOCK_K)
        acc += tl.sum(xv[:, None, :] * w[None, :, :], axis=2)
    tl.store(y_ptr + rows[:, None] * N + cols[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=(rows[:, None] < M) & (cols[None, :] < N))


def w4a16_matmul(x, w_packed, scales, zeros, group_size):
    M, K = x.shape
    N = w_packed.shape[0]
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    BLOCK_M, BLOCK_N, BLOCK_K = 16, 32, 64
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    _gemv[grid](x, w_packed, scales, zeros, y, M, N, K, group_size, x.stride(0), x.stride(1),
                BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
    return y
