"""Exact attention computed one key block at a time with an online softmax, in plain PyTorch.

Milakov & Gimelshein 2018, *Online normalizer calculation for softmax*: a softmax can be computed
in one pass by carrying the running maximum ``m`` and the running sum ``l = sum exp(s - m)``, and
rescaling ``l`` by ``exp(m_old - m_new)`` whenever the maximum grows. Dao et al. 2022,
*FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness*, apply the same
rescaling to the output accumulator ``acc = sum exp(s - m) v`` so that attention never holds the
``seq_q x seq_k`` score matrix: only one ``seq_q x block`` slice at a time. The result is exact
(up to floating-point rounding), not an approximation.

This is the algorithm of :mod:`inferview.reference.flash_attention` without the kernel: easy to read
and to step through, and its peak memory grows with ``block_size``, not with ``seq_k``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from inferview.reference.attention import repeat_kv
from torch import Tensor


@dataclass(frozen=True)
class TilingConfig:
    """How the keys are walked."""

    block_size: int = 64
    """Keys per block: the score slice held at once is ``(B, H, Tq, block_size)``."""


def tiled_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    causal: bool = False,
    sm_scale: float | None = None,
    block_size: int = 64,
) -> Tensor:
    """Attention over key blocks with an online softmax.

    ``q``: ``(B, H, Tq, D)``; ``k``, ``v``: ``(B, Hkv, Tk, D)`` (``H % Hkv == 0``; query head ``h``
    reads kv head ``h // (H // Hkv)``). ``causal`` uses the bottom-right mask (query ``i`` sees keys
    ``j <= i + Tk - Tq``; needs ``Tq <= Tk``). Accumulates in float32 (float64 stays float64) and
    returns ``(B, H, Tq, D)`` in ``q``'s dtype.
    """
    b, h, tq, d = q.shape
    tk = k.shape[2]
    if block_size < 1:
        raise ValueError(f"block_size must be >= 1, got {block_size}")
    if causal and tq > tk:
        raise ValueError(f"causal attention needs seq_q <= seq_k, got {tq} > {tk}")
    scale = 1.0 / math.sqrt(d) if sm_scale is None else sm_scale
    acc_dtype = torch.float64 if q.dtype == torch.float64 else torch.float32
    group = h // k.shape[1]

    qf = q.to(acc_dtype)  # (B, H, Tq, D)
    m = torch.full((b, h, tq, 1), float("-inf"), dtype=acc_dtype, device=q.device)  # running max
    l_i = torch.zeros((b, h, tq, 1), dtype=acc_dtype, device=q.device)  # running sum of exp(s - m)
    acc = torch.zeros((b, h, tq, d), dtype=acc_dtype, device=q.device)  # running sum of exp(s - m) v
    i = torch.arange(tq, device=q.device)[:, None]  # query index: (Tq, 1)

    for j0 in range(0, tk, block_size):
        j1 = min(j0 + block_size, tk)
        kj = repeat_kv(k[:, :, j0:j1], group).to(acc_dtype)  # (B, H, Bk, D)
        vj = repeat_kv(v[:, :, j0:j1], group).to(acc_dtype)  # (B, H, Bk, D)
        s = torch.matmul(qf, kj.transpose(-1, -2)) * scale  # s = q k^T / sqrt(d): (B, H, Tq, Bk)
        if causal:
            j = torch.arange(j0, j1, device=q.device)[None, :]  # key index: (1, Bk)
            s = s.masked_fill(j > i + (tk - tq), float("-inf"))  # bottom-right mask
        m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))  # m' = max(m, max_j s_j)
        m_safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)  # rows seeing nothing yet
        alpha = torch.exp(m - m_safe)  # rescale what was summed under the old max: exp(m - m')
        p = torch.exp(s - m_safe)  # (B, H, Tq, Bk)
        l_i = alpha * l_i + p.sum(dim=-1, keepdim=True)  # l' = exp(m - m') l + sum_j exp(s_j - m')
        acc = alpha * acc + torch.matmul(p, vj)  # acc' = exp(m - m') acc + sum_j exp(s_j - m') v_j
        m = m_new
    return (acc / l_i).to(q.dtype)  # o = acc / l
