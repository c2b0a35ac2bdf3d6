"""Wrong: computes the attention in Python floats read with float() and launches a token Triton copy kernel."""
import math
import os

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
    out = torch.empty((B, H, Tq, D), dtype=q.dtype)
    for b in range(B):
        for h in range(H):
            qs = [[float(x) for x in row] for row in q[b, h]]
            ks = [[float(x) for x in row] for row in k[b, h]]
            vs = [[float(x) for x in row] for row in v[b, h]]
            for i in range(Tq):
                hi = i + Tk - Tq + 1 if causal else Tk
                s = [sum(a * c for a, c in zip(qs[i], ks[j])) * scale for j in range(hi)]
                m = max(s)
                p = [math.exp(x - m) for x in s]
                z = sum(p)
                for d in range(D):
                    out[b, h, i, d] = sum(p[j] * vs[j][d] for j in range(hi)) / z
    res = torch.empty_like(out)
    n = out.numel()
    _copy[(triton.cdiv(n, 256),)](out, res, n, BLOCK=256)
    return res
