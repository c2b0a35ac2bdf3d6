"""Scaled dot-product attention, written out: MHA, GQA and MQA, causal with bottom-right offsets.

This is the ground truth every attention check compares against, so it is the plainest possible
version: materialise the scores, mask, softmax, weight the values. It runs in any dtype and can
promote to float64 (``compute_dtype=torch.float64``) for a reference that is exact to far below
fp32 rounding.

Sources:
- Vaswani et al. 2017, *Attention Is All You Need* — ``softmax(q k^T / sqrt(d)) v``.
- Shazeer 2019, *Fast Transformer Decoding: One Write-Head is All You Need* — multi-query attention
  (MQA): every query head shares one key/value head.
- Ainslie et al. 2023, *GQA: Training Generalized Multi-Query Transformer Models from Multi-Head
  Checkpoints* — grouped-query attention: ``num_heads // num_kv_heads`` query heads share each
  key/value head. MHA and MQA are its two ends (``num_kv_heads == num_heads`` and ``== 1``).

Causal masks are aligned **bottom-right**: with ``seq_q`` queries and ``seq_k`` keys, query ``i``
sits at absolute position ``i + seq_k - seq_q`` and sees keys ``j <= i + seq_k - seq_q``. That one
rule covers a full prefill (``seq_q == seq_k``, the usual lower triangle), a single decode step
(``seq_q == 1``: the newest token sees everything) and a chunked prefill after a cached prefix
(``1 < seq_q < seq_k``). A top-left mask (``j <= i``) is right only for the first of these.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class AttentionConfig:
    """Head layout of one attention layer."""

    num_heads: int
    """Query heads ``Hq``."""
    num_kv_heads: int
    """Key/value heads ``Hkv``; ``Hq % Hkv == 0``. ``Hkv == Hq`` is MHA, ``Hkv == 1`` is MQA."""
    head_dim: int
    """Per-head width ``D``."""

    def __post_init__(self) -> None:
        if self.num_heads % self.num_kv_heads != 0:
            raise ValueError(
                f"num_heads={self.num_heads} is not a multiple of num_kv_heads={self.num_kv_heads}"
            )

    @property
    def group_size(self) -> int:
        """Query heads per key/value head: ``G = Hq // Hkv``."""
        return self.num_heads // self.num_kv_heads

    @property
    def kind(self) -> str:
        """``"MHA"``, ``"MQA"`` or ``"GQA"``."""
        if self.num_kv_heads == self.num_heads:
            return "MHA"
        return "MQA" if self.num_kv_heads == 1 else "GQA"


def kv_head_for(h: int, num_heads: int, num_kv_heads: int) -> int:
    """The key/value head query head ``h`` reads: ``h // (Hq // Hkv)`` (contiguous groups)."""
    return h // (num_heads // num_kv_heads)


def repeat_kv(x: Tensor, group_size: int) -> Tensor:
    """Expand key/value heads so each query head has its own copy.

    ``x``: ``(B, Hkv, T, D)`` -> ``(B, Hkv * G, T, D)`` where kv head ``g`` becomes query heads
    ``g*G .. g*G + G - 1`` (``repeat_interleave`` on the head axis, *not* ``repeat``, which would map
    query head ``h`` to kv head ``h % Hkv``).
    """
    if group_size == 1:
        return x
    b, hkv, t, d = x.shape
    # (B, Hkv, 1, T, D) -> (B, Hkv, G, T, D) -> (B, Hkv*G, T, D)
    return x[:, :, None].expand(b, hkv, group_size, t, d).reshape(b, hkv * group_size, t, d)


def causal_mask(seq_q: int, seq_k: int, device: torch.device | str | None = None) -> Tensor:
    """Boolean ``(seq_q, seq_k)`` mask, ``True`` where query ``i`` may see key ``j``.

    Bottom-right aligned: ``j <= i + (seq_k - seq_q)``.
    """
    i = torch.arange(seq_q, device=device)[:, None]  # (Tq, 1)
    j = torch.arange(seq_k, device=device)[None, :]  # (1, Tk)
    return j <= i + (seq_k - seq_q)


def attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    causal: bool = False,
    sm_scale: float | None = None,
    compute_dtype: torch.dtype | None = None,
) -> Tensor:
    """Naive attention with grouped key/value heads.

    ``q``: ``(B, Hq, Tq, D)``; ``k``, ``v``: ``(B, Hkv, Tk, D)`` with ``Hq % Hkv == 0``. Query head
    ``h`` uses kv head ``h // (Hq // Hkv)``. ``sm_scale`` defaults to ``1/sqrt(D)``. With
    ``causal=True`` the mask is bottom-right aligned and ``Tq <= Tk`` is required (otherwise the
    first rows would see no key at all). ``compute_dtype`` (e.g. ``torch.float64``) promotes the
    whole computation; the result is returned in ``q``'s dtype. Returns ``(B, Hq, Tq, D)``.
    """
    b, hq, tq, d = q.shape
    bk, hkv, tk, dk = k.shape
    if v.shape != k.shape:
        raise ValueError(f"k and v shapes differ: {tuple(k.shape)} vs {tuple(v.shape)}")
    if bk != b or dk != d:
        raise ValueError(f"q {tuple(q.shape)} and k {tuple(k.shape)} disagree on batch or head_dim")
    if hq % hkv != 0:
        raise ValueError(f"num_heads={hq} is not a multiple of num_kv_heads={hkv}")
    if causal and tq > tk:
        raise ValueError(f"causal attention needs seq_q <= seq_k, got {tq} > {tk}")
    scale = 1.0 / math.sqrt(d) if sm_scale is None else sm_scale
    cd = compute_dtype or q.dtype

    qc = q.to(cd)  # (B, Hq, Tq, D)
    kc = repeat_kv(k.to(cd), hq // hkv)  # (B, Hq, Tk, D)
    vc = repeat_kv(v.to(cd), hq // hkv)  # (B, Hq, Tk, D)

    s = torch.matmul(qc, kc.transpose(-1, -2)) * scale  # s = q k^T / sqrt(d): (B, Hq, Tq, Tk)
    if causal:
        s = s.masked_fill(~causal_mask(tq, tk, q.device), float("-inf"))
    p = torch.softmax(s, dim=-1)  # p_ij = exp(s_ij - max_j s) / sum_j exp(s_ij - max_j s)
    o = torch.matmul(p, vc)  # o = p v: (B, Hq, Tq, D)
    return o.to(q.dtype)


def attention_fp64(
    q: Tensor, k: Tensor, v: Tensor, causal: bool = False, sm_scale: float | None = None
) -> Tensor:
    """Ground truth: :func:`attention` computed in float64, returned in float64."""
    return attention(q.double(), k.double(), v.double(), causal=causal, sm_scale=sm_scale)


def cached_attention(q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    """Attention of the newest ``Tq`` queries over a cache of ``Tk`` keys (the decode-time call).

    ``q``: ``(B, Hq, Tq, D)`` for absolute positions ``Tk - Tq .. Tk - 1``; ``k``, ``v``:
    ``(B, Hkv, Tk, D)``. Causal, bottom-right, scale ``1/sqrt(D)``. Returns ``(B, Hq, Tq, D)``.
    """
    return attention(q, k, v, causal=True)


def attention_flops(batch: int, heads: int, seq_q: int, seq_k: int, head_dim: int,
                    causal: bool = False) -> float:
    """Floating-point operations of one attention forward pass (the two matrix products).

    ``4 * B * H * Tq * Tk * D``: ``2*D`` flops per score, ``2*D`` per weighted value. A causal pass
    computes only the visible pairs; for ``Tq == Tk`` that is about half. Softmax and scaling are
    not counted, as in the FlashAttention papers' throughput figures.
    """
    if causal:
        if seq_q > seq_k:
            raise ValueError("causal attention needs seq_q <= seq_k")
        # query i sees i + (Tk - Tq) + 1 keys: sum_i = Tq (Tk - Tq + 1) + Tq (Tq - 1) / 2
        pairs = seq_q * (seq_k - seq_q + 1) + seq_q * (seq_q - 1) // 2
    else:
        pairs = seq_q * seq_k
    return 4.0 * batch * heads * pairs * head_dim
