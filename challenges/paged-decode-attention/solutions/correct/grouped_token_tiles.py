"""One program per (sequence, kv head) serves the whole group of query heads that share it, so each
page is read once per group; keys are walked in tiles of TILE tokens whatever the block size, each
token finding its block through the table; exp2 with log2(e) folded into the scale."""

from __future__ import annotations

import math
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

LOG2E = 1.4426950408889634


@triton.jit
def _grouped_decode(q_ptr, k_ptr, v_ptr, bt_ptr, len_ptr, o_ptr,
                    sqb, sqh, sqd, skn, sks, skh, skd, svn, svs, svh, svd, sbb, sbm, sob, soh, sod,
                    block_size, qk_scale,
                    GROUP: tl.constexpr, G_PAD: tl.constexpr, TILE: tl.constexpr, D: tl.constexpr):
    b = tl.program_id(0)
    kvh = tl.program_id(1)
    rg = tl.arange(0, G_PAD)
    rd = tl.arange(0, D)
    rt = tl.arange(0, TILE)
    heads = kvh * GROUP + rg  # the query heads that read this kv head
    hmask = rg < GROUP
    q = tl.load(q_ptr + b * sqb + heads[:, None] * sqh + rd[None, :] * sqd,
                mask=hmask[:, None], other=0.0).to(tl.float32)  # (G, D)
    n = tl.load(len_ptr + b)
    m = tl.full([G_PAD], float("-inf"), tl.float32)
    den = tl.zeros([G_PAD], tl.float32)
    acc = tl.zeros([G_PAD, D], tl.float32)
    for t0 in range(0, n, TILE):
        pos = t0 + rt
        ok = pos < n
        blk = tl.load(bt_ptr + b * sbb + (pos // block_size) * sbm, mask=ok, other=0).to(tl.int64)
        slot = pos % block_size
        k = tl.load(k_ptr + blk[:, None] * skn + slot[:, None] * sks + kvh * skh + rd[None, :] * skd,
                    mask=ok[:, None], other=0.0).to(tl.float32)  # (TILE, D)
        s = tl.sum(q[:, None, :] * k[None, :, :], 2) * qk_scale  # (G, TILE), base 2
        s = tl.where(ok[None, :], s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, 1))
        alpha = tl.exp2(m - m_new)
        p = tl.exp2(s - m_new[:, None])
        den = den * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + blk[:, None] * svn + slot[:, None] * svs + kvh * svh + rd[None, :] * svd,
                    mask=ok[:, None], other=0.0).to(tl.float32)
        acc = acc * alpha[:, None] + tl.sum(p[:, :, None] * v[None, :, :], 1)
        m = m_new
    out = acc / den[:, None]
    tl.store(o_ptr + b * sob + heads[:, None] * soh + rd[None, :] * sod,
             out.to(o_ptr.dtype.element_ty), mask=hmask[:, None])


def paged_decode_attention(q, k_pool, v_pool, block_tables, seq_lens, sm_scale=None):
    B, Hq, D = q.shape
    block_size, Hkv = k_pool.shape[1], k_pool.shape[2]
    group = Hq // Hkv
    scale = 1.0 / math.sqrt(D) if sm_scale is None else sm_scale
    out = torch.empty((B, Hq, D), dtype=q.dtype, device=q.device)
    _grouped_decode[(B, Hkv)](
        q, k_pool, v_pool, block_tables, seq_lens, out,
        *q.stride(), *k_pool.stride(), *v_pool.stride(), *block_tables.stride(), *out.stride(),
        block_size, scale * LOG2E,
        GROUP=group, G_PAD=triton.next_power_of_2(group), TILE=16, D=D)
    return out
