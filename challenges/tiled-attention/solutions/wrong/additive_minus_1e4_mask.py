"""Adds -1e4 to the masked scores instead of -inf: a hidden key scoring above 1e4 still gets weight."""

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
    for j0 in range(0, tk, block_size):
        kj, vj = k[:, :, j0:j0 + block_size].float(), v[:, :, j0:j0 + block_size].float()
        s = torch.matmul(q.float(), kj.transpose(-1, -2)) * scale  # (B, H, Tq, Bk)
        if causal:
            cols = torch.arange(j0, j0 + kj.shape[2], device=q.device)[None, :]
            s = s - 1e4 * (cols > rows).float()
        m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
        alpha = torch.exp(m - m_new)
        p = torch.exp(s - m_new)
        row_sum = row_sum * alpha + p.sum(dim=-1, keepdim=True)
        acc = acc * alpha + torch.matmul(p, vj)
        m = m_new
    return (acc / row_sum).to(q.dtype)
