"""Split-K: the K loop is shared among SPLIT programs per output tile, each adding its partial sum
into a float32 buffer with tl.atomic_add; the buffer is cast to x's dtype at the end. The weight
is dequantized as q * s - z * s in x's dtype (the form that folds the zero point into an offset)."""

from __future__ import annotations

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def _split_k(x_ptr, w_ptr, s_ptr, z_ptr, acc_ptr, M, N, K, G, sxm, sxk, k_per_split,
             BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, IEEE: tl.constexpr):
    pid_m, pid_n, pid_k = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    k_lo = pid_k * k_per_split
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(k_lo, k_lo + k_per_split, BK):
        rk = k0 + tl.arange(0, BK)
        kin = (rk < K) & (rk < k_lo + k_per_split)
        x = tl.load(x_ptr + rm[:, None] * sxm + rk[None, :] * sxk,
                    mask=(rm[:, None] < M) & kin[None, :], other=0.0)
        wm = kin[:, None] & (rn[None, :] < N)
        packed = tl.load(w_ptr + rn[None, :] * (K // 2) + rk[:, None] // 2, mask=wm, other=0)
        shift = tl.where(rk % 2 == 0, 0, 4)
        q = ((packed.to(tl.int32) >> shift[:, None]) & 15).to(x.dtype)
        gi = rn[None, :] * (K // G) + rk[:, None] // G
        s = tl.load(s_ptr + gi, mask=wm, other=0.0).to(x.dtype)
        zs = (tl.load(z_ptr + gi, mask=wm, other=0).to(x.dtype) * s).to(x.dtype)
        w = (q * s).to(x.dtype) - zs
        if IEEE:
            acc += tl.dot(x, w, input_precision="ieee")
        else:
            acc += tl.dot(x, w)
    tl.atomic_add(acc_ptr + rm[:, None] * N + rn[None, :], acc,
                  mask=(rm[:, None] < M) & (rn[None, :] < N))


def w4a16_matmul(x, w_packed, scales, zeros, group_size):
    M, K = x.shape
    N = w_packed.shape[0]
    BM, BN, BK = 16, 64, 64
    split = max(1, min(4, K // 128))
    k_per_split = triton.cdiv(triton.cdiv(K, split), BK) * BK
    split = triton.cdiv(K, k_per_split)
    acc = torch.zeros((M, N), dtype=torch.float32, device=x.device)
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN), split)
    _split_k[grid](x, w_packed, scales, zeros, acc, M, N, K, group_size, x.stride(0), x.stride(1),
                   k_per_split, BM=BM, BN=BN, BK=BK, IEEE=x.dtype == torch.float32)
    return acc.to(x.dtype)
