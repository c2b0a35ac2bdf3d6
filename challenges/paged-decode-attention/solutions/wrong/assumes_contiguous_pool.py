"""Wrong: computes pool offsets from the shape, as if k_pool and v_pool were contiguous, instead of using their strides."""

from __future__ import annotations

import math
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def _paged_decode(q_ptr, k_ptr, v_ptr, bt_ptr, len_ptr, o_ptr,
                  sqb, sqh, sqd,
                  skn, sks, skh, skd,
                  svn, svs, svh, svd,
                  sbb, sbm,
                  sob, soh, sod,
                  group, scale,
                  BLOCK: tl.constexpr, D: tl.constexpr):
    b = tl.program_id(0)
    h = tl.program_id(1)
    kvh = h // group
    rd = tl.arange(0, D)
    rs = tl.arange(0, BLOCK)
    q = tl.load(q_ptr + b * sqb + h * sqh + rd * sqd).to(tl.float32)
    n = tl.load(len_ptr + b)
    m = tl.full([1], float("-inf"), tl.float32)
    den = tl.zeros([1], tl.float32)
    acc = tl.zeros([D], tl.float32)
    for i in range(0, tl.cdiv(n, BLOCK)):
        blk = tl.load(bt_ptr + b * sbb + i * sbm).to(tl.int64)
        ok = i * BLOCK + rs < n
        k = tl.load(k_ptr + blk * skn + rs[:, None] * sks + kvh * skh + rd[None, :] * skd,
                    mask=ok[:, None], other=0.0).to(tl.float32)
        s = tl.sum(k * q[None, :], 1) * scale
        s = tl.where(ok, s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, 0))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new)
        den = den * alpha + tl.sum(p, 0)
        v = tl.load(v_ptr + blk * svn + rs[:, None] * svs + kvh * svh + rd[None, :] * svd,
                    mask=ok[:, None], other=0.0).to(tl.float32)
        acc = acc * alpha + tl.sum(p[:, None] * v, 0)
        m = m_new
    out = acc / den
    tl.store(o_ptr + b * sob + h * soh + rd * sod, out.to(o_ptr.dtype.element_ty))


def paged_decode_attention(q, k_pool, v_pool, block_tables, seq_lens, sm_scale=None):
    B, Hq, D = q.shape
    _, bs, Hkv, _ = k_pool.shape
    scale = 1.0 / math.sqrt(D) if sm_scale is None else sm_scale
    out = torch.empty((B, Hq, D), dtype=q.dtype, device=q.device)
    _paged_decode[(B, Hq)](
        q, k_pool, v_pool, block_tables, seq_lens, out,
        *q.stride(), bs * Hkv * D, Hkv * D, D, 1, bs * Hkv * D, Hkv * D, D, 1, *block_tables.stride(), *out.stride(),
        Hq // Hkv, scale, BLOCK=bs, D=D)
    return out
