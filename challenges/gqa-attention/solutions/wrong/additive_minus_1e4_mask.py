"""Adds -1e4 to the masked scores instead of replacing them with -inf: a hidden key scoring above 1e4 still gets weight."""

import math

import torch


def gqa_attention(q, k, v, causal=False, sm_scale=None):
    b, hq, tq, d = q.shape
    hkv, tk = k.shape[1], k.shape[2]
    g = hq // hkv
    scale = sm_scale if sm_scale is not None else d ** -0.5
    qg = q.float().reshape(b, hkv, g, tq, d)  # head h = kv * g + member
    kg = k.float()[:, :, None]  # (B, Hkv, 1, Tk, D)
    vg = v.float()[:, :, None]
    s = torch.einsum("bkgqd,bkxtd->bkgqt", qg, kg) * scale  # (B, Hkv, G, Tq, Tk)
    if causal:
        i = torch.arange(tq, device=q.device)[:, None]
        j = torch.arange(tk, device=q.device)[None, :]
        s = s + torch.where(j <= i + (tk - tq), 0.0, -1e4)
    s = s - s.amax(dim=-1, keepdim=True)
    p = s.exp()
    p = p / p.sum(dim=-1, keepdim=True)
    o = torch.einsum("bkgqt,bkxtd->bkgqd", p, vg)
    return o.reshape(b, hq, tq, d).to(q.dtype)
