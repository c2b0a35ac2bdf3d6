"""Multi-head latent attention (MLA), computed naively and with the up-projections absorbed.

MLA caches one low-rank latent per token instead of per-head keys and values. Per token ``t`` with
hidden state ``x_t`` (row vectors, ``x @ W`` throughout):

- latent ``c_t = x_t @ W_dkv`` (``kv_lora_rank = d_c`` values), cached;
- decoupled RoPE key ``kr_t = rope(x_t @ W_kr, t)`` (``qk_rope_head_dim = d_r`` values), **shared
  by every head**, cached already rotated at the token's position;
- per head ``h``: key ``k_{t,h} = [c_t @ W_uk[h] ; kr_t]`` (``d_n + d_r`` values), value
  ``v_{t,h} = c_t @ W_uv[h]`` (``d_v``), query ``q_{t,h} = [x_t @ W_qc[h] ; rope(x_t @ W_qr[h], t)]``;
- ``o_h = softmax(q_h k_h^T / sqrt(d_n + d_r)) v_h`` (causal), ``out = sum_h o_h @ W_o[h]``.

The cache holds ``d_c + d_r`` values per token and layer, against ``H * (d_n + d_r + d_v)`` for the
keys and values it stands for. Absorption (associativity): ``q_h . k_h = (x @ W_qc[h] @ W_uk[h]^T)
. c + q_rope_h . kr``, so ``W_q_latent[h] = W_qc[h] @ W_uk[h]^T`` (``d_model x d_c``) turns the
query into latent space, and ``o_h @ W_o[h] = (p_h @ c) @ (W_uv[h] @ W_o[h])``, so
``W_o_latent[h] = W_uv[h] @ W_o[h]`` (``d_c x d_model``) reads the attended latent directly: no
key or value of any past token is ever materialised. RoPE cannot go through the absorbed path (a
rotation between ``W_qc`` and ``W_uk`` depends on both positions), which is why it is decoupled.

RoPE here is the interleaved convention of DeepSeek's reference code (``view_as_complex`` over
pairs ``(2i, 2i + 1)``), angle ``position * theta^(-2i / d_r)`` with ``theta = 10000``. Left out,
as they change nothing about caching or absorption: the low-rank query path of DeepSeek-V2/V3
(``q_lora_rank``; DeepSeek-V2-Lite has none), the RMSNorm on the latent, YaRN scaling and batching
across layers.

Sources:
- DeepSeek-AI 2024, *DeepSeek-V2: A Strong, Economical, and Efficient Mixture-of-Experts Language
  Model* (arXiv:2405.04434), section 2.1: low-rank key-value joint compression, absorbing ``W^UK``
  into ``W^UQ`` and ``W^UV`` into ``W^O`` at inference, decoupled RoPE, the softmax scale
  ``1 / sqrt(d_h + d_h^R)`` and the cache of ``(d_c + d_h^R) l`` elements per token.
- huggingface.co/deepseek-ai/DeepSeek-V3 config.json (``kv_lora_rank`` 512, ``qk_rope_head_dim``
  64, ``qk_nope_head_dim`` 128, ``v_head_dim`` 128, 128 heads, ``rope_theta`` 10000).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch
from torch import Tensor

__all__ = [
    "ROPE_THETA",
    "absorb_weights",
    "cache_values_per_token",
    "expanded_values_per_token",
    "latent_kv",
    "mla_absorbed",
    "mla_naive",
    "mla_scores",
    "rope_interleaved",
]

ROPE_THETA = 10000.0
"""RoPE base (``rope_theta`` of DeepSeek-V2 and V3)."""


def rope_interleaved(x: Tensor, positions: Tensor, theta: float = ROPE_THETA,
                     compute_dtype: torch.dtype | None = None) -> Tensor:
    """Rotate the pairs ``(2i, 2i + 1)`` of the last axis by ``positions * theta^(-2i/d)``.

    ``x``: ``(..., T, d)`` with ``d`` even; ``positions``: ``(T,)`` integers. Computed in
    ``compute_dtype`` (default ``x``'s dtype, or float32 for a 16-bit ``x``: a 16-bit angle keeps
    only 8 or 11 significant bits of ``position * theta^(-2i/d)``, whole radians at a few thousand
    tokens; float64 for the exact reference) and returned in it.
    """
    cd = compute_dtype or torch.promote_types(x.dtype, torch.float32)
    d = x.shape[-1]
    if d % 2:
        raise ValueError(f"the RoPE width must be even, got {d}")
    inv_freq = theta ** (-torch.arange(0, d, 2, dtype=cd, device=x.device) / d)  # (d/2,)
    ang = positions.to(x.device, cd)[:, None] * inv_freq  # (T, d/2)
    cos, sin = torch.cos(ang), torch.sin(ang)
    xc = x.to(cd)
    a, b = xc[..., 0::2], xc[..., 1::2]
    out = torch.empty_like(xc)
    out[..., 0::2] = a * cos - b * sin
    out[..., 1::2] = a * sin + b * cos
    return out


def latent_kv(x: Tensor, w_dkv: Tensor, w_kr: Tensor, start: int = 0,
              compute_dtype: torch.dtype | None = None) -> tuple[Tensor, Tensor]:
    """The cache entries of the tokens ``x`` ``(B, T, d_model)`` at positions ``start ..
    start + T - 1``: ``c_kv = x @ w_dkv`` ``(B, T, d_c)`` and ``k_rope = rope(x @ w_kr)``
    ``(B, T, d_r)``, in ``x``'s dtype (computed in ``compute_dtype`` when given)."""
    cd = compute_dtype or x.dtype
    t = x.shape[1]
    c_kv = x.to(cd) @ w_dkv.to(cd)
    pos = torch.arange(start, start + t, device=x.device)
    k_rope = rope_interleaved(x.to(cd) @ w_kr.to(cd), pos)
    return c_kv.to(x.dtype), k_rope.to(x.dtype)


