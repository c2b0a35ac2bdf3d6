"""Expands kv heads with repeat instead of repeat_interleave: query head h reads kv head h % num_kv_heads."""

import math

import torch


def gqa_attention(q, k, v, causal=False, sm_scale=None):
    b, hq, tq, d = q.shape
    hkv, tk = k.shape[1], k.shape[2]
    scale = 1.0 / math.sqrt(d) if sm_scale is None else sm_scale
    kf = k.float().repeat(1, hq // hkv, 1, 1)  # (B, Hq, Tk, D)
    vf = v.float().repeat(1, hq // hkv, 1, 1)
    s = torch.matmul(q.float(), kf.transpose(-1, -2)) * scale  # (B, Hq, Tq, Tk)
    if causal:
        keep = torch.ones(tq, tk, dtype=torch.bool, device=q.device).tril(diagonal=tk - tq)
        s = s.masked_fill(~keep, float("-inf"))
    return torch.matmul(torch.softmax(s, dim=-1), vf).to(q.dtype)
