"""Wrong: computes the attention in NumPy and launches a token Triton copy kernel beside it."""
import math
import os

import numpy as np
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def _copy(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)


def flash_attention(q, k, v, causal=False, sm_scale=None):
    B, H, Tq, D = q.shape
    Tk = k.shape[2]
    scale = 1.0 / math.sqrt(D) if sm_scale is None else sm_scale
    qn, kn, vn = q.detach().cpu().numpy(), k.detach().cpu().numpy(), v.detach().cpu().numpy()
    s = (qn.astype(np.float64)[:, :, :, None, :] * kn.astype(np.float64)[:, :, None, :, :]).sum(-1) * scale
    if causal:
        i = np.arange(Tq)[:, None]
        j = np.arange(Tk)[None, :]
        s = np.where(j <= i + Tk - Tq, s, -np.inf)
    s = s - s.max(-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(-1, keepdims=True)
    o = (p[..., None] * vn.astype(np.float64)[:, :, None, :, :]).sum(-2).astype(np.float32)
    src = torch.from_numpy(o).to(q.device)
    out = torch.empty_like(src)
    n = src.numel()
    _copy[(triton.cdiv(n, 256),)](src, out, n, BLOCK=256)
    return out.to(q.dtype)
