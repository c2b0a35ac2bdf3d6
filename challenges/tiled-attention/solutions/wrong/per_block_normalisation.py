"""Normalises each block by its own sum and averages the block outputs, which weighs every block equally instead of by its share of the softmax mass."""

import math

import torch


def tiled_attention(q, k, v, causal=False, sm_scale=None, block_size=64):
    b, h, tq, d = q.shape
    tk = k.shape[2]
    scale = 1.0 / math.sqrt(d) if sm_scale is None else sm_scale
    m = torch.full((b, h, tq, 1), -math.inf, device=q.device)
    row_sum = torch.zeros((b, h, tq, 1), device=q.device)
    acc = torch.zeros((b, h, tq, d), device=q.device)
    rows = torch.arange(tq, device=q.device)[:, None] + (tk - tq)
    nblocks = 0
    for j0 in range(0, tk, block_size):
        kj, vj = k[:, :, j0:j0 + block_size].float(), v[:, :, j0:j0 + block_size].float()
        s = torch.matmul(q.float(), kj.transpose(-1, -2)) * scale  # (B, H, Tq, Bk)
        if causal:
            cols = torch.arange(j0, j0 + kj.shape[2], device=q.device)[None, :]
            s = s.masked_fill(cols > rows, -math.inf)
        m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
        alpha = torch.exp(m - m_new)
        p = torch.exp(s - m_new)
        acc = acc + torch.matmul(p / p.sum(dim=-1, keepdim=True).clamp_min(1e-30), vj)
        nblocks += 1
        m = m_new
    return (acc / nblocks).to(q.dtype)
