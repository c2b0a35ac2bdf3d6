"""Wrong: returns the float32 accumulator instead of a result in x's dtype."""

from __future__ import annotations

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def _w4a16_kernel(x_ptr, w_ptr, s_ptr, z_ptr, y_ptr, M, N, K, G,
                  sxm, sxk, swn, ssn, szn, sym,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        x = tl.load(x_ptr + rm[:, None] * sxm + rk[None, :] * sxk,
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        wmask = (rk[:, None] < K) & (rn[None, :] < N)
        byte = tl.load(w_ptr + rn[None, :] * swn + (rk[:, None] // 2), mask=wmask, other=0)
        code = (byte.to(tl.int32) >> ((rk[:, None] % 2) * 4)) & 0xF  # (BLOCK_K, BLOCK_N)
        g = rk[:, None] // G
        scale = tl.load(s_ptr + rn[None, :] * ssn + g, mask=wmask, other=0.0).to(tl.float32)
        zero = tl.load(z_ptr + rn[None, :] * szn + g, mask=wmask, other=0).to(tl.float32)
        w = ((code.to(tl.float32) - zero) * scale).to(x.dtype)
        if x.dtype == tl.float32:
            acc = tl.dot(x, w, acc, input_precision="ieee")
        else:
            acc = tl.dot(x, w, acc)
    tl.store(y_ptr + rm[:, None] * sym + rn[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def w4a16_matmul(x, w_packed, scales, zeros, group_size):
    M, K = x.shape
    N = w_packed.shape[0]
    y = torch.empty((M, N), dtype=torch.float32, device=x.device)
    BLOCK_M, BLOCK_N, BLOCK_K = 16, 32, 32
    grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
    _w4a16_kernel[grid](x, w_packed, scales, zeros, y, M, N, K, group_size,
                        x.stride(0), x.stride(1), w_packed.stride(0), scales.stride(0),
                        zeros.stride(0), y.stride(0),
                        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
    return y
