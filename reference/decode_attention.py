"""Decode attention: one query token per sequence over a paged KV pool, and split-K decoding.

At decode time every sequence of the batch brings one new query token and attends to all of its
cached keys. Two things make that different from a prefill:

**Paged storage** (Kwon et al. 2023, *Efficient Memory Management for Large Language Model Serving
with PagedAttention*). The cache of all sequences lives in one pool of fixed-size blocks; sequence
``b`` owns the blocks ``block_tables[b, 0..]`` in logical order, so its token ``p`` is at block
``block_tables[b, p // block_size]``, slot ``p % block_size``. The layout here is the one of
FlashAttention's paged ``flash_attn_with_kvcache``: ``k_pool``, ``v_pool`` are
``(num_blocks, block_size, Hkv, D)``, ``block_tables`` is ``(B, max_blocks)`` int32 and
``seq_lens`` (``cache_seqlens`` there) is ``(B,)`` int32. Entries of a table past the sequence's
``ceil(seq_len / block_size)`` blocks are padding and slots past ``seq_len`` in its last block are
stale: neither may reach the result.

**Split-K** (Dao, Haziza, Massa, Sizov 2023, *Flash-Decoding for long-context inference*). One
query per (sequence, head) gives a flash-attention kernel only ``B * Hq`` programs, too few to fill
a GPU, each walking the whole cache. Flash-Decoding splits the keys into ``num_splits`` chunks,
computes each chunk's attention ``o_s`` and its log-sum-exp ``lse_s = log sum_j exp(s_j)`` in
parallel, then merges: with ``L = log sum_s exp(lse_s)``, ``o = sum_s exp(lse_s - L) o_s``. It is
the online-softmax algebra of Milakov & Gimelshein 2018 applied to whole chunks, so the result is
exact. vLLM's PagedAttention V2 does the same over partitions of 512 tokens
(``_PARTITION_SIZE = 512`` in ``vllm/attention/ops/paged_attn.py``) with a separate reduce kernel.

Split boundaries follow the cache capacity ``T`` (``k.shape[2]``), not each sequence's length:
``chunk = ceil(T / num_splits)`` and split ``s`` holds keys ``[s * chunk, (s + 1) * chunk)`` cut at
``seq_len``. A split with no keys (a short sequence, or ``num_splits > T``) has ``o_s = 0`` and
``lse_s = -inf``, which gives it weight ``exp(-inf - L) = 0`` in the merge.

Everything here is plain PyTorch: the ground truth of the ``paged-decode-attention`` and
``split-k-decode`` challenges, promoted to float64 with ``compute_dtype=torch.float64``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from inferview.reference.attention import attention, repeat_kv
from torch import Tensor

__all__ = [
    "Merged", "SplitPartials", "blocks_for", "decode_bytes", "dense_kv", "gather_sequence",
    "merge_partials", "paged_decode_attention", "ragged_decode_attention", "split_chunk",
    "split_k_decode", "split_k_partials", "split_range",
]


class SplitPartials(NamedTuple):
    """Per-split results of split-K decoding."""

    out: Tensor
    """``(B, Hq, S, D)``: attention of the query over split ``s``'s keys alone (zeros when empty)."""
    lse: Tensor
    """``(B, Hq, S)``: natural-log ``log sum_j exp(s_j)`` of that split's scaled scores (``-inf``
    when empty)."""


class Merged(NamedTuple):
    """Partials merged by their log-sum-exp."""

    out: Tensor
    """``(B, Hq, D)``: the attention over every split's keys."""
    lse: Tensor
    """``(B, Hq)``: the log-sum-exp over all of them, ``log sum_s exp(lse_s)``."""


