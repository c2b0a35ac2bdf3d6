"""Computes the online softmax correctly but in a Python loop of torch ops, with no Triton kernel."""

import math

import torch


def flash_attention(q, k, v, causal=False, sm_scale=None):
    b, h, tq, d = q.shape
    tk = k.shape[2]
    scale = 1.0 / math.sqrt(d) if sm_scale is None else sm_scale
    qf, kf, vf = q.float(), k.float(), v.float()
    m = torch.full((b, h, tq, 1), float("-inf"))
    l = torch.zeros((b, h, tq, 1))
    acc = torch.zeros((b, h, tq, d))
    i = torch.arange(tq)[:, None]
    for j in range(tk):
        s = (qf * kf[:, :, j:j + 1]).sum(-1, keepdim=True) * scale
        if causal:
            s = s.masked_fill(j > i + tk - tq, float("-inf"))
        m_new = torch.maximum(m, s)
        alpha = torch.exp(m - m_new)
        p = torch.exp(s - m_new)
        l = l * alpha + p
        acc = acc * alpha + p * vf[:, :, j:j + 1]
        m = m_new
    return (acc / l).to(q.dtype)