def _query_positions(tq: int, tk: int, device: torch.device) -> Tensor:
    """The new tokens are the last ``tq`` of the ``tk`` cached: positions ``tk - tq .. tk - 1``."""
    if not 1 <= tq <= tk:
        raise ValueError(f"need 1 <= new tokens <= cached tokens, got {tq} and {tk}")
    return torch.arange(tk - tq, tk, device=device)


def _attend(scores: Tensor, tq: int, tk: int) -> Tensor:
    """Causal bottom-right softmax over the last axis of ``scores`` ``(B, H, Tq, Tk)``."""
    i = torch.arange(tq, device=scores.device)[:, None]
    j = torch.arange(tk, device=scores.device)[None, :]
    return torch.softmax(scores.masked_fill(j > i + (tk - tq), float("-inf")), dim=-1)


def mla_naive(x: Tensor, c_kv: Tensor, k_rope: Tensor, w_qc: Tensor, w_qr: Tensor, w_uk: Tensor,
              w_uv: Tensor, w_o: Tensor, compute_dtype: torch.dtype | None = None) -> Tensor:
    """MLA with the per-head keys and values materialised from the latent cache.

    ``x``: ``(B, Tq, d_model)``, the newest ``Tq`` of the ``Tk`` cached tokens; ``c_kv``
    ``(B, Tk, d_c)``; ``k_rope`` ``(B, Tk, d_r)`` (rotated); ``w_qc`` ``(H, d_model, d_n)``; ``w_qr``
    ``(H, d_model, d_r)``; ``w_uk`` ``(H, d_c, d_n)``; ``w_uv`` ``(H, d_c, d_v)``; ``w_o``
    ``(H, d_v, d_model)``. Returns ``(B, Tq, d_model)`` in ``x``'s dtype.
    """
    cd = compute_dtype or x.dtype
    tq, tk = x.shape[1], c_kv.shape[1]
    p = _attend(mla_scores(x, c_kv, k_rope, w_qc, w_qr, w_uk, cd), tq, tk)
    v = torch.einsum("bjc,hcv->bhjv", c_kv.to(cd), w_uv.to(cd))  # (B, H, Tk, d_v): materialised values
    o = p @ v  # (B, H, Tq, d_v)
    return torch.einsum("bhtv,hvm->btm", o, w_o.to(cd)).to(x.dtype)


