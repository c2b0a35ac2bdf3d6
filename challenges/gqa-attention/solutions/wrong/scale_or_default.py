"""sm_scale or 1/sqrt(d): an explicit sm_scale of 0.0 is replaced by the default."""

import math

import torch


def gqa_attention(q, k, v, causal=False, sm_scale=None):
    b, hq, tq, d = q.shape
    hkv, tk = k.shape[1], k.shape[2]
    g = hq // hkv
    scale = sm_scale or d ** -0.5
    qg = q.float().reshape(b, hkv, g, tq, d)  # head h = kv * g + member
    kg = k.float()[:, :, None]  # (B, Hkv, 1, Tk, D)
    vg = v.float()[:, :, None]
    s = torch.einsum("bkgqd,bkxtd->bkgqt", qg, kg) * scale  # (B, Hkv, G, Tq, Tk)
    if causal:
        i = torch.arange(tq, device=q.device)[:, None]
        j = torch.arange(tk, device=q.device)[None, :]
        s = torch.where(j <= i + (tk - tq), s, torch.tensor(-math.inf, device=q.device))
    s = s - s.amax(dim=-1, keepdim=True)
    p = s.exp()
    p = p / p.sum(dim=-1, keepdim=True)
    o = torch.einsum("bkgqt,bkxtd->bkgqd", p, vg)
    return o.reshape(b, hq, tq, d).to(q.dtype)
