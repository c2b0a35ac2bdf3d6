"""One head at a time with plain matmuls, RoPE through complex multiplication (as DeepSeek's own
code does), a hand-written stable softmax, and the absorbed form seen as multi-query attention:
one shared key [c_kv, k_rope] of width d_c + d_r and one shared value c_kv."""

from __future__ import annotations

import math

import torch


def _rope(y, pos):
    d = y.shape[-1]
    inv_freq = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float32, device=y.device) / d)
    ang = pos.to(torch.float32)[:, None] * inv_freq  # (T, d/2)
    rot = torch.polar(torch.ones_like(ang), ang)
    z = torch.view_as_complex(y.float().reshape(*y.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(z * rot).reshape(y.shape).to(y.dtype)


def latent_kv(x, w_dkv, w_kr, start=0):
    pos = torch.arange(start, start + x.shape[1], device=x.device)
    c = torch.matmul(x.float(), w_dkv.float()).to(x.dtype)
    kr = _rope(torch.matmul(x.float(), w_kr.float()), pos).to(x.dtype)
    return c, kr


def _attend(s, v):
    """Softmax over the last axis (masked entries are -inf) and the weighted sum of v."""
    s = s - s.max(dim=-1, keepdim=True).values
    e = torch.exp(s)
    return (e / e.sum(dim=-1, keepdim=True)) @ v


def _mask(tq, tk, device):
    i = torch.arange(tq, device=device)[:, None]
    j = torch.arange(tk, device=device)[None, :]
    return j <= i + (tk - tq)


def mla_naive(x, c_kv, k_rope, w_qc, w_qr, w_uk, w_uv, w_o):
    tq, tk = x.shape[1], c_kv.shape[1]
    pos = torch.arange(tk - tq, tk, device=x.device)
    visible = _mask(tq, tk, x.device)
    out = torch.zeros(x.shape[0], tq, w_o.shape[-1], dtype=x.dtype, device=x.device)
    for h in range(w_qc.shape[0]):
        q = torch.cat([x @ w_qc[h], _rope(x @ w_qr[h], pos)], dim=-1)  # (B, Tq, d_n + d_r)
        k = torch.cat([c_kv @ w_uk[h], k_rope], dim=-1)  # (B, Tk, d_n + d_r)
        v = c_kv @ w_uv[h]  # (B, Tk, d_v)
        s = (q @ k.transpose(1, 2)) / math.sqrt(q.shape[-1])
        o = _attend(torch.where(visible, s, float("-inf")), v)
        out = out + o @ w_o[h]
    return out


def absorb_weights(w_qc, w_uk, w_uv, w_o):
    w_q_latent = torch.stack([w_qc[h] @ w_uk[h].T for h in range(w_qc.shape[0])])
    w_o_latent = torch.stack([w_uv[h] @ w_o[h] for h in range(w_uv.shape[0])])
    return w_q_latent, w_o_latent


def mla_absorbed(x, c_kv, k_rope, w_q_latent, w_qr, w_o_latent, qk_head_dim):
    tq, tk = x.shape[1], c_kv.shape[1]
    pos = torch.arange(tk - tq, tk, device=x.device)
    visible = _mask(tq, tk, x.device)
    key = torch.cat([c_kv, k_rope], dim=-1)  # (B, Tk, d_c + d_r): one key for every head
    out = torch.zeros(x.shape[0], tq, w_o_latent.shape[-1], dtype=x.dtype, device=x.device)
    for h in range(w_q_latent.shape[0]):
        q = torch.cat([x @ w_q_latent[h], _rope(x @ w_qr[h], pos)], dim=-1)  # (B, Tq, d_c + d_r)
        s = (q @ key.transpose(1, 2)) / math.sqrt(qk_head_dim)
        o_lat = _attend(torch.where(visible, s, float("-inf")), c_kv)  # (B, Tq, d_c)
        out = out + o_lat @ w_o_latent[h]
    return out
