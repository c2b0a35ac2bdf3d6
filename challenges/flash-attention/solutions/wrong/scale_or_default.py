"""sm_scale or 1/sqrt(head_dim): an explicit sm_scale of 0.0 is replaced by the default."""

from __future__ import annotations

import math
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def _fwd(q_ptr, k_ptr, v_ptr, o_ptr,
         sqb, sqh, sqm, sqd, skb, skh, skn, skd, svb, svh, svn, svd, sob, soh, som, sod,
         H, Tq, Tk, qk_scale,
         CAUSAL: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, D: tl.constexpr):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    rm = pid_m * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rd = tl.arange(0, D)
    q = tl.load(q_ptr + b * sqb + h * sqh + rm[:, None] * sqm + rd[None, :] * sqd,
                mask=rm[:, None] < Tq, other=0.0)
    m = tl.full([BM], float("-inf"), tl.float32)
    s_sum = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, D], tl.float32)
    off = Tk - Tq
    end = Tk
    if CAUSAL:
        end = tl.minimum((pid_m + 1) * BM, Tq) + off
    for n0 in range(0, end, BN):
        cols = n0 + rn
        k = tl.load(k_ptr + b * skb + h * skh + cols[None, :] * skn + rd[:, None] * skd,
                    mask=cols[None, :] < Tk, other=0.0)  # (D, BN)
        s = tl.dot(q, k, input_precision="ieee") * qk_scale
        ok = cols[None, :] < Tk
        if CAUSAL:
            ok = ok & (cols[None, :] <= rm[:, None] + off)
        s = tl.where(ok, s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, 1))
        alpha = tl.exp2(m - m_new)
        p = tl.exp2(s - m_new[:, None])
        s_sum = s_sum * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + b * svb + h * svh + cols[:, None] * svn + rd[None, :] * svd,
                    mask=cols[:, None] < Tk, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision="ieee")
        m = m_new
    out = acc / s_sum[:, None]
    tl.store(o_ptr + b * sob + h * soh + rm[:, None] * som + rd[None, :] * sod,
             out.to(o_ptr.dtype.element_ty), mask=rm[:, None] < Tq)


def flash_attention(q, k, v, causal=False, sm_scale=None):
    B, H, Tq, D = q.shape
    Tk = k.shape[2]
    scale = sm_scale or 1.0 / math.sqrt(D)
    o = torch.empty((B, H, Tq, D), dtype=q.dtype, device=q.device)
    BM = BN = 32
    _fwd[(triton.cdiv(Tq, BM), B * H)](
        q, k, v, o, *q.stride(), *k.stride(), *v.stride(), *o.stride(),
        H, Tq, Tk, scale * 1.4426950408889634, CAUSAL=causal, BM=BM, BN=BN, D=D)
    return o
