"""Wrong: dequantizes the weight in a Triton kernel, then multiplies with torch (x @ W.T): the
product belongs in the kernel."""

from __future__ import annotations

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def _dequant(w_ptr, s_ptr, z_ptr, out_ptr, N, K, G, BN: tl.constexpr, BK: tl.constexpr):
    rn = tl.program_id(0) * BN + tl.arange(0, BN)
    rk = tl.program_id(1) * BK + tl.arange(0, BK)
    m = (rn[:, None] < N) & (rk[None, :] < K)
    byte = tl.load(w_ptr + rn[:, None] * (K // 2) + rk[None, :] // 2, mask=m, other=0).to(tl.int32)
    code = (byte >> ((rk[None, :] % 2) * 4)) & 0xF
    g = rn[:, None] * (K // G) + rk[None, :] // G
    s = tl.load(s_ptr + g, mask=m, other=0.0).to(tl.float32)
    z = tl.load(z_ptr + g, mask=m, other=0).to(tl.float32)
    tl.store(out_ptr + rn[:, None] * K + rk[None, :],
             ((code.to(tl.float32) - z) * s).to(out_ptr.dtype.element_ty), mask=m)


def w4a16_matmul(x, w_packed, scales, zeros, group_size):
    M, K = x.shape
    N = w_packed.shape[0]
    w = torch.empty((N, K), dtype=x.dtype, device=x.device)
    _dequant[(triton.cdiv(N, 32), triton.cdiv(K, 64))](w_packed, scales, zeros, w, N, K, group_size,
                                                       BN=32, BK=64)
    return x @ w.T
