"""FlashAttention-1 style: the output tile is kept normalised after every key block
(o = o * l_old * exp(m_old - m_new) / l_new + p v / l_new), natural exp, small 16x16 tiles, and
the causal mask applied to every block without skipping any."""

from __future__ import annotations

import math
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def attn_kernel(Q, K, V, Out, q_strides_b, q_strides_h, q_strides_t, q_strides_d,
                k_strides_b, k_strides_h, k_strides_t, k_strides_d,
                v_strides_b, v_strides_h, v_strides_t, v_strides_d,
                o_strides_b, o_strides_h, o_strides_t, o_strides_d,
                n_heads, len_q, len_k, scale,
                IS_CAUSAL: tl.constexpr, TILE: tl.constexpr, DIM: tl.constexpr):
    i_blk = tl.program_id(0)
    z = tl.program_id(1)
    bb = z // n_heads
    hh = z - bb * n_heads
    qi = i_blk * TILE + tl.arange(0, TILE)
    dd = tl.arange(0, DIM)
    q_tile = tl.load(Q + bb * q_strides_b + hh * q_strides_h + qi[:, None] * q_strides_t
                     + dd[None, :] * q_strides_d, mask=qi[:, None] < len_q, other=0.0)
    row_max = tl.zeros([TILE], tl.float32) - float("inf")
    row_sum = tl.zeros([TILE], tl.float32)
    o_tile = tl.zeros([TILE, DIM], tl.float32)
    for start in range(0, len_k, TILE):
        kj = start + tl.arange(0, TILE)
        k_tile = tl.load(K + bb * k_strides_b + hh * k_strides_h + kj[:, None] * k_strides_t
                         + dd[None, :] * k_strides_d, mask=kj[:, None] < len_k, other=0.0)
        v_tile = tl.load(V + bb * v_strides_b + hh * v_strides_h + kj[:, None] * v_strides_t
                         + dd[None, :] * v_strides_d, mask=kj[:, None] < len_k, other=0.0)
        scores = tl.dot(q_tile, tl.trans(k_tile), input_precision="ieee") * scale
        keep = kj[None, :] < len_k
        if IS_CAUSAL:
            keep = keep & (kj[None, :] <= qi[:, None] + (len_k - len_q))
        scores = tl.where(keep, scores, float("-inf"))
        blk_max = tl.max(scores, 1)
        new_max = tl.maximum(row_max, blk_max)
        safe_max = tl.where(new_max == float("-inf"), 0.0, new_max)
        p = tl.exp(scores - safe_max[:, None])
        correction = tl.exp(row_max - safe_max)
        new_sum = row_sum * correction + tl.sum(p, 1)
        denom = tl.where(new_sum == 0.0, 1.0, new_sum)
        o_tile = o_tile * (row_sum * correction / denom)[:, None] \
            + tl.dot(p.to(v_tile.dtype), v_tile, input_precision="ieee") / denom[:, None]
        row_max = new_max
        row_sum = new_sum
    tl.store(Out + bb * o_strides_b + hh * o_strides_h + qi[:, None] * o_strides_t
             + dd[None, :] * o_strides_d, o_tile.to(Out.dtype.element_ty), mask=qi[:, None] < len_q)


def flash_attention(q, k, v, causal=False, sm_scale=None):
    batch, heads, len_q, dim = q.shape
    scale = sm_scale if sm_scale is not None else dim ** -0.5
    out = q.new_empty(q.shape)
    tile = 16
    grid = (math.ceil(len_q / tile), batch * heads)
    attn_kernel[grid](q, k, v, out, *q.stride(), *k.stride(), *v.stride(), *out.stride(),
                      heads, len_q, k.shape[2], scale, IS_CAUSAL=causal, TILE=tile, DIM=dim)
    return out
