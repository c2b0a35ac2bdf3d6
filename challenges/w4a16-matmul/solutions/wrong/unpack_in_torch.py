"""Wrong: unpacks and dequantizes the weight with torch ops (shifts, masks, products) before a
Triton matmul: torch computes during the call, and the dequantized weight is materialised."""

from __future__ import annotations

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def _matmul(x_ptr, w_ptr, y_ptr, M, N, K, sxm, sxk,
            BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, IEEE: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        x = tl.load(x_ptr + rm[:, None] * sxm + rk[None, :] * sxk,
                    mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rn[None, :] * K + rk[:, None],
                    mask=(rn[None, :] < N) & (rk[:, None] < K), other=0.0)
        if IEEE:
            acc = tl.dot(x, w, acc, input_precision="ieee")
        else:
            acc = tl.dot(x, w, acc)
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def w4a16_matmul(x, w_packed, scales, zeros, group_size):
    M, K = x.shape
    N = w_packed.shape[0]
    p = w_packed.to(torch.int32)
    q = torch.stack((p & 0xF, p >> 4), dim=-1).reshape(N, K).float()
    z = zeros.float().repeat_interleave(group_size, dim=1)
    s = scales.float().repeat_interleave(group_size, dim=1)
    w = ((q - z) * s).to(x.dtype).contiguous()
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    _matmul[(triton.cdiv(M, 16), triton.cdiv(N, 32))](x, w, y, M, N, K, x.stride(0), x.stride(1),
                                                      BM=16, BN=32, BK=32,
                                                      IEEE=x.dtype == torch.float32)
    return y
