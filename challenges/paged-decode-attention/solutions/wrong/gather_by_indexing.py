"""Wrong: gathers the cache with advanced indexing in torch, k_pool[block_tables[b]], and does the
attention on the gathered copy in a kernel: the gather is torch computation during the call."""

from __future__ import annotations

import math
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def _dense_decode(q_ptr, k_ptr, v_ptr, o_ptr, n, group, scale,
                  sqh, skt, skh, svt, svh, soh, TILE: tl.constexpr, D: tl.constexpr):
    h = tl.program_id(0)
    kvh = h // group
    rd = tl.arange(0, D)
    rt = tl.arange(0, TILE)
    q = tl.load(q_ptr + h * sqh + rd).to(tl.float32)
    m = tl.full([1], float("-inf"), tl.float32)
    den = tl.zeros([1], tl.float32)
    acc = tl.zeros([D], tl.float32)
    for t0 in range(0, n, TILE):
        ok = t0 + rt < n
        k = tl.load(k_ptr + (t0 + rt)[:, None] * skt + kvh * skh + rd[None, :], mask=ok[:, None], other=0.0)
        s = tl.where(ok, tl.sum(k * q[None, :], 1) * scale, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, 0))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new)
        den = den * alpha + tl.sum(p, 0)
        v = tl.load(v_ptr + (t0 + rt)[:, None] * svt + kvh * svh + rd[None, :], mask=ok[:, None], other=0.0)
        acc = acc * alpha + tl.sum(p[:, None] * v, 0)
        m = m_new
    tl.store(o_ptr + h * soh + rd, (acc / den).to(o_ptr.dtype.element_ty))


def paged_decode_attention(q, k_pool, v_pool, block_tables, seq_lens, sm_scale=None):
    B, Hq, D = q.shape
    bs, Hkv = k_pool.shape[1], k_pool.shape[2]
    scale = 1.0 / math.sqrt(D) if sm_scale is None else sm_scale
    out = torch.empty((B, Hq, D), dtype=q.dtype, device=q.device)
    for b in range(B):
        n = int(seq_lens[b])
        k = k_pool[block_tables[b].long()].flatten(0, 1)  # (max_blocks * bs, Hkv, D)
        v = v_pool[block_tables[b].long()].flatten(0, 1)
        qb = q[b].contiguous()
        ob = out[b]
        _dense_decode[(Hq,)](qb, k, v, ob, n, Hq // Hkv, scale, qb.stride(0), k.stride(0), k.stride(1),
                             v.stride(0), v.stride(1), ob.stride(0), TILE=16, D=D)
    return out