def mla_scores(x: Tensor, c_kv: Tensor, k_rope: Tensor, w_qc: Tensor, w_qr: Tensor, w_uk: Tensor,
               compute_dtype: torch.dtype | None = None) -> Tensor:
    """The scaled scores ``q_h k_h^T / sqrt(d_n + d_r)`` of every head, ``(B, H, Tq, Tk)``, before
    the causal mask, with the keys materialised (shapes as :func:`mla_naive`)."""
    cd = compute_dtype or x.dtype
    b, tq, _ = x.shape
    tk = c_kv.shape[1]
    xc, c, kr = x.to(cd), c_kv.to(cd), k_rope.to(cd)
    pos = _query_positions(tq, tk, x.device)
    q_nope = torch.einsum("btm,hmn->bhtn", xc, w_qc.to(cd))  # (B, H, Tq, d_n)
    q_rope = rope_interleaved(torch.einsum("btm,hmr->bhtr", xc, w_qr.to(cd)), pos)  # (B, H, Tq, d_r)
    k_nope = torch.einsum("bjc,hcn->bhjn", c, w_uk.to(cd))  # (B, H, Tk, d_n): materialised keys
    heads = w_qc.shape[0]
    k = torch.cat([k_nope, kr[:, None].expand(b, heads, tk, kr.shape[-1])], dim=-1)
    q = torch.cat([q_nope, q_rope], dim=-1)
    return q @ k.transpose(-1, -2) * (1.0 / math.sqrt(q.shape[-1]))  # scale 1 / sqrt(d_n + d_r)


def absorb_weights(w_qc: Tensor, w_uk: Tensor, w_uv: Tensor, w_o: Tensor,
                   compute_dtype: torch.dtype | None = None) -> tuple[Tensor, Tensor]:
    """``(W_q_latent, W_o_latent)``: ``w_qc[h] @ w_uk[h]^T`` ``(H, d_model, d_c)`` and
    ``w_uv[h] @ w_o[h]`` ``(H, d_c, d_model)``, in ``w_qc``'s dtype."""
    cd = compute_dtype or w_qc.dtype
    wq = w_qc.to(cd) @ w_uk.to(cd).transpose(-1, -2)
    wo = w_uv.to(cd) @ w_o.to(cd)
    return wq.to(w_qc.dtype), wo.to(w_qc.dtype)


def mla_absorbed(x: Tensor, c_kv: Tensor, k_rope: Tensor, w_q_latent: Tensor, w_qr: Tensor,
                 w_o_latent: Tensor, qk_head_dim: int,
                 compute_dtype: torch.dtype | None = None) -> Tensor:
    """MLA attending over the latent cache directly (absorbed weights; see the module docstring).

    Shapes as :func:`mla_naive`, with ``w_q_latent`` ``(H, d_model, d_c)`` and ``w_o_latent``
    ``(H, d_c, d_model)``; ``qk_head_dim = d_n + d_r`` sets the scale ``1 / sqrt(qk_head_dim)``.
    """
    cd = compute_dtype or x.dtype
    tq, tk = x.shape[1], c_kv.shape[1]
    xc, c, kr = x.to(cd), c_kv.to(cd), k_rope.to(cd)
    pos = _query_positions(tq, tk, x.device)
    q_lat = torch.einsum("btm,hmc->bhtc", xc, w_q_latent.to(cd))  # (B, H, Tq, d_c)
    q_rope = rope_interleaved(torch.einsum("btm,hmr->bhtr", xc, w_qr.to(cd)), pos)
    scores = torch.einsum("bhtc,bjc->bhtj", q_lat, c) + torch.einsum("bhtr,bjr->bhtj", q_rope, kr)
    p = _attend(scores * (1.0 / math.sqrt(qk_head_dim)), tq, tk)
    o_lat = torch.einsum("bhtj,bjc->bhtc", p, c)  # (B, H, Tq, d_c): attended latents
    return torch.einsum("bhtc,hcm->btm", o_lat, w_o_latent.to(cd)).to(x.dtype)


def cache_values_per_token(config: Mapping[str, Any]) -> int:
    """Values an MLA layer caches per token: ``kv_lora_rank + qk_rope_head_dim``."""
    return int(config["kv_lora_rank"]) + int(config["qk_rope_head_dim"])


def expanded_values_per_token(config: Mapping[str, Any]) -> int:
    """Values per token and layer of the keys and values MLA stands for, had they been cached:
    ``H * (qk_nope_head_dim + qk_rope_head_dim)`` for the keys plus ``H * v_head_dim``."""
    h = int(config["num_attention_heads"])
    return h * (int(config["qk_nope_head_dim"]) + int(config["qk_rope_head_dim"])) + h * int(config["v_head_dim"])