def blocks_for(seq_len: int, block_size: int) -> int:
    """Blocks a sequence of ``seq_len`` tokens occupies: ``ceil(seq_len / block_size)``."""
    return -(-seq_len // block_size)


def gather_sequence(pool: Tensor, table: Tensor, seq_len: int) -> Tensor:
    """The ``seq_len`` cached rows of one sequence, in order, read through its block table.

    ``pool``: ``(num_blocks, block_size, Hkv, D)``; ``table``: ``(max_blocks,)`` integer. Returns a
    new ``(Hkv, seq_len, D)`` tensor (what a paged kernel reads block by block without copying).
    """
    block_size = pool.shape[1]
    pos = torch.arange(seq_len, device=pool.device)  # p: (T,)
    phys = table.to(device=pool.device, dtype=torch.long)[pos // block_size]  # block of p: (T,)
    return pool[phys, pos % block_size].permute(1, 0, 2).contiguous()  # (T, Hkv, D) -> (Hkv, T, D)


def dense_kv(k_pool: Tensor, v_pool: Tensor, block_tables: Tensor, seq_lens: Tensor, b: int
             ) -> tuple[Tensor, Tensor]:
    """Sequence ``b``'s keys and values as dense ``(1, Hkv, seq_len, D)`` tensors."""
    n = int(seq_lens[b])
    return (gather_sequence(k_pool, block_tables[b], n)[None],
            gather_sequence(v_pool, block_tables[b], n)[None])


def _check_decode_query(q: Tensor, hkv: int, d: int) -> None:
    if q.dim() != 3:
        raise ValueError(f"q must be (B, Hq, D), got shape {tuple(q.shape)}")
    if q.shape[1] % hkv != 0 or q.shape[2] != d:
        raise ValueError(f"q {tuple(q.shape)} does not fit {hkv} kv heads of head_dim {d}")


def paged_decode_attention(q: Tensor, k_pool: Tensor, v_pool: Tensor, block_tables: Tensor,
                           seq_lens: Tensor, sm_scale: float | None = None,
                           compute_dtype: torch.dtype | None = None) -> Tensor:
    """Decode attention read through block tables: gather each sequence, then attend densely.

    ``q``: ``(B, Hq, D)``, one query per sequence at its newest position (so it sees all of its
    ``seq_lens[b]`` keys: no mask inside the sequence); ``k_pool``, ``v_pool``:
    ``(num_blocks, block_size, Hkv, D)``; ``block_tables``: ``(B, max_blocks)``; ``seq_lens``:
    ``(B,)`` with ``1 <= seq_lens[b] <= max_blocks * block_size``. Query head ``h`` reads kv head
    ``h // (Hq // Hkv)``; ``sm_scale`` defaults to ``1/sqrt(D)``. Returns ``(B, Hq, D)`` in ``q``'s
    dtype, computed in ``compute_dtype`` (default ``q``'s).
    """
    _check_decode_query(q, k_pool.shape[2], k_pool.shape[3])
    if v_pool.shape != k_pool.shape:
        raise ValueError(f"k_pool {tuple(k_pool.shape)} and v_pool {tuple(v_pool.shape)} differ")
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    for b in range(q.shape[0]):
        n = int(seq_lens[b])
        if not 1 <= n <= block_tables.shape[1] * k_pool.shape[1]:
            raise ValueError(f"seq_lens[{b}] = {n} is outside 1..{block_tables.shape[1] * k_pool.shape[1]}")
        k, v = dense_kv(k_pool, v_pool, block_tables, seq_lens, b)
        out[b] = attention(q[b][None, :, None], k, v, sm_scale=sm_scale,
                           compute_dtype=compute_dtype)[0, :, 0]
    return out


def ragged_decode_attention(q: Tensor, k: Tensor, v: Tensor, seq_lens: Tensor,
                            sm_scale: float | None = None,
                            compute_dtype: torch.dtype | None = None) -> Tensor:
    """Decode attention over a dense cache with ragged lengths: sequence ``b`` sees keys
    ``0 .. seq_lens[b] - 1`` of ``k``, ``v`` ``(B, Hkv, T, D)``. ``q``: ``(B, Hq, D)``; returns
    ``(B, Hq, D)`` in ``q``'s dtype."""
    _check_decode_query(q, k.shape[1], k.shape[3])
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    for b in range(q.shape[0]):
        n = int(seq_lens[b])
        if not 1 <= n <= k.shape[2]:
            raise ValueError(f"seq_lens[{b}] = {n} is outside 1..{k.shape[2]}")
        out[b] = attention(q[b][None, :, None], k[b:b + 1, :, :n], v[b:b + 1, :, :n],
                           sm_scale=sm_scale, compute_dtype=compute_dtype)[0, :, 0]
    return out


def split_chunk(capacity: int, num_splits: int) -> int:
    """Keys per split: ``ceil(capacity / num_splits)`` (at least 1)."""
    if num_splits < 1:
        raise ValueError(f"num_splits must be >= 1, got {num_splits}")
    return max(1, -(-capacity // num_splits))


def split_range(s: int, chunk: int, seq_len: int) -> tuple[int, int]:
    """Keys ``[lo, hi)`` of split ``s`` for a sequence of ``seq_len`` keys (``lo == hi``: empty)."""
    return min(s * chunk, seq_len), min((s + 1) * chunk, seq_len)


def split_k_partials(q: Tensor, k: Tensor, v: Tensor, seq_lens: Tensor, num_splits: int,
                     sm_scale: float | None = None,
                     compute_dtype: torch.dtype = torch.float32) -> SplitPartials:
    """Each split's attention and log-sum-exp, in ``compute_dtype`` (float32 by default).

    ``q``: ``(B, Hq, D)``; ``k``, ``v``: ``(B, Hkv, T, D)``; ``seq_lens``: ``(B,)``. Split ``s`` of
    sequence ``b`` covers :func:`split_range` ``(s, ceil(T / num_splits), seq_lens[b])``. For it,
    with ``s_j = q . k_j * sm_scale``: ``lse = log sum_j exp(s_j)`` (natural log) and
    ``out = sum_j exp(s_j - lse) v_j``; an empty split gives ``out = 0``, ``lse = -inf``.
    """
    b_, hq, d = q.shape
    hkv, cap = k.shape[1], k.shape[2]
    scale = 1.0 / math.sqrt(d) if sm_scale is None else sm_scale
    chunk = split_chunk(cap, num_splits)
    out = torch.zeros(b_, hq, num_splits, d, dtype=compute_dtype, device=q.device)
    lse = torch.full((b_, hq, num_splits), float("-inf"), dtype=compute_dtype, device=q.device)
    kc = repeat_kv(k.to(compute_dtype), hq // hkv)  # (B, Hq, T, D): query head h reads kv head h // G
    vc = repeat_kv(v.to(compute_dtype), hq // hkv)
    qc = q.to(compute_dtype)
    for b in range(b_):
        n = int(seq_lens[b])
        for s in range(num_splits):
            lo, hi = split_range(s, chunk, n)
            if lo == hi:
                continue  # no keys: out 0, lse -inf
            scores = torch.einsum("hd,htd->ht", qc[b], kc[b, :, lo:hi]) * scale  # (Hq, n_s)
            lse[b, :, s] = torch.logsumexp(scores, dim=-1)  # max-subtracted inside: stable
            p = torch.exp(scores - lse[b, :, s, None])  # the split's own softmax
            out[b, :, s] = torch.einsum("ht,htd->hd", p, vc[b, :, lo:hi])
    return SplitPartials(out, lse)


def merge_partials(out: Tensor, lse: Tensor) -> Merged:
    """Merge partial outputs by their log-sum-exp: ``L = log sum_s exp(lse_s)`` and
    ``o = sum_s exp(lse_s - L) o_s``, computed with the largest ``lse`` subtracted first.

    ``out``: ``(..., S, D)``; ``lse``: ``(..., S)``. A row whose splits are all empty (every ``lse``
    ``-inf``) gives ``o = 0`` and ``L = -inf``.
    """
    m = lse.amax(dim=-1, keepdim=True)  # (..., 1): the largest lse of the row
    m_safe = torch.where(torch.isfinite(m), m, torch.zeros_like(m))  # all-empty row: no shift
    w = torch.exp(lse - m_safe)  # exp(lse_s - m) in (0, 1]; an empty split gives exactly 0
    total = w.sum(dim=-1, keepdim=True)  # (..., 1), >= 1 unless the row is all empty
    merged = (w[..., None] * out).sum(dim=-2) / total.clamp_min(torch.finfo(w.dtype).tiny)
    return Merged(merged, (m_safe + torch.log(total)).squeeze(-1))


def split_k_decode(q: Tensor, k: Tensor, v: Tensor, seq_lens: Tensor, num_splits: int,
                   sm_scale: float | None = None,
                   compute_dtype: torch.dtype = torch.float32) -> Tensor:
    """:func:`split_k_partials` then :func:`merge_partials`; returns ``(B, Hq, D)`` in ``q``'s dtype."""
    parts = split_k_partials(q, k, v, seq_lens, num_splits, sm_scale, compute_dtype)
    return merge_partials(parts.out, parts.lse).out.to(q.dtype)


def decode_bytes(seq_lens: Tensor, num_kv_heads: int, head_dim: int, itemsize: int) -> int:
    """Bytes of keys and values one decode step reads: ``2 * sum(seq_lens) * Hkv * D * itemsize``
    (each cached row once; the query and output are negligible beside them)."""
    return 2 * int(seq_lens.sum()) * num_kv_heads * head_dim * itemsize
