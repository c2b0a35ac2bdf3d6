"""The absorbed form hands the attention to scaled_dot_product_attention."""

from __future__ import annotations

import math

import torch


def _rope(y, pos):
    d = y.shape[-1]
    inv_freq = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float32, device=y.device) / d)
    ang = pos.to(torch.float32)[:, None] * inv_freq
    a, b = y[..., 0::2], y[..., 1::2]
    out = torch.empty_like(y)
    out[..., 0::2] = a * ang.cos() - b * ang.sin()
    out[..., 1::2] = a * ang.sin() + b * ang.cos()
    return out


def latent_kv(x, w_dkv, w_kr, start=0):
    t = x.shape[1]
    pos = torch.arange(start, start + t, device=x.device)
    c = x.float() @ w_dkv.float()
    kr = _rope(x.float() @ w_kr.float(), pos)
    return c.to(x.dtype), kr.to(x.dtype)


def _softmax_causal(s, tq, tk):
    i = torch.arange(tq, device=s.device)[:, None]
    j = torch.arange(tk, device=s.device)[None, :]
    return torch.softmax(s.masked_fill(j > i + tk - tq, float("-inf")), dim=-1)


def mla_naive(x, c_kv, k_rope, w_qc, w_qr, w_uk, w_uv, w_o):
    b, tq, _ = x.shape
    tk = c_kv.shape[1]
    h = w_qc.shape[0]
    pos = torch.arange(tk - tq, tk, device=x.device)
    q = torch.cat([torch.einsum("btm,hmn->bhtn", x, w_qc),
                   _rope(torch.einsum("btm,hmr->bhtr", x, w_qr), pos)], dim=-1)
    k = torch.cat([torch.einsum("bjc,hcn->bhjn", c_kv, w_uk),
                   k_rope[:, None].expand(b, h, tk, k_rope.shape[-1])], dim=-1)
    v = torch.einsum("bjc,hcv->bhjv", c_kv, w_uv)
    p = _softmax_causal(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), tq, tk)
    return torch.einsum("bhtv,hvm->btm", p @ v, w_o)


def absorb_weights(w_qc, w_uk, w_uv, w_o):
    return torch.einsum("hmn,hcn->hmc", w_qc, w_uk), torch.einsum("hcv,hvm->hcm", w_uv, w_o)


def mla_absorbed(x, c_kv, k_rope, w_q_latent, w_qr, w_o_latent, qk_head_dim):
    tq, tk = x.shape[1], c_kv.shape[1]
    pos = torch.arange(tk - tq, tk, device=x.device)
    q_lat = torch.einsum("btm,hmc->bhtc", x, w_q_latent)
    q_rope = _rope(torch.einsum("btm,hmr->bhtr", x, w_qr), pos)
    s = torch.einsum("bhtc,bjc->bhtj", q_lat, c_kv) + torch.einsum("bhtr,bjr->bhtj", q_rope, k_rope)
    q = torch.cat([q_lat, q_rope], dim=-1)
    k = torch.cat([c_kv, k_rope], dim=-1)[:, None]
    mask = torch.ones(tq, tk, dtype=torch.bool).tril(tk - tq)
    o = torch.nn.functional.scaled_dot_product_attention(q, k, c_kv[:, None], attn_mask=mask, scale=qk_head_dim ** -0.5)
    return torch.einsum("bhtc,hcm->btm", o, w_o_latent)
